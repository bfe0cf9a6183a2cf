// Elementwise ops with hand-checked values: integer wrap-around and division by zero (XLA's defined
// results), NaN/Inf propagation, compare incl. TOTALORDER, convert saturation, bitcast-convert.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/hlo/evaluator_test_util.h"

namespace opprobe::hlo {
namespace {

using testing::EvalBroken;
using testing::EvalStr;
using testing::EvalText;
using testing::Module;
using testing::Named;

TEST(EvaluatorElementwise, AddsFloats) {
  EXPECT_EQ(EvalStr(Module("a = f32[3]{0} constant({1, 2.5, -3})\n"
                           "b = f32[3]{0} constant({0.5, 0.5, 3})\n"
                           "ROOT r = f32[3]{0} add(a, b)")),
            "{1.5, 3, 0}");
}

TEST(EvaluatorElementwise, IntegerWrapAround) {
  EXPECT_EQ(EvalStr(Module("a = s32[3]{0} constant({2147483647, -2147483648, 100000})\n"
                           "b = s32[3]{0} constant({1, -1, 100000})\n"
                           "ROOT r = s32[3]{0} add(a, b)")),
            "{-2147483648, 2147483647, 200000}");
  EXPECT_EQ(EvalStr(Module("a = s32[2]{0} constant({65536, -2147483648})\n"
                           "b = s32[2]{0} constant({65536, -1})\n"
                           "ROOT r = s32[2]{0} multiply(a, b)")),
            "{0, -2147483648}");
  EXPECT_EQ(EvalStr(Module("a = u8[3]{0} constant({250, 0, 16})\n"
                           "b = u8[3]{0} constant({10, 1, 16})\n"
                           "ROOT r = u8[3]{0} subtract(a, b)")),
            "{240, 255, 0}");
  EXPECT_EQ(EvalStr(Module("a = u16[1]{0} constant({65535})\n"
                           "ROOT r = u16[1]{0} multiply(a, a)")),
            "{1}");
  EXPECT_EQ(EvalStr(Module("a = s8[3]{0} constant({-128, 5, 0})\n"
                           "ROOT r = s8[3]{0} negate(a)")),
            "{-128, -5, 0}");
  EXPECT_EQ(EvalStr(Module("a = s8[2]{0} constant({-128, -3})\n"
                           "ROOT r = s8[2]{0} abs(a)")),
            "{-128, 3}");
}

TEST(EvaluatorElementwise, IntegerDivisionByZeroFollowsXla) {
  // x / 0 = -1, INT_MIN / -1 = INT_MIN, x % 0 = x, INT_MIN % -1 = 0; truncation toward zero.
  EXPECT_EQ(EvalStr(Module("a = s32[5]{0} constant({7, -7, -2147483648, 7, -7})\n"
                           "b = s32[5]{0} constant({0, 0, -1, 2, 2})\n"
                           "ROOT r = s32[5]{0} divide(a, b)")),
            "{-1, -1, -2147483648, 3, -3}");
  EXPECT_EQ(EvalStr(Module("a = s32[5]{0} constant({7, -7, -2147483648, 7, -7})\n"
                           "b = s32[5]{0} constant({0, 0, -1, 2, 2})\n"
                           "ROOT r = s32[5]{0} remainder(a, b)")),
            "{7, -7, 0, 1, -1}");
  EXPECT_EQ(EvalStr(Module("a = u32[2]{0} constant({7, 9})\n"
                           "b = u32[2]{0} constant({0, 2})\n"
                           "ROOT r = u32[2]{0} divide(a, b)")),
            "{4294967295, 4}");
  EXPECT_EQ(EvalStr(Module("a = u32[2]{0} constant({7, 9})\n"
                           "b = u32[2]{0} constant({0, 2})\n"
                           "ROOT r = u32[2]{0} remainder(a, b)")),
            "{7, 1}");
}

TEST(EvaluatorElementwise, FloatDivisionAndNaNInfPropagation) {
  EXPECT_EQ(EvalStr(Module("a = f32[4]{0} constant({1, -1, 0, inf})\n"
                           "b = f32[4]{0} constant({0, 0, 0, inf})\n"
                           "ROOT r = f32[4]{0} divide(a, b)")),
            "{inf, -inf, nan, nan}");
  EXPECT_EQ(EvalStr(Module("a = f32[4]{0} constant({nan, 1, -inf, 2})\n"
                           "b = f32[4]{0} constant({1, nan, 3, inf})\n"
                           "ROOT r = f32[4]{0} maximum(a, b)")),
            "{nan, nan, 3, inf}");
  EXPECT_EQ(EvalStr(Module("a = f32[4]{0} constant({nan, 1, -inf, 2})\n"
                           "b = f32[4]{0} constant({1, nan, 3, inf})\n"
                           "ROOT r = f32[4]{0} minimum(a, b)")),
            "{nan, nan, -inf, 2}");
  EXPECT_EQ(EvalStr(Module("a = f32[3]{0} constant({inf, nan, -inf})\n"
                           "b = f32[3]{0} constant({1, 1, inf})\n"
                           "ROOT r = f32[3]{0} add(a, b)")),
            "{inf, nan, nan}");
  EXPECT_EQ(EvalStr(Module("a = bf16[2]{0} constant({nan, 1})\n"
                           "b = bf16[2]{0} constant({2, inf})\n"
                           "ROOT r = bf16[2]{0} multiply(a, b)")),
            "{nan, inf}");
}

TEST(EvaluatorElementwise, UnaryMath) {
  EXPECT_EQ(EvalStr(Module("a = f32[4]{0} constant({0, 1, -1, nan})\n"
                           "ROOT r = f32[4]{0} exponential(a)")),
            "{1, 2.7182817, 0.36787945, nan}");
  EXPECT_EQ(EvalStr(Module("a = f32[4]{0} constant({0, -0, -2, 4})\n"
                           "ROOT r = f32[4]{0} sqrt(a)")),
            "{0, -0, nan, 2}");
  EXPECT_EQ(EvalStr(Module("a = f32[3]{0} constant({0, -1, 4})\n"
                           "ROOT r = f32[3]{0} rsqrt(a)")),
            "{inf, nan, 0.5}");
  EXPECT_EQ(EvalStr(Module("a = f32[3]{0} constant({0, -1, 1})\n"
                           "ROOT r = f32[3]{0} log(a)")),
            "{-inf, nan, 0}");
  EXPECT_EQ(EvalStr(Module("a = f32[5]{0} constant({0.5, 1.5, 2.5, -0.5, -2.5})\n"
                           "ROOT r = f32[5]{0} round-nearest-even(a)")),
            "{0, 2, 2, -0, -2}");
  EXPECT_EQ(EvalStr(Module("a = f32[5]{0} constant({0.5, 1.5, 2.5, -0.5, -2.5})\n"
                           "ROOT r = f32[5]{0} round-nearest-afz(a)")),
            "{1, 2, 3, -1, -3}");
  EXPECT_EQ(EvalStr(Module("a = f32[4]{0} constant({-2, -0, 0, nan})\n"
                           "ROOT r = f32[4]{0} sign(a)")),
            "{-1, -0, 0, nan}");
  EXPECT_EQ(EvalStr(Module("a = f32[3]{0} constant({0, 1e-10, -1})\n"
                           "ROOT r = f32[3]{0} exponential-minus-one(a)")),
            "{0, 1e-10, -0.63212055}");
  EXPECT_EQ(EvalStr(Module("a = f32[3]{0} constant({0, 1e-10, -1})\n"
                           "ROOT r = f32[3]{0} log-plus-one(a)")),
            "{0, 1e-10, -inf}");
  EXPECT_EQ(EvalStr(Module("a = f32[3]{0} constant({-8, 27, 0})\n"
                           "ROOT r = f32[3]{0} cbrt(a)")),
            "{-2, 3, 0}");
  EXPECT_EQ(EvalStr(Module("a = f32[3]{0} constant({0, inf, -inf})\n"
                           "ROOT r = f32[3]{0} logistic(a)")),
            "{0.5, 1, 0}");
  EXPECT_EQ(EvalStr(Module("a = f32[3]{0} constant({0, inf, -inf})\n"
                           "ROOT r = f32[3]{0} erf(a)")),
            "{0, 1, -1}");
  EXPECT_EQ(EvalStr(Module("a = f32[4]{0} constant({1, inf, -inf, nan})\n"
                           "ROOT r = pred[4]{0} is-finite(a)")),
            "{true, false, false, false}");
  EXPECT_EQ(EvalStr(Module("a = f32[3]{0} constant({1.5, -1.5, -0.2})\n"
                           "ROOT r = f32[3]{0} floor(a)")),
            "{1, -2, -1}");
  EXPECT_EQ(EvalStr(Module("a = f32[2]{0} constant({0, 1})\n"
                           "ROOT r = f32[2]{0} tanh(a)")),
            "{0, 0.7615942}");
}

TEST(EvaluatorElementwise, BinaryMath) {
  EXPECT_EQ(EvalStr(Module("a = f32[4]{0} constant({2, 0, -8, 1})\n"
                           "b = f32[4]{0} constant({10, 0, 0.33333334, nan})\n"
                           "ROOT r = f32[4]{0} power(a, b)")),
            "{1024, 1, nan, 1}");
  EXPECT_EQ(EvalStr(Module("a = s32[5]{0} constant({2, 1, 2, -1, 3})\n"
                           "b = s32[5]{0} constant({10, -5, -1, 3, 0})\n"
                           "ROOT r = s32[5]{0} power(a, b)")),
            "{1024, 1, 0, -1, 1}");
  EXPECT_EQ(EvalStr(Module("a = f32[3]{0} constant({1, 0, -1})\n"
                           "b = f32[3]{0} constant({0, -1, -1})\n"
                           "ROOT r = f32[3]{0} atan2(a, b)")),
            "{1.5707964, 3.1415927, -2.3561945}");
  EXPECT_EQ(EvalStr(Module("a = f32[3]{0} constant({5.5, -5.5, 1})\n"
                           "b = f32[3]{0} constant({2, 2, 0})\n"
                           "ROOT r = f32[3]{0} remainder(a, b)")),
            "{1.5, -1.5, nan}");
}

TEST(EvaluatorElementwise, ShiftsAndBitOps) {
  EXPECT_EQ(EvalStr(Module("a = s32[4]{0} constant({1, 1, -8, 5})\n"
                           "b = s32[4]{0} constant({31, 32, 1, -1})\n"
                           "ROOT r = s32[4]{0} shift-left(a, b)")),
            "{-2147483648, 0, -16, 0}");
  EXPECT_EQ(EvalStr(Module("a = s32[3]{0} constant({-8, -8, 8})\n"
                           "b = s32[3]{0} constant({1, 40, 40})\n"
                           "ROOT r = s32[3]{0} shift-right-arithmetic(a, b)")),
            "{-4, -1, 0}");
  EXPECT_EQ(EvalStr(Module("a = s32[2]{0} constant({-8, -8})\n"
                           "b = s32[2]{0} constant({28, 32})\n"
                           "ROOT r = s32[2]{0} shift-right-logical(a, b)")),
            "{15, 0}");
  EXPECT_EQ(EvalStr(Module("a = u8[3]{0} constant({0, 255, 16})\n"
                           "ROOT r = u8[3]{0} popcnt(a)")),
            "{0, 8, 1}");
  EXPECT_EQ(EvalStr(Module("a = s32[3]{0} constant({0, 1, -1})\n"
                           "ROOT r = s32[3]{0} count-leading-zeros(a)")),
            "{32, 31, 0}");
  EXPECT_EQ(EvalStr(Module("a = pred[2]{0} constant({true, false})\n"
                           "ROOT r = pred[2]{0} not(a)")),
            "{false, true}");
  EXPECT_EQ(EvalStr(Module("a = s8[2]{0} constant({5, 0})\n"
                           "ROOT r = s8[2]{0} not(a)")),
            "{-6, -1}");
  EXPECT_EQ(EvalStr(Module("a = u8[1]{0} constant({12})\n"
                           "b = u8[1]{0} constant({10})\n"
                           "x = u8[1]{0} xor(a, b)\n"
                           "o = u8[1]{0} or(a, b)\n"
                           "n = u8[1]{0} and(a, b)\n"
                           "ROOT r = (u8[1]{0}, u8[1]{0}, u8[1]{0}) tuple(x, o, n)")),
            "({6}, {14}, {8})");
}

TEST(EvaluatorElementwise, CompareAndTotalOrder) {
  EXPECT_EQ(EvalStr(Module("a = f32[4]{0} constant({nan, 1, -0, 2})\n"
                           "b = f32[4]{0} constant({nan, 2, 0, 2})\n"
                           "ROOT r = pred[4]{0} compare(a, b), direction=LT")),
            "{false, true, false, false}");
  EXPECT_EQ(EvalStr(Module("a = f32[4]{0} constant({nan, 1, -0, 2})\n"
                           "b = f32[4]{0} constant({nan, 2, 0, 2})\n"
                           "ROOT r = pred[4]{0} compare(a, b), direction=NE")),
            "{true, true, false, false}");
  EXPECT_EQ(EvalStr(Module("a = f32[4]{0} constant({nan, 1, -0, -nan})\n"
                           "b = f32[4]{0} constant({inf, 2, 0, -inf})\n"
                           "ROOT r = pred[4]{0} compare(a, b), direction=LT, type=TOTALORDER")),
            "{false, true, true, true}");
  EXPECT_EQ(EvalStr(Module("a = u32[2]{0} constant({4294967295, 1})\n"
                           "b = u32[2]{0} constant({1, 1})\n"
                           "ROOT r = pred[2]{0} compare(a, b), direction=GT")),
            "{true, false}");
  EXPECT_EQ(EvalStr(Module("a = s32[2]{0} constant({-1, 1})\n"
                           "b = s32[2]{0} constant({1, 1})\n"
                           "ROOT r = pred[2]{0} compare(a, b), direction=GE")),
            "{false, true}");
}

TEST(EvaluatorElementwise, SelectAndClamp) {
  EXPECT_EQ(EvalStr(Module("p = pred[3]{0} constant({true, false, true})\n"
                           "a = s32[3]{0} constant({1, 2, 3})\n"
                           "b = s32[3]{0} constant({-1, -2, -3})\n"
                           "ROOT r = s32[3]{0} select(p, a, b)")),
            "{1, -2, 3}");
  EXPECT_EQ(EvalStr(Module("lo = f32[] constant(0)\n"
                           "x = f32[4]{0} constant({-1, 0.5, 7, nan})\n"
                           "hi = f32[] constant(6)\n"
                           "ROOT r = f32[4]{0} clamp(lo, x, hi)")),
            "{0, 0.5, 6, nan}");
}

TEST(EvaluatorElementwise, ConvertSaturatesAndRounds) {
  EXPECT_EQ(EvalStr(Module("a = f32[5]{0} constant({1.9, -1.9, 1e10, -1e10, nan})\n"
                           "ROOT r = s32[5]{0} convert(a)")),
            "{1, -1, 2147483647, -2147483648, 0}");
  EXPECT_EQ(EvalStr(Module("a = s32[3]{0} constant({300, -1, 255})\n"
                           "ROOT r = u8[3]{0} convert(a)")),
            "{44, 255, 255}");
  EXPECT_EQ(EvalStr(Module("a = f32[3]{0} constant({0, -2, 0.1})\n"
                           "ROOT r = pred[3]{0} convert(a)")),
            "{false, true, true}");
  EXPECT_EQ(EvalStr(Module("a = f32[2]{0} constant({1.00390625, 3.14159274})\n"
                           "ROOT r = bf16[2]{0} convert(a)")),
            "{1, 3.140625}");
  EXPECT_EQ(EvalStr(Module("a = f32[2]{0} constant({65504, 100000})\n"
                           "ROOT r = f16[2]{0} convert(a)")),
            "{65504, inf}");
  EXPECT_EQ(EvalStr(Module("a = f32[2]{0} constant({1, -2})\n"
                           "ROOT r = c64[2]{0} convert(a)")),
            "{(1, 0), (-2, 0)}");
}

TEST(EvaluatorElementwise, BitcastConvert) {
  EXPECT_EQ(EvalStr(Module("a = f32[2]{0} constant({1, -2})\n"
                           "ROOT r = s32[2]{0} bitcast-convert(a)")),
            "{1065353216, -1073741824}");
  // Narrowing adds a trailing dimension (little-endian byte order).
  EXPECT_EQ(EvalStr(Module("a = u32[1]{0} constant({258})\n"
                           "ROOT r = u8[1,4]{1,0} bitcast-convert(a)")),
            "{ {2, 1, 0, 0} }");
}

TEST(EvaluatorElementwise, ComplexOps) {
  EXPECT_EQ(EvalStr(Module("a = f32[2]{0} constant({3, 0})\n"
                           "b = f32[2]{0} constant({4, 1})\n"
                           "c = c64[2]{0} complex(a, b)\n"
                           "m = c64[2]{0} multiply(c, c)\n"
                           "ab = f32[2]{0} abs(c)\n"
                           "re = f32[2]{0} real(m)\n"
                           "im = f32[2]{0} imag(m)\n"
                           "ROOT r = (f32[2]{0}, f32[2]{0}, f32[2]{0}) tuple(ab, re, im)")),
            "({5, 1}, {-7, -1}, {24, 0})");
}

TEST(EvaluatorElementwise, ReducePrecision) {
  EXPECT_EQ(EvalStr(Module("a = f32[3]{0} constant({1.00390625, 1e30, 3.14159274})\n"
                           "ROOT r = f32[3]{0} reduce-precision(a), exponent_bits=5, mantissa_bits=10")),
            "{1.0039062, inf, 3.140625}");
}

TEST(EvaluatorElementwise, InconsistentShapesAreInvalidInput) {
  // The verifier rejects both as text; the evaluator still checks what it is handed.
  auto r = EvalBroken(Module("a = f32[3]{0} constant({1, 2, 3})\n"
                             "b = f32[2]{0} constant({1, 2})\n"
                             "ROOT r = f32[3]{0} add(a, a)"),
                      [](hlo::Module& m) { Named(m, "r").operands[1] = &Named(m, "b"); });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
  auto r2 = EvalBroken(Module("a = f32[3]{0} constant({1, 2, 3})\n"
                              "ROOT r = f32[3]{0} negate(a)"),
                       [](hlo::Module& m) { Named(m, "r").shape = Shape::Array(PrimitiveType::F32, {4}); });
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.status().code(), ErrorCode::kInvalidInput);
}

TEST(EvaluatorElementwise, EmptyArrays) {
  EXPECT_EQ(EvalStr(Module("a = f32[0]{0} constant({})\n"
                           "ROOT r = f32[0]{0} add(a, a)")),
            "{}");
}

}  // namespace
}  // namespace opprobe::hlo
