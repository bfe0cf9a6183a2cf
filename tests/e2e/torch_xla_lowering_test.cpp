// `opprobe analyze --lowering torch_xla -- <python> script.py`: the real PyTorch/XLA from PyPI (the
// torch_xla virtual environment, OPPROBE_TORCH_XLA_PYTHON, which scripts/test creates) runs the script on
// its CPU PJRT device; opprobe analyzes the HLO torch_xla emits, attributed to aten ops and script lines.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "opprobe_version.h"
#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using testing::ReadWholeFile;
using testing::RunOpprobe;

class TorchXlaLowering : public testing::TempDirTest {
 protected:
  std::string Python() {
    const char* py = std::getenv("OPPROBE_TORCH_XLA_PYTHON");
    return py ? py : "";
  }
};

TEST_F(TorchXlaLowering, AnalyzesTheHloTorchXlaEmits) {
  ASSERT_FALSE(Python().empty())
      << "OPPROBE_TORCH_XLA_PYTHON is not set (scripts/test creates the torch_xla environment and sets it)";
  std::string out = Path("report.json");
  auto r = RunOpprobe({"analyze", "--lowering", "torch_xla", "--no-cache", "--no-progress", "-q", "--backend",
                       "rules:neuron-trn1", "-o", out, "--", Python(), "tests/torch2/scripts/xla_train.py"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_THAT(r.out, HasSubstr("loss"));  // the script's own output streams through
  json report = json::parse(ReadWholeFile(out));
  EXPECT_EQ(report["input_kind"], "hlo");
  json ops = report["supported_operators"]["aten"];
  for (const auto& e : report["unsupported_operators"]["aten"]) ops[e.value("kind", "?")] = 0;
  // torch_xla's own lowering of the forward, backward and optimizer ops, named by its metadata.
  for (const char* op : {"aten::addmm", "aten::relu", "aten::mm", "aten::threshold_backward"})
    EXPECT_TRUE(ops.contains(op)) << op << "\n" << report.dump(1);
  EXPECT_EQ(report["model"], "tests/torch2/scripts/xla_train.py");  // the script, not the temporary dump
  EXPECT_GT(report["summary"]["hlo_instructions"].get<int>(), 0);
}

TEST_F(TorchXlaLowering, CallsTorchXlaRanOnTheHostAreEntriesWithTheirLines) {
  // torch.nonzero (a CPU fallback) and `.item()` (a value read) in each of 4 steps: torch_xla runs both on the
  // host, and says so only in its metrics counters. The report lists each at its line, never silently.
  ASSERT_FALSE(Python().empty())
      << "OPPROBE_TORCH_XLA_PYTHON is not set (scripts/test creates the torch_xla environment and sets it)";
  const std::string script = "tests/torch2/scripts/xla_loop_host_calls.py";
  std::string out = Path("report.json");
  auto r = RunOpprobe({"analyze", "--lowering", "torch_xla", "--no-cache", "--no-progress", "--backend",
                       "rules:neuron-trn1", "--fail-under", "100", "-o", out, "--", Python(), script});
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;   // the gate fails: two calls never reach the device
  EXPECT_THAT(r.out, HasSubstr("step 3 loss"));  // the script ran as it does alone
  json report = json::parse(ReadWholeFile(out));
  std::map<std::string, json> host;
  for (const auto& e : report["unsupported_operators"]["aten"])
    if (e.value("failureAt", "") == "cpu_fallback") host[e.value("kind", "?")] = e;
  ASSERT_EQ(host.size(), 2u) << report["unsupported_operators"].dump(1);
  ASSERT_TRUE(host.count("aten::nonzero"));
  EXPECT_EQ(host["aten::nonzero"]["call"], "xla_loop_host_calls.py 19");
  EXPECT_EQ(host["aten::nonzero"]["count"], 4);
  EXPECT_THAT(host["aten::nonzero"]["reason"].get<std::string>(),
              HasSubstr("torch_xla 2.9.0 has no device lowering for aten::nonzero and ran it on the host CPU"));
  ASSERT_TRUE(host.count("aten::_local_scalar_dense"));
  EXPECT_EQ(host["aten::_local_scalar_dense"]["call"], "xla_loop_host_calls.py 23");
  EXPECT_EQ(host["aten::_local_scalar_dense"]["count"], 4);
  EXPECT_THAT(host["aten::_local_scalar_dense"]["reason"].get<std::string>(), HasSubstr("read a value on the host"));
  EXPECT_EQ(report["summary"]["cpu_fallback_calls"], 8);
  EXPECT_LT(std::stod(report["support_percentage"].get<std::string>()), 100.0) << report["support_percentage"];
  // The device's own verdicts are still there: the rest of the step, lowered by torch_xla.
  EXPECT_TRUE(report["supported_operators"]["aten"].contains("aten::addmm")) << report.dump(1);
  // The text report names them too.
  auto text = RunOpprobe({"analyze", "--lowering", "torch_xla", "--no-progress", "--backend", "rules:neuron-trn1", "--",
                          Python(), script});
  EXPECT_THAT(text.out, HasSubstr("8 of the calls ran on the host CPU under torch_xla"));
  EXPECT_THAT(text.out, HasSubstr("cpu_fallback"));
}

TEST_F(TorchXlaLowering, TheNormalCaptureRecordsAScriptOnTheRealTorchXlaWholeBackwardIncluded) {
  // Without --lowering torch_xla, a script run with the real torch_xla installed is captured as any script, its
  // tensors on torch_xla's own device. That device's autograd runs the backward on a thread of its own with no
  // frame of the script; its calls were dropped as recorder errors ("call stack is not deep enough") until they
  // were placed by their phase. The backward's and the optimizer's calls are those the stand-in records.
  ASSERT_FALSE(Python().empty())
      << "OPPROBE_TORCH_XLA_PYTHON is not set (scripts/test creates the torch_xla environment and sets it)";
  const char* torch2 = std::getenv("OPPROBE_TORCH2_PYTHON");
  ASSERT_TRUE(torch2 && *torch2) << "OPPROBE_TORCH2_PYTHON is not set (scripts/test sets it)";
  auto calls_of = [&](const std::string& python, const std::string& name) {
    auto r = RunOpprobe({"capture", "-q", "-o", Path(name), "--", python, "tests/torch2/scripts/xla_train.py"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json trace = json::parse(ReadWholeFile(Path(name)));
    EXPECT_FALSE(trace.contains("recorder_errors")) << trace["recorder_errors"].dump();
    std::map<std::string, std::set<std::string>> by_phase;
    for (const auto& c : trace["calls"]) by_phase[c["phase"].get<std::string>()].insert(c["op"].get<std::string>());
    return by_phase;
  };
  auto real = calls_of(Python(), "real.json");
  auto standin = calls_of(torch2, "standin.json");
  for (const char* op : {"aten::threshold_backward", "aten::mm", "aten::nll_loss_backward"})
    EXPECT_TRUE(real["backward"].count(op)) << op;
  EXPECT_EQ(real["backward"], standin["backward"]);
  EXPECT_EQ(real["optimizer"], standin["optimizer"]);
  EXPECT_TRUE(real["forward"].count("aten::_to_copy")) << "the real device's transfers";
}

TEST_F(TorchXlaLowering, PythonWithoutTorchXlaExits3WithHowToInstall) {
  auto r = RunOpprobe({"analyze", "--lowering", "torch_xla", "--no-progress", "-q", "--", "/usr/bin/python3",
                       "tests/torch2/scripts/xla_train.py"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("cannot import torch_xla"));
  EXPECT_THAT(r.err, HasSubstr("pip install"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(TorchXlaLowering, NeedsAScript) {
  auto r = RunOpprobe({"analyze", "--lowering", "torch_xla", "samples/traces/unsupported.json"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--lowering torch_xla runs a script"));
}

}  // namespace
}  // namespace opprobe
