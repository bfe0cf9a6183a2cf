// Attention: torch 1.13's _scaled_dot_product_attention_forward as its math path computes it
// (query scaled by 1/sqrt(E), `dot` with the keys, the mask added (a bool mask as 0 / -inf, is_causal
// as a lower-triangular one), softmax over the keys, dropout by a uniform `rng` when dropout_p > 0,
// `dot` with the values). Returns (output, attention weights) like the op.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

Expected<LoweredOp> ScaledDotProductAttention(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * q0, ctx.RequiredTensor("query", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * k0, ctx.RequiredTensor("key", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * v0, ctx.RequiredTensor("value", 2));
  Instruction* mask0 = ctx.Tensor("attn_mask", 3);
  double p = ctx.Double("dropout_p", 4, 0);
  bool is_causal = ctx.Bool("is_causal", 6, false);
  int64_t r = q0->shape.rank();
  if (r < 2 || k0->shape.rank() != r || v0->shape.rank() != r)
    return ctx.Unsupported("query, key and value must have the same rank >= 2");
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

// _native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias,
// mask, need_weights, average_attn_weights, mask_type): nn.MultiheadAttention's inference fast path on [B, L, E]
// inputs. The packed projections, per-head scaled dot products (a mask's true entries are left out), softmax, the
// output projection; the weights averaged over the heads unless asked not to, empty without need_weights.
struct MhaResult {
  Instruction* out = nullptr;   // [B, L, E]
  Instruction* attn = nullptr;  // [B, H, L, S] softmax weights
};

// The packed-projection multi-head attention both fast paths compute (a mask's true entries are left out).
Expected<MhaResult> Mha(const LoweringContext& ctx, Builder& b, Instruction* q0, Instruction* k0, Instruction* v0,
                        int64_t E, int64_t H, Instruction* wqkv, Instruction* bqkv, Instruction* wo, Instruction* bo,
                        Instruction* mask) {
  if (q0->shape.rank() != 3 || k0->shape.rank() != 3 || v0->shape.rank() != 3)
    return ctx.Unsupported("expects [B, L, E] inputs");
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
    else attn = Add(b, attn, b.Convert(mb, t));
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
      h = Mul(b, MulScalar(b, h, 0.5), AddScalar(b, b.Unary(Opcode::kErf, MulScalar(b, h, std::sqrt(0.5))), 1.0));
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

// ---- PyTorch 2.x: _scaled_dot_product_flash_attention_for_cpu and its backward (scaled_dot_product_attention
// on the CPU): the math path, softmax in f32 with the log-sum-exp the op also returns, key and value repeated to the
// query's heads for grouped-query attention (their gradients summed back); and
// scaled_dot_product_attention itself, which torch.export (2.5+) keeps undecomposed ----

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
  Instruction *q, *k, *v;  // f32; k and v repeated to the query's heads (grouped-query attention)
  Instruction* probs;      // softmax, [B..., L, S] f32
  Instruction* lse;        // [B..., L] f32
  double scale;
  int64_t groups = 1;  // query heads per key/value head (1 unless grouped-query attention)
};

// Grouped-query attention (enable_gqa: Llama, Qwen2, Gemma with num_key_value_heads < num_attention_heads): the
// key/value [B..., Hkv, S, E] serve Hq = G * Hkv query heads, query head h using key/value head h / G (what
// repeat_interleave(G, dim=-3) gives, the CPU kernel's mapping). Repeats x's heads G times: [B..., Hkv*G, S, E].
Instruction* RepeatHeads(Builder& b, Instruction* x, int64_t groups) {
  if (groups == 1) return x;
  std::vector<int64_t> d = Dims(x), big = d;
  size_t h = d.size() - 3;
  big.insert(big.begin() + static_cast<std::ptrdiff_t>(h) + 1, groups);  // [B..., Hkv, G, S, E]
  std::vector<int64_t> map;
  map.reserve(d.size());
  for (size_t i = 0; i < d.size(); ++i) map.push_back(static_cast<int64_t>(i <= h ? i : i + 1));
  d[h] *= groups;
  return b.Reshape(b.Broadcast(x, big, map), d);
}

// The gradient of RepeatHeads: g [B..., Hkv*G, S, E] summed over each key/value head's G query heads.
Instruction* SumHeadGroups(Builder& b, Instruction* g, int64_t groups) {
  if (groups == 1) return g;
  std::vector<int64_t> d = Dims(g), split = d;
  size_t h = d.size() - 3;
  split[h] /= groups;
  split.insert(split.begin() + static_cast<std::ptrdiff_t>(h) + 1, groups);
  return ReduceSum(b, b.Reshape(g, split), {static_cast<int64_t>(h) + 1});
}

// Scores, the causal/explicit mask, softmax and log-sum-exp in f32 (what the CPU flash kernel accumulates in).
Expected<Sdpa> Attention(const LoweringContext& ctx, size_t qpos) {
  Builder& b = ctx.builder;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * q0, ctx.RequiredTensor("query", qpos));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * k0, ctx.RequiredTensor("key", qpos + 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * v0, ctx.RequiredTensor("value", qpos + 2));
  int64_t r = Rank(q0);
  if (r < 2 || Rank(k0) != r || Rank(v0) != r)
    return ctx.Unsupported("query, key and value must have the same rank >= 2");
  if (Dims(q0).back() != Dims(k0).back() ||
      Dims(k0)[static_cast<size_t>(r - 2)] != Dims(v0)[static_cast<size_t>(r - 2)])
    return ctx.Unsupported("query/key/value sizes do not fit");
  PrimitiveType f = PrimitiveType::F32;
  if (q0->shape.element_type() == PrimitiveType::F64) f = PrimitiveType::F64;
  Sdpa s;
  if (r >= 3) {
    size_t h = static_cast<size_t>(r - 3);
    int64_t hq = Dims(q0)[h], hk = Dims(k0)[h];
    if (Dims(v0)[h] != hk) return ctx.Unsupported("key and value have different numbers of heads");
    if (hk != hq && hk > 0) {
      if (hq % hk != 0)
        return ctx.Unsupported(fmt::format("{} query heads are not a multiple of {} key/value heads", hq, hk));
      s.groups = hq / hk;
    }
  }
  s.q = b.Convert(q0, f);
  s.k = RepeatHeads(b, b.Convert(k0, f), s.groups), s.v = RepeatHeads(b, b.Convert(v0, f), s.groups);
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
    else scores = Add(b, scores, Bcast(b, b.Convert(mask, f), sd));
  }
  int64_t last = Rank(scores) - 1;
  Instruction* mx = ReduceMax(b, scores, {last});
  Instruction* e = b.Unary(Opcode::kExp, Sub(b, scores, BcastBack(b, mx, sd, {last})));
  Instruction* sum = ReduceSum(b, e, {last});
  s.probs = Div(b, e, BcastBack(b, sum, sd, {last}));
  s.lse = Add(b, mx, b.Unary(Opcode::kLog, sum));
  return s;
}

Expected<LoweredOp> SdpaFlashCpu(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  if (ctx.Double("dropout_p", 3, 0) > 0)
    return ctx.Unsupported("dropout_p > 0 (the CPU flash kernel's dropout has no XLA form here)");
  OPPROBE_ASSIGN_OR_RETURN(Sdpa s, Attention(ctx, 0));
  PrimitiveType t = ctx.OutputType(0, ctx.Tensor("query", 0)->shape.element_type());
  Instruction* out = b.Convert(BatchDot(b, s.probs, s.v, false, false), t);  // [B..., L, Ev]
  return ctx.Finish({out, s.lse});
}

Expected<LoweredOp> SdpaFlashCpuBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  if (ctx.Double("dropout_p", 6, 0) > 0)
    return ctx.Unsupported("dropout_p > 0 (the CPU flash kernel's dropout has no XLA form here)");
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
  dk = SumHeadGroups(b, dk, s.groups), dv = SumHeadGroups(b, dv, s.groups);  // back to the key/value heads
  PrimitiveType t = ctx.Tensor("query", 1)->shape.element_type();
  return ctx.Finish(
      {b.Convert(dq, ctx.OutputType(0, t)), b.Convert(dk, ctx.OutputType(1, t)), b.Convert(dv, ctx.OutputType(2, t))});
}

Expected<LoweredOp> SdpaComposite(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  if (ctx.Double("dropout_p", 4, 0) > 0) return ctx.Unsupported("dropout_p > 0 in an exported program");
  OPPROBE_ASSIGN_OR_RETURN(Sdpa s, Attention(ctx, 0));
  PrimitiveType t = ctx.OutputType(0, ctx.Tensor("query", 0)->shape.element_type());
  return ctx.Finish({b.Convert(BatchDot(b, s.probs, s.v, false, false), t)});
}

}  // namespace

const LoweringFamily& AttentionLowerings() {
  static const auto* family =
      new LoweringFamily{FamilyOf(__FILE__),
                         {
                             {"aten::_scaled_dot_product_attention_forward", ScaledDotProductAttention},
                             {"aten::scaled_dot_product_attention", SdpaComposite},
                             {"aten::_scaled_dot_product_flash_attention_for_cpu", SdpaFlashCpu},
                             {"aten::_scaled_dot_product_flash_attention_for_cpu_backward", SdpaFlashCpuBackward},
                             {"aten::_native_multi_head_attention", NativeMultiHeadAttention},
                             {"aten::_transformer_encoder_layer_fwd", TransformerEncoderLayerFwd},
                         }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
