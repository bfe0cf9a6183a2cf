// The compiled region loops (hlo/evaluator/region.h, compiled_loops.cpp): which called computations are
// recognised, and that reduce, reduce-window and select-and-scatter give bit-identical results (a NaN
// matching any NaN) with EvaluatorOptions::compiled_regions on and off, on inputs full of ties, NaNs,
// signed zeros and infinities.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "hlo/evaluator/region.h"
#include "hlo/printer.h"
#include "tests/hlo/evaluator_test_util.h"

namespace opprobe::hlo {
namespace {

using eval::PlanReducer;
using eval::PlanSelect;
using eval::RegionPlan;
using Kind = RegionPlan::Kind;
using PT = PrimitiveType;

// A literal of `shape`. With `specials`, half its floats come from a small set of values, so that ties, NaNs,
// -0 and infinities are common; the others (all of them without `specials`) are uniform in [-4, 4) with every
// mantissa bit, so that sums depend on the order and on rounding. Integers are small, so ties are common.
Literal Nasty(const Shape& shape, uint64_t seed, bool specials) {
  if (shape.IsTuple()) {
    std::vector<Literal> elems;
    for (size_t i = 0; i < shape.tuple_shapes().size(); ++i)
      elems.push_back(Nasty(shape.tuple_shapes()[i], seed + i, specials));
    return Literal::Tuple(std::move(elems));
  }
  Literal l(shape);
  std::mt19937_64 rng(seed);
  const double floats[] = {-1, 0, -0.0, 1, 2, 0.5, NAN, INFINITY, -INFINITY, 3};
  PT t = shape.element_type();
  for (int64_t i = 0; i < l.element_count(); ++i) {
    uint64_t r = rng();
    if (t == PT::PRED) l.SetFromInt64(i, static_cast<int64_t>(r & 1));
    else if (IsFloatingPoint(t))
      l.SetFromDouble(i, specials && r % 20 < 10 ? floats[r % 10] : static_cast<double>(r >> 11) * 0x1p-53 * 8 - 4);
    else if (IsUnsignedInteger(t)) l.SetFromInt64(i, static_cast<int64_t>(r % 4));
    else l.SetFromInt64(i, static_cast<int64_t>(r % 5) - 2);
  }
  return l;
}

// Whether the float of `bytes` bytes at p is a NaN.
bool IsNaNBits(const uint8_t* p, int bytes, PT t) {
  if (bytes == 8) {
    double d;
    std::memcpy(&d, p, 8);
    return std::isnan(d);
  }
  if (bytes == 4) {
    float f;
    std::memcpy(&f, p, 4);
    return std::isnan(f);
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return t == PT::BF16 ? (h & 0x7f80) == 0x7f80 && (h & 0x7f) : (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}

// The same shape and the same bits, except that a NaN matches any NaN: C++ leaves the payload and sign of a
// NaN that an operation produces or propagates open (the compiler may commute `a + b`), so they can differ
// between two compiled copies of the same expression.
bool SameBits(const Literal& a, const Literal& b) {
  if (!(a.shape() == b.shape())) return false;
  if (a.shape().IsTuple()) {
    for (size_t i = 0; i < a.tuple_elements().size(); ++i)
      if (!SameBits(a.tuple_elements()[i], b.tuple_elements()[i])) return false;
    return true;
  }
  PT t = a.shape().element_type();
  if (!IsFloatingPoint(t) && !IsComplex(t)) return a.data() == b.data();
  int part = IsComplex(t) ? ByteWidth(t) / 2 : ByteWidth(t);
  for (size_t i = 0; i < a.data().size(); i += static_cast<size_t>(part)) {
    const uint8_t *x = a.data().data() + i, *y = b.data().data() + i;
    if (IsNaNBits(x, part, t) && IsNaNBits(y, part, t)) continue;
    if (std::memcmp(x, y, static_cast<size_t>(part)) != 0) return false;
  }
  return true;
}

// Evaluates `text` with compiled regions on and off on `seeds` sets of arguments (even seeds with special
// values, odd ones without); both must give the same bits (or the same error).
void ExpectBothPathsAgree(const std::string& text, int seeds = 4) {
  auto m = ParseModule(text, "test.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  for (int s = 0; s < seeds; ++s) {
    std::vector<Literal> args;
    for (const Instruction* p : (*m)->entry()->parameters())
      args.push_back(
          Nasty(p->shape, static_cast<uint64_t>(s) * 7919 + static_cast<uint64_t>(p->parameter_number), s % 2 == 0));
    EvaluatorOptions on, off;
    off.compiled_regions = false;
    auto a = Evaluate(**m, args, on);
    auto b = Evaluate(**m, args, off);
    ASSERT_EQ(a.ok(), b.ok()) << (a.ok() ? b.status().message() : a.status().message());
    if (!a.ok()) {
      EXPECT_EQ(a.status().message(), b.status().message());
      continue;
    }
    EXPECT_TRUE(SameBits(*a, *b)) << "seed " << s << "\ncompiled: " << a->ValueToString()
                                  << "\ngeneric:  " << b->ValueToString() << "\n"
                                  << text;
  }
}

std::string Binary(const std::string& name, const std::string& op, const std::string& t, bool swap = false) {
  return fmt::format("{0} {{\n  a = {2}[] parameter(0)\n  b = {2}[] parameter(1)\n  ROOT r = {2}[] {1}({3})\n}}\n\n",
                     name, op, t, swap ? "b, a" : "a, b");
}

// opprobe's own argmax (analyzer/lowering/pooling.cpp): larger value, lower index on ties, NaN wins.
std::string OpprobeArgmax(const std::string& vt, const std::string& it) {
  return fmt::format(
      "argmax {{\n  v1 = {0}[] parameter(0)\n  i1 = {1}[] parameter(1)\n  v2 = {0}[] parameter(2)\n"
      "  i2 = {1}[] parameter(3)\n  better = pred[] compare(v1, v2), direction=GT\n"
      "  eq = pred[] compare(v1, v2), direction=EQ\n  lower = pred[] compare(i1, i2), direction=LT\n"
      "  tie = pred[] and(eq, lower)\n  pick0 = pred[] or(better, tie)\n"
      "  nan1 = pred[] compare(v1, v1), direction=NE\n  nan2 = pred[] compare(v2, v2), direction=NE\n"
      "  not2 = pred[] not(nan2)\n  either = pred[] or(not2, lower)\n  take1 = pred[] and(nan1, either)\n"
      "  keep = pred[] and(not2, pick0)\n  pick = pred[] or(take1, keep)\n"
      "  v = {0}[] select(pick, v1, v2)\n  i = {1}[] select(pick, i1, i2)\n"
      "  ROOT t = ({0}[], {1}[]) tuple(v, i)\n}}\n\n",
      vt, it);
}

// JAX's argmin (lax._compute_argminmax): separate predicates for the value and the index.
std::string JaxArgmin(const std::string& vt, const std::string& it) {
  return fmt::format(
      "argmin {{\n  x = {0}[] parameter(0)\n  xi = {1}[] parameter(1)\n  y = {0}[] parameter(2)\n"
      "  yi = {1}[] parameter(3)\n  lt = pred[] compare(x, y), direction=LT\n"
      "  xnan = pred[] compare(x, x), direction=NE\n  pv = pred[] or(lt, xnan)\n"
      "  eq = pred[] compare(x, y), direction=EQ\n  ilt = pred[] compare(xi, yi), direction=LT\n"
      "  tie = pred[] and(eq, ilt)\n  pi = pred[] or(pv, tie)\n"
      "  v = {0}[] select(pv, x, y)\n  i = {1}[] select(pi, xi, yi)\n  ROOT t = ({0}[], {1}[]) tuple(v, i)\n}}\n\n",
      vt, it);
}

// PyTorch/XLA's max-with-index (CreateMinMaxComputation): GE picks, ties take the smaller index via minimum.
std::string TorchXlaMax(const std::string& vt, const std::string& it) {
  return fmt::format(
      "maxidx {{\n  lv = {0}[] parameter(0)\n  li = {1}[] parameter(1)\n  rv = {0}[] parameter(2)\n"
      "  ri = {1}[] parameter(3)\n  ge = pred[] compare(lv, rv), direction=GE\n"
      "  v = {0}[] select(ge, lv, rv)\n  i0 = {1}[] select(ge, li, ri)\n"
      "  eq = pred[] compare(lv, rv), direction=EQ\n  tid = {1}[] minimum(li, ri)\n"
      "  i = {1}[] select(eq, tid, i0)\n  ROOT t = ({0}[], {1}[]) tuple(v, i)\n}}\n\n",
      vt, it);
}

std::string Mod(const std::string& comps, const std::string& params, const std::string& root) {
  return "HloModule t\n\n" + comps + "ENTRY main {\n" + params + "\n" + root + "\n}\n";
}

const Computation* Called(const Module& m, const std::string& name) {
  for (const auto& c : m.computations())
    if (c->name() == name) return c.get();
  return nullptr;
}

TEST(EvaluatorCompiled, RecognisesRegionsByStructure) {
  std::string comps = Binary("sum", "add", "f32") + Binary("rmax", "maximum", "f32", true) +
                      Binary("sub", "subtract", "f32") + OpprobeArgmax("f32", "u32") + JaxArgmin("f64", "s32") +
                      TorchXlaMax("bf16", "s64") +
                      "ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = pred[] compare(a, b), "
                      "direction=GE\n}\n\n"
                      "sumsq {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  m = f32[] multiply(b, b)\n"
                      "  ROOT s = f32[] add(a, m)\n}\n\n"
                      "first {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  ROOT r = s32[] copy(a)\n}\n\n";
  auto m = ParseModule(Mod(comps, "x = f32[] parameter(0)", "ROOT r = f32[] copy(x)"), "t.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto plan = [&](const char* name, std::vector<PT> types) { return PlanReducer(Called(**m, name), types); };
  EXPECT_EQ(plan("sum", {PT::F32}).kind, Kind::kBinary);
  EXPECT_EQ(plan("sum", {PT::F32}).op, Opcode::kAdd);
  EXPECT_FALSE(plan("sum", {PT::F32}).swap);
  EXPECT_EQ(plan("rmax", {PT::F32}).kind, Kind::kBinary);
  EXPECT_TRUE(plan("rmax", {PT::F32}).swap);
  EXPECT_EQ(plan("sum", {PT::F64}).kind, Kind::kGeneric);  // parameters of another type: the generic path's error
  EXPECT_EQ(plan("sub", {PT::F32}).kind, Kind::kGeneric);
  EXPECT_EQ(plan("sumsq", {PT::F32}).kind, Kind::kGeneric);
  EXPECT_EQ(plan("first", {PT::S32}).kind, Kind::kGeneric);  // copy(a) is not a selection
  EXPECT_EQ(plan("argmax", {PT::F32, PT::U32}).kind, Kind::kSelection);
  EXPECT_EQ(plan("argmin", {PT::F64, PT::S32}).kind, Kind::kSelection);
  EXPECT_EQ(plan("maxidx", {PT::BF16, PT::S64}).kind, Kind::kSelection);
  EXPECT_EQ(plan("argmax", {PT::F32, PT::S32}).kind, Kind::kGeneric);
  EXPECT_EQ(PlanSelect(Called(**m, "ge"), PT::F32).kind, Kind::kSelection);
  EXPECT_EQ(PlanSelect(Called(**m, "sum"), PT::F32).kind, Kind::kGeneric);  // returns f32, not pred
}

TEST(EvaluatorCompiled, ReduceBinaryAgreesWithGeneric) {
  for (const char* t : {"f32", "f64", "f16", "bf16", "s32", "u8", "s64", "pred", "c64"}) {
    bool pred = std::string(t) == "pred", cx = std::string(t) == "c64";
    std::vector<std::string> ops = {"add", "multiply"};
    if (!cx) ops.insert(ops.end(), {"maximum", "minimum"});
    if (pred || std::string(t)[0] == 's' || std::string(t)[0] == 'u') ops.insert(ops.end(), {"and", "or", "xor"});
    for (const std::string& op : ops)
      for (bool swap : {false, true})
        for (const char* dims : {"{1}", "{0}", "{0,2}", "{1,2}", "{}", "{0,1,2}"}) {
          std::string shape = fmt::format("{}[3,4,5]", t);
          std::string out = std::string(dims) == "{1}"     ? "[3,5]"
                            : std::string(dims) == "{0}"   ? "[4,5]"
                            : std::string(dims) == "{0,2}" ? "[4]"
                            : std::string(dims) == "{1,2}" ? "[3]"
                            : std::string(dims) == "{}"    ? "[3,4,5]"
                                                           : "[]";
          SCOPED_TRACE(fmt::format("{} {} swap={} dims={}", t, op, swap, dims));
          ExpectBothPathsAgree(
              Mod(Binary("f", op, t, swap), fmt::format("x = {} parameter(0)\nz = {}[] parameter(1)", shape, t),
                  fmt::format("ROOT r = {}{} reduce(x, z), dimensions={}, to_apply=f", t, out, dims)),
              2);
        }
  }
}

TEST(EvaluatorCompiled, ReduceSelectionAgreesWithGeneric) {
  struct Case {
    std::string comp, name, vt, it;
  };
  for (const Case& c :
       {Case{OpprobeArgmax("f32", "s32"), "argmax", "f32", "s32"},
        Case{OpprobeArgmax("f64", "s64"), "argmax", "f64", "s64"},
        Case{JaxArgmin("f32", "s32"), "argmin", "f32", "s32"}, Case{TorchXlaMax("f32", "s64"), "maxidx", "f32", "s64"},
        Case{TorchXlaMax("s32", "u32"), "maxidx", "s32", "u32"},
        Case{TorchXlaMax("bf16", "s32"), "maxidx", "bf16", "s32"}})
    for (const char* dims : {"{1}", "{0}"}) {
      SCOPED_TRACE(c.name + " " + c.vt + " " + dims);
      std::string params = fmt::format(
          "x = {0}[6,7] parameter(0)\ni = {1}[6,7] parameter(1)\n"
          "zv = {0}[] parameter(2)\nzi = {1}[] parameter(3)",
          c.vt, c.it);
      std::string out = std::string(dims) == "{1}" ? "[6]" : "[7]";
      ExpectBothPathsAgree(
          Mod(c.comp, params,
              fmt::format("ROOT r = ({0}{2}, {1}{2}) reduce(x, i, zv, zi), dimensions={3}, to_apply={4}", c.vt, c.it,
                          out, dims, c.name)));
    }
  // A selection whose results trade places (each takes the other's accumulator) and a constant.
  std::string swapper =
      "swp {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
      "  k = s32[] constant(7)\n  lt = pred[] compare(c, d), direction=LT\n  x = s32[] select(lt, b, a)\n"
      "  y = s32[] select(lt, a, k)\n  ROOT t = (s32[], s32[]) tuple(x, y)\n}\n\n";
  ExpectBothPathsAgree(Mod(swapper, "x = s32[5,3] parameter(0)\ny = s32[5,3] parameter(1)\nz = s32[] parameter(2)",
                           "ROOT r = (s32[3], s32[3]) reduce(x, y, z, z), dimensions={0}, to_apply=swp"));
  // maximum / minimum of parameters and pred logic on pred parameters.
  std::string mm =
      "mm {\n  a = f32[] parameter(0)\n  p = pred[] parameter(1)\n  b = f32[] parameter(2)\n  q = pred[] parameter(3)\n"
      "  v = f32[] minimum(b, a)\n  x = pred[] xor(p, q)\n  ROOT t = (f32[], pred[]) tuple(v, x)\n}\n\n";
  ExpectBothPathsAgree(
      Mod(mm, "x = f32[4,6] parameter(0)\ny = pred[4,6] parameter(1)\nz = f32[] parameter(2)\nw = pred[] parameter(3)",
          "ROOT r = (f32[4], pred[4]) reduce(x, y, z, w), dimensions={1}, to_apply=mm"));
}

TEST(EvaluatorCompiled, ReduceWindowAgreesWithGeneric) {
  const char* windows[] = {
      "size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1",
      "size=1x2x2x3 stride=1x1x1x2 pad=0_0x1_0x0_2x2_0 rhs_dilate=1x1x2x1",
      "size=1x1x2x2 lhs_dilate=1x1x2x2 pad=0_0x0_0x1_1x0_1",
      "size=2x1x3x1 stride=1x1x3x1 rhs_reversal=1x0x1x0",
      "size=1x1x9x9 pad=0_0x0_0x1_1x2_2",  // windows larger than the operand
  };
  for (const char* w : windows) {
    SCOPED_TRACE(w);
    for (const char* t : {"f32", "f16", "s32"})
      for (const char* op : {"add", "maximum", "minimum"})
        for (bool swap : {false, true}) {
          auto m = ParseModule(
              Mod(Binary("f", op, t, swap), fmt::format("x = {0}[2,3,7,8] parameter(0)\nz = {0}[] parameter(1)", t),
                  fmt::format("ROOT r = reduce-window(x, z), window={{{}}}, to_apply=f", w)),
              "t.hlo");
          // The parser infers the result shape when it is left out; print the module back so that both
          // evaluations see the same text.
          ASSERT_TRUE(m.ok()) << m.status().message();
          ExpectBothPathsAgree(ToString(**m), 2);
        }
    auto m = ParseModule(Mod(OpprobeArgmax("f32", "u32"),
                             "x = f32[2,3,7,8] parameter(0)\ni = u32[2,3,7,8] parameter(1)\nzv = f32[] parameter(2)\n"
                             "zi = u32[] parameter(3)",
                             fmt::format("ROOT r = reduce-window(x, i, zv, zi), window={{{}}}, to_apply=argmax", w)),
                         "t.hlo");
    ASSERT_TRUE(m.ok()) << m.status().message();
    ExpectBothPathsAgree(ToString(**m));
  }
  // Rank 0: one window of one element.
  ExpectBothPathsAgree(Mod(Binary("f", "add", "f32"), "x = f32[] parameter(0)\nz = f32[] parameter(1)",
                           "ROOT r = f32[] reduce-window(x, z), window={}, to_apply=f"));
}

TEST(EvaluatorCompiled, MaxPoolWithIndicesIsRecognisedAndExact) {
  // max_pool2d_with_indices as opprobe lowers it: (value, flat index) through the argmax reducer.
  std::string params =
      "x = f32[2,3,9,9] parameter(0)\nio = u32[6,81] iota(), iota_dimension=1\ni = u32[2,3,9,9] reshape(io)\n"
      "zv = f32[] constant(-inf)\nzi = u32[] constant(4294967295)";
  ExpectBothPathsAgree(Mod(OpprobeArgmax("f32", "u32"), params,
                           "ROOT r = (f32[2,3,5,5], u32[2,3,5,5]) reduce-window(x, i, zv, zi), "
                           "window={size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1}, to_apply=argmax"),
                       8);
  // A known answer: ties take the lower index, NaN wins.
  std::string text = Mod(OpprobeArgmax("f32", "s32"),
                         "x = f32[1,6] constant({ {1, 5, 5, nan, 2, 2} })\ni = s32[1,6] iota(), iota_dimension=1\n"
                         "zv = f32[] constant(-inf)\nzi = s32[] constant(-1)",
                         "ROOT r = (f32[1,3], s32[1,3]) reduce-window(x, i, zv, zi), window={size=1x2 stride=1x2}, "
                         "to_apply=argmax");
  EXPECT_EQ(testing::EvalStr(text), "({ {5, nan, 2} }, { {1, 3, 4} })");
}

TEST(EvaluatorCompiled, SelectAndScatterAgreesWithGeneric) {
  std::string sels[] = {
      "sel {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = pred[] compare(a, b), direction=GE\n}\n\n",
      "sel {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = pred[] compare(b, a), direction=LT, "
      "type=TOTALORDER\n}\n\n",
      "sel {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  g = pred[] compare(a, b), direction=GT\n"
      "  n = pred[] compare(a, a), direction=NE\n  ROOT c = pred[] or(g, n)\n}\n\n",
  };
  for (const std::string& sel : sels)
    for (const char* scat : {"add", "maximum"})
      for (const char* w : {"size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1", "size=1x2x2x2 stride=1x1x1x1"}) {
        SCOPED_TRACE(sel + scat + w);
        auto probe =
            ParseModule(Mod(Binary("f", "maximum", "f32"), "x = f32[2,3,7,8] parameter(0)\nz = f32[] parameter(1)",
                            fmt::format("ROOT r = reduce-window(x, z), window={{{}}}, to_apply=f", w)),
                        "t.hlo");
        ASSERT_TRUE(probe.ok()) << probe.status().message();
        std::string src = (*probe)->entry()->root()->shape.ToString(false);
        ExpectBothPathsAgree(
            Mod(sel + Binary("scat", scat, "f32"),
                fmt::format("x = f32[2,3,7,8] parameter(0)\ns = {} parameter(1)\nz = f32[] parameter(2)", src),
                fmt::format("ROOT r = f32[2,3,7,8] select-and-scatter(x, s, z), window={{{}}}, select=sel, "
                            "scatter=scat",
                            w)));
      }
}

TEST(EvaluatorCompiled, UnrecognisedRegionsStayOnTheGenericPath) {
  std::string sumsq =
      "sumsq {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  m = f32[] multiply(b, b)\n"
      "  ROOT s = f32[] add(a, m)\n}\n\n";
  ExpectBothPathsAgree(Mod(sumsq, "x = f32[4,5] parameter(0)\nz = f32[] parameter(1)",
                           "ROOT r = f32[4] reduce(x, z), dimensions={1}, to_apply=sumsq"));
  // A region whose result type does not fit never reaches either path: the verifier refuses the module.
  std::string bad =
      "bad {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = pred[] compare(a, b), direction=GT\n}\n\n";
  auto m = ParseModule(Mod(bad, "x = f32[4,5] parameter(0)\nz = f32[] parameter(1)",
                           "ROOT r = f32[4] reduce(x, z), dimensions={1}, to_apply=bad"),
                       "test.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("reduce: reducer bad returns pred[], the values are f32"), std::string::npos)
      << m.status().message();
}

}  // namespace
}  // namespace opprobe::hlo
