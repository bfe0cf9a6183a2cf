// The steps section (issue #28): the graphs torch_xla would compile for a captured training loop, held to the real
// torch_xla. Each loop of tests/torch2/scripts/xla_loop_steps.py is captured with opprobe on PyTorch 2.x (the torch2
// environment, where the torch_xla stand-ins stand in) and run for real with torch_xla 2.9 on its CPU device (the
// torch_xla environment), whose own metrics count the graphs it compiled (CompileTime); both environments are made
// by scripts/test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "reports/json_schema.h"
#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using testing::ReadWholeFile;
using testing::RunOpprobe;
using testing::RunProgram;

constexpr const char* kScript = "tests/torch2/scripts/xla_loop_steps.py";
constexpr const char* kLoader = "tests/torch2/scripts/xla_loop_loader.py";

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

struct Loop {
  const char* mode;
  const char* script;
  int graphs;         // what opprobe must find: the real torch_xla's count, also checked below
  int first_line;     // the first recompilation's first differing call; 0: no recompilation
  const char* cause;  // words of its cause
  int cut_line;       // a cut inside the step; 0: none
  const char* cut_op;
};

const Loop kLoops[] = {
    {"steady", kScript, 1, 0, "", 0, ""},
    {"last_small", kScript, 2, 31, "an input's shape changed", 0, ""},
    {"warmup", kScript, 1, 0, "", 0, ""},
    {"slice", kScript, 2, 33, "a size or value from Python baked into the graph changed", 0, ""},
    {"nonzero", kScript, 2, 31, "the rest of the step after a CPU fallback (aten::nonzero) at xla_loop_steps.py:37", 37,
     "aten::nonzero"},
    {"print", kScript, 2, 31, "the rest of the step after a value read on the host at xla_loop_steps.py:41", 41,
     "aten::_local_scalar_dense"},
    {"print_tensor", kScript, 2, 31, "the rest of the step after a value read on the host at xla_loop_steps.py:43", 43,
     "Tensor.__repr__"},
    {"branch", kScript, 2, 31, "the rest of the step after a value read on the host at xla_loop_steps.py:44", 44,
     "aten::_local_scalar_dense"},
    // As torch_xla's examples feed a loop: a DataLoader through MpDeviceLoader, with and without drop_last.
    {"drop_last", kLoader, 1, 0, "", 0, ""},
    {"keep_last", kLoader, 2, 23, "an input's shape changed", 0, ""},
};

void PrintTo(const Loop& loop, std::ostream* os) { *os << loop.mode; }

class StepsE2E : public testing::TempDirTest, public ::testing::WithParamInterface<Loop> {};

TEST_P(StepsE2E, DistinctGraphsAreTheRealTorchXlasCompilesWithTheirCauses) {
  const Loop& loop = GetParam();
  const std::string torch2 = Env("OPPROBE_TORCH2_PYTHON"), torch_xla = Env("OPPROBE_TORCH_XLA_PYTHON");
  ASSERT_FALSE(torch2.empty()) << "OPPROBE_TORCH2_PYTHON is not set (scripts/test creates the torch2 environment)";
  ASSERT_FALSE(torch_xla.empty()) << "OPPROBE_TORCH_XLA_PYTHON is not set (scripts/test creates it)";

  // The real thing: the same script under torch_xla, and its count of compiled graphs.
  const std::string counter = Path("count.py");
  std::ofstream(counter) << "import runpy, sys\n"
                            "sys.argv = sys.argv[1:]\n"
                            "runpy.run_path(sys.argv[0], run_name='__main__')\n"
                            "import torch_xla.debug.metrics as m\n"
                            "print('COMPILES', m.metric_data('CompileTime')[0])\n";
  setenv("PJRT_DEVICE", "CPU", 0);
  auto real = RunProgram({torch_xla, counter, loop.script, loop.mode});
  ASSERT_EQ(real.exit_code, 0) << real.err;
  auto at = real.out.find("COMPILES ");
  ASSERT_NE(at, std::string::npos) << real.out;
  const int real_graphs = std::atoi(real.out.c_str() + at + 9);
  EXPECT_EQ(real_graphs, loop.graphs) << "torch_xla itself changed its mind about " << loop.mode;

  // opprobe: captured on the CPU, the steps modelled as torch_xla's graphs.
  const std::string out = Path("report.json");
  const std::string trace = Path("trace.json"), md = Path("report.md"), html = Path("report.html");
  auto r = RunOpprobe(
      {"analyze", "--backend", "rules:cpu", "--no-cache",     "--no-progress", "-q",           "--max-graphs", "1",
       "-o",      out,         "--format",  "markdown=" + md, "--format",      "html=" + html, "--save-trace", trace,
       "--",      torch2,      loop.script, loop.mode});
  EXPECT_EQ(r.exit_code, loop.graphs > 1 ? 1 : 0) << r.err;  // --max-graphs 1
  if (loop.graphs > 1) { EXPECT_THAT(r.err, HasSubstr("more than --max-graphs 1")); }
  json report = json::parse(ReadWholeFile(out));
  ASSERT_TRUE(report.contains("steps")) << report.dump(1).substr(0, 2000);
  const json& steps = report["steps"];
  EXPECT_EQ(steps["steps"], loop.script == kLoader ? (loop.graphs == 1 ? 4 : 6) : 6);
  EXPECT_EQ(steps["distinct_graphs"].get<int>(), real_graphs) << steps.dump(1);
  EXPECT_EQ(steps["executed_graphs"], steps["steps"].get<int>() * (loop.cut_line ? 2 : 1)) << steps.dump(1);
  if (loop.first_line == 0) {
    EXPECT_TRUE(steps["recompilations"].empty()) << steps.dump(1);
  } else {
    ASSERT_FALSE(steps["recompilations"].empty());
    const json& first = steps["recompilations"][0];
    const std::string base = std::string(loop.script).substr(std::string(loop.script).rfind('/') + 1);
    EXPECT_EQ(first["first_difference"]["call"], base + " " + std::to_string(loop.first_line)) << first.dump(1);
    EXPECT_THAT(first["cause"].get<std::string>(), HasSubstr(loop.cause)) << first.dump(1);
  }
  // The report as its schema says (the trace's `graphs`: TraceSchema in tests/analyzer), every format shows it.
  opprobe::testing::JsonSchemaValidator schema(json::parse(ReadWholeFile("schemas/report.schema.json")));
  auto errors = schema.Validate(report);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_TRUE(json::parse(ReadWholeFile(trace)).contains("graphs"));
  EXPECT_THAT(ReadWholeFile(md), HasSubstr("### Steps"));

  // --lowering torch_xla reads the same steps off torch_xla's own graphs (XLA_SAVE_TENSORS_FILE's graph hashes).
  const std::string real_out = Path("real.json");
  auto x = RunOpprobe({"analyze", "--lowering", "torch_xla", "--backend", "rules:cpu", "--no-cache", "--no-progress",
                       "-q", "-o", real_out, "--", torch_xla, loop.script, loop.mode});
  ASSERT_EQ(x.exit_code, 0) << x.err;
  json real_steps = json::parse(ReadWholeFile(real_out))["steps"];
  EXPECT_EQ(real_steps["distinct_graphs"].get<int>(), real_graphs) << real_steps.dump(1);
  EXPECT_EQ(real_steps["executed_graphs"], steps["executed_graphs"]) << real_steps.dump(1);
  EXPECT_THAT(real_steps["model"].get<std::string>(), HasSubstr("torch_xla 2.9.0 (its own graphs"));
  EXPECT_EQ(real_steps["cuts"].size(), steps["cuts"].size()) << real_steps.dump(1);
  if (loop.cut_line) { EXPECT_EQ(real_steps["cuts"][0]["call"], steps["cuts"][0]["call"]); }
  EXPECT_THAT(ReadWholeFile(html), HasSubstr("<section id=\"steps\">"));
  if (loop.cut_line == 0) {
    EXPECT_TRUE(steps["cuts"].empty()) << steps.dump(1);
  } else {
    ASSERT_EQ(steps["cuts"].size(), 1u) << steps.dump(1);
    const json& cut = steps["cuts"][0];
    EXPECT_EQ(cut["call"], "xla_loop_steps.py " + std::to_string(loop.cut_line));
    EXPECT_EQ(cut["op"], loop.cut_op);
    EXPECT_EQ(cut["count"], 6);         // once a step
    EXPECT_EQ(cut["extra_graphs"], 1);  // the graph up to the cut
  }
}

INSTANTIATE_TEST_SUITE_P(Loops, StepsE2E, ::testing::ValuesIn(kLoops),
                         [](const ::testing::TestParamInfo<Loop>& info) { return std::string(info.param.mode); });

class StepsInput : public testing::TempDirTest {};

TEST_F(StepsInput, AReportSaysSoWhenTheInputKnowsNoSteps) {
  // A trace of a script that never used the XLA device knows nothing of its graphs: --max-graphs cannot pass.
  auto r = RunOpprobe({"analyze", "samples/traces/supported.json", "--backend", "rules:cpu", "--no-progress", "-q",
                       "--max-graphs", "3"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("says nothing of the graphs its steps compile"));
}

TEST_F(StepsInput, AMalformedGraphsMemberIsOneLineAndExit2) {
  json trace = json::parse(ReadWholeFile("samples/traces/unsupported.json"));
  trace["graphs"] = {{"steps", 2}, {"executed_graphs", "two"}, {"distinct_graphs", 1}};
  const std::string bad = Path("bad.json");
  std::ofstream(bad) << trace.dump();
  const std::string report = Path("report.json");
  auto r = RunOpprobe({"analyze", bad, "--backend", "rules:cpu", "--no-progress", "-o", report});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("graphs.executed_graphs"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(std::ifstream(report).good());  // nothing half-written
}

}  // namespace
}  // namespace opprobe
