#include "analyzer/driver/driver.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>

#include "hlo/builder.h"

namespace opprobe::analyzer {
namespace {

using hlo::PrimitiveType;

// A backend that rejects one opcode and counts what it is asked.
class FakeBackend : public compiler_probe::Backend {
 public:
  explicit FakeBackend(std::string reject) : reject_(std::move(reject)) {}
  std::string id() const override { return "fake"; }
  std::string version() const override { return "1"; }
  compiler_probe::Verdict probe(const hlo::Module& unit) override {
    ++probes;
    std::string op(hlo::OpcodeName(unit.entry()->root()->opcode));
    if (op == reject_) return compiler_probe::Verdict::Unsupported("no " + op + " here");
    return compiler_probe::Verdict::Supported();
  }
  std::atomic<int> probes{0};

 private:
  std::string reject_;
};

class MapCache : public compiler_probe::ProbeCache {
 public:
  std::optional<compiler_probe::Verdict> Lookup(const std::string& id, const std::string& v, const std::string& fp) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = map_.find(id + v + fp);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  void Store(const std::string& id, const std::string& v, const std::string& fp, const compiler_probe::Verdict& verdict) override {
    std::lock_guard<std::mutex> l(mu_);
    map_[id + v + fp] = verdict;
  }

 private:
  std::mutex mu_;
  std::map<std::string, compiler_probe::Verdict> map_;
};

TensorMeta F32(std::vector<int64_t> sizes) { return TensorMeta{PrimitiveType::F32, std::move(sizes), {}, {}}; }

Node Call(const std::string& op, std::vector<int64_t> shape, int line, int64_t count = 1) {
  Node n;
  n.op = op;
  n.overload = "default";
  n.args = {{"self", Value::Tensor(F32(shape))}};
  n.outputs = {Value::Tensor(F32(shape))};
  n.loc = {"model.py", line};
  n.count = count;
  return n;
}

// A table with two toy lowerings: `test::neg` -> negate; `test::neg_exp` -> negate, exponential, with the
// exponential attributed to `aten::exp` through its metadata (as add's alpha multiply is to aten::mul).
LoweringTable ToyTable() {
  LoweringTable t;
  t.Register("test::neg", "toy", [](const Node& n, hlo::Builder& b) -> Expected<LoweredOp> {
    auto* x = b.NextParameter(hlo::Shape::Array(PrimitiveType::F32, n.args[0].value.tensor.sizes));
    return LoweredOp{{b.Unary(hlo::Opcode::kNegate, x)}, false, ""};
  });
  t.Register("test::neg_exp", "toy", [](const Node& n, hlo::Builder& b) -> Expected<LoweredOp> {
    auto* x = b.NextParameter(hlo::Shape::Array(PrimitiveType::F32, n.args[0].value.tensor.sizes));
    auto* neg = b.Unary(hlo::Opcode::kNegate, x);
    hlo::OpMetadata md = b.metadata();
    md.op_type = "aten__exp";
    b.SetMetadata(md);
    return LoweredOp{{b.Unary(hlo::Opcode::kExp, neg)}, false, ""};
  });
  return t;
}

TEST(Driver, MergesCallsDedupsUnitsAndFansVerdictsOut) {
  Graph g;
  g.model = "model.py";
  g.nodes = {Call("test::neg", {4}, 10, 3), Call("test::neg", {4}, 10, 2), Call("test::neg", {4}, 11),
             Call("test::neg", {8}, 12), Call("aten::opprobe_test_missing", {4}, 13)};
  FakeBackend backend("negate");
  DriverOptions opts;
  opts.jobs = 2;
  AnalysisResult r = Analyze(g, backend, ToyTable(), opts);
  // Identical calls at the same place merge (10 x5); the same signature elsewhere is lowered once.
  ASSERT_EQ(r.ops.size(), 4u);
  EXPECT_EQ(r.ops[0].count, 5);
  EXPECT_EQ(r.summary.aten_calls, 8);
  EXPECT_EQ(r.summary.distinct_signatures, 3);
  // f32[4] and f32[8] negate are two unique units; the missing op is a lowering verdict, not a probe.
  EXPECT_EQ(r.summary.unique_probes, 2);
  EXPECT_EQ(backend.probes.load(), 2);
  EXPECT_EQ(r.ops[3].lowering, OpRecord::Lowering::kFailed);
  EXPECT_EQ(r.FailureAt(r.ops[3]), "lowering");
  EXPECT_EQ(r.ops[3].lowering_error, "no lowering for aten::opprobe_test_missing");
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(r.OpSupported(r.ops[i]));
    EXPECT_EQ(r.FailureReason(r.ops[i]), "no negate here");
  }
  // 5+1+1 negate instances unsupported and one failed lowering: 0% supported, 8 instances.
  EXPECT_EQ(r.summary.hlo_instructions, 8);
  EXPECT_EQ(r.SupportPercentage(), 0.0);
}

TEST(Driver, CacheAnswersTheSecondRun) {
  Graph g;
  g.nodes = {Call("test::neg", {4}, 10), Call("test::neg", {5}, 11)};
  MapCache cache;
  DriverOptions opts;
  opts.cache = &cache;
  FakeBackend first("none");
  AnalysisResult r1 = Analyze(g, first, ToyTable(), opts);
  EXPECT_EQ(first.probes.load(), 2);
  EXPECT_EQ(r1.summary.cache_hits, 0);
  FakeBackend second("none");
  AnalysisResult r2 = Analyze(g, second, ToyTable(), opts);
  EXPECT_EQ(second.probes.load(), 0);
  EXPECT_EQ(r2.summary.cache_hits, 2);
  EXPECT_EQ(r2.SupportPercentage(), 100.0);
}

TEST(Driver, InstructionsAttributedToAnotherOpGetTheirOwnRecord) {
  Graph g;
  g.nodes = {Call("test::neg_exp", {4}, 20)};
  FakeBackend backend("exponential");
  AnalysisResult r = Analyze(g, backend, ToyTable(), DriverOptions{});
  ASSERT_EQ(r.ops.size(), 2u);
  EXPECT_EQ(r.ops[0].op, "test::neg_exp");
  EXPECT_TRUE(r.OpSupported(r.ops[0]));
  EXPECT_EQ(r.ops[1].op, "aten::exp");
  EXPECT_FALSE(r.OpSupported(r.ops[1]));
  EXPECT_EQ(r.ops[1].loc.line, 20);
  EXPECT_EQ(r.ops[1].part_of, 0);
  EXPECT_EQ(r.SupportPercentage(), 50.0);
  // One real call, unsupported because part of its lowering is.
  EXPECT_EQ(r.summary.aten_calls, 1);
  EXPECT_EQ(r.summary.aten_nodes, 1);
  EXPECT_EQ(r.AtenSupportPercentage(), 0.0);
}

TEST(Driver, HloInputIsAttributedThroughOpType) {
  hlo::Builder b("SyncTensorsGraph.1");
  auto* x = b.NextParameter(hlo::Shape::Array(PrimitiveType::F32, {4}));
  hlo::OpMetadata md;
  md.op_type = "aten__mul";
  md.source_file = "train.py";
  md.source_line = 7;
  b.SetMetadata(md);
  auto* m1 = b.Binary(hlo::Opcode::kMultiply, x, x);
  b.SetMetadata({});
  auto* n = b.Unary(hlo::Opcode::kNegate, m1);
  auto module = b.Build(n);
  FakeBackend backend("negate");
  AnalysisResult r = AnalyzeHlo("dump.hlo", {{"SyncTensorsGraph.1", module.get()}}, backend, DriverOptions{});
  ASSERT_EQ(r.ops.size(), 2u);
  EXPECT_EQ(r.ops[0].op, "aten::mul");
  EXPECT_EQ(r.ops[0].loc.ToString(), "train.py 7");
  EXPECT_TRUE(r.OpSupported(r.ops[0]));
  EXPECT_EQ(r.ops[1].op, "unattributed");
  EXPECT_FALSE(r.OpSupported(r.ops[1]));
  EXPECT_EQ(r.programs, std::vector<std::string>{"SyncTensorsGraph.1"});
}

TEST(Driver, AtenOpFromOpType) {
  EXPECT_EQ(AtenOpFromOpType("aten__mul"), "aten::mul");
  EXPECT_EQ(AtenOpFromOpType("xla__device_data"), "xla::device_data");
  EXPECT_EQ(AtenOpFromOpType("test__exp"), "");
  EXPECT_EQ(AtenOpFromOpType(""), "");
  EXPECT_EQ(AtenOpFromOpType("jit(f)/add"), "");
}

}  // namespace
}  // namespace opprobe::analyzer
