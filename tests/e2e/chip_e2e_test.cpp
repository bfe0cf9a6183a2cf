// tpu: and gpu: end to end: the real binary with the real TPU and GPU compilers (libtpu and XLA's CUDA plugin from
// PyPI; scripts/test makes their environments from requirements/tpu.txt and requirements/gpu.txt and names the plugins
// with OPPROBE_LIBTPU and OPPROBE_CUDA_PLUGIN), compiling every unit of the bundled ResNet-18 training step with no
// TPU or GPU present; a bad spec is a usage error (exit 2), a missing plugin exit 3 with the install command.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/run_binary.h"
#include "testing/scoped_env.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

using nlohmann::json;
using testing::ReadWholeFile;
using testing::RunOpprobe;
using testing::ScopedEnv;

class ChipE2E : public testing::TempDirTest {};

TEST_F(ChipE2E, EveryResnetUnitIsJudgedByTheTpuCompiler) {
  std::string out = Path("report.json");
  auto r = RunOpprobe({"analyze", "samples/traces/resnet18_train.json", "--backend", "tpu:v5e", "--no-cache",
                       "--no-progress", "--verbosity", "0", "-o", out, "--fail-under", "100"});
  // The TPU compiler refuses one unit (below), so a gate at 100% fails: exit 1, the report written.
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  json report = json::parse(ReadWholeFile(out));
  EXPECT_EQ(report["backend"], "tpu:v5e");
  const std::string version = report["backend_version"];
  EXPECT_EQ(version.rfind("libtpu 0.0.42.1; tpu TFRT TPU v5 lite Built on ", 0), 0u) << version;
  EXPECT_NE(version.find("; topology v5e:2x4 (8 devices); PJRT API 0.112"), std::string::npos) << version;
  const json& s = report["summary"];
  EXPECT_EQ(s["probes_run"], s["unique_probes"]);
  EXPECT_GT(s["unique_probes"].get<int>(), 200);
  // aten::randint lowers to an f64 rng, which the TPU compiler cannot rewrite to 32-bit types (its own words).
  EXPECT_EQ(s["hlo_instructions"].get<int>() - s["supported_instructions"].get<int>(), 1) << report.dump();
  const std::string dumped = report["unsupported_operators"].dump();
  EXPECT_NE(dumped.find("aten::randint"), std::string::npos) << dumped;
  EXPECT_NE(dumped.find("compile: UNIMPLEMENTED: While rewriting computation to not contain X{64|128} element types"),
            std::string::npos)
      << dumped;
}

TEST_F(ChipE2E, EveryResnetUnitCompilesForTheGpuAndConvolutionsSayTheyAreCudnnCalls) {
  std::string out = Path("report.json");
  auto r = RunOpprobe({"analyze", "samples/traces/resnet18_train.json", "--backend", "gpu:h100", "--no-cache",
                       "--no-progress", "--verbosity", "0", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json report = json::parse(ReadWholeFile(out));
  EXPECT_EQ(report["backend"], "gpu:h100");
  const std::string version = report["backend_version"];
  EXPECT_EQ(version.rfind("jax_cuda12_pjrt 0.12.0.1; cuda NVIDIA H100 80GB HBM3; topology 1x1x8 (8 devices)", 0), 0u)
      << version;
  const json& s = report["summary"];
  EXPECT_EQ(s["supported_instructions"], s["hlo_instructions"]);
  EXPECT_NE(ReadWholeFile(out).find("compiled to a vendor library call (__cudnn$convForward)"), std::string::npos);
}

TEST_F(ChipE2E, BadSpecsAreUsageErrorsAndAMissingCompilerIsExit3) {
  auto unknown = RunOpprobe({"analyze", "samples/traces/supported.json", "--backend", "tpu:v99", "--no-cache"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("unknown TPU generation 'v99'"), std::string::npos) << unknown.err;
  auto gpu = RunOpprobe({"analyze", "samples/traces/supported.json", "--backend", "gpu:h100:lots", "--no-cache"});
  EXPECT_EQ(gpu.exit_code, 2) << gpu.err;
  ScopedEnv root("OPPROBE_VENV_ROOT", Path("no-venvs"));
  ScopedEnv plugin("OPPROBE_LIBTPU", "");
  auto missing = RunOpprobe({"analyze", "samples/traces/supported.json", "--backend", "tpu:v5e", "--no-cache"});
  EXPECT_EQ(missing.exit_code, 3) << missing.err;
  EXPECT_NE(missing.err.find("pip install -r requirements/tpu.txt"), std::string::npos) << missing.err;
}

// Gating a compiler upgrade (docs/ci.md): the same units with two libtpu versions from PyPI (requirements/tpu.txt and
// requirements/tpu-next.txt; scripts/test names the second with OPPROBE_LIBTPU_NEXT), then `opprobe diff`. Measured:
// 0.0.42.1 and 0.0.52 give the same verdicts on these units, so the diff names both versions and finds nothing new.
TEST_F(ChipE2E, ACompilerUpgradeIsDiffedVersionAgainstVersion) {
  const char* next = std::getenv("OPPROBE_LIBTPU_NEXT");
  ASSERT_TRUE(next && *next) << "OPPROBE_LIBTPU_NEXT is not set: scripts/test installs requirements/tpu-next.txt";
  std::string old_report = Path("old.json"), new_report = Path("new.json");
  auto o = RunOpprobe({"analyze", "tests/fixtures/hlo/tpu_edge_units.hlo", "--backend", "tpu:v5e", "--no-cache",
                       "--no-progress", "--verbosity", "1", "-o", old_report});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto n = RunOpprobe({"analyze", "tests/fixtures/hlo/tpu_edge_units.hlo", "--backend",
                       std::string("tpu:v5e,plugin=") + next, "--no-cache", "--no-progress", "--verbosity", "1", "-o",
                       new_report});
  ASSERT_EQ(n.exit_code, 0) << n.err;
  json old_j = json::parse(ReadWholeFile(old_report)), new_j = json::parse(ReadWholeFile(new_report));
  EXPECT_EQ(new_j["backend"], "tpu:v5e");  // the plugin's path is not part of the target's name
  EXPECT_EQ(new_j["backend_version"].get<std::string>().rfind("libtpu 0.0.52; ", 0), 0u) << new_j["backend_version"];
  // Both refuse the s2 add, the c128 FFT and the f64 rng, each in the compiler's own words.
  for (const json* j : {&old_j, &new_j}) {
    const std::string dumped = (*j)["unsupported_operators"].dump();
    EXPECT_NE(dumped.find("INT2 is not supported for rank 1"), std::string::npos) << dumped;
    EXPECT_NE(dumped.find("Unexpected operand type for FFT"), std::string::npos) << dumped;
    EXPECT_NE(dumped.find("While rewriting computation to not contain X{64|128} element types"), std::string::npos);
  }
  auto d = RunOpprobe({"diff", old_report, new_report});
  EXPECT_EQ(d.exit_code, 0) << d.err << d.out;
  EXPECT_NE(d.out.find("backend: tpu:v5e, version changed:\n  old: libtpu 0.0.42.1; "), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("\n  new: libtpu 0.0.52; "), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find("newly unsupported"), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find("now supported"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("result: no regression"), std::string::npos) << d.out;
}

// Many units to a compile (--probe-batch; compiler_probe/batch.h) changes how long probing takes, never a verdict:
// the ResNet-18 step and the edge units (a refusal per kind, and a tuple unit with an s2 element that crashes libtpu)
// give every unit the same verdict (a refusal the same message, a library call the same note) with the default
// batches as with one unit per compile.
TEST_F(ChipE2E, BatchedAndOneUnitPerCompileGiveTheSameVerdicts) {
  for (const std::string target : {"tpu:v5e", "gpu:h100"}) {
    std::map<std::string, json> alone;
    for (const std::string batch : {"1", ""}) {
      std::string out = Path("report.json");
      // The trace and the HLO file cannot go in one run: two runs, the second adding to the same map.
      for (const std::string input : {"samples/traces/resnet18_train.json", "tests/fixtures/hlo/tpu_edge_units.hlo"}) {
        std::vector<std::string> one = {"analyze",       input,         "--backend", target, "--no-cache",
                                        "--no-progress", "--verbosity", "0",         "-o",   out};
        if (!batch.empty()) one.insert(one.end(), {"--probe-batch", batch});
        auto r = RunOpprobe(one);
        ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
        json report = json::parse(ReadWholeFile(out));
        const json& s = report["summary"];
        if (batch == "1") {
          EXPECT_FALSE(s.contains("batching")) << s.dump();
        } else {
          ASSERT_TRUE(s.contains("batching")) << s.dump();
          // The step's units compile in a few programs; the edge units, most of them refused, are split to each.
          if (input.find("resnet18") != std::string::npos) {
            EXPECT_LT(s["batching"]["compiles"].get<int>() * 4, s["batching"]["units"].get<int>()) << s.dump();
          }
        }
        for (const json& u : report["instructions"]) {
          // A refusal's reason is the compiler's message; a supported verdict's tail names a library call. (An
          // error's text ends with the worker's last log lines, which carry times: its kind is compared.)
          json v = {{"verdict", u["verdict"]}};
          if (u["verdict"] == "unsupported") v["reason"] = u["reason"];
          if (u["verdict"] == "supported") v["output_tail"] = u["output_tail"];
          // By input and fingerprint: the trace's f64 rng and the HLO file's are one unit, with other metadata,
          // which the compiler's message quotes.
          const std::string fp = input + " " + u["fingerprint"].get<std::string>();
          if (batch == "1") {
            alone[fp] = v;
          } else {
            ASSERT_TRUE(alone.count(fp)) << fp;
            EXPECT_EQ(v, alone[fp]) << target << " " << u["signature"];
          }
        }
      }
    }
    EXPECT_GT(alone.size(), 200u);
  }
}

TEST_F(ChipE2E, BackendsListsTheCompilersWithTheirVersionsAndTargets) {
  auto r = RunOpprobe({"backends"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("libtpu 0.0.42.1 ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("v5e (v5e:2x4)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("jax_cuda12_pjrt 0.12.0.1 ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("h200 (NVIDIA H200 141GB HBM3e, sm_90"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace opprobe
