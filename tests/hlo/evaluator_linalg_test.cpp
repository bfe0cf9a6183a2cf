// dot and convolution: hand-checked small cases plus random cases against a naive reference loop
// (strides, padding incl. negative, lhs/rhs dilation, feature groups, batch groups, dim labels).
#include <fmt/format.h>
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

TEST(EvaluatorDot, MatrixProduct) {
  EXPECT_EQ(EvalStr(Module("a = f32[2,3]{1,0} constant({ {1, 2, 3}, {4, 5, 6} })\n"
                           "b = f32[3,2]{1,0} constant({ {1, 0}, {0, 1}, {1, 1} })\n"
                           "ROOT r = f32[2,2]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}")),
            "{ {4, 5}, {10, 11} }");
}

TEST(EvaluatorDot, BatchAndTransposedContracting) {
  // r[b,m,n] = sum_k a[k,b,m] * c[b,n,k]
  EXPECT_EQ(EvalStr(Module("a = s32[2,2,1]{2,1,0} constant({ { {1}, {2} }, { {3}, {4} } })\n"
                           "c = s32[2,1,2]{2,1,0} constant({ { {1, 10} }, { {100, 1000} } })\n"
                           "ROOT r = s32[2,1,1]{2,1,0} dot(a, c), lhs_batch_dims={1}, lhs_contracting_dims={0}, "
                           "rhs_batch_dims={0}, rhs_contracting_dims={2}")),
            "{ { {31} }, { {4200} } }");
}

TEST(EvaluatorDot, MixedPrecisionAndIntegerWrap) {
  EXPECT_EQ(EvalStr(Module("a = bf16[1,2]{1,0} constant({ {1, 2} })\n"
                           "b = bf16[2,1]{1,0} constant({ {0.5}, {0.25} })\n"
                           "ROOT r = f32[1,1]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}")),
            "{ {1} }");
  EXPECT_EQ(EvalStr(Module("a = s8[1,2]{1,0} constant({ {100, 100} })\n"
                           "b = s8[2]{0} constant({2, 1})\n"
                           "ROOT r = s8[1]{0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}")),
            "{44}");
  EXPECT_EQ(EvalStr(Module("a = s8[1,2]{1,0} constant({ {100, 100} })\n"
                           "b = s8[2]{0} constant({2, 1})\n"
                           "ROOT r = s32[1]{0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}")),
            "{300}");
}

TEST(EvaluatorDot, NaNAndEmptyContraction) {
  EXPECT_EQ(EvalStr(Module("a = f32[1,2]{1,0} constant({ {nan, 1} })\n"
                           "b = f32[2,1]{1,0} constant({ {0}, {1} })\n"
                           "ROOT r = f32[1,1]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}")),
            "{ {nan} }");
  EXPECT_EQ(EvalStr(Module("a = f32[2,0]{1,0} constant({ {}, {} })\n"
                           "b = f32[0,1]{1,0} constant({})\n"
                           "ROOT r = f32[2,1]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}")),
            "{ {0}, {0} }");
  auto bad = EvalBroken(Module("a = f32[2,3]{1,0} constant({ {1, 2, 3}, {4, 5, 6} })\n"
                               "ROOT r = f32[2,2]{1,0} dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={1}"),
                        [](hlo::Module& m) { DotNumbers(Named(m, "r")).rhs_contracting_dimensions = {0}; });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidInput);
}

TEST(EvaluatorConv, Simple1DWithPaddingAndStride) {
  // in [1,1,5] = 1..5, kernel [1,1,3] = {1,0,-1}, pad 1, stride 2: out[x] = in[2x-1] - in[2x+1]
  EXPECT_EQ(EvalStr(Module("x = f32[1,1,5]{2,1,0} constant({ { {1, 2, 3, 4, 5} } })\n"
                           "w = f32[1,1,3]{2,1,0} constant({ { {1, 0, -1} } })\n"
                           "ROOT r = f32[1,1,3]{2,1,0} convolution(x, w), window={size=3 stride=2 pad=1_1}, "
                           "dim_labels=bf0_oi0->bf0")),
            "{ { {-2, -2, 4} } }");
}

TEST(EvaluatorConv, NegativePaddingAndDilations) {
  // pad -1 on the left drops in[0]; rhs dilation 2 spaces the taps; lhs dilation 2 inserts holes.
  EXPECT_EQ(EvalStr(Module("x = f32[1,1,5]{2,1,0} constant({ { {1, 2, 3, 4, 5} } })\n"
                           "w = f32[1,1,2]{2,1,0} constant({ { {1, 10} } })\n"
                           "ROOT r = f32[1,1,2]{2,1,0} convolution(x, w), window={size=2 pad=-1_0 rhs_dilate=2}, "
                           "dim_labels=bf0_oi0->bf0")),
            "{ { {42, 53} } }");
  EXPECT_EQ(EvalStr(Module("x = f32[1,1,3]{2,1,0} constant({ { {1, 2, 3} } })\n"
                           "w = f32[1,1,2]{2,1,0} constant({ { {1, 10} } })\n"
                           "ROOT r = f32[1,1,4]{2,1,0} convolution(x, w), window={size=2 lhs_dilate=2}, "
                           "dim_labels=bf0_oi0->bf0")),
            "{ { {1, 20, 2, 30} } }");
}

TEST(EvaluatorConv, BatchGroupCount) {
  // lhs batch 2 split into 2 groups; output feature g uses batch g: out[0,g,0] = x[g] * w[g].
  EXPECT_EQ(EvalStr(Module("x = f32[2,1,1]{2,1,0} constant({ { {3} }, { {5} } })\n"
                           "w = f32[2,1,1]{2,1,0} constant({ { {10} }, { {100} } })\n"
                           "ROOT r = f32[1,2,1]{2,1,0} convolution(x, w), window={size=1}, dim_labels=bf0_oi0->bf0, "
                           "batch_group_count=2")),
            "{ { {30}, {500} } }");
}

TEST(EvaluatorConv, FeatureGroupCount) {
  // 2 input features, 2 groups (depthwise): out[f] = x[f] * w[f].
  EXPECT_EQ(EvalStr(Module("x = f32[1,2,1]{2,1,0} constant({ { {3}, {5} } })\n"
                           "w = f32[2,1,1]{2,1,0} constant({ { {10} }, { {100} } })\n"
                           "ROOT r = f32[1,2,1]{2,1,0} convolution(x, w), window={size=1}, dim_labels=bf0_oi0->bf0, "
                           "feature_group_count=2")),
            "{ { {30}, {500} } }");
}

// Naive reference: NCHW input, OIHW kernel, NCHW output, XLA/StableHLO semantics.
struct ConvCase {
  int64_t n, c, h, w, o, kh, kw;
  int64_t sy, sx, pl_y, ph_y, pl_x, ph_x, ldy, ldx, rdy, rdx, fgc, bgc;
};

std::vector<float> NaiveConv(const ConvCase& k, const Literal& in, const Literal& wt, int64_t& oh, int64_t& ow) {
  auto out_size = [](int64_t in, int64_t ks, int64_t s, int64_t pl, int64_t ph, int64_t ld, int64_t rd) {
    int64_t di = in == 0 ? 0 : (in - 1) * ld + 1, dk = (ks - 1) * rd + 1, p = di + pl + ph;
    return p < dk ? int64_t{0} : (p - dk) / s + 1;
  };
  oh = out_size(k.h, k.kh, k.sy, k.pl_y, k.ph_y, k.ldy, k.rdy);
  ow = out_size(k.w, k.kw, k.sx, k.pl_x, k.ph_x, k.ldx, k.rdx);
  int64_t G = k.fgc * k.bgc, Og = k.o / G, Cg = k.c / k.fgc, Nout = k.n / k.bgc;
  std::vector<float> out(static_cast<size_t>(Nout * k.o * oh * ow), 0.f);
  for (int64_t n = 0; n < Nout; ++n)
    for (int64_t o = 0; o < k.o; ++o) {
      int64_t g = o / Og;
      int64_t b = (k.bgc > 1 ? g * Nout : 0) + n, c0 = k.fgc > 1 ? g * Cg : 0;
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double acc = 0;
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t ky = 0; ky < k.kh; ++ky)
              for (int64_t kx = 0; kx < k.kw; ++kx) {
                int64_t py = y * k.sy + ky * k.rdy - k.pl_y, px = x * k.sx + kx * k.rdx - k.pl_x;
                if (py < 0 || px < 0 || py % k.ldy || px % k.ldx) continue;
                py /= k.ldy, px /= k.ldx;
                if (py >= k.h || px >= k.w) continue;
                acc += static_cast<double>(in.Get<float>(((b * k.c + c0 + ci) * k.h + py) * k.w + px)) *
                       wt.Get<float>(((o * Cg + ci) * k.kh + ky) * k.kw + kx);
              }
          out[static_cast<size_t>(((n * k.o + o) * oh + y) * ow + x)] = static_cast<float>(acc);
        }
    }
  return out;
}

TEST(EvaluatorConv, MatchesNaiveReference) {
  std::vector<ConvCase> cases = {
      {2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},    // same conv
      {2, 4, 9, 8, 6, 3, 2, 2, 3, 0, 1, 2, 0, 1, 1, 1, 1, 1, 1},    // strides, asymmetric padding
      {1, 2, 5, 5, 2, 3, 3, 1, 1, -1, 2, 0, -1, 1, 1, 2, 2, 1, 1},  // negative padding, rhs dilation
      {2, 2, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, 3, 1, 1, 1, 1},    // lhs dilation (transposed conv)
      {2, 6, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1},    // feature groups
      {3, 6, 5, 5, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 6, 1},    // depthwise
      {4, 3, 6, 5, 6, 2, 3, 1, 1, 0, 0, 1, 0, 1, 1, 1, 1, 1, 2},    // batch groups
      {6, 2, 4, 4, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3},    // batch groups, more features
  };
  int idx = 0;
  for (const auto& k : cases) {
    SCOPED_TRACE(idx++);
    int64_t Cg = k.c / k.fgc;
    Shape xs = Shape::Array(PrimitiveType::F32, {k.n, k.c, k.h, k.w});
    Shape ws = Shape::Array(PrimitiveType::F32, {k.o, Cg, k.kh, k.kw});
    Literal x = RandomLiteral(xs, 11), w = RandomLiteral(ws, 12);
    int64_t oh, ow;
    auto expect = NaiveConv(k, x, w, oh, ow);
    std::string text = Module(fmt::format(
        "x = f32[{},{},{},{}]{{3,2,1,0}} parameter(0)\n"
        "w = f32[{},{},{},{}]{{3,2,1,0}} parameter(1)\n"
        "ROOT r = f32[{},{},{},{}]{{3,2,1,0}} convolution(x, w), window={{size={}x{} stride={}x{} pad={}_{}x{}_{} "
        "lhs_dilate={}x{} rhs_dilate={}x{}}}, dim_labels=bf01_oi01->bf01, feature_group_count={}, batch_group_count={}",
        k.n, k.c, k.h, k.w, k.o, Cg, k.kh, k.kw, k.n / k.bgc, k.o, oh, ow, k.kh, k.kw, k.sy, k.sx, k.pl_y, k.ph_y,
        k.pl_x, k.ph_x, k.ldy, k.ldx, k.rdy, k.rdx, k.fgc, k.bgc));
    auto r = EvalText(text, {x, w});
    ASSERT_TRUE(r.ok()) << r.status().message() << "\n" << text;
    ASSERT_EQ(r->element_count(), static_cast<int64_t>(expect.size()));
    for (size_t i = 0; i < expect.size(); ++i)
      EXPECT_NEAR(r->Get<float>(static_cast<int64_t>(i)), expect[i], 1e-4) << i;
  }
}

TEST(EvaluatorConv, DimLabelsPermuteConsistently) {
  // The same convolution in NCHW/OIHW and NHWC/HWIO layouts gives the same numbers.
  Literal x = RandomLiteral(Shape::Array(PrimitiveType::F32, {2, 3, 5, 4}), 1);
  Literal w = RandomLiteral(Shape::Array(PrimitiveType::F32, {4, 3, 3, 2}), 2);
  auto nchw = EvalText(Module("x = f32[2,3,5,4]{3,2,1,0} parameter(0)\n"
                              "w = f32[4,3,3,2]{3,2,1,0} parameter(1)\n"
                              "ROOT r = f32[2,4,5,3]{3,2,1,0} convolution(x, w), window={size=3x2 pad=1_1x0_0}, "
                              "dim_labels=bf01_oi01->bf01"),
                       {x, w});
  ASSERT_TRUE(nchw.ok()) << nchw.status().message();
  auto nhwc = EvalText(Module("x = f32[2,3,5,4]{3,2,1,0} parameter(0)\n"
                              "w = f32[4,3,3,2]{3,2,1,0} parameter(1)\n"
                              "xt = f32[2,5,4,3]{3,2,1,0} transpose(x), dimensions={0,2,3,1}\n"
                              "wt = f32[3,2,3,4]{3,2,1,0} transpose(w), dimensions={2,3,1,0}\n"
                              "c = f32[2,5,3,4]{3,2,1,0} convolution(xt, wt), window={size=3x2 pad=1_1x0_0}, "
                              "dim_labels=b01f_01io->b01f\n"
                              "ROOT r = f32[2,4,5,3]{3,2,1,0} transpose(c), dimensions={0,3,1,2}"),
                       {x, w});
  ASSERT_TRUE(nhwc.ok()) << nhwc.status().message();
  for (int64_t i = 0; i < nchw->element_count(); ++i) EXPECT_NEAR(nchw->Get<float>(i), nhwc->Get<float>(i), 1e-5);
}

}  // namespace
}  // namespace opprobe::hlo
