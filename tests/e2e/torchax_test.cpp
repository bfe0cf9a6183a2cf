// End to end with the real torchax from PyPI (requirements/torchax.txt, layered on torch2: the interpreter
// OPPROBE_TORCHAX_PYTHON, which scripts/test creates and exports):
// - scripts written the way torchax's README shows (enable_globally, `.to("jax")`, default_env, env.to_xla,
//   interop.jax_jit) and seed 001's torch_xla2 names capture and analyze completely, the calls recorded where torchax
//   answers them (capture/opprobe_capture/real_torchax.py);
// - `analyze --lowering torchax` lowers every call with torchax's own op table (through JAX to StableHLO) and lists
//   every op torchax lacks in one report, with call sites, where running the script under torchax stops at the first.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadWholeFile;
using testing::RunOpprobe;
using testing::RunProgram;

class TorchaxE2E : public testing::TempDirTest {
 protected:
  void SetUp() override {
    testing::TempDirTest::SetUp();
    const char* py = std::getenv("OPPROBE_TORCHAX_PYTHON");
    python_ = py ? py : "";
    ASSERT_FALSE(python_.empty())
        << "OPPROBE_TORCHAX_PYTHON is not set (scripts/test creates the torchax environment and sets it)";
  }
  json Capture(const std::string& script) {
    last_ = RunOpprobe({"capture", "-o", Path("trace.json"), "--", python_, script});
    EXPECT_EQ(last_.exit_code, 0) << last_.err << last_.out;
    std::string text = ReadWholeFile(Path("trace.json"));
    return text.empty() ? json() : json::parse(text);
  }
  json Analyze(const std::string& script, std::vector<std::string> extra = {}, int expected_exit = 0) {
    std::vector<std::string> args{"analyze", "--no-cache", "--no-progress",    "--backend", "rules:tpu", "--verbosity",
                                  "2",       "-o",         Path("report.json")};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", python_, script});
    last_ = RunOpprobe(args);
    EXPECT_EQ(last_.exit_code, expected_exit) << last_.err << last_.out;
    std::string text = ReadWholeFile(Path("report.json"));
    return text.empty() ? json() : json::parse(text);
  }
  // op -> the lines of its calls in the trace
  static std::map<std::string, std::set<int>> Lines(const json& trace) {
    std::map<std::string, std::set<int>> out;
    for (const auto& c : trace["calls"]) out[c["op"].get<std::string>()].insert(c["loc"]["line"].get<int>());
    return out;
  }
  static std::set<std::string> SupportedAten(const json& report) {
    std::set<std::string> ops;
    for (const auto& [op, n] : report["supported_operators"]["aten"].items()) ops.insert(op);
    return ops;
  }
  std::string python_;
  testing::RunResult last_;
};

TEST_F(TorchaxE2E, ReadmeScriptRunsOnTheRealTorchaxAndIsRecordedWithItsLines) {
  // torchax_env.py: enable_globally, default_env, env.to_xla(model), a tensor made on the `jax` device, jax_jit.
  json t = Capture("tests/e2e/scripts/torchax_env.py");
  ASSERT_TRUE(t.is_object()) << last_.err;
  EXPECT_EQ(t["status"], "ok") << last_.err;
  EXPECT_FALSE(t.contains("standins")) << t.dump();  // the real torchax ran it, not the stand-in
  EXPECT_EQ(t["step_boundaries"]["torchax.interop.jax_jit"], 1);
  EXPECT_THAT(last_.out, HasSubstr("torch.Size([5, 2])"));  // the script's own output, computed by JAX
  auto lines = Lines(t);
  // The aten calls torchax answered (convolution, softmax, cumsum) and those of the torch functions it answers itself
  // (F.linear: t and addmm), at the script's lines.
  EXPECT_EQ(lines["aten::convolution"], std::set<int>({16}));
  EXPECT_EQ(lines["aten::addmm"], std::set<int>({16}));
  EXPECT_EQ(lines["aten::_softmax"], std::set<int>({16}));
  EXPECT_EQ(lines["aten::cumsum"], std::set<int>({22}));
  EXPECT_TRUE(lines.count("aten::uniform_")) << t.dump();  // the model's initialization on the jax device
  // torchax's own work (its conversions, the decompositions it runs) is not the script's: no call in torchax's files.
  for (const auto& c : t["calls"]) EXPECT_EQ(c["loc"]["file"], "tests/e2e/scripts/torchax_env.py") << c.dump();

  json r = Analyze("tests/e2e/scripts/torchax_env.py");
  ASSERT_TRUE(r.is_object());
  for (const char* op : {"aten::convolution", "aten::addmm", "aten::_softmax", "aten::cumsum"})
    EXPECT_TRUE(SupportedAten(r).count(op)) << op << "\n" << r.dump(1);
  EXPECT_EQ(r["unsupported_operators"]["aten"].size(), 0u) << r.dump(1);
}

TEST_F(TorchaxE2E, SeedTorchXla2NamesRunOnTheInstalledTorchax) {
  // Seed 001's script verbatim: `import torch_xla2`, default_env, `with env:`, enable_globally, env.to_xla. torch_xla2
  // is torchax's former name: the capture serves the installed torchax under it (a stand-in the trace names).
  json t = Capture("samples/scripts/torch_xla2_model.py");
  ASSERT_TRUE(t.is_object()) << last_.err;
  EXPECT_EQ(t["status"], "ok") << last_.err;
  EXPECT_EQ(t["standins"], json::array({"torch_xla2"}));
  auto lines = Lines(t);
  EXPECT_EQ(lines["aten::addmm"], std::set<int>({15, 16, 17}));  // fc1..fc3, in the three forwards
  EXPECT_EQ(lines["aten::relu"], std::set<int>({15, 16}));
  int64_t addmm = 0;
  for (const auto& c : t["calls"])
    if (c["op"] == "aten::addmm") addmm += c["count"].get<int64_t>();
  EXPECT_EQ(addmm, 9) << t.dump();  // 3 Linear layers, 3 forwards (plain, in env, after to_xla): as without torchax
  json r = Analyze("samples/scripts/torch_xla2_model.py");
  ASSERT_TRUE(r.is_object());
  for (const char* op : {"aten::addmm", "aten::relu", "aten::view"}) EXPECT_TRUE(SupportedAten(r).count(op)) << op;
}

TEST_F(TorchaxE2E, LoweringTorchaxListsEveryGapInOnePassWhereTorchaxStopsAtTheFirst) {
  const std::string script = "tests/e2e/scripts/torchax_gaps.py";
  // The plain run under torchax: the first op it lacks ends the script.
  testing::RunResult plain = RunProgram({python_, script});
  EXPECT_NE(plain.exit_code, 0);
  EXPECT_THAT(plain.err, HasSubstr("Operator with name aten::adaptive_max_pool2d has no lowering"));
  EXPECT_THAT(plain.err, Not(HasSubstr("rrelu_with_noise")));
  EXPECT_THAT(plain.err, Not(HasSubstr("poisson")));

  // opprobe: the whole script, each call lowered by torchax's own table, every gap with its line, in one report.
  json r = Analyze(script, {"--lowering", "torchax"});
  ASSERT_TRUE(r.is_object()) << last_.err;
  EXPECT_EQ(r["input_kind"], "trace");
  EXPECT_EQ(r["model"], script);
  std::map<std::string, json> gaps;
  for (const auto& e : r["unsupported_operators"]["aten"]) gaps[e["kind"].get<std::string>()] = e;
  ASSERT_EQ(gaps.size(), 3u) << r.dump(1);
  const std::map<std::string, std::string> where = {{"aten::adaptive_max_pool2d", "torchax_gaps.py 20"},
                                                    {"aten::rrelu_with_noise", "torchax_gaps.py 21"},
                                                    {"aten::poisson", "torchax_gaps.py 23"}};
  for (const auto& [op, call] : where) {
    ASSERT_TRUE(gaps.count(op)) << op << "\n" << r.dump(1);
    EXPECT_EQ(gaps[op]["failureAt"], "torchax") << gaps[op].dump();
    EXPECT_EQ(gaps[op]["call"], call) << gaps[op].dump();
    EXPECT_THAT(gaps[op]["reason"].get<std::string>(), HasSubstr("torchax 0.0.13 has no lowering for " + op));
  }
  // The rest of the script was analyzed through torchax's lowering, including what comes after the first gap.
  for (const char* op : {"aten::convolution", "aten::addmm", "aten::sum"})
    EXPECT_TRUE(SupportedAten(r).count(op)) << op << "\n" << r.dump(1);
  // The text report says the same in words.
  EXPECT_THAT(last_.out + last_.err, Not(HasSubstr("Traceback")));
}

TEST_F(TorchaxE2E, LoweringTorchaxOfAScriptTorchaxRunsWhole) {
  // The README script: every call has a torchax lowering, and the chosen backend supports all of them.
  json r = Analyze("tests/e2e/scripts/torchax_env.py", {"--lowering", "torchax"});
  ASSERT_TRUE(r.is_object()) << last_.err;
  EXPECT_EQ(r["unsupported_operators"]["aten"].size(), 0u) << r.dump(1);
  for (const char* op : {"aten::convolution", "aten::addmm", "aten::_softmax", "aten::cumsum", "aten::randn"})
    EXPECT_TRUE(SupportedAten(r).count(op)) << op << "\n" << r.dump(1);
  EXPECT_GT(r["summary"]["hlo_instructions"].get<int>(), 0);
}

TEST_F(TorchaxE2E, LoweringTorchaxWithoutTorchaxSaysHowToInstallIt) {
  // Debian's Python has PyTorch 1.13 and no torchax: exit 3, one line, naming the interpreter and the fix.
  auto r = RunOpprobe({"analyze", "--lowering", "torchax", "--no-cache", "--no-progress", "--", "/usr/bin/python3",
                       "tests/e2e/scripts/torchax_env.py"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("cannot import torchax"));
  EXPECT_THAT(r.err, HasSubstr("requirements/torchax.txt"));
  auto no_script = RunOpprobe({"analyze", "--lowering", "torchax", "samples/traces/resnet18_train.json"});
  EXPECT_EQ(no_script.exit_code, 2) << no_script.err;
  EXPECT_THAT(no_script.err, HasSubstr("--lowering torchax runs a script"));
}

}  // namespace
}  // namespace opprobe
