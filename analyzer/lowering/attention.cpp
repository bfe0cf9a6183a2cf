// Attention: torch 1.13's _scaled_dot_product_attention_forward as its math path computes it
// (query scaled by 1/sqrt(E), `dot` with the keys, the mask added (a bool mask as 0 / -inf, is_causal
// as a lower-triangular one), softmax over the keys, dropout by a uniform `rng` when dropout_p > 0,
// `dot` with the values). Returns (output, attention weights) like the op.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "analyzer/lowering/ops.h"

namespace opprobe::analyzer::lowering {

Expected<LoweredOp> ScaledDotProductAttention(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * q0, ctx.RequiredTensor("query", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * k0, ctx.RequiredTensor("key", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * v0, ctx.RequiredTensor("value", 2));
  Instruction* mask0 = ctx.Tensor("attn_mask", 3);
  double p = ctx.Double("dropout_p", 4, 0);
  bool is_causal = ctx.Bool("is_causal", 6, false);
  int64_t r = q0->shape.rank();
  if (r < 2 || k0->shape.rank() != r || v0->shape.rank() != r) return ctx.Unsupported("query, key and value must have the same rank >= 2");
  if (is_causal && mask0) return ctx.Unsupported("is_causal with an explicit mask");
  PrimitiveType t = q0->shape.element_type();
  if (!hlo::IsFloatingPoint(t)) return ctx.Unsupported("attention needs float inputs");
  std::vector<int64_t> qd = Dims(q0), kd = Dims(k0), vd = Dims(v0);
  int64_t L = qd[static_cast<size_t>(r - 2)], E = qd.back(), S = kd[static_cast<size_t>(r - 2)], Ev = vd.back();
  if (kd.back() != E || vd[static_cast<size_t>(r - 2)] != S) return ctx.Unsupported("query/key/value sizes do not fit");
  std::vector<int64_t> batch(qd.begin(), qd.end() - 2);
  batch = BroadcastShapes(batch, std::vector<int64_t>(kd.begin(), kd.end() - 2));
  batch = BroadcastShapes(batch, std::vector<int64_t>(vd.begin(), vd.end() - 2));
  auto with = [&](int64_t a, int64_t z) {
    std::vector<int64_t> d = batch;
    d.push_back(a);
    d.push_back(z);
    return d;
  };
  Instruction* q = Bcast(b, b.Convert(q0, t), with(L, E));
  Instruction* k = Bcast(b, b.Convert(k0, t), with(S, E));
  Instruction* v = Bcast(b, b.Convert(v0, t), with(S, Ev));
  q = MulScalar(b, q, 1.0 / std::sqrt(static_cast<double>(E)));
  hlo::DotDimensionNumbers dn;
  int64_t nb = static_cast<int64_t>(batch.size());
  for (int64_t i = 0; i < nb; ++i) {
    dn.lhs_batch_dimensions.push_back(i);
    dn.rhs_batch_dimensions.push_back(i);
  }
  dn.lhs_contracting_dimensions = {nb + 1};
  dn.rhs_contracting_dimensions = {nb + 1};
  std::vector<int64_t> ad = with(L, S);
  Instruction* attn = b.Dot(q, k, dn);  // [batch..., L, S]
  Instruction* mask = nullptr;
  if (is_causal) {
    Shape ms = Shape::Array(PrimitiveType::S64, {L, S});
    mask = b.Compare(b.Iota(ms, 1), b.Iota(ms, 0), ComparisonDirection::kLe);
  } else if (mask0) {
    mask = mask0;
  }
  if (mask) {
    if (BroadcastShapes(Dims(mask), ad) != ad) return ctx.Unsupported("attn_mask does not broadcast to the scores");
    Instruction* add;
    if (mask->shape.element_type() == PrimitiveType::PRED) {
      Instruction* mb = Bcast(b, mask, ad);
      add = b.Select(mb, Full(b, t, 0, ad), Full(b, t, -std::numeric_limits<double>::infinity(), ad));
    } else {
      add = Bcast(b, b.Convert(mask, t), ad);
    }
    attn = Add(b, attn, add);
  }
  int64_t last = nb + 1;
  Instruction* m = ReduceMax(b, attn, {last});
  Instruction* e = b.Unary(Opcode::kExp, Sub(b, attn, BcastBack(b, m, ad, {last})));
  attn = Div(b, e, BcastBack(b, ReduceSum(b, e, {last}), ad, {last}));
  if (p > 0) {
    Instruction* u = b.Rng(Scalar(b, t, 0), Scalar(b, t, 1), hlo::RandomDistribution::kUniform, Shape::Array(t, ad));
    Instruction* keep = b.Compare(u, Full(b, t, p, ad), ComparisonDirection::kGe);
    attn = p >= 1 ? Full(b, t, 0, ad) : MulScalar(b, b.Select(keep, attn, Full(b, t, 0, ad)), 1.0 / (1.0 - p));
  }
  hlo::DotDimensionNumbers dn2 = dn;
  dn2.lhs_contracting_dimensions = {nb + 1};
  dn2.rhs_contracting_dimensions = {nb};
  Instruction* out = b.Dot(attn, v, dn2);  // [batch..., L, Ev]
  if (const TensorMeta* o = ctx.OutputMeta(0); o && o->sizes != Dims(out)) out = b.Reshape(out, o->sizes);
  std::vector<Instruction*> outs = {out};
  if (ctx.OutputMeta(1)) outs.push_back(attn);
  return ctx.Finish(outs);
}

namespace {
// x [B, L, In] times w[rows]^T [In, Out] plus b[rows]: a linear layer on a row block of a packed weight.
Instruction* LinearRows(Builder& b, Instruction* x, Instruction* w, Instruction* bias, int64_t row0, int64_t rows) {
  Instruction* wr = b.SliceInDim(w, row0, row0 + rows, 1, 0);
  hlo::DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {2};
  dn.rhs_contracting_dimensions = {1};
  Instruction* y = b.Dot(x, wr, dn);  // [B, L, rows]
  if (bias) y = Add(b, y, b.Broadcast(b.SliceInDim(bias, row0, row0 + rows, 1, 0), Dims(y), {2}));
  return y;
}
}  // namespace

// _native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias,
// mask, need_weights, average_attn_weights, mask_type): nn.MultiheadAttention's inference fast path on [B, L, E]
// inputs. The packed projections, per-head scaled dot products (a mask's true entries are left out), softmax, the
// output projection; the weights averaged over the heads unless asked not to, empty without need_weights.
namespace {
struct MhaResult {
  Instruction* out = nullptr;   // [B, L, E]
  Instruction* attn = nullptr;  // [B, H, L, S] softmax weights
};

// The packed-projection multi-head attention both fast paths compute (a mask's true entries are left out).
Expected<MhaResult> Mha(const LoweringContext& ctx, Builder& b, Instruction* q0, Instruction* k0, Instruction* v0, int64_t E,
                        int64_t H, Instruction* wqkv, Instruction* bqkv, Instruction* wo, Instruction* bo,
                        Instruction* mask) {
  if (q0->shape.rank() != 3 || k0->shape.rank() != 3 || v0->shape.rank() != 3) return ctx.Unsupported("expects [B, L, E] inputs");
  if (H <= 0 || E <= 0 || E % H != 0) return ctx.Unsupported("embed_dim not divisible by num_head");
  PrimitiveType t = q0->shape.element_type();
  int64_t B = Dims(q0)[0], L = Dims(q0)[1], S = Dims(k0)[1], D = E / H;
  auto Heads = [&](Instruction* x, int64_t len) {  // [B, len, E] -> [B, H, len, D]
    return b.Transpose(b.Reshape(x, {B, len, H, D}), {0, 2, 1, 3});
  };
  Instruction* q = Heads(LinearRows(b, b.Convert(q0, t), wqkv, bqkv, 0, E), L);
  Instruction* k = Heads(LinearRows(b, b.Convert(k0, t), wqkv, bqkv, E, E), S);
  Instruction* v = Heads(LinearRows(b, b.Convert(v0, t), wqkv, bqkv, 2 * E, E), S);
  q = MulScalar(b, q, 1.0 / std::sqrt(static_cast<double>(D)));
  hlo::DotDimensionNumbers dn;
  dn.lhs_batch_dimensions = {0, 1};
  dn.rhs_batch_dimensions = {0, 1};
  dn.lhs_contracting_dimensions = {3};
  dn.rhs_contracting_dimensions = {3};
  Instruction* attn = b.Dot(q, k, dn);  // [B, H, L, S]
  std::vector<int64_t> ad = {B, H, L, S};
  if (mask) {
    std::vector<int64_t> md = Dims(mask);
    Instruction* mb;
    if (md == std::vector<int64_t>{B, S}) mb = b.Broadcast(mask, ad, {0, 3});
    else if (md == std::vector<int64_t>{L, S}) mb = b.Broadcast(mask, ad, {2, 3});
    else if (BroadcastShapes(md, ad) == ad) mb = Bcast(b, mask, ad);
    else return ctx.Unsupported("mask does not fit the attention scores");
    if (mb->shape.element_type() == PrimitiveType::PRED)
      attn = b.Select(mb, Full(b, t, -std::numeric_limits<double>::infinity(), ad), attn);
    else
      attn = Add(b, attn, b.Convert(mb, t));
  }
  Instruction* m = ReduceMax(b, attn, {3});
  Instruction* e = b.Unary(Opcode::kExp, Sub(b, attn, BcastBack(b, m, ad, {3})));
  attn = Div(b, e, BcastBack(b, ReduceSum(b, e, {3}), ad, {3}));
  hlo::DotDimensionNumbers dn2 = dn;
  dn2.rhs_contracting_dimensions = {2};
  Instruction* o = b.Dot(attn, v, dn2);  // [B, H, L, D]
  o = b.Reshape(b.Transpose(o, {0, 2, 1, 3}), {B, L, E});
  return MhaResult{LinearRows(b, o, wo, bo, 0, Dims(wo)[0]), attn};
}

// Layer norm over the last dim of x [B, L, E] with weight and bias [E].
Instruction* LayerNormLast(Builder& b, Instruction* x, Instruction* w, Instruction* bias, double eps) {
  std::vector<int64_t> d = Dims(x);
  int64_t last = static_cast<int64_t>(d.size()) - 1;
  double inv = 1.0 / static_cast<double>(d.back());
  Instruction* mean = BcastBack(b, MulScalar(b, ReduceSum(b, x, {last}), inv), d, {last});
  Instruction* xc = Sub(b, x, mean);
  Instruction* var = BcastBack(b, MulScalar(b, ReduceSum(b, Mul(b, xc, xc), {last}), inv), d, {last});
  Instruction* y = Mul(b, xc, b.Unary(Opcode::kRsqrt, AddScalar(b, var, eps)));
  if (w) y = Mul(b, y, b.Broadcast(b.Convert(w, x->shape.element_type()), d, {last}));
  if (bias) y = Add(b, y, b.Broadcast(b.Convert(bias, x->shape.element_type()), d, {last}));
  return y;
}
}  // namespace

Expected<LoweredOp> NativeMultiHeadAttention(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * q0, ctx.RequiredTensor("query", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * k0, ctx.RequiredTensor("key", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * v0, ctx.RequiredTensor("value", 2));
  int64_t E = ctx.Int("embed_dim", 3, 0), H = ctx.Int("num_head", 4, 1);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * wqkv, ctx.RequiredTensor("qkv_weight", 5));
  Instruction* bqkv = ctx.Tensor("qkv_bias", 6);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * wo, ctx.RequiredTensor("proj_weight", 7));
  Instruction* bo = ctx.Tensor("proj_bias", 8);
  Instruction* mask = ctx.Tensor("mask", 9);
  bool need_weights = ctx.Bool("need_weights", 10, true), average = ctx.Bool("average_attn_weights", 11, true);
  PrimitiveType t = q0->shape.element_type();
  OPPROBE_ASSIGN_OR_RETURN(MhaResult r, Mha(ctx, b, q0, k0, v0, E, H, wqkv, bqkv, wo, bo, mask));
  std::vector<Instruction*> outs = {r.out};
  const TensorMeta* w = ctx.OutputMeta(1);
  if (w && w->numel() == 0) {
    outs.push_back(Full(b, t, 0, w->sizes));
  } else if (need_weights || w) {
    outs.push_back(average ? MulScalar(b, ReduceSum(b, r.attn, {1}), 1.0 / static_cast<double>(H)) : r.attn);
  }
  return ctx.Finish(outs);
}

// _transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu,
// norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2,
// ffn_bias_2, mask, mask_type): TransformerEncoderLayer's eval fast path: self-attention and the feed-forward
// block, each with its residual and layer norm (before the block with norm_first, after it otherwise).
Expected<LoweredOp> TransformerEncoderLayerFwd(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("src", 0));
  int64_t E = ctx.Int("embed_dim", 1, 0), H = ctx.Int("num_heads", 2, 1);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * wqkv, ctx.RequiredTensor("qkv_weight", 3));
  Instruction* bqkv = ctx.Tensor("qkv_bias", 4);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * wo, ctx.RequiredTensor("proj_weight", 5));
  Instruction* bo = ctx.Tensor("proj_bias", 6);
  bool gelu = ctx.Bool("use_gelu", 7, false), norm_first = ctx.Bool("norm_first", 8, false);
  double eps = ctx.Double("eps", 9, 1e-5);
  Instruction* n1w = ctx.Tensor("norm_weight_1", 10);
  Instruction* n1b = ctx.Tensor("norm_bias_1", 11);
  Instruction* n2w = ctx.Tensor("norm_weight_2", 12);
  Instruction* n2b = ctx.Tensor("norm_bias_2", 13);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * f1w, ctx.RequiredTensor("ffn_weight_1", 14));
  Instruction* f1b = ctx.Tensor("ffn_bias_1", 15);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * f2w, ctx.RequiredTensor("ffn_weight_2", 16));
  Instruction* f2b = ctx.Tensor("ffn_bias_2", 17);
  Instruction* mask = ctx.Tensor("mask", 18);
  auto Attn = [&](Instruction* in) { return Mha(ctx, b, in, in, in, E, H, wqkv, bqkv, wo, bo, mask); };
  auto Ffn = [&](Instruction* in) {
    Instruction* h = LinearRows(b, in, f1w, f1b, 0, Dims(f1w)[0]);
    if (gelu) {
      h = Mul(b, MulScalar(b, h, 0.5),
              AddScalar(b, b.Unary(Opcode::kErf, MulScalar(b, h, std::sqrt(0.5))), 1.0));
    } else {
      h = b.Binary(Opcode::kMaximum, h, FullLike(b, h, 0));
    }
    return LinearRows(b, h, f2w, f2b, 0, Dims(f2w)[0]);
  };
  Instruction* y = x;
  if (norm_first) {
    OPPROBE_ASSIGN_OR_RETURN(MhaResult a, Attn(LayerNormLast(b, y, n1w, n1b, eps)));
    y = Add(b, y, a.out);
    y = Add(b, y, Ffn(LayerNormLast(b, y, n2w, n2b, eps)));
  } else {
    OPPROBE_ASSIGN_OR_RETURN(MhaResult a, Attn(y));
    y = LayerNormLast(b, Add(b, y, a.out), n1w, n1b, eps);
    y = LayerNormLast(b, Add(b, y, Ffn(y)), n2w, n2b, eps);
  }
  return ctx.Finish({y});
}

}  // namespace opprobe::analyzer::lowering
