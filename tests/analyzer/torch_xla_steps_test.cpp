// TorchXlaDumpSteps: the steps of a torch_xla run read off its XLA_SAVE_TENSORS_FILE dump (the e2e tests run the
// real torch_xla; these pin the reading of the dump's framing on a small hand-written one).
#include "analyzer/loaders/torch_xla_steps.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace opprobe::analyzer {
namespace {

using ::testing::HasSubstr;

std::string Graph(const std::string& frames, const std::string& param, const std::string& hash) {
  return "[ScheduleSyncTensorsGraph]\nTensorsGraphInfo:\n" + frames +
         "\nRoot Hashes: (1)\n\n## BEGIN_GRAPH\nHloModule IrToHlo.1, entry_computation_layout={(" + param +
         ")->(f32[])}\n\nENTRY %IrToHlo.1 (p0.1: " + param + ") -> (f32[]) {\n  %p0.1 = " + param +
         " parameter(0), metadata={op_type=\"xla__device_data\" op_name=\"xla__device_data\" source_file=\"train.py\" "
         "source_line=7}\n  %r = f32[] reduce(%p0.1), metadata={op_type=\"aten__sum\" op_name=\"aten__sum\" "
         "source_file=\"train.py\" source_line=9}\n}\n\n" +
         (hash.empty() ? "" : "Graph Hash: " + hash + "\n") + "\n## END_GRAPH\n\n";
}

const char* kStep =
    "  sync (/venv/lib/python3.11/site-packages/torch_xla/torch_xla.py:87)\n"
    "  mark_step (/venv/lib/python3.11/site-packages/torch_xla/core/xla_model.py:1032)\n"
    "  <module> (train.py:12)\n";
const char* kRead =
    "  __call__ (/venv/lib/python3.11/site-packages/torch/_ops.py:841)\n"
    "  <module> (train.py:10)\n";

TEST(TorchXlaDumpSteps, DistinctHashesAreCompilesAndANewShapeIsNamed) {
  std::string dump = Graph(kStep, "f32[4,8]", "aa") + Graph(kStep, "f32[4,8]", "aa") + Graph(kStep, "f32[2,8]", "bb");
  auto s = TorchXlaDumpSteps(dump, {}, "2.9.0");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->model, "torch_xla 2.9.0 (its own graphs, XLA_SAVE_TENSORS_FILE)");
  EXPECT_EQ(s->steps, 3);
  EXPECT_EQ(s->executed_graphs, 3);
  EXPECT_EQ(s->distinct_graphs, 2);
  ASSERT_EQ(s->recompilations.size(), 1u);
  const auto& r = s->recompilations[0];
  EXPECT_EQ(r.step, 2);
  EXPECT_EQ(r.trigger_kind, "step_end");
  EXPECT_EQ(r.trigger_op, "xm.mark_step");  // the user's call, not the torch_xla.sync inside it
  EXPECT_EQ(r.trigger_loc.line, 12);
  EXPECT_EQ(r.op, "xla::device_data");
  EXPECT_EQ(r.before, "f32[4,8] parameter");
  EXPECT_EQ(r.after, "f32[2,8] parameter");
  EXPECT_EQ(r.cause, "an input's shape changed");
  EXPECT_TRUE(s->cuts.empty());
}

TEST(TorchXlaDumpSteps, AReadInsideAStepIsACutNamedByTheFallbacks) {
  HostFallback nonzero;
  nonzero.op = "aten::nonzero";
  nonzero.file = "train.py";
  nonzero.line = 10;
  nonzero.count = 2;
  // Without a hash line (an older torch_xla) the module's text stands for it.
  std::string step = Graph(kRead, "f32[4]", "") + Graph(kStep, "f32[4,8]", "");
  auto s = TorchXlaDumpSteps(step + step, {nonzero}, "");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->steps, 2);
  EXPECT_EQ(s->executed_graphs, 4);
  EXPECT_EQ(s->distinct_graphs, 2);
  ASSERT_EQ(s->cuts.size(), 1u);
  EXPECT_EQ(s->cuts[0].kind, "cpu_fallback");
  EXPECT_EQ(s->cuts[0].op, "aten::nonzero");
  EXPECT_EQ(s->cuts[0].loc.line, 10);
  EXPECT_EQ(s->cuts[0].count, 2);
  EXPECT_EQ(s->cuts[0].extra_graphs, 1);
  ASSERT_EQ(s->recompilations.size(), 1u);
  EXPECT_THAT(s->recompilations[0].cause, HasSubstr("the rest of the step after a CPU fallback (aten::nonzero) at "
                                                    "train.py:10"));
}

TEST(TorchXlaDumpSteps, TextWithoutGraphsSaysNothing) {
  EXPECT_FALSE(TorchXlaDumpSteps("", {}, "2.9.0").has_value());
  EXPECT_FALSE(TorchXlaDumpSteps("TensorsGraphInfo:\n  broken frame\n## BEGIN_GRAPH\n", {}, "2.9.0").has_value());
}

}  // namespace
}  // namespace opprobe::analyzer
