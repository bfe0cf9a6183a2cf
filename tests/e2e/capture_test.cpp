// End to end: `opprobe capture` on real scripts with Debian's PyTorch (/usr/bin/python3).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <complex>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "analyzer/loaders/trace_loader.h"
#include "opprobe_version.h"

namespace opprobe {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// Debian's PyTorch 1.13 by default; the torch2 tier (tests/torch2/CMakeLists.txt) runs this suite again with
// OPPROBE_TEST_PYTHON set to the PyTorch 2.x virtual environment's python.
const char* const kPython = std::getenv("OPPROBE_TEST_PYTHON") && *std::getenv("OPPROBE_TEST_PYTHON")
                                ? std::getenv("OPPROBE_TEST_PYTHON")
                                : "/usr/bin/python3";

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct RunResult {
  int status = -1;
  std::string out, err;
};

class CaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("opprobe_capture_test_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Runs `opprobe <args>` from the repo root; args are shell-quoted here.
  RunResult Opprobe(const std::vector<std::string>& args, const std::string& env = "") {
    std::string cmd = "cd " + Quote(OPPROBE_SOURCE_DIR) + " && " + env + " " + Quote(OPPROBE_BIN);
    for (const auto& a : args) cmd += " " + Quote(a);
    cmd += " >" + Quote((dir_ / "out.txt").string()) + " 2>" + Quote((dir_ / "err.txt").string()) + " </dev/null";
    int rc = std::system(cmd.c_str());
    RunResult r;
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.out = Slurp(dir_ / "out.txt");
    r.err = Slurp(dir_ / "err.txt");
    return r;
  }

  std::string Trace(const std::string& name = "trace.json") { return (dir_ / name).string(); }

  fs::path dir_;
};

const analyzer::Node* Find(const analyzer::Graph& g, const std::string& qualified, const std::string& phase = "") {
  for (const auto& n : g.nodes)
    if (n.qualified_name() == qualified && (phase.empty() || n.phase == phase)) return &n;
  return nullptr;
}

TEST_F(CaptureTest, UnsupportedSample) {
  auto r = Opprobe({"capture", "-o", Trace(), "--", kPython, "samples/scripts/unsupported.py"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("recorded 4 aten calls (4 distinct) into " + Trace()));
  auto g = analyzer::LoadTrace(Trace());
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->model, "samples/scripts/unsupported.py");
  const analyzer::Node* mul = Find(*g, "aten::mul.Tensor");
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->TensorSignature(), "f32[4], c64[4]");
  EXPECT_EQ(mul->loc.ToString(), "unsupported.py 11");
  EXPECT_NE(Find(*g, "aten::_fft_r2c"), nullptr);
  // The checked-in sample is what a capture gives today.
  auto sample = analyzer::LoadTrace(std::string(OPPROBE_SOURCE_DIR) + "/samples/traces/unsupported.json");
  ASSERT_TRUE(sample.ok());
  ASSERT_EQ(sample->nodes.size(), g->nodes.size());
  for (size_t i = 0; i < g->nodes.size(); ++i) EXPECT_EQ(g->nodes[i].SignatureKey(), sample->nodes[i].SignatureKey());
  // No temp files left beside the trace.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) files += e.path().extension() == ".tmp";
  EXPECT_EQ(files, 0u);
}

// The capture is a package (capture/opprobe_capture) whose modules import as opprobe_capture.NAME only: a script
// whose own modules bear the capture's module names imports its own, sys.path[0] is the script's folder as with
// `python script.py`, and the capture's folder is not on sys.path at all.
TEST_F(CaptureTest, ScriptsOwnModulesWithTheCapturesNamesAreItsOwn) {
  const fs::path own = dir_ / "own";
  fs::create_directories(own);
  const std::vector<std::string> names = {"runner",    "recorder", "encoding", "call_sites", "phases", "schema_types",
                                          "top_level", "steps",    "program",  "progress",   "native", "standins"};
  std::string imports, list;
  for (const auto& n : names) {
    std::ofstream(own / (n + ".py")) << "WHO = 'own " << n << "'\n";
    imports += "import " + n + "\n";
    list += (list.empty() ? "" : ", ") + n;
  }
  std::ofstream(own / "train.py") << imports << "import os, sys\n"
                                  << "import torch\n"
                                  << "print('own:', ';'.join(m.WHO for m in (" << list << ")))\n"
                                  << "print('path0:', sys.path[0])\n"
                                  << "print('capture on path:', any(os.path.isdir(os.path.join(p, 'opprobe_capture')) "
                                     "for p in sys.path if p))\n"
                                  << "y = torch.ones(2).relu()\n";
  auto r = Opprobe({"capture", "-o", Trace(), "--", kPython, (own / "train.py").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  std::string expected = "own: ";
  for (size_t i = 0; i < names.size(); ++i) expected += (i ? ";own " : "own ") + names[i];
  EXPECT_THAT(r.out, HasSubstr(expected + "\n"));
  EXPECT_THAT(r.out, HasSubstr("path0: " + own.string() + "\n"));
  EXPECT_THAT(r.out, HasSubstr("capture on path: False\n"));
  auto g = analyzer::LoadTrace(Trace());
  ASSERT_TRUE(g.ok()) << g.status().message();
  bool relu = false;
  for (const auto& n : g->nodes) relu = relu || n.op == "aten::relu";
  EXPECT_TRUE(relu);
}

TEST_F(CaptureTest, ScriptThatRaisesKeepsTheCallsBeforeTheError) {
  auto r = Opprobe({"capture", "-o", Trace(), "--", kPython, "tests/fixtures/traces/scripts/raises_midway.py"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.out, HasSubstr("before the error 6.0"));  // the script's own output streams through
  EXPECT_THAT(r.err, HasSubstr("ValueError: boom from the fixture"));
  EXPECT_THAT(r.err, HasSubstr("raises_midway.py\", line 13"));
  EXPECT_THAT(r.err, Not(HasSubstr("opprobe_capture/")));  // the script's traceback alone, no capture frame
  EXPECT_THAT(r.err, HasSubstr("opprobe: the script failed at tests/fixtures/traces/scripts/raises_midway.py:13 "
                               "(ValueError: boom from the fixture); the trace holds the calls recorded before that"));
  auto g = analyzer::LoadTrace(Trace());
  ASSERT_TRUE(g.ok()) << g.status().message();
  const analyzer::Node* mul = Find(*g, "aten::mul.Tensor");
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->loc.ToString(), "raises_midway.py 9");
  auto doc = json::parse(Slurp(Trace()));
  EXPECT_EQ(doc["status"], "error");
  EXPECT_EQ(doc["exit_status"], 1);
  EXPECT_EQ(doc["error"]["type"], "ValueError");
  EXPECT_EQ(doc["error"]["message"], "boom from the fixture");
  EXPECT_EQ(doc["error"]["loc"]["line"], 13);
}

TEST_F(CaptureTest, AForwardThatRaisedLeavesNoModulePathBehind) {
  // The next model's calls are under its own paths, not joined to those of a model whose forward raised: PyTorch 2.1+
  // runs the capture's forward hook after such a forward (always_call); on 1.13 the next forward drops the entries of
  // module calls that have ended.
  auto r = Opprobe({"capture", "-o", Trace(), "--", kPython, "tests/fixtures/traces/scripts/forward_raises.py"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto g = analyzer::LoadTrace(Trace());
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::vector<std::string> paths;
  for (const auto& n : g->nodes)
    if (n.op == "aten::addmm") paths.push_back(n.module_path);
  EXPECT_EQ(paths, (std::vector<std::string>{"layer", "proj"}));
}

TEST_F(CaptureTest, SysExitStatusAndArgv) {
  auto r = Opprobe(
      {"capture", "-o", Trace(), "--", kPython, "tests/fixtures/traces/scripts/raises_midway.py", "--exit", "3"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("opprobe: script exited with status 3; the trace holds the calls recorded before that"));
  auto doc = json::parse(Slurp(Trace()));
  EXPECT_EQ(doc["exit_status"], 3);
  EXPECT_EQ(doc["error"]["type"], "SystemExit");
  EXPECT_EQ(doc["argv"], json::array({"tests/fixtures/traces/scripts/raises_midway.py", "--exit", "3"}));
  // sys.exit(0) is success.
  auto ok = Opprobe({"capture", "-o", Trace("ok.json"), "--", kPython, "tests/fixtures/traces/scripts/raises_midway.py",
                     "--exit", "0"});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(json::parse(Slurp(Trace("ok.json")))["status"], "ok");
}

TEST_F(CaptureTest, ModulePathsSourceLinesPhasesAndNoGrad) {
  auto r =
      Opprobe({"capture", "-o", Trace(), "--", kPython, "tests/fixtures/traces/scripts/modules_nograd.py", "a", "b c"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("argv: a b c"));
  auto g = analyzer::LoadTrace(Trace());
  ASSERT_TRUE(g.ok()) << g.status().message();

  const analyzer::Node* exp = Find(*g, "aten::exp");  // under torch.no_grad: still recorded
  ASSERT_NE(exp, nullptr);
  EXPECT_EQ(exp->loc.ToString(), "modules_nograd.py 41");
  EXPECT_EQ(exp->phase, "forward");
  EXPECT_EQ(exp->module_path, "");

  const analyzer::Node* sig = Find(*g, "aten::sigmoid");
  ASSERT_NE(sig, nullptr);
  EXPECT_EQ(sig->module_path, "block.inner");
  EXPECT_EQ(sig->loc.ToString(), "modules_nograd.py 14");

  const analyzer::Node* mul = Find(*g, "aten::mul.Tensor", "forward");
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->module_path, "block.inner");

  // `self.inner(x) + 1` runs in Block: its add has Block's path; the scalar is an int with alpha defaulted.
  const analyzer::Node* add = nullptr;
  for (const auto& n : g->nodes)
    if (n.qualified_name() == "aten::add.Tensor" && n.loc.line == 23) add = &n;
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->module_path, "block");
  EXPECT_EQ(add->arg("other", 1)->ToString(), "1");
  EXPECT_EQ(add->arg("alpha", 2)->ToString(), "1");

  const analyzer::Node* sum = Find(*g, "aten::sum");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->module_path, "");  // the root module's own forward

  const analyzer::Node* sig_bw = Find(*g, "aten::sigmoid_backward", "backward");
  ASSERT_NE(sig_bw, nullptr);
  EXPECT_EQ(sig_bw->loc.ToString(), "modules_nograd.py 43");  // backward ops point at .backward()

  const analyzer::Node* step = Find(*g, "aten::add_.Tensor", "optimizer");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->loc.ToString(), "modules_nograd.py 44");
  EXPECT_DOUBLE_EQ(step->arg("alpha", 2)->AsDouble(), -0.1);

  // `torch.full(..., dtype=torch.float64).float()`: dtype arguments arrive as dtypes.
  const analyzer::Node* full = Find(*g, "aten::full");
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->arg("dtype", 2)->kind, analyzer::Value::Kind::kDtype);
  EXPECT_EQ(full->arg("dtype", 2)->ToString(), "f64");
  EXPECT_EQ(full->arg("device", 4)->ToString(), "cpu");
}

// Issue 12.9 on real calls: a call made inside a library (a package under a site-packages folder) records the
// library frame beside the user's line, and each backward call the forward call whose autograd node made it (torch
// 2.x tells which node runs; 1.13 through pre-hooks on the graph's nodes): the same trace on both.
TEST_F(CaptureTest, LibraryFramesAndTheForwardCallsOfBackwardCalls) {
  auto r = Opprobe({"capture", "-o", Trace(), "--", kPython, "tests/fixtures/traces/scripts/library_calls.py"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto g = analyzer::LoadTrace(Trace());
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::string script = "tests/fixtures/traces/scripts/library_calls.py";
  const analyzer::Node* mul = Find(*g, "aten::mul.Tensor", "forward");
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->loc, (analyzer::SourceLoc{script, 16}));
  EXPECT_EQ(mul->lib_loc, (analyzer::SourceLoc{"fakelib/__init__.py", 7}));
  EXPECT_TRUE(mul->forward.empty());

  const analyzer::Node* mul_bw = Find(*g, "aten::mul.Tensor", "backward");
  ASSERT_NE(mul_bw, nullptr);
  EXPECT_EQ(mul_bw->loc, (analyzer::SourceLoc{script, 18}));  // the .backward() line
  EXPECT_TRUE(mul_bw->lib_loc.empty());
  EXPECT_EQ(mul_bw->forward.op, "aten::mul.Tensor");
  EXPECT_EQ(mul_bw->forward.loc, (analyzer::SourceLoc{script, 16}));
  EXPECT_EQ(mul_bw->forward.lib_loc, (analyzer::SourceLoc{"fakelib/__init__.py", 7}));

  const analyzer::Node* tanh_bw = Find(*g, "aten::tanh_backward", "backward");
  ASSERT_NE(tanh_bw, nullptr);
  EXPECT_EQ(tanh_bw->forward.op, "aten::tanh");
  EXPECT_EQ(tanh_bw->forward.loc, (analyzer::SourceLoc{script, 17}));
  EXPECT_TRUE(tanh_bw->forward.lib_loc.empty());
  // The initial gradient (ones_like) belongs to no forward call.
  const analyzer::Node* seed = Find(*g, "aten::ones_like", "backward");
  ASSERT_NE(seed, nullptr);
  EXPECT_TRUE(seed->forward.empty());

  // In a module tree: the forward call's module path (backward calls have none of their own).
  auto m =
      Opprobe({"capture", "-o", Trace("m.json"), "--", kPython, "tests/fixtures/traces/scripts/modules_nograd.py"});
  ASSERT_EQ(m.status, 0) << m.err;
  auto mg = analyzer::LoadTrace(Trace("m.json"));
  ASSERT_TRUE(mg.ok()) << mg.status().message();
  const analyzer::Node* sig_bw = Find(*mg, "aten::sigmoid_backward", "backward");
  ASSERT_NE(sig_bw, nullptr);
  EXPECT_EQ(sig_bw->module_path, "");
  EXPECT_EQ(sig_bw->forward.op, "aten::sigmoid");
  EXPECT_EQ(sig_bw->forward.module_path, "block.inner");
  EXPECT_EQ(sig_bw->forward.loc.ToString(), "modules_nograd.py 14");
}

// A script's own dispatch mode sees its calls, and the capture still records every call, after the mode too.
TEST_F(CaptureTest, AScriptsOwnDispatchMode) {
  auto r = Opprobe({"capture", "-o", Trace(), "--", kPython, "tests/fixtures/traces/scripts/own_dispatch_mode.py"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("the script's mode saw aten.mul.Tensor aten.relu.default\n"));
  auto doc = json::parse(Slurp(Trace()));
  EXPECT_FALSE(doc.contains("recorder_errors")) << doc["recorder_errors"].dump();
  std::vector<std::string> ops;
  for (const auto& c : doc["calls"]) ops.push_back(c["op"].get<std::string>());
  EXPECT_EQ(ops, (std::vector<std::string>{"aten::ones", "aten::add", "aten::mul", "aten::relu", "aten::sub"}));
  EXPECT_EQ(doc["calls"][4]["loc"]["line"], 20);
}

// Real aten calls covering every value kind the capture writes; all of them load.
TEST_F(CaptureTest, EveryValueKindFromRealCalls) {
  auto r = Opprobe({"capture", "-o", Trace(), "--", kPython, "tests/fixtures/traces/scripts/value_kinds.py"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto doc = json::parse(Slurp(Trace()));
  EXPECT_FALSE(doc.contains("recorder_errors")) << doc["recorder_errors"].dump();
  std::set<std::string> kinds;
  for (const auto& c : doc["calls"]) {
    for (const auto& a : c["args"]) kinds.insert(a["value"]["kind"].get<std::string>());
    for (const auto& o : c["outputs"]) kinds.insert(o["kind"].get<std::string>());
  }
  // PyTorch 2.x dispatches interpolate(scale_factor=...) as upsample_nearest2d.default with an output size
  // (1.13: .vec with scale_factors, the one float list of the script).
  const bool torch1 = doc["torch_version"].get<std::string>().starts_with("1.");
  std::set<std::string> want_kinds = {"bool",  "bool_list", "complex",  "device", "dtype",
                                      "float", "int",       "int_list", "layout", "memory_format",
                                      "none",  "other",     "string",   "tensor", "tensor_list"};
  if (torch1) want_kinds.insert("float_list");
  EXPECT_EQ(kinds, want_kinds);
  auto g = analyzer::LoadTrace(Trace());
  ASSERT_TRUE(g.ok()) << g.status().message();
  const analyzer::Node* index = Find(*g, "aten::index.Tensor");
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->arg("indices", 1)->ToString(), "[None, s64[2]]");
  const analyzer::Node* div = Find(*g, "aten::div.Tensor_mode");
  ASSERT_NE(div, nullptr);
  EXPECT_EQ(div->arg("rounding_mode", 2)->s, "floor");
  const analyzer::Node* clamp = Find(*g, "aten::clamp");
  ASSERT_NE(clamp, nullptr);
  EXPECT_TRUE(std::isinf(clamp->arg("max", 2)->f));
  const analyzer::Node* mul = nullptr;
  for (const auto& n : g->nodes)
    if (n.qualified_name() == "aten::mul.Tensor" && n.arg("other", 1)->kind == analyzer::Value::Kind::kComplex)
      mul = &n;
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->arg("other", 1)->c, std::complex<double>(1.0, -2.0));
  EXPECT_EQ(mul->outputs[0].tensor.dtype, hlo::PrimitiveType::C64);
  const analyzer::Node* up = Find(*g, torch1 ? "aten::upsample_nearest2d.vec" : "aten::upsample_nearest2d");
  ASSERT_NE(up, nullptr);
  if (torch1) { EXPECT_EQ(up->arg("scale_factors", 2)->floats, (std::vector<double>{2.0, 1.5})); }
  EXPECT_NE(Find(*g, "aten::native_layer_norm_backward", "backward"), nullptr);
}

// The fast path (capture/opprobe_capture/fastpath.cpp, docs/capture.md) counts the calls it has keyed before and hands
// every other call to the Python recorder: each script's trace is the same byte for byte with it
// (OPPROBE_CAPTURE_FASTPATH=require: an error where it is not built) and without it (=0), but for the address in a
// Generator's repr, which differs from run to run anyway. The test compiles it for its PyTorch first where it is not
// built yet (scripts/test builds it for both PyTorch versions; then this does nothing).
TEST_F(CaptureTest, FastPathTracesMatchThePythonPath) {
  const std::string build = "cd " + Quote(OPPROBE_SOURCE_DIR) + " && " + Quote(kPython) +
                            " capture/opprobe_capture --build-fastpath >" + Quote((dir_ / "build.txt").string()) +
                            " 2>&1";
  ASSERT_EQ(std::system(build.c_str()), 0) << Slurp(dir_ / "build.txt");
  const std::vector<std::vector<std::string>> scripts = {
      {"tests/fixtures/traces/scripts/repeats.py"},
      {"tests/fixtures/traces/scripts/step_function.py"},
      {"tests/fixtures/traces/scripts/modules_nograd.py", "a", "b c"},
      {"tests/fixtures/traces/scripts/library_calls.py"},
      {"tests/fixtures/traces/scripts/own_dispatch_mode.py"},
      {"tests/fixtures/traces/scripts/raises_midway.py"},
      {"tests/fixtures/traces/scripts/value_kinds.py"},
      {"samples/scripts/supported.py"},
      {"samples/scripts/linalg.py"},
      {"samples/scripts/resnet18_train.py"},
      {"tests/e2e/scripts/cuda_amp.py"},
      {"tests/e2e/scripts/torchax_env.py"},
  };
  const std::regex address(" at 0x[0-9a-f]+");
  for (const auto& script : scripts) {
    SCOPED_TRACE(script[0]);
    std::vector<std::string> fast_args = {"capture", "-q", "-o", Trace("fast.json"), "--", kPython};
    std::vector<std::string> slow_args = {"capture", "-q", "-o", Trace("slow.json"), "--", kPython};
    fast_args.insert(fast_args.end(), script.begin(), script.end());
    slow_args.insert(slow_args.end(), script.begin(), script.end());
    auto fast = Opprobe(fast_args, "OPPROBE_CAPTURE_FASTPATH=require");
    auto slow = Opprobe(slow_args, "OPPROBE_CAPTURE_FASTPATH=0");
    EXPECT_EQ(fast.status, slow.status) << fast.err;
    EXPECT_EQ(fast.out, slow.out);
    std::smatch m;
    const std::regex counted("the fast path counted ([0-9]+) of the ([0-9]+) calls");
    ASSERT_TRUE(std::regex_search(fast.err, m, counted)) << fast.err;
    if (script[0] == "tests/fixtures/traces/scripts/repeats.py") {
      EXPECT_GT(std::stol(m[1].str()), std::stol(m[2].str()) / 2);  // most of its calls repeat one seen before
    }
    if (script[0] == "tests/fixtures/traces/scripts/step_function.py") {
      // Its loop body is a function named `step`: counted all the same (before, none of its calls were), but for
      // the backward calls on 1.13, which always take the Python path (about 40% there, 70% on 2.x).
      EXPECT_GT(std::stol(m[1].str()), std::stol(m[2].str()) / 4);
    }
    EXPECT_THAT(slow.err, Not(HasSubstr("fast path")));
    const std::string fast_trace = std::regex_replace(Slurp(Trace("fast.json")), address, " at 0x");
    const std::string slow_trace = std::regex_replace(Slurp(Trace("slow.json")), address, " at 0x");
    ASSERT_FALSE(slow_trace.empty());
    EXPECT_TRUE(fast_trace == slow_trace) << "the traces differ: " << Trace("fast.json") << " " << Trace("slow.json");
  }
}

TEST_F(CaptureTest, UsageErrors) {
  auto no_python = Opprobe({"capture", "-o", Trace(), "--", "no-such-python3", "samples/scripts/unsupported.py"});
  EXPECT_EQ(no_python.status, 2);
  EXPECT_THAT(no_python.err, HasSubstr("Python interpreter 'no-such-python3' not found"));

  auto script_first = Opprobe({"capture", "-o", Trace(), "--", "samples/scripts/unsupported.py"});
  EXPECT_EQ(script_first.status, 2);
  EXPECT_THAT(script_first.err, HasSubstr("is a script, not a Python interpreter"));

  auto no_script = Opprobe({"capture", "-o", Trace(), "--", kPython, "nonexistent_script.py"});
  EXPECT_EQ(no_script.status, 2);
  EXPECT_THAT(no_script.err, HasSubstr("script not found: nonexistent_script.py"));

  auto no_output = Opprobe({"capture", "--", kPython, "samples/scripts/unsupported.py"});
  EXPECT_EQ(no_output.status, 2);
  EXPECT_THAT(no_output.err, HasSubstr("--output"));

  auto bad_shim = Opprobe({"capture", "-o", Trace(), "--", kPython, "samples/scripts/unsupported.py"},
                          "OPPROBE_CAPTURE_SHIM=/nonexistent/opprobe_capture");
  EXPECT_EQ(bad_shim.status, 2);
  EXPECT_THAT(bad_shim.err, HasSubstr("OPPROBE_CAPTURE_SHIM=/nonexistent/opprobe_capture: no capture package there "
                                      "(no /nonexistent/opprobe_capture/__main__.py)"));
  EXPECT_FALSE(fs::exists(Trace()));
}

TEST_F(CaptureTest, NoTraceWrittenIsAnErrorAndAnOldTraceIsNotMistakenForANewOne) {
  { std::ofstream(Trace()) << "old trace"; }
  // /bin/false stands in for a Python that dies before the shim writes anything.
  auto r = Opprobe({"capture", "-o", Trace(), "--", "/bin/false", "samples/scripts/unsupported.py"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("no trace was written"));
  EXPECT_THAT(r.err, HasSubstr("exited with status 1"));
  EXPECT_EQ(Slurp(Trace()), "old trace");  // left alone
}

TEST_F(CaptureTest, InterpreterWithoutTorch) {
  // `-S` (no site packages) is passed through to Python before the shim, and hides Debian's torch.
  auto r = Opprobe({"capture", "-o", Trace(), "--", kPython, "-S", "samples/scripts/unsupported.py"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("opprobe capture: cannot import torch with the Python interpreter"));
  EXPECT_THAT(r.err, HasSubstr("opprobe: no trace was written: the capture of samples/scripts/unsupported.py exited "
                               "with status 2"));
  EXPECT_FALSE(fs::exists(Trace()));

  auto module = Opprobe({"capture", "-o", Trace(), "--", kPython, "-m", "samples.scripts.unsupported"});
  EXPECT_EQ(module.status, 2);
  EXPECT_THAT(module.err, HasSubstr("capture runs a script file"));
}

// SIGTERM to opprobe reaches the script, which still writes the calls recorded so far.
TEST_F(CaptureTest, TerminatedCaptureKeepsItsTrace) {
  std::string out = (dir_ / "sleeps.out").string();
  std::string cmd = "cd " + Quote(OPPROBE_SOURCE_DIR) + " && { " + Quote(OPPROBE_BIN) + " capture -o " +
                    Quote(Trace()) + " -- " + kPython + " tests/fixtures/traces/scripts/sleeps.py >" + Quote(out) +
                    " 2>" + Quote((dir_ / "err.txt").string()) + " & P=$!; for i in $(seq 600); do grep -q started " +
                    Quote(out) + " && break; sleep 0.1; done; sleep 0.5; kill -TERM $P; wait $P; echo $? >" +
                    Quote((dir_ / "rc.txt").string()) + "; }";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(Slurp(dir_ / "rc.txt"), "2\n");
  std::string err = Slurp(dir_ / "err.txt");
  EXPECT_THAT(err, HasSubstr("script exited with status 143; the trace holds the calls recorded before that"));
  auto doc = json::parse(Slurp(Trace()));
  EXPECT_EQ(doc["error"]["type"], "SIGTERM");
  EXPECT_GE(doc["total_calls"].get<int>(), 2);
  EXPECT_LT(doc["total_calls"].get<int>(), 600);
}

// Issue 12.11: on a terminal (a pseudo-terminal here) a counter of the calls captured so far is redrawn on stderr
// while the script runs, erased before each line the script writes and at the end; never joined to the script's
// output. `opprobe analyze -- script` shows it too; -q shows none.
TEST_F(CaptureTest, CounterOfCallsCapturedSoFarOnATerminal) {
  auto in_pty = [&](const std::string& args, const std::string& out) {
    std::string cmd = "cd " + Quote(OPPROBE_SOURCE_DIR) + " && /usr/bin/python3 tests/e2e/scripts/run_in_pty.py " +
                      Quote(out) + " " + Quote(OPPROBE_BIN) + " " + args + " -- " + Quote(kPython) +
                      " tests/fixtures/traces/scripts/counts_slowly.py >/dev/null 2>&1";
    int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd;
    return Slurp(out);
  };
  const std::string erase = "\r\x1b[K";
  std::string out = in_pty("capture -o " + Quote(Trace()), (dir_ / "pty.txt").string());
  EXPECT_THAT(out, HasSubstr(erase + "opprobe: captured "));
  size_t counters = 0;
  for (size_t pos = out.find("opprobe: captured "); pos != std::string::npos;
       pos = out.find("opprobe: captured ", pos + 1)) {
    ++counters;
    size_t end = out.find(" distinct)", pos);
    ASSERT_NE(end, std::string::npos) << out;
    EXPECT_EQ(out.substr(end + 10, erase.size()), erase) << "a counter left drawn at " << pos << ":\n" << out;
  }
  EXPECT_GE(counters, 2u) << out;
  // The script's lines are whole (a pseudo-terminal ends lines with \r\n), the partial one too.
  EXPECT_THAT(out, HasSubstr("first line of the script\r\n"));
  EXPECT_THAT(out, HasSubstr("half way\r\n"));
  EXPECT_THAT(out, HasSubstr("partial line, ended\r\n"));
  EXPECT_THAT(out, HasSubstr("partial line, ended\r\nopprobe: recorded "));  // the last counter already erased
  EXPECT_EQ(json::parse(Slurp(Trace()))["status"], "ok");

  std::string quiet = in_pty("capture -q -o " + Quote(Trace("q.json")), (dir_ / "pty_quiet.txt").string());
  EXPECT_THAT(quiet, HasSubstr("half way"));
  EXPECT_THAT(quiet, Not(HasSubstr("opprobe: captured")));
  EXPECT_THAT(quiet, Not(HasSubstr("opprobe: recorded")));

  std::string analyze = in_pty("analyze --no-cache -o " + Quote(Trace("r.json")), (dir_ / "pty_analyze.txt").string());
  EXPECT_THAT(analyze, HasSubstr(erase + "opprobe: captured "));
  EXPECT_THAT(analyze, HasSubstr("half way\r\n"));
  std::string analyze_quiet =
      in_pty("analyze -q --no-cache -o " + Quote(Trace("rq.json")), (dir_ / "pty_analyze_quiet.txt").string());
  EXPECT_THAT(analyze_quiet, Not(HasSubstr("opprobe: captured")));
}

// Off a terminal: no counter, unless --progress asks for plain lines (one every 5 s).
TEST_F(CaptureTest, CounterOffATerminalOnlyWithProgress) {
  auto plain = Opprobe({"capture", "-o", Trace(), "--", kPython, "tests/fixtures/traces/scripts/counts_slowly.py"});
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_THAT(plain.err, Not(HasSubstr("opprobe: captured")));
  EXPECT_THAT(plain.err, HasSubstr("opprobe: recorded "));
  EXPECT_THAT(plain.out, HasSubstr("partial line, ended\n"));

  auto lines = Opprobe(
      {"capture", "--progress", "-o", Trace(), "--", kPython, "tests/fixtures/traces/scripts/counts_slowly.py", "5.5"});
  ASSERT_EQ(lines.status, 0) << lines.err;
  EXPECT_THAT(lines.err, ::testing::ContainsRegex("opprobe: captured [0-9]+ calls \\([0-9]+ distinct\\) so far\n"));
  EXPECT_THAT(lines.err, Not(HasSubstr("\x1b[K")));

  auto contradiction = Opprobe({"capture", "--progress", "--no-progress", "-o", Trace(), "--", kPython,
                                "tests/fixtures/traces/scripts/counts_slowly.py"});
  EXPECT_EQ(contradiction.status, 2);
  EXPECT_THAT(contradiction.err, HasSubstr("--progress and --no-progress contradict each other"));
}

TEST_F(CaptureTest, Help) {
  auto r = Opprobe({"capture", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("-o,--output"));
  EXPECT_THAT(r.out, HasSubstr("opprobe capture -o trace.json -- /usr/bin/python3"));
  EXPECT_THAT(r.out, HasSubstr("Exit status"));
}

}  // namespace
}  // namespace opprobe
