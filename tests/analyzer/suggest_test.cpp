// analyzer/suggest: rewrites are lowered by the lowering table and judged by the analysis's backend; a table of
// test rewrites stands in for the built-in one.
#include "analyzer/suggest/suggest.h"

#include <gtest/gtest.h>

#include <atomic>

#include "analyzer/driver/driver.h"

namespace opprobe::analyzer::suggest {
namespace {

using hlo::PrimitiveType;

// Refuses one opcode; counts its probes.
class RefuseOpcode : public compiler_probe::Backend {
 public:
  explicit RefuseOpcode(std::string opcode) : opcode_(std::move(opcode)) {}
  std::string id() const override { return "refuse-" + opcode_; }
  std::string version() const override { return "1"; }
  compiler_probe::Verdict probe(const hlo::Module& unit) override {
    ++probes;
    if (std::string(hlo::OpcodeName(unit.entry()->root()->opcode)) == opcode_)
      return compiler_probe::Verdict::Unsupported("no " + opcode_ + " here");
    return compiler_probe::Verdict::Supported();
  }
  std::atomic<int> probes{0};

 private:
  std::string opcode_;
};

TensorMeta F32(std::vector<int64_t> sizes) { return TensorMeta{PrimitiveType::F32, std::move(sizes), {}, {}}; }

Node Unary(const std::string& op, int line, int64_t count = 1) {
  Node n;
  n.op = op;
  n.overload = "default";
  n.args = {{"self", Value::Tensor(F32({4}))}};
  n.outputs = {Value::Tensor(F32({4}))};
  n.loc = {"model.py", line};
  n.count = count;
  return n;
}

// Test rewrites of aten::exp: as aten::tanh (which the backend accepts), as aten::log (refused), and one that never
// applies.
const std::vector<Rewrite>& TestRewrites() {
  static const std::vector<Rewrite> table = {
      {"as-log", "exp as log", "aten::exp", "always", [](const Node& n) { return n.op == "aten::exp"; },
       [](const Node& n) -> Expected<RewritePlan> {
         RewritePlan p;
         Node c = n;
         c.op = "aten::log";
         p.calls = {c, c};
         p.python = "out = torch.log(x)";
         p.changes = "not the same at all";
         return p;
       }},
      {"as-tanh", "exp as tanh", "aten::exp", "always", [](const Node& n) { return n.op == "aten::exp"; },
       [](const Node& n) -> Expected<RewritePlan> {
         RewritePlan p;
         Node c = n;
         c.op = "aten::tanh";
         p.calls = {c};
         p.python = "out = torch.tanh(x)";
         p.exact = true;
         return p;
       }},
      {"never", "never", "nothing", "never", [](const Node&) { return false; },
       [](const Node&) -> Expected<RewritePlan> { return Internal("never asked"); }},
  };
  return table;
}

AnalysisResult AnalyzeKeepingCalls(const Graph& g, compiler_probe::Backend& backend) {
  DriverOptions o;
  o.keep_calls = true;
  return Analyze(g, backend, LoweringTable::Builtin(), o);
}

TEST(Suggest, VerifiedFirstTriedWithTheShareThatPassesAndAWhatIf) {
  Graph g;
  g.nodes = {Unary("aten::exp", 3, 2), Unary("aten::exp", 7), Unary("aten::relu", 9)};
  RefuseOpcode backend("exponential");  // exp's own instruction; tanh and log pass... but log is refused below
  AnalysisResult r = AnalyzeKeepingCalls(g, backend);
  ASSERT_EQ(r.calls.size(), r.ops.size());
  RefuseOpcode judge("log");  // the suggestion step's backend refuses log: `as-log` does not help
  Suggest(r, judge, LoweringTable::Builtin(), {TestRewrites(), nullptr});
  ASSERT_TRUE(r.summary.suggest);
  int with = 0;
  for (const OpRecord& op : r.ops) {
    if (op.op != "aten::exp") {
      EXPECT_TRUE(op.suggestions.empty()) << op.op;  // supported calls get none
      continue;
    }
    ++with;
    ASSERT_EQ(op.suggestions.size(), 2u);  // `never` does not apply
    EXPECT_EQ(op.suggestions[0].rewrite, "as-tanh");
    EXPECT_TRUE(op.suggestions[0].verified);
    EXPECT_EQ(op.suggestions[0].backend, "refuse-log");
    EXPECT_EQ(op.suggestions[0].supported_fraction, 1.0);
    EXPECT_EQ(op.suggestions[0].instructions, 1);
    EXPECT_EQ(op.suggestions[1].rewrite, "as-log");
    EXPECT_FALSE(op.suggestions[1].verified);
    EXPECT_EQ(op.suggestions[1].supported_fraction, 0.0);
    EXPECT_EQ(op.suggestions[1].instructions, 2);
    EXPECT_NE(op.suggestions[1].refusal.find("aten::log (log): no log here"), std::string::npos)
        << op.suggestions[1].refusal;
  }
  EXPECT_EQ(with, 2);
  // Two distinct call sites of one signature: each rewrite's units are probed once (tanh, log).
  EXPECT_EQ(judge.probes, 2);
  // What-if: exp's 3 calls become tanh (1 instruction each, accepted); relu's stay as they were.
  EXPECT_LT(r.SupportPercentage(), 100.0);
  EXPECT_DOUBLE_EQ(r.WhatIfPercentage(), 100.0);
  EXPECT_EQ(r.summary.what_if_instructions, r.summary.what_if_supported);
}

TEST(Suggest, WithoutKeptCallsNothingIsSuggested) {
  Graph g;
  g.nodes = {Unary("aten::exp", 3)};
  RefuseOpcode backend("exponential");
  AnalysisResult r = Analyze(g, backend, LoweringTable::Builtin(), DriverOptions{});
  EXPECT_TRUE(r.calls.empty());
  Suggest(r, backend, LoweringTable::Builtin(), {TestRewrites(), nullptr});
  for (const OpRecord& op : r.ops) EXPECT_TRUE(op.suggestions.empty());
}

TEST(Suggest, APlanCallOpprobeCannotLowerIsNotVerified) {
  Graph g;
  g.nodes = {Unary("aten::exp", 3)};
  RefuseOpcode backend("exponential");
  AnalysisResult r = AnalyzeKeepingCalls(g, backend);
  static const std::vector<Rewrite> table = {{"gap", "a call without a lowering", "aten::exp", "always",
                                              [](const Node&) { return true; },
                                              [](const Node& n) -> Expected<RewritePlan> {
                                                RewritePlan p;
                                                Node c = n;
                                                c.op = "aten::no_such_op";
                                                p.calls = {c};
                                                return p;
                                              }}};
  Suggest(r, backend, LoweringTable::Builtin(), {table, nullptr});
  ASSERT_EQ(r.ops[0].suggestions.size(), 1u);
  EXPECT_FALSE(r.ops[0].suggestions[0].verified);
  EXPECT_NE(r.ops[0].suggestions[0].refusal.find("opprobe cannot lower aten::no_such_op"), std::string::npos)
      << r.ops[0].suggestions[0].refusal;
}

// The built-in table: every rewrite that applies to a call makes a plan that opprobe can lower.
TEST(Suggest, BuiltinPlansLower) {
  Node mul;
  mul.op = "aten::mul";
  mul.overload = "Tensor";
  mul.args = {{"self", Value::Tensor(F32({4}))}, {"other", Value::Tensor(TensorMeta{PrimitiveType::C64, {4}, {}, {}})}};
  mul.outputs = {Value::Tensor(TensorMeta{PrimitiveType::C64, {4}, {}, {}})};
  Node cmul = mul;
  cmul.args = {{"self", Value::Tensor(TensorMeta{PrimitiveType::C64, {3, 4}, {}, {}})},
               {"other", Value::Tensor(TensorMeta{PrimitiveType::C64, {4}, {}, {}})}};
  cmul.outputs = {Value::Tensor(TensorMeta{PrimitiveType::C64, {3, 4}, {}, {}})};
  Node cdiv = cmul;
  cdiv.op = "aten::div";
  Node fft;
  fft.op = "aten::_fft_r2c";
  fft.overload = "default";
  fft.args = {{"self", Value::Tensor(F32({3, 8}))},
              {"dim", Value::IntList({0})},
              {"normalization", Value::Int(2)},
              {"onesided", Value::Bool(true)}};
  fft.outputs = {Value::Tensor(TensorMeta{PrimitiveType::C64, {2, 8}, {}, {}})};
  Node c2c;
  c2c.op = "aten::_fft_c2c";
  c2c.overload = "default";
  c2c.args = {{"self", Value::Tensor(TensorMeta{PrimitiveType::C64, {5, 6}, {}, {}})},
              {"dim", Value::IntList({1})},
              {"normalization", Value::Int(1)},
              {"forward", Value::Bool(false)}};
  c2c.outputs = {Value::Tensor(TensorMeta{PrimitiveType::C64, {5, 6}, {}, {}})};
  Node nonzero;
  nonzero.op = "aten::nonzero";
  nonzero.overload = "default";
  nonzero.args = {{"self", Value::Tensor(F32({2, 3}))}};
  nonzero.outputs = {Value::Tensor(TensorMeta{PrimitiveType::S64, {4, 2}, {}, {}})};
  for (const Node* n : {&mul, &cmul, &cdiv, &fft, &c2c, &nonzero}) {
    int applied = 0;
    for (const Rewrite& rw : BuiltinRewrites()) {
      if (!rw.applies(*n)) continue;
      ++applied;
      Expected<RewritePlan> plan = rw.plan(*n);
      ASSERT_TRUE(plan.ok()) << rw.id << ": " << plan.status().message();
      EXPECT_FALSE(plan->python.empty()) << rw.id;
      EXPECT_FALSE(plan->changes.empty()) << rw.id;
      for (const Node& c : plan->calls) {
        Expected<LoweredModule> m = Lower(c, LoweringTable::Builtin());
        EXPECT_TRUE(m.ok()) << rw.id << " on " << n->qualified_name() << ": " << c.qualified_name() << ": "
                            << m.status().message();
      }
    }
    EXPECT_GT(applied, 0) << n->qualified_name();
  }
}

}  // namespace
}  // namespace opprobe::analyzer::suggest
