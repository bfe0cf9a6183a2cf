// Tensor factories: zeros/ones/empty/full and their _like/new_/in-place forms become a scalar
// constant broadcast to the output shape (torch_xla materializes `empty` as zeros); arange/linspace
// use iota.
#include <fmt/format.h>

#include <cmath>

#include <numbers>

#include "analyzer/lowering/ops.h"

namespace opprobe::analyzer::lowering {

Expected<LoweredOp> FullOutput(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  const TensorMeta* out = ctx.OutputMeta(0);
  std::vector<int64_t> dims;
  PrimitiveType t = PrimitiveType::F32;
  if (out) {
    dims = out->sizes;
    t = out->dtype;
  } else if (const TensorMeta* self = ctx.ArgMeta("self", 0)) {
    dims = self->sizes;
    t = ctx.Dtype("dtype", 1).value_or(self->dtype);
  } else {
    dims = ctx.Ints("size", 0);
    t = ctx.Dtype("dtype", 1).value_or(PrimitiveType::F32);
  }
  const std::string& op = n.op;
  const Value* fill = nullptr;
  double v = 0;
  if (op == "aten::ones" || op == "aten::ones_like" || op == "aten::new_ones") {
    v = 1;
  } else if (op == "aten::full" || op == "aten::full_like" || op == "aten::new_full") {
    fill = ctx.Arg("fill_value", op == "aten::full" ? 1 : 1);
  } else if (op == "aten::fill" || op == "aten::fill_") {
    fill = ctx.Arg("value", 1);
    if (fill && fill->is_tensor()) {  // fill_.Tensor: a 0-d tensor value
      Instruction* p = ctx.Tensor("value", 1);
      return ctx.Finish({b.Broadcast(b.Reshape(b.Convert(p, t), {}), dims, {})});
    }
  }
  if (fill && (fill->kind == Value::Kind::kComplex || fill->kind == Value::Kind::kInt)) {
    Instruction* s = ScalarOf(b, t, *fill);
    return ctx.Finish({dims.empty() ? s : b.Broadcast(s, dims, {})});
  }
  if (fill) v = fill->AsDouble();
  return ctx.Finish({Full(b, t, v, dims)});
}

Expected<LoweredOp> ScalarTensor(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  PrimitiveType t = ctx.OutputType(0, ctx.Dtype("dtype", 1).value_or(PrimitiveType::F32));
  const Value* s = ctx.Arg("s", 0);
  if (!s) return ctx.Unsupported("needs a scalar");
  return ctx.Finish({ScalarOf(b, t, *s)});
}

Expected<LoweredOp> Arange(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  const TensorMeta* out = ctx.OutputMeta(0);
  double start = 0, step = 1;
  if (ctx.Arg("end", 1) && ctx.Arg("start", 0)) {  // arange.start / start_step
    start = ctx.Double("start", 0, 0);
    step = ctx.Double("step", 2, 1);
  }
  if (n.overload == "default" || n.overload.empty()) {
    // arange(end): end is the first argument
    start = 0;
    step = 1;
  }
  int64_t len;
  PrimitiveType t;
  if (out) {
    if (out->rank() != 1) return ctx.Unsupported("output is not 1-d");
    len = out->sizes[0];
    t = out->dtype;
  } else {
    double end = ctx.Double("end", n.overload == "default" ? 0 : 1, 0);
    len = static_cast<int64_t>(std::ceil((end - start) / step));
    t = ctx.Dtype("dtype", 3).value_or(PrimitiveType::F32);
  }
  // start + iota * step, computed in the output type (f64 for integer outputs, then converted).
  PrimitiveType ct = hlo::IsFloatingPoint(t) ? (t == PrimitiveType::F64 ? PrimitiveType::F64 : PrimitiveType::F32)
                                              : PrimitiveType::F64;
  if (hlo::IsInteger(t)) ct = t;
  Instruction* io = b.Iota(Shape::Array(ct, {len}), 0);
  Instruction* r = io;
  if (step != 1) r = MulScalar(b, r, step);
  if (start != 0) r = AddScalar(b, r, start);
  return ctx.Finish({b.Convert(r, t)});
}

Expected<LoweredOp> Linspace(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  double start = ctx.Double("start", 0, 0), end = ctx.Double("end", 1, 0);
  int64_t steps = ctx.Int("steps", 2, 0);
  PrimitiveType t = ctx.OutputType(0, PrimitiveType::F32);
  PrimitiveType ct = t == PrimitiveType::F64 ? PrimitiveType::F64 : PrimitiveType::F32;
  if (steps <= 1) return ctx.Finish({b.Convert(Full(b, ct, start, {steps}), t)});
  double step = (end - start) / static_cast<double>(steps - 1);
  Instruction* io = b.Iota(Shape::Array(ct, {steps}), 0);
  Instruction* r = AddScalar(b, MulScalar(b, io, step), start);
  if (n.op == "aten::logspace") {
    double base = ctx.Double("base", 3, 10);
    r = b.Binary(Opcode::kPower, FullLike(b, r, base), r);
  }
  if (hlo::IsInteger(t)) r = b.Unary(Opcode::kFloor, r);
  return ctx.Finish({b.Convert(r, t)});
}

Expected<LoweredOp> Eye(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  const TensorMeta* out = ctx.OutputMeta(0);
  if (!out || out->rank() != 2) return ctx.Unsupported("needs a 2-d output");
  Shape is = Shape::Array(PrimitiveType::S64, out->sizes);
  Instruction* eq = b.Compare(b.Iota(is, 0), b.Iota(is, 1), ComparisonDirection::kEq);
  return ctx.Finish({b.Convert(eq, out->dtype)});
}

Expected<LoweredOp> LocalScalarDense(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  // .item(): the value leaves the device; in HLO it is the scalar itself.
  return ctx.Finish({b.Reshape(x, {})});
}

// hann/hamming/blackman/bartlett/kaiser_window(window_length, [periodic], [alpha, beta | beta]): computed from an
// iota in f32 (f64 for a f64 window) and converted to the output type. A periodic window of length N is the
// symmetric one of length N + 1 without its last element; a window of length 1 is [1].
Expected<LoweredOp> Window(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  const TensorMeta* out = ctx.OutputMeta(0);
  int64_t len = out && out->rank() == 1 ? out->sizes[0] : ctx.Int("window_length", 0, 0);
  PrimitiveType t = out ? out->dtype : ctx.Dtype("dtype", 2).value_or(PrimitiveType::F32);
  bool periodic = true;
  if (const Value* v = ctx.Arg("periodic", 1); v && v->kind == Value::Kind::kBool) periodic = v->b;
  PrimitiveType ct = t == PrimitiveType::F64 ? PrimitiveType::F64 : PrimitiveType::F32;
  if (len <= 1) return ctx.Finish({Full(b, t, 1, {len})});
  double m = static_cast<double>(periodic ? len : len - 1);  // N - 1 of the symmetric window
  Instruction* i = b.Iota(Shape::Array(ct, {len}), 0);
  std::string name = n.op.substr(n.op.find("::") + 2);
  Instruction* w = nullptr;
  auto CosK = [&](double k) { return b.Unary(Opcode::kCos, MulScalar(b, i, k * 2.0 * std::numbers::pi / m)); };
  if (name == "hann_window") {
    w = AddScalar(b, MulScalar(b, CosK(1), -0.5), 0.5);
  } else if (name == "hamming_window") {
    double alpha = ctx.Double("alpha", 2, 0.54), beta = ctx.Double("beta", 3, 0.46);
    w = AddScalar(b, MulScalar(b, CosK(1), -beta), alpha);
  } else if (name == "blackman_window") {
    w = Add(b, AddScalar(b, MulScalar(b, CosK(1), -0.5), 0.42), MulScalar(b, CosK(2), 0.08));
  } else if (name == "bartlett_window") {  // 1 - |2i/m - 1|
    w = Sub(b, FullLike(b, i, 1), b.Unary(Opcode::kAbs, AddScalar(b, MulScalar(b, i, 2.0 / m), -1)));
  } else if (name == "kaiser_window") {  // I0(beta sqrt(1 - (2i/m - 1)^2)) / I0(beta)
    double beta = ctx.Double("beta", 2, 12.0);
    Instruction* r = AddScalar(b, MulScalar(b, i, 2.0 / m), -1);
    Instruction* arg = MulScalar(b, b.Unary(Opcode::kSqrt, b.Clamp(Scalar(b, ct, 0), Sub(b, FullLike(b, r, 1), Mul(b, r, r)),
                                                                   Scalar(b, ct, 1))), beta);
    w = Div(b, BesselI0(b, arg), BesselI0(b, FullLike(b, arg, beta)));
  } else {
    return ctx.Unsupported("unknown window");
  }
  return ctx.Finish({b.Convert(w, t)});
}

}  // namespace opprobe::analyzer::lowering
