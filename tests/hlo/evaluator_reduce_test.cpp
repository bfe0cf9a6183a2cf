// reduce (incl. variadic argmax), reduce-window, select-and-scatter, sort (stability, comparator),
// gather, scatter, map, fft against a naive DFT, batch-norm, rng.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "tests/hlo/evaluator_test_util.h"

namespace opprobe::hlo {
namespace {

using testing::EvalStr;
using testing::EvalText;

const char* kAdd = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n";
const char* kMax = "max {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] maximum(a, b)\n}\n\n";

std::string Mod(const std::string& comps, const std::string& body) {
  return "HloModule t\n\n" + comps + "ENTRY main {\n" + body + "\n}\n";
}

TEST(EvaluatorReduce, SumRowsAndColumns) {
  std::string x = "x = f32[2,3]{1,0} constant({ {1, 2, 3}, {4, 5, 6} })\nz = f32[] constant(0)\n";
  EXPECT_EQ(EvalStr(Mod(kAdd, x + "ROOT r = f32[2]{0} reduce(x, z), dimensions={1}, to_apply=add")), "{6, 15}");
  EXPECT_EQ(EvalStr(Mod(kAdd, x + "ROOT r = f32[3]{0} reduce(x, z), dimensions={0}, to_apply=add")), "{5, 7, 9}");
  EXPECT_EQ(EvalStr(Mod(kAdd, x + "ROOT r = f32[] reduce(x, z), dimensions={0,1}, to_apply=add")), "21");
  EXPECT_EQ(EvalStr(Mod(kAdd, x + "ROOT r = f32[2,3]{1,0} reduce(x, z), dimensions={}, to_apply=add")),
            "{ {1, 2, 3}, {4, 5, 6} }");
}

TEST(EvaluatorReduce, EmptyReductionGivesInit) {
  EXPECT_EQ(EvalStr(Mod(kMax,
                        "x = f32[2,0]{1,0} constant({ {}, {} })\nz = f32[] constant(-inf)\n"
                        "ROOT r = f32[2]{0} reduce(x, z), dimensions={1}, to_apply=max")),
            "{-inf, -inf}");
}

TEST(EvaluatorReduce, MaxPropagatesNaN) {
  EXPECT_EQ(EvalStr(Mod(kMax,
                        "x = f32[3]{0} constant({1, nan, 3})\nz = f32[] constant(-inf)\n"
                        "ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=max")),
            "nan");
}

TEST(EvaluatorReduce, VariadicArgmax) {
  std::string cmp =
      "argmax {\n  av = f32[] parameter(0)\n  ai = s32[] parameter(1)\n  bv = f32[] parameter(2)\n"
      "  bi = s32[] parameter(3)\n  gt = pred[] compare(av, bv), direction=GE\n"
      "  v = f32[] select(gt, av, bv)\n  i = s32[] select(gt, ai, bi)\n  ROOT t = (f32[], s32[]) tuple(v, i)\n}\n\n";
  EXPECT_EQ(EvalStr(Mod(cmp,
                        "x = f32[4]{0} constant({3, 9, 2, 9})\ni = s32[4]{0} iota(), iota_dimension=0\n"
                        "zv = f32[] constant(-inf)\nzi = s32[] constant(-1)\n"
                        "ROOT r = (f32[], s32[]) reduce(x, i, zv, zi), dimensions={0}, to_apply=argmax")),
            "(9, 1)");
}

TEST(EvaluatorReduce, GeneralComputationBody) {
  std::string comp =
      "sumsq {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  m = f32[] multiply(b, b)\n"
      "  ROOT s = f32[] add(a, m)\n}\n\n";
  EXPECT_EQ(EvalStr(Mod(comp,
                        "x = f32[3]{0} constant({1, 2, 3})\nz = f32[] constant(0)\n"
                        "ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=sumsq")),
            "14");
}

TEST(EvaluatorReduce, ReduceWindowMaxPoolWithPadding) {
  EXPECT_EQ(EvalStr(Mod(kMax,
                        "x = f32[1,4]{1,0} constant({ {1, 5, 2, 4} })\nz = f32[] constant(-inf)\n"
                        "ROOT r = f32[1,2]{1,0} reduce-window(x, z), window={size=1x3 stride=1x2 pad=0_0x1_0}, "
                        "to_apply=max")),
            "{ {5, 5} }");
  // Base dilation: holes do not contribute.
  EXPECT_EQ(EvalStr(Mod(kAdd,
                        "x = f32[3]{0} constant({1, 2, 3})\nz = f32[] constant(0)\n"
                        "ROOT r = f32[4]{0} reduce-window(x, z), window={size=2 lhs_dilate=2}, to_apply=add")),
            "{1, 2, 2, 3}");
}

TEST(EvaluatorReduce, SelectAndScatterMaxPoolGradient) {
  std::string comps =
      "ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = pred[] compare(a, b), direction=GE\n}\n\n" +
      std::string(kAdd);
  EXPECT_EQ(EvalStr(Mod(comps,
                        "x = f32[4]{0} constant({1, 5, 2, 7})\ns = f32[2]{0} constant({10, 20})\n"
                        "z = f32[] constant(0)\n"
                        "ROOT r = f32[4]{0} select-and-scatter(x, s, z), window={size=2 stride=2}, "
                        "select=ge, scatter=add")),
            "{0, 10, 0, 20}");
  // Overlapping windows accumulate.
  EXPECT_EQ(EvalStr(Mod(comps,
                        "x = f32[3]{0} constant({1, 9, 2})\ns = f32[2]{0} constant({10, 20})\n"
                        "z = f32[] constant(0)\n"
                        "ROOT r = f32[3]{0} select-and-scatter(x, s, z), window={size=2 stride=1}, "
                        "select=ge, scatter=add")),
            "{0, 30, 0}");
}

TEST(EvaluatorSort, StableWithKeysAndValues) {
  std::string cmp =
      "lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
      "  ROOT r = pred[] compare(a, b), direction=LT\n}\n\n";
  EXPECT_EQ(EvalStr(Mod(cmp,
                        "k = f32[6]{0} constant({3, 1, 2, 1, 3, 1})\nv = s32[6]{0} iota(), iota_dimension=0\n"
                        "ROOT s = (f32[6]{0}, s32[6]{0}) sort(k, v), dimensions={0}, is_stable=true, to_apply=lt")),
            "({1, 1, 1, 2, 3, 3}, {1, 3, 5, 2, 0, 4})");
}

TEST(EvaluatorSort, DescendingAlongInnerDimWithTotalOrder) {
  std::string cmp =
      "gt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
      "  ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER\n}\n\n";
  EXPECT_EQ(EvalStr(Mod(cmp,
                        "k = f32[2,3]{1,0} constant({ {1, nan, 2}, {-0, 0, -1} })\n"
                        "ROOT s = f32[2,3]{1,0} sort(k), dimensions={1}, to_apply=gt")),
            "{ {nan, 2, 1}, {0, -0, -1} }");
}

TEST(EvaluatorSort, GeneralComparator) {
  // Sort by absolute value via a multi-instruction comparator.
  std::string cmp =
      "absl {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  x = s32[] abs(a)\n  y = s32[] abs(b)\n"
      "  ROOT r = pred[] compare(x, y), direction=LT\n}\n\n";
  EXPECT_EQ(EvalStr(Mod(cmp,
                        "k = s32[5]{0} constant({-5, 3, -1, 4, 2})\n"
                        "ROOT s = s32[5]{0} sort(k), dimensions={0}, is_stable=true, to_apply=absl")),
            "{-1, 2, 3, 4, -5}");
}

TEST(EvaluatorGather, EmbeddingLookupWithClamping) {
  EXPECT_EQ(EvalStr(Mod("",
                        "t = f32[3,2]{1,0} constant({ {1, 2}, {3, 4}, {5, 6} })\n"
                        "i = s32[3]{0} constant({2, 0, 7})\n"
                        "ROOT g = f32[3,2]{1,0} gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, "
                        "start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}")),
            "{ {5, 6}, {1, 2}, {5, 6} }");
}

TEST(EvaluatorGather, TwoDimensionalIndicesAndWindows) {
  // Gather 2x2 windows at (row, col) starts; the second start is clamped to (1, 1).
  EXPECT_EQ(EvalStr(Mod("",
                        "t = s32[3,3]{1,0} constant({ {0, 1, 2}, {3, 4, 5}, {6, 7, 8} })\n"
                        "i = s32[2,2]{1,0} constant({ {0, 1}, {5, 5} })\n"
                        "ROOT g = s32[2,2,2]{2,1,0} gather(t, i), offset_dims={1,2}, collapsed_slice_dims={}, "
                        "start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,2}")),
            "{ { {1, 2}, {4, 5} }, { {4, 5}, {7, 8} } }");
}

TEST(EvaluatorScatter, AddWithDuplicatesAndOutOfBoundsSkipped) {
  EXPECT_EQ(EvalStr(Mod(kAdd,
                        "t = f32[3,2]{1,0} constant({ {1, 1}, {1, 1}, {1, 1} })\n"
                        "i = s32[3]{0} constant({2, 2, 9})\n"
                        "u = f32[3,2]{1,0} constant({ {10, 20}, {30, 40}, {50, 60} })\n"
                        "ROOT s = f32[3,2]{1,0} scatter(t, i, u), update_window_dims={1}, "
                        "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
                        "to_apply=add")),
            "{ {1, 1}, {1, 1}, {41, 61} }");
}

TEST(EvaluatorScatter, AssignComputation) {
  std::string assign = "assign {\n  a = s32[] parameter(0)\n  ROOT b = s32[] parameter(1)\n}\n\n";
  EXPECT_EQ(EvalStr(Mod(assign,
                        "t = s32[4]{0} constant({0, 0, 0, 0})\n"
                        "i = s32[2,1]{1,0} constant({ {3}, {1} })\n"
                        "u = s32[2]{0} constant({7, 8})\n"
                        "ROOT s = s32[4]{0} scatter(t, i, u), update_window_dims={}, "
                        "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
                        "to_apply=assign")),
            "{0, 8, 0, 7}");
}

TEST(EvaluatorMap, AppliesComputationElementwise) {
  std::string comp =
      "f {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  m = s32[] multiply(a, b)\n"
      "  ROOT s = s32[] add(m, a)\n}\n\n";
  EXPECT_EQ(EvalStr(Mod(comp,
                        "x = s32[3]{0} constant({1, 2, 3})\ny = s32[3]{0} constant({4, 5, 6})\n"
                        "ROOT r = s32[3]{0} map(x, y), dimensions={0}, to_apply=f")),
            "{5, 12, 21}");
}

// Naive DFT over the trailing `dims.size()` dims.
std::vector<std::complex<double>> NaiveDft(const std::vector<std::complex<double>>& x, const std::vector<int64_t>& dims,
                                           bool inverse) {
  std::vector<std::complex<double>> out(x.size());
  int64_t total = static_cast<int64_t>(x.size());
  std::vector<int64_t> str(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) str[i] = str[i + 1] * dims[i + 1];
  double sign = inverse ? 1.0 : -1.0;
  for (int64_t o = 0; o < total; ++o) {
    std::complex<double> acc = 0;
    for (int64_t i = 0; i < total; ++i) {
      double phase = 0;
      for (size_t d = 0; d < dims.size(); ++d) {
        int64_t ko = (o / str[d]) % dims[d], ki = (i / str[d]) % dims[d];
        phase += static_cast<double>(ko * ki) / static_cast<double>(dims[d]);
      }
      acc += x[static_cast<size_t>(i)] * std::polar(1.0, sign * 2 * M_PI * phase);
    }
    out[static_cast<size_t>(o)] = inverse ? acc / static_cast<double>(total) : acc;
  }
  return out;
}

TEST(EvaluatorFft, FftAndIfftMatchNaiveDft) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{8}, {5}, {3, 4}, {2, 3, 5}}) {
    Shape s = Shape::Array(PrimitiveType::C128, dims);
    Literal x = RandomLiteral(s, 5);
    std::vector<std::complex<double>> xv;
    for (int64_t i = 0; i < x.element_count(); ++i) xv.push_back(x.GetAsComplex(i));
    for (bool inverse : {false, true}) {
      std::string shape = s.ToString();
      std::string text = fmt::format(
          "HloModule t\n\nENTRY main {{\n  x = {} parameter(0)\n  ROOT f = {} fft(x), "
          "fft_type={}, fft_length={{{}}}\n}}\n",
          shape, shape, inverse ? "IFFT" : "FFT", fmt::join(dims, ","));
      auto r = EvalText(text, {x});
      ASSERT_TRUE(r.ok()) << r.status().message();
      auto want = NaiveDft(xv, dims, inverse);
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_NEAR(r->GetAsComplex(static_cast<int64_t>(i)).real(), want[i].real(), 1e-9);
        EXPECT_NEAR(r->GetAsComplex(static_cast<int64_t>(i)).imag(), want[i].imag(), 1e-9);
      }
    }
  }
}

TEST(EvaluatorFft, RfftThenIrfftRoundTrips) {
  Literal x = RandomLiteral(Shape::Array(PrimitiveType::F64, {2, 3, 6}), 9);
  std::vector<std::complex<double>> xv;
  for (int64_t i = 0; i < x.element_count(); ++i) xv.push_back(x.GetAsDouble(i));
  auto r = EvalText(
      "HloModule t\n\nENTRY main {\n  x = f64[2,3,6]{2,1,0} parameter(0)\n"
      "  f = c128[2,3,4]{2,1,0} fft(x), fft_type=RFFT, fft_length={3,6}\n"
      "  ROOT g = f64[2,3,6]{2,1,0} fft(f), fft_type=IRFFT, fft_length={3,6}\n}\n",
      {x});
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (int64_t i = 0; i < x.element_count(); ++i) EXPECT_NEAR(r->GetAsDouble(i), x.GetAsDouble(i), 1e-9);
  auto f = EvalText(
      "HloModule t\n\nENTRY main {\n  x = f64[2,3,6]{2,1,0} parameter(0)\n"
      "  ROOT f = c128[2,3,4]{2,1,0} fft(x), fft_type=RFFT, fft_length={3,6}\n}\n",
      {x});
  ASSERT_TRUE(f.ok());
  for (int64_t b = 0; b < 2; ++b) {
    std::vector<std::complex<double>> slice(xv.begin() + b * 18, xv.begin() + (b + 1) * 18);
    auto want = NaiveDft(slice, {3, 6}, false);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t k = 0; k < 4; ++k) {
        auto got = f->GetAsComplex(b * 12 + i * 4 + k);
        EXPECT_NEAR(got.real(), want[static_cast<size_t>(i * 6 + k)].real(), 1e-9);
        EXPECT_NEAR(got.imag(), want[static_cast<size_t>(i * 6 + k)].imag(), 1e-9);
      }
  }
}

TEST(EvaluatorBatchNorm, TrainingInferenceAndGrad) {
  // Feature dim 1 with values {1, 3} and {2, 6}: means 2, 4; variances 1, 4.
  std::string x =
      "x = f32[2,2]{1,0} constant({ {1, 2}, {3, 6} })\n"
      "s = f32[2]{0} constant({1, 2})\no = f32[2]{0} constant({0, 1})\n";
  EXPECT_EQ(EvalStr(Mod("", x + "ROOT r = (f32[2,2]{1,0}, f32[2]{0}, f32[2]{0}) batch-norm-training(x, s, o), "
                                "epsilon=0, feature_index=1")),
            "({ {-1, -1}, {1, 3} }, {2, 4}, {1, 4})");
  EXPECT_EQ(EvalStr(Mod("", x + "m = f32[2]{0} constant({2, 4})\nv = f32[2]{0} constant({1, 4})\n"
                                "ROOT r = f32[2,2]{1,0} batch-norm-inference(x, s, o, m, v), epsilon=0, "
                                "feature_index=1")),
            "{ {-1, -1}, {1, 3} }");
  // grad_offset = sum(gy); grad_scale = sum(gy * xhat); grad_x = scale/std * (gy - mean(gy) - xhat*mean(gy*xhat)).
  EXPECT_EQ(EvalStr(Mod("", x + "m = f32[2]{0} constant({2, 4})\nv = f32[2]{0} constant({1, 4})\n"
                                "gy = f32[2,2]{1,0} constant({ {1, 0}, {0, 1} })\n"
                                "ROOT r = (f32[2,2]{1,0}, f32[2]{0}, f32[2]{0}) batch-norm-grad(x, s, m, v, gy), "
                                "epsilon=0, feature_index=1")),
            "({ {0, 0}, {0, 0} }, {-1, 1}, {1, 1})");
}

TEST(EvaluatorRng, UniformWithinBoundsAndDeterministic) {
  std::string text = Mod("",
                         "a = f32[] constant(2)\nb = f32[] constant(3)\n"
                         "ROOT r = f32[100]{0} rng(a, b), distribution=rng_uniform");
  auto r = EvalText(text), r2 = EvalText(text);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (int64_t i = 0; i < 100; ++i) {
    EXPECT_GE(r->Get<float>(i), 2.0f);
    EXPECT_LT(r->Get<float>(i), 3.0f);
  }
  EXPECT_EQ(r->ValueToString(), r2->ValueToString());
}

}  // namespace
}  // namespace opprobe::hlo
