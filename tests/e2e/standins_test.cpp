// End to end: scripts written for PyTorch/XLA (classic and 2.x API), torchax/torch_xla2 and CUDA run
// unmodified under `opprobe capture` / `opprobe analyze -- python script.py` with Debian's PyTorch 1.13, where
// none of those packages (nor a GPU) exists: the capture's stand-ins (capture/opprobe_capture/standins.py) map the
// device to the CPU and record the step boundaries. Also: the seeds' scripts verbatim (samples/scripts), calls
// outside aten, every torch dtype (a dynamically quantized Linear), and what a failing script shows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "analyzer/loaders/trace_loader.h"
#include "opprobe_version.h"
#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadWholeFile;
using testing::RunOpprobe;

// Debian's PyTorch 1.13 by default; OPPROBE_STANDINS_PYTHON (or else OPPROBE_TEST_PYTHON, which the torch2 tier's
// tests/torch2/with_torch2.sh sets: ctest torch2_standins) names another interpreter (a PyTorch 2.x virtual
// environment's python) to run the same tests there.
const std::string kPython = [] {
  for (const char* var : {"OPPROBE_STANDINS_PYTHON", "OPPROBE_TEST_PYTHON"})
    if (const char* p = std::getenv(var); p && *p) return std::string(p);
  return std::string("/usr/bin/python3");
}();

class StandinsE2E : public testing::TempDirTest {
 protected:
  // `opprobe capture` of a script; the trace as JSON (null when none was written).
  json Capture(const std::string& script, int expected_exit = 0, std::vector<std::string> script_args = {}) {
    std::vector<std::string> args{"capture", "-o", Path("trace.json"), "--", kPython, script};
    args.insert(args.end(), script_args.begin(), script_args.end());
    last_ = RunOpprobe(args);
    EXPECT_EQ(last_.exit_code, expected_exit) << last_.err << last_.out;
    std::string text = ReadWholeFile(Path("trace.json"));
    return text.empty() ? json() : json::parse(text);
  }
  // `opprobe analyze -- python script` on rules:neuron-trn1; the JSON report.
  json Analyze(const std::string& script, int expected_exit = 0, const std::string& verbosity = "2") {
    std::string out = Path("report.json");
    last_ = RunOpprobe({"analyze", "--no-cache", "--no-progress", "--backend", "rules:neuron-trn1", "--verbosity",
                        verbosity, "-o", out, "--", kPython, script});
    EXPECT_EQ(last_.exit_code, expected_exit) << last_.err << last_.out;
    std::string text = ReadWholeFile(out);
    return text.empty() ? json() : json::parse(text);
  }
  static std::set<std::string> Ops(const json& trace) {
    std::set<std::string> ops;
    for (const auto& c : trace["calls"]) ops.insert(c["op"].get<std::string>());
    return ops;
  }
  static std::set<int64_t> Steps(const json& trace) {
    std::set<int64_t> steps;
    for (const auto& c : trace["calls"]) steps.insert(c["step"].get<int64_t>());
    return steps;
  }
  static int64_t Count(const json& trace, const std::string& op, const std::string& phase = "") {
    int64_t n = 0;
    for (const auto& c : trace["calls"])
      if (c["op"] == op && (phase.empty() || c["phase"] == phase)) n += c["count"].get<int64_t>();
    return n;
  }
  static std::set<std::string> SupportedAten(const json& report) {
    std::set<std::string> ops;
    for (const auto& [op, n] : report["supported_operators"]["aten"].items()) ops.insert(op);
    return ops;
  }
  // Every call is located in the script itself (the user's file), never in the shim.
  static void ExpectLocatedIn(const json& trace, const std::string& script) {
    for (const auto& c : trace["calls"]) {
      if (c["phase"] == "backward") continue;
      EXPECT_EQ(c["loc"]["file"], script) << c.dump();
    }
  }

  testing::RunResult last_;
};

// ---- the script families of issue #14 (1), written the way their users write them ----

TEST_F(StandinsE2E, TorchXlaClassicApiWithSpawnAndMpDeviceLoader) {
  json t = Capture("tests/e2e/scripts/xla_classic_mp.py", 0, {"--out", Path("model.pt")});
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["status"], "ok");
  EXPECT_EQ(t["standins"], json::array({"torch_xla"}));
  // 12 samples in batches of 4 through MpDeviceLoader: one step per batch.
  EXPECT_EQ(t["steps"], 3);
  EXPECT_EQ(t["step_boundaries"]["parallel_loader batch"], 3);
  EXPECT_EQ(Steps(t), (std::set<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(Count(t, "aten::addmm", "forward"), 6);  // 2 Linear layers x 3 batches
  EXPECT_GT(Count(t, "aten::gelu_backward", "backward"), 0);
  EXPECT_GT(Count(t, "aten::_foreach_add_", "optimizer") + Count(t, "aten::add_", "optimizer") +
                Count(t, "aten::addcdiv_", "optimizer"),
            0);
  EXPECT_THAT(last_.out, HasSubstr("step 0 ordinal 0 loss"));  // xm.master_print on the master ordinal
  EXPECT_TRUE(std::filesystem::exists(Path("model.pt")));      // xm.save
  ExpectLocatedIn(t, "tests/e2e/scripts/xla_classic_mp.py");

  json r = Analyze("tests/e2e/scripts/xla_classic_mp.py");
  ASSERT_TRUE(r.is_object());
  EXPECT_TRUE(SupportedAten(r).count("aten::addmm")) << r.dump(2);
}

TEST_F(StandinsE2E, TorchXla2ApiStepCompileSyncAndTorchCompileOpenxla) {
  json t = Capture("tests/e2e/scripts/xla2_api.py");
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["status"], "ok");
  EXPECT_EQ(t["standins"], json::array({"torch_xla"}));
  EXPECT_EQ(t["step_boundaries"]["torch_xla.compile"], 2);
  EXPECT_EQ(t["step_boundaries"]["torch_xla.step"], 2);
  EXPECT_EQ(t["step_boundaries"]["torch_xla.sync"], 1);
  EXPECT_EQ(t["steps"], 5);
  EXPECT_GT(Count(t, "aten::native_layer_norm_backward", "backward"), 0);
  // torch.compile(model, backend="openxla") runs eagerly: its forward is recorded, in the last step.
  bool inference_in_last_step = false;
  for (const auto& c : t["calls"])
    if (c["op"] == "aten::sigmoid" && c["step"] == 5) inference_in_last_step = true;
  EXPECT_TRUE(inference_in_last_step) << t.dump();
  ExpectLocatedIn(t, "tests/e2e/scripts/xla2_api.py");

  json r = Analyze("tests/e2e/scripts/xla2_api.py");
  ASSERT_TRUE(r.is_object());
  EXPECT_TRUE(SupportedAten(r).count("aten::sigmoid")) << r.dump(2);
}

TEST_F(StandinsE2E, TorchaxEnvironmentToXlaAndJaxJit) {
  json t = Capture("tests/e2e/scripts/torchax_env.py");
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["status"], "ok");
  EXPECT_EQ(t["standins"], json::array({"torchax"}));
  EXPECT_EQ(t["step_boundaries"]["torchax.interop.jax_jit"], 1);
  std::set<std::string> ops = Ops(t);
  EXPECT_TRUE(ops.count("aten::convolution") && ops.count("aten::_softmax") && ops.count("aten::cumsum")) << t.dump();
  EXPECT_THAT(last_.out, HasSubstr("torch.Size([5, 2])"));
  ExpectLocatedIn(t, "tests/e2e/scripts/torchax_env.py");
  json r = Analyze("tests/e2e/scripts/torchax_env.py");
  ASSERT_TRUE(r.is_object());
  EXPECT_TRUE(SupportedAten(r).count("aten::convolution")) << r.dump(2);
}

TEST_F(StandinsE2E, CudaScriptWithAmpRunsWithoutAGpu) {
  json t = Capture("tests/e2e/scripts/cuda_amp.py");
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["status"], "ok") << last_.err;
  EXPECT_EQ(t["standins"], json::array({"cuda"}));
  EXPECT_EQ(Count(t, "aten::convolution", "forward"), 2);
  EXPECT_GT(Count(t, "aten::convolution_backward", "backward"), 0);
  // Every tensor the script put on "cuda" was recorded on the CPU, and no factory saw a cuda device.
  for (const auto& c : t["calls"])
    for (const auto& a : c["args"])
      if (a["value"]["kind"] == "device") { EXPECT_EQ(a["value"]["value"], "cpu") << c.dump(); }
  EXPECT_THAT(last_.out, HasSubstr("opprobe capture stand-in (CPU)"));
  EXPECT_THAT(last_.out, HasSubstr("one-hot torch.Size([2, 5])"));  // TorchScript still compiles torch.zeros
  json r = Analyze("tests/e2e/scripts/cuda_amp.py");
  ASSERT_TRUE(r.is_object());
  EXPECT_TRUE(SupportedAten(r).count("aten::convolution")) << r.dump(2);
}

TEST_F(StandinsE2E, XlaAutocastCastsAsTorchXlaDoes) {
  // torch.autocast("xla") and torch_xla.amp.autocast: bfloat16 matmuls, as under the real torch_xla (which prints
  // `dtypes torch.bfloat16 torch.bfloat16` for this script), on PyTorch 1.13 too, which knows no "xla" autocast.
  json t = Capture("tests/e2e/scripts/xla_autocast.py");
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["status"], "ok") << last_.err;
  EXPECT_THAT(last_.out, HasSubstr("dtypes torch.bfloat16 torch.bfloat16"));
  int bf16_addmm = 0;
  for (const auto& c : t["calls"])
    if (c["op"] == "aten::addmm" && c["outputs"][0]["dtype"] == "bfloat16") bf16_addmm += c["count"].get<int>();
  EXPECT_EQ(bf16_addmm, 4) << t["calls"].dump();  // two linear layers under each of the two autocasts
}

TEST_F(StandinsE2E, PlainCpuScriptUsesNoStandin) {
  json t = Capture("tests/fixtures/traces/scripts/raises_midway.py", 2);
  ASSERT_TRUE(t.is_object());
  EXPECT_FALSE(t.contains("standins")) << t.dump();
  EXPECT_EQ(t["steps"], 0);
}

// ---- the seeds' scripts of issue #14 (2), verbatim ----

TEST_F(StandinsE2E, NeuronTutorialScriptsAreVerbatim) {
  // samples/scripts/{supported,unsupported}.py are the tutorial's code blocks, dedented, byte for byte.
  std::string seed = ReadWholeFile(std::string(OPPROBE_SOURCE_DIR) + "/../shared/seeds/002_db151745a0cce3af.txt");
  ASSERT_FALSE(seed.empty()) << "the seed 002 is not found beside the repository";
  for (const std::string name : {"supported", "unsupported"}) {
    std::string script = ReadWholeFile(std::string(OPPROBE_SOURCE_DIR) + "/samples/scripts/" + name + ".py");
    std::string indented;
    size_t start = 0;
    while (start < script.size()) {
      size_t end = script.find('\n', start);
      std::string line = script.substr(start, end - start);
      indented += (line.empty() ? "" : "    " + line) + "\n";
      start = end + 1;
    }
    // A blank line of the block is "    " or "" in the seed: compare with whitespace-only lines emptied.
    std::string seed_norm;
    start = 0;
    while (start < seed.size()) {
      size_t end = seed.find('\n', start);
      if (end == std::string::npos) end = seed.size();
      std::string line = seed.substr(start, end - start);
      if (line.find_first_not_of(' ') == std::string::npos) line.clear();
      seed_norm += line + "\n";
      start = end + 1;
    }
    EXPECT_NE(seed_norm.find("``" + name + ".py``\n\n.. code:: ipython3\n\n" + indented), std::string::npos) << name;
  }
}

TEST_F(StandinsE2E, NeuronTutorialSupportedPyAsPrinted) {
  json t = Capture("samples/scripts/supported.py");
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["status"], "ok") << last_.err;
  EXPECT_EQ(t["standins"], json::array({"torch_xla"}));
  EXPECT_EQ(t["step_boundaries"]["xm.mark_step"], 2);
  // Each entry carries the step of its first call: the first epoch's calls are in step 0; the second epoch adds
  // entries (step 1) only where its calls differ (PyTorch 1.13's zero_grad zeroes the gradients, 2.x drops them).
  EXPECT_TRUE(Steps(t).count(0));
  EXPECT_FALSE(Steps(t).count(2));
  // The tutorial's target is int64 (`torch.tensor([1,0])`): mse_loss_backward runs as XLA runs it.
  EXPECT_EQ(Count(t, "aten::mse_loss_backward", "backward"), 2);
  json r = Analyze("samples/scripts/supported.py");
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["support_percentage"], "100.00%") << r.dump(2);
  for (const char* op : {"aten::mm", "aten::mse_loss", "aten::mse_loss_backward", "aten::relu", "aten::tanh",
                         "aten::threshold_backward"})
    EXPECT_TRUE(SupportedAten(r).count(op)) << op << r.dump(2);
}

TEST_F(StandinsE2E, NeuronTutorialUnsupportedPyAsPrinted) {
  json r = Analyze("samples/scripts/unsupported.py", 0, "1");
  ASSERT_TRUE(r.is_object());
  // As in the tutorial: aten::mul both supported and unsupported, its c64 convert and multiply unsupported, and
  // the call line of `return x * y`.
  EXPECT_TRUE(SupportedAten(r).count("aten::mul")) << r.dump(2);
  bool mul = false;
  for (const auto& e : r["unsupported_operators"]["aten"])
    if (e["kind"] == "aten::mul") {
      mul = true;
      EXPECT_EQ(e["call"], "unsupported.py 11") << e.dump();
    }
  EXPECT_TRUE(mul) << r.dump(2);
  std::set<std::string> xla;
  for (const auto& e : r["unsupported_operators"]["xla"])
    if (e["aten_op"] == "aten::mul") xla.insert(e["hlo_instruction"].get<std::string>());
  EXPECT_TRUE(xla.count("c64[4]{0} convert(f32[4]{0})")) << r.dump(2);
  EXPECT_TRUE(xla.count("c64[4]{0} multiply(c64[4]{0}, c64[4]{0})")) << r.dump(2);
  EXPECT_NE(r["support_percentage"], "100.00%");
}

TEST_F(StandinsE2E, EagerModeAndCompileSeed) {
  json t = Capture("samples/scripts/xla_eager_compile.py");
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["status"], "ok") << last_.err;
  EXPECT_EQ(t["step_boundaries"]["torch_xla.compile"], 1);
  EXPECT_EQ(Count(t, "aten::convolution"), 20);  // resnet18's convolutions, once
  // Calls inside torchvision name the script's line and the library frame.
  bool conv_located = false;
  for (const auto& c : t["calls"])
    if (c["op"] == "aten::convolution") {
      EXPECT_EQ(c["loc"]["file"], "samples/scripts/xla_eager_compile.py");
      EXPECT_EQ(c["loc"]["line"], 16);  // res = compiled_model(input)
      ASSERT_TRUE(c.contains("lib_loc")) << c.dump();
      EXPECT_THAT(c["lib_loc"]["file"].get<std::string>(), HasSubstr("torchvision/models/resnet.py"));
      conv_located = true;
    }
  EXPECT_TRUE(conv_located);
  EXPECT_FALSE(Ops(t).count("torchvision::_cuda_version"));  // no tensor in or out: bookkeeping
  json r = Analyze("samples/scripts/xla_eager_compile.py");
  ASSERT_TRUE(r.is_object());
  EXPECT_TRUE(SupportedAten(r).count("aten::convolution")) << r.dump(2);
}

TEST_F(StandinsE2E, OptimizerStepMnistSeed) {
  json t = Capture("samples/scripts/xla_mnist_optimizer_step.py");
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["status"], "ok") << last_.err;
  EXPECT_EQ(t["step_boundaries"]["xm.mark_step"], 2);  // xm.optimizer_step(optimizer, barrier=True), 2 batches
  EXPECT_EQ(Steps(t), (std::set<int64_t>{0, 1}));
  EXPECT_GT(Count(t, "aten::nll_loss_backward", "backward"), 0);
  EXPECT_GT(Count(t, "aten::add_", "optimizer"), 0);  // SGD with momentum inside xm.optimizer_step
  json r = Analyze("samples/scripts/xla_mnist_optimizer_step.py");
  ASSERT_TRUE(r.is_object());
  EXPECT_TRUE(SupportedAten(r).count("aten::convolution")) << r.dump(2);
}

TEST_F(StandinsE2E, TorchXla2Seed) {
  json t = Capture("samples/scripts/torch_xla2_model.py");
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["status"], "ok") << last_.err;
  EXPECT_EQ(t["standins"], json::array({"torch_xla2"}));
  EXPECT_EQ(Count(t, "aten::addmm"), 9);  // 3 Linear layers, 3 forwards (plain, in env, after to_xla)
  json r = Analyze("samples/scripts/torch_xla2_model.py");
  ASSERT_TRUE(r.is_object());
  for (const char* op : {"aten::addmm", "aten::relu", "aten::view"}) EXPECT_TRUE(SupportedAten(r).count(op)) << op;
  // The model itself is supported; only printing a tensor (`print(m(inputs))`, line 24: PyTorch's tensor
  // formatting selects the finite values with masked_select, a dynamic shape) is not.
  for (const auto& e : r["unsupported_operators"]["aten"]) EXPECT_EQ(e["call"], "torch_xla2_model.py 24") << e.dump();
}

// ---- a failing script under a stand-in: the user's traceback, the user's line ----

TEST_F(StandinsE2E, FailureInsideAStandinCallShowsOnlyTheUsersFrames) {
  std::ofstream(Path("fails.py")) << "import torch\n"
                                     "import torch_xla.core.xla_model as xm\n"
                                     "\n"
                                     "def check(t):\n"
                                     "    return t.view(3, 5)\n"
                                     "\n"
                                     "x = torch.ones(4, 2, device=xm.xla_device())\n"
                                     "xm.mark_step()\n"
                                     "opt = torch.optim.SGD([torch.nn.Parameter(x)], lr=0.1)\n"
                                     "xm.optimizer_step(opt, optimizer_args={'closure': lambda: check(x)})\n";
  json t = Capture(Path("fails.py"), 2);
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["status"], "error");
  EXPECT_EQ(t["error"]["type"], "RuntimeError");
  EXPECT_EQ(t["error"]["loc"]["line"], 5);
  EXPECT_THAT(t["error"]["loc"]["file"].get<std::string>(), HasSubstr("fails.py"));
  EXPECT_THAT(last_.err, HasSubstr("line 10, in <module>"));
  EXPECT_THAT(last_.err, HasSubstr("line 5, in check"));
  EXPECT_THAT(last_.err, Not(HasSubstr("opprobe_capture/")));
  EXPECT_THAT(last_.err, Not(HasSubstr("standins.py")));
  EXPECT_THAT(last_.err, Not(HasSubstr("runpy")));
  EXPECT_THAT(last_.err, Not(HasSubstr("_python_dispatch.py")));
  EXPECT_EQ(t["steps"], 1);
}

// ---- calls outside aten, every dtype ----

TEST_F(StandinsE2E, NonAtenOpsAreCalls) {
  std::ofstream(Path("ops.py")) << "import torch\n"
                                   "import torchvision\n"
                                   "lib = torch.library.Library('mylib', 'DEF')\n"
                                   "lib.define('my_op(Tensor x) -> Tensor')\n"
                                   "lib.impl('my_op', lambda x: x * 2, 'CPU')\n"
                                   "boxes = torch.tensor([[0., 0., 2., 2.], [0., 0., 2.1, 2.], [5., 5., 6., 6.]])\n"
                                   "keep = torchvision.ops.nms(boxes, torch.tensor([0.9, 0.8, 0.7]), 0.5)\n"
                                   "y = torch.ops.mylib.my_op(boxes)\n";
  json t = Capture(Path("ops.py"));
  ASSERT_TRUE(t.is_object());
  const json* nms = nullptr;
  const json* mine = nullptr;
  for (const auto& c : t["calls"]) {
    if (c["op"] == "torchvision::nms") nms = &c;
    if (c["op"] == "mylib::my_op") mine = &c;
  }
  ASSERT_NE(nms, nullptr) << t.dump();
  EXPECT_EQ((*nms)["loc"]["line"], 7);
  EXPECT_EQ((*nms)["args"][0]["name"], "dets");
  EXPECT_EQ((*nms)["args"][0]["value"]["shape"], json::array({3, 4}));
  EXPECT_EQ((*nms)["outputs"][0]["dtype"], "int64");
  ASSERT_NE(mine, nullptr) << t.dump();
  EXPECT_EQ((*mine)["loc"]["line"], 8);
  auto g = analyzer::LoadTrace(Path("trace.json"));
  ASSERT_TRUE(g.ok()) << g.status().message();
  bool loaded = false;
  for (const auto& n : g->nodes) loaded = loaded || n.op == "torchvision::nms";
  EXPECT_TRUE(loaded);
}

TEST_F(StandinsE2E, DynamicallyQuantizedLinearAnalyzes) {
  std::ofstream(Path("quant.py")) << "import torch\n"
                                     "model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())\n"
                                     "q = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, "
                                     "dtype=torch.qint8)\n"
                                     "y = q(torch.randn(2, 4))\n";
  json t = Capture(Path("quant.py"));
  ASSERT_TRUE(t.is_object());
  std::set<std::string> ops = Ops(t);
  EXPECT_TRUE(ops.count("quantized::linear_dynamic")) << t.dump();
  EXPECT_TRUE(ops.count("aten::quantize_per_tensor")) << t.dump();
  json r = Analyze(Path("quant.py"));
  ASSERT_TRUE(r.is_object()) << last_.err;
  EXPECT_THAT(last_.err, Not(HasSubstr("unknown dtype")));
  EXPECT_TRUE(SupportedAten(r).count("aten::relu")) << r.dump(2);
  std::string text = r.dump();
  EXPECT_THAT(text, HasSubstr("aten::quantize_per_tensor"));
  EXPECT_THAT(text, HasSubstr("torch.qint8"));  // the reason names the dtype
}

}  // namespace
}  // namespace opprobe
