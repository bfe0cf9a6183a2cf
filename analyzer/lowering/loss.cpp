// Losses. nll_loss uses a one-hot mask built from iota == target (torch_xla BuildNllLoss) instead
// of a gather, weighted per class and masked by ignore_index; reductions: 0 none, 1 mean, 2 sum.
// _ctc_loss is a `while` loop over time of the alpha recursion.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

Instruction* ApplyReduction(Builder& b, Instruction* x, int64_t reduction) {
  if (reduction == 0) return x;
  std::vector<int64_t> all = AllDims(x);
  Instruction* s = ReduceSum(b, x, all);
  if (reduction == 1)
    return MulScalar(b, s,
                     1.0 / static_cast<double>(std::max<int64_t>(x->shape.elements(), 1)) *
                         (x->shape.elements() == 0 ? std::nan("") : 1.0));
  return s;
}

// grad of the reduction: broadcast g (a scalar for mean/sum) and scale by 1/N for mean.
Instruction* ReductionGrad(Builder& b, Instruction* g, const std::vector<int64_t>& dims, int64_t reduction) {
  Instruction* gb = Bcast(b, g, dims);
  if (reduction == 1) return MulScalar(b, gb, 1.0 / static_cast<double>(std::max<int64_t>(Numel(dims), 1)));
  return gb;
}

struct Pair {
  Instruction* x;
  Instruction* y;
  PrimitiveType t;
  std::vector<int64_t> dims;
};

Expected<Pair> SelfTarget(const LoweringContext& ctx, size_t self_pos, size_t target_pos) {
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", self_pos));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y, ctx.RequiredTensor("target", target_pos));
  PrimitiveType t = Promote(x->shape.element_type(), y->shape.element_type());
  std::vector<int64_t> dims = BroadcastShapes(Dims(x), Dims(y));
  return Pair{Bcast(ctx.builder, ctx.builder.Convert(x, t), dims), Bcast(ctx.builder, ctx.builder.Convert(y, t), dims),
              t, dims};
}

Expected<LoweredOp> MseLoss(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(ctx, 0, 1));
  Instruction* d = Sub(b, p.x, p.y);
  Instruction* r = ApplyReduction(b, Mul(b, d, d), ctx.Int("reduction", 2, 1));
  return ctx.Finish({b.Convert(r, ctx.OutputType(0, p.t))});
}

Expected<LoweredOp> MseLossBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(ctx, 1, 2));
  int64_t red = ctx.Int("reduction", 3, 1);
  Instruction* gb = ReductionGrad(b, b.Convert(g, p.t), p.dims, red);
  Instruction* r = Mul(b, MulScalar(b, Sub(b, p.x, p.y), 2.0), gb);
  return ctx.Finish({b.Convert(r, ctx.OutputType(0, p.t))});
}

Expected<LoweredOp> L1Loss(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(ctx, 0, 1));
  Instruction* r = ApplyReduction(b, b.Unary(Opcode::kAbs, Sub(b, p.x, p.y)), ctx.Int("reduction", 2, 1));
  return ctx.Finish({b.Convert(r, ctx.OutputType(0, p.t))});
}

// Huber with delta (smooth_l1 = huber / beta with delta = beta).
Instruction* HuberTerm(Builder& b, Instruction* d, double delta, bool smooth_l1) {
  Instruction* a = b.Unary(Opcode::kAbs, d);
  Instruction* quad = MulScalar(b, Mul(b, d, d), smooth_l1 ? 0.5 / delta : 0.5);
  Instruction* lin = smooth_l1 ? AddScalar(b, a, -0.5 * delta) : MulScalar(b, AddScalar(b, a, -0.5 * delta), delta);
  return b.Select(CmpScalar(b, a, delta, ComparisonDirection::kLt), quad, lin);
}
Instruction* HuberGrad(Builder& b, Instruction* d, double delta, bool smooth_l1) {
  Instruction* a = b.Unary(Opcode::kAbs, d);
  Instruction* in = smooth_l1 ? MulScalar(b, d, 1.0 / delta) : d;
  Instruction* out = smooth_l1 ? b.Unary(Opcode::kSign, d) : MulScalar(b, b.Unary(Opcode::kSign, d), delta);
  return b.Select(CmpScalar(b, a, delta, ComparisonDirection::kLt), in, out);
}

Expected<LoweredOp> SmoothL1Loss(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(ctx, 0, 1));
  double beta = ctx.Double("beta", 3, 1.0);
  Instruction* d = Sub(b, p.x, p.y);
  Instruction* term = beta == 0 ? b.Unary(Opcode::kAbs, d) : HuberTerm(b, d, beta, true);
  return ctx.Finish({b.Convert(ApplyReduction(b, term, ctx.Int("reduction", 2, 1)), ctx.OutputType(0, p.t))});
}

Expected<LoweredOp> SmoothL1LossBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(ctx, 1, 2));
  double beta = ctx.Double("beta", 4, 1.0);
  Instruction* d = Sub(b, p.x, p.y);
  Instruction* gr = beta == 0 ? b.Unary(Opcode::kSign, d) : HuberGrad(b, d, beta, true);
  Instruction* r = Mul(b, gr, ReductionGrad(b, b.Convert(g, p.t), p.dims, ctx.Int("reduction", 3, 1)));
  return ctx.Finish({b.Convert(r, ctx.OutputType(0, p.t))});
}

Expected<LoweredOp> HuberLoss(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(ctx, 0, 1));
  double delta = ctx.Double("delta", 3, 1.0);
  Instruction* term = HuberTerm(b, Sub(b, p.x, p.y), delta, false);
  return ctx.Finish({b.Convert(ApplyReduction(b, term, ctx.Int("reduction", 2, 1)), ctx.OutputType(0, p.t))});
}

Expected<LoweredOp> HuberLossBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(ctx, 1, 2));
  double delta = ctx.Double("delta", 4, 1.0);
  Instruction* gr = HuberGrad(b, Sub(b, p.x, p.y), delta, false);
  Instruction* r = Mul(b, gr, ReductionGrad(b, b.Convert(g, p.t), p.dims, ctx.Int("reduction", 3, 1)));
  return ctx.Finish({b.Convert(r, ctx.OutputType(0, p.t))});
}

Expected<LoweredOp> BinaryCrossEntropy(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(ctx, 0, 1));
  // -(y log(x) + (1-y) log(1-x)), each log clamped at -100 like ATen.
  Instruction* lo = FullLike(b, p.x, -100);
  Instruction* lx = b.Binary(Opcode::kMaximum, b.Unary(Opcode::kLog, p.x), lo);
  Instruction* l1x = b.Binary(Opcode::kMaximum, b.Unary(Opcode::kLog, Sub(b, FullLike(b, p.x, 1), p.x)), lo);
  Instruction* term = b.Unary(Opcode::kNegate, Add(b, Mul(b, p.y, lx), Mul(b, Sub(b, FullLike(b, p.y, 1), p.y), l1x)));
  if (Instruction* w = ctx.Tensor("weight", 2)) term = Mul(b, term, Bcast(b, b.Convert(w, p.t), p.dims));
  return ctx.Finish({b.Convert(ApplyReduction(b, term, ctx.Int("reduction", 3, 1)), ctx.OutputType(0, p.t))});
}

Expected<LoweredOp> BinaryCrossEntropyBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(ctx, 1, 2));
  // g * (x - y) / max((1 - x) x, eps)
  Instruction* den = b.Binary(Opcode::kMaximum, Mul(b, Sub(b, FullLike(b, p.x, 1), p.x), p.x), FullLike(b, p.x, 1e-12));
  Instruction* r = Div(b, Sub(b, p.x, p.y), den);
  r = Mul(b, r, ReductionGrad(b, b.Convert(g, p.t), p.dims, ctx.Int("reduction", 4, 1)));
  if (Instruction* w = ctx.Tensor("weight", 3)) r = Mul(b, r, Bcast(b, b.Convert(w, p.t), p.dims));
  return ctx.Finish({b.Convert(r, ctx.OutputType(0, p.t))});
}

Expected<LoweredOp> BinaryCrossEntropyWithLogits(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(ctx, 0, 1));
  // (1 - y) x + (1 + (pw - 1) y) * (log1p(exp(-|x|)) + max(-x, 0))
  Instruction* x = p.x;
  Instruction* y = p.y;
  Instruction* sp =
      Add(b, b.Unary(Opcode::kLog1p, b.Unary(Opcode::kExp, b.Unary(Opcode::kNegate, b.Unary(Opcode::kAbs, x)))),
          b.Binary(Opcode::kMaximum, b.Unary(Opcode::kNegate, x), FullLike(b, x, 0)));
  Instruction* coef = FullLike(b, x, 1);
  if (Instruction* pw = ctx.Tensor("pos_weight", 3))
    coef = Add(b, coef, Mul(b, Sub(b, Bcast(b, b.Convert(pw, p.t), p.dims), FullLike(b, x, 1)), y));
  Instruction* term = Add(b, Mul(b, Sub(b, FullLike(b, y, 1), y), x), Mul(b, coef, sp));
  if (Instruction* w = ctx.Tensor("weight", 2)) term = Mul(b, term, Bcast(b, b.Convert(w, p.t), p.dims));
  return ctx.Finish({b.Convert(ApplyReduction(b, term, ctx.Int("reduction", 4, 1)), ctx.OutputType(0, p.t))});
}

// The weighted one-hot mask of nll_loss: [.., C, ..] with w[target] at the target class, 0 elsewhere
// and at ignored positions. self: (N, C, d...) or (C); target: (N, d...) or ().
struct NllMask {
  Instruction* mask;  // self's shape, type t
  int64_t class_dim;
};
Expected<NllMask> BuildNllMask(const LoweringContext& ctx, const std::vector<int64_t>& sdims, PrimitiveType t,
                               size_t target_pos, size_t weight_pos, size_t ignore_pos) {
  Builder& b = ctx.builder;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * target, ctx.RequiredTensor("target", target_pos));
  int64_t class_dim = sdims.size() == 1 ? 0 : 1;
  std::vector<int64_t> tmap;
  for (int64_t i = 0; i < static_cast<int64_t>(sdims.size()); ++i)
    if (i != class_dim) tmap.push_back(i);
  if (static_cast<size_t>(target->shape.rank()) != tmap.size())
    return ctx.Unsupported("target rank does not match the input");
  Instruction* tg = b.Broadcast(b.Convert(target, PrimitiveType::S64), sdims, tmap);
  Instruction* io = b.Iota(Shape::Array(PrimitiveType::S64, sdims), class_dim);
  Instruction* hit = b.Compare(io, tg, ComparisonDirection::kEq);
  int64_t ignore = ctx.Int("ignore_index", ignore_pos, -100);
  Instruction* valid =
      b.Compare(tg, Full(b, PrimitiveType::S64, static_cast<double>(ignore), sdims), ComparisonDirection::kNe);
  Instruction* on = b.Binary(Opcode::kAnd, hit, valid);
  Instruction* w = Full(b, t, 1, sdims);
  if (Instruction* wt = ctx.Tensor("weight", weight_pos)) w = b.Broadcast(b.Convert(wt, t), sdims, {class_dim});
  return NllMask{b.Select(on, w, Full(b, t, 0, sdims)), class_dim};
}

// nll_loss and nll_loss2d; the _forward ops (`with_total_weight`) also return the total weight.
Expected<LoweredOp> LowerNllLoss(const Node& n, Builder& b, bool with_total_weight) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  PrimitiveType t = x->shape.element_type();
  std::vector<int64_t> sdims = Dims(x);
  if (sdims.empty()) return ctx.Unsupported("input must have at least 1 dim");
  OPPROBE_ASSIGN_OR_RETURN(NllMask m, BuildNllMask(ctx, sdims, t, 1, 2, 4));
  int64_t reduction = ctx.Int("reduction", 3, 1);
  Instruction* per = b.Unary(Opcode::kNegate, ReduceSum(b, Mul(b, x, m.mask), {m.class_dim}));
  std::vector<int64_t> all = DimRange(0, static_cast<int64_t>(sdims.size()));
  Instruction* total_weight = ReduceSum(b, m.mask, all);
  Instruction* out;
  if (reduction == 0) {
    out = per;
  } else {
    std::vector<int64_t> pall = AllDims(per);
    Instruction* s = pall.empty() ? per : ReduceSum(b, per, pall);
    out = reduction == 1 ? Div(b, s, total_weight) : s;
  }
  std::vector<Instruction*> outs = {out};
  if (with_total_weight) {
    const TensorMeta* tw = ctx.OutputMeta(1);
    if (tw && tw->sizes != Dims(total_weight)) outs.push_back(Full(b, tw->dtype, 0, tw->sizes));
    else outs.push_back(reduction == 0 && tw ? Full(b, t, 0, {}) : total_weight);
  }
  return ctx.Finish(outs);
}

Expected<LoweredOp> NllLoss(const Node& n, Builder& b) { return LowerNllLoss(n, b, false); }
Expected<LoweredOp> NllLossForward(const Node& n, Builder& b) { return LowerNllLoss(n, b, true); }

Expected<LoweredOp> NllLossBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 1));
  PrimitiveType t = x->shape.element_type();
  std::vector<int64_t> sdims = Dims(x);
  if (sdims.empty()) return ctx.Unsupported("input must have at least 1 dim");
  OPPROBE_ASSIGN_OR_RETURN(NllMask m, BuildNllMask(ctx, sdims, t, 2, 3, 5));
  int64_t reduction = ctx.Int("reduction", 4, 1);
  Instruction* gb;
  g = b.Convert(g, t);
  if (reduction == 0) {
    std::vector<int64_t> map;
    for (int64_t i = 0; i < static_cast<int64_t>(sdims.size()); ++i)
      if (i != m.class_dim) map.push_back(i);
    gb = b.Broadcast(g, sdims, map);
  } else {
    gb = b.Broadcast(b.Reshape(g, {}), sdims, {});
    if (reduction == 1) {
      OPPROBE_ASSIGN_OR_RETURN(Instruction * tw, ctx.RequiredTensor("total_weight", 6));
      gb = Div(b, gb, b.Broadcast(b.Reshape(b.Convert(tw, t), {}), sdims, {}));
    }
  }
  return ctx.Finish({b.Unary(Opcode::kNegate, Mul(b, m.mask, gb))});
}

// x as [N, C] (a 0-d or 1-d input is one sample) and the one-hot [N, C] of a per-sample class index.
Instruction* AsBatch(Builder& b, Instruction* x) {
  std::vector<int64_t> d = Dims(x);
  if (d.size() == 2) return x;
  return b.Reshape(x, {1, d.empty() ? 1 : d[0]});
}

Instruction* ReduceAll(Builder& b, Instruction* x) {
  std::vector<int64_t> all = AllDims(x);
  return ReduceSum(b, x, all);
}

// Per-sample losses [N] reduced (0 none: reshaped to the op's output, 1 mean, 2 sum).
Instruction* ReducePerSample(const LoweringContext& ctx, Instruction* per, int64_t reduction) {
  Builder& b = ctx.builder;
  if (reduction == 0) {
    const TensorMeta* o = ctx.OutputMeta(0);
    return o ? b.Reshape(per, o->sizes) : per;
  }
  Instruction* s = ReduceAll(b, per);
  if (reduction == 1) s = Div(b, s, Scalar(b, s->shape.element_type(), static_cast<double>(per->shape.elements())));
  return s;
}

// What multi_margin_loss and its backward share: the [N, C] input, the one-hot mask of each sample's target
// class, and the margin term z_j = margin - x[y] + x[j].
struct MultiMarginTerms {
  PrimitiveType t;
  std::vector<int64_t> xd;  // [N, C]
  int64_t N, C;
  Instruction* hot;    // pred[N, C]: j == y
  Instruction* zeros;  // [N, C]
  Instruction* z;      // margin - x[y] + x[j]
};

Expected<MultiMarginTerms> MultiMargin(LoweringContext& ctx, Builder& b, Instruction* x0, Instruction* y0, int64_t p,
                                       double margin) {
  if (p != 1 && p != 2) return ctx.Unsupported("p must be 1 or 2");
  if (x0->shape.rank() > 2) return ctx.Unsupported("input must be at most 2-d");
  MultiMarginTerms m;
  m.t = x0->shape.element_type();
  Instruction* x = AsBatch(b, x0);
  m.xd = Dims(x);
  m.N = m.xd[0];
  m.C = m.xd[1];
  if (y0->shape.elements() != m.N) return ctx.Unsupported("target does not fit input");
  Instruction* y = b.Reshape(b.Convert(y0, PrimitiveType::S64), {m.N});
  m.hot =
      b.Compare(b.Iota(Shape::Array(PrimitiveType::S64, m.xd), 1), b.Broadcast(y, m.xd, {0}), ComparisonDirection::kEq);
  m.zeros = Full(b, m.t, 0, m.xd);
  Instruction* xy = ReduceSum(b, b.Select(m.hot, x, m.zeros), {1});
  m.z = Add(b, Sub(b, Full(b, m.t, margin, m.xd), b.Broadcast(xy, m.xd, {0})), x);
  return m;
}

// multi_margin_loss: per sample sum over j != y of w[y] * max(0, margin - x[y] + x[j])^p, over C.
// x[y] and w[y] come from a one-hot mask (iota == target) and a sum, as nll_loss does.
Expected<LoweredOp> MultiMarginLoss(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y0, ctx.RequiredTensor("target", 1));
  int64_t p = ctx.Int("p", 2, 1);
  double margin = ctx.Double("margin", 3, 1);
  Instruction* w0 = ctx.Tensor("weight", 4);
  int64_t reduction = ctx.Int("reduction", 5, 1);
  OPPROBE_ASSIGN_OR_RETURN(MultiMarginTerms m, MultiMargin(ctx, b, x0, y0, p, margin));
  auto [t, xd, N, C, hot, zeros, z] = m;
  z = b.Binary(Opcode::kMaximum, z, zeros);
  if (p == 2) z = Mul(b, z, z);
  if (w0) {
    Instruction* w = b.Broadcast(b.Reshape(b.Convert(w0, t), {C}), xd, {1});
    Instruction* wy = ReduceSum(b, b.Select(hot, w, zeros), {1});
    z = Mul(b, z, b.Broadcast(wy, xd, {0}));
  }
  z = b.Select(hot, zeros, z);
  Instruction* per = Div(b, ReduceSum(b, z, {1}), Full(b, t, static_cast<double>(C), {N}));
  return ctx.Finish({ReducePerSample(ctx, per, reduction)});
}

// multi_margin_loss_backward(grad_output, self, target, p, margin, weight, reduction): where the margin term
// z_j = margin - x[y] + x[j] (j != y) is positive, d/dx[j] = p z^(p-1) w[y] / C and d/dx[y] is minus their sum;
// times grad_output (per sample without reduction, / N for mean).
Expected<LoweredOp> MultiMarginLossBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g0, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y0, ctx.RequiredTensor("target", 2));
  int64_t p = ctx.Int("p", 3, 1);
  double margin = ctx.Double("margin", 4, 1);
  Instruction* w0 = ctx.Tensor("weight", 5);
  int64_t reduction = ctx.Int("reduction", 6, 1);
  OPPROBE_ASSIGN_OR_RETURN(MultiMarginTerms m, MultiMargin(ctx, b, x0, y0, p, margin));
  auto [t, xd, N, C, hot, zeros, z] = m;
  Instruction* active =
      b.Binary(Opcode::kAnd, CmpScalar(b, z, 0, ComparisonDirection::kGt), b.Unary(Opcode::kNot, hot));
  Instruction* d = p == 2 ? MulScalar(b, z, 2.0) : Full(b, t, 1, xd);
  d = b.Select(active, MulScalar(b, d, 1.0 / static_cast<double>(C)), zeros);
  if (w0) {
    Instruction* w = b.Broadcast(b.Reshape(b.Convert(w0, t), {C}), xd, {1});
    d = Mul(b, d, b.Broadcast(ReduceSum(b, b.Select(hot, w, zeros), {1}), xd, {0}));
  }
  Instruction* dy = b.Broadcast(ReduceSum(b, d, {1}), xd, {0});
  Instruction* gx = b.Select(hot, b.Unary(Opcode::kNegate, dy), d);
  Instruction* g = b.Convert(g0, t);
  if (reduction == 0 && g->shape.elements() == N) {
    g = b.Broadcast(b.Reshape(g, {N}), xd, {0});
  } else {
    g = b.Broadcast(b.Reshape(g, {}), xd, {});
    if (reduction == 1) g = MulScalar(b, g, 1.0 / static_cast<double>(std::max<int64_t>(N, 1)));
  }
  return ctx.Finish({b.Reshape(Mul(b, gx, g), Dims(x0))});
}

// multilabel_margin_loss_forward: the targets of a sample are its target entries before the first
// negative one (a prefix minimum); is_target marks them; the loss sums, over every target k and
// every non-target j, max(0, 1 - x[y_k] + x[j]), over C.
// What multilabel_margin_loss and its backward share: the [N, C] input, hot[n, k, j] (target k of sample n is
// class j, for the targets before the first -1), is_target[n, j], and use[n, k, j]: the hinge
// z = 1 - x[y_k] + x[j] is positive for a non-target class j (z itself, 0 where not used).
struct MultilabelTerms {
  Instruction* x;
  Instruction* hot;
  Instruction* is_target;
  Instruction* use;
  Instruction* z;
  int64_t N, C;
};

Expected<MultilabelTerms> Multilabel(const LoweringContext& ctx, Instruction* x0, Instruction* y0) {
  Builder& b = ctx.builder;
  if (x0->shape.rank() > 2) return ctx.Unsupported("input must be at most 2-d");
  PrimitiveType t = x0->shape.element_type();
  const PrimitiveType S = PrimitiveType::S64;
  Instruction* x = AsBatch(b, x0);
  std::vector<int64_t> xd = Dims(x);
  int64_t N = xd[0], C = xd[1];
  if (Dims(y0) != Dims(x0)) return ctx.Unsupported("target must have the input's shape");
  Instruction* y = b.Reshape(b.Convert(y0, S), xd);
  // valid[n, k]: no negative target at or before k.
  hlo::Window win;
  win.dimensions.resize(2);
  win.dimensions[1].size = C;
  win.dimensions[1].padding_low = C - 1;
  Instruction* nonneg = b.Convert(CmpScalar(b, y, 0, ComparisonDirection::kGe), PrimitiveType::S32);
  Instruction* valid = b.Compare(b.ReduceWindow({nonneg}, {Scalar(b, PrimitiveType::S32, 1)}, win,
                                                b.ScalarBinaryComputation(Opcode::kMinimum, PrimitiveType::S32)),
                                 Full(b, PrimitiveType::S32, 1, xd), ComparisonDirection::kEq);
  // [N, K, C]: target k of sample n is class j.
  std::vector<int64_t> kd = {N, C, C};
  Instruction* hot = b.Binary(
      Opcode::kAnd, b.Compare(b.Broadcast(y, kd, {0, 1}), b.Iota(Shape::Array(S, kd), 2), ComparisonDirection::kEq),
      b.Broadcast(valid, kd, {0, 1}));
  Instruction* is_t = Reduce(b, hot, {1}, Opcode::kOr, Scalar(b, PrimitiveType::PRED, 0));            // [N, C]
  Instruction* xk = ReduceSum(b, b.Select(hot, b.Broadcast(x, kd, {0, 2}), Full(b, t, 0, kd)), {2});  // x[y_k]: [N, K]
  Instruction* z = Add(b, Sub(b, Full(b, t, 1, kd), b.Broadcast(xk, kd, {0, 1})), b.Broadcast(x, kd, {0, 2}));
  Instruction* use =
      b.Binary(Opcode::kAnd, b.Broadcast(valid, kd, {0, 1}), b.Unary(Opcode::kNot, b.Broadcast(is_t, kd, {0, 2})));
  use = b.Binary(Opcode::kAnd, use, CmpScalar(b, z, 0, ComparisonDirection::kGt));
  z = b.Select(use, z, Full(b, t, 0, kd));
  return MultilabelTerms{x, hot, is_t, use, z, N, C};
}

Expected<LoweredOp> MultilabelMarginLoss(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y0, ctx.RequiredTensor("target", 1));
  int64_t reduction = ctx.Int("reduction", 2, 1);
  PrimitiveType t = x0->shape.element_type();
  OPPROBE_ASSIGN_OR_RETURN(MultilabelTerms m, Multilabel(ctx, x0, y0));
  Instruction* per = Div(b, ReduceSum(b, m.z, {1, 2}), Full(b, t, static_cast<double>(m.C), {m.N}));
  Instruction* loss = ReducePerSample(ctx, per, reduction);
  return ctx.Finish({loss, b.Reshape(b.Convert(m.is_target, t), Dims(y0))});
}

// multilabel_margin_loss_backward(grad_output, self, target, reduction, is_target), as ATen's CPU kernel: each
// used hinge (target k, class j) adds 1/C to x[j] and takes 1/C from x[y_k] (1/(N C) for the mean), times the
// incoming gradient (per sample for reduction none).
Expected<LoweredOp> MultilabelMarginLossBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g0, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y0, ctx.RequiredTensor("target", 2));
  int64_t reduction = ctx.Int("reduction", 3, 1);
  PrimitiveType t = x0->shape.element_type();
  OPPROBE_ASSIGN_OR_RETURN(MultilabelTerms m, Multilabel(ctx, x0, y0));
  std::vector<int64_t> kd = {m.N, m.C, m.C}, xd = {m.N, m.C};
  Instruction* used = b.Convert(m.use, t);
  Instruction* up = ReduceSum(b, used, {1});    // [N, C]: hinges raising x[j]
  Instruction* down = ReduceSum(b, used, {2});  // [N, K]: hinges lowering x[y_k]
  Instruction* down_c = ReduceSum(b, b.Select(m.hot, b.Broadcast(down, kd, {0, 1}), Full(b, t, 0, kd)), {1});
  double scale = reduction == 1 ? 1.0 / static_cast<double>(m.N * m.C) : 1.0 / static_cast<double>(m.C);
  Instruction* gi = MulScalar(b, Sub(b, up, down_c), scale);
  Instruction* g = b.Convert(g0, t);
  if (reduction == 0 && g->shape.rank() > 0) g = b.Broadcast(b.Reshape(g, {m.N}), xd, {0});
  else g = b.Broadcast(b.Reshape(g, {}), xd, {});
  return ctx.Finish({b.Reshape(Mul(b, gi, g), Dims(x0))});
}

// Shifts [N, L] right by k along dim 1, filling with `fill`.
Instruction* ShiftRight(Builder& b, Instruction* a, int64_t k, Instruction* fill) {
  std::vector<int64_t> d = Dims(a);
  int64_t L = d[1];
  if (k >= L) return b.Broadcast(fill, d, {});
  Instruction* head = b.Broadcast(fill, {d[0], k}, {});
  return b.Concatenate({head, b.SliceInDim(a, 0, L - k, 1, 1)}, 1);
}

// exp(a - m) summed, logged, plus m, where m is the max (0 when it is -inf), in torch's order.
Instruction* LogSumExpOf(Builder& b, const std::vector<Instruction*>& xs) {
  Instruction* m = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) m = b.Binary(Opcode::kMaximum, m, xs[i]);
  Instruction* ninf = b.Broadcast(MinValue(b, m->shape.element_type()), Dims(m), {});
  m = b.Select(b.Compare(m, ninf, ComparisonDirection::kEq), FullLike(b, m, 0), m);
  Instruction* s = nullptr;
  for (Instruction* x : xs) {
    Instruction* e = b.Unary(Opcode::kExp, Sub(b, x, m));
    s = s ? Add(b, s, e) : e;
  }
  return Add(b, b.Unary(Opcode::kLog, s), m);
}

// The lattice of the CTC recursions (ATen's CPU kernel): the extended labels lab[N, L] (blank, t1, blank, t2,
// ..., blank; built with an interior pad), the log-probs gathered at them lpe[T, N, L], skip[n, s] (the s - 2 ->
// s transition is allowed: lab[s] differs from lab[s - 2]), smask[n, s] (s < 2 target_length + 1), the lengths as
// s64 [N] (tensors of _ctc_loss.Tensor or int lists of _ctc_loss at lengths_pos and lengths_pos + 1), an iota over
// the states and -inf.
struct CtcLattice {
  Instruction *il, *tl, *lab, *s_io, *skip, *smask, *lpe, *ninf;
};

Expected<CtcLattice> BuildCtcLattice(const LoweringContext& ctx, Instruction* lp, Instruction* tg0, int64_t blank,
                                     int64_t T, int64_t N, int64_t L, int64_t K, size_t lengths_pos) {
  Builder& b = ctx.builder;
  PrimitiveType t = lp->shape.element_type();
  const PrimitiveType S = PrimitiveType::S64;
  // Lengths: tensors (_ctc_loss.Tensor) or int lists (_ctc_loss), as s64 [N].
  auto lengths = [&](const char* name, size_t pos) -> Instruction* {
    if (Instruction* v = ctx.Tensor(name, pos))
      return v->shape.elements() == N ? b.Reshape(b.Convert(v, S), {N}) : nullptr;
    auto ints = ctx.OptInts(name, pos);
    if (!ints || static_cast<int64_t>(ints->size()) != N) return nullptr;
    hlo::Literal l(Shape::Array(S, {N}));
    for (int64_t i = 0; i < N; ++i) l.SetFromInt64(i, (*ints)[static_cast<size_t>(i)]);
    return b.Constant(std::move(l));
  };
  Instruction* il = lengths("input_lengths", lengths_pos);
  Instruction* tl = lengths("target_lengths", lengths_pos + 1);
  if (!il || !tl) return ctx.Unsupported("input_lengths / target_lengths must have one entry per batch element");
  // Targets [N, K] (padded rows or the concatenated form).
  Instruction* tk;
  Instruction* tg = b.Convert(tg0, S);
  if (K == 0) {
    tk = Full(b, S, static_cast<double>(blank), {N, 0});
  } else if (tg->shape.rank() == 2) {
    if (Dims(tg)[0] != N || Dims(tg)[1] < K) return ctx.Unsupported("targets do not fit");
    tk = b.SliceInDim(tg, 0, K, 1, 1);
  } else if (tg->shape.rank() == 1) {
    int64_t total = tg->shape.elements();
    if (total == 0) return ctx.Unsupported("empty targets");
    hlo::Window win;
    win.dimensions.resize(1);
    win.dimensions[0].size = N;
    win.dimensions[0].padding_low = N;
    win.dimensions[0].padding_high = -1;
    Instruction* off =
        b.ReduceWindow({tl}, {ConstS64(b, 0)}, win, b.ScalarBinaryComputation(Opcode::kAdd, S));  // exclusive cumsum
    Instruction* pos = Add(b, b.Broadcast(off, {N, K}, {0}), b.Iota(Shape::Array(S, {N, K}), 1));
    pos = b.Clamp(ConstS64(b, 0), pos, ConstS64(b, total - 1));
    hlo::GatherDimensionNumbers dn;
    dn.collapsed_slice_dims = {0};
    dn.start_index_map = {0};
    dn.index_vector_dim = 2;
    tk = b.Gather(tg, b.Reshape(pos, {N, K, 1}), dn, {1}, Shape::Array(S, {N, K}));
  } else {
    return ctx.Unsupported("targets must be 1-d or 2-d");
  }
  // Extended labels [N, L]: blank, t1, blank, t2, ..., blank.
  hlo::PaddingConfig pc;
  pc.dimensions.resize(2);
  pc.dimensions[1].edge_padding_low = 1;
  pc.dimensions[1].edge_padding_high = 1;
  pc.dimensions[1].interior_padding = 1;
  Instruction* lab = K == 0 ? Full(b, S, static_cast<double>(blank), {N, 1}) : b.Pad(tk, ConstS64(b, blank), pc);
  Instruction* s_io = b.Iota(Shape::Array(S, {N, L}), 1);
  Instruction* skip = b.Binary(Opcode::kAnd, CmpScalar(b, s_io, 2, ComparisonDirection::kGe),
                               b.Compare(lab, ShiftRight(b, lab, 2, ConstS64(b, -1)), ComparisonDirection::kNe));
  Instruction* tl2 = Add(b, Add(b, tl, tl), Full(b, S, 1, {N}));
  Instruction* smask = b.Compare(s_io, b.Broadcast(tl2, {N, L}, {0}), ComparisonDirection::kLt);
  // lp_ext[t, n, s] = lp[t, n, lab[n, s]] (a gather of [T] columns, then a transpose).
  hlo::GatherDimensionNumbers gdn;
  gdn.offset_dims = {2};
  gdn.collapsed_slice_dims = {1, 2};
  gdn.start_index_map = {1, 2};
  gdn.index_vector_dim = 2;
  Instruction* gidx =
      b.Concatenate({b.Reshape(b.Iota(Shape::Array(S, {N, L}), 0), {N, L, 1}), b.Reshape(lab, {N, L, 1})}, 2);
  Instruction* lpe = b.Transpose(b.Gather(lp, gidx, gdn, {T, 1, 1}, Shape::Array(t, {N, L, T})), {2, 0, 1});
  Instruction* ninf = MinValue(b, t);
  return CtcLattice{il, tl, lab, s_io, skip, smask, lpe, ninf};
}

// _ctc_loss (forward, as ATen's CPU kernel): the alpha recursion over the extended target (blanks
// interleaved, built with an interior pad) runs as an HLO `while` loop over time; the loop state
// carries t, alpha[N, L], the log_alpha output [N, T, L] and the loop invariants (log-probs
// gathered at the extended labels, the skip mask, the valid-state mask, the input lengths).
// Samples freeze their alpha once t reaches their input length; states beyond 2 * target_length
// stay -inf (ATen leaves those entries of log_alpha unwritten).
Expected<LoweredOp> CtcLoss(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * lp, ctx.RequiredTensor("log_probs", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * tg0, ctx.RequiredTensor("targets", 1));
  int64_t blank = ctx.Int("blank", 4, 0);
  const TensorMeta* la_meta = ctx.OutputMeta(1);
  if (!la_meta || la_meta->rank() != 3) return ctx.Unsupported("the log_alpha width comes from the traced output");
  if (lp->shape.rank() != 3) return ctx.Unsupported("log_probs must be [T, N, C]");
  PrimitiveType t = lp->shape.element_type();
  if (!hlo::IsFloatingPoint(t)) return ctx.Unsupported("log_probs must be float");
  std::vector<int64_t> ld = Dims(lp);
  int64_t T = ld[0], N = ld[1];
  int64_t L = la_meta->sizes[2], K = (L - 1) / 2;
  if (la_meta->sizes[0] != N || la_meta->sizes[1] != T || L % 2 != 1)
    return ctx.Unsupported("unexpected log_alpha shape");
  if (T == 0) return ctx.Unsupported("empty time dimension");
  OPPROBE_ASSIGN_OR_RETURN(CtcLattice lat, BuildCtcLattice(ctx, lp, tg0, blank, T, N, L, K, 2));
  Instruction *il = lat.il, *tl = lat.tl, *s_io = lat.s_io, *skip = lat.skip, *smask = lat.smask, *lpe = lat.lpe;
  Instruction* ninf = lat.ninf;
  // alpha at t = 0: state 0 and (if the target is not empty) state 1.
  Instruction* lp0 = b.Reshape(b.SliceInDim(lpe, 0, 1, 1, 0), {N, L});
  Instruction* first = b.Binary(Opcode::kOr, CmpScalar(b, s_io, 0, ComparisonDirection::kEq),
                                b.Binary(Opcode::kAnd, CmpScalar(b, s_io, 1, ComparisonDirection::kEq),
                                         b.Broadcast(CmpScalar(b, tl, 0, ComparisonDirection::kGt), {N, L}, {0})));
  Instruction* alpha0 = b.Select(first, lp0, b.Broadcast(ninf, {N, L}, {}));
  Instruction* la0 = b.DynamicUpdateSlice(b.Broadcast(ninf, {N, T, L}, {}), b.Reshape(alpha0, {N, 1, L}),
                                          {ConstS64(b, 0), ConstS64(b, 0), ConstS64(b, 0)});
  auto cond = [&](Builder& cb, const LoopState& st) {
    return cb.Compare(st[0], ConstS64(cb, T), ComparisonDirection::kLt);
  };
  auto body = [&](Builder& bb, const LoopState& st) -> LoopState {
    Instruction *ti = st[0], *a = st[1], *la = st[2], *e = st[3], *sk = st[4], *sm = st[5], *ilb = st[6];
    Instruction* ni = MinValue(bb, t);
    Instruction* ninfs = bb.Broadcast(ni, {N, L}, {});
    Instruction* la2 = ShiftRight(bb, a, 1, ni);
    Instruction* la3 = bb.Select(sk, ShiftRight(bb, a, 2, ni), ninfs);
    Instruction* lpt = bb.Reshape(bb.DynamicSlice(e, {ti, ConstS64(bb, 0), ConstS64(bb, 0)}, {1, N, L}), {N, L});
    Instruction* na = Add(bb, LogSumExpOf(bb, {a, la2, la3}), lpt);
    Instruction* active =
        bb.Broadcast(bb.Compare(bb.Broadcast(ti, {N}, {}), ilb, ComparisonDirection::kLt), {N, L}, {0});
    na = bb.Select(active, bb.Select(sm, na, ninfs), a);
    Instruction* nla = bb.DynamicUpdateSlice(la, bb.Reshape(na, {N, 1, L}), {ConstS64(bb, 0), ti, ConstS64(bb, 0)});
    return {bb.Binary(Opcode::kAdd, ti, ConstS64(bb, 1)), na, nla, e, sk, sm, ilb};
  };
  LoopState loop = Loop(b, {ConstS64(b, 1), alpha0, la0, lpe, skip, smask, il}, "ctc", cond, body);
  Instruction* alpha = loop[1];
  Instruction* log_alpha = loop[2];
  // The likelihood: alpha[2 tl] (+ alpha[2 tl - 1] when the target is not empty).
  Instruction* ninfs = b.Broadcast(ninf, {N, L}, {});
  auto at = [&](Instruction* pos) {
    Instruction* m = b.Compare(s_io, b.Broadcast(pos, {N, L}, {0}), ComparisonDirection::kEq);
    return ReduceMax(b, b.Select(m, alpha, ninfs), {1});
  };
  Instruction* l1 = at(Add(b, tl, tl));
  Instruction* l2 = at(AddScalar(b, Add(b, tl, tl), -1));
  Instruction* ll = LogSumExpOf(b, {l1, l2});
  Instruction* empty_t = CmpScalar(b, tl, 0, ComparisonDirection::kEq);
  ll = b.Select(empty_t, l1, ll);
  // No input: likelihood 1 for an empty target, 0 otherwise.
  Instruction* no_in = CmpScalar(b, il, 0, ComparisonDirection::kEq);
  ll = b.Select(no_in, b.Select(empty_t, Full(b, t, 0, {N}), b.Broadcast(ninf, {N}, {})), ll);
  return ctx.Finish({b.Unary(Opcode::kNegate, ll), log_alpha});
}

// Shifts [N, L] left by k along dim 1, filling with `fill`.
Instruction* ShiftLeft(Builder& b, Instruction* a, int64_t k, Instruction* fill) {
  std::vector<int64_t> d = Dims(a);
  int64_t L = d[1];
  if (k >= L) return b.Broadcast(fill, d, {});
  return b.Concatenate({b.SliceInDim(a, k, L, 1, 1), b.Broadcast(fill, {d[0], k}, {})}, 1);
}

// _ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, neg_log_likelihood, log_alpha,
// blank, zero_infinity), as ATen's CPU kernel: the beta recursion runs backwards in time in a `while` loop
// (beta[t] from beta[t + 1] over the same lattice as the forward's alpha, starting at each sample's last input
// step); then for each class c, lcab = logsumexp of log_alpha + log_beta over the states labelled c, and the
// gradient is (exp(lp) - exp(lcab + nll - lp)) * grad, zero from each sample's input length on (and for an
// infinite loss with zero_infinity).
Expected<LoweredOp> CtcLossBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * grad0, ctx.RequiredTensor("grad", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * lp, ctx.RequiredTensor("log_probs", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * tg0, ctx.RequiredTensor("targets", 2));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * nll0, ctx.RequiredTensor("neg_log_likelihood", 5));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * la0, ctx.RequiredTensor("log_alpha", 6));
  int64_t blank = ctx.Int("blank", 7, 0);
  bool zero_infinity = ctx.Bool("zero_infinity", 8, false);
  if (lp->shape.rank() != 3) return ctx.Unsupported("log_probs must be [T, N, C]");
  PrimitiveType t = lp->shape.element_type();
  if (!hlo::IsFloatingPoint(t)) return ctx.Unsupported("log_probs must be float");
  const PrimitiveType S = PrimitiveType::S64;
  std::vector<int64_t> ld = Dims(lp), lad = Dims(la0);
  int64_t T = ld[0], N = ld[1], C = ld[2];
  if (lad.size() != 3 || lad[0] != N || lad[1] != T || lad[2] % 2 != 1)
    return ctx.Unsupported("unexpected log_alpha shape");
  int64_t L = lad[2], K = (L - 1) / 2;
  if (T == 0) return ctx.Unsupported("empty time dimension");
  if (nll0->shape.elements() != N || (grad0->shape.elements() != N && grad0->shape.elements() != 1))
    return ctx.Unsupported("grad and neg_log_likelihood need one entry per batch element");
  OPPROBE_ASSIGN_OR_RETURN(CtcLattice lat, BuildCtcLattice(ctx, lp, tg0, blank, T, N, L, K, 3));
  Instruction* ninfs = b.Broadcast(lat.ninf, {N, L}, {});
  Instruction* tl2 = Add(b, lat.tl, lat.tl);
  // beta at the last input step: state 2 tl, and 2 tl - 1 when the target is not empty.
  Instruction* last_states =
      b.Binary(Opcode::kOr, b.Compare(lat.s_io, b.Broadcast(tl2, {N, L}, {0}), ComparisonDirection::kEq),
               b.Binary(Opcode::kAnd,
                        b.Compare(lat.s_io, b.Broadcast(AddScalar(b, tl2, -1), {N, L}, {0}), ComparisonDirection::kEq),
                        b.Broadcast(CmpScalar(b, lat.tl, 0, ComparisonDirection::kGt), {N, L}, {0})));
  Instruction* skip_next = ShiftLeft(b, lat.skip, 2, b.ConstantScalar(PrimitiveType::PRED, 0));  // s -> s + 2 allowed
  Instruction* last_t = AddScalar(b, lat.il, -1);
  auto cond = [](Builder& cb, const LoopState& st) {
    return cb.Compare(st[0], ConstS64(cb, 0), ComparisonDirection::kGe);
  };
  auto body = [&](Builder& bb, const LoopState& st) -> LoopState {
    Instruction *ti = st[0], *beta = st[1], *lb = st[2], *e = st[3], *sk = st[4], *sm = st[5], *ls = st[6], *lt = st[7];
    Instruction* ni = MinValue(bb, t);
    Instruction* none = bb.Broadcast(ni, {N, L}, {});
    Instruction* b2 = ShiftLeft(bb, beta, 1, ni);
    Instruction* b3 = bb.Select(sk, ShiftLeft(bb, beta, 2, ni), none);
    Instruction* lpt = bb.Reshape(bb.DynamicSlice(e, {ti, ConstS64(bb, 0), ConstS64(bb, 0)}, {1, N, L}), {N, L});
    Instruction* rec = bb.Select(sm, Add(bb, LogSumExpOf(bb, {beta, b2, b3}), lpt), none);
    Instruction* tn = bb.Broadcast(ti, {N}, {});
    Instruction* at_last = bb.Broadcast(bb.Compare(tn, lt, ComparisonDirection::kEq), {N, L}, {0});
    Instruction* before_last = bb.Broadcast(bb.Compare(tn, lt, ComparisonDirection::kLt), {N, L}, {0});
    Instruction* nb = bb.Select(at_last, bb.Select(ls, lpt, none), bb.Select(before_last, rec, none));
    Instruction* nlb = bb.DynamicUpdateSlice(lb, bb.Reshape(nb, {N, 1, L}), {ConstS64(bb, 0), ti, ConstS64(bb, 0)});
    return {bb.Binary(Opcode::kSubtract, ti, ConstS64(bb, 1)), nb, nlb, e, sk, sm, ls, lt};
  };
  Instruction* lb0 = b.Broadcast(lat.ninf, {N, T, L}, {});
  LoopState loop = Loop(b, {ConstS64(b, T - 1), ninfs, lb0, lat.lpe, skip_next, lat.smask, last_states, last_t},
                        "ctc_beta", cond, body);
  Instruction* log_beta = loop[2];
  // lcab over the valid (t < input length, s <= 2 tl) lattice entries, log-summed per class.
  std::vector<int64_t> ntl = {N, T, L}, ntlc = {N, T, L, C}, ntc = {N, T, C};
  Instruction* in_time =
      b.Compare(b.Iota(Shape::Array(S, ntl), 1), b.Broadcast(lat.il, ntl, {0}), ComparisonDirection::kLt);
  Instruction* valid = b.Binary(Opcode::kAnd, in_time, b.Broadcast(lat.smask, ntl, {0, 2}));
  Instruction* lcab = b.Select(valid, Add(b, b.Convert(la0, t), log_beta), b.Broadcast(lat.ninf, ntl, {}));
  Instruction* of_class =
      b.Compare(b.Broadcast(lat.lab, ntlc, {0, 2}), b.Iota(Shape::Array(S, ntlc), 3), ComparisonDirection::kEq);
  Instruction* per_class = b.Select(of_class, b.Broadcast(lcab, ntlc, {0, 1, 2}), b.Broadcast(lat.ninf, ntlc, {}));
  Instruction* m = ReduceMax(b, per_class, {2});
  m = b.Select(b.Compare(m, b.Broadcast(lat.ninf, ntc, {}), ComparisonDirection::kEq), Full(b, t, 0, ntc), m);
  Instruction* sum = ReduceSum(b, b.Unary(Opcode::kExp, Sub(b, per_class, b.Broadcast(m, ntlc, {0, 1, 3}))), {2});
  Instruction* grad_log = Add(b, b.Unary(Opcode::kLog, sum), m);  // [N, T, C]
  Instruction* lpn = b.Transpose(lp, {1, 0, 2});                  // [N, T, C]
  Instruction* nll = b.Broadcast(b.Convert(b.Reshape(nll0, {N}), t), ntc, {0});
  Instruction* g = grad0->shape.elements() == N ? b.Broadcast(b.Convert(b.Reshape(grad0, {N}), t), ntc, {0})
                                                : b.Broadcast(b.Convert(b.Reshape(grad0, {}), t), ntc, {});
  Instruction* res =
      Mul(b, Sub(b, b.Unary(Opcode::kExp, lpn), b.Unary(Opcode::kExp, Sub(b, Add(b, grad_log, nll), lpn))), g);
  Instruction* keep =
      b.Compare(b.Iota(Shape::Array(S, ntc), 1), b.Broadcast(lat.il, ntc, {0}), ComparisonDirection::kLt);
  if (zero_infinity)
    keep = b.Binary(Opcode::kAnd, keep,
                    CmpScalar(b, nll, std::numeric_limits<double>::infinity(), ComparisonDirection::kNe));
  res = b.Select(keep, res, Full(b, t, 0, ntc));
  return ctx.Finish({b.Convert(b.Transpose(res, {1, 0, 2}), ctx.OutputType(0, t))});
}

Expected<LoweredOp> SoftMarginLoss(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y0, ctx.RequiredTensor("target", 1));
  int64_t red = ctx.Int("reduction", 2, 1);
  Instruction* y = Bcast(b, b.Convert(y0, x->shape.element_type()), Dims(x));
  Instruction* l = b.Unary(Opcode::kLog1p, b.Unary(Opcode::kExp, b.Unary(Opcode::kNegate, Mul(b, y, x))));
  if (red == 0) return ctx.Finish({l});
  Instruction* s = ReduceSum(b, l, AllDims(l));
  if (red == 1) s = MulScalar(b, s, 1.0 / static_cast<double>(std::max<int64_t>(x->shape.elements(), 1)));
  return ctx.Finish({s});
}

// soft_margin_loss_backward(grad_output, self, target, reduction): g * -y e^{-yx} / (1 + e^{-yx}) [/ numel].
Expected<LoweredOp> SoftMarginLossBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g0, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y0, ctx.RequiredTensor("target", 2));
  int64_t red = ctx.Int("reduction", 3, 1);
  std::vector<int64_t> dims = Dims(x);
  PrimitiveType t = x->shape.element_type();
  Instruction* y = Bcast(b, b.Convert(y0, t), dims);
  Instruction* g = Bcast(b, b.Convert(g0, t), dims);
  Instruction* s = b.Unary(Opcode::kLogistic, b.Unary(Opcode::kNegate, Mul(b, y, x)));  // e^{-yx}/(1+e^{-yx})
  Instruction* r = Mul(b, g, Mul(b, b.Unary(Opcode::kNegate, y), s));
  if (red == 1) r = MulScalar(b, r, 1.0 / static_cast<double>(std::max<int64_t>(x->shape.elements(), 1)));
  return ctx.Finish({r});
}

}  // namespace

const LoweringFamily& LossLowerings() {
  static const auto* family =
      new LoweringFamily{FamilyOf(__FILE__),
                         {
                             {"aten::mse_loss", MseLoss},
                             {"aten::mse_loss_backward", MseLossBackward},
                             {"aten::l1_loss", L1Loss},
                             {"aten::smooth_l1_loss", SmoothL1Loss},
                             {"aten::smooth_l1_loss_backward", SmoothL1LossBackward},
                             {"aten::huber_loss", HuberLoss},
                             {"aten::huber_loss_backward", HuberLossBackward},
                             {"aten::binary_cross_entropy", BinaryCrossEntropy},
                             {"aten::binary_cross_entropy_backward", BinaryCrossEntropyBackward},
                             {"aten::binary_cross_entropy_with_logits", BinaryCrossEntropyWithLogits},
                             {"aten::nll_loss", NllLoss},
                             {"aten::nll_loss_forward", NllLossForward},
                             {"aten::nll_loss2d_forward", NllLossForward},
                             {"aten::nll_loss_backward", NllLossBackward},
                             {"aten::nll_loss2d_backward", NllLossBackward},
                             {"aten::soft_margin_loss", SoftMarginLoss},
                             {"aten::soft_margin_loss_backward", SoftMarginLossBackward},
                             {"aten::multi_margin_loss", MultiMarginLoss},
                             {"aten::multi_margin_loss_backward", MultiMarginLossBackward},
                             {"aten::multilabel_margin_loss_forward", MultilabelMarginLoss},
                             {"aten::multilabel_margin_loss_backward", MultilabelMarginLossBackward},
                             {"aten::_ctc_loss", CtcLoss},
                             {"aten::_ctc_loss_backward", CtcLossBackward},
                         }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
