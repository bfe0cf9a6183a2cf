// Reductions (`reduce` with a scalar to_apply computation) and the ops that end in one (equal, allclose,
// aminmax, dist), arg-reductions (variadic reduce over (value, iota)), cumulative ops (`reduce-window` over the
// whole dim with low padding n-1, as torch_xla BuildCumulativeComputation and JAX cumsum do), the softmax family
// (_safe_softmax included), sort/topk and the order statistics (sort of (x, iota) then slice).
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

// The reduced dims from a `dim` argument (int, int list, None or empty = all).
Expected<std::vector<int64_t>> ReducedDims(const LoweringContext& ctx, int64_t rank, size_t pos) {
  auto d = ctx.OptInts("dim", pos);
  if (!d) return NormDims({}, rank, true);
  auto r = NormDims(*d, rank, true);
  if (!r.ok()) return ctx.Unsupported(r.status().message());
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

// What a reduction's body reads: self, its dims, the reduced dims and the input and result types.
struct ReduceArgs {
  const LoweringContext& ctx;
  Instruction* x0;
  const std::vector<int64_t>& dims;
  const std::vector<int64_t>& red;
  PrimitiveType in;
  PrimitiveType out;
};
using ReduceBody = Expected<Instruction*> (*)(const ReduceArgs& a);

// A reduction of self over `dim` (at `dim_pos`; None or empty is every dim) with keepdim at dim_pos + 1.
LoweringFn Reduction(ReduceBody body, size_t dim_pos = 1) {
  return [body, dim_pos](const Node& n, Builder& b) -> Expected<LoweredOp> {
    LoweringContext ctx(n, b);
    OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
    std::vector<int64_t> dims = Dims(x0);
    int64_t rank = x0->shape.rank();
    OPPROBE_ASSIGN_OR_RETURN(std::vector<int64_t> red, ReducedDims(ctx, rank, dim_pos));
    bool keepdim = ctx.Bool("keepdim", dim_pos + 1, false);
    PrimitiveType in = x0->shape.element_type();
    PrimitiveType out = ctx.OutputType(0, in);
    OPPROBE_ASSIGN_OR_RETURN(Instruction * r, body(ReduceArgs{ctx, x0, dims, red, in, out}));
    r = KeepDimsReshape(b, r, dims, red, keepdim);
    return ctx.Finish({b.Convert(r, out)});
  };
}

Expected<Instruction*> SumOf(const ReduceArgs& a, bool skip_nan) {
  Builder& b = a.ctx.builder;
  PrimitiveType t = a.out == PrimitiveType::PRED ? PrimitiveType::S64 : a.out;
  Instruction* x = b.Convert(a.x0, t);
  if (skip_nan && IsFloatish(t)) x = b.Select(b.Compare(x, x, ComparisonDirection::kNe), FullLike(b, x, 0), x);
  return ReduceSum(b, x, a.red);
}
Expected<Instruction*> Sum(const ReduceArgs& a) { return SumOf(a, false); }
Expected<Instruction*> NanSum(const ReduceArgs& a) { return SumOf(a, true); }

Expected<Instruction*> Mean(const ReduceArgs& a) {
  Builder& b = a.ctx.builder;
  Instruction* x = b.Convert(a.x0, a.out);
  return MulScalar(b, ReduceSum(b, x, a.red), 1.0 / Count(a.dims, a.red));
}

Expected<Instruction*> NanMean(const ReduceArgs& a) {
  Builder& b = a.ctx.builder;
  PrimitiveType t = a.out;
  Instruction* x = b.Convert(a.x0, t);
  Instruction* ok = b.Compare(x, x, ComparisonDirection::kEq);
  Instruction* s = ReduceSum(b, b.Select(ok, x, FullLike(b, x, 0)), a.red);
  Instruction* cnt = ReduceSum(b, b.Convert(ok, t), a.red);
  return Div(b, s, cnt);
}

Expected<Instruction*> Prod(const ReduceArgs& a) {
  Builder& b = a.ctx.builder;
  PrimitiveType t = a.out == PrimitiveType::PRED ? PrimitiveType::S64 : a.out;
  Instruction* x = b.Convert(a.x0, t);
  return Reduce(b, x, a.red, Opcode::kMultiply, Scalar(b, t, 1));
}

// max/min (amax/amin): NaN propagates, any NaN in the slice gives NaN.
Expected<Instruction*> Extremum(const ReduceArgs& a, bool is_max) {
  Builder& b = a.ctx.builder;
  Instruction* r = is_max ? ReduceMax(b, a.x0, a.red) : ReduceMin(b, a.x0, a.red);
  if (IsFloatish(a.in)) {
    Instruction* nan = ReduceMax(b, b.Compare(a.x0, a.x0, ComparisonDirection::kNe), a.red);
    r = b.Select(nan, FullLike(b, r, std::numeric_limits<double>::quiet_NaN()), r);
  }
  return r;
}
Expected<Instruction*> Max(const ReduceArgs& a) { return Extremum(a, true); }
Expected<Instruction*> Min(const ReduceArgs& a) { return Extremum(a, false); }

Expected<Instruction*> AnyOrAll(const ReduceArgs& a, bool any) {
  Builder& b = a.ctx.builder;
  Instruction* p = a.in == PrimitiveType::PRED ? a.x0 : CmpScalar(b, a.x0, 0, ComparisonDirection::kNe);
  return any ? Reduce(b, p, a.red, Opcode::kOr, Scalar(b, PrimitiveType::PRED, 0))
             : Reduce(b, p, a.red, Opcode::kAnd, Scalar(b, PrimitiveType::PRED, 1));
}
Expected<Instruction*> Any(const ReduceArgs& a) { return AnyOrAll(a, true); }
Expected<Instruction*> All(const ReduceArgs& a) { return AnyOrAll(a, false); }

Expected<Instruction*> LogSumExp(const ReduceArgs& a) {
  Builder& b = a.ctx.builder;
  PrimitiveType t = FloatType(a.out);
  Instruction* x = b.Convert(a.x0, t);
  Instruction* m = ReduceMax(b, x, a.red);
  // A max of +-inf must not produce inf - inf: use 0 as the shift there.
  Instruction* finite = b.Unary(Opcode::kIsFinite, m);
  Instruction* shift = b.Select(finite, m, FullLike(b, m, 0));
  Instruction* e = b.Unary(Opcode::kExp, Sub(b, x, BcastBack(b, shift, a.dims, a.red)));
  return Add(b, b.Unary(Opcode::kLog, ReduceSum(b, e, a.red)), shift);
}

// norm(self, p, dim) and linalg_vector_norm(self, ord, dim): the order is named p or ord.
Expected<Instruction*> PNorm(const ReduceArgs& a, const char* order_name) {
  Builder& b = a.ctx.builder;
  const Value* pv = a.ctx.Arg(order_name, 1);
  double p = pv && !pv->is_none() ? pv->AsDouble() : 2.0;
  PrimitiveType t = a.ctx.Dtype("dtype", 4).value_or(a.in);
  Instruction* x = b.Convert(a.x0, t);
  return Norm(b, x, p, a.red);
}
Expected<Instruction*> NormP(const ReduceArgs& a) { return PNorm(a, "p"); }
Expected<Instruction*> VectorNorm(const ReduceArgs& a) { return PNorm(a, "ord"); }

Expected<Instruction*> CountNonzero(const ReduceArgs& a) {
  Builder& b = a.ctx.builder;
  return ReduceSum(b, b.Convert(CmpScalar(b, a.x0, 0, ComparisonDirection::kNe), PrimitiveType::S64), a.red);
}

// var, std, var_mean and std_mean: `is_std` takes the square root, `with_mean` also returns the mean.
Expected<LoweredOp> VarStd(const Node& n, Builder& b, bool is_std, bool with_mean) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> dims = Dims(x0);
  auto dv = ctx.OptInts("dim", 1);
  std::vector<int64_t> red;
  {
    auto r = NormDims(dv ? *dv : std::vector<int64_t>{}, x0->shape.rank(), true);
    if (!r.ok()) return ctx.Unsupported(r.status().message());
    red = *r;
  }
  double correction = 1;
  if (const Value* cv = ctx.Arg("correction", 2); cv && !cv->is_none()) correction = cv->AsDouble();
  else if (const Value* uv = ctx.Arg("unbiased", 1); uv && uv->kind == Value::Kind::kBool) correction = uv->b ? 1 : 0;
  else if (const Value* uv2 = ctx.Arg("unbiased", 2); uv2 && uv2->kind == Value::Kind::kBool)
    correction = uv2->b ? 1 : 0;
  bool keepdim = ctx.Bool("keepdim", 3, false);
  PrimitiveType in = x0->shape.element_type();
  PrimitiveType t = FloatType(in);
  Instruction* x = b.Convert(x0, t);
  double count = Count(dims, red);
  Instruction* mean = MulScalar(b, ReduceSum(b, x, red), 1.0 / count);
  Instruction* centered = Sub(b, x, BcastBack(b, mean, dims, red));
  Instruction* sq =
      hlo::IsComplex(t) ? b.Convert(b.Unary(Opcode::kAbs, centered), hlo::ComplexComponentType(t)) : centered;
  sq = Mul(b, sq, sq);
  Instruction* var = MulScalar(b, ReduceSum(b, sq, red), 1.0 / std::max(count - correction, 0.0));
  Instruction* r = is_std ? b.Unary(Opcode::kSqrt, var) : var;
  std::vector<Instruction*> outs = {KeepDimsReshape(b, r, dims, red, keepdim)};
  if (with_mean) outs.push_back(KeepDimsReshape(b, mean, dims, red, keepdim));
  return ctx.Finish(outs);
}

Expected<LoweredOp> Var(const Node& n, Builder& b) { return VarStd(n, b, false, false); }
Expected<LoweredOp> Std(const Node& n, Builder& b) { return VarStd(n, b, true, false); }
Expected<LoweredOp> VarMean(const Node& n, Builder& b) { return VarStd(n, b, false, true); }
Expected<LoweredOp> StdMean(const Node& n, Builder& b) { return VarStd(n, b, true, true); }

// Variadic reduce over (x, iota) along dim; returns (values, indices).
std::pair<Instruction*, Instruction*> ArgReduce(Builder& b, Instruction* x, int64_t dim, bool is_max) {
  PrimitiveType t = x->shape.element_type();
  Instruction* io = b.Iota(Shape::Array(PrimitiveType::S64, Dims(x)), dim);
  Instruction* init = is_max ? MinValue(b, t) : MaxValue(b, t);
  Instruction* r = b.Reduce({x, io}, {init, ConstS64(b, 0)}, {dim}, ArgReducer(b, t, PrimitiveType::S64, is_max));
  return {b.GetTupleElement(r, 0), b.GetTupleElement(r, 1)};
}

Expected<LoweredOp> ArgMinMax(const Node& n, Builder& b, bool is_max) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  auto d = ctx.OptInt("dim", 1);
  bool keepdim = ctx.Bool("keepdim", 2, false);
  std::vector<int64_t> dims = Dims(x);
  if (!d || x->shape.rank() == 0) {
    Instruction* flat = b.Reshape(x, {x->shape.elements()});
    auto [v, i] = ArgReduce(b, flat, 0, is_max);
    (void)v;
    if (keepdim) i = b.Reshape(i, std::vector<int64_t>(dims.size(), 1));
    return ctx.Finish({i});
  }
  auto w = WrapDim(*d, x->shape.rank());
  if (!w) return ctx.Unsupported("dimension out of range");
  auto [v, i] = ArgReduce(b, x, *w, is_max);
  (void)v;
  return ctx.Finish({KeepDimsReshape(b, i, dims, {*w}, keepdim)});
}

Expected<LoweredOp> Argmax(const Node& n, Builder& b) { return ArgMinMax(n, b, true); }
Expected<LoweredOp> Argmin(const Node& n, Builder& b) { return ArgMinMax(n, b, false); }

// max.dim / min.dim: (values, indices).
Expected<LoweredOp> MinMaxDim(const Node& n, Builder& b, bool is_max) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> dims = Dims(x);
  if (x->shape.rank() == 0) return ctx.Finish({x, ConstS64(b, 0)});
  auto w = WrapDim(ctx.Int("dim", 1, 0), x->shape.rank());
  if (!w) return ctx.Unsupported("dimension out of range");
  bool keepdim = ctx.Bool("keepdim", 2, false);
  auto [v, i] = ArgReduce(b, x, *w, is_max);
  return ctx.Finish({KeepDimsReshape(b, v, dims, {*w}, keepdim), KeepDimsReshape(b, i, dims, {*w}, keepdim)});
}

Expected<LoweredOp> MaxDim(const Node& n, Builder& b) { return MinMaxDim(n, b, true); }
Expected<LoweredOp> MinDim(const Node& n, Builder& b) { return MinMaxDim(n, b, false); }

enum class Cumulative { kSum, kProd, kLogSumExp, kMax, kMin };

Expected<LoweredOp> LowerCumulative(const Node& n, Builder& b, Cumulative op) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> dims = Dims(x0);
  if (dims.empty()) {
    if (op == Cumulative::kMax || op == Cumulative::kMin) return ctx.Finish({x0, ConstS64(b, 0)});
    return ctx.Finish({b.Convert(x0, ctx.OutputType(0, x0->shape.element_type()))});
  }
  auto w = WrapDim(ctx.Int("dim", 1, 0), x0->shape.rank());
  if (!w) return ctx.Unsupported("dimension out of range");
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
  PrimitiveType out = ctx.OutputType(0, x0->shape.element_type());
  if (op == Cumulative::kSum) {
    PrimitiveType t = out;
    Instruction* x = b.Convert(x0, t);
    return ctx.Finish({b.ReduceWindow({x}, {Scalar(b, t, 0)}, win, b.ScalarBinaryComputation(Opcode::kAdd, t))});
  }
  if (op == Cumulative::kProd) {
    PrimitiveType t = out;
    Instruction* x = b.Convert(x0, t);
    return ctx.Finish({b.ReduceWindow({x}, {Scalar(b, t, 1)}, win, b.ScalarBinaryComputation(Opcode::kMultiply, t))});
  }
  if (op == Cumulative::kLogSumExp) {
    PrimitiveType t = FloatType(out);
    Instruction* x = b.Convert(x0, t);
    Instruction* m = ReduceMax(b, x, {d});
    Instruction* shift = b.Select(b.Unary(Opcode::kIsFinite, m), m, FullLike(b, m, 0));
    Instruction* sb = BcastBack(b, shift, dims, {d});
    Instruction* e = b.Unary(Opcode::kExp, Sub(b, x, sb));
    Instruction* cs = b.ReduceWindow({e}, {Scalar(b, t, 0)}, win, b.ScalarBinaryComputation(Opcode::kAdd, t));
    return ctx.Finish({Add(b, b.Unary(Opcode::kLog, cs), sb)});
  }
  {  // cummax, cummin
    bool is_max = op == Cumulative::kMax;
    PrimitiveType t = x0->shape.element_type();
    // Reducer preferring the later index on ties (torch's cummax/cummin use >= / <=). The indices are s32 while
    // they fit, converted to torch's s64 at the end (as torch_xla does): TPUs have no s64 reduce-window.
    PrimitiveType it = dims[static_cast<size_t>(d)] <= INT32_MAX ? PrimitiveType::S32 : PrimitiveType::S64;
    Builder sub = b.CreateSubBuilder(is_max ? "cummax" : "cummin");
    Instruction* v1 = sub.Parameter(0, Shape::Scalar(t));
    Instruction* i1 = sub.Parameter(1, Shape::Scalar(it));
    Instruction* v2 = sub.Parameter(2, Shape::Scalar(t));
    Instruction* i2 = sub.Parameter(3, Shape::Scalar(it));
    Instruction* better = sub.Compare(v1, v2, is_max ? ComparisonDirection::kGt : ComparisonDirection::kLt);
    Instruction* eq = sub.Compare(v1, v2, ComparisonDirection::kEq);
    Instruction* later = sub.Compare(i1, i2, ComparisonDirection::kGt);
    Instruction* pick = sub.Binary(Opcode::kOr, better, sub.Binary(Opcode::kAnd, eq, later));
    if (IsFloatish(t)) {
      Instruction* nan1 = sub.Compare(v1, v1, ComparisonDirection::kNe);
      Instruction* nan2 = sub.Compare(v2, v2, ComparisonDirection::kNe);
      Instruction* take1 =
          sub.Binary(Opcode::kAnd, nan1, sub.Binary(Opcode::kOr, sub.Unary(Opcode::kNot, nan2), later));
      pick = sub.Binary(Opcode::kOr, take1, sub.Binary(Opcode::kAnd, sub.Unary(Opcode::kNot, nan2), pick));
    }
    Computation* red = sub.Finish(sub.Tuple({sub.Select(pick, v1, v2), sub.Select(pick, i1, i2)}));
    Instruction* io = b.Iota(Shape::Array(it, dims), d);
    Instruction* init = is_max ? MinValue(b, t) : MaxValue(b, t);
    Instruction* r = b.ReduceWindow({x0, io}, {init, Scalar(b, it, -1)}, win, red);
    return ctx.Finish({b.GetTupleElement(r, 0), b.Convert(b.GetTupleElement(r, 1), PrimitiveType::S64)});
  }
}

Expected<LoweredOp> Cumsum(const Node& n, Builder& b) { return LowerCumulative(n, b, Cumulative::kSum); }
Expected<LoweredOp> Cumprod(const Node& n, Builder& b) { return LowerCumulative(n, b, Cumulative::kProd); }
Expected<LoweredOp> Logcumsumexp(const Node& n, Builder& b) { return LowerCumulative(n, b, Cumulative::kLogSumExp); }
Expected<LoweredOp> Cummax(const Node& n, Builder& b) { return LowerCumulative(n, b, Cumulative::kMax); }
Expected<LoweredOp> Cummin(const Node& n, Builder& b) { return LowerCumulative(n, b, Cumulative::kMin); }

struct SoftmaxIn {
  Instruction* x;
  int64_t dim;
  PrimitiveType out;
};
Expected<SoftmaxIn> SoftmaxArgs(const LoweringContext& ctx) {
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  PrimitiveType out = ctx.OutputType(0, x->shape.element_type());
  if (auto dt = ctx.Dtype("dtype", 2)) out = *dt;
  auto w = WrapDim(ctx.Int("dim", 1, -1), x->shape.rank());
  if (!w) return ctx.Unsupported("dimension out of range");
  PrimitiveType t = out;
  return SoftmaxIn{ctx.builder.Convert(x, t), *w, out};
}

// x - max(x) along dim (broadcast back), the max being 0 where it is not finite.
Instruction* Shifted(Builder& b, Instruction* x, int64_t dim) {
  std::vector<int64_t> dims = Dims(x);
  if (dims.empty()) return Sub(b, x, x);
  Instruction* m = ReduceMax(b, x, {dim});
  return Sub(b, x, BcastBack(b, m, dims, {dim}));
}

Expected<LoweredOp> Softmax(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(SoftmaxIn in, SoftmaxArgs(ctx));
  std::vector<int64_t> dims = Dims(in.x);
  if (dims.empty()) return ctx.Finish({FullLike(b, in.x, 1)});
  Instruction* e = b.Unary(Opcode::kExp, Shifted(b, in.x, in.dim));
  Instruction* s = ReduceSum(b, e, {in.dim});
  return ctx.Finish({Div(b, e, BcastBack(b, s, dims, {in.dim}))});
}

Expected<LoweredOp> LogSoftmax(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(SoftmaxIn in, SoftmaxArgs(ctx));
  std::vector<int64_t> dims = Dims(in.x);
  if (dims.empty()) return ctx.Finish({FullLike(b, in.x, 0)});
  Instruction* sh = Shifted(b, in.x, in.dim);
  Instruction* lse = b.Unary(Opcode::kLog, ReduceSum(b, b.Unary(Opcode::kExp, sh), {in.dim}));
  return ctx.Finish({Sub(b, sh, BcastBack(b, lse, dims, {in.dim}))});
}

Expected<LoweredOp> SoftmaxBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y, ctx.RequiredTensor("output", 1));
  PrimitiveType t = ctx.OutputType(0, g->shape.element_type());
  g = b.Convert(g, t);
  y = b.Convert(y, t);
  std::vector<int64_t> dims = Dims(y);
  if (dims.empty()) return ctx.Finish({FullLike(b, y, 0)});
  auto w = WrapDim(ctx.Int("dim", 2, -1), y->shape.rank());
  if (!w) return ctx.Unsupported("dimension out of range");
  // y * (g - sum(g * y))
  Instruction* s = ReduceSum(b, Mul(b, g, y), {*w});
  return ctx.Finish({Mul(b, y, Sub(b, g, BcastBack(b, s, dims, {*w})))});
}

Expected<LoweredOp> LogSoftmaxBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * y, ctx.RequiredTensor("output", 1));
  PrimitiveType t = ctx.OutputType(0, g->shape.element_type());
  g = b.Convert(g, t);
  y = b.Convert(y, t);
  std::vector<int64_t> dims = Dims(y);
  if (dims.empty()) return ctx.Finish({FullLike(b, y, 0)});
  auto w = WrapDim(ctx.Int("dim", 2, -1), y->shape.rank());
  if (!w) return ctx.Unsupported("dimension out of range");
  // g - exp(y) * sum(g)
  Instruction* s = ReduceSum(b, g, {*w});
  return ctx.Finish({Sub(b, g, Mul(b, b.Unary(Opcode::kExp, y), BcastBack(b, s, dims, {*w})))});
}

// Stable sort of (x, iota) along dim; returns (values, indices).
std::pair<Instruction*, Instruction*> SortWithIndices(Builder& b, Instruction* x, int64_t dim, bool descending) {
  PrimitiveType t = x->shape.element_type();
  Instruction* io = b.Iota(Shape::Array(PrimitiveType::S64, Dims(x)), dim);
  Instruction* s = b.Sort({x, io}, dim, SortComparator(b, {t, PrimitiveType::S64}, descending), true);
  return {b.GetTupleElement(s, 0), b.GetTupleElement(s, 1)};
}

// What a sort returns: sort's (values, indices), argsort's indices or msort's values.
enum class SortResult { kValuesAndIndices, kIndices, kValues };

Expected<LoweredOp> LowerSort(const Node& n, Builder& b, SortResult result) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  bool descending = ctx.Bool("descending", n.overload == "stable" ? 3 : 2, false);
  int64_t dim = ctx.Int("dim", n.overload == "stable" ? 2 : 1, -1);
  if (x->shape.rank() == 0) {
    if (result == SortResult::kIndices) return ctx.Finish({ConstS64(b, 0)});
    return ctx.Finish({x, ConstS64(b, 0)});
  }
  auto w = WrapDim(dim, x->shape.rank());
  if (!w) return ctx.Unsupported("dimension out of range");
  auto [v, i] = SortWithIndices(b, x, *w, descending);
  if (result == SortResult::kIndices) return ctx.Finish({i});
  if (result == SortResult::kValues) return ctx.Finish({v});
  return ctx.Finish({v, i});
}

Expected<LoweredOp> Sort(const Node& n, Builder& b) { return LowerSort(n, b, SortResult::kValuesAndIndices); }
Expected<LoweredOp> Argsort(const Node& n, Builder& b) { return LowerSort(n, b, SortResult::kIndices); }
Expected<LoweredOp> Msort(const Node& n, Builder& b) { return LowerSort(n, b, SortResult::kValues); }

Expected<LoweredOp> Topk(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t k = ctx.Int("k", 1, 1);
  bool largest = ctx.Bool("largest", 3, true);
  if (x->shape.rank() == 0) return ctx.Finish({x, ConstS64(b, 0)});
  auto w = WrapDim(ctx.Int("dim", 2, -1), x->shape.rank());
  if (!w) return ctx.Unsupported("dimension out of range");
  auto [v, i] = SortWithIndices(b, x, *w, largest);
  return ctx.Finish({b.SliceInDim(v, 0, k, 1, *w), b.SliceInDim(i, 0, k, 1, *w)});
}

// Ascending comparator over (x, iota) that puts every NaN last whatever its sign bit (TOTALORDER
// would put -NaN first) and treats -0 == 0, as torch's median/nanmedian order does.
Computation* NanLastLess(Builder& b, PrimitiveType t) {
  Builder sub = b.CreateSubBuilder("compare-nan-last");
  Instruction* x = sub.Parameter(0, Shape::Scalar(t));
  Instruction* y = sub.Parameter(1, Shape::Scalar(t));
  sub.Parameter(2, Shape::Scalar(PrimitiveType::S64));
  sub.Parameter(3, Shape::Scalar(PrimitiveType::S64));
  Instruction* xnan = sub.Compare(x, x, ComparisonDirection::kNe);
  Instruction* ynan = sub.Compare(y, y, ComparisonDirection::kNe);
  Instruction* lt = sub.Compare(x, y, ComparisonDirection::kLt);
  // !xnan && (ynan || x < y)
  Instruction* r = sub.Binary(Opcode::kAnd, sub.Unary(Opcode::kNot, xnan), sub.Binary(Opcode::kOr, ynan, lt));
  return sub.Finish(r);
}

// nanmedian along `dim`: a stable NaN-last sort, then the element at (count of non-NaN - 1) / 2 of
// each slice (position 0, a NaN, when the slice is all NaN), picked with a one-hot mask.
std::pair<Instruction*, Instruction*> NanMedian(Builder& b, Instruction* x, int64_t dim) {
  PrimitiveType t = x->shape.element_type();
  std::vector<int64_t> dims = Dims(x);
  Instruction* io = b.Iota(Shape::Array(PrimitiveType::S64, dims), dim);
  Instruction* s = b.Sort({x, io}, dim, NanLastLess(b, t), true);
  Instruction* v = b.GetTupleElement(s, 0);
  Instruction* i = b.GetTupleElement(s, 1);
  Instruction* ok = b.Convert(b.Compare(x, x, ComparisonDirection::kEq), PrimitiveType::S64);
  Instruction* cnt = ReduceSum(b, ok, {dim});
  Instruction* k = Div(b, AddScalar(b, cnt, -1), Full(b, PrimitiveType::S64, 2, Dims(cnt)));
  Instruction* pick = b.Compare(io, BcastBack(b, k, dims, {dim}), ComparisonDirection::kEq);
  Instruction* val = ReduceMax(b, b.Select(pick, v, b.Broadcast(MinValue(b, t), dims, {})), {dim});
  Instruction* idx = ReduceSum(b, b.Select(pick, i, Full(b, PrimitiveType::S64, 0, dims)), {dim});
  return {val, idx};
}

enum class OrderStatistic { kKth, kMedian, kNanMedian };

// kthvalue(self, k, dim), median(self[, dim]) and nanmedian(self[, dim]).
Expected<LoweredOp> LowerOrderStatistic(const Node& n, Builder& b, OrderStatistic which) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> dims = Dims(x);
  bool is_median = which != OrderStatistic::kKth;
  // nanmedian skips NaNs (median propagates them; the plain sort puts them last).
  bool skip_nan = which == OrderStatistic::kNanMedian && hlo::IsFloatingPoint(x->shape.element_type());
  if (is_median && (n.overload == "default" || n.overload.empty())) {
    Instruction* flat = b.Reshape(x, {x->shape.elements()});
    if (skip_nan && x->shape.elements() > 0) return ctx.Finish({NanMedian(b, flat, 0).first});
    auto [v, i] = SortWithIndices(b, flat, 0, false);
    (void)i;
    int64_t k = (x->shape.elements() - 1) / 2;
    return ctx.Finish({b.Reshape(b.SliceInDim(v, k, k + 1, 1, 0), {})});
  }
  if (dims.empty()) return ctx.Finish({x, ConstS64(b, 0)});
  auto w = WrapDim(ctx.Int("dim", is_median ? 1 : 2, -1), x->shape.rank());
  if (!w) return ctx.Unsupported("dimension out of range");
  int64_t k = is_median ? (dims[static_cast<size_t>(*w)] - 1) / 2 : ctx.Int("k", 1, 1) - 1;
  bool keepdim = ctx.Bool("keepdim", is_median ? 2 : 3, false);
  std::vector<int64_t> od = dims;
  if (!keepdim) od.erase(od.begin() + *w);
  else od[static_cast<size_t>(*w)] = 1;
  if (skip_nan && dims[static_cast<size_t>(*w)] > 0) {
    auto [v, i] = NanMedian(b, x, *w);
    return ctx.Finish({b.Reshape(v, od), b.Reshape(i, od)});
  }
  auto [v, i] = SortWithIndices(b, x, *w, false);
  Instruction* vs = b.SliceInDim(v, k, k + 1, 1, *w);
  Instruction* is = b.SliceInDim(i, k, k + 1, 1, *w);
  return ctx.Finish({b.Reshape(vs, od), b.Reshape(is, od)});
}

Expected<LoweredOp> Kthvalue(const Node& n, Builder& b) { return LowerOrderStatistic(n, b, OrderStatistic::kKth); }
Expected<LoweredOp> Median(const Node& n, Builder& b) { return LowerOrderStatistic(n, b, OrderStatistic::kMedian); }
Expected<LoweredOp> Nanmedian(const Node& n, Builder& b) {
  return LowerOrderStatistic(n, b, OrderStatistic::kNanMedian);
}

// A cumulative window over all of `dim` (reduce-window with low padding n-1).
hlo::Window PrefixWindow(const std::vector<int64_t>& dims, int64_t dim) {
  hlo::Window win;
  for (size_t i = 0; i < dims.size(); ++i) {
    hlo::WindowDimension wd;
    if (static_cast<int64_t>(i) == dim) {
      wd.size = std::max<int64_t>(dims[i], 1);
      wd.padding_low = std::max<int64_t>(dims[i] - 1, 0);
    }
    win.dimensions.push_back(wd);
  }
  return win;
}

// Reducer over (key, pos, value, index): the larger key wins, the lower pos on ties; value and
// index ride along.
Computation* ModeReducer(Builder& b, PrimitiveType vt) {
  Builder sub = b.CreateSubBuilder("mode_pick");
  const PrimitiveType S = PrimitiveType::S64;
  Instruction* k1 = sub.Parameter(0, Shape::Scalar(S));
  Instruction* p1 = sub.Parameter(1, Shape::Scalar(S));
  Instruction* v1 = sub.Parameter(2, Shape::Scalar(vt));
  Instruction* i1 = sub.Parameter(3, Shape::Scalar(S));
  Instruction* k2 = sub.Parameter(4, Shape::Scalar(S));
  Instruction* p2 = sub.Parameter(5, Shape::Scalar(S));
  Instruction* v2 = sub.Parameter(6, Shape::Scalar(vt));
  Instruction* i2 = sub.Parameter(7, Shape::Scalar(S));
  Instruction* gt = sub.Compare(k1, k2, ComparisonDirection::kGt);
  Instruction* eq = sub.Compare(k1, k2, ComparisonDirection::kEq);
  Instruction* lo = sub.Compare(p1, p2, ComparisonDirection::kLt);
  Instruction* pick = sub.Binary(Opcode::kOr, gt, sub.Binary(Opcode::kAnd, eq, lo));
  return sub.Finish(sub.Tuple(
      {sub.Select(pick, k1, k2), sub.Select(pick, p1, p2), sub.Select(pick, v1, v2), sub.Select(pick, i1, i2)}));
}

// mode: torch sorts each slice, walks the runs of equal values and keeps the first (smallest) value
// whose run is strictly longest, returning the last index of that value (its stable sort keeps equal
// values in index order). Here: a stable sort of (x, iota), run starts by a cumulative max of the
// positions where a run begins, run lengths at run ends, then a variadic reduce picking the longest
// run (the earliest on ties) with its value and original index.
Expected<LoweredOp> ModeOp(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> dims = Dims(x);
  if (dims.empty()) return ctx.Finish({x, ConstS64(b, 0)});
  auto w = WrapDim(ctx.Int("dim", 1, -1), x->shape.rank());
  if (!w) return ctx.Unsupported("dimension out of range");
  int64_t d = *w;
  bool keepdim = ctx.Bool("keepdim", 2, false);
  int64_t len = dims[static_cast<size_t>(d)];
  if (len == 0) return ctx.Unsupported("mode of an empty dimension");
  PrimitiveType t = x->shape.element_type();
  const PrimitiveType S = PrimitiveType::S64;
  auto [s, idx] = SortWithIndices(b, x, d, false);
  std::vector<int64_t> one = dims;
  one[static_cast<size_t>(d)] = 1;
  Instruction *first, *last;
  if (len == 1) {
    first = last = Full(b, PrimitiveType::PRED, 1, dims);
  } else {
    Instruction* ne =
        b.Compare(b.SliceInDim(s, 1, len, 1, d), b.SliceInDim(s, 0, len - 1, 1, d), ComparisonDirection::kNe);
    first = b.Concatenate({Full(b, PrimitiveType::PRED, 1, one), ne}, d);
    last = b.Concatenate({ne, Full(b, PrimitiveType::PRED, 1, one)}, d);
  }
  Instruction* pos = b.Iota(Shape::Array(S, dims), d);
  Instruction* zeros = Full(b, S, 0, dims);
  Instruction* start = b.ReduceWindow({b.Select(first, pos, zeros)}, {ConstS64(b, 0)}, PrefixWindow(dims, d),
                                      b.ScalarBinaryComputation(Opcode::kMaximum, S));
  Instruction* run = AddScalar(b, Sub(b, pos, start), 1);
  Instruction* key = b.Select(last, run, zeros);
  Instruction* r = b.Reduce({key, pos, s, idx}, {ConstS64(b, -1), ConstS64(b, 0), Scalar(b, t, 0), ConstS64(b, 0)}, {d},
                            ModeReducer(b, t));
  std::vector<int64_t> od = dims;
  if (keepdim) od[static_cast<size_t>(d)] = 1;
  else od.erase(od.begin() + d);
  return ctx.Finish({b.Reshape(b.GetTupleElement(r, 2), od), b.Reshape(b.GetTupleElement(r, 3), od)});
}

// segment_reduce: each row of `data` along `axis` belongs to the segment whose offsets bracket it
// (a count of offsets <= row, minus one; rows outside every segment get an out-of-range index and
// are dropped, as scatter does). A scatter with the reduction's combiner into the initial value (or
// the identity); mean divides by the segment lengths (an empty segment: the initial value, else NaN).
Expected<LoweredOp> SegmentReduce(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * data, ctx.RequiredTensor("data", 0));
  std::string reduce = ctx.String("reduce", 1);
  Instruction* lengths = ctx.Tensor("lengths", 2);
  Instruction* offsets = ctx.Tensor("offsets", 4);
  if (!lengths && !offsets) return ctx.Unsupported("needs lengths or offsets");
  std::vector<int64_t> dd = Dims(data);
  int64_t rank = static_cast<int64_t>(dd.size());
  auto wa = WrapDim(ctx.Int("axis", 5, 0), rank);
  if (!wa || rank == 0) return ctx.Unsupported("axis out of range");
  int64_t axis = *wa;
  PrimitiveType t = data->shape.element_type();
  const PrimitiveType S = PrimitiveType::S64;
  Instruction* offs;  // [outer..., S+1]
  if (lengths) {
    Instruction* l = b.Convert(lengths, S);
    if (l->shape.rank() != axis + 1) return ctx.Unsupported("lengths must have axis + 1 dims");
    std::vector<int64_t> ld = Dims(l);
    Instruction* ends =
        b.ReduceWindow({l}, {ConstS64(b, 0)}, PrefixWindow(ld, axis), b.ScalarBinaryComputation(Opcode::kAdd, S));
    std::vector<int64_t> zd = ld;
    zd.back() = 1;
    offs = b.Concatenate({Full(b, S, 0, zd), ends}, axis);
  } else {
    offs = b.Convert(offsets, S);
    if (offs->shape.rank() != axis + 1 || Dims(offs).back() < 1)
      return ctx.Unsupported("offsets must have axis + 1 dims");
  }
  std::vector<int64_t> od0 = Dims(offs);
  int64_t nseg = od0.back() - 1;
  std::vector<int64_t> outer(dd.begin(), dd.begin() + axis);
  if (std::vector<int64_t>(od0.begin(), od0.end() - 1) != outer)
    return ctx.Unsupported("lengths/offsets do not fit data");
  int64_t rows = dd[static_cast<size_t>(axis)];
  std::vector<int64_t> cd = outer;
  cd.push_back(rows);
  cd.push_back(nseg + 1);
  std::vector<int64_t> omap = DimRange(0, axis);
  omap.push_back(axis + 1);
  Instruction* ob = b.Broadcast(offs, cd, omap);
  Instruction* r = b.Iota(Shape::Array(S, cd), axis);
  Instruction* seg =
      AddScalar(b, ReduceSum(b, b.Convert(b.Compare(ob, r, ComparisonDirection::kLe), S), {axis + 1}), -1);
  std::vector<int64_t> sd = outer;
  sd.push_back(rows);  // seg: [outer..., rows]
  std::vector<int64_t> sd1 = sd;
  sd1.push_back(1);
  std::vector<Instruction*> cols;
  cols.reserve(static_cast<size_t>(axis) + 1);
  for (int64_t k = 0; k < axis; ++k) cols.push_back(b.Reshape(b.Iota(Shape::Array(S, sd), k), sd1));
  cols.push_back(b.Reshape(seg, sd1));
  Instruction* index = cols.size() == 1 ? cols[0] : b.Concatenate(cols, axis + 1);
  std::vector<int64_t> out = outer;
  out.push_back(nseg);
  out.insert(out.end(), dd.begin() + axis + 1, dd.end());
  const Value* init = ctx.Arg("initial", 7);
  bool has_init = init && !init->is_none();
  Opcode op;
  Instruction* base;
  if (reduce == "max") op = Opcode::kMaximum, base = b.Broadcast(MinValue(b, t), out, {});
  else if (reduce == "min") op = Opcode::kMinimum, base = b.Broadcast(MaxValue(b, t), out, {});
  else if (reduce == "sum" || reduce == "mean") op = Opcode::kAdd, base = Full(b, t, 0, out);
  else if (reduce == "prod") op = Opcode::kMultiply, base = Full(b, t, 1, out);
  else return ctx.Unsupported("unknown reduce " + reduce);
  if (has_init) base = b.Broadcast(ScalarOf(b, t, *init), out, {});
  hlo::ScatterDimensionNumbers dn;
  for (int64_t i = axis + 1; i < rank; ++i) dn.update_window_dims.push_back(i);
  for (int64_t i = 0; i <= axis; ++i) {
    dn.inserted_window_dims.push_back(i);
    dn.scatter_dims_to_operand_dims.push_back(i);
  }
  dn.index_vector_dim = axis + 1;
  Instruction* res = b.Scatter({base}, index, {data}, dn, b.ScalarBinaryComputation(op, t));
  if (reduce == "mean") {
    Instruction* cnt = Sub(b, b.SliceInDim(offs, 1, nseg + 1, 1, axis), b.SliceInDim(offs, 0, nseg, 1, axis));
    std::vector<int64_t> cmap;
    for (int64_t i = 0; i <= axis; ++i) cmap.push_back(i);
    Instruction* cb = b.Broadcast(cnt, out, cmap);
    Instruction* empty = b.Compare(cb, Full(b, S, 0, out), ComparisonDirection::kEq);
    Instruction* q = Div(b, res, b.Convert(cb, t));
    Instruction* fill = has_init ? b.Broadcast(ScalarOf(b, t, *init), out, {})
                                 : Full(b, t, std::numeric_limits<double>::quiet_NaN(), out);
    res = b.Select(empty, fill, q);
  }
  return ctx.Finish({res});
}

Instruction* AllTrue(Builder& b, Instruction* p) {
  return Reduce(b, p, AllDims(p), Opcode::kAnd, Scalar(b, PrimitiveType::PRED, 1));
}

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
  Instruction* close =
      b.Compare(b.Unary(Opcode::kAbs, Sub(b, x, y)), AddScalar(b, MulScalar(b, b.Unary(Opcode::kAbs, y), rtol), atol),
                ComparisonDirection::kLe);
  close = b.Binary(Opcode::kOr, close, b.Compare(x, y, ComparisonDirection::kEq));
  if (equal_nan)
    close = b.Binary(
        Opcode::kOr, close,
        b.Binary(Opcode::kAnd, b.Compare(x, x, ComparisonDirection::kNe), b.Compare(y, y, ComparisonDirection::kNe)));
  return ctx.Finish({AllTrue(b, close)});
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

// _safe_softmax (scaled_dot_product_attention's math path in 2.5+): softmax, except that a row whose
// inputs are all -inf gives zeros rather than NaN.
Expected<LoweredOp> SafeSoftmax(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  std::optional<PrimitiveType> dtype = ctx.Dtype("dtype", 2);
  PrimitiveType t = dtype ? *dtype : ctx.OutputType(0, FloatType(x0->shape.element_type()));
  Instruction* x = b.Convert(x0, t);
  std::vector<int64_t> xd = Dims(x);
  if (xd.empty()) x = b.Reshape(x, {1});
  std::vector<int64_t> d1 = Dims(x);
  auto dim = WrapDim(ctx.Int("dim", 1, -1), Rank(x));
  if (!dim) return ctx.Unsupported("dim out of range");
  Instruction* m = ReduceMax(b, x, {*dim});
  Instruction* mb = BcastBack(b, m, d1, {*dim});
  Instruction* e = b.Unary(Opcode::kExp, Sub(b, x, mb));
  Instruction* out = Div(b, e, BcastBack(b, ReduceSum(b, e, {*dim}), d1, {*dim}));
  Instruction* dead = CmpScalar(b, mb, -std::numeric_limits<double>::infinity(), ComparisonDirection::kEq);
  out = b.Select(dead, Full(b, t, 0, d1), out);
  if (xd.empty()) out = b.Reshape(out, {});
  return ctx.Finish({out});
}

// _assert_async (torch._assert_async: a check that self, one element, is true, raised later by the device): it
// returns nothing, and XLA has no device-side assertion, so it lowers to no instruction (a PyTorch/XLA program
// runs without the check; the value it tested, usually _is_all_true's, is computed by its own lowering).
Expected<LoweredOp> AssertAsync(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  const TensorMeta* x = ctx.ArgMeta("self", 0);  // (no parameter: the module has nothing to compute)
  if (!x) return ctx.Unsupported("self must be a tensor");
  if (x->numel() != 1) return ctx.Unsupported("the asserted tensor must have one element");
  LoweredOp op;
  op.note = "a device-side assertion: lowers to no instruction (the check does not run on an XLA device)";
  return op;
}

}  // namespace

const LoweringFamily& ReductionLowerings() {
  static const auto* family = new LoweringFamily{
      FamilyOf(__FILE__),
      {
          {"aten::sum", Reduction(Sum)},
          {"aten::nansum", Reduction(NanSum)},
          {"aten::mean", Reduction(Mean)},
          {"aten::nanmean", Reduction(NanMean)},
          {"aten::prod", Reduction(Prod)},
          {"aten::amax", Reduction(Max)},
          {"aten::max", Reduction(Max)},
          {"aten::amin", Reduction(Min)},
          {"aten::min", Reduction(Min)},
          {"aten::any", Reduction(Any)},
          {"aten::all", Reduction(All)},
          {"aten::_is_all_true", Reduction(All)},  // (torch._assert_async's and Tensor.bool()'s check: all of self)
          {"aten::_assert_async", AssertAsync},
          {"aten::logsumexp", Reduction(LogSumExp)},
          {"aten::norm", Reduction(NormP, 2)},
          {"aten::linalg_vector_norm", Reduction(VectorNorm, 2)},
          {"aten::count_nonzero", Reduction(CountNonzero)},
          {"aten::var", Var},
          {"aten::std", Std},
          {"aten::var_mean", VarMean},
          {"aten::std_mean", StdMean},
          {"aten::argmax", Argmax},
          {"aten::argmin", Argmin},
          {"aten::max.dim", MaxDim},
          {"aten::min.dim", MinDim},
          {"aten::aminmax", Aminmax},
          {"aten::cumsum", Cumsum, kInPlaceForm},
          {"aten::cumprod", Cumprod, kInPlaceForm},
          {"aten::logcumsumexp", Logcumsumexp},
          {"aten::cummax", Cummax},
          {"aten::cummin", Cummin},
          {"aten::softmax", Softmax},
          {"aten::_softmax", Softmax},
          {"aten::_safe_softmax", SafeSoftmax},
          {"aten::log_softmax", LogSoftmax},
          {"aten::_log_softmax", LogSoftmax},
          {"aten::_softmax_backward_data", SoftmaxBackward},
          {"aten::_log_softmax_backward_data", LogSoftmaxBackward},
          {"aten::sort", Sort},
          {"aten::argsort", Argsort},
          {"aten::msort", Msort},
          {"aten::topk", Topk},
          {"aten::kthvalue", Kthvalue},
          {"aten::median", Median},
          {"aten::nanmedian", Nanmedian},
          {"aten::mode", ModeOp},
          {"aten::segment_reduce", SegmentReduce},
          {"aten::equal", Equal},
          {"aten::allclose", Allclose},
          {"aten::dist", Dist},
      }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
