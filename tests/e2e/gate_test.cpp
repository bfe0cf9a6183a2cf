// The CI scenario of docs/ci.md, run with the real binary: a baseline report from the main branch's
// trace, then a pull request's trace that adds an unsupported op fails the `--baseline` gate (exit 1);
// `--allow` accepts the gap; `opprobe diff` agrees; a baseline that is not an opprobe report, or has an
// incompatible schema_version, is bad input (exit 2, one-line error, no report written).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ReadWholeFile;
using testing::RunOpprobe;
using testing::RunResult;

class GateE2E : public testing::TempDirTest {
 protected:
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
  }

  // `opprobe analyze TRACE --backend rules:neuron-trn1 ...` with the cache off.
  static RunResult Analyze(const std::string& trace, std::vector<std::string> extra) {
    std::vector<std::string> args = {"analyze", trace, "--backend", "rules:neuron-trn1", "--no-cache", "--no-progress"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunOpprobe(args);
  }

  // The main branch's trace (supported.json) with one more call: torch.fft.fft, which Neuron rejects (c64).
  std::string PullRequestTrace() {
    json base = json::parse(ReadWholeFile("samples/traces/supported.json"));
    json extra = json::parse(ReadWholeFile("samples/traces/unsupported.json"));
    json fft;
    for (const auto& call : extra["calls"])
      if (call["op"] == "aten::_fft_r2c") fft = call;
    EXPECT_TRUE(fft.is_object()) << "samples/traces/unsupported.json has no aten::_fft_r2c call";
    fft["loc"] = {{"file", "samples/scripts/supported.py"}, {"line", 16}};
    base["calls"].push_back(fft);
    if (base.contains("total_calls")) base["total_calls"] = base["total_calls"].get<int64_t>() + 1;
    std::string path = Path("pr_trace.json");
    Write(path, base.dump());
    return path;
  }

  // A baseline from the main branch: 100% on rules:neuron-trn1.
  std::string Baseline(const std::string& verbosity = "1") {
    std::string path = Path("baseline.json");
    auto r = Analyze("samples/traces/supported.json", {"--verbosity", verbosity, "-o", path});
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    json j = json::parse(ReadWholeFile(path));
    EXPECT_EQ(j["support_percentage"], "100.00%");
    return path;
  }
};

TEST_F(GateE2E, NewlyUnsupportedOpFailsThePullRequest) {
  std::string baseline = Baseline();
  std::string pr = PullRequestTrace();

  // Unchanged model: the gate passes.
  auto same = Analyze("samples/traces/supported.json", {"--baseline", baseline, "-o", Path("same.json")});
  EXPECT_EQ(same.exit_code, 0) << same.err << same.out;

  // The pull request adds aten::_fft_r2c: exit 1, the report is still written, stderr says why.
  auto r = Analyze(pr, {"--baseline", baseline, "-o", Path("new.json"), "--format", "sarif=" + Path("new.sarif")});
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find("gate failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("aten::_fft_r2c"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("newly unsupported"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("support percentage dropped from 100.00%"), std::string::npos) << r.err;
  ASSERT_TRUE(fs::exists(Path("new.json")));
  ASSERT_TRUE(fs::exists(Path("new.sarif")));
  json report = json::parse(ReadWholeFile(Path("new.json")));
  EXPECT_NE(report["support_percentage"], "100.00%");
  json sarif = json::parse(ReadWholeFile(Path("new.sarif")));
  bool located = false;
  for (const auto& res : sarif["runs"][0]["results"]) {
    if (res["properties"]["aten_op"] != "aten::_fft_r2c") continue;
    const auto& loc = res["locations"][0]["physicalLocation"];
    located = loc["artifactLocation"]["uri"] == "samples/scripts/supported.py" && loc["region"]["startLine"] == 16;
  }
  EXPECT_TRUE(located) << sarif.dump(2);

  // `opprobe diff` reads the two reports the same way.
  auto diff = RunOpprobe({"diff", baseline, Path("new.json")});
  EXPECT_EQ(diff.exit_code, 1) << diff.err << diff.out;
  EXPECT_NE(diff.out.find("newly unsupported aten ops (1)"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("aten::_fft_r2c"), std::string::npos) << diff.out;
  auto back = RunOpprobe({"diff", Path("new.json"), baseline});
  EXPECT_EQ(back.exit_code, 0) << back.out;
  EXPECT_NE(back.out.find("unsupported aten ops no longer used (1)"), std::string::npos) << back.out;
}

TEST_F(GateE2E, AllowAcceptsTheKnownGap) {
  std::string baseline = Baseline();
  auto r = Analyze(PullRequestTrace(), {"--baseline", baseline, "--allow", "aten::_fft_r2c", "-o", Path("new.json")});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("newly unsupported but allowed: aten::_fft_r2c"), std::string::npos) << r.out;
  auto diff = RunOpprobe({"diff", baseline, Path("new.json"), "--allow", "aten::_fft_r2c"});
  // The diff command has only the reports: the op is allowed, the lower percentage still counts.
  EXPECT_EQ(diff.exit_code, 1) << diff.out;
  EXPECT_NE(diff.out.find("[allowed]"), std::string::npos) << diff.out;
}

// A baseline of another schema_version is read by its fields: with the fields the comparison reads it gates as one
// of this opprobe's own (the unchanged model passes, the added op fails), whatever the number says.
TEST_F(GateE2E, ABaselineOfAnotherSchemaVersionIsReadByItsFields) {
  json other = json::parse(ReadWholeFile(Baseline()));
  other["schema_version"] = 2;             // a version this opprobe does not write
  other.erase("aten_support_percentage");  // optional: the comparison does without it
  std::string baseline = Path("v2.json");
  Write(baseline, other.dump());
  auto same = Analyze("samples/traces/supported.json", {"--baseline", baseline, "-o", Path("same.json")});
  EXPECT_EQ(same.exit_code, 0) << same.err << same.out;
  auto r = Analyze(PullRequestTrace(), {"--baseline", baseline, "-o", Path("new.json")});
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find("aten::_fft_r2c"), std::string::npos) << r.err;
  auto diff = RunOpprobe({"diff", baseline, Path("new.json")});
  EXPECT_EQ(diff.exit_code, 1) << diff.err << diff.out;
  EXPECT_NE(diff.out.find("newly unsupported aten ops (1)"), std::string::npos) << diff.out;
}

TEST_F(GateE2E, BaselineAtVerbosity2StillCatchesTheNewOp) {
  std::string baseline = Baseline("2");
  auto r = Analyze(PullRequestTrace(), {"--baseline", baseline, "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find("aten::_fft_r2c"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(GateE2E, FailUnder) {
  auto low = Analyze("samples/traces/unsupported.json", {"--fail-under", "99.5", "-o", Path("u.json")});
  EXPECT_EQ(low.exit_code, 1) << low.err << low.out;
  EXPECT_NE(low.err.find("below --fail-under 99.50%"), std::string::npos) << low.err;
  auto ok = Analyze("samples/traces/unsupported.json", {"--fail-under", "1"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err << ok.out;
  auto bad = Analyze("samples/traces/unsupported.json", {"--fail-under", "120"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err << bad.out;
}

// A baseline that is not an opprobe report, or from another schema version: one-line error, exit 2,
// and no report file.
TEST_F(GateE2E, BadBaselineIsExit2) {
  json good = json::parse(ReadWholeFile(Baseline()));
  json wrong_version = good;  // another version that lacks a field the comparison reads
  wrong_version["schema_version"] = 99;
  wrong_version.erase("support_percentage");
  json neuron = {{"torch_neuronx_version", "1.13.0.1.6.1"},
                 {"neuronx_cc_version", "2.5.0.28+1be23f232"},
                 {"support_percentage", "100.00%"},
                 {"supported_operators", {{"aten", {{"aten::add", 8}}}}},
                 {"unsupported_operators", {{"aten", json::array()}}}};
  json bad_field = good;
  bad_field["unsupported_operators"]["aten"] = "nothing";
  struct Case {
    const char* name;
    std::string content;
    const char* expect;
  } cases[] = {
      {"not_json.json", "{\"schema_version\": 1,\n  oops", "not JSON"},
      {"empty.json", "", "empty file"},
      {"array.json", "[1, 2]", "not an opprobe report"},
      {"trace.json", ReadWholeFile("samples/traces/unsupported.json"), "not an opprobe report"},
      {"neuron.json", neuron.dump(), "Neuron"},
      {"v99.json", wrong_version.dump(), "/: missing \"support_percentage\" (a schema_version 99 report)"},
      {"bad_field.json", bad_field.dump(), "/unsupported_operators/aten: expected an array"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string path = Path(c.name);
    Write(path, c.content);
    std::string out = Path(std::string("report_") + c.name);
    auto r = Analyze("samples/traces/supported.json", {"--baseline", path, "-o", out});
    EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_FALSE(fs::exists(out)) << "no report for bad input";

    auto d = RunOpprobe({"diff", path, Path("baseline.json")});
    EXPECT_EQ(d.exit_code, 2) << d.err << d.out;
    EXPECT_NE(d.err.find(c.expect), std::string::npos) << d.err;
    auto d2 = RunOpprobe({"diff", Path("baseline.json"), path});
    EXPECT_EQ(d2.exit_code, 2) << d2.err << d2.out;
  }
  auto missing = Analyze("samples/traces/supported.json", {"--baseline", Path("no_such.json")});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("no_such.json"), std::string::npos) << missing.err;
  auto missing_diff = RunOpprobe({"diff", Path("no_such.json"), Path("baseline.json")});
  EXPECT_EQ(missing_diff.exit_code, 2) << missing_diff.err;
}

// Several report files are replaced all together or not at all: one that cannot be written leaves the others
// as they were (and no temporary file beside them).
TEST_F(GateE2E, AReportRunReplacesAllItsFilesOrNone) {
  Write(Path("old.json"), "earlier json report");
  Write(Path("old.md"), "earlier markdown report");
  auto r = Analyze("samples/traces/supported.json", {"-o", Path("old.json"), "--format", "markdown=" + Path("old.md"),
                                                     "--format", "sarif=" + Path("no/such/folder/r.sarif")});
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  EXPECT_NE(r.err.find("no/such/folder/r.sarif: cannot write"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  EXPECT_EQ(ReadWholeFile(Path("old.json")), "earlier json report");
  EXPECT_EQ(ReadWholeFile(Path("old.md")), "earlier markdown report");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"old.json", "old.md"}));

  auto ok =
      Analyze("samples/traces/supported.json", {"-o", Path("old.json"), "--format", "markdown=" + Path("old.md")});
  EXPECT_EQ(ok.exit_code, 0) << ok.err << ok.out;
  EXPECT_NE(ReadWholeFile(Path("old.json")), "earlier json report");
  EXPECT_NE(ReadWholeFile(Path("old.md")), "earlier markdown report");
}

}  // namespace
}  // namespace opprobe
