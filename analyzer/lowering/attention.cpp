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
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * q0, c.Req("query", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * k0, c.Req("key", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * v0, c.Req("value", 2));
  Instruction* mask0 = c.T("attn_mask", 3);
  double p = c.Double("dropout_p", 4, 0);
  bool is_causal = c.Bool("is_causal", 6, false);
  int64_t r = q0->shape.rank();
  if (r < 2 || k0->shape.rank() != r || v0->shape.rank() != r) return Bad(c, "query, key and value must have the same rank >= 2");
  if (is_causal && mask0) return Bad(c, "is_causal with an explicit mask");
  PrimitiveType t = q0->shape.element_type();
  if (!hlo::IsFloatingPoint(t)) return Bad(c, "attention needs float inputs");
  std::vector<int64_t> qd = Dims(q0), kd = Dims(k0), vd = Dims(v0);
  int64_t L = qd[static_cast<size_t>(r - 2)], E = qd.back(), S = kd[static_cast<size_t>(r - 2)], Ev = vd.back();
  if (kd.back() != E || vd[static_cast<size_t>(r - 2)] != S) return Bad(c, "query/key/value sizes do not fit");
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
    if (BroadcastShapes(Dims(mask), ad) != ad) return Bad(c, "attn_mask does not broadcast to the scores");
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
  if (const TensorMeta* o = c.Out(0); o && o->sizes != Dims(out)) out = b.Reshape(out, o->sizes);
  std::vector<Instruction*> outs = {out};
  if (c.Out(1)) outs.push_back(attn);
  return Done(c, outs);
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
Expected<LoweredOp> NativeMultiHeadAttention(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * q0, c.Req("query", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * k0, c.Req("key", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * v0, c.Req("value", 2));
  int64_t E = c.Int("embed_dim", 3, 0), H = c.Int("num_head", 4, 1);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * wqkv, c.Req("qkv_weight", 5));
  Instruction* bqkv = c.T("qkv_bias", 6);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * wo, c.Req("proj_weight", 7));
  Instruction* bo = c.T("proj_bias", 8);
  Instruction* mask = c.T("mask", 9);
  bool need_weights = c.Bool("need_weights", 10, true), average = c.Bool("average_attn_weights", 11, true);
  if (q0->shape.rank() != 3 || k0->shape.rank() != 3 || v0->shape.rank() != 3) return Bad(c, "expects [B, L, E] inputs");
  if (H <= 0 || E <= 0 || E % H != 0) return Bad(c, "embed_dim not divisible by num_head");
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
    else return Bad(c, "mask does not fit the attention scores");
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
  o = LinearRows(b, o, wo, bo, 0, Dims(wo)[0]);
  std::vector<Instruction*> outs = {o};
  const TensorMeta* w = c.Out(1);
  if (w && w->numel() == 0) {
    outs.push_back(Full(b, t, 0, w->sizes));
  } else if (need_weights || w) {
    outs.push_back(average ? MulScalar(b, ReduceSum(b, attn, {1}), 1.0 / static_cast<double>(H)) : attn);
  }
  return Done(c, outs);
}

}  // namespace opprobe::analyzer::lowering
