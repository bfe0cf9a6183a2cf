// Lowerings checked by value: small aten calls built by hand, lowered, evaluated with the HLO
// evaluator and compared with numbers PyTorch 1.13 gives for the same inputs (comments show the
// torch call). Covers index_put's boolean-mask row path, mode, nanmedian, ctc_loss (a while loop),
// fractional max pooling, histogram, segment_reduce, index_reduce, repeat_interleave and the
// multilabel margin loss.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/analyzer/lowering_test_util.h"

namespace opprobe::analyzer {
namespace {

using hlo::Literal;
using hlo::PrimitiveType;
using testing::ExpectValues;
using testing::Ints;
using testing::Lit;
using testing::LowerAndRun;
using testing::MakeNode;
using testing::T;
constexpr auto F32 = PrimitiveType::F32;
constexpr auto F64 = PrimitiveType::F64;
constexpr auto S64 = PrimitiveType::S64;
constexpr auto PRED = PrimitiveType::PRED;
const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(LoweringOpsExtraTest, IndexPutBoolMaskWithOneRow) {
  // x = zeros(3, 2); x[tensor([True, False, True])] = tensor([7., 8.])
  Node n = MakeNode("aten::index_put", "default",
                    {{"self", T(F32, {3, 2})},
                     {"indices",
                      [] {
                        Value v;
                        v.kind = Value::Kind::kTensorList;
                        v.tensors.push_back(T(PRED, {3}).tensor);
                        return v;
                      }()},
                     {"values", T(F32, {2})},
                     {"accumulate", Value::Bool(false)}},
                    {T(F32, {3, 2})});
  auto out = LowerAndRun(n, {Lit(F32, {3, 2}, {0, 0, 0, 0, 0, 0}), Lit(PRED, {3}, {1, 0, 1}), Lit(F32, {2}, {7, 8})});
  ASSERT_EQ(out.size(), 1u);
  ExpectValues(out[0], {7, 8, 0, 0, 7, 8}, 1e-9);
}

TEST(LoweringOpsExtraTest, ModeTakesTheSmallestMostFrequentValueAndItsLastIndex) {
  // torch.mode(x, 1) for the rows below: values [1, 0, 0, 0], indices [6, 4, 6, 5].
  Node n = MakeNode("aten::mode", "default",
                    {{"self", T(F32, {4, 7})}, {"dim", Value::Int(1)}, {"keepdim", Value::Bool(false)}},
                    {T(F32, {4}), T(S64, {4})});
  auto out = LowerAndRun(
      n, {Lit(F32, {4, 7}, {1, 1, 0, 2, 2, 1, 1, 0, 0, 1, 1, 0, 1, 2, 0, 1, 1, 0, 0, 2, 0, 0, 2, 2, 0, 0, 0, 1})});
  ASSERT_EQ(out.size(), 2u);
  ExpectValues(out[0], {1, 0, 0, 0}, 1e-9);
  ExpectValues(out[1], {6, 4, 6, 5}, 1e-9);
}

TEST(LoweringOpsExtraTest, NanmedianSkipsNans) {
  // torch.nanmedian(x, 1): values [nan, 1, 1, 2, 2, 5], indices [0, 0, 2, 1, 1, 0].
  Node n = MakeNode("aten::nanmedian", "dim",
                    {{"self", T(F32, {6, 3})}, {"dim", Value::Int(1)}, {"keepdim", Value::Bool(false)}},
                    {T(F32, {6}), T(S64, {6})});
  auto out =
      LowerAndRun(n, {Lit(F32, {6, 3}, {kNan, kNan, kNan, 1, kNan, 2, kNan, 3, 1, 2, 2, 2, 1, 2, 2, 5, kNan, kNan})});
  ASSERT_EQ(out.size(), 2u);
  ExpectValues(out[0], {kNan, 1, 1, 2, 2, 5}, 1e-9);
  ExpectValues(out[1], {0, 0, 2, 1, 1, 0}, 1e-9);
}

TEST(LoweringOpsExtraTest, CtcLossRunsTheAlphaRecursionInAWhileLoop) {
  // torch.ops.aten._ctc_loss(lp, [[1, 2], [1, 1]], [4, 3], [2, 1], 0, False) in float64.
  Node n = MakeNode("aten::_ctc_loss", "Tensor",
                    {{"log_probs", T(F64, {4, 2, 3})},
                     {"targets", T(S64, {2, 2})},
                     {"input_lengths", T(S64, {2})},
                     {"target_lengths", T(S64, {2})},
                     {"blank", Value::Int(0)},
                     {"zero_infinity", Value::Bool(false)}},
                    {T(F64, {2}), T(F64, {2, 4, 5})});
  Literal lp = Lit(F64, {4, 2, 3}, {-1.2, -0.8, -1.5, -0.3, -2.0, -1.9, -0.9, -1.1, -1.4,  -1.6, -0.5, -1.3,
                                    -2.1, -0.4, -1.2, -0.7, -1.8, -0.9, -1.0, -1.3, -0.95, -1.1, -1.2, -1.05});
  auto out = LowerAndRun(n, {lp, Lit(S64, {2, 2}, {1, 2, 1, 1}), Lit(S64, {2}, {4, 3}), Lit(S64, {2}, {2, 1})});
  ASSERT_EQ(out.size(), 2u);
  ExpectValues(out[0], {1.4045632824902907, 0.9415403708079788}, 1e-9);
  // log_alpha of the first sample (every entry torch writes).
  std::vector<double> la0 = {-1.2,
                             -0.8,
                             -kInf,
                             -kInf,
                             -kInf,
                             -2.1,
                             -1.3869847476000476,
                             -1.7000000000000002,
                             -2.2,
                             -kInf,
                             -4.2,
                             -1.3880985673758,
                             -2.938147549468881,
                             -1.8100675897604481,
                             -4.300000000000001,
                             -5.2,
                             -2.6297441672264643,
                             -2.195630677707845,
                             -1.713234547430588,
                             -2.730410583571547};
  for (size_t i = 0; i < la0.size(); ++i) {
    double g = out[1].GetAsDouble(static_cast<int64_t>(i));
    if (std::isinf(la0[i])) EXPECT_EQ(g, la0[i]) << i;
    else EXPECT_NEAR(g, la0[i], 1e-12) << i;
  }
}

TEST(LoweringOpsExtraTest, FractionalMaxPool2dUsesTheSamplesAsAten) {
  // x = sin(arange(50.)).reshape(1, 2, 5, 5); samples [[[0.3, 0.8], [0.55, 0.1]]]; kernel 2x2, output 3x2.
  Node n = MakeNode("aten::fractional_max_pool2d", "default",
                    {{"self", T(F64, {1, 2, 5, 5})},
                     {"kernel_size", Ints({2, 2})},
                     {"output_size", Ints({3, 2})},
                     {"random_samples", T(F64, {1, 2, 2})}},
                    {T(F64, {1, 2, 3, 2}), T(S64, {1, 2, 3, 2})});
  std::vector<double> xv;
  for (int i = 0; i < 50; ++i) xv.push_back(std::sin(static_cast<double>(i)));
  auto out = LowerAndRun(n, {Lit(F64, {1, 2, 5, 5}, xv), Lit(F64, {1, 2, 2}, {0.3, 0.8, 0.55, 0.1})});
  ASSERT_EQ(out.size(), 2u);
  ExpectValues(out[0],
               {0.8414709848078965, 0.9893582466233818, -0.27941549819892586, 0.9906073556948704, 0.9129452507276277,
                0.14987720966295234, 0.7625584504796027, 0.9999118601072672, -0.404037645323065, 0.9999118601072672,
                0.9017883476488092, 0.017701925105413577},
               1e-9);
  ExpectValues(out[1], {1, 8, 6, 14, 20, 19, 1, 8, 6, 8, 21, 19}, 1e-9);
}

TEST(LoweringOpsExtraTest, HistogramWithWeights) {
  // torch.histogram(tensor([0.5, 1.5, 2, 2, 3, -1]), bins=3, weight=tensor([1., 2, 3, 4, 5, 6]))
  Node n = MakeNode("aten::histogram", "bin_ct",
                    {{"self", T(F64, {6})},
                     {"bins", Value::Int(3)},
                     {"range", Value::None()},
                     {"weight", T(F64, {6})},
                     {"density", Value::Bool(false)}},
                    {T(F64, {3}), T(F64, {4})});
  auto out = LowerAndRun(n, {Lit(F64, {6}, {0.5, 1.5, 2, 2, 3, -1}), Lit(F64, {6}, {1, 2, 3, 4, 5, 6})});
  ASSERT_EQ(out.size(), 2u);
  ExpectValues(out[0], {6, 3, 12}, 1e-9);
  ExpectValues(out[1], {-1, 0.3333333333333333, 1.6666666666666667, 3}, 1e-15);
}

TEST(LoweringOpsExtraTest, SegmentReduceMeanWithInitial) {
  // torch.segment_reduce(tensor([1., 2, 3, 4, 5, 6]), 'mean', lengths=tensor([2, 0, 3, 1]), initial=2.)
  Node n = MakeNode("aten::segment_reduce", "default",
                    {{"data", T(F64, {6})},
                     {"reduce", Value::String("mean")},
                     {"lengths", T(S64, {4})},
                     {"indices", Value::None()},
                     {"offsets", Value::None()},
                     {"axis", Value::Int(0)},
                     {"unsafe", Value::Bool(false)},
                     {"initial", Value::Float(2)}},
                    {T(F64, {4})});
  auto out = LowerAndRun(n, {Lit(F64, {6}, {1, 2, 3, 4, 5, 6}), Lit(S64, {4}, {2, 0, 3, 1})});
  ASSERT_EQ(out.size(), 1u);
  ExpectValues(out[0], {2.5, 2, 4.666666666666667, 8}, 1e-9);
}

TEST(LoweringOpsExtraTest, IndexReduceAmaxWithoutSelfAndMean) {
  // x.index_reduce(0, tensor([0, 0, 2]), src, 'amax', include_self=False) and 'mean'.
  auto node = [](const char* reduce, bool include_self) {
    return MakeNode("aten::index_reduce", "default",
                    {{"self", T(F64, {3, 2})},
                     {"dim", Value::Int(0)},
                     {"index", T(S64, {3})},
                     {"source", T(F64, {3, 2})},
                     {"reduce", Value::String(reduce)},
                     {"include_self", Value::Bool(include_self)}},
                    {T(F64, {3, 2})});
  };
  std::vector<Literal> args = {Lit(F64, {3, 2}, {1, 2, 3, 4, 5, 6}), Lit(S64, {3}, {0, 0, 2}),
                               Lit(F64, {3, 2}, {2, 8, 3, 1, 10, 1})};
  auto amax = LowerAndRun(node("amax", false), args);
  ASSERT_EQ(amax.size(), 1u);
  ExpectValues(amax[0], {3, 8, 3, 4, 10, 1}, 1e-9);
  auto mean = LowerAndRun(node("mean", true), args);
  ASSERT_EQ(mean.size(), 1u);
  ExpectValues(mean[0], {2, 3.6666666666666665, 3, 4, 7.5, 3.5}, 1e-9);
}

TEST(LoweringOpsExtraTest, RepeatInterleaveIsBoundedDynamic) {
  // torch.repeat_interleave(tensor([2, 0, 3])) = [0, 0, 2, 2, 2]
  Node n = MakeNode("aten::repeat_interleave", "Tensor", {{"repeats", T(S64, {3})}, {"output_size", Value::None()}},
                    {T(S64, {5})});
  bool dynamic = false;
  auto out = LowerAndRun(n, {Lit(S64, {3}, {2, 0, 3})}, nullptr, &dynamic);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(dynamic);
  ExpectValues(out[0], {0, 0, 2, 2, 2}, 1e-9);
}

TEST(LoweringOpsExtraTest, MultilabelMarginLoss) {
  // torch.ops.aten.multilabel_margin_loss_forward(x, [[3, 0, -1, 1], [1, 1, 2, -1]], 0)
  Node n = MakeNode("aten::multilabel_margin_loss_forward", "default",
                    {{"self", T(F64, {2, 4})}, {"target", T(S64, {2, 4})}, {"reduction", Value::Int(0)}},
                    {T(F64, {2}), T(F64, {2, 4})});
  auto out = LowerAndRun(
      n, {Lit(F64, {2, 4}, {0.1, 0.7, 0.2, 0.9, 0.5, 0.4, 0.3, 0.8}), Lit(S64, {2, 4}, {3, 0, -1, 1, 1, 1, 2, -1})});
  ASSERT_EQ(out.size(), 2u);
  ExpectValues(out[0], {0.95, 1.925}, 1e-9);
  ExpectValues(out[1], {1, 0, 0, 1, 0, 1, 1, 0}, 1e-9);
}

TEST(LoweringOpsExtraTest, BadArgumentsAreErrorsNotCrashes) {
  // A 1-d log_probs and a missing traced log_alpha shape.
  Node ctc = MakeNode("aten::_ctc_loss", "Tensor",
                      {{"log_probs", T(F32, {4})},
                       {"targets", T(S64, {2})},
                       {"input_lengths", T(S64, {1})},
                       {"target_lengths", T(S64, {1})}},
                      {});
  EXPECT_FALSE(Lower(ctc, LoweringTable::Builtin()).ok());
  Node seg =
      MakeNode("aten::segment_reduce", "default",
               {{"data", T(F32, {4})}, {"reduce", Value::String("median")}, {"lengths", T(S64, {2})}}, {T(F32, {2})});
  EXPECT_FALSE(Lower(seg, LoweringTable::Builtin()).ok());
  Node rep = MakeNode("aten::repeat_interleave", "Tensor", {{"repeats", T(S64, {3})}}, {});
  EXPECT_FALSE(Lower(rep, LoweringTable::Builtin()).ok());
}

}  // namespace
}  // namespace opprobe::analyzer

namespace opprobe::analyzer {
namespace {

// aten::index over an empty dimension (x: f32[0,4], an empty s64 index): the gather's slice over the indexed
// dimension is 0, not 1, since XLA refuses a slice larger than the dimension (agreement table: "slice size (1) is out
// of bounds for operand dimension (0)"); the result is the empty f32[0,4].
TEST(LoweringIndex, AnEmptyDimensionIsSlicedByZero) {
  using testing::MakeNode;
  using testing::T;
  using testing::TList;
  const auto F32 = hlo::PrimitiveType::F32, S64 = hlo::PrimitiveType::S64;
  Node n = MakeNode("aten::index", "Tensor", {{"self", T(F32, {0, 4})}, {"indices", TList({T(S64, {0})})}},
                    {T(F32, {0, 4})});
  auto m = Lower(n, LoweringTable::Builtin());
  ASSERT_TRUE(m.ok()) << m.status().message();
  const hlo::Instruction* gather = nullptr;
  for (const auto& c : m->module->computations())
    for (const auto& i : c->instructions())
      if (i->opcode == hlo::Opcode::kGather) gather = i.get();
  ASSERT_NE(gather, nullptr) << hlo::ToString(*m->module);
  EXPECT_EQ(gather->rare().gather_slice_sizes, (std::vector<int64_t>{0, 4})) << hlo::ToString(*m->module);
  auto out = testing::LowerAndRun(n, {testing::Lit(F32, {0, 4}, {}), testing::Lit(S64, {0}, {})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].element_count(), 0);
}

}  // namespace
}  // namespace opprobe::analyzer
