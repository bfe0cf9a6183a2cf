// xla:cpu and iree:llvm-cpu end to end (issue 15's acceptance): the bundled ResNet-18 training step, every unit
// compiled and run by XLA's own CPU compiler (jaxlib from requirements/xla.txt; scripts/test makes the environment and
// names it with OPPROBE_XLA_PYTHON) and compared with interp.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hlo/proto_io.h"
#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

using nlohmann::json;
using testing::ReadWholeFile;
using testing::RunOpprobe;

class XlaE2E : public testing::TempDirTest {};

TEST_F(XlaE2E, ResnetTrainingStepIsCompiledAndRunByXla) {
  std::string out = Path("report.json"), text = Path("report.txt");
  auto r = RunOpprobe({"analyze", "samples/traces/resnet18_train.json", "--backend", "xla:cpu", "--no-cache",
                       "--no-progress", "-o", out, "--format", "text=" + text});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json report = json::parse(ReadWholeFile(out));
  EXPECT_EQ(report["backend"], "xla:cpu");
  EXPECT_EQ(report["backend_version"].get<std::string>().rfind("jaxlib 0.10.2 (XLA cpu", 0), 0u)
      << report["backend_version"];
  const json& s = report["summary"];
  EXPECT_GT(s["unique_probes"].get<int>(), 200);
  EXPECT_EQ(s["probes_run"], s["unique_probes"]);
  // Every unit compiled and ran; the numbers of each agree with interp except random number generators.
  EXPECT_EQ(s["supported_instructions"], s["hlo_instructions"]) << report["unsupported_operators"].dump();
  EXPECT_EQ(s["interp_differ"], 0);
  EXPECT_GT(s["interp_agree"].get<int>(), 150);
  EXPECT_GT(s["interp_not_compared"].get<int>(), 0);
  EXPECT_EQ(s["interp_agree"].get<int>() + s["interp_not_compared"].get<int>(), s["unique_probes"].get<int>());
  std::string txt = ReadWholeFile(text);
  EXPECT_NE(txt.find("Numerics vs interp: "), std::string::npos) << txt;
  // The console summary says it too.
  EXPECT_NE(r.out.find(fmt::format("numerics against interp: {} unique probes agree, 0 differ, {} not compared",
                                   s["interp_agree"].get<int>(), s["interp_not_compared"].get<int>())),
            std::string::npos)
      << r.out;
}

// A while loop whose body holds constants (a scalar counter step and an array): XLA refused such units while the
// proto writer gave a constant's literal a layout and its shape none (CreateFromProto: `s32[] vs s32[]`), 44 of the
// agreement table's disagreements between rules:cpu and xla:cpu.
// Many units to a program (--probe-batch): each unit of a batch runs on its own inputs and is compared with interp
// as alone, so every verdict, reason and comparison note is the one a run of the unit alone gives.
TEST_F(XlaE2E, BatchedAndOneUnitPerRunGiveTheSameVerdicts) {
  std::map<std::string, json> alone;
  for (const std::string batch : {"1", ""}) {
    std::string out = Path("report.json");
    std::vector<std::string> args = {"analyze",     "samples/traces/resnet18_train.json",
                                     "--backend",   "xla:cpu",
                                     "--no-cache",  "--no-progress",
                                     "--verbosity", "0",
                                     "-o",          out};
    if (!batch.empty()) args.insert(args.end(), {"--probe-batch", batch});
    auto r = RunOpprobe(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json report = json::parse(ReadWholeFile(out));
    const json& s = report["summary"];
    if (batch == "1") {
      EXPECT_FALSE(s.contains("batching")) << s.dump();
    } else {
      ASSERT_TRUE(s.contains("batching")) << s.dump();
      EXPECT_LT(s["batching"]["compiles"].get<int>() * 4, s["batching"]["units"].get<int>()) << s.dump();
    }
    for (const json& u : report["instructions"]) {
      json v = {{"verdict", u["verdict"]}, {"reason", u["reason"]}, {"output_tail", u["output_tail"]}};
      if (batch == "1") alone[u["fingerprint"]] = v;
      else EXPECT_EQ(v, alone[u["fingerprint"]]) << u["signature"];
    }
  }
  EXPECT_GT(alone.size(), 200u);
}

TEST_F(XlaE2E, ConstantsInsideAWhileLoopCompile) {
  std::string out = Path("report.json");
  auto r = RunOpprobe({"analyze", "tests/fixtures/hlo/while_with_constants.hlo", "--backend", "xla:cpu", "--no-cache",
                       "--no-progress", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json report = json::parse(ReadWholeFile(out));
  EXPECT_EQ(report["summary"]["supported_instructions"], report["summary"]["hlo_instructions"])
      << report["unsupported_operators"].dump();
  EXPECT_NE(report["backend_version"].get<std::string>().find(hlo::kProtoWriterRevision), std::string::npos)
      << "the writer's revision is part of the version, so verdicts cached before the fix are not reused";
}

TEST_F(XlaE2E, BackendsListsJaxlibAndMissingPythonExits3) {
  auto list = RunOpprobe({"backends"});
  ASSERT_EQ(list.exit_code, 0);
  EXPECT_NE(list.out.find("xla:cpu[,python=PATH]"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("jaxlib 0.10.2 ("), std::string::npos) << list.out;
  auto r = RunOpprobe({"analyze", "samples/traces/resnet18_train.json", "--no-cache", "--no-progress", "--backend",
                       "xla:cpu,python=/nonexistent/xla/bin/python"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("-m pip install -r requirements/xla.txt"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
}

// iree:llvm-cpu end to end: the Neuron tutorial's supported script's trace, every unit converted to StableHLO,
// compiled by iree-compile for llvm-cpu and run by IREE's runtime (requirements/iree.txt; scripts/test names the
// environment with OPPROBE_IREE_PYTHON), and compared with interp.
TEST_F(XlaE2E, SupportedTraceIsCompiledAndRunByIree) {
  std::string out = Path("report.json");
  auto r = RunOpprobe({"analyze", "samples/traces/supported.json", "--backend", "iree:llvm-cpu", "--no-cache",
                       "--no-progress", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json report = json::parse(ReadWholeFile(out));
  EXPECT_EQ(report["backend"], "iree:llvm-cpu");
  EXPECT_EQ(report["backend_version"].get<std::string>().rfind("IREE 3.13.0 (", 0), 0u) << report["backend_version"];
  const json& s = report["summary"];
  EXPECT_GT(s["unique_probes"].get<int>(), 30);
  EXPECT_EQ(s["supported_instructions"], s["hlo_instructions"]) << report["unsupported_operators"].dump();
  EXPECT_EQ(s["interp_differ"], 0);
  EXPECT_GT(s["interp_agree"].get<int>(), 30);
  EXPECT_EQ(s["interp_agree"].get<int>() + s["interp_not_compared"].get<int>(), s["unique_probes"].get<int>());
}

TEST_F(XlaE2E, BackendsListsIreeAndMissingPythonExits3) {
  auto list = RunOpprobe({"backends"});
  ASSERT_EQ(list.exit_code, 0);
  EXPECT_NE(list.out.find("iree:llvm-cpu[,python=PATH]"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("iree-base-compiler 3.13.0, iree-base-runtime 3.13.0, jaxlib 0.10.2 ("), std::string::npos)
      << list.out;
  auto r = RunOpprobe({"analyze", "samples/traces/supported.json", "--no-cache", "--no-progress", "--backend",
                       "iree:llvm-cpu,python=/nonexistent/iree/bin/python"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("-m pip install -r requirements/xla.txt -r requirements/iree.txt"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
}

std::map<std::string, std::string> Verdicts(const json& report) {
  std::map<std::string, std::string> v;
  for (const auto& u : report["instructions"]) v[u["fingerprint"]] = u["verdict"];
  return v;
}

// A profile recorded from xla:cpu's verdicts gives xla:cpu's answer on every unit it was recorded from.
TEST_F(XlaE2E, ProfileRecordedFromXlaReproducesXla) {
  const std::vector<std::string> inputs = {"samples/traces/unsupported.json", "samples/traces/supported.json"};
  std::string profile = Path("xla-cpu.json"), cache = Path("cache");
  std::vector<std::string> rec = {"profile", "record", "--backend", "xla:cpu", "-o", profile, "--cache", cache};
  rec.insert(rec.end(), inputs.begin(), inputs.end());
  auto r = RunOpprobe(rec);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  int units = 0;
  for (const auto& input : inputs) {
    std::string a = Path("xla.json"), b = Path("rules.json");
    auto x =
        RunOpprobe({"analyze", input, "--backend", "xla:cpu", "--cache", cache, "--no-progress", "-v", "0", "-o", a});
    ASSERT_EQ(x.exit_code, 0) << x.err;
    auto p = RunOpprobe(
        {"analyze", input, "--backend", "rules:" + profile, "--no-cache", "--no-progress", "-v", "0", "-o", b});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    auto want = Verdicts(json::parse(ReadWholeFile(a))), got = Verdicts(json::parse(ReadWholeFile(b)));
    ASSERT_EQ(got.size(), want.size()) << input;
    for (const auto& [fp, v] : want) {
      EXPECT_EQ(got[fp] == "supported", v == "supported") << input << " unit " << fp;
      ++units;
    }
  }
  EXPECT_GT(units, 40);
}

// pjrt: against a real plugin from PyPI (XLA's CPU client built as a PJRT C API plugin, requirements/pjrt-cpu.txt;
// scripts/test names it with OPPROBE_PJRT_CPU_PLUGIN): loads, creates a CPU client, compiles and runs every unit.
TEST_F(XlaE2E, RealPjrtCpuPluginCompilesAndRunsEveryUnit) {
  const char* plugin = std::getenv("OPPROBE_PJRT_CPU_PLUGIN");
  ASSERT_TRUE(plugin && *plugin)
      << "OPPROBE_PJRT_CPU_PLUGIN is not set: scripts/test installs requirements/pjrt-cpu.txt";
  std::string out = Path("report.json");
  auto r = RunOpprobe({"analyze", "samples/traces/supported.json", "--backend", std::string("pjrt:") + plugin,
                       "--no-cache", "--no-progress", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json report = json::parse(ReadWholeFile(out));
  EXPECT_EQ(report["backend_version"].get<std::string>().rfind("cpu ", 0), 0u) << report["backend_version"];
  EXPECT_NE(report["backend_version"].get<std::string>().find("; PJRT API 0."), std::string::npos);
  const json& s = report["summary"];
  EXPECT_EQ(s["supported_instructions"], s["hlo_instructions"]) << report["unsupported_operators"].dump();
  EXPECT_EQ(s["interp_differ"], 0);
  EXPECT_GT(s["interp_agree"].get<int>(), 20);
}

}  // namespace
}  // namespace opprobe
