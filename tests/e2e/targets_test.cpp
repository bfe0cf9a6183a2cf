// Several targets in one run (`--backend` given more than once): one report holds every target's verdict for every
// op, in every format; gates take a target; and the acceptance run with the real TPU and GPU compilers
// beside a Neuron profile.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "reports/json_schema.h"
#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

using nlohmann::json;
using testing::ReadWholeFile;
using testing::RunOpprobe;

class TargetsE2E : public testing::TempDirTest {
 protected:
  // The tutorial's unsupported.py: trn1 refuses its complex FFT and multiply, XLA's CPU profile accepts them.
  testing::RunResult Run(std::vector<std::string> extra) {
    std::vector<std::string> args = {"analyze",    "samples/traces/unsupported.json",
                                     "--backend",  "rules:neuron-trn1",
                                     "--backend",  "rules:cpu",
                                     "--no-cache", "--no-progress"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunOpprobe(args);
  }
};

TEST_F(TargetsE2E, JsonKeepsTheFirstTargetsShapeAndAddsEveryTarget) {
  std::string out = Path("r.json");
  auto r = Run({"-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json j = json::parse(ReadWholeFile(out));
  EXPECT_EQ(j["backend"], "rules:neuron-trn1");
  EXPECT_NE(j["support_percentage"], "100.00%");
  ASSERT_EQ(j["targets"].size(), 2u);
  EXPECT_EQ(j["targets"][0]["backend"], "rules:neuron-trn1");
  EXPECT_EQ(j["targets"][0]["support_percentage"], j["support_percentage"]);
  EXPECT_EQ(j["targets"][0]["unsupported_operators"], j["unsupported_operators"]);
  EXPECT_EQ(j["targets"][1]["backend"], "rules:cpu");
  EXPECT_EQ(j["targets"][1]["support_percentage"], "100.00%");
  EXPECT_TRUE(j["targets"][1]["unsupported_operators"]["aten"].empty());
  opprobe::testing::JsonSchemaValidator schema(json::parse(ReadWholeFile("schemas/report.schema.json")));
  auto errors = schema.Validate(j);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

TEST_F(TargetsE2E, TextMarkdownAndHtmlShowTheSupportMatrix) {
  std::string text = Path("r.txt"), md = Path("r.md"), html = Path("r.html");
  auto r = Run({"--format", "text=" + text, "--format", "markdown=" + md, "--format", "html=" + html});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  std::string t = ReadWholeFile(text);
  EXPECT_NE(t.find("Support matrix"), std::string::npos) << t;
  EXPECT_TRUE(std::regex_search(t, std::regex("aten::mul +[0-9]+ +NO +yes"))) << t;
  EXPECT_NE(t.find("=== target 2 of 2: rules:cpu ==="), std::string::npos);
  std::string m = ReadWholeFile(md);
  EXPECT_NE(m.find("| aten op | calls | `rules:neuron-trn1` | `rules:cpu` |"), std::string::npos) << m;
  EXPECT_TRUE(std::regex_search(
      m, std::regex("\\| `aten::mul` \\| [0-9]+ \\| \\*\\*no\\*\\*: [^|]*NCC_EVRF004[^|]*\\| yes \\|")))
      << m;
  std::string h = ReadWholeFile(html);
  EXPECT_NE(h.find("<section id=\"matrix\">"), std::string::npos);
  // Every element id stays unique with two targets' reports on one page.
  std::set<std::string> ids;
  const std::regex id_attr(" id=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(h.begin(), h.end(), id_attr); it != std::sregex_iterator(); ++it)
    EXPECT_TRUE(ids.insert((*it)[1]).second) << "duplicate id " << (*it)[1];
  EXPECT_TRUE(ids.count("t1-support-percentage")) << h.substr(0, 2000);
}

TEST_F(TargetsE2E, JunitHasASuitePerTargetAndSarifARun) {
  std::string xml = Path("r.xml"), sarif = Path("r.sarif");
  auto r = Run({"--format", "junit=" + xml, "--format", "sarif=" + sarif});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  std::string x = ReadWholeFile(xml);
  EXPECT_NE(x.find("<testsuite name=\"opprobe: samples/scripts/unsupported.py on rules:neuron-trn1\""),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("<testsuite name=\"opprobe: samples/scripts/unsupported.py on rules:cpu\""), std::string::npos) << x;
  auto lint = testing::RunProgram({"xmllint", "--noout", xml});
  EXPECT_EQ(lint.exit_code, 0) << lint.err;
  json s = json::parse(ReadWholeFile(sarif));
  ASSERT_EQ(s["runs"].size(), 2u);
  EXPECT_EQ(s["runs"][0]["properties"]["backend"], "rules:neuron-trn1");
  EXPECT_FALSE(s["runs"][0]["results"].empty());
  EXPECT_EQ(s["runs"][1]["properties"]["backend"], "rules:cpu");
  EXPECT_TRUE(s["runs"][1]["results"].empty());
}

TEST_F(TargetsE2E, GatesTakeATarget) {
  // A plain PCT gates every target: trn1 fails it.
  auto all = Run({"--fail-under", "100"});
  EXPECT_EQ(all.exit_code, 1) << all.err;
  EXPECT_NE(all.err.find("gate failed: rules:neuron-trn1: support"), std::string::npos) << all.err;
  EXPECT_EQ(all.err.find("gate failed: rules:cpu"), std::string::npos) << all.err;
  // A target's own threshold wins over the plain one.
  auto own = Run({"--fail-under", "100", "--fail-under", "rules:neuron-trn1=10"});
  EXPECT_EQ(own.exit_code, 0) << own.err;
  auto cpu_only = Run({"--fail-under", "rules:cpu=100"});
  EXPECT_EQ(cpu_only.exit_code, 0) << cpu_only.err;
  auto unknown = Run({"--fail-under", "tpu:v5e=90"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("tpu:v5e is not a target of this run"), std::string::npos) << unknown.err;
  auto malformed = Run({"--fail-under", "rules:cpu=lots"});
  EXPECT_EQ(malformed.exit_code, 2) << malformed.err;
  auto twice = RunOpprobe(
      {"analyze", "samples/traces/unsupported.json", "--backend", "rules:cpu", "--backend", "rules:cpu", "--no-cache"});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("--backend rules:cpu is given twice"), std::string::npos) << twice.err;
}

// The acceptance: the ResNet-18 step on the real TPU and GPU compilers and a Neuron profile, side by side.
TEST_F(TargetsE2E, RealCompilersSideBySideWithANeuronProfile) {
  std::string out = Path("r.json"), text = Path("r.txt");
  auto r = RunOpprobe({"analyze", "samples/traces/resnet18_train.json", "--backend", "tpu:v5e", "--backend", "gpu:h100",
                       "--backend", "rules:neuron-trn2", "--cache", Path("cache"), "--no-progress", "-o", out,
                       "--format", "text=" + text});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json j = json::parse(ReadWholeFile(out));
  ASSERT_EQ(j["targets"].size(), 3u);
  EXPECT_EQ(j["targets"][0]["backend_version"].get<std::string>().rfind("libtpu 0.0.42.1; ", 0), 0u);
  EXPECT_EQ(j["targets"][1]["backend_version"].get<std::string>().rfind("jax_cuda12_pjrt 0.12.0.1; ", 0), 0u);
  for (const auto& t : j["targets"])
    EXPECT_EQ(t["summary"]["probes_run"], t["summary"]["unique_probes"]) << t["backend"];
  EXPECT_EQ(j["targets"][0]["support_percentage"], "99.94%");  // the f64 rng of aten::randint
  EXPECT_EQ(j["targets"][1]["support_percentage"], "100.00%");
  std::string t = ReadWholeFile(text);
  EXPECT_TRUE(std::regex_search(t, std::regex("aten::randint +1 +NO +yes +yes"))) << t;
}

}  // namespace
}  // namespace opprobe
