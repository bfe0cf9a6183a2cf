// The `interp` backend's verdicts: supported when a unit evaluates, unsupported with the reason when
// it cannot be evaluated (not implemented, inconsistent shapes, too large), never a crash.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include "compiler_probe/interp/interp_backend.h"
#include "compiler_probe/registry.h"
#include "hlo/builder.h"
#include "hlo/probe_unit.h"

namespace opprobe::compiler_probe {
namespace {

using hlo::PrimitiveType;
using hlo::Shape;

std::unique_ptr<Backend> MakeInterp() {
  auto b = Registry::Builtin().Create("interp");
  EXPECT_TRUE(b.ok()) << b.status().message();
  return std::move(b).value();
}

std::unique_ptr<hlo::Module> UnitOf(hlo::Builder& b, hlo::Instruction* root) {
  auto m = b.Build(root);
  return hlo::MakeProbeModule(*m->entry()->root());
}

TEST(InterpBackend, IdentityAndVersion) {
  auto interp = MakeInterp();
  EXPECT_EQ(interp->id(), "interp");
  EXPECT_NE(interp->version().find(std::string(hlo::kEvaluatorRevision)), std::string::npos);
  EXPECT_EQ(Registry::Builtin().Create("interp:extra").status().code(), ErrorCode::kInvalidInput);
}

TEST(InterpBackend, SupportedWhenItEvaluates) {
  hlo::Builder b("add");
  auto* x = b.Parameter(0, Shape::Array(PrimitiveType::F32, {4, 3}));
  auto* y = b.Parameter(1, Shape::Array(PrimitiveType::F32, {4, 3}));
  auto unit = UnitOf(b, b.Binary(hlo::Opcode::kAdd, x, y));
  Verdict v = MakeInterp()->probe(*unit);
  EXPECT_EQ(v.kind, Verdict::Kind::kSupported) << v.reason;
  EXPECT_GE(v.seconds, 0.0);
}

TEST(InterpBackend, ConvolutionUnitIsSupported) {
  hlo::Builder b("conv");
  auto* x = b.Parameter(0, Shape::Array(PrimitiveType::F32, {2, 3, 8, 8}));
  auto* w = b.Parameter(1, Shape::Array(PrimitiveType::F32, {4, 3, 3, 3}));
  hlo::Window win;
  for (int i = 0; i < 2; ++i) win.dimensions.push_back({3, 1, 1, 1, 1, 1, false});
  hlo::ConvolutionDimensionNumbers dn;
  dn.input_spatial_dimensions = {2, 3};
  dn.kernel_spatial_dimensions = {2, 3};
  dn.output_spatial_dimensions = {2, 3};
  auto unit = UnitOf(b, b.Convolution(x, w, win, dn));
  ASSERT_TRUE(b.ok()) << b.status().message();
  Verdict v = MakeInterp()->probe(*unit);
  EXPECT_EQ(v.kind, Verdict::Kind::kSupported) << v.reason;
}

TEST(InterpBackend, CustomCallIsUnsupportedNamingTheTarget) {
  hlo::Builder b("cc");
  auto* x = b.Parameter(0, Shape::Array(PrimitiveType::F32, {4}));
  auto unit = UnitOf(b, b.CustomCall({x}, "AwsNeuronGelu", Shape::Array(PrimitiveType::F32, {4})));
  Verdict v = MakeInterp()->probe(*unit);
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_NE(v.reason.find("AwsNeuronGelu"), std::string::npos) << v.reason;
}

TEST(InterpBackend, UnknownOpcodeIsUnsupportedNamingIt) {
  hlo::Builder b("unk");
  auto* x = b.Parameter(0, Shape::Array(PrimitiveType::F32, {4}));
  auto* c = b.CustomCall({x}, "", Shape::Array(PrimitiveType::F32, {4}));
  c->unknown_opcode = "ragged-all-to-all";
  auto unit = UnitOf(b, c);
  Verdict v = MakeInterp()->probe(*unit);
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_NE(v.reason.find("ragged-all-to-all"), std::string::npos) << v.reason;
}

TEST(InterpBackend, InconsistentShapesAreUnsupported) {
  hlo::Builder b("bad");
  auto* x = b.Parameter(0, Shape::Array(PrimitiveType::F32, {4}));
  auto instr = std::make_unique<hlo::Instruction>();
  instr->opcode = hlo::Opcode::kNegate;
  instr->shape = Shape::Array(PrimitiveType::F32, {5});
  instr->operands = {x};
  auto* neg = b.Add(std::move(instr));
  auto unit = UnitOf(b, neg);
  Verdict v = MakeInterp()->probe(*unit);
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_NE(v.reason.find("inconsistent"), std::string::npos) << v.reason;
}

TEST(InterpBackend, AbsurdSizesAreUnsupportedNotAllocated) {
  hlo::Builder b("huge");
  auto* x = b.Parameter(0, Shape::Array(PrimitiveType::F32, {1 << 20, 1 << 20}));
  auto unit = UnitOf(b, b.Unary(hlo::Opcode::kNegate, x));
  Verdict v = MakeInterp()->probe(*unit);
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_NE(v.reason.find("too large"), std::string::npos) << v.reason;
}

// The process's peak resident memory (KiB).
long PeakKiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

TEST(InterpBackend, ResultBeyondTheProbeBudgetIsUnsupportedAtOnce) {
  // A small input whose result alone (f32[4096,8192], 128 MiB) is past the 64 MiB budget of one probe.
  hlo::Builder b("wide");
  auto* x = b.Parameter(0, Shape::Array(PrimitiveType::F32, {8192}));
  auto unit = UnitOf(b, b.Broadcast(x, {4096, 8192}, {1}));
  auto backend = MakeInterp();
  // "At once": decided from the shapes, before any input or the result is made (the process's peak memory does not
  // grow by the result's 128 MiB; ctest runs each test in a process of its own). Not a wall-time bound.
  const long before = PeakKiB();
  Verdict v = backend->probe(*unit);
  EXPECT_LT(PeakKiB() - before, 32 * 1024) << "the probe made its inputs or its result";
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_NE(v.reason.find("the result"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("64 MiB budget"), std::string::npos) << v.reason;
}

TEST(InterpBackend, InputsAndResultShareTheBudget) {
  // 40 MiB in, 40 MiB out: each fits alone, not together.
  hlo::Builder b("pair");
  auto* x = b.Parameter(0, Shape::Array(PrimitiveType::F32, {10 << 20}));
  auto unit = UnitOf(b, b.Unary(hlo::Opcode::kNegate, x));
  Verdict v = MakeInterp()->probe(*unit);
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
  EXPECT_NE(v.reason.find("budget"), std::string::npos) << v.reason;
  hlo::Builder small("small");
  auto* y = small.Parameter(0, Shape::Array(PrimitiveType::F32, {4 << 20}));
  auto ok = UnitOf(small, small.Unary(hlo::Opcode::kNegate, y));
  EXPECT_EQ(MakeInterp()->probe(*ok).kind, Verdict::Kind::kSupported);
}

TEST(InterpBackend, SeedsFromTheFingerprint) {
  hlo::Builder b1("a"), b2("a");
  auto u1 = UnitOf(b1, b1.Unary(hlo::Opcode::kExp, b1.Parameter(0, Shape::Array(PrimitiveType::F32, {3}))));
  auto u2 = UnitOf(b2, b2.Unary(hlo::Opcode::kExp, b2.Parameter(0, Shape::Array(PrimitiveType::F32, {4}))));
  EXPECT_EQ(interp::SeedFor(*u1), interp::SeedFor(*u1));
  EXPECT_NE(interp::SeedFor(*u1), interp::SeedFor(*u2));
}

TEST(InterpBackend, ModuleWithoutEntryIsUnsupported) {
  hlo::Module m("empty");
  Verdict v = MakeInterp()->probe(m);
  EXPECT_EQ(v.kind, Verdict::Kind::kUnsupported);
}

}  // namespace
}  // namespace opprobe::compiler_probe
