// Many units to a compile (compiler_probe/batch.h, hlo::MakeBatchModule): the batch module holds every unit as it
// is, and ProbeBatched gives each unit the verdict a compile of it alone gives, with fewer compiles when the
// compiler accepts, whichever units it refuses or crashes on.
#include "compiler_probe/batch.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "hlo/fingerprint.h"
#include "hlo/printer.h"
#include "hlo/probe_unit.h"
#include "hlo/verifier.h"
#include "testing/parse_module.h"

namespace opprobe::compiler_probe {
namespace {

using ::opprobe::testing::ParseUnit;

// A compiler that refuses any program holding a `cosine`, fails inside on a `sine` (an error), says something of
// its own about a `dot` (a supported verdict with an output tail) and accepts the rest; it counts its compiles.
class PickyCompiler : public Backend {
 public:
  std::string id() const override { return "picky"; }
  std::string version() const override { return "1"; }
  size_t batch_limit() const override { return 8; }
  bool batchable(const hlo::Module&) const override { return true; }
  Verdict probe(const hlo::Module& m) override {
    ++compiles;
    sizes.push_back(m.entry()->instructions().size());
    std::set<hlo::Opcode> ops;
    for (const auto& c : m.computations())
      for (const auto& in : c->instructions()) ops.insert(in->opcode);
    if (ops.count(hlo::Opcode::kCos)) return Verdict::Unsupported("compile: cosine is not supported");
    if (ops.count(hlo::Opcode::kSin)) return Verdict::Error("compiler crashed: the worker was killed by signal 4");
    Verdict v = Verdict::Supported();
    if (ops.count(hlo::Opcode::kDot)) v.output_tail = "compiled to a library call";
    return v;
  }
  int compiles = 0;
  std::vector<size_t> sizes;
};

std::unique_ptr<hlo::Module> Unit(const std::string& op, const std::string& type = "f32[4]") {
  return ParseUnit("HloModule u\nENTRY e {\n  p0 = " + type + " parameter(0)\n  ROOT r = " + type + " " + op +
                   "(p0)\n}\n");
}

std::unique_ptr<hlo::Module> Reduce() {
  return ParseUnit(R"(HloModule u
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p0 = f32[4,8] parameter(0)
  p1 = f32[] parameter(1)
  ROOT r = f32[4] reduce(p0, p1), dimensions={1}, to_apply=add
}
)");
}

TEST(MakeBatchModule, HoldsEveryUnitWithItsParametersAndComputationsAndVerifies) {
  auto a = Reduce(), b = Unit("exponential", "f16[2,3]"), c = Reduce();
  auto batch = hlo::MakeBatchModule({a.get(), b.get(), c.get()});
  ASSERT_NE(batch->entry(), nullptr);
  EXPECT_TRUE(hlo::VerifyModule(*batch, "batch").ok()) << hlo::ToString(*batch);
  // Parameters numbered on from unit to unit, in order; each unit's root an element of the ROOT tuple (array roots
  // here; a tuple root is taken apart, below).
  auto params = batch->entry()->parameters();
  ASSERT_EQ(params.size(), 5u);
  for (size_t i = 0; i < params.size(); ++i) EXPECT_EQ(params[i]->parameter_number, static_cast<int64_t>(i));
  EXPECT_EQ(params[2]->shape.ToString(), "f16[2,3]");
  const hlo::Instruction* root = batch->entry()->root();
  ASSERT_EQ(root->opcode, hlo::Opcode::kTuple);
  ASSERT_EQ(root->operand_count(), 3);
  EXPECT_EQ(root->operand(0)->opcode, hlo::Opcode::kReduce);
  EXPECT_EQ(root->operand(1)->opcode, hlo::Opcode::kExp);
  // The two reductions keep their own (renamed) computation; the entry is the only other one.
  EXPECT_EQ(batch->computations().size(), 3u);
  EXPECT_NE(root->operand(0)->to_apply(), root->operand(2)->to_apply());
  // Each instruction carries its unit's marker, which reads back as the unit's index; nothing else does.
  EXPECT_EQ(hlo::BatchUnitOf(root->operand(2)->metadata->op_name), std::optional<size_t>(2));
  EXPECT_EQ(hlo::BatchUnitOf(params[2]->metadata->op_name), std::optional<size_t>(1));
  EXPECT_EQ(hlo::BatchUnitOf("opprobe.batch.unit."), std::nullopt);
  EXPECT_EQ(hlo::BatchUnitOf("opprobe.batch.unit.3x"), std::nullopt);
  EXPECT_EQ(hlo::BatchUnitOf("aten__add"), std::nullopt);
  // Each unit inside the batch fingerprints as the unit does alone: the batch holds the units unchanged.
  EXPECT_EQ(hlo::UnitFingerprint(*root->operand(0)), hlo::UnitFingerprint(*a->entry()->root()));
  EXPECT_EQ(hlo::UnitFingerprint(*root->operand(1)), hlo::UnitFingerprint(*b->entry()->root()));
}

TEST(MakeBatchModule, ATupleRootIsTakenApartSoTheRootHoldsNoNestedTuple) {
  auto pair = ParseUnit(R"(HloModule u
ENTRY e {
  p0 = f32[4] parameter(0)
  p1 = s32[4] parameter(1)
  inner = (f32[4], s32[4]) tuple(p0, p1)
  ROOT t = ((f32[4], s32[4]), f32[4]) tuple(inner, p0)
}
)");
  ASSERT_NE(pair, nullptr);
  auto neg = Unit("negate");
  auto batch = hlo::MakeBatchModule({neg.get(), pair.get()});
  EXPECT_TRUE(hlo::VerifyModule(*batch, "batch").ok()) << hlo::ToString(*batch);
  const hlo::Instruction* root = batch->entry()->root();
  ASSERT_EQ(root->operand_count(), 4);  // negate's result, then f32[4], s32[4], f32[4] in depth-first order
  EXPECT_EQ(root->operand(2)->shape.element_type(), hlo::PrimitiveType::S32);
  for (const auto* leaf : root->operands) EXPECT_FALSE(leaf->shape.IsTuple()) << hlo::ToString(*batch);
}

TEST(ProbeBatched, EveryVerdictIsTheOneItsUnitGetsAloneWithFewerCompiles) {
  std::vector<std::unique_ptr<hlo::Module>> owned;
  std::vector<std::string> ops = {"negate",      "abs",   "cosine", "exponential", "sqrt", "sine",  "tanh",
                                  "floor",       "ceil",  "log",    "negate",      "abs",  "sqrt",  "tanh",
                                  "exponential", "floor", "ceil",   "log",         "abs",  "negate"};
  for (const auto& op : ops) owned.push_back(Unit(op));
  std::vector<const hlo::Module*> units;
  for (const auto& m : owned) units.push_back(m.get());

  PickyCompiler alone_compiler;
  std::vector<Verdict> alone;
  for (const auto* u : units) alone.push_back(alone_compiler.probe(*u));

  PickyCompiler compiler;
  BatchStats stats;
  std::vector<Verdict> batched = ProbeBatched(compiler, units, 0, &stats);
  ASSERT_EQ(batched.size(), units.size());
  for (size_t i = 0; i < units.size(); ++i) {
    EXPECT_EQ(batched[i].kind, alone[i].kind) << ops[i];
    EXPECT_EQ(batched[i].reason, alone[i].reason) << ops[i];
  }
  EXPECT_EQ(batched[2].kind, Verdict::Kind::kUnsupported);
  EXPECT_EQ(batched[5].kind, Verdict::Kind::kError);
  // Batches of at most 8: the first holds the refusal and the crash and is split until each is alone; the others
  // compile whole. Far fewer compiles than units.
  EXPECT_EQ(stats.compiles, static_cast<size_t>(compiler.compiles));
  EXPECT_LT(compiler.compiles, 20);
  EXPECT_GE(stats.splits, 1u);
  EXPECT_EQ(compiler.sizes.front(), 8u * 2 + 1);  // 8 units of a parameter and an op, and the ROOT tuple
}

TEST(ProbeBatched, ASupportedBatchWithSomethingToSayIsSplitSoTheDetailReachesItsUnit) {
  auto dot = ParseUnit(R"(HloModule u
ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[3,4] parameter(1)
  ROOT d = f32[2,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
  auto neg = Unit("negate");
  PickyCompiler compiler;
  std::vector<Verdict> v = ProbeBatched(compiler, {neg.get(), dot.get()});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_TRUE(v[0].supported());
  EXPECT_TRUE(v[0].output_tail.empty());
  EXPECT_TRUE(v[1].supported());
  EXPECT_EQ(v[1].output_tail, "compiled to a library call");
  EXPECT_EQ(compiler.compiles, 3);  // the pair, then each alone
}

TEST(ProbeBatched, ALimitOfOneCompilesEachUnitAlone) {
  auto a = Unit("negate"), b = Unit("abs");
  PickyCompiler compiler;
  BatchStats stats;
  auto v = ProbeBatched(compiler, {a.get(), b.get()}, 1, &stats);
  EXPECT_EQ(compiler.compiles, 2);
  EXPECT_EQ(stats.batched_compiles, 0u);
  EXPECT_TRUE(v[0].supported() && v[1].supported());
}

}  // namespace
}  // namespace opprobe::compiler_probe
