// The lowerings of ops that PyTorch 2.x training steps dispatch and 1.13 never did (fused optimizers and
// _foreach_norm in optimizer.cpp, the CPU flash attention in attention.cpp, _safe_softmax, ...), evaluated on small
// inputs. The expected values are what torch 2.9.0 computes for the same inputs (its own kernels, e.g.
// torch._fused_adam_ and torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward); grouped-query attention,
// _grouped_mm and grid_sampler_2d_backward are what the model zoos' training steps (tests/torch2/zoo) dispatch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "lowering_test_util.h"

namespace opprobe::analyzer::testing {
namespace {

using hlo::PrimitiveType;
constexpr PrimitiveType F32 = PrimitiveType::F32;

Argument A(std::string name, Value v) { return {std::move(name), std::move(v)}; }

std::vector<hlo::Literal> FusedAdamRun(const std::string& op) {
  Value p = T(F32, {2}), s = T(F32, {});
  Node n =
      MakeNode(op, "default",
               {A("self", TList({p})), A("grads", TList({p})), A("exp_avgs", TList({p})), A("exp_avg_sqs", TList({p})),
                A("max_exp_avg_sqs", TList({})), A("state_steps", TList({s})), A("lr", Value::Float(0.1)),
                A("beta1", Value::Float(0.9)), A("beta2", Value::Float(0.999)), A("weight_decay", Value::Float(0.1)),
                A("eps", Value::Float(1e-8)), A("amsgrad", Value::Bool(false)), A("maximize", Value::Bool(false)),
                A("grad_scale", Value::None()), A("found_inf", Value::None())},
               {Value::None()});
  return LowerAndRun(n, {Lit(F32, {2}, {1, 2}), Lit(F32, {2}, {0.5, -1}), Lit(F32, {2}, {0.1, 0.2}),
                         Lit(F32, {2}, {0.01, 0.02}), Lit(F32, {}, {3})});
}

TEST(LoweringTorch2Test, FusedAdamUpdatesParamAndBothMoments) {
  auto out = FusedAdamRun("aten::_fused_adam_");
  ASSERT_EQ(out.size(), 3u);  // param, exp_avg, exp_avg_sq
  ExpectValues(out[0], {0.9702151417732239, 1.9859321117401123}, 1e-6);
  ExpectValues(out[1], {0.15, 0.1}, 1e-7);
  ExpectValues(out[2], {0.01035, 0.02062}, 1e-7);
}

TEST(LoweringTorch2Test, FusedAdamWDecaysTheParamItself) {
  auto out = FusedAdamRun("aten::_fused_adamw_");
  ASSERT_EQ(out.size(), 3u);
  ExpectValues(out[0], {0.9620519280433655, 1.968842625617981}, 1e-6);
  ExpectValues(out[1], {0.14, 0.08}, 1e-7);
  ExpectValues(out[2], {0.01024, 0.02098}, 1e-7);
}

TEST(LoweringTorch2Test, FusedSgdNesterovWithWeightDecay) {
  Value p = T(F32, {2});
  Node n =
      MakeNode("aten::_fused_sgd_", "default",
               {A("self", TList({p})), A("grads", TList({p})), A("momentum_buffer_list", TList({p})),
                A("weight_decay", Value::Float(0.1)), A("momentum", Value::Float(0.9)), A("lr", Value::Float(0.1)),
                A("dampening", Value::Float(0)), A("nesterov", Value::Bool(true)), A("maximize", Value::Bool(false)),
                A("is_first_step", Value::Bool(false)), A("grad_scale", Value::None()), A("found_inf", Value::None())},
               {Value::None()});
  auto out = LowerAndRun(n, {Lit(F32, {2}, {1, 2}), Lit(F32, {2}, {0.5, -1}), Lit(F32, {2}, {0.3, -0.2})});
  ASSERT_EQ(out.size(), 2u);  // param, momentum buffer
  ExpectValues(out[0], {0.8617, 2.1682}, 1e-6);
  ExpectValues(out[1], {0.87, -0.98}, 1e-6);
}

TEST(LoweringTorch2Test, ForeachNormIsOneNormPerEntry) {
  Node n =
      MakeNode("aten::_foreach_norm", "Scalar",
               {A("self", TList({T(F32, {1, 2}), T(F32, {3})})), A("ord", Value::Float(2)), A("dtype", Value::None())},
               {T(F32, {}), T(F32, {})});
  auto out = LowerAndRun(n, {Lit(F32, {1, 2}, {3, 4}), Lit(F32, {3}, {1, 2, -2})});
  ASSERT_EQ(out.size(), 2u);
  ExpectValues(out[0], {5}, 1e-6);
  ExpectValues(out[1], {3}, 1e-6);
}

TEST(LoweringTorch2Test, SafeSoftmaxGivesZerosForAFullyMaskedRow) {
  const double inf = std::numeric_limits<double>::infinity();
  Node n = MakeNode("aten::_safe_softmax", "default",
                    {A("self", T(F32, {2, 2})), A("dim", Value::Int(1)), A("dtype", Value::None())}, {T(F32, {2, 2})});
  auto out = LowerAndRun(n, {Lit(F32, {2, 2}, {-inf, -inf, 0, 1.0986122886681098})});
  ASSERT_EQ(out.size(), 1u);
  ExpectValues(out[0], {0, 0, 0.25, 0.75}, 1e-6);
}

const std::vector<double> kQ = {1.5409960746765137, -0.293428897857666, -2.1787893772125244, 0.5684312582015991};
const std::vector<double> kK = {-1.0845223665237427, -1.3985954523086548, 0.40334683656692505,
                                0.8380263447761536,  -0.7192575931549072, -0.40334352850914};
const std::vector<double> kV = {-0.5966353416442871, 0.18203648924827576, -0.8566746115684509,
                                1.1006041765213013,  -1.0711873769760132, 0.1227012425661087};
const std::vector<double> kO = {-0.8566285967826843, 0.7106073498725891, -0.8196231722831726, 0.2666935622692108};
const std::vector<double> kLse = {0.7933660745620728, 1.8497339487075806};

TEST(LoweringTorch2Test, CpuFlashAttentionForwardReturnsOutputAndLogSumExp) {
  Node n = MakeNode("aten::_scaled_dot_product_flash_attention_for_cpu", "default",
                    {A("query", T(F32, {1, 1, 2, 2})), A("key", T(F32, {1, 1, 3, 2})), A("value", T(F32, {1, 1, 3, 2})),
                     A("dropout_p", Value::Float(0)), A("is_causal", Value::Bool(false)), A("attn_mask", Value::None()),
                     A("scale", Value::None())},
                    {T(F32, {1, 1, 2, 2}), T(F32, {1, 1, 2})});
  auto out = LowerAndRun(n, {Lit(F32, {1, 1, 2, 2}, kQ), Lit(F32, {1, 1, 3, 2}, kK), Lit(F32, {1, 1, 3, 2}, kV)});
  ASSERT_EQ(out.size(), 2u);
  ExpectValues(out[0], kO, 1e-5);
  ExpectValues(out[1], kLse, 1e-5);
}

TEST(LoweringTorch2Test, CpuFlashAttentionBackwardMatchesTorch) {
  Node n = MakeNode("aten::_scaled_dot_product_flash_attention_for_cpu_backward", "default",
                    {A("grad_out", T(F32, {1, 1, 2, 2})), A("query", T(F32, {1, 1, 2, 2})),
                     A("key", T(F32, {1, 1, 3, 2})), A("value", T(F32, {1, 1, 3, 2})), A("out", T(F32, {1, 1, 2, 2})),
                     A("logsumexp", T(F32, {1, 1, 2})), A("dropout_p", Value::Float(0)),
                     A("is_causal", Value::Bool(false)), A("attn_mask", Value::None()), A("scale", Value::None())},
                    {T(F32, {1, 1, 2, 2}), T(F32, {1, 1, 3, 2}), T(F32, {1, 1, 3, 2})});
  auto out = LowerAndRun(
      n, {Lit(F32, {1, 1, 2, 2}, {1, -0.5, 1, -0.5}), Lit(F32, {1, 1, 2, 2}, kQ), Lit(F32, {1, 1, 3, 2}, kK),
          Lit(F32, {1, 1, 3, 2}, kV), Lit(F32, {1, 1, 2, 2}, kO), Lit(F32, {1, 1, 2}, kLse)});
  ASSERT_EQ(out.size(), 3u);
  ExpectValues(out[0], {-0.11645112186670303, -0.16942784190177917, -0.07530494034290314, -0.13614830374717712}, 1e-5);
  ExpectValues(out[1],
               {-0.08887351304292679, 0.030653536319732666, -0.042614810168743134, 0.0022814124822616577,
                0.13148817420005798, -0.03293491154909134},
               1e-5);
  ExpectValues(out[2],
               {0.6620796322822571, -0.33103981614112854, 0.7082644104957581, -0.35413220524787903, 0.6296560168266296,
                -0.3148280084133148},
               1e-5);
}

// sin(i * a + b) for i < n: the inputs the expected values below were computed from (torch.sin(torch.arange(n) * a +
// b)).
std::vector<double> Seq(int n, double a, double b) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(std::sin(static_cast<float>(i * a) + b));
  return v;
}
// (7 i mod m) - 2 for i < n: small integers, exact in every float type.
std::vector<double> Small(int n, int m) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(static_cast<double>((i * 7) % m - 2));
  return v;
}

// Grouped-query attention (Llama, Qwen2, Gemma with num_key_value_heads < num_attention_heads): 4 query heads share
// 2 key/value heads, query head h reading key/value head h / 2; causal. The gradients of the keys and values are
// summed over the query heads that read them.
TEST(LoweringTorch2Test, CpuFlashAttentionWithFewerKeyValueHeadsForwardAndBackward) {
  std::vector<double> q = Seq(16, 0.37, 0.5), k = Seq(12, 0.71, 0.2), v = Seq(12, 0.53, 1.1), go = Seq(16, 0.29, 0.3);
  std::vector<double> o = {0.8912074,   0.99824798,  0.85411316,  0.64986926,  0.8912074,   0.99824798,
                           0.85788274,  0.6852721,   -0.90796715, -0.99523985, -0.88505888, -0.85720783,
                           -0.90796715, -0.99523985, -0.86906081, -0.76081252};
  std::vector<double> lse = {0.49404678, 1.65843415, 0.52607167, 0.9005661,
                             0.61735934, 1.48930943, 1.19145322, 1.03727651};
  Node fwd = MakeNode("aten::_scaled_dot_product_flash_attention_for_cpu", "default",
                      {A("query", T(F32, {1, 4, 2, 2})), A("key", T(F32, {1, 2, 3, 2})),
                       A("value", T(F32, {1, 2, 3, 2})), A("dropout_p", Value::Float(0)),
                       A("is_causal", Value::Bool(true)), A("attn_mask", Value::None()), A("scale", Value::None())},
                      {T(F32, {1, 4, 2, 2}), T(F32, {1, 4, 2})});
  auto out = LowerAndRun(fwd, {Lit(F32, {1, 4, 2, 2}, q), Lit(F32, {1, 2, 3, 2}, k), Lit(F32, {1, 2, 3, 2}, v)});
  ASSERT_EQ(out.size(), 2u);
  ExpectValues(out[0], o, 1e-5);
  ExpectValues(out[1], lse, 1e-5);
  Node bwd = MakeNode("aten::_scaled_dot_product_flash_attention_for_cpu_backward", "default",
                      {A("grad_out", T(F32, {1, 4, 2, 2})), A("query", T(F32, {1, 4, 2, 2})),
                       A("key", T(F32, {1, 2, 3, 2})), A("value", T(F32, {1, 2, 3, 2})), A("out", T(F32, {1, 4, 2, 2})),
                       A("logsumexp", T(F32, {1, 4, 2})), A("dropout_p", Value::Float(0)),
                       A("is_causal", Value::Bool(true)), A("attn_mask", Value::None()), A("scale", Value::None())},
                      {T(F32, {1, 4, 2, 2}), T(F32, {1, 2, 3, 2}), T(F32, {1, 2, 3, 2})});
  out = LowerAndRun(bwd, {Lit(F32, {1, 4, 2, 2}, go), Lit(F32, {1, 4, 2, 2}, q), Lit(F32, {1, 2, 3, 2}, k),
                          Lit(F32, {1, 2, 3, 2}, v), Lit(F32, {1, 4, 2, 2}, o), Lit(F32, {1, 4, 2}, lse)});
  ASSERT_EQ(out.size(), 3u);
  ExpectValues(out[0],
               {0, 0, -0.07509844, 0.00601823, 0, 0, -0.06434441, 0.00515638, 0, 0, -0.01514831, -0.03153796, 0, 0,
                -0.06666408, -0.13879095},
               1e-5);
  ExpectValues(
      out[1],
      {0.12167871, 0.09793404, -0.12167864, -0.09793397, 0, 0, -0.08858012, -0.05277998, 0.08858009, 0.05277998, 0, 0},
      1e-5);
  ExpectValues(
      out[2],
      {1.97730803, 2.21149087, 0.97474802, 0.97499102, 0, 0, -0.7104212, -1.43713903, -0.38415918, -0.47345528, 0, 0},
      1e-5);
}

TEST(LoweringTorch2Test, CpuFlashAttentionRejectsHeadsThatDoNotGroup) {
  Node n = MakeNode("aten::_scaled_dot_product_flash_attention_for_cpu", "default",
                    {A("query", T(F32, {1, 3, 2, 2})), A("key", T(F32, {1, 2, 3, 2})), A("value", T(F32, {1, 2, 3, 2})),
                     A("dropout_p", Value::Float(0)), A("is_causal", Value::Bool(false))},
                    {T(F32, {1, 3, 2, 2}), T(F32, {1, 3, 2})});
  auto m = Lower(n, LoweringTable::Builtin());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("3 query heads are not a multiple of 2 key/value heads"), std::string::npos)
      << m.status().message();
}

// _grouped_mm (transformers' grouped_mm experts, Mixtral-style MoE), each operand layout; torch 2.9.0's CPU kernel.
Node GroupedMm(std::vector<int64_t> x, std::vector<int64_t> y, int64_t groups, std::vector<int64_t> out) {
  return MakeNode(
      "aten::_grouped_mm", "default",
      {A("self", T(F32, std::move(x))), A("mat2", T(F32, std::move(y))),
       A("offs", T(hlo::PrimitiveType::S32, {groups})), A("bias", Value::None()), A("out_dtype", Value::None())},
      {T(F32, std::move(out))});
}

TEST(LoweringTorch2Test, GroupedMmRowGroupsTimesPerGroupWeights) {  // [5, 4] x [2, 4, 4], rows {0, 1} and {2, 3, 4}
  auto out = LowerAndRun(
      GroupedMm({5, 4}, {2, 4, 4}, 2, {5, 4}),
      {Lit(F32, {5, 4}, Small(20, 5)), Lit(F32, {2, 4, 4}, Small(32, 3)), Lit(hlo::PrimitiveType::S32, {2}, {2, 5})});
  ASSERT_EQ(out.size(), 1u);
  ExpectValues(out[0], {6, -1, -2, 6, -4, -3, 4, -4, 5, 0, 1, 5, -2, 1, 1, -2, 1, -3, -4, 1}, 1e-6);
}

TEST(LoweringTorch2Test, GroupedMmPerGroupInputsTimesColumnGroups) {  // [2, 3, 4] x [4, 8], columns 0..2 and 3..7
  auto out = LowerAndRun(
      GroupedMm({2, 3, 4}, {4, 8}, 2, {3, 8}),
      {Lit(F32, {2, 3, 4}, Small(24, 5)), Lit(F32, {4, 8}, Small(32, 3)), Lit(hlo::PrimitiveType::S32, {2}, {3, 8})});
  ASSERT_EQ(out.size(), 1u);
  ExpectValues(out[0], {4, 3, -4, -1, 2, -1, -1, 2, -6, 1, 2, -1, -5, 0, -1, -5, 4, -1, 3, 4, 3, -4, 4, 3}, 1e-6);
}

TEST(LoweringTorch2Test,
     GroupedMmContractedGroupsGiveOneProductPerGroup) {  // [2, 8] x [8, 4], K cut at 3: the weight gradient
  auto out = LowerAndRun(
      GroupedMm({2, 8}, {8, 4}, 2, {2, 2, 4}),
      {Lit(F32, {2, 8}, Small(16, 5)), Lit(F32, {8, 4}, Small(32, 3)), Lit(hlo::PrimitiveType::S32, {2}, {3, 8})});
  ASSERT_EQ(out.size(), 1u);
  ExpectValues(out[0], {4, -2, -2, 4, 1, 5, 0, 1, -1, 5, -4, -1, -2, 1, 1, -2}, 1e-6);
}

// grid_sampler_2d_backward (the training step of torchvision's RAFT): input [1, 2, 3, 3], grid [1, 2, 2, 2] with one
// point outside the input; torch 2.9.0's CPU kernel for each mode.
struct GridCase {
  int64_t interp, padding;
  bool align;
  std::vector<bool> mask;
};

std::vector<hlo::Literal> GridBackward(const GridCase& c) {
  std::vector<Value> outs;
  if (c.mask[0]) outs.push_back(T(F32, {1, 2, 3, 3}));
  else outs.push_back(Value::None());
  outs.push_back(T(F32, {1, 2, 2, 2}));
  Node n = MakeNode(
      "aten::grid_sampler_2d_backward", "default",
      {A("grad_output", T(F32, {1, 2, 2, 2})), A("input", T(F32, {1, 2, 3, 3})), A("grid", T(F32, {1, 2, 2, 2})),
       A("interpolation_mode", Value::Int(c.interp)), A("padding_mode", Value::Int(c.padding)),
       A("align_corners", Value::Bool(c.align)), A("output_mask", Bools(c.mask))},
      outs);
  return LowerAndRun(n, {Lit(F32, {1, 2, 2, 2}, Seq(8, 0.45, 0.7)), Lit(F32, {1, 2, 3, 3}, Seq(18, 0.61, 0.1)),
                         Lit(F32, {1, 2, 2, 2}, {-0.9, -0.3, 0.25, 0.8, 1.2, -0.5, -0.1, 0.05})});
}

TEST(LoweringTorch2Test, GridSamplerBackwardBilinearZeros) {
  auto out = GridBackward({0, 0, false, {true, true}});
  ASSERT_EQ(out.size(), 2u);
  ExpectValues(out[0],
               {0.18843371, 0.0, 0.1499359, 0.35342938, 0.6976887, 0.04997863, 0.00998282, 0.51295137, 0.27382925,
                0.17505312, 0.0, -0.03833111, 0.12367952, -0.511554, -0.01277704, -0.00731953, 0.05373401, 0.05712679},
               1e-5);
  ExpectValues(out[1],
               {0.7308082, 1.42759347, -0.12591547, 1.46912384, -0.87392819, -0.30864176, -0.51812989, -0.73485297},
               1e-5);
}

TEST(LoweringTorch2Test, GridSamplerBackwardBilinearBorderAlignCorners) {  // the clipped point has no x gradient
  auto out = GridBackward({0, 1, true, {true, true}});
  ASSERT_EQ(out.size(), 2u);
  ExpectValues(
      out[0],
      {0.17393878, 0.01932654, 0.49978679, 0.49015656, 0.9407047, 0.545425, 0.00443681, 0.58758962, 0.18255278,
       0.16158748, 0.01795417, -0.12777048, 0.31522804, -0.48582798, -0.11824935, -0.00325312, 0.08497545, 0.03808452},
      1e-5);
  ExpectValues(out[1], {0.07190035, 1.37614119, -0.19937828, -1.52607107, 0, -1.02880692, -0.35654017, -0.46766138},
               1e-5);
}

TEST(LoweringTorch2Test, GridSamplerBackwardNearestHasNoGridGradient) {
  auto out = GridBackward({1, 0, false, {true, true}});
  ASSERT_EQ(out.size(), 2u);
  ExpectValues(
      out[0],
      {0, 0, 0, 0.64421767, 0.88736236, 0, 0, 0.91276395, 0, 0, 0, 0, 0.59847212, -0.65062505, 0, 0, 0.19042259, 0},
      1e-5);
  ExpectValues(out[1], {0, 0, 0, 0, 0, 0, 0, 0}, 0);
}

TEST(LoweringTorch2Test, GridSamplerBackwardWithoutTheInputsGradient) {  // output_mask [false, true]: grad_grid only
  auto out = GridBackward({0, 0, true, {false, true}});
  ASSERT_EQ(out.size(), 1u);
  ExpectValues(out[0],
               {0.07190035, 1.37614119, -0.19937828, -1.52607107, -0.3254171, -0.82304549, -0.35654017, -0.46766138},
               1e-5);
}

// _sample_dirichlet (a Beta/Dirichlet rsample in pi0.5's training step): Gamma draws by rejection in a while loop,
// normalized per row; concentrations below and above 1. Random: each row is positive and sums to 1.
TEST(LoweringTorch2Test, SampleDirichletRowsArePositiveAndSumToOne) {
  Node n = MakeNode("aten::_sample_dirichlet", "default", {A("self", T(F32, {3, 2})), A("generator", Value::None())},
                    {T(F32, {3, 2})});
  auto out = LowerAndRun(n, {Lit(F32, {3, 2}, {0.3, 0.5, 1.0, 1.0, 7.5, 2.0})});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].element_count(), 6);
  for (int64_t r = 0; r < 3; ++r) {
    double x = out[0].GetAsDouble(2 * r), y = out[0].GetAsDouble(2 * r + 1);
    EXPECT_GT(x, 0);
    EXPECT_GT(y, 0);
    EXPECT_NEAR(x + y, 1.0, 1e-5) << "row " << r;
  }
}

// _is_all_true (torch._assert_async / a tensor's truth value): one bool, whether every element is true.
TEST(LoweringTorch2Test, IsAllTrueReducesEveryElement) {
  Node n = MakeNode("aten::_is_all_true", "default", {A("self", T(hlo::PrimitiveType::PRED, {2, 2}))},
                    {T(hlo::PrimitiveType::PRED, {})});
  auto yes = LowerAndRun(n, {Lit(hlo::PrimitiveType::PRED, {2, 2}, {1, 1, 1, 1})});
  auto no = LowerAndRun(n, {Lit(hlo::PrimitiveType::PRED, {2, 2}, {1, 0, 1, 1})});
  ASSERT_EQ(yes.size(), 1u);
  ASSERT_EQ(no.size(), 1u);
  ExpectValues(yes[0], {1}, 0);
  ExpectValues(no[0], {0}, 0);
}

// _assert_async (timm's gemma4_vit pooler): no result, and XLA has no device-side assertion, so it lowers to no
// instruction: a module without a root and without probe units, as _linalg_check_errors.
TEST(LoweringTorch2Test, AssertAsyncLowersToNoInstruction) {
  Node n = MakeNode("aten::_assert_async", "msg",
                    {A("self", T(hlo::PrimitiveType::PRED, {})), A("assert_msg", Value::String("bad"))}, {});
  auto m = Lower(n, LoweringTable::Builtin());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->module->entry()->root(), nullptr);
  EXPECT_TRUE(m->units.empty());
  EXPECT_NE(m->note.find("no instruction"), std::string::npos) << m->note;
  Node many = MakeNode("aten::_assert_async", "default", {A("self", T(hlo::PrimitiveType::PRED, {2}))}, {});
  EXPECT_FALSE(Lower(many, LoweringTable::Builtin()).ok());  // PyTorch refuses more than one element too
}

// gather with an empty index into an empty dimension (torch.gather(f32[2,0], 1, s64[2,0]) is PyTorch's f32[2,0]): the
// gather slices that dimension by 0, not 1, which XLA would refuse ("slice size 1 ... outside [0, 0]").
TEST(LoweringTorch2Test, GatherWithAnEmptyIndexIsEmpty) {
  Node n = MakeNode("aten::gather", "default",
                    {A("self", T(F32, {2, 0})), A("dim", Value::Int(1)), A("index", T(hlo::PrimitiveType::S64, {2, 0})),
                     A("sparse_grad", Value::Bool(false))},
                    {T(F32, {2, 0})});
  auto out = LowerAndRun(n, {Lit(F32, {2, 0}, {}), Lit(hlo::PrimitiveType::S64, {2, 0}, {})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape().dimensions(), (std::vector<int64_t>{2, 0}));
}

// masked_scatter_backward (BLIP-2 and InstructBLIP's image query tokens scattered into the text's embeddings): the
// selected elements of grad_output in order, then zeros up to the source's numel, as `sizes`; the mask broadcasts along
// the last dimension as theirs does. Values are torch 2.9.0's for grad_output = arange + 1.
TEST(LoweringTorch2Test, MaskedScatterBackwardIsTheSelectedGradientPaddedWithZeros) {
  const PrimitiveType P = PrimitiveType::PRED;
  const std::vector<double> grad = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<double> mask = {1, 0, 1, 0, 1, 0};  // [2, 3, 1]: rows (0,0), (0,2) and (1,1)
  for (const auto& [sizes, want] : std::vector<std::pair<std::vector<int64_t>, std::vector<double>>>{
           {{2, 2, 2}, {1, 2, 5, 6, 9, 10, 0, 0}}, {{3, 2}, {1, 2, 5, 6, 9, 10}}}) {
    Node n = MakeNode("aten::masked_scatter_backward", "default",
                      {A("grad_output", T(F32, {2, 3, 2})), A("mask", T(P, {2, 3, 1})), A("sizes", Ints(sizes))},
                      {T(F32, sizes)});
    auto out = LowerAndRun(n, {Lit(F32, {2, 3, 2}, grad), Lit(P, {2, 3, 1}, mask)});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape().dimensions(), sizes);
    ExpectValues(out[0], want, 0);
  }
}

// index.Tensor with a boolean mask after full slices (x[:, mask]; a 2-d mask; a mask beside an integer index): the mask
// is its nonzero() coordinates, bounded by the mask's size, and the result's dimension there is set to the selected
// count. Values are torch 2.9.0's for x = arange; `bounded` checks the first `count` entries along `dyn`.
void ExpectMaskIndex(const std::vector<Value>& indices, std::vector<hlo::Literal> args,
                     const std::vector<int64_t>& want_dims, int64_t dyn, const std::vector<double>& want) {
  Value x = T(F32, {2, 3, 2});
  Node n = MakeNode("aten::index", "Tensor", {A("self", x), A("indices", TList(indices))}, {T(F32, want_dims)});
  bool dynamic = false;
  std::string text;
  args.insert(args.begin(), Lit(F32, {2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  auto out = LowerAndRun(n, args, &text, &dynamic);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(dynamic);
  EXPECT_NE(text.find("set-dimension-size"), std::string::npos) << text;
  std::vector<int64_t> gd = out[0].shape().dimensions();
  ASSERT_EQ(gd.size(), want_dims.size());
  // Row-major walk over want_dims, read at the same coordinates of the bounded result.
  std::vector<int64_t> c(want_dims.size(), 0);
  for (size_t i = 0; i < want.size(); ++i) {
    int64_t flat = 0;
    for (size_t k = 0; k < gd.size(); ++k) flat = flat * gd[k] + c[k];
    EXPECT_EQ(out[0].GetAsDouble(flat), want[i]) << "element " << i << "\n" << text;
    for (int64_t k = static_cast<int64_t>(c.size()) - 1; k >= 0; --k) {
      if (++c[static_cast<size_t>(k)] < want_dims[static_cast<size_t>(k)]) break;
      c[static_cast<size_t>(k)] = 0;
    }
  }
  EXPECT_GE(gd[static_cast<size_t>(dyn)], want_dims[static_cast<size_t>(dyn)]);
}

TEST(LoweringTorch2Test, BooleanMaskAfterAFullSliceSelectsAlongThatDimension) {
  const auto PRED = hlo::PrimitiveType::PRED;
  // x[:, [True, False, True]]
  ExpectMaskIndex({Value::None(), T(PRED, {3})}, {Lit(PRED, {3}, {1, 0, 1})}, {2, 2, 2}, 1, {0, 1, 4, 5, 6, 7, 10, 11});
  // x[:, :, [False, True]]: the mask over the last dimension
  ExpectMaskIndex({Value::None(), Value::None(), T(PRED, {2})}, {Lit(PRED, {2}, {0, 1})}, {2, 3, 1}, 2,
                  {1, 3, 5, 7, 9, 11});
  // x[:, mask2d] over dims 1 and 2: [[0, 3, 4], [6, 9, 10]]
  ExpectMaskIndex({Value::None(), T(PRED, {3, 2})}, {Lit(PRED, {3, 2}, {1, 0, 0, 1, 1, 0})}, {2, 3}, 1,
                  {0, 3, 4, 6, 9, 10});
  // aten.index.Tensor(x, [tensor([1]), mask]): the integer index broadcasts against the mask's coordinates
  ExpectMaskIndex({T(hlo::PrimitiveType::S64, {1}), T(PRED, {3})},
                  {Lit(hlo::PrimitiveType::S64, {1}, {1}), Lit(PRED, {3}, {1, 0, 1})}, {2, 2}, 0, {6, 7, 10, 11});
  // aten.index.Tensor(x, [None, mask, tensor(1)])
  ExpectMaskIndex({Value::None(), T(PRED, {3}), T(hlo::PrimitiveType::S64, {})},
                  {Lit(PRED, {3}, {1, 0, 1}), Lit(hlo::PrimitiveType::S64, {}, {1})}, {2, 2}, 1, {1, 5, 7, 11});
}

// set_ from a storage (copy.deepcopy of a tensor in a forward: Dory): the viewed storage enters as a parameter of the
// recorded result's type and is the result, as a clone of device data on XLA; torch 2.9.0 records deepcopy(f32[2,3])
// as empty(u8[0]).set_(storage of 24 bytes) and new_empty(f32[]).set_(storage, 0, [2, 3], [3, 1]).
TEST(LoweringTorch2Test, SetFromAStorageIsTheViewedData) {
  const auto U8 = hlo::PrimitiveType::U8;
  const Value storage = Value::String("[torch.storage.UntypedStorage(device=cpu) of size 24]");
  Node bytes = MakeNode("aten::set_", "source_Storage", {A("self", T(U8, {0})), A("source", storage)}, {T(U8, {24})});
  std::vector<double> b24(24);
  for (size_t i = 0; i < b24.size(); ++i) b24[i] = static_cast<double>(i * 7 % 256);
  auto out = LowerAndRun(bytes, {Lit(U8, {0}, {}), Lit(U8, {24}, b24)});
  ASSERT_EQ(out.size(), 1u);
  ExpectValues(out[0], b24, 0);
  Node view = MakeNode("aten::set_", "source_Storage_storage_offset",
                       {A("self", T(F32, {})), A("source", storage), A("storage_offset", Value::Int(0)),
                        A("size", Ints({2, 3})), A("stride", Ints({3, 1}))},
                       {T(F32, {2, 3})});
  auto m = Lower(view, LoweringTable::Builtin());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(m->units.empty());  // no instruction, as clone()
  auto got = LowerAndRun(view, {Lit(F32, {}, {0}), Lit(F32, {2, 3}, {1, -2, 3, -4, 5, -6})});
  ASSERT_EQ(got.size(), 1u);
  ExpectValues(got[0], {1, -2, 3, -4, 5, -6}, 0);
}

// aten::mkldnn_rnn_layer and its backward (nn.LSTM on the CPU, PyTorch 2.x: oneDNN's kernel, one layer and direction
// per call; timm's Sequencer). Inputs are sin(0.37 k + phase) * scale over the flat index k (Seq), as the values below
// were made: torch 2.9.0's own kernels, torch.ops.aten.mkldnn_rnn_layer(x, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse, [],
// 2, H, 1, has_biases, False, batch_first, True) and mkldnn_rnn_layer_backward on its outputs and workspace.
std::vector<double> Seq(int64_t n, double phase, double scale = 1) {
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t k = 0; k < v.size(); ++k) v[k] = std::sin(0.37 * static_cast<double>(k) + phase) * scale;
  return v;
}

int64_t Numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

struct LstmCase {
  int64_t T, B, I, H;
  bool reverse, has_biases, batch_first, grad_output, grad_hy, grad_cy;
  std::vector<std::vector<double>> forward;   // output, hy, cy
  std::vector<std::vector<double>> backward;  // grads of input, w_ih, w_hh, b_ih, b_hh, hx, cx
};

constexpr int64_t kWorkspace = 36864;  // the bytes of oneDNN's workspace torch 2.9.0 records for these shapes

// x, w_ih, w_hh, b_ih, b_hh, hx, cx: their argument values and literals.
std::vector<Argument> LstmArgs(const LstmCase& c, const std::vector<std::string>& names) {
  std::vector<std::vector<int64_t>> dims = {{c.T, c.B, c.I}, {4 * c.H, c.I}, {4 * c.H, c.H}, {4 * c.H},
                                            {4 * c.H},       {c.B, c.H},     {c.B, c.H}};
  std::vector<Argument> args;
  for (size_t i = 0; i < dims.size(); ++i) args.push_back(A(names[i], T(F32, dims[i])));
  return args;
}
std::vector<hlo::Literal> LstmLits(const LstmCase& c) {
  int64_t T = c.T, B = c.B, I = c.I, H = c.H;
  return {Lit(F32, {T, B, I}, Seq(T * B * I, 0.1)),       Lit(F32, {4 * H, I}, Seq(4 * H * I, 0.5, 0.6)),
          Lit(F32, {4 * H, H}, Seq(4 * H * H, 0.9, 0.5)), Lit(F32, {4 * H}, Seq(4 * H, 1.3, 0.3)),
          Lit(F32, {4 * H}, Seq(4 * H, 1.7, 0.2)),        Lit(F32, {B, H}, Seq(B * H, 2.1, 0.5)),
          Lit(F32, {B, H}, Seq(B * H, 2.5, 0.5))};
}

Node LstmForwardNode(const LstmCase& c, std::vector<int64_t> batch_sizes = {}, int64_t mode = 2) {
  std::vector<Argument> args = LstmArgs(c, {"input", "weight0", "weight1", "weight2", "weight3", "hx_", "cx_"});
  for (Argument a : {A("reverse", Value::Bool(c.reverse)), A("batch_sizes", Ints(std::move(batch_sizes))),
                     A("mode", Value::Int(mode)), A("hidden_size", Value::Int(c.H)), A("num_layers", Value::Int(1)),
                     A("has_biases", Value::Bool(c.has_biases)), A("bidirectional", Value::Bool(false)),
                     A("batch_first", Value::Bool(c.batch_first)), A("train", Value::Bool(true))})
    args.push_back(a);
  return MakeNode(
      "aten::mkldnn_rnn_layer", "default", args,
      {T(F32, {c.T, c.B, c.H}), T(F32, {c.B, c.H}), T(F32, {c.B, c.H}), T(hlo::PrimitiveType::U8, {kWorkspace})});
}

std::vector<hlo::Literal> RunLstmForward(const LstmCase& c) { return LowerAndRun(LstmForwardNode(c), LstmLits(c)); }

// The backward's node; `lits` (when given) receives its inputs' literals.
Node LstmBackwardNode(const LstmCase& c, std::vector<hlo::Literal>* lits) {
  std::vector<Argument> args = LstmArgs(c, {"input", "weight1", "weight2", "weight3", "weight4", "hx_", "cx_tmp"});
  std::vector<hlo::Literal> ignored;
  if (!lits) lits = &ignored;
  *lits = LstmLits(c);
  std::vector<int64_t> seq{c.T, c.B, c.H}, state{c.B, c.H};
  args.push_back(A("output", T(F32, seq)));
  args.push_back(A("hy_", T(F32, state)));
  args.push_back(A("cy_", T(F32, state)));
  if (c.forward.size() == 3) {
    lits->push_back(Lit(F32, seq, c.forward[0]));
    lits->push_back(Lit(F32, state, c.forward[1]));
    lits->push_back(Lit(F32, state, c.forward[2]));
  }
  auto grad = [&](const char* name, bool given, const std::vector<int64_t>& dims, double phase) {
    args.push_back(A(name, given ? T(F32, dims) : Value::None()));
    if (given) lits->push_back(Lit(F32, dims, Seq(Numel(dims), phase)));
  };
  grad("grad_output", c.grad_output, seq, 2.9);
  grad("grad_hy", c.grad_hy, state, 3.3);
  grad("grad_cy", c.grad_cy, state, 3.7);
  for (Argument a :
       {A("reverse", Value::Bool(c.reverse)), A("mode", Value::Int(2)), A("hidden_size", Value::Int(c.H)),
        A("num_layers", Value::Int(1)), A("has_biases", Value::Bool(c.has_biases)), A("train", Value::Bool(true)),
        A("bidirectional", Value::Bool(false)), A("batch_sizes", Ints({})),
        A("batch_first", Value::Bool(c.batch_first)), A("workspace", T(hlo::PrimitiveType::U8, {kWorkspace}))})
    args.push_back(a);
  lits->push_back(Lit(hlo::PrimitiveType::U8, {kWorkspace}, {}));  // never read: the lowering recomputes the gates
  return MakeNode("aten::mkldnn_rnn_layer_backward", "default", args,
                  {T(F32, {c.T, c.B, c.I}), T(F32, {4 * c.H, c.I}), T(F32, {4 * c.H, c.H}), T(F32, {4 * c.H}),
                   T(F32, {4 * c.H}), T(F32, state), T(F32, state)});
}

std::vector<hlo::Literal> RunLstmBackward(const LstmCase& c) {
  std::vector<hlo::Literal> lits;
  Node n = LstmBackwardNode(c, &lits);
  return LowerAndRun(n, lits);
}

const LstmCase kForwardBatchOfTwo = {
    3,
    2,
    2,
    2,
    false,
    true,
    false,
    true,
    true,
    false,
    {{-0.016679175198078156, -0.1484420895576477, -0.07753881067037582, -0.20613129436969757, -0.06709998100996017,
      -0.21421606838703156, -0.09255330264568329, -0.23328499495983124, -0.0033377360086888075, -0.16374921798706055,
      0.08731450140476227, -0.09631066769361496},
     {-0.0033377360086888075, -0.16374921798706055, 0.08731450140476227, -0.09631066769361496},
     {-0.0069268494844436646, -0.42914944887161255, 0.13453409075737, -0.20227698981761932}},
    {{0.06102389097213745, 0.08852595090866089, 0.061841025948524475, 0.12963852286338806, 0.03500087186694145,
      0.11268538236618042, 0.06786845624446869, 0.14167331159114838, 0.0715695396065712, 0.10159070044755936,
      0.026888800784945488, 0.02962660603225231},
     {0.071620874106884, 0.09454537183046341, 0.07791157811880112, 0.09023503214120865, 0.011455310508608818,
      -0.012623649090528488, 0.04106998071074486, 0.006061343010514975, -0.5304933190345764, -0.44387543201446533,
      -0.19653652608394623, -0.15302862226963043, 0.11088617891073227, 0.09659256786108017, 0.2720428705215454,
      0.22222900390625},
     {0.01275003980845213, 0.01227523386478424, 0.012074054218828678, 0.003762361593544483, -0.009324979037046432,
      -0.018743129447102547, -0.009266294538974762, -0.029279306530952454, -0.0341896116733551, 0.11130248010158539,
      -0.019214622676372528, 0.04224349930882454, -0.002454777481034398, -0.01725461520254612, -0.004023924469947815,
      -0.06121222674846649},
     {0.0003635771572589874, 0.057435572147369385, 0.06620100140571594, 0.14058443903923035, -1.0127869844436646,
      -0.43441593647003174, 0.10602877289056778, 0.3963361978530884},
     {0.0003635771572589874, 0.057435572147369385, 0.06620100140571594, 0.14058443903923035, -1.0127869844436646,
      -0.43441593647003174, 0.10602877289056778, 0.3963361978530884},
     {0.07522537559270859, 0.08725247532129288, 0.11206349730491638, 0.15247300267219543},
     {-0.10773717612028122, -0.08093646168708801, -0.26405200362205505, -0.1396159827709198}}};
const LstmCase kReversedWithoutBiases = {
    4,
    1,
    3,
    2,
    true,
    false,
    true,
    true,
    true,
    true,
    {{-0.37704911828041077, 0.1888940930366516, -0.5302942991256714, 0.1672513782978058, -0.1147947832942009,
      -0.05213252454996109, 0.07207030802965164, -0.038541652262210846},
     {-0.37704911828041077, 0.1888940930366516},
     {-0.5865745544433594, 0.3140581250190735}},
    {{0.19335079193115234, 0.04710538685321808, -0.1055155023932457, 0.08511810749769211, -0.015376389026641846,
      -0.11378976702690125, 0.21958495676517487, 0.1325901299715042, 0.02764986827969551, 0.0878918468952179,
      0.0493377186357975, 0.004105963744223118},
     {0.11383453011512756,   0.1243545338511467,     0.11804373562335968,   -0.045865919440984726, -0.10398925840854645,
      -0.1480381339788437,   -0.0055668107233941555, 0.05153268575668335,   0.10165747255086899,   0.01620596833527088,
      -0.004516967106610537, -0.024628549814224243,  -0.20369620621204376,  -0.18735341727733612,  -0.14565323293209076,
      -0.7680640816688538,   -0.8571524024009705,    -0.8302291631698608,   0.0377274826169014,    0.03861354663968086,
      0.034273453056812286,  -0.010803482495248318,  -0.035045769065618515, -0.05454476922750473},
     {-0.04341019317507744, -0.011609974317252636, 0.08216284215450287, -0.0028814473189413548, -0.06641567498445511,
      0.006269742734730244, 0.025740576907992363, -0.013466515578329563, 0.06893885135650635, -0.07167649269104004,
      0.2985912561416626, -0.08733981847763062, -0.009713108651340008, -0.014073068276047707, 0.03093424253165722,
      -0.00426084129139781},
     {0.12098528444766998, -0.08573834598064423, 0.02226996049284935, -0.04221931844949722, -0.664819598197937,
      -1.556542158126831, -0.007905609905719757, -0.03604248911142349},
     {0.12098528444766998, -0.08573834598064423, 0.02226996049284935, -0.04221931844949722, -0.664819598197937,
      -1.556542158126831, -0.007905609905719757, -0.03604248911142349},
     {0.09549959748983383, 0.10681995749473572},
     {-0.24987879395484924, -0.2509775161743164}}};
const LstmCase kThreeHiddenNoGradOutput = {
    2,
    3,
    2,
    3,
    false,
    true,
    true,
    false,
    true,
    true,
    {{0.021763861179351807, -0.06402085721492767, -0.1784605234861374, -0.4280335307121277, -0.3750063478946686,
      -0.01258797850459814, -0.5785672664642334, -0.4699343144893646, 0.08888030797243118, -0.24554283916950226,
      -0.26633504033088684, -0.11819007247686386, -0.2883860468864441, -0.24110910296440125, -0.07097307592630386,
      -0.17001090943813324, -0.1532401144504547, -0.021615268662571907},
     {-0.24554283916950226, -0.26633504033088684, -0.11819007247686386, -0.2883860468864441, -0.24110910296440125,
      -0.07097307592630386, -0.17001090943813324, -0.1532401144504547, -0.021615268662571907},
     {-0.4832208752632141, -0.5227636694908142, -0.2440994828939438, -0.7678704857826233, -0.6939212679862976,
      -0.20784689486026764, -0.6052242517471313, -0.6933232545852661, -0.08645395934581757}},
    {{0.24392405152320862, 0.16327805817127228, 0.2947869896888733, 0.14533767104148865, 0.11095422506332397,
      0.13399696350097656, 0.3099021911621094, -0.009614222683012486, 0.7377297878265381, 0.44445979595184326,
      0.18516923487186432, 0.17209462821483612},
     {0.3150649964809418,  0.2621232569217682,   0.1833558827638626,   0.11512552946805954,  0.07093916088342667,
      0.04619460925459862, 0.006588784046471119, -0.10272032022476196, 0.10515602678060532,  0.03181299939751625,
      0.08486343920230865, 0.05821289122104645,  -0.19740545749664307, -0.05329838767647743, -0.6934018731117249,
      -0.5466926097869873, -0.9979259967803955,  -0.6700892448425293,  0.053275153040885925, -0.01779436133801937,
      0.08846139907836914, 0.008770761080086231, 0.023635821416974068, -0.01838511973619461},
     {-0.10456021875143051,  -0.14252668619155884,  -0.12707625329494476,  -0.06915384531021118,  -0.08978430926799774,
      -0.061559922993183136, 0.0012205308303236961, -0.005213151220232248, -0.010094111785292625, -0.19150185585021973,
      -0.17278867959976196,  -0.028548713773489,    -0.09950698912143707,  -0.1039673462510109,   -0.04341960325837135,
      -0.006914794445037842, -0.020374631509184837, -0.026656128466129303, 0.19850488007068634,   0.22741113603115082,
      0.03587809205055237,   0.09502054005861282,   0.20572122931480408,   0.19271713495254517,   0.0553850457072258,
      0.1978730410337448,    0.2615884244441986,    -0.12801875174045563,  -0.1248917207121849,   -0.034968096762895584,
      -0.10627174377441406,  -0.1056312769651413,   -0.03878706693649292,  -0.028954561799764633, -0.025766488164663315,
      -0.009825259447097778},
     {0.5276300311088562, 0.40035101771354675, 0.10093437135219574, 0.3804784417152405, 0.3116140365600586,
      0.1565803736448288, -1.279891848564148, -1.5466631650924683, -1.714707374572754, 0.3434847891330719,
      0.30846983194351196, 0.041029997169971466},
     {0.5276300311088562, 0.40035101771354675, 0.10093437135219574, 0.3804784417152405, 0.3116140365600586,
      0.1565803736448288, -1.279891848564148, -1.5466631650924683, -1.714707374572754, 0.3434847891330719,
      0.30846983194351196, 0.041029997169971466},
     {-0.18677634000778198, -0.15097926557064056, -0.0947478860616684, -0.09126894921064377, 0.04870229586958885,
      0.1820819228887558, -0.04533553868532181, -0.049824997782707214, -0.04757087677717209},
     {-0.18152374029159546, -0.14762064814567566, -0.08601751178503036, -0.6701760292053223, -0.3462620973587036,
      -0.11091763526201248, -0.3040878474712372, -0.060457706451416016, 0.026600992307066917}}};

void ExpectLstm(const LstmCase& c) {
  auto fwd = RunLstmForward(c);
  ASSERT_EQ(fwd.size(), 4u);  // output, hy, cy, workspace
  for (size_t i = 0; i < 3; ++i) ExpectValues(fwd[i], c.forward[i], 1e-5);
  EXPECT_EQ(fwd[3].shape().ToString(false), "u8[36864]");
  auto bwd = RunLstmBackward(c);
  ASSERT_EQ(bwd.size(), 7u);
  for (size_t i = 0; i < 7; ++i) {
    SCOPED_TRACE(i);
    ExpectValues(bwd[i], c.backward[i], 2e-5);
  }
}

// Forward order, biases, grads of the output and hy (no grad_cy).
TEST(LoweringTorch2Test, MkldnnRnnLayerLstmAndItsBackwardMatchTorch) { ExpectLstm(kForwardBatchOfTwo); }
// reverse=True (the backward direction of a bidirectional LSTM), no biases (whose grads oneDNN still returns: the
// gates' grads summed), batch_first=True (metadata: the input is time-major), every grad given.
TEST(LoweringTorch2Test, MkldnnRnnLayerReversedWithoutBiasesMatchesTorch) { ExpectLstm(kReversedWithoutBiases); }
// Hidden size 3, a batch of 3, no grad of the output (only hy's and cy's, as when the output is unused).
TEST(LoweringTorch2Test, MkldnnRnnLayerWithoutGradOutputMatchesTorch) { ExpectLstm(kThreeHiddenNoGradOutput); }

// One while loop over the steps, not the steps unrolled: a 300-step sequence lowers to a module of the same size as a
// 2-step one, forward and backward.
TEST(LoweringTorch2Test, MkldnnRnnLayerLoopsOverTheStepsWithoutUnrolling) {
  auto text = [](const Node& n) {
    auto m = Lower(n, LoweringTable::Builtin());
    EXPECT_TRUE(m.ok()) << m.status().message();
    return m.ok() ? hlo::ToString(*m->module) : std::string();
  };
  LstmCase short_case{2, 2, 3, 4, true, true, false, true, true, true, {}, {}};
  LstmCase long_case = short_case;
  long_case.T = 300;
  for (bool backward : {false, true}) {
    SCOPED_TRACE(backward ? "backward" : "forward");
    std::string s = text(backward ? LstmBackwardNode(short_case, nullptr) : LstmForwardNode(short_case));
    std::string l = text(backward ? LstmBackwardNode(long_case, nullptr) : LstmForwardNode(long_case));
    EXPECT_NE(s.find(" while("), std::string::npos) << s;
    EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), std::count(l.begin(), l.end(), '\n'));
  }
}

// A packed sequence (batch_sizes) and the other RNN modes are refused with why, not lowered as an LSTM.
TEST(LoweringTorch2Test, MkldnnRnnLayerRefusesPackedSequencesAndOtherModes) {
  auto packed = Lower(LstmForwardNode(kForwardBatchOfTwo, {2, 2, 2}), LoweringTable::Builtin());
  ASSERT_FALSE(packed.ok());
  EXPECT_NE(packed.status().message().find("packed sequence"), std::string::npos) << packed.status().message();
  auto gru = Lower(LstmForwardNode(kForwardBatchOfTwo, {}, 3), LoweringTable::Builtin());
  ASSERT_FALSE(gru.ok());
  EXPECT_NE(gru.status().message().find("LSTM mode"), std::string::npos) << gru.status().message();
}

}  // namespace
}  // namespace opprobe::analyzer::testing
