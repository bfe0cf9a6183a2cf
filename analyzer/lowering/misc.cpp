// Less common ops found in PyTorch's OpInfo samples: comparisons that return a Python bool
// (equal, allclose), diagonal builders, shrink/gating activations, special functions with XLA
// client-library expansions (lgamma/digamma by Lanczos, as xla/hlo/builder/lib/math.cc), search and
// histogram ops (compare + reduce, scatter-add), unpooling (scatter).
#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <numeric>

#include "analyzer/lowering/ops.h"

namespace opprobe::analyzer::lowering {
namespace {


std::vector<int64_t> AllDims(Instruction* x) {
  std::vector<int64_t> d(static_cast<size_t>(x->shape.rank()));
  std::iota(d.begin(), d.end(), 0);
  return d;
}

Instruction* AllTrue(Builder& b, Instruction* p) {
  return Reduce(b, p, AllDims(p), Opcode::kAnd, Scalar(b, PrimitiveType::PRED, 1));
}

// Lanczos approximation (g = 7, 8 terms) of lgamma and digamma, XLA's client-library form.
constexpr double kLanczosGamma = 7;
constexpr double kBaseLanczosCoeff = 0.99999999999980993227684700473478;
constexpr double kLanczosCoefficients[] = {676.520368121885098567009190444019, -1259.13921672240287047156078755283,
                                           771.3234287776530788486528258894,   -176.61502916214059906584551354,
                                           12.507343278686904814458936853,     -0.13857109526572011689554707,
                                           9.984369578019570859563e-6,         1.50563273514931155834e-7};

Instruction* Lgamma(Builder& b, Instruction* x) {
  Instruction* one_half = FullLike(b, x, 0.5);
  Instruction* reflect = b.Compare(x, one_half, ComparisonDirection::kLt);
  Instruction* z = b.Select(reflect, b.Unary(Opcode::kNegate, x), AddScalar(b, x, -1));
  Instruction* sum = FullLike(b, x, kBaseLanczosCoeff);
  for (int i = 0; i < 8; ++i) sum = Add(b, sum, Div(b, FullLike(b, x, kLanczosCoefficients[i]), AddScalar(b, z, i + 1)));
  Instruction* t = AddScalar(b, z, kLanczosGamma + 0.5);
  Instruction* log_t = AddScalar(b, b.Unary(Opcode::kLog1p, MulScalar(b, z, 1.0 / (kLanczosGamma + 0.5))),
                                 std::log(kLanczosGamma + 0.5));
  // 0.5 log(2 pi) + (z + 0.5 - t / log_t) * log_t + log(sum)
  Instruction* lg = Add(b, AddScalar(b, Mul(b, Sub(b, AddScalar(b, z, 0.5), Div(b, t, log_t)), log_t),
                                     0.5 * std::log(2 * std::numbers::pi)),
                        b.Unary(Opcode::kLog, sum));
  // Reflection: log(pi) - log|sin(pi x)| - lgamma(1 - x), with sin computed on the reduced input.
  Instruction* ax = b.Unary(Opcode::kAbs, x);
  Instruction* frac = Sub(b, ax, b.Unary(Opcode::kFloor, ax));
  Instruction* reduced = b.Select(b.Compare(frac, FullLike(b, frac, 0.5), ComparisonDirection::kGt),
                                  Sub(b, FullLike(b, frac, 1), frac), frac);
  Instruction* log_sin = b.Unary(Opcode::kLog, b.Unary(Opcode::kSin, MulScalar(b, reduced, std::numbers::pi)));
  Instruction* refl = Sub(b, Sub(b, FullLike(b, x, std::log(std::numbers::pi)), log_sin), lg);
  Instruction* r = b.Select(reflect, refl, lg);
  // Poles (non-positive integers) are +inf; inf stays inf.
  Instruction* pole = b.Binary(Opcode::kAnd, CmpScalar(b, x, 0, ComparisonDirection::kLe),
                               b.Compare(x, b.Unary(Opcode::kFloor, x), ComparisonDirection::kEq));
  r = b.Select(pole, FullLike(b, x, INFINITY), r);
  return b.Select(CmpScalar(b, ax, INFINITY, ComparisonDirection::kEq), FullLike(b, x, INFINITY), r);
}

Instruction* Digamma(Builder& b, Instruction* x) {
  Instruction* reflect = CmpScalar(b, x, 0.5, ComparisonDirection::kLt);
  Instruction* z = b.Select(reflect, b.Unary(Opcode::kNegate, x), AddScalar(b, x, -1));
  Instruction* num = FullLike(b, x, 0);
  Instruction* denom = FullLike(b, x, kBaseLanczosCoeff);
  for (int i = 0; i < 8; ++i) {
    Instruction* d = AddScalar(b, z, i + 1);
    Instruction* c = FullLike(b, x, kLanczosCoefficients[i]);
    num = Sub(b, num, Div(b, c, Mul(b, d, d)));
    denom = Add(b, denom, Div(b, c, d));
  }
  Instruction* t = AddScalar(b, z, kLanczosGamma + 0.5);
  Instruction* log_t = AddScalar(b, b.Unary(Opcode::kLog1p, MulScalar(b, z, 1.0 / (kLanczosGamma + 0.5))),
                                 std::log(kLanczosGamma + 0.5));
  Instruction* y = Sub(b, Add(b, log_t, Div(b, num, denom)), Div(b, FullLike(b, x, kLanczosGamma), t));
  // digamma(x) = digamma(1 - x) - pi cot(pi x) for x < 0.5 (on the reduced input).
  Instruction* reduced = Sub(b, x, b.Unary(Opcode::kFloor, AddScalar(b, x, 0.5)));
  Instruction* px = MulScalar(b, reduced, std::numbers::pi);
  Instruction* refl = Sub(b, y, Div(b, MulScalar(b, b.Unary(Opcode::kCos, px), std::numbers::pi), b.Unary(Opcode::kSin, px)));
  Instruction* r = b.Select(reflect, refl, y);
  Instruction* pole = b.Binary(Opcode::kAnd, CmpScalar(b, x, 0, ComparisonDirection::kLe),
                               b.Compare(x, b.Unary(Opcode::kFloor, x), ComparisonDirection::kEq));
  // torch: digamma(0) = -inf, other non-positive integers NaN
  Instruction* at0 = CmpScalar(b, x, 0, ComparisonDirection::kEq);
  r = b.Select(pole, b.Select(at0, FullLike(b, x, -INFINITY), FullLike(b, x, NAN)), r);
  return r;
}

}  // namespace

Expected<LoweredOp> Equal(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y, ctx.RequiredTensor("other", 1));
  if (Dims(x) != Dims(y)) return ctx.Finish({Scalar(b, PrimitiveType::PRED, 0)});
  PrimitiveType t = Promote(x->shape.element_type(), y->shape.element_type());
  return ctx.Finish({AllTrue(b, b.Compare(b.Convert(x, t), b.Convert(y, t), ComparisonDirection::kEq))});
}

Expected<LoweredOp> Allclose(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y0, ctx.RequiredTensor("other", 1));
  double rtol = ctx.Double("rtol", 2, 1e-5), atol = ctx.Double("atol", 3, 1e-8);
  bool equal_nan = ctx.Bool("equal_nan", 4, false);
  std::vector<int64_t> dims = BroadcastShapes(Dims(x0), Dims(y0));
  PrimitiveType t = FloatType(Promote(x0->shape.element_type(), y0->shape.element_type()));
  Instruction* x = Bcast(b, b.Convert(x0, t), dims);
  Instruction* y = Bcast(b, b.Convert(y0, t), dims);
  // |x - y| <= atol + rtol |y|, or x == y (infinities), or both NaN with equal_nan
  Instruction* close = b.Compare(b.Unary(Opcode::kAbs, Sub(b, x, y)),
                                 AddScalar(b, MulScalar(b, b.Unary(Opcode::kAbs, y), rtol), atol), ComparisonDirection::kLe);
  close = b.Binary(Opcode::kOr, close, b.Compare(x, y, ComparisonDirection::kEq));
  if (equal_nan)
    close = b.Binary(Opcode::kOr, close, b.Binary(Opcode::kAnd, b.Compare(x, x, ComparisonDirection::kNe),
                                                  b.Compare(y, y, ComparisonDirection::kNe)));
  return ctx.Finish({AllTrue(b, close)});
}

Expected<LoweredOp> Diag(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t k = ctx.Int("diagonal", 1, 0);
  if (x->shape.rank() == 2) {
    std::vector<int64_t> d = Dims(x);
    int64_t len = k >= 0 ? std::max<int64_t>(0, std::min(d[0], d[1] - k)) : std::max<int64_t>(0, std::min(d[0] + k, d[1]));
    if (len == 0) return ctx.Finish({Full(b, x->shape.element_type(), 0, {0})});
    Instruction* f = b.Reshape(x, {d[0] * d[1]});
    int64_t start = k >= 0 ? k : -k * d[1];
    return ctx.Finish({b.SliceInDim(f, start, start + (len - 1) * (d[1] + 1) + 1, d[1] + 1, 0)});
  }
  if (x->shape.rank() != 1) return ctx.Unsupported("diag needs a 1-d or 2-d input");
  int64_t len = Dims(x)[0], m = len + std::abs(k);
  std::vector<int64_t> od = {m, m};
  hlo::PaddingConfig cfg;
  cfg.dimensions.resize(1);
  cfg.dimensions[0].edge_padding_high = m - len;
  Instruction* xp = b.Pad(x, Scalar(b, x->shape.element_type(), 0), cfg);
  Shape is = Shape::Array(PrimitiveType::S64, od);
  Instruction* mask = CmpScalar(b, Sub(b, b.Iota(is, 1), b.Iota(is, 0)), static_cast<double>(k), ComparisonDirection::kEq);
  Instruction* v = b.Broadcast(xp, od, {k >= 0 ? 0 : 1});
  return ctx.Finish({b.Select(mask, v, Full(b, x->shape.element_type(), 0, od))});
}

Expected<LoweredOp> DiagEmbed(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t k = ctx.Int("offset", 1, 0);
  const TensorMeta* out = ctx.OutputMeta(0);
  if (!out) return ctx.Unsupported("the output shape comes from the recorded output");
  int64_t r = out->rank();
  auto d1 = WrapDim(ctx.Int("dim1", 2, -2), r), d2 = WrapDim(ctx.Int("dim2", 3, -1), r);
  if (!d1 || !d2 || *d1 == *d2) return ctx.Unsupported("bad dims");
  std::vector<int64_t> od = out->sizes;
  int64_t len = Dims(x).back(), m = od[static_cast<size_t>(*d1)];
  // x's leading dims map to the output dims other than d1/d2; its last dim pads to m and maps to
  // d1 (offset >= 0) or d2 (offset < 0).
  hlo::PaddingConfig cfg;
  cfg.dimensions.resize(static_cast<size_t>(x->shape.rank()));
  cfg.dimensions.back().edge_padding_high = m - len;
  Instruction* xp = m > len ? b.Pad(x, Scalar(b, x->shape.element_type(), 0), cfg) : x;
  std::vector<int64_t> map;
  for (int64_t i = 0; i < r; ++i)
    if (i != *d1 && i != *d2) map.push_back(i);
  map.push_back(k >= 0 ? *d1 : *d2);
  Shape is = Shape::Array(PrimitiveType::S64, od);
  Instruction* mask = CmpScalar(b, Sub(b, b.Iota(is, *d2), b.Iota(is, *d1)), static_cast<double>(k), ComparisonDirection::kEq);
  return ctx.Finish({b.Select(mask, b.Broadcast(xp, od, map), Full(b, x->shape.element_type(), 0, od))});
}

Expected<LoweredOp> LinalgCross(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y0, ctx.RequiredTensor("other", 1));
  std::vector<int64_t> dims = BroadcastShapes(Dims(x0), Dims(y0));
  PrimitiveType t = ctx.OutputType(0, Promote(x0->shape.element_type(), y0->shape.element_type()));
  Instruction* x = Bcast(b, b.Convert(x0, t), dims);
  Instruction* y = Bcast(b, b.Convert(y0, t), dims);
  auto d = WrapDim(ctx.Int("dim", 2, -1), static_cast<int64_t>(dims.size()));
  if (!d || dims[static_cast<size_t>(*d)] != 3) return ctx.Unsupported("cross needs size 3 along dim");
  auto at = [&](Instruction* v, int64_t i) { return b.SliceInDim(v, i, i + 1, 1, *d); };
  std::vector<Instruction*> parts;
  for (int64_t i = 0; i < 3; ++i)
    parts.push_back(Sub(b, Mul(b, at(x, (i + 1) % 3), at(y, (i + 2) % 3)), Mul(b, at(x, (i + 2) % 3), at(y, (i + 1) % 3))));
  return ctx.Finish({b.Concatenate(parts, *d)});
}

Expected<LoweredOp> Heaviside(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * v0, ctx.RequiredTensor("values", 1));
  std::vector<int64_t> dims = BroadcastShapes(Dims(x0), Dims(v0));
  PrimitiveType t = ctx.OutputType(0, x0->shape.element_type());
  Instruction* x = Bcast(b, b.Convert(x0, t), dims);
  Instruction* v = Bcast(b, b.Convert(v0, t), dims);
  Instruction* step = b.Select(CmpScalar(b, x, 0, ComparisonDirection::kLt), FullLike(b, x, 0), FullLike(b, x, 1));
  Instruction* r = b.Select(CmpScalar(b, x, 0, ComparisonDirection::kEq), v, step);
  if (IsFloatish(t)) r = b.Select(b.Compare(x, x, ComparisonDirection::kNe), x, r);
  return ctx.Finish({r});
}

Expected<LoweredOp> Aminmax(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> dims = Dims(x);
  auto dv = ctx.OptInt("dim", 1);
  bool keepdim = ctx.Bool("keepdim", 2, false);
  std::vector<int64_t> red;
  if (dv) {
    auto w = WrapDim(*dv, x->shape.rank());
    if (!w) return ctx.Unsupported("dimension out of range");
    if (x->shape.rank() > 0) red = {*w};
  } else {
    red = AllDims(x);
  }
  Instruction* mn = ReduceMin(b, x, red);
  Instruction* mx = ReduceMax(b, x, red);
  if (IsFloatish(x->shape.element_type())) {
    Instruction* nan = ReduceMax(b, b.Compare(x, x, ComparisonDirection::kNe), red);
    mn = b.Select(nan, FullLike(b, mn, NAN), mn);
    mx = b.Select(nan, FullLike(b, mx, NAN), mx);
  }
  if (keepdim && !dims.empty()) {
    mn = b.Reshape(mn, KeepDims(dims, red));
    mx = b.Reshape(mx, KeepDims(dims, red));
  }
  return ctx.Finish({mn, mx});
}

Expected<LoweredOp> Glu(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  auto d = WrapDim(ctx.Int("dim", 1, -1), x->shape.rank());
  if (!d) return ctx.Unsupported("dimension out of range");
  int64_t size = Dims(x)[static_cast<size_t>(*d)];
  if (size % 2) return ctx.Unsupported("glu needs an even size along dim");
  Instruction* a = b.SliceInDim(x, 0, size / 2, 1, *d);
  Instruction* g = b.SliceInDim(x, size / 2, size, 1, *d);
  return ctx.Finish({Mul(b, a, b.Unary(Opcode::kLogistic, g))});
}

Expected<LoweredOp> Prelu(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * w0, ctx.RequiredTensor("weight", 1));
  std::vector<int64_t> dims = Dims(x);
  Instruction* w = b.Convert(w0, x->shape.element_type());
  if (w->shape.elements() == 1 || dims.size() < 2) {
    w = b.Broadcast(b.Reshape(w, {}), dims, {});
  } else {
    w = b.Broadcast(b.Reshape(w, {w->shape.elements()}), dims, {1});
  }
  return ctx.Finish({b.Select(CmpScalar(b, x, 0, ComparisonDirection::kGt), x, Mul(b, w, x))});
}

Expected<LoweredOp> Shrink(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  double l = ctx.Double("lambd", 1, 0.5);
  Instruction* zero = FullLike(b, x, 0);
  if (n.op == "aten::hardshrink") {
    Instruction* keep = CmpScalar(b, b.Unary(Opcode::kAbs, x), l, ComparisonDirection::kGt);
    return ctx.Finish({b.Select(keep, x, zero)});
  }
  Instruction* r = b.Select(CmpScalar(b, x, l, ComparisonDirection::kGt), AddScalar(b, x, -l),
                            b.Select(CmpScalar(b, x, -l, ComparisonDirection::kLt), AddScalar(b, x, l), zero));
  return ctx.Finish({b.Select(b.Compare(x, x, ComparisonDirection::kNe), x, r)});
}

// hardshrink_backward(grad_out, self, lambd) / softshrink_backward: the gradient passes where |x| > lambd.
Expected<LoweredOp> ShrinkBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  // hardshrink_backward names its gradient grad_out, softshrink_backward grad_output.
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g0, ctx.RequiredTensor(n.op == "aten::hardshrink_backward" ? "grad_out" : "grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 1));
  double l = ctx.Double("lambd", 2, 0.5);
  std::vector<int64_t> dims = BroadcastShapes(Dims(g0), Dims(x0));
  PrimitiveType t = ctx.OutputType(0, g0->shape.element_type());
  Instruction* g = Bcast(b, b.Convert(g0, t), dims);
  Instruction* x = Bcast(b, b.Convert(x0, t), dims);
  Instruction* keep = b.Binary(Opcode::kOr, CmpScalar(b, x, l, ComparisonDirection::kGt),
                               CmpScalar(b, x, -l, ComparisonDirection::kLt));
  return ctx.Finish({b.Select(keep, g, FullLike(b, g, 0))});
}

// prelu_backward(grad_output, self, weight) -> (grad_input, grad_weight).
Expected<LoweredOp> PreluBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * w0, ctx.RequiredTensor("weight", 2));
  std::vector<int64_t> dims = Dims(x);
  PrimitiveType t = x->shape.element_type();
  g = b.Convert(g, t);
  Instruction* w = b.Convert(w0, t);
  bool per_channel = w->shape.elements() != 1 && dims.size() >= 2;
  Instruction* wb = per_channel ? b.Broadcast(b.Reshape(w, {w->shape.elements()}), dims, {1})
                                : b.Broadcast(b.Reshape(w, {}), dims, {});
  Instruction* pos = CmpScalar(b, x, 0, ComparisonDirection::kGt);
  Instruction* zero = FullLike(b, x, 0);
  Instruction* gi = b.Select(pos, g, Mul(b, wb, g));
  Instruction* gw_full = b.Select(pos, zero, Mul(b, x, g));
  std::vector<int64_t> red;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d)
    if (!per_channel || d != 1) red.push_back(d);
  Instruction* gw = b.Reshape(ReduceSum(b, gw_full, red), Dims(w0));
  return ctx.Finish({gi, b.Convert(gw, w0->shape.element_type())});
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

// rrelu_with_noise_backward(grad_output, self, noise, lower, upper, training, self_is_result): in training the
// forward multiplied negatives by `noise`; in eval by (lower + upper) / 2, like leaky_relu.
Expected<LoweredOp> RreluWithNoiseBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g0, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * noise0, ctx.RequiredTensor("noise", 2));
  double lower = ctx.Double("lower", 3, 1.0 / 8), upper = ctx.Double("upper", 4, 1.0 / 3);
  bool training = ctx.Bool("training", 5, false);
  PrimitiveType t = g0->shape.element_type();
  std::vector<int64_t> dims = Dims(g0);
  Instruction* x = Bcast(b, b.Convert(x0, t), dims);
  if (training && upper - lower > 1e-6) return ctx.Finish({Mul(b, g0, Bcast(b, b.Convert(noise0, t), dims))});
  Instruction* pos = CmpScalar(b, x, 0, ComparisonDirection::kGt);
  return ctx.Finish({b.Select(pos, g0, MulScalar(b, g0, (lower + upper) / 2))});
}

Expected<LoweredOp> Logit(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  PrimitiveType t = ctx.OutputType(0, FloatType(x0->shape.element_type()));
  Instruction* x = b.Convert(x0, t);
  if (const Value* eps = ctx.Arg("eps", 1); eps && !eps->is_none()) {
    double e = eps->AsDouble();
    x = b.Clamp(Scalar(b, t, e), x, Scalar(b, t, 1 - e));
  }
  return ctx.Finish({b.Unary(Opcode::kLog, Div(b, x, Sub(b, FullLike(b, x, 1), x)))});
}

Expected<LoweredOp> Trace(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  if (x0->shape.rank() != 2) return ctx.Unsupported("trace needs a 2-d input");
  PrimitiveType t = ctx.OutputType(0, x0->shape.element_type());
  Instruction* x = b.Convert(x0, t);
  std::vector<int64_t> d = Dims(x);
  Shape is = Shape::Array(PrimitiveType::S64, d);
  Instruction* diag = b.Compare(b.Iota(is, 0), b.Iota(is, 1), ComparisonDirection::kEq);
  return ctx.Finish({ReduceSum(b, b.Select(diag, x, FullLike(b, x, 0)), {0, 1})});
}

Expected<LoweredOp> Dist(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y0, ctx.RequiredTensor("other", 1));
  double p = ctx.Double("p", 2, 2);
  std::vector<int64_t> dims = BroadcastShapes(Dims(x0), Dims(y0));
  PrimitiveType t = ctx.OutputType(0, x0->shape.element_type());
  Instruction* d = b.Unary(Opcode::kAbs, Sub(b, Bcast(b, b.Convert(x0, t), dims), Bcast(b, b.Convert(y0, t), dims)));
  std::vector<int64_t> all = AllDims(d);
  Instruction* r;
  if (std::isinf(p)) r = p > 0 ? ReduceMax(b, d, all) : ReduceMin(b, d, all);
  else if (p == 0) r = ReduceSum(b, b.Convert(CmpScalar(b, d, 0, ComparisonDirection::kNe), t), all);
  else if (p == 1) r = ReduceSum(b, d, all);
  else if (p == 2) r = b.Unary(Opcode::kSqrt, ReduceSum(b, Mul(b, d, d), all));
  else {
    Instruction* s = ReduceSum(b, b.Binary(Opcode::kPower, d, FullLike(b, d, p)), all);
    r = b.Binary(Opcode::kPower, s, FullLike(b, s, 1.0 / p));
  }
  return ctx.Finish({r});
}

Expected<LoweredOp> Rot90(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t k = ((ctx.Int("k", 1, 1) % 4) + 4) % 4;
  std::vector<int64_t> dims = ctx.Ints("dims", 2, {0, 1});
  int64_t r = x->shape.rank();
  if (dims.size() != 2) return ctx.Unsupported("rot90 needs two dims");
  auto d0 = WrapDim(dims[0], r), d1 = WrapDim(dims[1], r);
  if (!d0 || !d1 || *d0 == *d1) return ctx.Unsupported("bad dims");
  std::vector<int64_t> perm(static_cast<size_t>(r));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<size_t>(*d0)], perm[static_cast<size_t>(*d1)]);
  Instruction* y = x;
  if (k == 1) y = b.Transpose(b.Reverse(x, {*d1}), perm);
  else if (k == 2) y = b.Reverse(x, {std::min(*d0, *d1), std::max(*d0, *d1)});
  else if (k == 3) y = b.Reverse(b.Transpose(x, perm), {*d1});
  return ctx.Finish({y});
}

Expected<LoweredOp> NarrowCopy(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  auto d = WrapDim(ctx.Int("dim", 1, 0), x->shape.rank());
  if (!d) return ctx.Unsupported("dimension out of range");
  int64_t size = Dims(x)[static_cast<size_t>(*d)];
  int64_t start = ctx.Int("start", 2, 0), len = ctx.Int("length", 3, 0);
  if (start < 0) start += size;
  return ctx.Finish({b.SliceInDim(x, start, start + len, 1, *d)});
}

Fn Special(const std::string& op) {
  return [op](const Node& n, Builder& b) -> Expected<LoweredOp> {
    LoweringContext ctx(n, b);
    OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
    PrimitiveType t = ctx.OutputType(0, FloatType(x0->shape.element_type()));
    std::vector<int64_t> dims = ctx.OutputMeta(0) ? ctx.OutputMeta(0)->sizes : Dims(x0);
    Instruction* x = Bcast(b, b.Convert(x0, t), dims);
    Instruction* r = nullptr;
    if (op == "lgamma") {
      r = Lgamma(b, x);
    } else if (op == "digamma") {
      r = Digamma(b, x);
    } else if (op == "polygamma") {
      int64_t order = ctx.Int("n", 0, 0);
      if (order < 0) return ctx.Unsupported("polygamma of negative order");
      if (order == 0) {
        r = Digamma(b, x);
      } else {
        // (-1)^(n+1) n! zeta(n+1, x): 12 direct terms, then the Euler-Maclaurin tail at y = x + 12.
        double nd = static_cast<double>(order);
        Instruction* sum = FullLike(b, x, 0);
        const int kDirect = 12;
        for (int k = 0; k < kDirect; ++k)
          sum = Add(b, sum, b.Binary(Opcode::kPower, AddScalar(b, x, k), FullLike(b, x, -(nd + 1))));
        Instruction* y = AddScalar(b, x, kDirect);
        Instruction* tail = Add(b, MulScalar(b, b.Binary(Opcode::kPower, y, FullLike(b, y, -nd)), 1 / nd),
                                MulScalar(b, b.Binary(Opcode::kPower, y, FullLike(b, y, -(nd + 1))), 0.5));
        static const double kB2j[] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730};
        double fact = 1;   // (2j)!
        double rising = 1;  // (n+1)(n+2)...(n+2j-1)
        for (int j = 1; j <= 6; ++j) {
          fact *= (2.0 * j - 1) * (2.0 * j);
          rising = 1;
          for (int m = 1; m <= 2 * j - 1; ++m) rising *= nd + m;
          double coef = kB2j[j - 1] / fact * rising;
          tail = Add(b, tail, MulScalar(b, b.Binary(Opcode::kPower, y, FullLike(b, y, -(nd + 2.0 * j))), coef));
        }
        double nfact = std::tgamma(nd + 1);
        r = MulScalar(b, Add(b, sum, tail), (order % 2 == 1 ? 1.0 : -1.0) * nfact);
      }
    } else if (op == "mvlgamma") {
      int64_t p = ctx.Int("p", 1, 1);
      r = FullLike(b, x, static_cast<double>(p) * static_cast<double>(p - 1) / 4 * std::log(std::numbers::pi));
      for (int64_t i = 0; i < p; ++i) r = Add(b, r, Lgamma(b, AddScalar(b, x, -0.5 * static_cast<double>(i))));
    } else if (op == "entr") {
      Instruction* v = b.Unary(Opcode::kNegate, Mul(b, x, b.Unary(Opcode::kLog, x)));
      r = b.Select(CmpScalar(b, x, 0, ComparisonDirection::kEq), FullLike(b, x, 0), v);
      r = b.Select(CmpScalar(b, x, 0, ComparisonDirection::kLt), FullLike(b, x, -INFINITY), r);
    } else if (op == "ndtri") {
      Instruction* e = ApplyUnary(b, "erfinv", AddScalar(b, MulScalar(b, x, 2), -1));
      r = MulScalar(b, e, std::numbers::sqrt2);
    } else if (op == "log_ndtr") {
      r = LogNdtr(b, x);  // special.cpp: -x^2/2 + log(erfcx(-x/sqrt2)/2) in the far left tail
    } else if (op == "erfcx") {
      r = Erfcx(b, x);  // special.cpp: a continued fraction for x >= 2
    } else if (op == "xlog1py") {
      OPPROBE_ASSIGN_OR_RETURN(Instruction * y, ctx.Operand("other", 1, t, dims));
      Instruction* p = Mul(b, x, b.Unary(Opcode::kLog1p, y));
      Instruction* x0is0 = b.Binary(Opcode::kAnd, CmpScalar(b, x, 0, ComparisonDirection::kEq),
                                    b.Compare(y, y, ComparisonDirection::kEq));
      r = b.Select(x0is0, FullLike(b, x, 0), p);
    } else {
      return ctx.Unsupported("no special-function body for " + op);
    }
    return ctx.Finish({r});
  };
}

Expected<LoweredOp> Isin(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  Instruction* e = ctx.Tensor("elements", 0);
  Instruction* te = ctx.Tensor("test_elements", 1);
  if (!e || !te) return ctx.Unsupported("needs tensor elements and test_elements");
  bool invert = ctx.Bool("invert", 3, false);
  PrimitiveType t = Promote(e->shape.element_type(), te->shape.element_type());
  std::vector<int64_t> ed = Dims(e);
  int64_t nt = te->shape.elements();
  std::vector<int64_t> big = ed;
  big.push_back(nt);
  std::vector<int64_t> emap = AllDims(e);
  Instruction* eq = b.Compare(b.Broadcast(b.Convert(e, t), big, emap),
                              b.Broadcast(b.Reshape(b.Convert(te, t), {nt}), big, {static_cast<int64_t>(ed.size())}),
                              ComparisonDirection::kEq);
  Instruction* any = Reduce(b, eq, {static_cast<int64_t>(ed.size())}, Opcode::kOr, Scalar(b, PrimitiveType::PRED, 0));
  return ctx.Finish({invert ? b.Unary(Opcode::kNot, any) : any});
}

Expected<LoweredOp> SearchSorted(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  bool is_bucketize = n.op == "aten::bucketize";
  Instruction* seq = is_bucketize ? ctx.Tensor("boundaries", 1) : ctx.Tensor("sorted_sequence", 0);
  Instruction* v = is_bucketize ? ctx.Tensor("self", 0) : ctx.Tensor("self", 1);
  if (!seq || !v) return ctx.Unsupported("needs a sorted sequence and tensor values");
  if (!is_bucketize && ctx.Tensor("sorter", 5)) return ctx.Unsupported("searchsorted with a sorter");
  bool right = ctx.Bool("right", 3, false);
  if (ctx.String("side", 4) == "right") right = true;
  PrimitiveType t = Promote(seq->shape.element_type(), v->shape.element_type());
  std::vector<int64_t> vd = Dims(v), sd = Dims(seq);
  int64_t S = sd.empty() ? 1 : sd.back();
  std::vector<int64_t> big = vd;
  big.push_back(S);
  int64_t last = static_cast<int64_t>(vd.size());
  Instruction* sb;
  if (sd.size() <= 1) {
    sb = b.Broadcast(b.Reshape(b.Convert(seq, t), {S}), big, {last});
  } else {
    std::vector<int64_t> map;
    for (int64_t i = 0; i < last - 1; ++i) map.push_back(i);
    map.push_back(last);
    sb = b.Broadcast(b.Convert(seq, t), big, map);
  }
  Instruction* vb = b.Broadcast(b.Convert(v, t), big, AllDims(v));
  // count of boundaries below the value (left) or not above it (right)
  Instruction* below = b.Compare(sb, vb, right ? ComparisonDirection::kLe : ComparisonDirection::kLt);
  Instruction* cnt = ReduceSum(b, b.Convert(below, PrimitiveType::S64), {last});
  return ctx.Finish({b.Convert(cnt, ctx.OutputType(0, PrimitiveType::S64))});
}

Expected<LoweredOp> Put(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx, ctx.RequiredTensor("index", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * src, ctx.RequiredTensor("source", 2));
  bool acc = ctx.Bool("accumulate", 3, false);
  PrimitiveType t = x->shape.element_type();
  int64_t total = x->shape.elements(), cnt = idx->shape.elements();
  Instruction* i = b.Reshape(b.Convert(idx, PrimitiveType::S64), {cnt});
  i = b.Select(CmpScalar(b, i, 0, ComparisonDirection::kLt), AddScalar(b, i, static_cast<double>(total)), i);
  hlo::ScatterDimensionNumbers dn;
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  Computation* comp;
  if (acc) {
    comp = b.ScalarBinaryComputation(t == PrimitiveType::PRED ? Opcode::kOr : Opcode::kAdd, t);
  } else {
    comp = ReplaceComputation(b, t);
  }
  Instruction* s = b.Scatter({b.Reshape(x, {total})}, b.Reshape(i, {cnt, 1}),
                             {b.Reshape(b.Convert(src, t), {cnt})}, dn, comp);
  return ctx.Finish({b.Reshape(s, Dims(x))});
}

Expected<LoweredOp> Frexp(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  PrimitiveType t = x->shape.element_type();
  Instruction* ax = b.Unary(Opcode::kAbs, x);
  Instruction* zero = CmpScalar(b, x, 0, ComparisonDirection::kEq);
  Instruction* safe = b.Select(zero, FullLike(b, x, 1), ax);
  Instruction* e = AddScalar(b, b.Unary(Opcode::kFloor, MulScalar(b, b.Unary(Opcode::kLog, safe), 1 / std::numbers::ln2)), 1);
  Instruction* m = Div(b, x, b.Binary(Opcode::kPower, FullLike(b, x, 2), e));
  // log rounding: keep |m| in [0.5, 1)
  Instruction* big = CmpScalar(b, b.Unary(Opcode::kAbs, m), 1, ComparisonDirection::kGe);
  m = b.Select(big, MulScalar(b, m, 0.5), m);
  e = b.Select(big, AddScalar(b, e, 1), e);
  Instruction* small = b.Binary(Opcode::kAnd, CmpScalar(b, b.Unary(Opcode::kAbs, m), 0.5, ComparisonDirection::kLt),
                                b.Unary(Opcode::kNot, zero));
  m = b.Select(small, MulScalar(b, m, 2), m);
  e = b.Select(small, AddScalar(b, e, -1), e);
  e = b.Select(zero, FullLike(b, e, 0), e);
  m = b.Select(zero, x, m);
  (void)t;
  return ctx.Finish({m, b.Convert(e, ctx.OutputType(1, PrimitiveType::S32))});
}

Expected<LoweredOp> BlockDiag(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  std::vector<Instruction*> xs = ctx.TensorList("tensors", 0);
  const TensorMeta* out = ctx.OutputMeta(0);
  if (!out || out->rank() != 2) return ctx.Unsupported("needs the recorded 2-d output");
  int64_t W = out->sizes[1];
  std::vector<Instruction*> rows;
  int64_t col = 0;
  for (Instruction* x : xs) {
    if (!x) continue;
    Instruction* m = b.Convert(x, out->dtype);
    if (m->shape.rank() == 0) m = b.Reshape(m, {1, 1});
    else if (m->shape.rank() == 1) m = b.Reshape(m, {1, Dims(m)[0]});
    int64_t w = Dims(m)[1];
    hlo::PaddingConfig cfg;
    cfg.dimensions.resize(2);
    cfg.dimensions[1].edge_padding_low = col;
    cfg.dimensions[1].edge_padding_high = W - col - w;
    rows.push_back(b.Pad(m, Scalar(b, out->dtype, 0), cfg));
    col += w;
  }
  if (rows.empty()) return ctx.Finish({Full(b, out->dtype, 0, out->sizes)});
  return ctx.Finish({rows.size() == 1 ? rows[0] : b.Concatenate(rows, 0)});
}

Expected<LoweredOp> TriIndices(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  int64_t rows = ctx.Int("row", 0, 0), cols = ctx.Int("col", 1, 0), off = ctx.Int("offset", 2, 0);
  bool lower = n.op == "aten::tril_indices";
  std::vector<int64_t> rr, cc;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      if (lower ? j - i <= off : j - i >= off) rr.push_back(i), cc.push_back(j);
  int64_t cnt = static_cast<int64_t>(rr.size());
  hlo::Literal lit(Shape::Array(PrimitiveType::S64, {2, cnt}));
  for (int64_t k = 0; k < cnt; ++k) {
    lit.SetFromInt64(k, rr[static_cast<size_t>(k)]);
    lit.SetFromInt64(cnt + k, cc[static_cast<size_t>(k)]);
  }
  return ctx.Finish({b.Convert(b.Constant(std::move(lit)), ctx.OutputType(0, PrimitiveType::S64))});
}

Expected<LoweredOp> Renorm(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  double p = ctx.Double("p", 1, 2), maxnorm = ctx.Double("maxnorm", 3, 1);
  auto d = WrapDim(ctx.Int("dim", 2, 0), x->shape.rank());
  if (!d) return ctx.Unsupported("dimension out of range");
  std::vector<int64_t> dims = Dims(x), red;
  for (int64_t i = 0; i < x->shape.rank(); ++i)
    if (i != *d) red.push_back(i);
  Instruction* a = b.Unary(Opcode::kAbs, x);
  Instruction* s = ReduceSum(b, b.Binary(Opcode::kPower, a, FullLike(b, a, p)), red);
  Instruction* norm = b.Binary(Opcode::kPower, s, FullLike(b, s, 1 / p));
  Instruction* factor = b.Select(CmpScalar(b, norm, maxnorm, ComparisonDirection::kGt),
                                 Div(b, FullLike(b, norm, maxnorm), AddScalar(b, norm, 1e-7)), FullLike(b, norm, 1));
  return ctx.Finish({Mul(b, x, b.Broadcast(factor, dims, {*d}))});
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

Expected<LoweredOp> MaxUnpool(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx, ctx.RequiredTensor("indices", 1));
  const TensorMeta* out = ctx.OutputMeta(0);
  if (!out) return ctx.Unsupported("needs the recorded output");
  size_t nsp = n.op == "aten::max_unpool3d" ? 3 : 2;
  std::vector<int64_t> xd = Dims(x), od = out->sizes;
  if (xd.size() < nsp || od.size() != xd.size()) return ctx.Unsupported("rank mismatch");
  size_t lead = xd.size() - nsp;
  int64_t planes = 1, in_plane = 1, out_plane = 1;
  for (size_t i = 0; i < lead; ++i) planes *= xd[i];
  for (size_t i = lead; i < xd.size(); ++i) in_plane *= xd[i], out_plane *= od[i];
  PrimitiveType t = x->shape.element_type();
  Instruction* local = b.Reshape(b.Convert(idx, PrimitiveType::S64), {planes, in_plane});
  Instruction* base = MulScalar(b, b.Iota(Shape::Array(PrimitiveType::S64, {planes, in_plane}), 0), static_cast<double>(out_plane));
  Instruction* gidx = b.Reshape(Add(b, local, base), {planes * in_plane, 1});
  hlo::ScatterDimensionNumbers dn;
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  Instruction* s = b.Scatter({Full(b, t, 0, {planes * out_plane})}, gidx, {b.Reshape(x, {planes * in_plane})}, dn,
                            ReplaceComputation(b, t));
  return ctx.Finish({b.Reshape(s, od)});
}

Expected<LoweredOp> Histc(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  int64_t bins = ctx.Int("bins", 1, 100);
  double lo = ctx.Double("min", 2, 0), hi = ctx.Double("max", 3, 0);
  PrimitiveType t = x0->shape.element_type();
  int64_t total = x0->shape.elements();
  Instruction* x = b.Reshape(x0, {total});
  Instruction *mn, *mx;
  if (lo == hi) {  // the data's range (still a static shape)
    mn = ReduceMin(b, x, {0});
    mx = ReduceMax(b, x, {0});
    Instruction* same = b.Compare(mn, mx, ComparisonDirection::kEq);
    mn = b.Select(same, AddScalar(b, mn, -1), mn);
    mx = b.Select(same, AddScalar(b, mx, 1), mx);
  } else {
    mn = Scalar(b, t, lo);
    mx = Scalar(b, t, hi);
  }
  Instruction* mnb = b.Broadcast(mn, {total}, {});
  Instruction* mxb = b.Broadcast(mx, {total}, {});
  Instruction* pos = Div(b, MulScalar(b, Sub(b, x, mnb), static_cast<double>(bins)), Sub(b, mxb, mnb));
  Instruction* bin = b.Convert(b.Unary(Opcode::kFloor, pos), PrimitiveType::S64);
  bin = b.Select(b.Compare(x, mxb, ComparisonDirection::kEq), Full(b, PrimitiveType::S64, static_cast<double>(bins - 1), {total}), bin);
  Instruction* inside = b.Binary(Opcode::kAnd, b.Compare(x, mnb, ComparisonDirection::kGe), b.Compare(x, mxb, ComparisonDirection::kLe));
  bin = b.Select(inside, bin, Full(b, PrimitiveType::S64, static_cast<double>(bins), {total}));  // out of range: dropped
  hlo::ScatterDimensionNumbers dn;
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  Instruction* h = b.Scatter({Full(b, t, 0, {bins})}, b.Reshape(bin, {total, 1}), {Full(b, t, 1, {total})}, dn,
                             b.ScalarBinaryComputation(Opcode::kAdd, t));
  return ctx.Finish({h});
}

Expected<LoweredOp> Bincount(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  const TensorMeta* out = ctx.OutputMeta(0);
  if (!out || out->rank() != 1) return ctx.Unsupported("the output length (data-dependent) comes from the recorded output");
  int64_t len = out->sizes[0], total = x->shape.elements();
  Instruction* w = ctx.Tensor("weights", 1);
  PrimitiveType t = out->dtype;
  Instruction* upd = w ? b.Convert(b.Reshape(w, {total}), t) : Full(b, t, 1, {total});
  hlo::ScatterDimensionNumbers dn;
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  Instruction* h = b.Scatter({Full(b, t, 0, {len})}, b.Reshape(b.Convert(x, PrimitiveType::S64), {total, 1}), {upd}, dn,
                             b.ScalarBinaryComputation(Opcode::kAdd, t));
  OPPROBE_ASSIGN_OR_RETURN(LoweredOp op, ctx.Finish({h}));
  op.dynamic_shape = true;
  op.note = "output length is max(input)+1: data-dependent; lowered at the recorded length";
  return op;
}

Expected<LoweredOp> NoOutputs(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  // Host-side checks (e.g. _linalg_check_errors raising on a bad info value) emit no HLO.
  LoweredOp op;
  if (!b.ok()) return b.status();
  return op;
}

}  // namespace opprobe::analyzer::lowering

namespace opprobe::analyzer::lowering {

namespace {
// Dims of x except `dim` (the weight-norm reduction dims); dim == -1 means all.
std::vector<int64_t> OtherDims(int64_t rank, int64_t dim) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < rank; ++i)
    if (i != dim) r.push_back(i);
  return r;
}
}  // namespace

Expected<LoweredOp> WeightNorm(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * v, ctx.RequiredTensor("v", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("g", 1));
  int64_t dim = ctx.Int("dim", 2, 0);
  std::vector<int64_t> vd = Dims(v);
  std::vector<int64_t> red = OtherDims(v->shape.rank(), dim);
  // norm = sqrt(sum(v^2) over the other dims), shaped like g; w = v * g / norm
  Instruction* norm = b.Reshape(b.Unary(Opcode::kSqrt, ReduceSum(b, Mul(b, v, v), red)), Dims(g));
  Instruction* scale = Div(b, b.Convert(g, v->shape.element_type()), norm);
  return ctx.Finish({Mul(b, v, Bcast(b, scale, vd)), norm});
}

Expected<LoweredOp> WeightNormBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * gw, ctx.RequiredTensor("grad_w", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * v, ctx.RequiredTensor("saved_v", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("saved_g", 2));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * norms, ctx.RequiredTensor("saved_norms", 3));
  int64_t dim = ctx.Int("dim", 4, 0);
  std::vector<int64_t> vd = Dims(v);
  std::vector<int64_t> red = OtherDims(v->shape.rank(), dim);
  // ATen's weight_norm backward: per_dir = sum(grad_w * v); grad_g = per_dir / norms;
  // grad_v = (g / norms) * (grad_w - v * per_dir / norms^2)
  Instruction* per_dir = b.Reshape(ReduceSum(b, Mul(b, gw, v), red), Dims(g));
  Instruction* grad_g = Div(b, per_dir, norms);
  Instruction* coef = Div(b, per_dir, Mul(b, norms, norms));
  Instruction* grad_v = Mul(b, Bcast(b, Div(b, g, norms), vd), Sub(b, gw, Mul(b, v, Bcast(b, coef, vd))));
  return ctx.Finish({grad_v, grad_g});
}

Expected<LoweredOp> GluBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 1));
  auto d = WrapDim(ctx.Int("dim", 2, -1), x->shape.rank());
  if (!d) return ctx.Unsupported("dimension out of range");
  int64_t size = Dims(x)[static_cast<size_t>(*d)];
  Instruction* a = b.SliceInDim(x, 0, size / 2, 1, *d);
  Instruction* s = b.Unary(Opcode::kLogistic, b.SliceInDim(x, size / 2, size, 1, *d));
  Instruction* ga = Mul(b, g, s);
  Instruction* gb = Mul(b, Mul(b, g, a), Mul(b, s, Sub(b, FullLike(b, s, 1), s)));
  return ctx.Finish({b.Concatenate({ga, gb}, *d)});
}

// Ops whose result is not a tensor and that no device runs (promote_types, result_type): nothing to lower.
Expected<LoweredOp> NoTensorResult(const Node& n, Builder& b) { return LoweredOp{}; }

}  // namespace opprobe::analyzer::lowering
