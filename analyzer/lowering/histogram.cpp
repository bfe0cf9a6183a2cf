// Histograms as ATen's CPU kernel computes them: bin edges from a count are a linspace between the
// data's min and max (a `reduce`; widened by 0.5 each way when equal) or the given range, in the
// input's type with ATen's two-sided linspace formula; each element's bin is the number of edges
// <= it, minus one (the last edge closes the last bin); elements outside the edges (and NaN) are
// given an out-of-range index that the `scatter` (add) of the counts or weights drops. density
// divides by the total, then by each dim's bin widths. histc and bincount are a `scatter` (add) of
// ones (or weights) into their bins.
#include <fmt/format.h>

#include <cmath>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

// linspace(lo, hi, steps) in type t from f64 scalars lo/hi: start + step * i for the first half,
// end - step * (steps - 1 - i) for the second (ATen's linspace kernel).
Instruction* LinspaceOf(Builder& b, Instruction* lo, Instruction* hi, int64_t steps, PrimitiveType t) {
  Instruction* start = b.Convert(lo, t);
  Instruction* end = b.Convert(hi, t);
  if (steps == 1) return b.Reshape(start, {1});
  Instruction* step = Div(b, Sub(b, end, start), Scalar(b, t, static_cast<double>(steps - 1)));
  std::vector<int64_t> d = {steps};
  Instruction* io = b.Iota(Shape::Array(t, d), 0);
  Instruction* stepb = b.Broadcast(step, d, {});
  Instruction* front = Add(b, b.Broadcast(start, d, {}), Mul(b, stepb, io));
  Instruction* back =
      Sub(b, b.Broadcast(end, d, {}), Mul(b, stepb, Sub(b, Full(b, t, static_cast<double>(steps - 1), d), io)));
  const int64_t halfway = steps / 2;  // an integer, as torch's linspace switches formulas there
  Instruction* first_half = CmpScalar(b, b.Iota(Shape::Array(PrimitiveType::S64, d), 0), static_cast<double>(halfway),
                                      ComparisonDirection::kLt);
  return b.Select(first_half, front, back);
}

// The edges of every dim of x [M, D] from bin counts (range: 2 * D bounds, or the data's min/max).
Expected<std::vector<Instruction*>> EdgesFromCounts(const LoweringContext& ctx, Instruction* x,
                                                    const std::vector<int64_t>& bins, size_t range_pos) {
  Builder& b = ctx.builder;
  std::vector<int64_t> xd = Dims(x);
  int64_t M = xd[0], D = xd[1];
  if (static_cast<int64_t>(bins.size()) != D) return ctx.Unsupported("one bin count per dimension expected");
  PrimitiveType t = x->shape.element_type();
  const PrimitiveType F = PrimitiveType::F64;
  const Value* rv = ctx.Arg("range", range_pos);
  std::vector<double> range;
  if (rv && !rv->is_none()) {
    if (rv->kind == Value::Kind::kFloatList) range = rv->floats;
    else if (rv->kind == Value::Kind::kIntList) range.assign(rv->ints.begin(), rv->ints.end());
    else return ctx.Unsupported("range must be a list of numbers");
    if (static_cast<int64_t>(range.size()) != 2 * D) return ctx.Unsupported("range needs two bounds per dimension");
  }
  Instruction *mins = nullptr, *maxs = nullptr;
  if (range.empty() && M > 0) {
    mins = b.Convert(ReduceMin(b, x, {0}), F);
    maxs = b.Convert(ReduceMax(b, x, {0}), F);
  }
  std::vector<Instruction*> edges;
  for (int64_t d = 0; d < D; ++d) {
    if (bins[static_cast<size_t>(d)] < 1) return ctx.Unsupported("bin counts must be positive");
    Instruction *lo, *hi;
    if (!range.empty()) {
      double l = range[static_cast<size_t>(2 * d)], h = range[static_cast<size_t>(2 * d + 1)];
      if (l == h) l -= 0.5, h += 0.5;
      lo = Scalar(b, F, l);
      hi = Scalar(b, F, h);
    } else if (M == 0) {
      lo = Scalar(b, F, 0);
      hi = Scalar(b, F, 1);
    } else {
      lo = b.Reshape(b.SliceInDim(mins, d, d + 1, 1, 0), {});
      hi = b.Reshape(b.SliceInDim(maxs, d, d + 1, 1, 0), {});
      Instruction* eq = b.Compare(lo, hi, ComparisonDirection::kEq);
      lo = b.Select(eq, Sub(b, lo, Scalar(b, F, 0.5)), lo);
      hi = b.Select(eq, Add(b, hi, Scalar(b, F, 0.5)), hi);
    }
    edges.push_back(LinspaceOf(b, lo, hi, bins[static_cast<size_t>(d)] + 1, t));
  }
  return edges;
}

// The histogram of x [M, D] over per-dim edges, weighted by w [M] (or counting).
Instruction* Counts(Builder& b, Instruction* x, const std::vector<Instruction*>& edges, Instruction* w, bool density) {
  std::vector<int64_t> xd = Dims(x);
  int64_t M = xd[0];
  PrimitiveType t = x->shape.element_type();
  const PrimitiveType S = PrimitiveType::S64;
  std::vector<int64_t> hd;
  hd.reserve(edges.size());
  for (Instruction* e : edges) hd.push_back(e->shape.dimensions()[0] - 1);
  int64_t total = Numel(hd);
  Instruction* flat = Full(b, S, 0, {M});
  Instruction* ok = Full(b, PrimitiveType::PRED, 1, {M});
  int64_t stride = total;
  for (size_t d = 0; d < edges.size(); ++d) {
    int64_t ne = hd[d] + 1;
    Instruction* col = b.Reshape(b.SliceInDim(x, static_cast<int64_t>(d), static_cast<int64_t>(d) + 1, 1, 1), {M});
    Instruction* le =
        b.Compare(b.Broadcast(edges[d], {M, ne}, {1}), b.Broadcast(col, {M, ne}, {0}), ComparisonDirection::kLe);
    Instruction* pos = AddScalar(b, ReduceSum(b, b.Convert(le, S), {1}), -1);
    pos = b.Binary(Opcode::kMinimum, pos, Full(b, S, static_cast<double>(hd[d] - 1), {M}));
    Instruction* lo = b.Broadcast(b.Reshape(b.SliceInDim(edges[d], 0, 1, 1, 0), {}), {M}, {});
    Instruction* hi = b.Broadcast(b.Reshape(b.SliceInDim(edges[d], ne - 1, ne, 1, 0), {}), {M}, {});
    Instruction* in = b.Binary(Opcode::kAnd, b.Compare(col, lo, ComparisonDirection::kGe),
                               b.Compare(col, hi, ComparisonDirection::kLe));
    ok = b.Binary(Opcode::kAnd, ok, in);
    stride /= hd[d];
    flat = Add(b, flat, MulScalar(b, pos, static_cast<double>(stride)));
  }
  flat = b.Select(ok, flat, Full(b, S, -1, {M}));
  hlo::ScatterDimensionNumbers dn;
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  Instruction* upd = w ? b.Reshape(b.Convert(w, t), {M}) : Full(b, t, 1, {M});
  Instruction* h = b.Scatter({Full(b, t, 0, {total})}, b.Reshape(flat, {M, 1}), {upd}, dn,
                             b.ScalarBinaryComputation(Opcode::kAdd, t));
  h = b.Reshape(h, hd);
  if (density) {
    std::vector<int64_t> all = DimRange(0, static_cast<int64_t>(hd.size()));
    h = Div(b, h, b.Broadcast(ReduceSum(b, h, all), hd, {}));
    for (size_t d = 0; d < edges.size(); ++d) {
      int64_t ne = hd[d] + 1;
      Instruction* width = Sub(b, b.SliceInDim(edges[d], 1, ne, 1, 0), b.SliceInDim(edges[d], 0, ne - 1, 1, 0));
      h = Div(b, h, b.Broadcast(width, hd, {static_cast<int64_t>(d)}));
    }
  }
  return h;
}

// self as [M, D]: histogram flattens, histogramdd keeps the last dim.
Expected<Instruction*> Samples(const LoweringContext& ctx, bool one_d) {
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  if (!hlo::IsFloatingPoint(x->shape.element_type())) return ctx.Unsupported("histograms need a float input");
  if (one_d) return ctx.builder.Reshape(x, {x->shape.elements(), 1});
  std::vector<int64_t> d = Dims(x);
  if (d.empty()) return ctx.Unsupported("histogramdd needs at least 1 dim");
  int64_t D = d.back();
  return ctx.builder.Reshape(x, {D == 0 ? 0 : x->shape.elements() / D, D});
}

// histogram.bin_ct / histogram.bins_tensor -> (hist, bin_edges).
Expected<LoweredOp> Histogram(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, Samples(ctx, true));
  PrimitiveType t = x->shape.element_type();
  Instruction* edges;
  size_t wpos;
  if (Instruction* bt = ctx.Tensor("bins", 1)) {
    if (bt->shape.rank() != 1 || bt->shape.elements() < 2)
      return ctx.Unsupported("bins must be 1-d with at least 2 edges");
    edges = b.Convert(bt, t);
    wpos = 2;
  } else {
    OPPROBE_ASSIGN_OR_RETURN(auto es, EdgesFromCounts(ctx, x, {ctx.Int("bins", 1, 100)}, 2));
    edges = es[0];
    wpos = 3;
  }
  Instruction* w = ctx.Tensor("weight", wpos);
  bool density = ctx.Bool("density", wpos + 1, false);
  return ctx.Finish({Counts(b, x, {edges}, w, density), edges});
}

Expected<LoweredOp> HistogramddBinEdges(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, Samples(ctx, false));
  OPPROBE_ASSIGN_OR_RETURN(auto es, EdgesFromCounts(ctx, x, ctx.Ints("bins", 1), 2));
  return ctx.Finish(es);
}

Expected<LoweredOp> HistogramddFromBinCts(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, Samples(ctx, false));
  OPPROBE_ASSIGN_OR_RETURN(auto es, EdgesFromCounts(ctx, x, ctx.Ints("bins", 1), 2));
  return ctx.Finish({Counts(b, x, es, ctx.Tensor("weight", 3), ctx.Bool("density", 4, false))});
}

Expected<LoweredOp> HistogramddFromBinTensors(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, Samples(ctx, false));
  std::vector<Instruction*> es = ctx.TensorList("bins", 1);
  if (static_cast<int64_t>(es.size()) != Dims(x)[1]) return ctx.Unsupported("one bins tensor per dimension expected");
  for (auto& e : es) {
    if (!e || e->shape.rank() != 1 || e->shape.elements() < 2)
      return ctx.Unsupported("bins must be 1-d with at least 2 edges");
    e = b.Convert(e, x->shape.element_type());
  }
  return ctx.Finish({Counts(b, x, es, ctx.Tensor("weight", 2), ctx.Bool("density", 3, false))});
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
  bin = b.Select(b.Compare(x, mxb, ComparisonDirection::kEq),
                 Full(b, PrimitiveType::S64, static_cast<double>(bins - 1), {total}), bin);
  Instruction* inside =
      b.Binary(Opcode::kAnd, b.Compare(x, mnb, ComparisonDirection::kGe), b.Compare(x, mxb, ComparisonDirection::kLe));
  bin =
      b.Select(inside, bin, Full(b, PrimitiveType::S64, static_cast<double>(bins), {total}));  // out of range: dropped
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
  if (!out || out->rank() != 1)
    return ctx.Unsupported("the output length (data-dependent) comes from the recorded output");
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

}  // namespace

const LoweringFamily& HistogramLowerings() {
  static const auto* family = new LoweringFamily{FamilyOf(__FILE__),
                                                 {
                                                     {"aten::histogram", Histogram},
                                                     {"aten::_histogramdd_bin_edges", HistogramddBinEdges},
                                                     {"aten::_histogramdd_from_bin_cts", HistogramddFromBinCts},
                                                     {"aten::_histogramdd_from_bin_tensors", HistogramddFromBinTensors},
                                                     {"aten::histc", Histc},
                                                     {"aten::bincount", Bincount},
                                                 }};
  return *family;
}
}  // namespace opprobe::analyzer::lowering
