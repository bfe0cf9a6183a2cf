// Losses. nll_loss uses a one-hot mask built from iota == target (torch_xla BuildNllLoss) instead
// of a gather, weighted per class and masked by ignore_index; reductions: 0 none, 1 mean, 2 sum.
#include <fmt/format.h>

#include <cmath>

#include "analyzer/lowering/ops.h"

namespace opprobe::analyzer::lowering {
namespace {

Instruction* ApplyReduction(Builder& b, Instruction* x, int64_t reduction) {
  if (reduction == 0) return x;
  std::vector<int64_t> all;
  for (int64_t i = 0; i < x->shape.rank(); ++i) all.push_back(i);
  Instruction* s = ReduceSum(b, x, all);
  if (reduction == 1) return MulScalar(b, s, 1.0 / static_cast<double>(std::max<int64_t>(x->shape.elements(), 1)) *
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

Expected<Pair> SelfTarget(const Ctx& c, size_t self_pos, size_t target_pos) {
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, c.Req("self", self_pos));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y, c.Req("target", target_pos));
  PrimitiveType t = Promote(x->shape.element_type(), y->shape.element_type());
  std::vector<int64_t> dims = BroadcastShapes(Dims(x), Dims(y));
  return Pair{Bcast(c.b, c.b.Convert(x, t), dims), Bcast(c.b, c.b.Convert(y, t), dims), t, dims};
}

}  // namespace

Expected<LoweredOp> MseLoss(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(c, 0, 1));
  Instruction* d = Sub(b, p.x, p.y);
  Instruction* r = ApplyReduction(b, Mul(b, d, d), c.Int("reduction", 2, 1));
  return Done(c, {b.Convert(r, c.OutType(0, p.t))});
}

Expected<LoweredOp> MseLossBackward(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, c.Req("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(c, 1, 2));
  int64_t red = c.Int("reduction", 3, 1);
  Instruction* gb = ReductionGrad(b, b.Convert(g, p.t), p.dims, red);
  Instruction* r = Mul(b, MulScalar(b, Sub(b, p.x, p.y), 2.0), gb);
  return Done(c, {b.Convert(r, c.OutType(0, p.t))});
}

Expected<LoweredOp> L1Loss(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(c, 0, 1));
  Instruction* r = ApplyReduction(b, b.Unary(Opcode::kAbs, Sub(b, p.x, p.y)), c.Int("reduction", 2, 1));
  return Done(c, {b.Convert(r, c.OutType(0, p.t))});
}

namespace {
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
}  // namespace

Expected<LoweredOp> SmoothL1Loss(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(c, 0, 1));
  double beta = c.Double("beta", 3, 1.0);
  Instruction* d = Sub(b, p.x, p.y);
  Instruction* term = beta == 0 ? b.Unary(Opcode::kAbs, d) : HuberTerm(b, d, beta, true);
  return Done(c, {b.Convert(ApplyReduction(b, term, c.Int("reduction", 2, 1)), c.OutType(0, p.t))});
}

Expected<LoweredOp> SmoothL1LossBackward(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, c.Req("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(c, 1, 2));
  double beta = c.Double("beta", 4, 1.0);
  Instruction* d = Sub(b, p.x, p.y);
  Instruction* gr = beta == 0 ? b.Unary(Opcode::kSign, d) : HuberGrad(b, d, beta, true);
  Instruction* r = Mul(b, gr, ReductionGrad(b, b.Convert(g, p.t), p.dims, c.Int("reduction", 3, 1)));
  return Done(c, {b.Convert(r, c.OutType(0, p.t))});
}

Expected<LoweredOp> HuberLoss(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(c, 0, 1));
  double delta = c.Double("delta", 3, 1.0);
  Instruction* term = HuberTerm(b, Sub(b, p.x, p.y), delta, false);
  return Done(c, {b.Convert(ApplyReduction(b, term, c.Int("reduction", 2, 1)), c.OutType(0, p.t))});
}

Expected<LoweredOp> HuberLossBackward(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, c.Req("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(c, 1, 2));
  double delta = c.Double("delta", 4, 1.0);
  Instruction* gr = HuberGrad(b, Sub(b, p.x, p.y), delta, false);
  Instruction* r = Mul(b, gr, ReductionGrad(b, b.Convert(g, p.t), p.dims, c.Int("reduction", 3, 1)));
  return Done(c, {b.Convert(r, c.OutType(0, p.t))});
}

Expected<LoweredOp> BinaryCrossEntropy(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(c, 0, 1));
  // -(y log(x) + (1-y) log(1-x)), each log clamped at -100 like ATen.
  Instruction* lo = FullLike(b, p.x, -100);
  Instruction* lx = b.Binary(Opcode::kMaximum, b.Unary(Opcode::kLog, p.x), lo);
  Instruction* l1x = b.Binary(Opcode::kMaximum, b.Unary(Opcode::kLog, Sub(b, FullLike(b, p.x, 1), p.x)), lo);
  Instruction* term = b.Unary(Opcode::kNegate, Add(b, Mul(b, p.y, lx), Mul(b, Sub(b, FullLike(b, p.y, 1), p.y), l1x)));
  if (Instruction* w = c.T("weight", 2)) term = Mul(b, term, Bcast(b, b.Convert(w, p.t), p.dims));
  return Done(c, {b.Convert(ApplyReduction(b, term, c.Int("reduction", 3, 1)), c.OutType(0, p.t))});
}

Expected<LoweredOp> BinaryCrossEntropyBackward(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, c.Req("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(c, 1, 2));
  // g * (x - y) / max((1 - x) x, eps)
  Instruction* den = b.Binary(Opcode::kMaximum, Mul(b, Sub(b, FullLike(b, p.x, 1), p.x), p.x), FullLike(b, p.x, 1e-12));
  Instruction* r = Div(b, Sub(b, p.x, p.y), den);
  r = Mul(b, r, ReductionGrad(b, b.Convert(g, p.t), p.dims, c.Int("reduction", 4, 1)));
  if (Instruction* w = c.T("weight", 3)) r = Mul(b, r, Bcast(b, b.Convert(w, p.t), p.dims));
  return Done(c, {b.Convert(r, c.OutType(0, p.t))});
}

Expected<LoweredOp> BinaryCrossEntropyWithLogits(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Pair p, SelfTarget(c, 0, 1));
  // (1 - y) x + (1 + (pw - 1) y) * (log1p(exp(-|x|)) + max(-x, 0))
  Instruction* x = p.x;
  Instruction* y = p.y;
  Instruction* sp = Add(b, b.Unary(Opcode::kLog1p, b.Unary(Opcode::kExp, b.Unary(Opcode::kNegate, b.Unary(Opcode::kAbs, x)))),
                        b.Binary(Opcode::kMaximum, b.Unary(Opcode::kNegate, x), FullLike(b, x, 0)));
  Instruction* coef = FullLike(b, x, 1);
  if (Instruction* pw = c.T("pos_weight", 3))
    coef = Add(b, coef, Mul(b, Sub(b, Bcast(b, b.Convert(pw, p.t), p.dims), FullLike(b, x, 1)), y));
  Instruction* term = Add(b, Mul(b, Sub(b, FullLike(b, y, 1), y), x), Mul(b, coef, sp));
  if (Instruction* w = c.T("weight", 2)) term = Mul(b, term, Bcast(b, b.Convert(w, p.t), p.dims));
  return Done(c, {b.Convert(ApplyReduction(b, term, c.Int("reduction", 4, 1)), c.OutType(0, p.t))});
}

namespace {
// The weighted one-hot mask of nll_loss: [.., C, ..] with w[target] at the target class, 0 elsewhere
// and at ignored positions. self: (N, C, d...) or (C); target: (N, d...) or ().
struct NllMask {
  Instruction* mask;  // self's shape, type t
  int64_t class_dim;
};
Expected<NllMask> BuildNllMask(const Ctx& c, const std::vector<int64_t>& sdims, PrimitiveType t, size_t target_pos,
                               size_t weight_pos, size_t ignore_pos) {
  Builder& b = c.b;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * target, c.Req("target", target_pos));
  int64_t class_dim = sdims.size() == 1 ? 0 : 1;
  std::vector<int64_t> tmap;
  for (int64_t i = 0; i < static_cast<int64_t>(sdims.size()); ++i)
    if (i != class_dim) tmap.push_back(i);
  if (static_cast<size_t>(target->shape.rank()) != tmap.size()) return Bad(c, "target rank does not match the input");
  Instruction* tg = b.Broadcast(b.Convert(target, PrimitiveType::S64), sdims, tmap);
  Instruction* io = b.Iota(Shape::Array(PrimitiveType::S64, sdims), class_dim);
  Instruction* hit = b.Compare(io, tg, ComparisonDirection::kEq);
  int64_t ignore = c.Int("ignore_index", ignore_pos, -100);
  Instruction* valid = b.Compare(tg, Full(b, PrimitiveType::S64, static_cast<double>(ignore), sdims), ComparisonDirection::kNe);
  Instruction* on = b.Binary(Opcode::kAnd, hit, valid);
  Instruction* w = Full(b, t, 1, sdims);
  if (Instruction* wt = c.T("weight", weight_pos)) w = b.Broadcast(b.Convert(wt, t), sdims, {class_dim});
  return NllMask{b.Select(on, w, Full(b, t, 0, sdims)), class_dim};
}
}  // namespace

Expected<LoweredOp> NllLoss(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, c.Req("self", 0));
  PrimitiveType t = x->shape.element_type();
  std::vector<int64_t> sdims = Dims(x);
  if (sdims.empty()) return Bad(c, "input must have at least 1 dim");
  OPPROBE_ASSIGN_OR_RETURN(NllMask m, BuildNllMask(c, sdims, t, 1, 2, 4));
  int64_t reduction = c.Int("reduction", 3, 1);
  Instruction* per = b.Unary(Opcode::kNegate, ReduceSum(b, Mul(b, x, m.mask), {m.class_dim}));
  std::vector<int64_t> all;
  for (int64_t i = 0; i < static_cast<int64_t>(sdims.size()); ++i) all.push_back(i);
  Instruction* total_weight = ReduceSum(b, m.mask, all);
  Instruction* out;
  if (reduction == 0) {
    out = per;
  } else {
    std::vector<int64_t> pall;
    for (int64_t i = 0; i < per->shape.rank(); ++i) pall.push_back(i);
    Instruction* s = pall.empty() ? per : ReduceSum(b, per, pall);
    out = reduction == 1 ? Div(b, s, total_weight) : s;
  }
  std::vector<Instruction*> outs = {out};
  if (n.op == "aten::nll_loss_forward" || n.op == "aten::nll_loss2d_forward") {
    const TensorMeta* tw = c.Out(1);
    if (tw && tw->sizes != Dims(total_weight)) outs.push_back(Full(b, tw->dtype, 0, tw->sizes));
    else outs.push_back(reduction == 0 && tw ? Full(b, t, 0, {}) : total_weight);
  }
  return Done(c, outs);
}

Expected<LoweredOp> NllLossBackward(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, c.Req("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, c.Req("self", 1));
  PrimitiveType t = x->shape.element_type();
  std::vector<int64_t> sdims = Dims(x);
  if (sdims.empty()) return Bad(c, "input must have at least 1 dim");
  OPPROBE_ASSIGN_OR_RETURN(NllMask m, BuildNllMask(c, sdims, t, 2, 3, 5));
  int64_t reduction = c.Int("reduction", 4, 1);
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
      OPPROBE_ASSIGN_OR_RETURN(Instruction * tw, c.Req("total_weight", 6));
      gb = Div(b, gb, b.Broadcast(b.Reshape(b.Convert(tw, t), {}), sdims, {}));
    }
  }
  return Done(c, {b.Unary(Opcode::kNegate, Mul(b, m.mask, gb))});
}

}  // namespace opprobe::analyzer::lowering
