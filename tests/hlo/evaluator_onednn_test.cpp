// dot and convolution through oneDNN (hlo/evaluator/onednn.cpp): the cases it takes (layouts, transposed
// operands, strides, padding, dilation, groups, reversed windows, 1-3 spatial dims) against a naive
// double-precision reference, the cases it leaves to Eigen, and that Evaluate routes f32 products of some
// size through it. The small products of evaluator_linalg_test stay on Eigen.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "hlo/evaluator/internal.h"
#include "tests/hlo/evaluator_test_util.h"

namespace opprobe::hlo {
namespace {

using testing::EvalText;
using PT = PrimitiveType;

// XLA's convolution (no base dilation or batch groups) computed naively in double.
std::vector<double> NaiveConvolution(const Instruction& ins, const Literal& lhs, const Literal& rhs) {
  const auto& dn = *ins.convolution_dimension_numbers;
  const auto& win = ins.window->dimensions;
  const auto &ld = lhs.shape().dimensions(), &kd = rhs.shape().dimensions(), &od = ins.shape.dimensions();
  auto ls = eval::Strides(ld), ks = eval::Strides(kd);
  size_t nsp = win.size();
  int64_t G = ins.feature_group_count, Og = kd[static_cast<size_t>(dn.kernel_output_feature_dimension)] / G;
  int64_t Cg = kd[static_cast<size_t>(dn.kernel_input_feature_dimension)];
  std::vector<int64_t> ksize;
  for (int64_t d : dn.kernel_spatial_dimensions) ksize.push_back(kd[static_cast<size_t>(d)]);
  std::vector<double> out;
  eval::ForEachIndex(od, [&](const std::vector<int64_t>& o) {
    int64_t b = o[static_cast<size_t>(dn.output_batch_dimension)],
            f = o[static_cast<size_t>(dn.output_feature_dimension)];
    int64_t g = f / Og;
    double acc = 0;
    for (int64_t ci = 0; ci < Cg; ++ci)
      eval::ForEachIndex(ksize, [&](const std::vector<int64_t>& k) {
        int64_t li = b * ls[static_cast<size_t>(dn.input_batch_dimension)] +
                     (g * Cg + ci) * ls[static_cast<size_t>(dn.input_feature_dimension)];
        int64_t ki = f * ks[static_cast<size_t>(dn.kernel_output_feature_dimension)] +
                     ci * ks[static_cast<size_t>(dn.kernel_input_feature_dimension)];
        for (size_t i = 0; i < nsp; ++i) {
          const auto& w = win[i];
          int64_t kk = w.window_reversal ? ksize[i] - 1 - k[i] : k[i];
          int64_t p = o[static_cast<size_t>(dn.output_spatial_dimensions[i])] * w.stride + kk * w.window_dilation -
                      w.padding_low;
          if (p < 0 || p >= ld[static_cast<size_t>(dn.input_spatial_dimensions[i])]) return;
          li += p * ls[static_cast<size_t>(dn.input_spatial_dimensions[i])];
          ki += k[i] * ks[static_cast<size_t>(dn.kernel_spatial_dimensions[i])];
        }
        acc += lhs.GetAsDouble(li) * rhs.GetAsDouble(ki);
      });
    out.push_back(acc);
  });
  return out;
}

void ExpectClose(const Literal& got, const std::vector<double>& want) {
  ASSERT_EQ(got.element_count(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.GetAsDouble(static_cast<int64_t>(i)), want[i], 1e-4 * (1 + std::abs(want[i]))) << "element " << i;
}

struct ConvCase {
  std::string lhs, rhs, out, attrs;
};

// Parses a one-convolution module; random operands.
struct Conv {
  std::unique_ptr<Module> module;
  Literal lhs, rhs;
  const Instruction& ins() const { return *module->entry()->root(); }
};

Conv MakeConv(const ConvCase& c) {
  auto m = ParseModule(
      testing::Module(fmt::format("x = {} parameter(0)\nw = {} parameter(1)\nROOT r = {} convolution(x, w), {}", c.lhs,
                                  c.rhs, c.out, c.attrs)),
      "conv.hlo");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return {};
  Conv conv{std::move(*m), Literal(), Literal()};
  auto params = conv.module->entry()->parameters();
  conv.lhs = RandomLiteral(params[0]->shape, 3);
  conv.rhs = RandomLiteral(params[1]->shape, 4);
  return conv;
}

TEST(EvaluatorOneDnn, ConvolutionMatchesNaiveReference) {
  std::vector<ConvCase> cases = {
      {"f32[2,16,12,12]", "f32[16,16,3,3]", "f32[2,16,12,12]",
       "window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01"},
      {"f32[2,13,11,16]", "f32[3,2,16,24]", "f32[2,7,6,24]",
       "window={size=3x2 stride=2x2 pad=1_2x0_1}, dim_labels=b01f_01io->b01f"},
      {"f32[2,16,14,14]", "f32[32,4,3,3]", "f32[2,32,10,10]",
       "window={size=3x3 rhs_dilate=2x2}, dim_labels=bf01_oi01->bf01, feature_group_count=4"},
      {"f32[2,16,12,12]", "f32[16,16,3,3]", "f32[2,16,12,12]",
       "window={size=3x3 pad=1_1x1_1 rhs_reversal=1x1}, dim_labels=bf01_oi01->bf01"},
      {"f32[2,16,12,12]", "f32[16,16,3,3]", "f32[2,16,12,12]",
       "window={size=3x3 pad=1_1x1_1 rhs_reversal=0x1}, dim_labels=bf01_oi01->bf01"},
      {"f32[4,32,50]", "f32[24,32,5]", "f32[4,24,25]", "window={size=5 stride=2 pad=2_1}, dim_labels=bf0_oi0->bf0"},
      {"f32[2,8,6,7,8]", "f32[16,8,3,3,3]", "f32[2,16,6,7,8]",
       "window={size=3x3x3 pad=1_1x1_1x1_1}, dim_labels=bf012_oi012->bf012"},
      {"f32[2,16,12,12]", "f32[3,3,16,16]", "f32[16,12,12,2]",
       "window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_01io->f01b"},
      {"f32[16,2,12,12]", "f32[16,3,3,16]", "f32[12,2,16,12]",
       "window={size=3x3 pad=1_1x1_1}, dim_labels=fb01_i01o->0bf1"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.lhs + " " + c.rhs + " " + c.attrs);
    Conv conv = MakeConv(c);
    ASSERT_TRUE(conv.module);
    Literal out(conv.ins().shape);
    ASSERT_TRUE(eval::OneDnnConvolution(conv.ins(), conv.lhs, conv.rhs, out)) << "oneDNN did not take the case";
    ExpectClose(out, NaiveConvolution(conv.ins(), conv.lhs, conv.rhs));
  }
}

TEST(EvaluatorOneDnn, ConvolutionCasesLeftToEigen) {
  std::vector<ConvCase> cases = {
      {"f32[2,16,6,6]", "f32[16,16,3,3]", "f32[2,16,13,13]",
       "window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}, dim_labels=bf01_oi01->bf01"},
      {"f32[2,16,12,12]", "f32[16,16,3,3]", "f32[2,16,8,8]",
       "window={size=3x3 pad=-1_-1x-1_-1}, dim_labels=bf01_oi01->bf01"},
      {"f32[4,16,12,12]", "f32[32,16,3,3]", "f32[2,32,10,10]",
       "window={size=3x3}, dim_labels=bf01_oi01->bf01, batch_group_count=2"},
      {"f64[2,16,12,12]", "f64[16,16,3,3]", "f64[2,16,10,10]", "window={size=3x3}, dim_labels=bf01_oi01->bf01"},
      {"f16[2,16,12,12]", "f16[16,16,3,3]", "f32[2,16,10,10]", "window={size=3x3}, dim_labels=bf01_oi01->bf01"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.attrs);
    Conv conv = MakeConv(c);
    ASSERT_TRUE(conv.module);
    Literal out(conv.ins().shape);
    EXPECT_FALSE(eval::OneDnnConvolution(conv.ins(), conv.lhs, conv.rhs, out));
    // Evaluate computes them all the same (through Eigen).
    auto r = Evaluate(*conv.module, {conv.lhs, conv.rhs});
    ASSERT_TRUE(r.ok()) << r.status().message();
    if (c.attrs.find("lhs_dilate") == std::string::npos && c.attrs.find("batch_group") == std::string::npos)
      ExpectClose(*r, NaiveConvolution(conv.ins(), conv.lhs, conv.rhs));
  }
}

TEST(EvaluatorOneDnn, EvaluateRoutesF32ProductsThroughOneDnn) {
  Conv conv = MakeConv({"f32[2,16,12,12]", "f32[16,16,3,3]", "f32[2,16,12,12]",
                        "window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01"});
  ASSERT_TRUE(conv.module);
  Literal direct(conv.ins().shape);
  ASSERT_TRUE(eval::OneDnnConvolution(conv.ins(), conv.lhs, conv.rhs, direct));
  auto r = Evaluate(*conv.module, {conv.lhs, conv.rhs});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->data(), direct.data());  // the same kernel: the same bits
}

TEST(EvaluatorOneDnn, GemmMatchesNaiveReference) {
  const int64_t B = 3, M = 37, K = 53, N = 29;
  Literal a = RandomLiteral(Shape::Array(PT::F32, {B, M, K}), 5),
          b = RandomLiteral(Shape::Array(PT::F32, {B, K, N}), 6);
  auto at = [&](bool trans) {  // a or its per-batch transpose
    std::vector<float> v(static_cast<size_t>(B * M * K));
    for (int64_t i = 0; i < B; ++i)
      for (int64_t r = 0; r < M; ++r)
        for (int64_t c = 0; c < K; ++c)
          v[static_cast<size_t>(i * M * K + (trans ? c * M + r : r * K + c))] = a.Get<float>((i * M + r) * K + c);
    return v;
  };
  auto bt = [&](bool trans) {
    std::vector<float> v(static_cast<size_t>(B * K * N));
    for (int64_t i = 0; i < B; ++i)
      for (int64_t r = 0; r < K; ++r)
        for (int64_t c = 0; c < N; ++c)
          v[static_cast<size_t>(i * K * N + (trans ? c * K + r : r * N + c))] = b.Get<float>((i * K + r) * N + c);
    return v;
  };
  std::vector<double> want;
  for (int64_t i = 0; i < B; ++i)
    for (int64_t r = 0; r < M; ++r)
      for (int64_t c = 0; c < N; ++c) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += static_cast<double>(a.Get<float>((i * M + r) * K + k)) * b.Get<float>((i * K + k) * N + c);
        want.push_back(acc);
      }
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(fmt::format("trans_a={} trans_b={}", ta, tb));
      auto av = at(ta), bv = bt(tb);
      Literal c(Shape::Array(PT::F32, {B, M, N}));
      ASSERT_TRUE(
          eval::OneDnnGemm(B, M, N, K, av.data(), ta, bv.data(), tb, reinterpret_cast<float*>(c.data().data())));
      ExpectClose(c, want);
    }
  EXPECT_FALSE(eval::OneDnnGemm(1, 0, 2, 2, nullptr, false, nullptr, false, nullptr));  // empty: nothing to do
}

TEST(EvaluatorOneDnn, DotLayoutsAgreeWithTheReference) {
  // [batch, K, M] x [N, batch, K] (both read transposed or copied), f16 operands accumulating in f32, and
  // an f32 dot whose result is bf16.
  for (const char* types : {"f32 f32 f32", "f16 f16 f32", "f32 f32 bf16"}) {
    SCOPED_TRACE(types);
    std::string lt = std::string(types).substr(0, 3), rt = std::string(types).substr(4, 3),
                ot = std::string(types).substr(8);
    auto m = ParseModule(
        testing::Module(fmt::format("x = {}[4,60,50] parameter(0)\ny = {}[40,4,60] parameter(1)\n"
                                    "ROOT r = {}[4,50,40] dot(x, y), lhs_batch_dims={{0}}, lhs_contracting_dims={{1}}, "
                                    "rhs_batch_dims={{1}}, rhs_contracting_dims={{2}}",
                                    lt, rt, ot)),
        "dot.hlo");
    ASSERT_TRUE(m.ok()) << m.status().message();
    auto params = (*m)->entry()->parameters();
    Literal x = RandomLiteral(params[0]->shape, 7), y = RandomLiteral(params[1]->shape, 8);
    auto r = Evaluate(**m, {x, y});
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::vector<double> want;
    for (int64_t bb = 0; bb < 4; ++bb)
      for (int64_t i = 0; i < 50; ++i)
        for (int64_t j = 0; j < 40; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < 60; ++k)
            acc += x.GetAsDouble((bb * 60 + k) * 50 + i) * y.GetAsDouble((j * 4 + bb) * 60 + k);
          want.push_back(acc);
        }
    if (ot == "bf16") {
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(r->GetAsDouble(static_cast<int64_t>(i)), want[i], 1e-2 * (1 + std::abs(want[i]))) << i;
    } else {
      ExpectClose(*r, want);
    }
  }
}

TEST(EvaluatorOneDnn, IntegerDotStaysExact) {
  // Integer products accumulate in int64 through Eigen: exact, wrapping to s32 at the end (the sums pass 2^31).
  auto m =
      ParseModule(testing::Module("x = s32[64,64] parameter(0)\ny = s32[64,64] parameter(1)\n"
                                  "ROOT r = s32[64,64] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
                  "dot.hlo");
  ASSERT_TRUE(m.ok());
  Literal x(Shape::Array(PT::S32, {64, 64})), y(Shape::Array(PT::S32, {64, 64}));
  for (int64_t i = 0; i < 64 * 64; ++i) x.Set<int32_t>(i, 1 << 26), y.Set<int32_t>(i, (i % 3) - 1);
  auto r = Evaluate(**m, {x, y});
  ASSERT_TRUE(r.ok());
  for (int64_t j = 0; j < 64; ++j) {
    int64_t want = 0;
    for (int64_t k = 0; k < 64; ++k) want += int64_t{1 << 26} * (((k * 64 + j) % 3) - 1);
    EXPECT_EQ(r->Get<int32_t>(j), static_cast<int32_t>(want)) << j;
  }
}

}  // namespace
}  // namespace opprobe::hlo
