// Tensor factories: zeros/ones/empty/full and their _like/new_/in-place forms become a scalar
// constant broadcast to the output shape (torch_xla materializes `empty` as zeros); arange/linspace
// use iota.
#include <fmt/format.h>

#include <cmath>

#include <numbers>

#include "analyzer/lowering/ops.h"

namespace opprobe::analyzer::lowering {

Expected<LoweredOp> FullOutput(const Node& n, Builder& b) {
  Ctx c(n, b);
  const TensorMeta* out = c.Out(0);
  std::vector<int64_t> dims;
  PrimitiveType t = PrimitiveType::F32;
  if (out) {
    dims = out->sizes;
    t = out->dtype;
  } else if (const TensorMeta* self = c.Meta("self", 0)) {
    dims = self->sizes;
    t = c.Dtype("dtype", 1).value_or(self->dtype);
  } else {
    dims = c.Ints("size", 0);
    t = c.Dtype("dtype", 1).value_or(PrimitiveType::F32);
  }
  const std::string& op = n.op;
  const Value* fill = nullptr;
  double v = 0;
  if (op == "aten::ones" || op == "aten::ones_like" || op == "aten::new_ones") {
    v = 1;
  } else if (op == "aten::full" || op == "aten::full_like" || op == "aten::new_full") {
    fill = c.V("fill_value", op == "aten::full" ? 1 : 1);
  } else if (op == "aten::fill" || op == "aten::fill_") {
    fill = c.V("value", 1);
    if (fill && fill->is_tensor()) {  // fill_.Tensor: a 0-d tensor value
      Instruction* p = c.T("value", 1);
      return Done(c, {b.Broadcast(b.Reshape(b.Convert(p, t), {}), dims, {})});
    }
  }
  if (fill && (fill->kind == Value::Kind::kComplex || fill->kind == Value::Kind::kInt)) {
    Instruction* s = ScalarOf(b, t, *fill);
    return Done(c, {dims.empty() ? s : b.Broadcast(s, dims, {})});
  }
  if (fill) v = fill->AsDouble();
  return Done(c, {Full(b, t, v, dims)});
}

Expected<LoweredOp> ScalarTensor(const Node& n, Builder& b) {
  Ctx c(n, b);
  PrimitiveType t = c.OutType(0, c.Dtype("dtype", 1).value_or(PrimitiveType::F32));
  const Value* s = c.V("s", 0);
  if (!s) return Bad(c, "needs a scalar");
  return Done(c, {ScalarOf(b, t, *s)});
}

Expected<LoweredOp> Arange(const Node& n, Builder& b) {
  Ctx c(n, b);
  const TensorMeta* out = c.Out(0);
  double start = 0, step = 1;
  if (c.V("end", 1) && c.V("start", 0)) {  // arange.start / start_step
    start = c.Double("start", 0, 0);
    step = c.Double("step", 2, 1);
  }
  if (n.overload == "default" || n.overload.empty()) {
    // arange(end): end is the first argument
    start = 0;
    step = 1;
  }
  int64_t len;
  PrimitiveType t;
  if (out) {
    if (out->rank() != 1) return Bad(c, "output is not 1-d");
    len = out->sizes[0];
    t = out->dtype;
  } else {
    double end = c.Double("end", n.overload == "default" ? 0 : 1, 0);
    len = static_cast<int64_t>(std::ceil((end - start) / step));
    t = c.Dtype("dtype", 3).value_or(PrimitiveType::F32);
  }
  // start + iota * step, computed in the output type (f64 for integer outputs, then converted).
  PrimitiveType ct = hlo::IsFloatingPoint(t) ? (t == PrimitiveType::F64 ? PrimitiveType::F64 : PrimitiveType::F32)
                                              : PrimitiveType::F64;
  if (hlo::IsInteger(t)) ct = t;
  Instruction* io = b.Iota(Shape::Array(ct, {len}), 0);
  Instruction* r = io;
  if (step != 1) r = MulScalar(b, r, step);
  if (start != 0) r = AddScalar(b, r, start);
  return Done(c, {b.Convert(r, t)});
}

Expected<LoweredOp> Linspace(const Node& n, Builder& b) {
  Ctx c(n, b);
  double start = c.Double("start", 0, 0), end = c.Double("end", 1, 0);
  int64_t steps = c.Int("steps", 2, 0);
  PrimitiveType t = c.OutType(0, PrimitiveType::F32);
  PrimitiveType ct = t == PrimitiveType::F64 ? PrimitiveType::F64 : PrimitiveType::F32;
  if (steps <= 1) return Done(c, {b.Convert(Full(b, ct, start, {steps}), t)});
  double step = (end - start) / static_cast<double>(steps - 1);
  Instruction* io = b.Iota(Shape::Array(ct, {steps}), 0);
  Instruction* r = AddScalar(b, MulScalar(b, io, step), start);
  if (n.op == "aten::logspace") {
    double base = c.Double("base", 3, 10);
    r = b.Binary(Opcode::kPower, FullLike(b, r, base), r);
  }
  if (hlo::IsInteger(t)) r = b.Unary(Opcode::kFloor, r);
  return Done(c, {b.Convert(r, t)});
}

Expected<LoweredOp> Eye(const Node& n, Builder& b) {
  Ctx c(n, b);
  const TensorMeta* out = c.Out(0);
  if (!out || out->rank() != 2) return Bad(c, "needs a 2-d output");
  Shape is = Shape::Array(PrimitiveType::S64, out->sizes);
  Instruction* eq = b.Compare(b.Iota(is, 0), b.Iota(is, 1), ComparisonDirection::kEq);
  return Done(c, {b.Convert(eq, out->dtype)});
}

Expected<LoweredOp> LocalScalarDense(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, c.Req("self", 0));
  // .item(): the value leaves the device; in HLO it is the scalar itself.
  return Done(c, {b.Reshape(x, {})});
}

// hann/hamming/blackman/bartlett/kaiser_window(window_length, [periodic], [alpha, beta | beta]): computed from an
// iota in f32 (f64 for a f64 window) and converted to the output type. A periodic window of length N is the
// symmetric one of length N + 1 without its last element; a window of length 1 is [1].
Expected<LoweredOp> Window(const Node& n, Builder& b) {
  Ctx c(n, b);
  const TensorMeta* out = c.Out(0);
  int64_t len = out && out->rank() == 1 ? out->sizes[0] : c.Int("window_length", 0, 0);
  PrimitiveType t = out ? out->dtype : c.Dtype("dtype", 2).value_or(PrimitiveType::F32);
  bool periodic = true;
  if (const Value* v = c.V("periodic", 1); v && v->kind == Value::Kind::kBool) periodic = v->b;
  PrimitiveType ct = t == PrimitiveType::F64 ? PrimitiveType::F64 : PrimitiveType::F32;
  if (len <= 1) return Done(c, {Full(b, t, 1, {len})});
  double m = static_cast<double>(periodic ? len : len - 1);  // N - 1 of the symmetric window
  Instruction* i = b.Iota(Shape::Array(ct, {len}), 0);
  std::string name = n.op.substr(n.op.find("::") + 2);
  Instruction* w = nullptr;
  auto CosK = [&](double k) { return b.Unary(Opcode::kCos, MulScalar(b, i, k * 2.0 * std::numbers::pi / m)); };
  if (name == "hann_window") {
    w = AddScalar(b, MulScalar(b, CosK(1), -0.5), 0.5);
  } else if (name == "hamming_window") {
    double alpha = c.Double("alpha", 2, 0.54), beta = c.Double("beta", 3, 0.46);
    w = AddScalar(b, MulScalar(b, CosK(1), -beta), alpha);
  } else if (name == "blackman_window") {
    w = Add(b, AddScalar(b, MulScalar(b, CosK(1), -0.5), 0.42), MulScalar(b, CosK(2), 0.08));
  } else if (name == "bartlett_window") {  // 1 - |2i/m - 1|
    w = Sub(b, FullLike(b, i, 1), b.Unary(Opcode::kAbs, AddScalar(b, MulScalar(b, i, 2.0 / m), -1)));
  } else if (name == "kaiser_window") {  // I0(beta sqrt(1 - (2i/m - 1)^2)) / I0(beta)
    double beta = c.Double("beta", 2, 12.0);
    Instruction* r = AddScalar(b, MulScalar(b, i, 2.0 / m), -1);
    Instruction* arg = MulScalar(b, b.Unary(Opcode::kSqrt, b.Clamp(Scalar(b, ct, 0), Sub(b, FullLike(b, r, 1), Mul(b, r, r)),
                                                                   Scalar(b, ct, 1))), beta);
    w = Div(b, BesselI0(b, arg), BesselI0(b, FullLike(b, arg, beta)));
  } else {
    return Bad(c, "unknown window");
  }
  return Done(c, {b.Convert(w, t)});
}

}  // namespace opprobe::analyzer::lowering
