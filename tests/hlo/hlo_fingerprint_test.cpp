// Structural fingerprints (hlo/fingerprint.h): equal units get equal fingerprints whatever their names and
// metadata; units that differ in anything a backend sees (shapes, operands, attributes modelled or not, called
// computations) get different ones; and a unit's module fingerprints as the instruction it was made from.
#include <gtest/gtest.h>

#include <set>

#include "hlo/builder.h"
#include "hlo/fingerprint.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/probe_unit.h"
#include "testing/parse_module.h"

namespace opprobe::hlo {
namespace {

using ::opprobe::testing::ParseUnit;

std::string Fp(const Module& m, const char* name) {
  const Instruction* in = m.entry()->FindInstruction(name);
  EXPECT_NE(in, nullptr) << name;
  return in ? UnitFingerprint(*in) : "";
}

constexpr const char* kModule = R"(HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

sum_renamed {
  lhs.1 = f32[] parameter(0)
  rhs.7 = f32[] parameter(1)
  ROOT total = f32[] add(lhs.1, rhs.7), metadata={op_name="x"}
}

max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}

swapped {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(b, a)
}

ENTRY e {
  p = f32[8] parameter(0)
  q = f32[8] parameter(1)
  zero = f32[] constant(0)
  one = f32[] constant(1)
  r1 = f32[] reduce(p, zero), dimensions={0}, to_apply=add
  r2 = f32[] reduce(q, zero), dimensions={0}, to_apply=sum_renamed, metadata={op_type="aten__sum"}
  r3 = f32[] reduce(p, zero), dimensions={0}, to_apply=max
  r4 = f32[] reduce(p, zero), dimensions={0}, to_apply=swapped
  x = f32[8] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=add
  y = f32[8] all-reduce(p), replica_groups={{0,2},{1,3}}, to_apply=add
  z = f32[8] all-reduce(q), replica_groups={{0,1},{2,3}}, to_apply=sum_renamed
  u = f32[8] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=add, vendor_hint=1
  v = f32[8] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=add, vendor_hint=2
  same = f32[8] add(p, p)
  other = f32[8] add(p, q)
  other.2 = f32[8] add(q, p), control-predecessors={same}
  c0 = f32[] constant(0)
  c1 = f32[] constant(1)
  layout = f32[2,4]{0,1} reshape(p)
  nolayout = f32[2,4]{1,0} reshape(p)
  ROOT t = (f32[], f32[], f32[], f32[], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[],
            f32[], f32[2,4], f32[2,4]) tuple(r1, r2, r3, r4, x, y, z, u, v, same, other, other.2, c0, c1, layout,
            nolayout)
}
)";

TEST(HloFingerprintTest, NamesMetadataAndControlPredecessorsDoNotMatter) {
  auto m = ParseUnit(kModule);
  ASSERT_TRUE(m);
  // The same reduction over another parameter, through a computation with other names and metadata.
  EXPECT_EQ(Fp(*m, "r1"), Fp(*m, "r2"));
  EXPECT_EQ(Fp(*m, "x"), Fp(*m, "z"));
  // add(p, q) and add(q, p): two distinct operands of the same shape either way; control predecessors are dropped.
  EXPECT_EQ(Fp(*m, "other"), Fp(*m, "other.2"));
}

TEST(HloFingerprintTest, WhatTheBackendSeesMakesAnotherUnit) {
  auto m = ParseUnit(kModule);
  ASSERT_TRUE(m);
  EXPECT_NE(Fp(*m, "x"), Fp(*m, "y"));              // replica groups
  EXPECT_NE(Fp(*m, "x"), Fp(*m, "u"));              // an attribute the schema does not know
  EXPECT_NE(Fp(*m, "u"), Fp(*m, "v"));              // ... and its value
  EXPECT_NE(Fp(*m, "r1"), Fp(*m, "r3"));            // the called computation's opcode
  EXPECT_NE(Fp(*m, "r1"), Fp(*m, "r4"));            // the called computation's operand order
  EXPECT_NE(Fp(*m, "same"), Fp(*m, "other"));       // one parameter used twice against two parameters
  EXPECT_NE(Fp(*m, "c0"), Fp(*m, "c1"));            // a constant's value
  EXPECT_NE(Fp(*m, "layout"), Fp(*m, "nolayout"));  // the result's layout
  // Every instruction above that differs from the others in something is a unit of its own.
  std::set<std::string> all;
  for (const char* n : {"r1", "r3", "r4", "x", "y", "u", "v", "same", "other", "c0", "c1", "layout", "nolayout"})
    all.insert(Fp(*m, n));
  EXPECT_EQ(all.size(), 13u);
}

TEST(HloFingerprintTest, TheUnitsModuleFingerprintsAsItsInstruction) {
  auto m = ParseUnit(kModule);
  ASSERT_TRUE(m);
  for (const auto& in : m->entry()->instructions()) {
    if (in->opcode == Opcode::kParameter) continue;
    auto unit = MakeProbeModule(*in);
    EXPECT_EQ(Fingerprint(*unit), UnitFingerprint(*in)) << in->name;
    // A repro file read back is the same unit.
    auto back = ParseModule(ToString(*unit, PrintOptions::Long()), "unit.hlo");
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(Fingerprint(**back), UnitFingerprint(*in)) << in->name;
  }
  EXPECT_EQ(UnitFingerprint(*m->entry()->FindInstruction("r1")).size(), 16u);
}

TEST(HloFingerprintTest, AUnitALoweringBuiltFingerprintsAsItsPrintedTextReadBack) {
  // A lowering's Builder gives every shape a layout (a scalar an empty one); the unit's text leaves a scalar's
  // out, and the parser reads `f64[]` as a shape without one. Both are XLA's default layout, the same unit to a
  // backend, and scripts/agreement matches the verdicts of unit files to the units by fingerprint.
  Builder b("lowered");
  Instruction* x = b.Parameter(0, Shape::Array(PrimitiveType::F32, {2, 4}));
  Instruction* y = b.Parameter(1, Shape::Array(PrimitiveType::F32, {2, 4}));
  Instruction* s = b.Parameter(2, Shape::Array(PrimitiveType::F64, {}));
  Instruction* sum = b.Binary(Opcode::kAdd, x, y);
  Instruction* sq = b.Binary(Opcode::kMultiply, s, s);
  auto m = b.Build(b.Tuple({sum, sq}));
  ASSERT_TRUE(m);
  for (const Instruction* in : {sum, sq}) {
    auto unit = MakeProbeModule(*in);
    auto back = ParseModule(ToString(*unit, PrintOptions::Long()), "unit.hlo");
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(Fingerprint(**back), UnitFingerprint(*in)) << in->name;
  }
}

TEST(HloFingerprintTest, ASharedCalleeDiffersFromTwoEqualCalleesAndCyclesEnd) {
  // A conditional whose two branches are one computation, against one whose branches are two equal ones.
  auto m = ParseUnit(R"(HloModule m

b1 {
  a = f32[] parameter(0)
  ROOT n = f32[] negate(a)
}

b2 {
  a = f32[] parameter(0)
  ROOT n = f32[] negate(a)
}

ENTRY e {
  pred = pred[] parameter(0)
  x = f32[] parameter(1)
  shared = f32[] conditional(pred, x, x), true_computation=b1, false_computation=b1
  two = f32[] conditional(pred, x, x), true_computation=b1, false_computation=b2
  ROOT t = (f32[], f32[]) tuple(shared, two)
}
)");
  ASSERT_TRUE(m);
  EXPECT_NE(Fp(*m, "shared"), Fp(*m, "two"));
  // A computation that calls itself (not valid HLO, but the hash must end): its second meeting is a reference.
  Computation* b1 = m->FindComputation("b1");
  ASSERT_NE(b1, nullptr);
  Instruction* n = b1->root();
  n->opcode = Opcode::kCall;
  n->called_computations = {b1};
  const Instruction* shared = m->entry()->FindInstruction("shared");
  EXPECT_EQ(UnitFingerprint(*shared), UnitFingerprint(*shared));
  EXPECT_NE(UnitFingerprint(*shared), Fp(*m, "two"));
}

// Fingerprints are cache keys kept across runs, machines and opprobe versions (the local cache, Redis, an HTTP cache):
// under one scheme a unit's fingerprint never changes. A change to the hashing that changes any value here must bump
// kFingerprintScheme (hlo/fingerprint.h) and pin the new scheme's values.
TEST(HloFingerprintTest, ValuesArePinnedForTheirScheme) {
  ASSERT_EQ(kFingerprintScheme, "structural-2") << "a new scheme: pin its values below";
  auto m = ParseUnit(kModule);
  EXPECT_EQ(Fp(*m, "r1"), "24d9befd2b7cb231");
  EXPECT_EQ(Fp(*m, "x"), "e463168351af84db");
  EXPECT_EQ(Fp(*m, "same"), "be060ed24968ac0d");
  EXPECT_EQ(Fp(*m, "layout"), "da7ea35dda1d5f41");
  EXPECT_EQ(Fp(*m, "c1"), "05baa9f4057af3ed");
}

}  // namespace
}  // namespace opprobe::hlo
