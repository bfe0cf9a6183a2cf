// The last lowerings the coverage sweep needed (issue #12.7): multilabel_margin_loss_backward,
// _embedding_bag_dense_backward, _ctc_loss_backward, _pack_padded_sequence (bounded) and poisson (a loop), each
// on a case small enough to work out by hand. tests/conformance/sweep_values.py compares them with PyTorch on
// more cases (ctest sweep_values).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/analyzer/lowering_test_util.h"

namespace opprobe::analyzer {
namespace {

using hlo::Literal;
using hlo::PrimitiveType;
using testing::ExpectValues;
using testing::Lit;
using testing::LowerAndRun;
using testing::MakeNode;
using testing::T;
constexpr auto F32 = PrimitiveType::F32;
constexpr auto F64 = PrimitiveType::F64;
constexpr auto S64 = PrimitiveType::S64;

TEST(LoweringBackwardGapsTest, MultilabelMarginLossBackward) {
  // x = [0.1, 0.2, 0.4, 0.8], targets 3 and 0 (then -1): every hinge with classes 1 and 2 is positive, so each
  // non-target gets +2/4 and each target -2/4 (the mean over one sample of 4 classes).
  Node n = MakeNode("aten::multilabel_margin_loss_backward", "default",
                    {{"grad_output", T(F32, {})},
                     {"self", T(F32, {4})},
                     {"target", T(S64, {4})},
                     {"reduction", Value::Int(1)},
                     {"is_target", T(F32, {4})}},
                    {T(F32, {4})});
  auto out = LowerAndRun(n, {Lit(F32, {}, {1}), Lit(F32, {4}, {0.1, 0.2, 0.4, 0.8}), Lit(S64, {4}, {3, 0, -1, 1}),
                             Lit(F32, {4}, {1, 0, 0, 1})});
  ASSERT_EQ(out.size(), 1u);
  ExpectValues(out[0], {-0.5, 0.5, 0.5, -0.5}, 1e-6);
}

TEST(LoweringBackwardGapsTest, EmbeddingBagDenseBackwardMeanSkipsThePaddingIndex) {
  // bags {idx 1, 2} and {idx 2, 0(padding)}: bag sizes 2 and 1 (the padding index does not count).
  Node n = MakeNode("aten::_embedding_bag_dense_backward", "default",
                    {{"grad", T(F32, {2, 2})},
                     {"indices", T(S64, {4})},
                     {"offset2bag", T(S64, {4})},
                     {"bag_size", T(S64, {2})},
                     {"maximum_indices", T(S64, {2})},
                     {"num_weights", Value::Int(3)},
                     {"scale_grad_by_freq", Value::Bool(false)},
                     {"mode", Value::Int(1)},
                     {"per_sample_weights", Value::None()},
                     {"padding_idx", Value::Int(0)}},
                    {T(F32, {3, 2})});
  auto out = LowerAndRun(n, {Lit(F32, {2, 2}, {2, 4, 6, 8}), Lit(S64, {4}, {1, 2, 2, 0}), Lit(S64, {4}, {0, 0, 1, 1}),
                             Lit(S64, {2}, {2, 1}), Lit(S64, {2}, {0, 0})});
  ASSERT_EQ(out.size(), 1u);
  // row 1: bag 0 / 2; row 2: bag 0 / 2 + bag 1 / 1; row 0 (padding): nothing.
  ExpectValues(out[0], {0, 0, 1, 2, 7, 10}, 1e-6);
}

TEST(LoweringBackwardGapsTest, EmbeddingBagDenseBackwardMaxRoutesToTheArgmaxRows) {
  Node n = MakeNode("aten::_embedding_bag_dense_backward", "default",
                    {{"grad", T(F32, {3, 2})},
                     {"indices", T(S64, {4})},
                     {"offset2bag", T(S64, {4})},
                     {"bag_size", T(S64, {3})},
                     {"maximum_indices", T(S64, {3, 2})},
                     {"num_weights", Value::Int(4)},
                     {"scale_grad_by_freq", Value::Bool(false)},
                     {"mode", Value::Int(2)},
                     {"per_sample_weights", Value::None()},
                     {"padding_idx", Value::Int(-1)}},
                    {T(F32, {4, 2})});
  // bag 1 is empty: its gradient goes nowhere.
  auto out =
      LowerAndRun(n, {Lit(F32, {3, 2}, {1, 2, 3, 4, 5, 6}), Lit(S64, {4}, {0, 3, 1, 3}), Lit(S64, {4}, {0, 0, 2, 2}),
                      Lit(S64, {3}, {2, 0, 2}), Lit(S64, {3, 2}, {3, 0, 0, 0, 3, 3})});
  ASSERT_EQ(out.size(), 1u);
  ExpectValues(out[0], {0, 2, 0, 0, 0, 0, 6, 6}, 1e-6);
}

TEST(LoweringBackwardGapsTest, CtcLossBackwardOfAnEmptyTargetIsTheBlankPath) {
  // One step, an empty target: the only path is the blank, nll = -lp[blank], and the gradient with respect to
  // the log-probs is exp(lp) minus the path's posterior (1 at the blank).
  Node n = MakeNode("aten::_ctc_loss_backward", "Tensor",
                    {{"grad", T(F64, {1})},
                     {"log_probs", T(F64, {1, 1, 2})},
                     {"targets", T(S64, {1, 1})},
                     {"input_lengths", T(S64, {1})},
                     {"target_lengths", T(S64, {1})},
                     {"neg_log_likelihood", T(F64, {1})},
                     {"log_alpha", T(F64, {1, 1, 1})},
                     {"blank", Value::Int(0)},
                     {"zero_infinity", Value::Bool(false)}},
                    {T(F64, {1, 1, 2})});
  double lb = std::log(0.25), lo = std::log(0.75);
  auto out = LowerAndRun(n, {Lit(F64, {1}, {1}), Lit(F64, {1, 1, 2}, {lb, lo}), Lit(S64, {1, 1}, {1}),
                             Lit(S64, {1}, {1}), Lit(S64, {1}, {0}), Lit(F64, {1}, {-lb}), Lit(F64, {1, 1, 1}, {lb})});
  ASSERT_EQ(out.size(), 1u);
  ExpectValues(out[0], {-0.75, 0.75}, 1e-12);
}

TEST(LoweringBackwardGapsTest, PackPaddedSequenceIsBoundedByTheInputAndPacksTimeMajor) {
  // x[t, b] = 2t + b for T = 3, B = 2; lengths [3, 1]: the packed rows are x[0,0], x[0,1], x[1,0], x[2,0] and the
  // batch sizes 2, 1, 1, in arrays bounded by T * B = 6 rows and T = 3 steps.
  Node n = MakeNode("aten::_pack_padded_sequence", "default",
                    {{"input", T(F32, {3, 2})}, {"lengths", T(S64, {2})}, {"batch_first", Value::Bool(false)}},
                    {T(F32, {4}), T(S64, {3})});
  std::string text;
  bool dynamic = false;
  auto out = LowerAndRun(n, {Lit(F32, {3, 2}, {0, 1, 2, 3, 4, 5}), Lit(S64, {2}, {3, 1})}, &text, &dynamic);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(dynamic);
  EXPECT_NE(text.find("set-dimension-size"), std::string::npos) << text;
  ASSERT_GE(out[0].element_count(), 4);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(out[0].GetAsDouble(i), std::vector<double>({0, 1, 2, 4})[i]) << i;
  ASSERT_GE(out[1].element_count(), 3);
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(out[1].GetAsDouble(i), std::vector<double>({2, 1, 1})[i]) << i;
}

TEST(LoweringBackwardGapsTest, PoissonCountsHaveTheRatesAsMeans) {
  // 1000 draws at each of the rates 0, 0.5, 3 and 20: whole counts, none at rate 0, and each mean within 5
  // standard errors (sqrt(rate / 1000)) of its rate.
  const std::vector<double> rates = {0, 0.5, 3, 20};
  const int64_t per = 1000;
  std::vector<double> lam;
  for (double r : rates) lam.insert(lam.end(), per, r);
  int64_t total = static_cast<int64_t>(lam.size());
  Node n = MakeNode("aten::poisson", "default", {{"self", T(F64, {total})}}, {T(F64, {total})});
  std::string text;
  auto out = LowerAndRun(n, {Lit(F64, {total}, lam)}, &text);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(text.find("while("), std::string::npos) << text;
  for (size_t k = 0; k < rates.size(); ++k) {
    double sum = 0;
    for (int64_t i = 0; i < per; ++i) {
      double v = out[0].GetAsDouble(static_cast<int64_t>(k) * per + i);
      ASSERT_EQ(v, std::floor(v));
      ASSERT_GE(v, 0);
      sum += v;
    }
    double mean = sum / per;
    if (rates[k] == 0) EXPECT_EQ(mean, 0);
    else EXPECT_NEAR(mean, rates[k], 5 * std::sqrt(rates[k] / per)) << "rate " << rates[k];
  }
}

}  // namespace
}  // namespace opprobe::analyzer
