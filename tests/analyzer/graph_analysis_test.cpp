// GraphAnalysis (analyzer/driver/driver.h): the analysis fed node by node, as a trace loader streams a trace into it.
// It merges identical calls at the same place wherever they come, gives calls the same signature whether or not
// their argument lists share a storage, and answers as Analyze does on the sample traces.
#include <gtest/gtest.h>

#include "analyzer/driver/driver.h"
#include "analyzer/loaders/trace_loader.h"
#include "analyzer/lowering/lowering.h"
#include "compiler_probe/registry.h"
#include "opprobe_version.h"

namespace opprobe::analyzer {
namespace {

using hlo::PrimitiveType;

class AllSupported : public compiler_probe::Backend {
 public:
  std::string id() const override { return "all"; }
  std::string version() const override { return "1"; }
  compiler_probe::Verdict probe(const hlo::Module&) override {
    ++probes;
    return compiler_probe::Verdict::Supported();
  }
  int probes = 0;
};

Node Neg(std::vector<int64_t> shape, int line, int64_t count = 1) {
  Node n;
  n.op = "aten::neg";
  n.overload = "default";
  TensorMeta m{PrimitiveType::F32, std::move(shape), {}, {}};
  n.args = {{"self", Value::Tensor(m)}};
  n.outputs = {Value::Tensor(m)};
  n.loc = {"model.py", line};
  n.count = count;
  return n;
}

// The records share their strings (SharedString, one per distinct file, module, phase): each shows its own, and one
// that has none shows none, whichever string came first.
TEST(GraphAnalysis, EachRecordKeepsItsOwnPlaceModuleAndPhase) {
  GraphAnalysis a{DriverOptions{}};
  Node first = Neg({4}, 10);
  first.lib_loc = {"torch/nn/modules/module.py", 1501};
  first.module_path = "layer1.0.downsample.0";
  first.phase = "forward";
  first.forward = {"aten::mul.Tensor", {"model.py", 3}, {}, "head"};
  a.Add(std::move(first));
  Node bare = Neg({8}, 0);
  bare.loc = {};
  a.Add(std::move(bare));
  Node other = Neg({4}, 12);
  other.loc.file = "other.py";
  other.module_path = "layer1.0.downsample.0";
  a.Add(std::move(other));
  Graph g;
  AllSupported backend;
  AnalysisResult r = a.Finish(g, backend, LoweringTable::Builtin());
  ASSERT_EQ(r.ops.size(), 3u);
  EXPECT_EQ(r.ops[0].loc.file, "model.py");
  EXPECT_EQ(r.ops[0].lib_loc, (SourceLoc{"torch/nn/modules/module.py", 1501}));
  EXPECT_EQ(r.ops[0].module_path, "layer1.0.downsample.0");
  EXPECT_EQ(r.ops[0].phase, "forward");
  EXPECT_EQ(r.ops[0].forward->op, "aten::mul.Tensor");
  EXPECT_EQ(r.ops[0].program, "");
  EXPECT_EQ(r.ops[0].note, "");
  EXPECT_TRUE(r.ops[1].loc.empty());
  EXPECT_TRUE(r.ops[1].lib_loc.empty());
  EXPECT_EQ(r.ops[1].module_path, "");
  EXPECT_EQ(r.ops[1].phase, "");
  EXPECT_TRUE(r.ops[1].forward.empty());
  EXPECT_EQ(r.ops[2].loc, (SourceLoc{"other.py", 12}));
  EXPECT_TRUE(r.ops[2].lib_loc.empty());
  EXPECT_EQ(r.ops[2].module_path, "layer1.0.downsample.0");
  EXPECT_EQ(r.ops[0].probes, r.ops[2].probes);  // one signature: one shared list
}

TEST(GraphAnalysis, MergesIdenticalCallsWhereverTheyCome) {
  GraphAnalysis a{DriverOptions{}};
  a.Add(Neg({4}, 10, 2));
  a.Add(Neg({8}, 10));
  a.Add(Neg({4}, 11));
  a.Add(Neg({4}, 10, 5));  // the first call again, far from it: merged into it
  EXPECT_TRUE(a.any_aten_call());
  Graph g;
  g.model = "model.py";
  AllSupported backend;
  AnalysisResult r = a.Finish(g, backend, LoweringTable::Builtin());
  ASSERT_EQ(r.ops.size(), 3u);
  EXPECT_EQ(r.ops[0].count, 7);
  EXPECT_EQ(r.ops[0].loc.line, 10);
  EXPECT_EQ(r.ops[0].signature, "f32[4]");
  EXPECT_EQ(r.ops[1].signature, "f32[8]");
  EXPECT_EQ(r.ops[2].loc.line, 11);
  EXPECT_EQ(r.summary.distinct_signatures, 2);  // f32[4] lowered once for lines 10 and 11
  EXPECT_EQ(r.summary.aten_calls, 9);
  EXPECT_EQ(backend.probes, 2);
}

TEST(GraphAnalysis, SignaturesDoNotDependOnSharedStorage) {
  GraphAnalysis a{DriverOptions{}};
  Node shared = Neg({4}, 1);
  Node same_storage_other_op = shared;  // shares the argument storage, but is another op
  same_storage_other_op.op = "aten::abs";
  a.Add(Node(shared));
  a.Add(Neg({4}, 1));  // equal arguments in a storage of its own: the same call site
  a.Add(std::move(same_storage_other_op));
  Graph g;
  AllSupported backend;
  AnalysisResult r = a.Finish(g, backend, LoweringTable::Builtin());
  ASSERT_EQ(r.ops.size(), 2u);
  EXPECT_EQ(r.ops[0].op, "aten::neg");
  EXPECT_EQ(r.ops[0].count, 2);
  EXPECT_EQ(r.ops[1].op, "aten::abs");
  EXPECT_EQ(r.summary.distinct_signatures, 2);
}

// GraphAnalysis takes a new signature's tensor signature from its key's text (Node::SignatureKey(&ts)): the same as
// TensorSignature() formats, for tensors, tensor lists (with a None) and the arguments that are neither.
TEST(GraphAnalysis, TheKeyGivesTheTensorSignatureAsItIsFormatted) {
  Node n;
  n.op = "aten::index_put";
  n.overload = "default";
  TensorMeta a{PrimitiveType::F32, {4, 3}, {true, false}, {}};
  TensorMeta b{PrimitiveType::S64, {2}, {}, {}};
  Value list;
  list.kind = Value::Kind::kTensorList;
  list.tensors = {b, std::nullopt};
  n.args = {{"self", Value::Tensor(a)},
            {"indices", list},
            {"values", Value::Tensor(b)},
            {"accumulate", Value::Bool(false)},
            {"dims", Value::IntList({0, 1})}};
  n.outputs = {Value::Tensor(a)};
  std::string ts = "left over";
  EXPECT_EQ(n.SignatureKey(&ts), n.SignatureKey());
  EXPECT_EQ(ts, n.TensorSignature());
  EXPECT_EQ(ts, "f32[<=4,3], [s64[2], None], s64[2]");
  Node none;
  none.op = "aten::empty";
  none.args = {{"size", Value::IntList({2})}};
  EXPECT_EQ(none.SignatureKey(&ts), none.SignatureKey());
  EXPECT_EQ(ts, "");
}

TEST(GraphAnalysis, TensorsOfEveryRankFormatAlike) {
  TensorMeta t{PrimitiveType::BF16, {}, {}, {}};
  EXPECT_EQ(t.ToString(), "bf16[]");
  std::string want = "bf16[";
  for (int64_t i = 0; i < 14; ++i) {  // past the rank the buffered form takes (the rest are added piece by piece)
    t.sizes.push_back(i == 3 ? -7 : (i == 5 ? INT64_MAX : i * 37));
    t.dynamic.push_back(i % 4 == 1);
    want += (i ? "," : "") + std::string(i % 4 == 1 ? "<=" : "") + std::to_string(t.sizes.back());
    std::string got = "x";
    t.AppendTo(got);
    EXPECT_EQ(got, "x" + want + "]") << "rank " << i + 1;
  }
  t.torch_dtype = "qint8";
  EXPECT_TRUE(t.ToString().starts_with("qint8[0,<=37,"));
}

TEST(GraphAnalysis, NothingAtenIsNothingToAnalyze) {
  GraphAnalysis a{DriverOptions{}};
  Node custom = Neg({4}, 1);
  custom.op = "torchvision::nms";
  a.Add(std::move(custom));
  EXPECT_FALSE(a.any_aten_call());
  Node prims = Neg({4}, 2);
  prims.op = "prims::add";  // bookkeeping, never analyzed, but a sign of a PyTorch model
  a.Add(std::move(prims));
  EXPECT_TRUE(a.any_aten_call());
}

// Streaming a sample trace into a GraphAnalysis gives Analyze's answer on the loaded graph.
TEST(GraphAnalysis, StreamedTraceAnalyzesAsTheLoadedGraph) {
  const std::string path = std::string(OPPROBE_SOURCE_DIR) + "/samples/traces/resnet18_train.json";
  auto backend = compiler_probe::Registry::Builtin().Create("rules:cpu");
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  auto loaded = LoadTrace(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  AnalysisResult whole = Analyze(*loaded, **backend, LoweringTable::Builtin(), DriverOptions{});

  GraphAnalysis streamed_analysis{DriverOptions{}};
  auto header = LoadTrace(path, streamed_analysis, 4096);
  ASSERT_TRUE(header.ok()) << header.status().message();
  EXPECT_TRUE(header->nodes.empty());
  AnalysisResult streamed = streamed_analysis.Finish(*header, **backend, LoweringTable::Builtin());

  ASSERT_EQ(streamed.ops.size(), whole.ops.size());
  for (size_t i = 0; i < whole.ops.size(); ++i) {
    const OpRecord& a = streamed.ops[i];
    const OpRecord& b = whole.ops[i];
    EXPECT_EQ(a.op + a.overload + a.signature + a.loc.ToString() + a.module_path + a.phase,
              b.op + b.overload + b.signature + b.loc.ToString() + b.module_path + b.phase);
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.probes, b.probes);
    EXPECT_EQ(a.instruction_names, b.instruction_names);
    EXPECT_EQ(a.lowering, b.lowering);
  }
  ASSERT_EQ(streamed.probes.size(), whole.probes.size());
  for (size_t i = 0; i < whole.probes.size(); ++i)
    EXPECT_EQ(streamed.probes[i].fingerprint, whole.probes[i].fingerprint);
  EXPECT_EQ(streamed.summary.aten_calls, whole.summary.aten_calls);
  EXPECT_EQ(streamed.summary.hlo_instructions, whole.summary.hlo_instructions);
  EXPECT_EQ(streamed.summary.distinct_signatures, whole.summary.distinct_signatures);
  EXPECT_EQ(streamed.SupportPercentage(), whole.SupportPercentage());
  EXPECT_EQ(streamed.model, whole.model);
}

}  // namespace
}  // namespace opprobe::analyzer
