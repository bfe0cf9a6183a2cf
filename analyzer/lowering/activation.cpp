// Activation functions (torch.nn's non-linear activations: relu, gelu, elu/selu/celu, leaky_relu, prelu,
// hardtanh, softplus, glu, the shrinks, ...) and the backward ops of activations and pointwise functions
// (tanh_backward, gelu_backward, logit_backward, ...), as PyTorch/XLA's elementwise lowerings build them.
#include <cmath>
#include <limits>
#include <numbers>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

Instruction* SoftplusOf(Builder& b, Instruction* x, double beta, double threshold) {
  Instruction* bx = beta == 1.0 ? x : MulScalar(b, x, beta);
  Instruction* sp = b.Unary(Opcode::kLog1p, b.Unary(Opcode::kExp, bx));
  if (beta != 1.0) sp = MulScalar(b, sp, 1.0 / beta);
  return b.Select(CmpScalar(b, bx, threshold, ComparisonDirection::kGt), x, sp);
}

Instruction* GeluOf(Builder& b, Instruction* x, bool tanh_approx) {
  if (tanh_approx) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Instruction* x3 = Mul(b, Mul(b, x, x), x);
    Instruction* inner = MulScalar(b, Add(b, x, MulScalar(b, x3, 0.044715)), std::sqrt(2.0 / std::numbers::pi));
    return Mul(b, MulScalar(b, x, 0.5), AddScalar(b, b.Unary(Opcode::kTanh, inner), 1.0));
  }
  // x * 0.5 * (erf(x / sqrt(2)) + 1)  (torch_xla BuildGelu)
  Instruction* e = b.Unary(Opcode::kErf, MulScalar(b, x, std::numbers::sqrt2 / 2));
  return Mul(b, MulScalar(b, x, 0.5), AddScalar(b, e, 1.0));
}

// ---- activations without arguments: bodies of UnaryInResultType (elementwise.cpp) ----
Instruction* Relu(Builder& b, Instruction* x) { return b.Binary(Opcode::kMaximum, x, FullLike(b, x, 0.0)); }
Instruction* Relu6(Builder& b, Instruction* x) {
  return b.Clamp(Scalar(b, x->shape.element_type(), 0), x, Scalar(b, x->shape.element_type(), 6));
}
Instruction* Silu(Builder& b, Instruction* x) { return Mul(b, x, b.Unary(Opcode::kLogistic, x)); }
Instruction* Mish(Builder& b, Instruction* x) { return Mul(b, x, b.Unary(Opcode::kTanh, SoftplusOf(b, x, 1.0, 20.0))); }
Instruction* Hardsigmoid(Builder& b, Instruction* x) {
  PrimitiveType t = x->shape.element_type();
  return MulScalar(b, b.Clamp(Scalar(b, t, 0), AddScalar(b, x, 3.0), Scalar(b, t, 6)), 1.0 / 6.0);
}
Instruction* Hardswish(Builder& b, Instruction* x) {
  PrimitiveType t = x->shape.element_type();
  return Mul(b, x, MulScalar(b, b.Clamp(Scalar(b, t, 0), AddScalar(b, x, 3.0), Scalar(b, t, 6)), 1.0 / 6.0));
}
Instruction* Logsigmoid(Builder& b, Instruction* x) {
  return b.Unary(Opcode::kNegate, SoftplusOf(b, b.Unary(Opcode::kNegate, x), 1.0, 1e30));
}

// ---- activations with arguments ----
Expected<LoweredOp> LeakyRelu(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  double slope = ctx.Double("negative_slope", 1, 0.01);
  return ctx.Finish({b.Select(CmpScalar(b, x, 0, ComparisonDirection::kGt), x, MulScalar(b, x, slope))});
}

Expected<LoweredOp> Hardtanh(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  PrimitiveType t = x->shape.element_type();
  double lo = ctx.Double("min_val", 1, -1), hi = ctx.Double("max_val", 2, 1);
  return ctx.Finish({b.Clamp(Scalar(b, t, lo), x, Scalar(b, t, hi))});
}

// scale * x for x > 0, else alpha * scale * (exp(x * input_scale) - 1).
Expected<LoweredOp> EluOf(const LoweringContext& ctx, Instruction* x, double alpha, double scale, double in_scale) {
  Builder& b = ctx.builder;
  Instruction* neg = MulScalar(b, b.Unary(Opcode::kExpm1, MulScalar(b, x, in_scale)), alpha * scale);
  return ctx.Finish({b.Select(CmpScalar(b, x, 0, ComparisonDirection::kGt), MulScalar(b, x, scale), neg)});
}

Expected<LoweredOp> Elu(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  return EluOf(ctx, x, ctx.Double("alpha", 1, 1), ctx.Double("scale", 2, 1), ctx.Double("input_scale", 3, 1));
}

Expected<LoweredOp> Selu(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  return EluOf(ctx, x, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1);
}

Expected<LoweredOp> Celu(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  double alpha = ctx.Double("alpha", 1, 1);
  return EluOf(ctx, x, alpha, 1, 1 / alpha);
}

Expected<LoweredOp> Softplus(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  return ctx.Finish({SoftplusOf(b, x, ctx.Double("beta", 1, 1), ctx.Double("threshold", 2, 20))});
}

Expected<LoweredOp> Gelu(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  return ctx.Finish({GeluOf(b, x, ctx.String("approximate", 1, "none") == "tanh")});
}

Expected<LoweredOp> LogSigmoidForward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  Instruction* r = b.Unary(Opcode::kNegate, SoftplusOf(b, b.Unary(Opcode::kNegate, x), 1.0, 1e30));
  std::vector<Instruction*> outs = {r};
  // ATen's CPU kernel also returns its buffer, exp(-|x|) (an empty tensor on other devices).
  if (const TensorMeta* buf = ctx.OutputMeta(1))
    outs.push_back(buf->sizes == Dims(x) ? b.Unary(Opcode::kExp, b.Unary(Opcode::kNegate, b.Unary(Opcode::kAbs, x)))
                                         : Full(b, buf->dtype, 0, buf->sizes));
  return ctx.Finish(outs);
}

Expected<LoweredOp> Threshold(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> dims = Dims(x);
  PrimitiveType t = x->shape.element_type();
  OPPROBE_ASSIGN_OR_RETURN(Instruction * th, ctx.Operand("threshold", 1, t, dims));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * val, ctx.Operand("value", 2, t, dims));
  return ctx.Finish({b.Select(b.Compare(x, th, ComparisonDirection::kLe), val, x)});
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

Expected<LoweredOp> Hardshrink(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  double l = ctx.Double("lambd", 1, 0.5);
  Instruction* zero = FullLike(b, x, 0);
  Instruction* keep = CmpScalar(b, b.Unary(Opcode::kAbs, x), l, ComparisonDirection::kGt);
  return ctx.Finish({b.Select(keep, x, zero)});
}

Expected<LoweredOp> Softshrink(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  double l = ctx.Double("lambd", 1, 0.5);
  Instruction* zero = FullLike(b, x, 0);
  Instruction* r = b.Select(CmpScalar(b, x, l, ComparisonDirection::kGt), AddScalar(b, x, -l),
                            b.Select(CmpScalar(b, x, -l, ComparisonDirection::kLt), AddScalar(b, x, l), zero));
  return ctx.Finish({b.Select(b.Compare(x, x, ComparisonDirection::kNe), x, r)});
}

// ---- backward ops ----

// What the backward of a pointwise function reads: the incoming gradient and the forward's output (or input),
// both in the result type and broadcast to the result's dims.
struct PointwiseGrad {
  Instruction* grad;
  Instruction* value;
  PrimitiveType type;
  std::vector<int64_t> dims;
};

// `value_is_grad`: the op has no output/self tensor at position 1 (elu_backward's is self_or_result, read apart).
Expected<PointwiseGrad> ReadPointwiseGrad(const LoweringContext& ctx, bool value_is_grad = false) {
  Builder& b = ctx.builder;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  Instruction* y = value_is_grad ? g : ctx.Tensor("output", 1);
  if (!y) y = ctx.Tensor("self", 1);
  if (!y) return ctx.Unsupported("needs output/self");
  PrimitiveType t = ctx.OutputType(0, g->shape.element_type());
  g = b.Convert(g, t);
  y = b.Convert(y, t);
  std::vector<int64_t> dims = ElementwiseDims(ctx);
  g = Bcast(b, g, dims);
  y = Bcast(b, y, dims);
  return PointwiseGrad{g, y, t, dims};
}

Expected<LoweredOp> TanhBackward(const Node& n, Builder& b) {  // g * (1 - y^2)
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(PointwiseGrad v, ReadPointwiseGrad(ctx));
  Instruction *g = v.grad, *y = v.value;
  return ctx.Finish({Mul(b, g, Sub(b, FullLike(b, y, 1), Mul(b, y, y)))});
}

Expected<LoweredOp> SigmoidBackward(const Node& n, Builder& b) {  // g * y * (1 - y)
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(PointwiseGrad v, ReadPointwiseGrad(ctx));
  Instruction *g = v.grad, *y = v.value;
  return ctx.Finish({Mul(b, g, Mul(b, y, Sub(b, FullLike(b, y, 1), y)))});
}

Expected<LoweredOp> SiluBackward(const Node& n, Builder& b) {  // g * s * (1 + x (1 - s))
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(PointwiseGrad v, ReadPointwiseGrad(ctx));
  Instruction *g = v.grad, *y = v.value;
  Instruction* s = b.Unary(Opcode::kLogistic, y);
  return ctx.Finish({Mul(b, g, Mul(b, s, AddScalar(b, Mul(b, y, Sub(b, FullLike(b, s, 1), s)), 1)))});
}

Expected<LoweredOp> GeluBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(PointwiseGrad v, ReadPointwiseGrad(ctx));
  Instruction *g = v.grad, *y = v.value;
  std::string approx = ctx.String("approximate", 2, "none");
  if (approx == "tanh") {
    // d/dx 0.5 x (1 + tanh(u)), u = k (x + 0.044715 x^3)
    double k = std::sqrt(2.0 / std::numbers::pi);
    Instruction* x2 = Mul(b, y, y);
    Instruction* u = MulScalar(b, Add(b, y, MulScalar(b, Mul(b, x2, y), 0.044715)), k);
    Instruction* th = b.Unary(Opcode::kTanh, u);
    Instruction* du = MulScalar(b, AddScalar(b, MulScalar(b, x2, 3 * 0.044715), 1.0), k);
    Instruction* left = MulScalar(b, AddScalar(b, th, 1.0), 0.5);
    Instruction* right = Mul(b, MulScalar(b, y, 0.5), Mul(b, Sub(b, FullLike(b, th, 1), Mul(b, th, th)), du));
    return ctx.Finish({Mul(b, g, Add(b, left, right))});
  }
  // cdf + x * pdf
  Instruction* cdf =
      MulScalar(b, AddScalar(b, b.Unary(Opcode::kErf, MulScalar(b, y, std::numbers::sqrt2 / 2)), 1), 0.5);
  Instruction* pdf =
      MulScalar(b, b.Unary(Opcode::kExp, MulScalar(b, Mul(b, y, y), -0.5)), 1.0 / std::sqrt(2 * std::numbers::pi));
  return ctx.Finish({Mul(b, g, Add(b, cdf, Mul(b, y, pdf)))});
}

Expected<LoweredOp> HardsigmoidBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(PointwiseGrad v, ReadPointwiseGrad(ctx));
  Instruction *g = v.grad, *y = v.value;
  Instruction* in = b.Binary(Opcode::kAnd, CmpScalar(b, y, -3, ComparisonDirection::kGt),
                             CmpScalar(b, y, 3, ComparisonDirection::kLt));
  return ctx.Finish({b.Select(in, MulScalar(b, g, 1.0 / 6.0), FullLike(b, g, 0))});
}

Expected<LoweredOp> HardswishBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(PointwiseGrad v, ReadPointwiseGrad(ctx));
  Instruction *g = v.grad, *y = v.value;
  Instruction* mid = Mul(b, g, AddScalar(b, MulScalar(b, y, 1.0 / 3.0), 0.5));
  Instruction* r1 = b.Select(CmpScalar(b, y, 3, ComparisonDirection::kGe), g, mid);
  return ctx.Finish({b.Select(CmpScalar(b, y, -3, ComparisonDirection::kLe), FullLike(b, g, 0), r1)});
}

Expected<LoweredOp> HardtanhBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(PointwiseGrad v, ReadPointwiseGrad(ctx));
  Instruction *g = v.grad, *y = v.value;
  double lo = ctx.Double("min_val", 2, -1), hi = ctx.Double("max_val", 3, 1);
  Instruction* out = b.Binary(Opcode::kOr, CmpScalar(b, y, lo, ComparisonDirection::kLe),
                              CmpScalar(b, y, hi, ComparisonDirection::kGe));
  return ctx.Finish({b.Select(out, FullLike(b, g, 0), g)});
}

Expected<LoweredOp> LeakyReluBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(PointwiseGrad v, ReadPointwiseGrad(ctx));
  Instruction *g = v.grad, *y = v.value;
  double slope = ctx.Double("negative_slope", 2, 0.01);
  return ctx.Finish({b.Select(CmpScalar(b, y, 0, ComparisonDirection::kGt), g, MulScalar(b, g, slope))});
}

Expected<LoweredOp> EluBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(PointwiseGrad v, ReadPointwiseGrad(ctx, /*value_is_grad=*/true));
  Instruction* g = v.grad;
  double alpha = ctx.Double("alpha", 2, 1), scale = ctx.Double("scale", 3, 1),
         in_scale = ctx.Double("input_scale", 4, 1);
  bool is_result = ctx.Bool("is_result", 5, false);
  Instruction* x = ctx.Tensor("self_or_result", 6);
  if (!x) return ctx.Unsupported("needs self_or_result");
  x = Bcast(b, b.Convert(x, v.type), v.dims);
  Instruction* neg;
  if (is_result) {  // g * in_scale * (x + alpha*scale)
    neg = Mul(b, g, MulScalar(b, AddScalar(b, x, alpha * scale), in_scale));
  } else {  // g * in_scale * alpha * scale * exp(x * in_scale)
    neg = Mul(b, g, MulScalar(b, b.Unary(Opcode::kExp, MulScalar(b, x, in_scale)), in_scale * alpha * scale));
  }
  return ctx.Finish({b.Select(CmpScalar(b, x, 0, ComparisonDirection::kLe), neg, MulScalar(b, g, scale))});
}

Expected<LoweredOp> SoftplusBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(PointwiseGrad v, ReadPointwiseGrad(ctx));
  Instruction *g = v.grad, *y = v.value;
  double beta = ctx.Double("beta", 2, 1), threshold = ctx.Double("threshold", 3, 20);
  Instruction* bx = MulScalar(b, y, beta);
  Instruction* s = b.Unary(Opcode::kLogistic, bx);
  return ctx.Finish({b.Select(CmpScalar(b, bx, threshold, ComparisonDirection::kGt), g, Mul(b, g, s))});
}

Expected<LoweredOp> MishBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(PointwiseGrad v, ReadPointwiseGrad(ctx));
  Instruction *g = v.grad, *y = v.value;
  Instruction* sp = SoftplusOf(b, y, 1, 20);
  Instruction* tsp = b.Unary(Opcode::kTanh, sp);
  Instruction* s = b.Unary(Opcode::kLogistic, y);
  return ctx.Finish({Mul(b, g, Add(b, tsp, Mul(b, Mul(b, y, s), Sub(b, FullLike(b, tsp, 1), Mul(b, tsp, tsp)))))});
}

Expected<LoweredOp> LogitBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(PointwiseGrad v, ReadPointwiseGrad(ctx));
  Instruction *g = v.grad, *y = v.value;
  const Value* eps = ctx.Arg("eps", 2);
  Instruction* d = Div(b, g, Mul(b, y, Sub(b, FullLike(b, y, 1), y)));
  if (eps && !eps->is_none()) {
    double e = eps->AsDouble();
    Instruction* out = b.Binary(Opcode::kOr, CmpScalar(b, y, e, ComparisonDirection::kLt),
                                CmpScalar(b, y, 1 - e, ComparisonDirection::kGt));
    return ctx.Finish({b.Select(out, FullLike(b, g, 0), d)});
  }
  Instruction* out =
      b.Binary(Opcode::kOr, CmpScalar(b, y, 0, ComparisonDirection::kLt), CmpScalar(b, y, 1, ComparisonDirection::kGt));
  return ctx.Finish({b.Select(out, FullLike(b, g, std::numeric_limits<double>::quiet_NaN()), d)});
}

Expected<LoweredOp> LogSigmoidBackward(const Node& n, Builder& b) {  // g * (1 - sigmoid(x)) = g * sigmoid(-x)
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(PointwiseGrad v, ReadPointwiseGrad(ctx));
  Instruction *g = v.grad, *y = v.value;
  return ctx.Finish({Mul(b, g, b.Unary(Opcode::kLogistic, b.Unary(Opcode::kNegate, y)))});
}

Expected<LoweredOp> ThresholdBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 1));
  PrimitiveType t = g->shape.element_type();
  std::vector<int64_t> dims = ElementwiseDims(ctx);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * th, ctx.Operand("threshold", 2, x->shape.element_type(), dims));
  Instruction* le = b.Compare(Bcast(b, x, dims), th, ComparisonDirection::kLe);
  return ctx.Finish({b.Select(le, Full(b, t, 0, dims), Bcast(b, g, dims))});
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

// _prelu_kernel_backward(grad_output, self, weight) -> (grad_input, grad_weight): PyTorch 2.x's gradient of
// _prelu_kernel, whose weight broadcasts against self by numpy rules (prelu reshapes it to [C, 1, ...] first).
// Both gradients have the broadcast shape; autograd sums grad_weight down to weight's shape afterwards, in an
// aten::sum call of its own.
Expected<LoweredOp> PreluKernelBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g0, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * w0, ctx.RequiredTensor("weight", 2));
  PrimitiveType t = x0->shape.element_type();
  std::vector<int64_t> dims = BroadcastShapes(BroadcastShapes(Dims(x0), Dims(w0)), Dims(g0));
  Instruction* x = Bcast(b, x0, dims);
  Instruction* g = Bcast(b, b.Convert(g0, t), dims);
  Instruction* w = Bcast(b, b.Convert(w0, t), dims);
  Instruction* pos = CmpScalar(b, x, 0, ComparisonDirection::kGt);
  Instruction* gi = b.Select(pos, g, Mul(b, w, g));
  Instruction* gw = b.Select(pos, FullLike(b, x, 0), Mul(b, x, g));
  return ctx.Finish({gi, b.Convert(gw, w0->shape.element_type())});
}

// hardshrink_backward(grad_out, self, lambd) / softshrink_backward(grad_output, ...): the gradient passes where
// |x| > lambd.
Expected<LoweredOp> ShrinkBackward(const LoweringContext& ctx, const char* grad_name) {
  Builder& b = ctx.builder;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g0, ctx.RequiredTensor(grad_name, 0));
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

Expected<LoweredOp> HardshrinkBackward(const Node& n, Builder& b) {
  return ShrinkBackward(LoweringContext(n, b), "grad_out");
}

Expected<LoweredOp> SoftshrinkBackward(const Node& n, Builder& b) {
  return ShrinkBackward(LoweringContext(n, b), "grad_output");
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

}  // namespace

const LoweringFamily& ActivationLowerings() {
  static const auto* family =
      new LoweringFamily{FamilyOf(__FILE__),
                         {
                             {"aten::relu", UnaryInResultType(Relu), kInPlaceForm},
                             {"aten::relu6", UnaryInResultType(Relu6)},
                             {"aten::silu", UnaryInResultType(Silu), kInPlaceForm},
                             {"aten::mish", UnaryInResultType(Mish), kInPlaceForm},
                             {"aten::hardsigmoid", UnaryInResultType(Hardsigmoid), kInPlaceForm},
                             {"aten::hardswish", UnaryInResultType(Hardswish), kInPlaceForm},
                             {"aten::logsigmoid", UnaryInResultType(Logsigmoid)},
                             {"aten::leaky_relu", LeakyRelu, kInPlaceForm},
                             {"aten::hardtanh", Hardtanh, kInPlaceForm},
                             {"aten::elu", Elu, kInPlaceForm},
                             {"aten::selu", Selu, kInPlaceForm},
                             {"aten::celu", Celu},
                             {"aten::softplus", Softplus},
                             {"aten::gelu", Gelu, kInPlaceForm},
                             {"aten::log_sigmoid_forward", LogSigmoidForward},
                             {"aten::threshold", Threshold, kInPlaceForm},
                             {"aten::glu", Glu},
                             {"aten::prelu", Prelu},
                             {"aten::_prelu_kernel", Prelu},
                             {"aten::_prelu_kernel_backward", PreluKernelBackward},
                             {"aten::hardshrink", Hardshrink},
                             {"aten::softshrink", Softshrink},
                             {"aten::tanh_backward", TanhBackward},
                             {"aten::sigmoid_backward", SigmoidBackward},
                             {"aten::silu_backward", SiluBackward},
                             {"aten::gelu_backward", GeluBackward},
                             {"aten::hardsigmoid_backward", HardsigmoidBackward},
                             {"aten::hardswish_backward", HardswishBackward},
                             {"aten::hardtanh_backward", HardtanhBackward},
                             {"aten::leaky_relu_backward", LeakyReluBackward},
                             {"aten::elu_backward", EluBackward},
                             {"aten::softplus_backward", SoftplusBackward},
                             {"aten::mish_backward", MishBackward},
                             {"aten::logit_backward", LogitBackward},
                             {"aten::log_sigmoid_backward", LogSigmoidBackward},
                             {"aten::threshold_backward", ThresholdBackward},
                             {"aten::glu_backward", GluBackward},
                             {"aten::prelu_backward", PreluBackward},
                             {"aten::hardshrink_backward", HardshrinkBackward},
                             {"aten::softshrink_backward", SoftshrinkBackward},
                             {"aten::rrelu_with_noise_backward", RreluWithNoiseBackward},
                         }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
