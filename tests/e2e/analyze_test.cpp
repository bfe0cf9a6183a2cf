// The foundation's acceptance, run as a new user would: the real binary, the real capture of the
// bundled scripts with Debian's PyTorch, and the bundled traces.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

using nlohmann::json;
using testing::ReadWholeFile;
using testing::RunOpprobe;

class AnalyzeE2E : public testing::TempDirTest {
 protected:
  json Analyze(std::vector<std::string> args, int expected_exit = 0) {
    std::string out = Path("report.json");
    args.insert(args.begin(), {"analyze", "--no-cache", "--no-progress", "-o", out});
    auto r = RunOpprobe(args);
    EXPECT_EQ(r.exit_code, expected_exit) << r.err << r.out;
    std::string text = ReadWholeFile(out);
    if (text.empty()) return json();
    return json::parse(text);
  }
};

bool HasXla(const json& list, const std::string& instruction, const std::string& aten_op) {
  for (const auto& e : list)
    if (e.value("hlo_instruction", "") == instruction && e.value("aten_op", "") == aten_op) return true;
  return false;
}

TEST_F(AnalyzeE2E, NeuronTutorialUnsupportedScriptOneStep) {
  json r = Analyze({"--backend", "rules:neuron-trn1", "--verbosity", "1", "--", "/usr/bin/python3",
                    "samples/scripts/unsupported.py"});
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["backend"], "rules:neuron-trn1");
  // aten::mul is both supported and unsupported, as in Neuron's own report of this script.
  EXPECT_TRUE(r["supported_operators"]["aten"].contains("aten::mul")) << r.dump(2);
  bool mul_unsupported = false;
  for (const auto& e : r["unsupported_operators"]["aten"]) {
    if (e["kind"] != "aten::mul") continue;
    mul_unsupported = true;
    EXPECT_EQ(e["failureAt"], "rules:neuron-trn1");
    EXPECT_EQ(e["call"].get<std::string>().rfind("unsupported.py ", 0), 0u) << e.dump();
    EXPECT_NE(e["reason"].get<std::string>().find("NCC_EVRF004"), std::string::npos);
  }
  EXPECT_TRUE(mul_unsupported) << r.dump(2);
  const json& xla = r["unsupported_operators"]["xla"];
  EXPECT_TRUE(HasXla(xla, "c64[4]{0} convert(f32[4]{0})", "aten::mul")) << xla.dump(2);
  EXPECT_TRUE(HasXla(xla, "c64[4]{0} multiply(c64[4]{0}, c64[4]{0})", "aten::mul")) << xla.dump(2);
  std::string pct = r["support_percentage"];
  EXPECT_NE(pct, "100.00%");
  EXPECT_EQ(pct.back(), '%');
}

TEST_F(AnalyzeE2E, NeuronTutorialSupportedScriptIsFullySupported) {
  json r = Analyze({"--backend", "rules:neuron-trn1", "--", "/usr/bin/python3", "samples/scripts/supported.py"});
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["support_percentage"], "100.00%") << r.dump(2);
  EXPECT_TRUE(r["unsupported_operators"]["aten"].empty());
  EXPECT_TRUE(r["supported_operators"]["aten"].contains("aten::mm") ||
              r["supported_operators"]["aten"].contains("aten::addmm"));
}

TEST_F(AnalyzeE2E, LinalgScriptPerTargetVerdicts) {
  // XLA's linear-algebra custom calls (Qr, Eigh): the TPU and GPU compilers expand them, Neuron rejects
  // custom calls it does not know. LU (linalg_inv_ex) is plain HLO, which every target accepts.
  std::vector<std::string> script = {"--", "/usr/bin/python3", "samples/scripts/linalg.py"};
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.end(), script.begin(), script.end());
    return a;
  };
  json tpu = Analyze(with({"--backend", "rules:tpu"}));
  ASSERT_TRUE(tpu.is_object());
  EXPECT_EQ(tpu["support_percentage"], "100.00%") << tpu.dump(2);
  json gpu = Analyze(with({"--backend", "rules:gpu", "--verbosity", "2"}));
  ASSERT_TRUE(gpu.is_object());
  EXPECT_EQ(gpu["support_percentage"], "100.00%") << gpu.dump(2);
  json neuron = Analyze(with({"--backend", "rules:neuron-trn1", "--verbosity", "1"}));
  ASSERT_TRUE(neuron.is_object());
  std::set<std::string> bad;
  for (const auto& e : neuron["unsupported_operators"]["aten"]) {
    bad.insert(e["kind"].get<std::string>());
    EXPECT_NE(e["reason"].get<std::string>().find("NCC_EHCA005"), std::string::npos) << e.dump();
    EXPECT_EQ(e["call"].get<std::string>().rfind("linalg.py ", 0), 0u) << e.dump();
  }
  EXPECT_EQ(bad, (std::set<std::string>{"aten::linalg_qr", "aten::_linalg_eigh", "aten::_linalg_svd"}))
      << neuron.dump(2);
  bool eigh_seen = false;
  for (const auto& e : neuron["unsupported_operators"]["xla"])
    eigh_seen |= e.value("hlo_instruction", "").find("custom-call(") != std::string::npos &&
                 e.value("aten_op", "") == "aten::_linalg_eigh";
  EXPECT_TRUE(eigh_seen) << neuron["unsupported_operators"]["xla"].dump(2);
}

TEST_F(AnalyzeE2E, Resnet18TrainingStepOnCpuRules) {
  json r = Analyze({"--backend", "rules:cpu", "samples/traces/resnet18_train.json"});
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["support_percentage"], "100.00%") << r["unsupported_operators"].dump(2);
  EXPECT_EQ(r["summary"]["lowering_failures"], 0);
  EXPECT_TRUE(r["supported_operators"]["aten"].contains("aten::convolution"));
  EXPECT_TRUE(r["supported_operators"]["aten"].contains("aten::convolution_backward"));
  // Identical units are probed once.
  EXPECT_LT(r["summary"]["unique_probes"].get<int>(), r["summary"]["hlo_instructions"].get<int>());
}

TEST_F(AnalyzeE2E, TwoStepCaptureThenAnalyzeMatchesOneStep) {
  std::string trace = Path("trace.json");
  auto cap = RunOpprobe({"capture", "-o", trace, "--", "/usr/bin/python3", "samples/scripts/unsupported.py"});
  ASSERT_EQ(cap.exit_code, 0) << cap.err;
  json two = Analyze({"--backend", "rules:neuron-trn1", trace});
  json one = Analyze({"--backend", "rules:neuron-trn1", "--", "/usr/bin/python3", "samples/scripts/unsupported.py"});
  EXPECT_EQ(two["support_percentage"], one["support_percentage"]);
  EXPECT_EQ(two["unsupported_operators"]["aten"], one["unsupported_operators"]["aten"]);
}

TEST_F(AnalyzeE2E, LowerDrillsDownToTheHloOfOneOp) {
  auto r = RunOpprobe({"lower", "samples/traces/unsupported.json", "--op", "aten::mul"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("c64[4]{0} convert("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("c64[4]{0} multiply("), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("fft("), std::string::npos) << "only aten::mul was asked for";
  auto missing = RunOpprobe({"lower", "samples/traces/unsupported.json", "--op", "aten::conv2d"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("it calls:"), std::string::npos);
}

TEST_F(AnalyzeE2E, BackendsListsEveryBuiltinProfile) {
  auto r = RunOpprobe({"backends"});
  ASSERT_EQ(r.exit_code, 0);
  for (const char* name : {"neuron-trn1", "neuron-trn2", "tpu", "gpu", "cpu", "rules:NAME|FILE"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  auto v = RunOpprobe({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("opprobe 0.1.0"), std::string::npos);
}

TEST_F(AnalyzeE2E, BadInputIsOneLineExit2AndNoReport) {
  std::string report = Path("report.json");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::string garbage = Path("garbage.bin");
  std::ofstream(garbage) << "\x01\x02 not a model";
  std::string bad_json = Path("bad.json");
  std::ofstream(bad_json) << "{\"format\": \"opprobe-trace\", \"calls\": [";
  // HLO whose written shape does not follow from its operands: the verifier's error, at the instruction.
  std::string mismatch = Path("shape_mismatch.hlo");
  std::ofstream(mismatch) << "HloModule m\n\nENTRY main {\n  a = f32[2] parameter(0)\n  ROOT r = f32[3] negate(a)\n}\n";
  std::vector<Case> cases = {
      {{"analyze", "-o", report, "no/such/file.json"}, "no/such/file.json: no such file or directory"},
      {{"analyze", "-o", report, mismatch},
       "shape_mismatch.hlo:5:8: computation 'main', instruction 'r': negate has shape f32[3], its operands and "
       "attributes give f32[2]"},
      {{"analyze", "-o", report, garbage}, "not a recognised input"},
      {{"analyze", "-o", report, bad_json}, "bad.json"},
      {{"analyze", "-o", report, "--backend", "rulez:cpu", "samples/traces/supported.json"}, "did you mean 'rules'?"},
      {{"analyze", "-o", report, "--backend", "rules:nope", "samples/traces/supported.json"},
       "neither a built-in profile"},
      {{"analyze", "-o", report}, "nothing to analyze"},
  };
  auto check_all = [&](const std::string& where) {
    for (const auto& c : cases) {
      auto r = RunOpprobe(c.args);
      EXPECT_EQ(r.exit_code, 2) << where << c.args.back() << ": " << r.err;
      EXPECT_NE(r.err.find(c.message), std::string::npos) << where << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << where << "one line: " << r.err;
      EXPECT_FALSE(std::filesystem::exists(report)) << where << "no report on bad input";
    }
  };
  check_all("");
  // Still one line where the default cache folder cannot be used (a CI runner whose HOME is not writable): the
  // input is read before the cache is opened, so its error is all there is to say.
  std::string home = Path("home-is-a-file");
  std::ofstream(home) << "x";
  const char* old_home = std::getenv("HOME");
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  std::string saved_home = old_home ? old_home : "", saved_xdg = old_xdg ? old_xdg : "";
  ::setenv("HOME", home.c_str(), 1);
  ::unsetenv("XDG_CACHE_HOME");
  check_all("unusable default cache: ");
  if (old_home) ::setenv("HOME", saved_home.c_str(), 1);
  else ::unsetenv("HOME");
  if (old_xdg) ::setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
}

}  // namespace
}  // namespace opprobe
