// analyzer/program: a recorded step built as one HLO program (tests/fixtures/traces/decoder_program.json: the tiny
// decoder of tests/torch2/scripts/decoder_step.py captured with --program), split by a strategy, the data flow a
// trace loader refuses, and the liveness estimate's fusion rule on small steps.
#include "analyzer/program/program.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "analyzer/loaders/trace_loader.h"
#include "analyzer/program/parallel.h"
#include "compiler_probe/chip/chip_backend.h"
#include "hlo/printer.h"
#include "opprobe_version.h"

namespace opprobe::analyzer {
namespace {

using ::testing::HasSubstr;

std::string Src(const std::string& rel) { return std::string(OPPROBE_SOURCE_DIR) + "/" + rel; }
constexpr const char* kFixture = "tests/fixtures/traces/decoder_program.json";

Graph Load() {
  auto g = LoadTrace(Src(kFixture));
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(g).value();
}

TEST(StepProgram, TheDecoderStepIsOneProgramWithItsUpdatesAliased) {
  Graph g = Load();
  ASSERT_TRUE(g.program);
  EXPECT_EQ(g.program->end_kind, "optimizer_step");
  auto step = BuildStepProgram(g);
  ASSERT_TRUE(step.ok()) << step.status().message();
  ASSERT_TRUE(step->gaps.empty()) << step->gaps.front().op << ": " << step->gaps.front().reason;
  ASSERT_TRUE(step->module);
  // 23 parameters (112612 f32) and the int64 tokens [2, 16] in.
  EXPECT_EQ(step->inputs.size(), 24u);
  EXPECT_EQ(step->module->entry()->parameters().size(), 24u);
  EXPECT_EQ(step->estimate.argument_bytes, 112612 * 4 + 2 * 16 * 8);
  // Each parameter updated in place is an output aliased to it; each has its gradient beside it.
  int aliased = 0, gradients = 0;
  for (const auto& o : step->outputs) {
    if (o.aliases >= 0) {
      ++aliased;
      EXPECT_EQ(step->inputs[static_cast<size_t>(o.aliases)].kind, "parameter");
      EXPECT_EQ(step->inputs[static_cast<size_t>(o.aliases)].name, o.name);
    }
    gradients += o.kind == "gradient";
  }
  EXPECT_EQ(aliased, 23);
  EXPECT_EQ(gradients, 23);
  EXPECT_EQ(step->estimate.alias_bytes, 112612 * 4);
  const std::string text = hlo::ToString(*step->module);
  EXPECT_THAT(text, HasSubstr("input_output_alias={ {"));
  EXPECT_THAT(text, HasSubstr("to_apply="));  // the calls of each lowering
  // The forward keeps values for the backward; the estimate holds more than the arguments.
  EXPECT_FALSE(step->activations.empty());
  EXPECT_GT(step->estimate.temp_bytes, 0);
  EXPECT_EQ(step->estimate.generated_code_bytes, 0);
}

TEST(StepProgram, AnFsdpSplitShardsParametersAndTheirUpdatesAlike) {
  Graph g = Load();
  auto step = BuildStepProgram(g);
  ASSERT_TRUE(step.ok() && step->module);
  auto p = ParseParallelism("fsdp=4");
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(ShardStep(*step, *p).ok());
  auto params = step->module->entry()->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    ASSERT_TRUE(params[i]->sharding.has_value()) << i;
    const hlo::Sharding& s = *params[i]->sharding;
    if (step->inputs[i].kind == "parameter" && step->inputs[i].meta.sizes[0] % 4 == 0) {
      EXPECT_EQ(s.type, hlo::Sharding::Type::kTiled) << step->inputs[i].name;
      EXPECT_EQ(s.tile_dims.front(), 4) << step->inputs[i].name;
    }
  }
  const hlo::Instruction* root = step->module->entry()->root();
  ASSERT_TRUE(root->sharding.has_value());
  ASSERT_EQ(root->sharding->tuple.size(), step->outputs.size());
  for (size_t k = 0; k < step->outputs.size(); ++k)
    if (step->outputs[k].aliases >= 0) {
      EXPECT_EQ(root->sharding->tuple[k], *params[static_cast<size_t>(step->outputs[k].aliases)]->sharding);
    }
  EXPECT_THAT(hlo::ToString(*step->module), HasSubstr("sharding={devices=[4"));
}

TEST(StepProgram, AScriptsOwnMarksSplitItsInputsOverItsMeshsDevices) {
  // As xs.mark_sharding records them: a 2x2 mesh whose devices run backwards, a 2-D parameter split over both axes
  // (its rows over the second, its columns over the first): the tile assignment follows the axes in that order.
  Graph g = Load();
  auto step = BuildStepProgram(g);
  ASSERT_TRUE(step.ok() && step->module);
  StepDataFlow flow = *g.program;
  flow.mesh = {{2, 2}, {3, 2, 1, 0}};
  size_t marked = flow.inputs.size();
  for (size_t i = 0; i < step->inputs.size() && marked == flow.inputs.size(); ++i)
    if (step->inputs[i].kind == "parameter" && step->inputs[i].meta.sizes.size() == 2) marked = i;
  ASSERT_LT(marked, flow.inputs.size());
  flow.inputs[marked].sharding = {{1}, {0}};
  ASSERT_TRUE(ShardStepAsMarked(*step, flow).ok());
  auto params = step->module->entry()->parameters();
  const hlo::Sharding& s = *params[marked]->sharding;
  EXPECT_EQ(s.type, hlo::Sharding::Type::kTiled);
  EXPECT_EQ(s.tile_dims, (std::vector<int64_t>{2, 2}));
  EXPECT_FALSE(s.iota);
  EXPECT_EQ(s.devices, (std::vector<int64_t>{3, 1, 2, 0}));
  // Unmarked inputs are replicated; the marked parameter's gradient and update are split as it is.
  for (size_t i = 0; i < params.size(); ++i)
    if (i != marked) { EXPECT_EQ(params[i]->sharding->type, hlo::Sharding::Type::kReplicated) << i; }
  const std::string name = step->inputs[marked].name;
  const hlo::Instruction* root = step->module->entry()->root();
  int followed = 0;
  for (size_t k = 0; k < step->outputs.size(); ++k)
    if (step->outputs[k].name == name || step->outputs[k].name == name + ".grad") {
      EXPECT_EQ(root->sharding->tuple[k], s) << step->outputs[k].name;
      ++followed;
    }
  EXPECT_EQ(followed, 2);
  // A mark naming more dimensions than its tensor has is refused, naming the tensor.
  flow.inputs[marked].sharding = {{0}, {}, {1}};
  auto again = BuildStepProgram(g);
  ASSERT_TRUE(again.ok());
  Status bad = ShardStepAsMarked(*again, flow);
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.message(), HasSubstr("names 3 dimensions; the tensor has 2"));
}

TEST(StepProgram, ATraceWhoseMeshDoesNotHoldItsDevicesIsRefused) {
  std::ifstream in(Src(kFixture));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = text.find("\"program\": {");
  ASSERT_NE(at, std::string::npos);
  text.insert(at + 12, "\"mesh\": {\"shape\": [2, 4], \"devices\": [0, 1, 2]}, ");
  auto g = ParseTrace(text, "t.json");
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("program.mesh: a mesh of shape 2x4 holds 8 devices, not 3"));
}

TEST(StepProgram, ParallelSpecs) {
  auto p = ParseParallelism("dp=2,tp=4");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->devices(), 8);
  EXPECT_EQ(p->ToString(), "dp=2,tp=4");
  for (const char* bad : {"fsdp", "fsdp=0", "fsdp=x", "pp=2", "dp=2,dp=2", ""}) {
    auto e = ParseParallelism(bad);
    EXPECT_FALSE(e.ok()) << bad;
    if (!e.ok()) { EXPECT_THAT(e.status().message(), HasSubstr("--parallel")) << bad; }
  }
}

TEST(StepProgram, LibtpusMemoryRefusalIsRead) {
  auto m = compiler_probe::chip::ParseMemoryRefusal(
      "RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required for HLO temporaries (50.08G) exceeds "
      "available HBM (15.75G).");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->required_bytes, static_cast<int64_t>(50.08 * (1 << 30)));
  EXPECT_EQ(m->available_bytes, static_cast<int64_t>(15.75 * (1 << 30)));
  EXPECT_EQ(m->what, "for HLO temporaries");
  EXPECT_FALSE(compiler_probe::chip::ParseMemoryRefusal("INVALID_ARGUMENT: Binary op with incompatible shapes"));
}

TEST(StepProgram, ATraceWhoseStepReadsAValueBeforeItIsMadeIsRefused) {
  std::ifstream in(Src(kFixture));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The first call reads value 999999, which nothing makes.
  const std::string calls = "\"calls\": [[";
  size_t at = text.find(calls, text.find("\"program\""));
  ASSERT_NE(at, std::string::npos);
  size_t ids = text.find('[', at + calls.size());
  text.insert(ids + 1, "999999, ");
  auto g = ParseTrace(text, "t.json");
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("program.calls[0][1][0]: value 999999 is read before it is made"));
}

// A small step for the estimate's fusion rule: calls of f32[64, 64] (16 KiB) values, each `{op, overload, phase,
// tensor args}`, then the program's calls, inputs (x: 0, w: 1) and outputs as the trace writes them.
struct SmallCall {
  const char* op;
  const char* overload;
  const char* phase;
  int tensors;
};
constexpr int64_t kSmall = 64 * 64 * 4;

BuiltStep SmallStep(const std::vector<SmallCall>& calls, const std::string& program_calls, const std::string& outputs) {
  std::string text = R"({"format": "opprobe-trace", "version": 1, "script": "s.py", "status": "ok", "calls": [)";
  const std::string t = R"({"kind": "tensor", "dtype": "float32", "shape": [64, 64]})";
  const char* names[] = {"self", "other"};
  for (size_t i = 0; i < calls.size(); ++i) {
    const SmallCall& c = calls[i];
    std::string args;
    for (int k = 0; k < c.tensors; ++k)
      args += fmt::format(R"({}{{"name": "{}", "value": {}}})", k ? ", " : "",
                          std::string(c.op) == "aten::mm" && k ? "mat2" : names[k], t);
    if (std::string(c.overload) == "Tensor") args += R"(, {"name": "alpha", "value": {"kind": "int", "value": 1}})";
    text += fmt::format(
        R"({}{{"op": "{}", "overload": "{}", "args": [{}], "outputs": [{}], "loc": {{"file": "s.py", "line": {}}}, )"
        R"("phase": "{}", "count": 1, "step": 0}})",
        i ? ", " : "", c.op, c.overload, args, t, i + 1, c.phase);
  }
  text += fmt::format(
      R"(], "program": {{"scope": "first training step", "end_kind": "optimizer_step", "calls": {}, )"
      R"("inputs": [{{"value": 0, "kind": "data", "name": "x"}}, {{"value": 1, "kind": "parameter", "name": "w"}}], )"
      R"("outputs": {}}}}})",
      program_calls, outputs);
  auto g = ParseTrace(text, "small.json");
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return {};
  auto step = BuildStepProgram(*g);
  EXPECT_TRUE(step.ok()) << step.status().message();
  if (!step.ok()) return {};
  EXPECT_TRUE(step->gaps.empty()) << step->gaps.front().op << ": " << step->gaps.front().reason;
  return std::move(step).value();
}

TEST(StepEstimate, AnElementwiseValueReadOnlyByAFusibleCallMakesNoBuffer) {
  // x -> neg -> exp -> mm(., w): neg's result is read only by exp (elementwise): XLA fuses the two and never
  // materializes it; exp's result feeds a dot, which fuses nothing, so it is a buffer. One 16 KiB temporary, not two.
  BuiltStep s = SmallStep({{"aten::neg", "default", "forward", 1},
                           {"aten::exp", "default", "forward", 1},
                           {"aten::mm", "default", "forward", 2}},
                          "[[0, [0], [2]], [1, [2], [3]], [2, [3, 1], [4]]]", R"([{"value": 4, "kind": "output"}])");
  EXPECT_EQ(s.estimate.temp_bytes, kSmall);
  EXPECT_EQ(s.estimate.argument_bytes, 2 * kSmall);
  EXPECT_EQ(s.estimate.output_bytes, kSmall);
  // The same chain read through a view (a transpose is data movement XLA fuses, and a view makes no buffer).
  BuiltStep v = SmallStep({{"aten::neg", "default", "forward", 1},
                           {"aten::t", "default", "forward", 1},
                           {"aten::exp", "default", "forward", 1},
                           {"aten::mm", "default", "forward", 2}},
                          "[[0, [0], [2]], [1, [2], [5]], [2, [5], [3]], [3, [3, 1], [4]]]",
                          R"([{"value": 4, "kind": "output"}])");
  EXPECT_EQ(v.estimate.temp_bytes, kSmall);
}

TEST(StepEstimate, AValueReadByTwoCallsStaysABuffer) {
  // neg's result is read by exp and by add: it stays (XLA would have to compute it twice). exp's result is read only
  // by add: fused into it, so the add reads neg's result where it runs. Two temporaries at the add (neg's and the
  // add's own), where the unfused step would hold three.
  BuiltStep s = SmallStep({{"aten::neg", "default", "forward", 1},
                           {"aten::exp", "default", "forward", 1},
                           {"aten::add", "Tensor", "forward", 2},
                           {"aten::mm", "default", "forward", 2}},
                          "[[0, [0], [2]], [1, [2], [3]], [2, [2, 3], [5]], [3, [5, 1], [4]]]",
                          R"([{"value": 4, "kind": "output"}])");
  EXPECT_EQ(s.estimate.temp_bytes, 2 * kSmall);
}

TEST(StepEstimate, ValuesKeptForTheBackwardAndReturnedValuesStayBuffers) {
  // neg's result is made in the forward and read (only) in the backward: an activation, kept as autograd keeps it.
  BuiltStep a = SmallStep({{"aten::neg", "default", "forward", 1},
                           {"aten::exp", "default", "backward", 1},
                           {"aten::mm", "default", "backward", 2}},
                          "[[0, [0], [2]], [1, [2], [3]], [2, [3, 1], [4]]]", R"([{"value": 4, "kind": "output"}])");
  EXPECT_EQ(a.estimate.temp_bytes, 2 * kSmall);
  ASSERT_EQ(a.activations.size(), 1u);
  EXPECT_EQ(a.activations.front().op, "aten::neg");
  EXPECT_EQ(a.activations.front().bytes, kSmall);
  // An elementwise result the program returns is an output, whatever reads it; the update aliased to w is one too.
  BuiltStep r = SmallStep({{"aten::neg", "default", "optimizer", 1}, {"aten::exp", "default", "optimizer", 1}},
                          "[[0, [1], [2]], [1, [2], [3]]]",
                          R"([{"value": 2, "kind": "output"}, {"value": 3, "kind": "parameter", "name": "w", )"
                          R"("aliases": 1}])");
  EXPECT_EQ(r.estimate.temp_bytes, 0);
  EXPECT_EQ(r.estimate.output_bytes, 2 * kSmall);
  EXPECT_EQ(r.estimate.alias_bytes, kSmall);
}

TEST(StepProgram, AGraphWithoutAProgramIsBadInput) {
  auto g = LoadTrace(Src("samples/traces/resnet18_train.json"));
  ASSERT_TRUE(g.ok());
  auto step = BuildStepProgram(*g);
  ASSERT_FALSE(step.ok());
  EXPECT_THAT(step.status().message(), HasSubstr("capture it with --program"));
}

}  // namespace
}  // namespace opprobe::analyzer
