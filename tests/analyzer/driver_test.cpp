#include "analyzer/driver/driver.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include "analyzer/driver/lowering_memo.h"
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
  std::optional<compiler_probe::Verdict> Lookup(const std::string& id, const std::string& v,
                                                const std::string& fp) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = map_.find(id + v + fp);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  void Store(const std::string& id, const std::string& v, const std::string& fp,
             const compiler_probe::Verdict& verdict) override {
    std::lock_guard<std::mutex> l(mu_);
    map_[id + v + fp] = verdict;
  }

 private:
  std::mutex mu_;
  std::map<std::string, compiler_probe::Verdict> map_;
};

// MapCache with a lowering memo store beside it (as the disk cache has), whose memos tests can read and edit.
class MemoCache : public MapCache, public compiler_probe::LoweringMemoStore {
 public:
  std::vector<std::optional<std::string>> LookupMemos(const std::vector<uint64_t>& keys) override {
    std::vector<std::optional<std::string>> out;
    for (uint64_t k : keys) {
      auto it = memos.find(k);
      out.push_back(it == memos.end() ? std::nullopt : std::optional<std::string>(it->second));
    }
    return out;
  }
  void StoreMemos(const std::vector<std::pair<uint64_t, std::string>>& entries) override {
    for (const auto& [k, v] : entries) memos[k] = v;
  }
  std::map<uint64_t, std::string> memos;
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

// Calls the built-in table lowers (relu, exp, add with its alpha multiply attributed to aten::mul), one it cannot
// and one outside aten.
Graph BuiltinGraph() {
  Graph g;
  g.model = "model.py";
  Node add = Call("aten::add", {4}, 12);
  add.overload = "Tensor";
  add.args = {{"self", Value::Tensor(F32({4}))}, {"other", Value::Tensor(F32({4}))}, {"alpha", Value::Int(2)}};
  g.nodes = {
      Call("aten::relu", {4}, 10),   Call("aten::exp", {8}, 11), add, Call("aten::opprobe_test_missing", {4}, 13),
      Call("mylib::thing", {4}, 14), Call("aten::relu", {4}, 15)};
  return g;
}

void ExpectSameAnalysis(const AnalysisResult& a, const AnalysisResult& b) {
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_EQ(a.ops[i].op, b.ops[i].op);
    EXPECT_EQ(a.ops[i].lowering, b.ops[i].lowering);
    EXPECT_EQ(a.ops[i].lowering_error, b.ops[i].lowering_error);
    EXPECT_EQ(a.ops[i].probes, b.ops[i].probes);
    EXPECT_EQ(a.ops[i].instruction_names, b.ops[i].instruction_names);
    EXPECT_EQ(a.ops[i].part_of, b.ops[i].part_of);
  }
  ASSERT_EQ(a.probes.size(), b.probes.size());
  for (size_t i = 0; i < a.probes.size(); ++i) {
    EXPECT_EQ(a.probes[i].fingerprint, b.probes[i].fingerprint);
    EXPECT_EQ(a.probes[i].opcode, b.probes[i].opcode);
    EXPECT_EQ(a.probes[i].signature, b.probes[i].signature);
    EXPECT_EQ(a.probes[i].ModuleText(), b.probes[i].ModuleText());
    EXPECT_EQ(a.probes[i].verdict.kind, b.probes[i].verdict.kind);
    EXPECT_EQ(a.probes[i].verdict.reason, b.probes[i].verdict.reason);
  }
  EXPECT_EQ(a.summary.distinct_signatures, b.summary.distinct_signatures);
  EXPECT_EQ(a.summary.hlo_instructions, b.summary.hlo_instructions);
  EXPECT_EQ(a.summary.supported_instructions, b.summary.supported_instructions);
}

// The graph analyzed with the built-in table through `cache`'s verdicts and memos (none: no cache).
AnalysisResult AnalyzeBuiltin(const Graph& g, compiler_probe::Backend& backend, MemoCache* cache) {
  DriverOptions opts;
  opts.cache = cache;
  opts.memos = cache;
  return Analyze(g, backend, LoweringTable::Builtin(), opts);
}

TEST(Driver, AWarmRunTakesEachLoweringFromTheMemo) {
  const Graph g = BuiltinGraph();
  MemoCache cache;
  FakeBackend first("exponential");
  AnalysisResult cold = AnalyzeBuiltin(g, first, &cache);
  ASSERT_EQ(cache.memos.size(), 5u);  // relu, exp, add, the missing op and the custom op: one each
  std::set<std::string> opcodes;
  for (const auto& p : cold.probes) opcodes.insert(p.opcode);
  for (const char* op : {"maximum", "exponential", "multiply", "add"}) EXPECT_TRUE(opcodes.count(op)) << op;
  const int units = static_cast<int>(cold.summary.unique_probes);
  EXPECT_EQ(first.probes.load(), units);
  for (const auto& p : cold.probes) EXPECT_FALSE(p.relower);

  // Warm: nothing is lowered (every unit is known by fingerprint from the memo) and nothing is probed.
  FakeBackend second("exponential");
  AnalysisResult warm = AnalyzeBuiltin(g, second, &cache);
  EXPECT_EQ(second.probes.load(), 0);
  for (const auto& p : warm.probes) {
    EXPECT_TRUE(p.cache_hit);
    EXPECT_TRUE(p.relower) << p.fingerprint;
    EXPECT_EQ(p.source, nullptr);
  }
  ExpectSameAnalysis(cold, warm);  // ModuleText lowers a memo's unit again to print it

  // Memos without verdicts (another backend): the units are lowered again to be probed, and probed.
  FakeBackend other("add");
  AnalysisResult fresh = AnalyzeBuiltin(g, other, nullptr);
  MemoCache memos_only;
  memos_only.memos = cache.memos;
  FakeBackend third("add");
  AnalysisResult relowered = AnalyzeBuiltin(g, third, &memos_only);
  EXPECT_EQ(third.probes.load(), units);
  ExpectSameAnalysis(fresh, relowered);
}

TEST(Driver, AMemoThatDoesNotCheckOutIsNeverTrusted) {
  const Graph g = BuiltinGraph();
  MemoCache cache;
  FakeBackend backend("none");
  AnalysisResult cold = AnalyzeBuiltin(g, backend, &cache);
  // A memo that does not decode is lowered afresh (and written again).
  MemoCache garbled;
  for (const auto& [k, v] : cache.memos) garbled.memos[k] = v.substr(0, v.size() / 2);
  FakeBackend b2("none");
  ExpectSameAnalysis(cold, AnalyzeBuiltin(g, b2, &garbled));
  EXPECT_EQ(garbled.memos, cache.memos);
  // A memo whose unit is not what the call lowers to (edited, or from a lowering that changed without a rebuild):
  // the unit to probe cannot be made, which is an error verdict of its own, never another unit's verdict.
  MemoCache stale;
  for (const auto& [k, v] : cache.memos) {
    auto o = DecodeLoweringOutcome(v);
    ASSERT_TRUE(o.has_value());
    for (auto& u : o->units) u.hash ^= 1;
    stale.memos[k] = EncodeLoweringOutcome(*o);
  }
  FakeBackend b3("none");
  AnalysisResult r = AnalyzeBuiltin(g, b3, &stale);
  EXPECT_EQ(b3.probes.load(), 0);
  ASSERT_EQ(r.probes.size(), cold.probes.size());
  for (const auto& p : r.probes) {
    EXPECT_EQ(p.verdict.kind, compiler_probe::Verdict::Kind::kError);
    EXPECT_NE(p.verdict.reason.find("stale lowering memo"), std::string::npos) << p.verdict.reason;
  }
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

// A lowering that throws is opprobe's own bug: an internal error of its own kind (failureAt `internal_error`), kept
// apart from the calls opprobe cannot lower yet and from the backend's verdicts, and the analysis goes on.
TEST(Driver, ALoweringThatThrowsIsAnInternalErrorNotAGap) {
  LoweringTable table = ToyTable();
  ASSERT_TRUE(table
                  .Register("test::throws", "toy",
                            [](const Node&, hlo::Builder&) -> Expected<LoweredOp> { throw std::runtime_error("boom"); })
                  .ok());
  Graph g;
  g.nodes = {Call("test::neg", {4}, 10), Call("test::throws", {4}, 11, 3),
             Call("aten::opprobe_test_missing", {4}, 12, 2)};
  FakeBackend backend("none");
  AnalysisResult r = Analyze(g, backend, table, DriverOptions{});
  ASSERT_EQ(r.ops.size(), 3u);
  EXPECT_TRUE(r.OpSupported(r.ops[0]));
  EXPECT_EQ(r.ops[1].lowering, OpRecord::Lowering::kInternalError);
  EXPECT_EQ(r.FailureAt(r.ops[1]), "internal_error");
  EXPECT_EQ(r.ops[1].lowering_error, "lowering test::throws threw: boom");
  EXPECT_EQ(r.ops[2].lowering, OpRecord::Lowering::kFailed);
  EXPECT_EQ(r.FailureAt(r.ops[2]), "lowering");
  EXPECT_EQ(r.summary.internal_error_calls, 3);
  EXPECT_EQ(r.summary.lowering_gap_calls, 2);
  EXPECT_EQ(r.summary.lowering_failures, 1);
  EXPECT_EQ(backend.probes.load(), 1);
  // Incomplete by both kinds, each with its own line.
  std::vector<AnalysisResult::Incompleteness> why = r.Incomplete();
  ASSERT_EQ(why.size(), 2u);
  EXPECT_EQ(why[0].kind, AnalysisResult::Incompleteness::Kind::kInternalError);
  EXPECT_EQ(why[0].text,
            "internal error: opprobe failed on 3 of 6 aten calls (1 call site, failureAt internal_error): a bug in "
            "opprobe, not a gap and not the backend's verdict; please report it");
  EXPECT_EQ(why[1].kind, AnalysisResult::Incompleteness::Kind::kLoweringGaps);
  EXPECT_EQ(r.IncompleteReasons().size(), 2u);
  // Not analyzed: one unsupported instance each, like a gap.
  EXPECT_EQ(r.summary.hlo_instructions, 1 + 3 + 2);
  EXPECT_DOUBLE_EQ(r.AnalyzedPercentage(), 100.0 / 6.0);
}

// How a backend's results compared with interp is the verdict's field, whatever its words say.
TEST(Driver, InterpComparisonsAreCountedFromTheVerdictsField) {
  class Comparing : public compiler_probe::Backend {
   public:
    std::string id() const override { return "comparing"; }
    std::string version() const override { return "1"; }
    compiler_probe::Verdict probe(const hlo::Module& unit) override {
      const auto shape = unit.entry()->root()->shape.dimensions();
      compiler_probe::Verdict v;
      switch (shape.empty() ? 0 : shape[0]) {
        case 1:
          v.interp = compiler_probe::Verdict::Interp::kAgree;
          v.output_tail = "outputs match";
          break;
        case 2: v.interp = compiler_probe::Verdict::Interp::kNotCompared; break;
        case 3:
          v = compiler_probe::Verdict::Unsupported("results differ");
          v.interp = compiler_probe::Verdict::Interp::kDiffer;
          break;
        default:  // words that read like a comparison, but none was made
          v.output_tail = std::string(compiler_probe::kInterpAgreePrefix) + "1 output agree";
          break;
      }
      return v;
    }
  };
  Graph g;
  g.nodes = {Call("test::neg", {1}, 10), Call("test::neg", {2}, 11), Call("test::neg", {3}, 12),
             Call("test::neg", {4}, 13)};
  Comparing backend;
  MapCache cache;
  DriverOptions opts;
  opts.cache = &cache;
  for (int run = 0; run < 2; ++run) {  // the second from the cache, which keeps the field
    AnalysisResult r = Analyze(g, backend, ToyTable(), opts);
    EXPECT_EQ(r.summary.cache_hits, run == 0 ? 0 : 4);
    EXPECT_EQ(r.summary.interp_agree, 1);
    EXPECT_EQ(r.summary.interp_not_compared, 1);
    EXPECT_EQ(r.summary.interp_differ, 1);
  }
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
