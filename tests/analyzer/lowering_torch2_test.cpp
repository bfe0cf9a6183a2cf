// The lowerings of ops that PyTorch 2.x training steps dispatch and 1.13 never did (fused optimizers and
// _foreach_norm in optimizer.cpp, the CPU flash attention in attention.cpp, _safe_softmax, ...), evaluated on small
// inputs. The expected values are what torch 2.9.0 computes for the same inputs (its own kernels, e.g.
// torch._fused_adam_ and torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward).
#include <gtest/gtest.h>

#include <limits>

#include "lowering_test_util.h"

namespace opprobe::analyzer::testing {
namespace {

using hlo::PrimitiveType;
constexpr PrimitiveType F32 = PrimitiveType::F32;

Argument A(std::string name, Value v) { return {std::move(name), std::move(v)}; }

std::vector<hlo::Literal> FusedAdamRun(const std::string& op) {
  Value p = T(F32, {2}), s = T(F32, {});
  Node n = MakeNode(op, "default",
                    {A("self", TList({p})), A("grads", TList({p})), A("exp_avgs", TList({p})),
                     A("exp_avg_sqs", TList({p})), A("max_exp_avg_sqs", TList({})), A("state_steps", TList({s})),
                     A("lr", Value::Float(0.1)), A("beta1", Value::Float(0.9)), A("beta2", Value::Float(0.999)),
                     A("weight_decay", Value::Float(0.1)), A("eps", Value::Float(1e-8)), A("amsgrad", Value::Bool(false)),
                     A("maximize", Value::Bool(false)), A("grad_scale", Value::None()), A("found_inf", Value::None())},
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
  Node n = MakeNode("aten::_fused_sgd_", "default",
                    {A("self", TList({p})), A("grads", TList({p})), A("momentum_buffer_list", TList({p})),
                     A("weight_decay", Value::Float(0.1)), A("momentum", Value::Float(0.9)), A("lr", Value::Float(0.1)),
                     A("dampening", Value::Float(0)), A("nesterov", Value::Bool(true)), A("maximize", Value::Bool(false)),
                     A("is_first_step", Value::Bool(false)), A("grad_scale", Value::None()),
                     A("found_inf", Value::None())},
                    {Value::None()});
  auto out = LowerAndRun(n, {Lit(F32, {2}, {1, 2}), Lit(F32, {2}, {0.5, -1}), Lit(F32, {2}, {0.3, -0.2})});
  ASSERT_EQ(out.size(), 2u);  // param, momentum buffer
  ExpectValues(out[0], {0.8617, 2.1682}, 1e-6);
  ExpectValues(out[1], {0.87, -0.98}, 1e-6);
}

TEST(LoweringTorch2Test, ForeachNormIsOneNormPerEntry) {
  Node n = MakeNode("aten::_foreach_norm", "Scalar",
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
                    {A("grad_out", T(F32, {1, 1, 2, 2})), A("query", T(F32, {1, 1, 2, 2})), A("key", T(F32, {1, 1, 3, 2})),
                     A("value", T(F32, {1, 1, 3, 2})), A("out", T(F32, {1, 1, 2, 2})), A("logsumexp", T(F32, {1, 1, 2})),
                     A("dropout_p", Value::Float(0)), A("is_causal", Value::Bool(false)), A("attn_mask", Value::None()),
                     A("scale", Value::None())},
                    {T(F32, {1, 1, 2, 2}), T(F32, {1, 1, 3, 2}), T(F32, {1, 1, 3, 2})});
  auto out = LowerAndRun(n, {Lit(F32, {1, 1, 2, 2}, {1, -0.5, 1, -0.5}), Lit(F32, {1, 1, 2, 2}, kQ),
                             Lit(F32, {1, 1, 3, 2}, kK), Lit(F32, {1, 1, 3, 2}, kV), Lit(F32, {1, 1, 2, 2}, kO),
                             Lit(F32, {1, 1, 2}, kLse)});
  ASSERT_EQ(out.size(), 3u);
  ExpectValues(out[0], {-0.11645112186670303, -0.16942784190177917, -0.07530494034290314, -0.13614830374717712}, 1e-5);
  ExpectValues(out[1], {-0.08887351304292679, 0.030653536319732666, -0.042614810168743134, 0.0022814124822616577,
                        0.13148817420005798, -0.03293491154909134},
               1e-5);
  ExpectValues(out[2], {0.6620796322822571, -0.33103981614112854, 0.7082644104957581, -0.35413220524787903,
                        0.6296560168266296, -0.3148280084133148},
               1e-5);
}

}  // namespace
}  // namespace opprobe::analyzer::testing
