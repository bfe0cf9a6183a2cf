// Lowerings for aten ops that PyTorch 2.x training steps dispatch and 1.13 never did (found by capturing
// tests/torch2/scripts/train_ops.py and the model sweep on torch 2.9):
//   - the fused optimizers `_fused_adam_`, `_fused_adamw_` and `_fused_sgd_` (Adam/AdamW/SGD with
//     fused=True), lowered as the per-parameter update they compute; they return nothing (they write
//     the parameters and their state), so the lowering's values are the updated tensors in list order:
//     every param, then every state tensor it writes;
//   - `_foreach_norm` (clip_grad_norm_ with foreach): one p-norm per list entry;
//   - `_scaled_dot_product_flash_attention_for_cpu` and its backward (scaled_dot_product_attention on the
//     CPU in 2.x): the math path, softmax in f32 with the log-sum-exp the op also returns;
//   - `_safe_softmax` (the math path of scaled_dot_product_attention with a mask, torchaudio's wav2vec2);
//   - `_batch_norm_with_update` (BatchNorm in training mode), `empty_permuted`, `unsafe_split` (OpInfo on 2.9);
//   - the composite ops torch.export (2.5+) keeps in its programs: batch_norm, layer_norm, dropout,
//     scaled_dot_product_attention, flatten, unflatten, adaptive_avg_pool2d, and PT2E quantization's
//     quantized_decomposed::quantize_per_tensor / dequantize_per_tensor.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "analyzer/lowering/ops.h"

namespace opprobe::analyzer::lowering {

namespace {

// Batched matmul over the leading dims: x [B..., M, K] . y [B..., K, N] (or y transposed: [B..., N, K]).
Instruction* BatchDot(Builder& b, Instruction* x, Instruction* y, bool x_t, bool y_t) {
  int64_t r = Rank(x);
  hlo::DotDimensionNumbers dn;
  for (int64_t i = 0; i < r - 2; ++i) dn.lhs_batch_dimensions.push_back(i), dn.rhs_batch_dimensions.push_back(i);
  dn.lhs_contracting_dimensions = {x_t ? r - 2 : r - 1};
  dn.rhs_contracting_dimensions = {y_t ? r - 1 : r - 2};
  return b.Dot(x, y, dn);
}

struct Sdpa {
  Instruction *q, *k, *v;  // f32
  Instruction* probs;      // softmax, [B..., L, S] f32
  Instruction* lse;        // [B..., L] f32
  double scale;
};

// Scores, the causal/explicit mask, softmax and log-sum-exp in f32 (what the CPU flash kernel accumulates in).
Expected<Sdpa> Attention(const LoweringContext& ctx, size_t qpos) {
  Builder& b = ctx.builder;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * q0, ctx.RequiredTensor("query", qpos));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * k0, ctx.RequiredTensor("key", qpos + 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * v0, ctx.RequiredTensor("value", qpos + 2));
  int64_t r = Rank(q0);
  if (r < 2 || Rank(k0) != r || Rank(v0) != r) return ctx.Unsupported("query, key and value must have the same rank >= 2");
  if (Dims(q0).back() != Dims(k0).back() || Dims(k0)[static_cast<size_t>(r - 2)] != Dims(v0)[static_cast<size_t>(r - 2)])
    return ctx.Unsupported("query/key/value sizes do not fit");
  PrimitiveType f = PrimitiveType::F32;
  if (q0->shape.element_type() == PrimitiveType::F64) f = PrimitiveType::F64;
  Sdpa s;
  s.q = b.Convert(q0, f), s.k = b.Convert(k0, f), s.v = b.Convert(v0, f);
  std::vector<int64_t> qd = Dims(q0), kd = Dims(k0);
  int64_t L = qd[static_cast<size_t>(r - 2)], S = kd[static_cast<size_t>(r - 2)], E = qd.back();
  const Value* sv = ctx.Arg("scale", 100);
  s.scale = sv && !sv->is_none() ? sv->AsDouble() : 1.0 / std::sqrt(static_cast<double>(E));
  Instruction* scores = MulScalar(b, BatchDot(b, s.q, s.k, false, true), s.scale);  // [B..., L, S]
  std::vector<int64_t> sd = Dims(scores);
  Instruction* mask = ctx.Tensor("attn_mask", 100);
  bool causal = ctx.Bool("is_causal", 100, false);
  if (causal) {
    Shape ms = Shape::Array(PrimitiveType::S64, {L, S});
    Instruction* keep = Bcast(b, b.Compare(b.Iota(ms, 1), b.Iota(ms, 0), ComparisonDirection::kLe), sd);
    scores = b.Select(keep, scores, Full(b, f, -std::numeric_limits<double>::infinity(), sd));
  } else if (mask) {
    if (BroadcastShapes(Dims(mask), sd) != sd) return ctx.Unsupported("attn_mask does not broadcast to the scores");
    if (mask->shape.element_type() == PrimitiveType::PRED)
      scores = b.Select(Bcast(b, mask, sd), scores, Full(b, f, -std::numeric_limits<double>::infinity(), sd));
    else
      scores = Add(b, scores, Bcast(b, b.Convert(mask, f), sd));
  }
  int64_t last = Rank(scores) - 1;
  Instruction* mx = ReduceMax(b, scores, {last});
  Instruction* e = b.Unary(Opcode::kExp, Sub(b, scores, BcastBack(b, mx, sd, {last})));
  Instruction* sum = ReduceSum(b, e, {last});
  s.probs = Div(b, e, BcastBack(b, sum, sd, {last}));
  s.lse = Add(b, mx, b.Unary(Opcode::kLog, sum));
  return s;
}

}  // namespace

Expected<LoweredOp> SdpaFlashCpu(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  if (ctx.Double("dropout_p", 3, 0) > 0) return ctx.Unsupported("dropout_p > 0 (the CPU flash kernel's dropout has no XLA form here)");
  OPPROBE_ASSIGN_OR_RETURN(Sdpa s, Attention(ctx, 0));
  PrimitiveType t = ctx.OutputType(0, ctx.Tensor("query", 0)->shape.element_type());
  Instruction* out = b.Convert(BatchDot(b, s.probs, s.v, false, false), t);  // [B..., L, Ev]
  return ctx.Finish({out, s.lse});
}

Expected<LoweredOp> SdpaFlashCpuBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  if (ctx.Double("dropout_p", 6, 0) > 0) return ctx.Unsupported("dropout_p > 0 (the CPU flash kernel's dropout has no XLA form here)");
  OPPROBE_ASSIGN_OR_RETURN(Instruction * dout0, ctx.RequiredTensor("grad_out", 0));
  OPPROBE_ASSIGN_OR_RETURN(Sdpa s, Attention(ctx, 1));
  PrimitiveType f = s.q->shape.element_type();
  Instruction* dout = b.Convert(dout0, f);
  // dV = P^T dO; dP = dO V^T; dS = P * (dP - rowsum(dP * P)); dQ = scale dS K; dK = scale dS^T Q.
  Instruction* dv = BatchDot(b, s.probs, dout, true, false);
  Instruction* dp = BatchDot(b, dout, s.v, false, true);
  std::vector<int64_t> sd = Dims(s.probs);
  int64_t last = static_cast<int64_t>(sd.size()) - 1;
  Instruction* rows = ReduceSum(b, Mul(b, dp, s.probs), {last});
  Instruction* ds = Mul(b, s.probs, Sub(b, dp, BcastBack(b, rows, sd, {last})));
  Instruction* dq = MulScalar(b, BatchDot(b, ds, s.k, false, false), s.scale);
  Instruction* dk = MulScalar(b, BatchDot(b, ds, s.q, true, false), s.scale);
  PrimitiveType t = ctx.Tensor("query", 1)->shape.element_type();
  return ctx.Finish({b.Convert(dq, ctx.OutputType(0, t)), b.Convert(dk, ctx.OutputType(1, t)), b.Convert(dv, ctx.OutputType(2, t))});
}

// _batch_norm_with_update (BatchNorm in training mode, 2.4+): native_batch_norm with training=True, plus the
// empty `reserve` tensor the op also returns. (Its in-place update of running_mean/var is not an output.)
Expected<LoweredOp> BatchNormWithUpdate(const Node& n, Builder& b) {
  Node bn = n;
  bn.op = "aten::native_batch_norm";
  bn.overload = "default";
  bn.args.clear();
  for (const char* name : {"input", "weight", "bias", "running_mean", "running_var"}) {
    const Value* v = n.arg(name, bn.args.size());
    bn.args.push_back({name, v ? *v : Value::None()});
  }
  bn.args.push_back({"training", Value::Bool(true)});
  const Value* momentum = n.arg("momentum", 5);
  const Value* eps = n.arg("eps", 6);
  bn.args.push_back({"momentum", momentum ? *momentum : Value::Float(0.1)});
  bn.args.push_back({"eps", eps ? *eps : Value::Float(1e-5)});
  if (bn.outputs.size() > 3) bn.outputs.resize(3);
  OPPROBE_ASSIGN_OR_RETURN(LoweredOp op, BatchNorm(bn, b));
  if (n.outputs.size() > 3 && n.outputs[3].kind == Value::Kind::kTensor)
    op.outputs.push_back(Full(b, n.outputs[3].tensor.dtype, 0, n.outputs[3].tensor.sizes));
  return op;
}

// ---- the composite ops of torch.export's training IR (torch 2.5+ exports keep them undecomposed) ----
namespace {

// Lowers `n` as the op `op` with `args` (same tensor arguments, in the same order) and keeps its first value.
Expected<LoweredOp> AsFirstOutputOf(const Node& n, Builder& b, const char* op, const LoweringFn& fn,
                                    std::vector<Argument> args) {
  Node m = n;
  m.op = op;
  m.overload = "default";
  m.args = std::move(args);
  m.outputs.clear();
  OPPROBE_ASSIGN_OR_RETURN(LoweredOp r, fn(m, b));
  if (r.outputs.empty()) return Unimplemented(fmt::format("{}: {} gave no value", n.qualified_name(), op));
  r.outputs.resize(1);
  return r;
}

Value ArgOr(const Node& n, const char* name, size_t pos, Value def) {
  const Value* v = n.arg(name, pos);
  return v && !v->is_none() ? *v : def;
}

}  // namespace

Expected<LoweredOp> BatchNormComposite(const Node& n, Builder& b) {
  std::vector<Argument> args;
  const char* names[] = {"input", "weight", "bias", "running_mean", "running_var"};
  for (size_t i = 0; i < 5; ++i) args.push_back({names[i], ArgOr(n, names[i], i, Value::None())});
  args.push_back({"training", ArgOr(n, "training", 5, Value::Bool(false))});
  args.push_back({"momentum", ArgOr(n, "momentum", 6, Value::Float(0.1))});
  args.push_back({"eps", ArgOr(n, "eps", 7, Value::Float(1e-5))});
  return AsFirstOutputOf(n, b, "aten::native_batch_norm", BatchNorm, std::move(args));
}

Expected<LoweredOp> LayerNormComposite(const Node& n, Builder& b) {
  std::vector<Argument> args;
  const char* names[] = {"input", "normalized_shape", "weight", "bias"};
  for (size_t i = 0; i < 4; ++i) args.push_back({names[i], ArgOr(n, names[i], i, Value::None())});
  args.push_back({"eps", ArgOr(n, "eps", 4, Value::Float(1e-5))});
  return AsFirstOutputOf(n, b, "aten::native_layer_norm", LayerNorm, std::move(args));
}

Expected<LoweredOp> DropoutComposite(const Node& n, Builder& b) {
  bool train = ArgOr(n, "train", 2, Value::Bool(false)).AsDouble() != 0;
  double p = ArgOr(n, "p", 1, Value::Float(0.5)).AsDouble();
  if (!train || p == 0) {  // eval mode: the identity
    LoweringContext ctx(n, b);
    OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("input", 0));
    return ctx.Finish({b.Convert(x, ctx.OutputType(0, x->shape.element_type()))});
  }
  return AsFirstOutputOf(n, b, "aten::native_dropout", NativeDropout,
                         {{"input", ArgOr(n, "input", 0, Value::None())}, {"p", Value::Float(p)}, {"train", Value::Bool(true)}});
}

Expected<LoweredOp> SdpaComposite(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  if (ctx.Double("dropout_p", 4, 0) > 0) return ctx.Unsupported("dropout_p > 0 in an exported program");
  OPPROBE_ASSIGN_OR_RETURN(Sdpa s, Attention(ctx, 0));
  PrimitiveType t = ctx.OutputType(0, ctx.Tensor("query", 0)->shape.element_type());
  return ctx.Finish({b.Convert(BatchDot(b, s.probs, s.v, false, false), t)});
}

Expected<LoweredOp> Flatten(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> d = Dims(x);
  if (d.empty()) return ctx.Finish({b.Reshape(x, {1})});
  auto start = WrapDim(ctx.Int("start_dim", 1, 0), Rank(x)), end = WrapDim(ctx.Int("end_dim", 2, -1), Rank(x));
  if (!start || !end || *start > *end) return ctx.Unsupported("start_dim/end_dim out of range");
  std::vector<int64_t> out(d.begin(), d.begin() + *start);
  int64_t m = 1;
  for (int64_t i = *start; i <= *end; ++i) m *= d[static_cast<size_t>(i)];
  out.push_back(m);
  out.insert(out.end(), d.begin() + *end + 1, d.end());
  return ctx.Finish({b.Reshape(x, out)});
}

Expected<LoweredOp> Unflatten(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> d = Dims(x);
  auto dim = WrapDim(ctx.Int("dim", 1, 0), Rank(x));
  std::vector<int64_t> sizes = ctx.Ints("sizes", 2);
  if (!dim || sizes.empty()) return ctx.Unsupported("bad dim or sizes");
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) infer = static_cast<int64_t>(i);
    else known *= sizes[i];
  }
  if (infer >= 0) sizes[static_cast<size_t>(infer)] = known ? d[static_cast<size_t>(*dim)] / known : 0;
  std::vector<int64_t> out(d.begin(), d.begin() + *dim);
  out.insert(out.end(), sizes.begin(), sizes.end());
  out.insert(out.end(), d.begin() + *dim + 1, d.end());
  return ctx.Finish({b.Reshape(x, out)});
}

// PT2E quantization's quantize/dequantize (quantized_decomposed::*_per_tensor with scalar scale and zero point).
Expected<LoweredOp> QuantizePerTensor(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("input", 0));
  double scale = ctx.Double("scale", 1, 1), zp = ctx.Double("zero_point", 2, 0);
  double lo = ctx.Double("quant_min", 3, -128), hi = ctx.Double("quant_max", 4, 127);
  PrimitiveType q = ctx.OutputType(0, ctx.Dtype("dtype", 5).value_or(PrimitiveType::S8));
  Instruction* x = b.Convert(x0, PrimitiveType::F32);
  std::vector<int64_t> d = Dims(x);
  Instruction* r = AddScalar(b, b.Unary(Opcode::kRoundNearestEven, MulScalar(b, x, 1.0 / scale)), zp);
  r = b.Clamp(Full(b, PrimitiveType::F32, lo, d), r, Full(b, PrimitiveType::F32, hi, d));
  return ctx.Finish({b.Convert(r, q)});
}

Expected<LoweredOp> DequantizePerTensor(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("input", 0));
  double scale = ctx.Double("scale", 1, 1), zp = ctx.Double("zero_point", 2, 0);
  PrimitiveType t = ctx.OutputType(0, PrimitiveType::F32);
  Instruction* r = MulScalar(b, AddScalar(b, b.Convert(x0, PrimitiveType::F32), -zp), scale);
  return ctx.Finish({b.Convert(r, t)});
}

const std::vector<Torch2Lowering>& Torch2Lowerings() {
  static const auto* entries = new std::vector<Torch2Lowering>{
      {"aten::_batch_norm_with_update", "norm", BatchNormWithUpdate},
      {"aten::adaptive_avg_pool2d", "pooling", AdaptiveAvgPool},
      {"aten::adaptive_avg_pool3d", "pooling", AdaptiveAvgPool},
      {"aten::batch_norm", "norm", BatchNormComposite},
      {"aten::dropout", "random", DropoutComposite},
      {"aten::flatten", "shape", Flatten},
      {"aten::layer_norm", "norm", LayerNormComposite},
      {"aten::scaled_dot_product_attention", "attention", SdpaComposite},
      {"aten::unflatten", "shape", Unflatten},
      {"quantized_decomposed::dequantize_per_tensor", "quantized", DequantizePerTensor},
      {"quantized_decomposed::quantize_per_tensor", "quantized", QuantizePerTensor},
      {"aten::_scaled_dot_product_flash_attention_for_cpu", "attention", SdpaFlashCpu},
      {"aten::_scaled_dot_product_flash_attention_for_cpu_backward", "attention", SdpaFlashCpuBackward},
      {"aten::empty_permuted", "factory", FullOutput},  // uninitialized, like empty
      {"aten::unsafe_split", "shape", Split},
      {"aten::unsafe_split_with_sizes", "shape", Split},
  };
  return *entries;
}

}  // namespace opprobe::analyzer::lowering
