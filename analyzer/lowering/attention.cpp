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

}  // namespace opprobe::analyzer::lowering
