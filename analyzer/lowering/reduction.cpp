// Reductions (`reduce` with a scalar to_apply computation), arg-reductions (variadic reduce over
// (value, iota)), cumulative ops (`reduce-window` over the whole dim with low padding n-1, as
// torch_xla BuildCumulativeComputation and JAX cumsum do), softmax family, sort/topk (sort of
// (x, iota) then slice).
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "analyzer/lowering/ops.h"

namespace opprobe::analyzer::lowering {
namespace {

// The reduced dims from a `dim` argument (int, int list, None or empty = all).
Expected<std::vector<int64_t>> ReducedDims(const Ctx& c, int64_t rank, size_t pos) {
  auto d = c.OptInts("dim", pos);
  if (!d) return NormDims({}, rank, true);
  auto r = NormDims(*d, rank, true);
  if (!r.ok()) return Bad(c, r.status().message());
  return r;
}

Instruction* KeepDimsReshape(Builder& b, Instruction* r, const std::vector<int64_t>& in_dims,
                             const std::vector<int64_t>& red, bool keepdim) {
  if (!keepdim || in_dims.empty()) return r;
  return b.Reshape(r, KeepDims(in_dims, red));
}

double Count(const std::vector<int64_t>& dims, const std::vector<int64_t>& red) {
  double n = 1;
  for (int64_t d : red) n *= static_cast<double>(dims[static_cast<size_t>(d)]);
  return n;
}

Instruction* Norm(Builder& b, Instruction* x, double p, const std::vector<int64_t>& red) {
  PrimitiveType t = x->shape.element_type();
  Instruction* a = b.Unary(Opcode::kAbs, x);
  if (hlo::IsComplex(t)) t = hlo::ComplexComponentType(t);
  if (std::isinf(p)) return p > 0 ? ReduceMax(b, a, red) : ReduceMin(b, a, red);
  if (p == 0) return ReduceSum(b, b.Convert(CmpScalar(b, a, 0, ComparisonDirection::kNe), t), red);
  if (p == 1) return ReduceSum(b, a, red);
  if (p == 2) return b.Unary(Opcode::kSqrt, ReduceSum(b, Mul(b, a, a), red));
  Instruction* s = ReduceSum(b, b.Binary(Opcode::kPower, a, FullLike(b, a, p)), red);
  return b.Binary(Opcode::kPower, s, FullLike(b, s, 1.0 / p));
}

Expected<LoweredOp> LowerReduce(const std::string& op, const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, c.Req("self", 0));
  std::vector<int64_t> dims = Dims(x0);
  int64_t rank = x0->shape.rank();
  size_t dim_pos = (op == "linalg_vector_norm" || op == "norm") ? 2 : 1;
  OPPROBE_ASSIGN_OR_RETURN(std::vector<int64_t> red, ReducedDims(c, rank, dim_pos));
  bool keepdim = c.Bool("keepdim", dim_pos + 1, false);
  PrimitiveType in = x0->shape.element_type();
  PrimitiveType out = c.OutType(0, in);
  Instruction* r = nullptr;
  if (op == "sum" || op == "nansum") {
    PrimitiveType t = out == PrimitiveType::PRED ? PrimitiveType::S64 : out;
    Instruction* x = b.Convert(x0, t);
    if (op == "nansum" && IsFloatish(t)) x = b.Select(b.Compare(x, x, ComparisonDirection::kNe), FullLike(b, x, 0), x);
    r = ReduceSum(b, x, red);
  } else if (op == "mean" || op == "nanmean") {
    PrimitiveType t = out;
    Instruction* x = b.Convert(x0, t);
    if (op == "nanmean") {
      Instruction* ok = b.Compare(x, x, ComparisonDirection::kEq);
      Instruction* s = ReduceSum(b, b.Select(ok, x, FullLike(b, x, 0)), red);
      Instruction* cnt = ReduceSum(b, b.Convert(ok, t), red);
      r = Div(b, s, cnt);
    } else {
      r = MulScalar(b, ReduceSum(b, x, red), 1.0 / Count(dims, red));
    }
  } else if (op == "prod") {
    PrimitiveType t = out == PrimitiveType::PRED ? PrimitiveType::S64 : out;
    Instruction* x = b.Convert(x0, t);
    r = Reduce(b, x, red, Opcode::kMultiply, Scalar(b, t, 1));
  } else if (op == "amax" || op == "max") {
    r = ReduceMax(b, x0, red);
    if (IsFloatish(in)) {  // NaN propagates: any NaN in the slice gives NaN
      Instruction* nan = ReduceMax(b, b.Compare(x0, x0, ComparisonDirection::kNe), red);
      r = b.Select(nan, FullLike(b, r, std::numeric_limits<double>::quiet_NaN()), r);
    }
  } else if (op == "amin" || op == "min") {
    r = ReduceMin(b, x0, red);
    if (IsFloatish(in)) {
      Instruction* nan = ReduceMax(b, b.Compare(x0, x0, ComparisonDirection::kNe), red);
      r = b.Select(nan, FullLike(b, r, std::numeric_limits<double>::quiet_NaN()), r);
    }
  } else if (op == "any" || op == "all") {
    Instruction* p = in == PrimitiveType::PRED ? x0 : CmpScalar(b, x0, 0, ComparisonDirection::kNe);
    r = op == "any" ? Reduce(b, p, red, Opcode::kOr, Scalar(b, PrimitiveType::PRED, 0))
                    : Reduce(b, p, red, Opcode::kAnd, Scalar(b, PrimitiveType::PRED, 1));
  } else if (op == "logsumexp") {
    PrimitiveType t = FloatType(out);
    Instruction* x = b.Convert(x0, t);
    Instruction* m = ReduceMax(b, x, red);
    // A max of +-inf must not produce inf - inf: use 0 as the shift there.
    Instruction* finite = b.Unary(Opcode::kIsFinite, m);
    Instruction* shift = b.Select(finite, m, FullLike(b, m, 0));
    Instruction* e = b.Unary(Opcode::kExp, Sub(b, x, BcastBack(b, shift, dims, red)));
    r = Add(b, b.Unary(Opcode::kLog, ReduceSum(b, e, red)), shift);
  } else if (op == "linalg_vector_norm" || op == "norm") {
    const Value* pv = c.V(op == "norm" ? "p" : "ord", 1);
    double p = pv && !pv->is_none() ? pv->AsDouble() : 2.0;
    PrimitiveType t = c.Dtype("dtype", 4).value_or(in);
    Instruction* x = b.Convert(x0, t);
    r = Norm(b, x, p, red);
  } else if (op == "count_nonzero") {
    r = ReduceSum(b, b.Convert(CmpScalar(b, x0, 0, ComparisonDirection::kNe), PrimitiveType::S64), red);
  } else {
    return Bad(c, "no reduction body for " + op);
  }
  r = KeepDimsReshape(b, r, dims, red, keepdim);
  return Done(c, {b.Convert(r, out)});
}

}  // namespace

Fn ReduceOp(const std::string& op) {
  return [op](const Node& n, Builder& b) { return LowerReduce(op, n, b); };
}

Expected<LoweredOp> CountNonzero(const Node& n, Builder& b) { return LowerReduce("count_nonzero", n, b); }

Expected<LoweredOp> VarStd(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, c.Req("self", 0));
  std::vector<int64_t> dims = Dims(x0);
  auto dv = c.OptInts("dim", 1);
  std::vector<int64_t> red;
  {
    auto r = NormDims(dv ? *dv : std::vector<int64_t>{}, x0->shape.rank(), true);
    if (!r.ok()) return Bad(c, r.status().message());
    red = *r;
  }
  double correction = 1;
  if (const Value* cv = c.V("correction", 2); cv && !cv->is_none()) correction = cv->AsDouble();
  else if (const Value* uv = c.V("unbiased", 1); uv && uv->kind == Value::Kind::kBool) correction = uv->b ? 1 : 0;
  else if (const Value* uv2 = c.V("unbiased", 2); uv2 && uv2->kind == Value::Kind::kBool) correction = uv2->b ? 1 : 0;
  bool keepdim = c.Bool("keepdim", 3, false);
  PrimitiveType in = x0->shape.element_type();
  PrimitiveType t = FloatType(in);
  Instruction* x = b.Convert(x0, t);
  double count = Count(dims, red);
  Instruction* mean = MulScalar(b, ReduceSum(b, x, red), 1.0 / count);
  Instruction* centered = Sub(b, x, BcastBack(b, mean, dims, red));
  Instruction* sq = hlo::IsComplex(t) ? b.Convert(b.Unary(Opcode::kAbs, centered), hlo::ComplexComponentType(t)) : centered;
  sq = Mul(b, sq, sq);
  Instruction* var = MulScalar(b, ReduceSum(b, sq, red), 1.0 / std::max(count - correction, 0.0));
  bool is_std = n.op == "aten::std" || n.op == "aten::std_mean";
  Instruction* r = is_std ? b.Unary(Opcode::kSqrt, var) : var;
  std::vector<Instruction*> outs = {KeepDimsReshape(b, r, dims, red, keepdim)};
  if (n.op == "aten::var_mean" || n.op == "aten::std_mean") outs.push_back(KeepDimsReshape(b, mean, dims, red, keepdim));
  return Done(c, outs);
}

namespace {
// Variadic reduce over (x, iota) along dim; returns (values, indices).
std::pair<Instruction*, Instruction*> ArgReduce(Builder& b, Instruction* x, int64_t dim, bool is_max) {
  PrimitiveType t = x->shape.element_type();
  Instruction* io = b.Iota(Shape::Array(PrimitiveType::S64, Dims(x)), dim);
  Instruction* init = is_max ? MinValue(b, t) : MaxValue(b, t);
  Instruction* r = b.Reduce({x, io}, {init, ConstS64(b, 0)}, {dim}, ArgReducer(b, t, PrimitiveType::S64, is_max));
  return {b.GetTupleElement(r, 0), b.GetTupleElement(r, 1)};
}
}  // namespace

Expected<LoweredOp> ArgMinMax(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, c.Req("self", 0));
  bool is_max = n.op == "aten::argmax";
  auto d = c.OptInt("dim", 1);
  bool keepdim = c.Bool("keepdim", 2, false);
  std::vector<int64_t> dims = Dims(x);
  if (!d || x->shape.rank() == 0) {
    Instruction* flat = b.Reshape(x, {x->shape.elements()});
    auto [v, i] = ArgReduce(b, flat, 0, is_max);
    (void)v;
    if (keepdim) i = b.Reshape(i, std::vector<int64_t>(dims.size(), 1));
    return Done(c, {i});
  }
  auto w = WrapDim(*d, x->shape.rank());
  if (!w) return Bad(c, "dimension out of range");
  auto [v, i] = ArgReduce(b, x, *w, is_max);
  (void)v;
  return Done(c, {KeepDimsReshape(b, i, dims, {*w}, keepdim)});
}

Expected<LoweredOp> MinMaxDim(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, c.Req("self", 0));
  bool is_max = n.op == "aten::max" || n.op == "aten::max_";
  std::vector<int64_t> dims = Dims(x);
  if (x->shape.rank() == 0) return Done(c, {x, ConstS64(b, 0)});
  auto w = WrapDim(c.Int("dim", 1, 0), x->shape.rank());
  if (!w) return Bad(c, "dimension out of range");
  bool keepdim = c.Bool("keepdim", 2, false);
  auto [v, i] = ArgReduce(b, x, *w, is_max);
  return Done(c, {KeepDimsReshape(b, v, dims, {*w}, keepdim), KeepDimsReshape(b, i, dims, {*w}, keepdim)});
}

Expected<LoweredOp> Cumulative(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, c.Req("self", 0));
  std::vector<int64_t> dims = Dims(x0);
  if (dims.empty()) {
    if (n.op == "aten::cummax" || n.op == "aten::cummin") return Done(c, {x0, ConstS64(b, 0)});
    return Done(c, {b.Convert(x0, c.OutType(0, x0->shape.element_type()))});
  }
  auto w = WrapDim(c.Int("dim", 1, 0), x0->shape.rank());
  if (!w) return Bad(c, "dimension out of range");
  int64_t d = *w;
  hlo::Window win;
  for (size_t i = 0; i < dims.size(); ++i) {
    hlo::WindowDimension wd;
    if (static_cast<int64_t>(i) == d) {
      wd.size = dims[i];
      wd.padding_low = dims[i] - 1;
    }
    win.dimensions.push_back(wd);
  }
  PrimitiveType out = c.OutType(0, x0->shape.element_type());
  if (n.op == "aten::cumsum" || n.op == "aten::cumsum_") {
    PrimitiveType t = out;
    Instruction* x = b.Convert(x0, t);
    return Done(c, {b.ReduceWindow({x}, {Scalar(b, t, 0)}, win, b.ScalarBinaryComputation(Opcode::kAdd, t))});
  }
  if (n.op == "aten::cumprod" || n.op == "aten::cumprod_") {
    PrimitiveType t = out;
    Instruction* x = b.Convert(x0, t);
    return Done(c, {b.ReduceWindow({x}, {Scalar(b, t, 1)}, win, b.ScalarBinaryComputation(Opcode::kMultiply, t))});
  }
  if (n.op == "aten::logcumsumexp") {
    PrimitiveType t = FloatType(out);
    Instruction* x = b.Convert(x0, t);
    Instruction* m = ReduceMax(b, x, {d});
    Instruction* shift = b.Select(b.Unary(Opcode::kIsFinite, m), m, FullLike(b, m, 0));
    Instruction* sb = BcastBack(b, shift, dims, {d});
    Instruction* e = b.Unary(Opcode::kExp, Sub(b, x, sb));
    Instruction* cs = b.ReduceWindow({e}, {Scalar(b, t, 0)}, win, b.ScalarBinaryComputation(Opcode::kAdd, t));
    return Done(c, {Add(b, b.Unary(Opcode::kLog, cs), sb)});
  }
  if (n.op == "aten::cummax" || n.op == "aten::cummin") {
    bool is_max = n.op == "aten::cummax";
    PrimitiveType t = x0->shape.element_type();
    // Reducer preferring the later index on ties (torch's cummax/cummin use >= / <=).
    Builder sub = b.CreateSubBuilder(is_max ? "cummax" : "cummin");
    Instruction* v1 = sub.Parameter(0, Shape::Scalar(t));
    Instruction* i1 = sub.Parameter(1, Shape::Scalar(PrimitiveType::S64));
    Instruction* v2 = sub.Parameter(2, Shape::Scalar(t));
    Instruction* i2 = sub.Parameter(3, Shape::Scalar(PrimitiveType::S64));
    Instruction* better = sub.Compare(v1, v2, is_max ? ComparisonDirection::kGt : ComparisonDirection::kLt);
    Instruction* eq = sub.Compare(v1, v2, ComparisonDirection::kEq);
    Instruction* later = sub.Compare(i1, i2, ComparisonDirection::kGt);
    Instruction* pick = sub.Binary(Opcode::kOr, better, sub.Binary(Opcode::kAnd, eq, later));
    if (IsFloatish(t)) {
      Instruction* nan1 = sub.Compare(v1, v1, ComparisonDirection::kNe);
      Instruction* nan2 = sub.Compare(v2, v2, ComparisonDirection::kNe);
      Instruction* take1 = sub.Binary(Opcode::kAnd, nan1, sub.Binary(Opcode::kOr, sub.Unary(Opcode::kNot, nan2), later));
      pick = sub.Binary(Opcode::kOr, take1, sub.Binary(Opcode::kAnd, sub.Unary(Opcode::kNot, nan2), pick));
    }
    Computation* red = sub.Finish(sub.Tuple({sub.Select(pick, v1, v2), sub.Select(pick, i1, i2)}));
    Instruction* io = b.Iota(Shape::Array(PrimitiveType::S64, dims), d);
    Instruction* init = is_max ? MinValue(b, t) : MaxValue(b, t);
    Instruction* r = b.ReduceWindow({x0, io}, {init, ConstS64(b, -1)}, win, red);
    return Done(c, {b.GetTupleElement(r, 0), b.GetTupleElement(r, 1)});
  }
  return Bad(c, "unknown cumulative op");
}

namespace {
struct SoftmaxIn {
  Instruction* x;
  int64_t dim;
  PrimitiveType out;
};
Expected<SoftmaxIn> SoftmaxArgs(const Ctx& c) {
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, c.Req("self", 0));
  PrimitiveType out = c.OutType(0, x->shape.element_type());
  if (auto dt = c.Dtype("dtype", 2)) out = *dt;
  auto w = WrapDim(c.Int("dim", 1, -1), x->shape.rank());
  if (!w) return Bad(c, "dimension out of range");
  PrimitiveType t = out;
  return SoftmaxIn{c.b.Convert(x, t), *w, out};
}

// x - max(x) along dim (broadcast back), the max being 0 where it is not finite.
Instruction* Shifted(Builder& b, Instruction* x, int64_t dim) {
  std::vector<int64_t> dims = Dims(x);
  if (dims.empty()) return Sub(b, x, x);
  Instruction* m = ReduceMax(b, x, {dim});
  return Sub(b, x, BcastBack(b, m, dims, {dim}));
}
}  // namespace

Expected<LoweredOp> Softmax(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(SoftmaxIn in, SoftmaxArgs(c));
  std::vector<int64_t> dims = Dims(in.x);
  if (dims.empty()) return Done(c, {FullLike(b, in.x, 1)});
  Instruction* e = b.Unary(Opcode::kExp, Shifted(b, in.x, in.dim));
  Instruction* s = ReduceSum(b, e, {in.dim});
  return Done(c, {Div(b, e, BcastBack(b, s, dims, {in.dim}))});
}

Expected<LoweredOp> LogSoftmax(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(SoftmaxIn in, SoftmaxArgs(c));
  std::vector<int64_t> dims = Dims(in.x);
  if (dims.empty()) return Done(c, {FullLike(b, in.x, 0)});
  Instruction* sh = Shifted(b, in.x, in.dim);
  Instruction* lse = b.Unary(Opcode::kLog, ReduceSum(b, b.Unary(Opcode::kExp, sh), {in.dim}));
  return Done(c, {Sub(b, sh, BcastBack(b, lse, dims, {in.dim}))});
}

Expected<LoweredOp> SoftmaxBackward(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, c.Req("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y, c.Req("output", 1));
  PrimitiveType t = c.OutType(0, g->shape.element_type());
  g = b.Convert(g, t);
  y = b.Convert(y, t);
  std::vector<int64_t> dims = Dims(y);
  if (dims.empty()) return Done(c, {FullLike(b, y, 0)});
  auto w = WrapDim(c.Int("dim", 2, -1), y->shape.rank());
  if (!w) return Bad(c, "dimension out of range");
  // y * (g - sum(g * y))
  Instruction* s = ReduceSum(b, Mul(b, g, y), {*w});
  return Done(c, {Mul(b, y, Sub(b, g, BcastBack(b, s, dims, {*w})))});
}

Expected<LoweredOp> LogSoftmaxBackward(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, c.Req("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y, c.Req("output", 1));
  PrimitiveType t = c.OutType(0, g->shape.element_type());
  g = b.Convert(g, t);
  y = b.Convert(y, t);
  std::vector<int64_t> dims = Dims(y);
  if (dims.empty()) return Done(c, {FullLike(b, y, 0)});
  auto w = WrapDim(c.Int("dim", 2, -1), y->shape.rank());
  if (!w) return Bad(c, "dimension out of range");
  // g - exp(y) * sum(g)
  Instruction* s = ReduceSum(b, g, {*w});
  return Done(c, {Sub(b, g, Mul(b, b.Unary(Opcode::kExp, y), BcastBack(b, s, dims, {*w})))});
}

namespace {
// Stable sort of (x, iota) along dim; returns (values, indices).
std::pair<Instruction*, Instruction*> SortWithIndices(Builder& b, Instruction* x, int64_t dim, bool descending) {
  PrimitiveType t = x->shape.element_type();
  Instruction* io = b.Iota(Shape::Array(PrimitiveType::S64, Dims(x)), dim);
  Instruction* s = b.Sort({x, io}, dim, SortComparator(b, {t, PrimitiveType::S64}, descending), true);
  return {b.GetTupleElement(s, 0), b.GetTupleElement(s, 1)};
}
}  // namespace

Expected<LoweredOp> Sort(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, c.Req("self", 0));
  bool descending = c.Bool("descending", n.overload == "stable" ? 3 : 2, false);
  int64_t dim = c.Int("dim", n.overload == "stable" ? 2 : 1, -1);
  if (x->shape.rank() == 0) {
    if (n.op == "aten::argsort") return Done(c, {ConstS64(b, 0)});
    return Done(c, {x, ConstS64(b, 0)});
  }
  auto w = WrapDim(dim, x->shape.rank());
  if (!w) return Bad(c, "dimension out of range");
  auto [v, i] = SortWithIndices(b, x, *w, descending);
  if (n.op == "aten::argsort") return Done(c, {i});
  if (n.op == "aten::msort") return Done(c, {v});
  return Done(c, {v, i});
}

Expected<LoweredOp> Topk(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, c.Req("self", 0));
  int64_t k = c.Int("k", 1, 1);
  bool largest = c.Bool("largest", 3, true);
  if (x->shape.rank() == 0) return Done(c, {x, ConstS64(b, 0)});
  auto w = WrapDim(c.Int("dim", 2, -1), x->shape.rank());
  if (!w) return Bad(c, "dimension out of range");
  auto [v, i] = SortWithIndices(b, x, *w, largest);
  return Done(c, {b.SliceInDim(v, 0, k, 1, *w), b.SliceInDim(i, 0, k, 1, *w)});
}

Expected<LoweredOp> Kthvalue(const Node& n, Builder& b) {
  Ctx c(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, c.Req("self", 0));
  std::vector<int64_t> dims = Dims(x);
  bool is_median = n.op == "aten::median" || n.op == "aten::nanmedian";
  if (is_median && (n.overload == "default" || n.overload.empty())) {
    Instruction* flat = b.Reshape(x, {x->shape.elements()});
    auto [v, i] = SortWithIndices(b, flat, 0, false);
    (void)i;
    int64_t k = (x->shape.elements() - 1) / 2;
    return Done(c, {b.Reshape(b.SliceInDim(v, k, k + 1, 1, 0), {})});
  }
  if (dims.empty()) return Done(c, {x, ConstS64(b, 0)});
  auto w = WrapDim(c.Int("dim", is_median ? 1 : 2, -1), x->shape.rank());
  if (!w) return Bad(c, "dimension out of range");
  int64_t k = is_median ? (dims[static_cast<size_t>(*w)] - 1) / 2 : c.Int("k", 1, 1) - 1;
  bool keepdim = c.Bool("keepdim", is_median ? 2 : 3, false);
  auto [v, i] = SortWithIndices(b, x, *w, false);
  Instruction* vs = b.SliceInDim(v, k, k + 1, 1, *w);
  Instruction* is = b.SliceInDim(i, k, k + 1, 1, *w);
  std::vector<int64_t> od = dims;
  if (!keepdim) od.erase(od.begin() + *w);
  else od[static_cast<size_t>(*w)] = 1;
  return Done(c, {b.Reshape(vs, od), b.Reshape(is, od)});
}

}  // namespace opprobe::analyzer::lowering
