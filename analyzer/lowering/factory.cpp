// Tensor factories: zeros/ones/empty/full and their _like/new_/in-place forms become a scalar
// constant broadcast to the output shape (torch_xla materializes `empty` as zeros); arange/linspace
// use iota; tril/triu_indices are constants; the signal windows are computed from an iota.
#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

// What a factory fills its output with: zeros (zeros, empty, zero_, ... as torch_xla materializes empty), ones,
// full's `fill_value`, or fill's `value` (a number or a 0-d tensor).
enum class Fill { kZeros, kOnes, kFillValue, kValue };

Expected<LoweredOp> Filled(const Node& n, Builder& b, Fill fill_with) {
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
  const Value* fill = nullptr;
  double v = 0;
  if (fill_with == Fill::kOnes) {
    v = 1;
  } else if (fill_with == Fill::kFillValue) {
    fill = ctx.Arg("fill_value", 1);
  } else if (fill_with == Fill::kValue) {
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

template <Fill kFill>
Expected<LoweredOp> FilledWith(const Node& n, Builder& b) {
  return Filled(n, b, kFill);
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

// linspace(start, end, steps), and with `log` logspace: base ** linspace.
Expected<LoweredOp> LinOrLogSpace(const Node& n, Builder& b, bool log) {
  LoweringContext ctx(n, b);
  double start = ctx.Double("start", 0, 0), end = ctx.Double("end", 1, 0);
  int64_t steps = ctx.Int("steps", 2, 0);
  PrimitiveType t = ctx.OutputType(0, PrimitiveType::F32);
  PrimitiveType ct = t == PrimitiveType::F64 ? PrimitiveType::F64 : PrimitiveType::F32;
  if (steps <= 1) return ctx.Finish({b.Convert(Full(b, ct, start, {steps}), t)});
  double step = (end - start) / static_cast<double>(steps - 1);
  Instruction* io = b.Iota(Shape::Array(ct, {steps}), 0);
  Instruction* r = AddScalar(b, MulScalar(b, io, step), start);
  if (log) {
    double base = ctx.Double("base", 3, 10);
    r = b.Binary(Opcode::kPower, FullLike(b, r, base), r);
  }
  if (hlo::IsInteger(t)) r = b.Unary(Opcode::kFloor, r);
  return ctx.Finish({b.Convert(r, t)});
}

Expected<LoweredOp> Linspace(const Node& n, Builder& b) { return LinOrLogSpace(n, b, false); }
Expected<LoweredOp> Logspace(const Node& n, Builder& b) { return LinOrLogSpace(n, b, true); }

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
enum class WindowKind { kHann, kHamming, kBlackman, kBartlett, kKaiser };

Expected<LoweredOp> Window(const Node& n, Builder& b, WindowKind kind) {
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
  Instruction* w = nullptr;
  auto CosK = [&](double k) { return b.Unary(Opcode::kCos, MulScalar(b, i, k * 2.0 * std::numbers::pi / m)); };
  if (kind == WindowKind::kHann) {
    w = AddScalar(b, MulScalar(b, CosK(1), -0.5), 0.5);
  } else if (kind == WindowKind::kHamming) {
    double alpha = ctx.Double("alpha", 2, 0.54), beta = ctx.Double("beta", 3, 0.46);
    w = AddScalar(b, MulScalar(b, CosK(1), -beta), alpha);
  } else if (kind == WindowKind::kBlackman) {
    w = Add(b, AddScalar(b, MulScalar(b, CosK(1), -0.5), 0.42), MulScalar(b, CosK(2), 0.08));
  } else if (kind == WindowKind::kBartlett) {  // 1 - |2i/m - 1|
    w = Sub(b, FullLike(b, i, 1), b.Unary(Opcode::kAbs, AddScalar(b, MulScalar(b, i, 2.0 / m), -1)));
  } else {  // kaiser: I0(beta sqrt(1 - (2i/m - 1)^2)) / I0(beta)
    double beta = ctx.Double("beta", 2, 12.0);
    Instruction* r = AddScalar(b, MulScalar(b, i, 2.0 / m), -1);
    Instruction* arg = MulScalar(
        b, b.Unary(Opcode::kSqrt, b.Clamp(Scalar(b, ct, 0), Sub(b, FullLike(b, r, 1), Mul(b, r, r)), Scalar(b, ct, 1))),
        beta);
    w = Div(b, BesselI0(b, arg), BesselI0(b, FullLike(b, arg, beta)));
  }
  return ctx.Finish({b.Convert(w, t)});
}

template <WindowKind kKind>
Expected<LoweredOp> WindowOf(const Node& n, Builder& b) {
  return Window(n, b, kKind);
}

// tril_indices / triu_indices (`lower`): a constant [2, count] of the row and column indices.
Expected<LoweredOp> TriIndices(const Node& n, Builder& b, bool lower) {
  LoweringContext ctx(n, b);
  int64_t rows = ctx.Int("row", 0, 0), cols = ctx.Int("col", 1, 0), off = ctx.Int("offset", 2, 0);
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

Expected<LoweredOp> TrilIndices(const Node& n, Builder& b) { return TriIndices(n, b, true); }
Expected<LoweredOp> TriuIndices(const Node& n, Builder& b) { return TriIndices(n, b, false); }

}  // namespace

const LoweringFamily& FactoryLowerings() {
  static const auto* family = new LoweringFamily{FamilyOf(__FILE__),
                                                 {
                                                     {"aten::zeros", FilledWith<Fill::kZeros>},
                                                     {"aten::zeros_like", FilledWith<Fill::kZeros>},
                                                     {"aten::new_zeros", FilledWith<Fill::kZeros>},
                                                     {"aten::zero", FilledWith<Fill::kZeros>, kInPlaceForm},
                                                     {"aten::empty", FilledWith<Fill::kZeros>},
                                                     {"aten::empty_like", FilledWith<Fill::kZeros>},
                                                     {"aten::empty_strided", FilledWith<Fill::kZeros>},
                                                     {"aten::empty_permuted", FilledWith<Fill::kZeros>},
                                                     {"aten::new_empty", FilledWith<Fill::kZeros>},
                                                     {"aten::new_empty_strided", FilledWith<Fill::kZeros>},
                                                     {"aten::ones", FilledWith<Fill::kOnes>},
                                                     {"aten::ones_like", FilledWith<Fill::kOnes>},
                                                     {"aten::new_ones", FilledWith<Fill::kOnes>},
                                                     {"aten::full", FilledWith<Fill::kFillValue>},
                                                     {"aten::full_like", FilledWith<Fill::kFillValue>},
                                                     {"aten::new_full", FilledWith<Fill::kFillValue>},
                                                     {"aten::fill", FilledWith<Fill::kValue>, kInPlaceForm},
                                                     {"aten::scalar_tensor", ScalarTensor},
                                                     {"aten::arange", Arange},
                                                     {"aten::linspace", Linspace},
                                                     {"aten::logspace", Logspace},
                                                     {"aten::eye", Eye},
                                                     {"aten::tril_indices", TrilIndices},
                                                     {"aten::triu_indices", TriuIndices},
                                                     {"aten::_local_scalar_dense", LocalScalarDense},
                                                     {"aten::hann_window", WindowOf<WindowKind::kHann>},
                                                     {"aten::hamming_window", WindowOf<WindowKind::kHamming>},
                                                     {"aten::blackman_window", WindowOf<WindowKind::kBlackman>},
                                                     {"aten::bartlett_window", WindowOf<WindowKind::kBartlett>},
                                                     {"aten::kaiser_window", WindowOf<WindowKind::kKaiser>},
                                                 }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
