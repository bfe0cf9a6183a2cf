// Pooling as XLA builds it: max-pool = `reduce-window` (max) with -inf padding; the indices of
// max_pool*_with_indices come from a variadic reduce-window over (value, iota) with an
// argmax reducer; the backward is `select-and-scatter` (select GE, scatter add) over the padded
// input (torch_xla BuildMaxPoolNdBackward); avg-pool = reduce-window add / count; adaptive pools
// with divisible sizes are plain pools; max_unpool is a `scatter` to the recorded indices.
#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

std::vector<int64_t> Fill(std::vector<int64_t> v, size_t n, int64_t def) {
  if (v.empty()) v.assign(n, def);
  if (v.size() == 1 && n > 1) v.assign(n, v[0]);
  return v;
}

struct PoolParams {
  std::vector<int64_t> kernel, stride, padding, dilation;
  bool ceil_mode = false;
};

// Output size of one spatial dim as ATen computes it (pooling_output_shape).
int64_t PoolOut(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// The window over all dims of an input whose last nsp dims are spatial; high padding grows so that
// ceil_mode windows fit.
hlo::Window PoolWindow(const std::vector<int64_t>& dims, const PoolParams& p) {
  size_t nsp = p.kernel.size(), lead = dims.size() - nsp;
  hlo::Window w;
  for (size_t i = 0; i < lead; ++i) w.dimensions.push_back({});
  for (size_t i = 0; i < nsp; ++i) {
    hlo::WindowDimension d;
    d.size = p.kernel[i];
    d.stride = p.stride[i];
    d.window_dilation = p.dilation[i];
    d.padding_low = p.padding[i];
    int64_t in = dims[lead + i];
    int64_t out = PoolOut(in, p.kernel[i], p.stride[i], p.padding[i], p.dilation[i], p.ceil_mode);
    int64_t needed = (out - 1) * p.stride[i] + (p.kernel[i] - 1) * p.dilation[i] + 1;
    d.padding_high = std::max<int64_t>(p.padding[i], needed - in - p.padding[i]);
    if (!p.ceil_mode) d.padding_high = p.padding[i];
    w.dimensions.push_back(d);
  }
  return w;
}

Expected<PoolParams> ReadPool(const LoweringContext& ctx, size_t nsp, size_t first, bool has_dilation) {
  PoolParams p;
  p.kernel = Fill(ctx.Ints("kernel_size", first), nsp, 1);
  p.stride = ctx.Ints("stride", first + 1);
  if (p.stride.empty()) p.stride = p.kernel;
  p.stride = Fill(p.stride, nsp, 1);
  p.padding = Fill(ctx.Ints("padding", first + 2), nsp, 0);
  p.dilation = has_dilation ? Fill(ctx.Ints("dilation", first + 3), nsp, 1) : std::vector<int64_t>(nsp, 1);
  p.ceil_mode = ctx.Bool("ceil_mode", first + (has_dilation ? 4 : 3), false);
  if (p.kernel.size() != nsp || p.stride.size() != nsp || p.padding.size() != nsp || p.dilation.size() != nsp)
    return ctx.Unsupported("pooling parameters of the wrong length");
  return p;
}

// (value, index) argmax reducer: keeps the larger value, the lower index on ties, NaN wins.
Computation* ArgMaxReducer(Builder& b, PrimitiveType vt, PrimitiveType it, bool is_max) {
  Builder sub = b.CreateSubBuilder(is_max ? "argmax" : "argmin");
  Instruction* v1 = sub.Parameter(0, Shape::Scalar(vt));
  Instruction* i1 = sub.Parameter(1, Shape::Scalar(it));
  Instruction* v2 = sub.Parameter(2, Shape::Scalar(vt));
  Instruction* i2 = sub.Parameter(3, Shape::Scalar(it));
  Instruction* better = sub.Compare(v1, v2, is_max ? ComparisonDirection::kGt : ComparisonDirection::kLt);
  Instruction* eq = sub.Compare(v1, v2, ComparisonDirection::kEq);
  Instruction* lower = sub.Compare(i1, i2, ComparisonDirection::kLt);
  Instruction* pick = sub.Binary(Opcode::kOr, better, sub.Binary(Opcode::kAnd, eq, lower));
  if (IsFloatish(vt)) {
    Instruction* nan1 = sub.Compare(v1, v1, ComparisonDirection::kNe);
    Instruction* nan2 = sub.Compare(v2, v2, ComparisonDirection::kNe);
    // v1 NaN: take it unless v2 is an earlier NaN; v2 NaN (and v1 not): take v2.
    Instruction* take1_nan =
        sub.Binary(Opcode::kAnd, nan1, sub.Binary(Opcode::kOr, sub.Unary(Opcode::kNot, nan2), lower));
    Instruction* not2 = sub.Unary(Opcode::kNot, nan2);
    pick = sub.Binary(Opcode::kOr, take1_nan, sub.Binary(Opcode::kAnd, not2, pick));
  }
  Instruction* v = sub.Select(pick, v1, v2);
  Instruction* i = sub.Select(pick, i1, i2);
  return sub.Finish(sub.Tuple({v, i}));
}

Expected<LoweredOp> MaxPoolWithIndices(const Node& n, Builder& b, size_t nsp) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  if (static_cast<size_t>(x->shape.rank()) < nsp + 1) return ctx.Unsupported("input rank too small");
  OPPROBE_ASSIGN_OR_RETURN(PoolParams p, ReadPool(ctx, nsp, 1, true));
  std::vector<int64_t> dims = Dims(x);
  PrimitiveType t = x->shape.element_type();
  hlo::Window w = PoolWindow(dims, p);
  // Flat index over the spatial dims of each (N, C) plane.
  size_t lead = dims.size() - nsp;
  std::vector<int64_t> flat(dims.begin(), dims.begin() + static_cast<long>(lead));
  int64_t plane = 1;
  for (size_t i = lead; i < dims.size(); ++i) plane *= dims[i];
  flat.push_back(plane);
  // Indices are found in u32 and converted to s64, as PyTorch/XLA does (its dumps show `min_U32`
  // reduce-windows): s64 reduce-windows are not supported everywhere (TPU).
  PrimitiveType it = flat.back() < (int64_t{1} << 32) ? PrimitiveType::U32 : PrimitiveType::S64;
  Instruction* io = b.Reshape(b.Iota(Shape::Array(it, flat), static_cast<int64_t>(lead)), dims);
  Instruction* rw = b.ReduceWindow({x, io}, {MinValue(b, t), MaxValue(b, it)}, w, ArgMaxReducer(b, t, it, true));
  return ctx.Finish({b.GetTupleElement(rw, 0), b.Convert(b.GetTupleElement(rw, 1), PrimitiveType::S64)});
}

// fractional_max_pool2d/3d: ATen's window starts per plane and dim from the plane's random sample u
// (start_j = int((j + u) * alpha) - int(u * alpha), alpha = (in - k) / (out - 1), the last window
// ending at the input's end), computed in HLO from the random_samples input; the windows are a
// `gather` of [k...] slices (of the values and of a flat-index iota) and a variadic `reduce` with
// the argmax reducer (first maximum in row-major order, as ATen's strict > scan).
Expected<LoweredOp> FractionalMaxPool(const Node& n, Builder& b, size_t nsp) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * u0, ctx.RequiredTensor("random_samples", 3));
  std::vector<int64_t> k = Fill(ctx.Ints("kernel_size", 1), nsp, 1);
  std::vector<int64_t> out = Fill(ctx.Ints("output_size", 2), nsp, 1);
  if (k.size() != nsp || out.size() != nsp) return ctx.Unsupported("kernel_size/output_size of the wrong length");
  std::vector<int64_t> dims = Dims(x);
  if (dims.size() != nsp + 1 && dims.size() != nsp + 2) return ctx.Unsupported("input must be (N,) C, spatial...");
  PrimitiveType t = x->shape.element_type();
  if (!hlo::IsFloatingPoint(t)) return ctx.Unsupported("fractional max pool needs a float input");
  const PrimitiveType S = PrimitiveType::S64;
  size_t lead = dims.size() - nsp;
  int64_t P = 1;
  for (size_t i = 0; i < lead; ++i) P *= dims[i];
  std::vector<int64_t> sp(dims.begin() + static_cast<long>(lead), dims.end());
  for (size_t i = 0; i < nsp; ++i)
    if (k[i] > sp[i] || out[i] < 1 || out[i] + k[i] - 1 > sp[i])
      return ctx.Unsupported("output_size + kernel_size too big");
  if (u0->shape.elements() != P * static_cast<int64_t>(nsp))
    return ctx.Unsupported("random_samples does not fit the input");
  Instruction* u = b.Reshape(b.Convert(u0, t), {P, static_cast<int64_t>(nsp)});
  std::vector<int64_t> xs_dims = {P};
  xs_dims.insert(xs_dims.end(), sp.begin(), sp.end());
  Instruction* xs = b.Reshape(x, xs_dims);
  // Index vectors [P, out..., 1 + nsp]: (plane, start per dim).
  std::vector<int64_t> bd = {P};
  bd.insert(bd.end(), out.begin(), out.end());
  std::vector<int64_t> bd1 = bd;
  bd1.push_back(1);
  std::vector<Instruction*> cols = {b.Reshape(b.Iota(Shape::Array(S, bd), 0), bd1)};
  for (size_t i = 0; i < nsp; ++i) {
    // The sample of this dim: 2-d uses (W, H) = (u0, u1); 3-d uses (T, H, W) = (u0, u1, u2).
    int64_t col = nsp == 2 ? (i == 0 ? 1 : 0) : static_cast<int64_t>(i);
    int64_t o = out[i];
    std::vector<int64_t> sd = {P, o};
    Instruction* us = b.Broadcast(b.Reshape(b.SliceInDim(u, col, col + 1, 1, 1), {P}), sd, {0});
    Instruction* last = Full(b, S, static_cast<double>(sp[i] - k[i]), sd);
    Instruction* start = last;
    if (o > 1) {
      Instruction* alpha = b.Broadcast(
          Div(b, Scalar(b, t, static_cast<double>(sp[i] - k[i])), Scalar(b, t, static_cast<double>(o - 1))), sd, {});
      Instruction* j = b.Iota(Shape::Array(t, sd), 1);
      Instruction* v = Sub(b, b.Convert(b.Convert(Mul(b, Add(b, j, us), alpha), PrimitiveType::S32), S),
                           b.Convert(b.Convert(Mul(b, us, alpha), PrimitiveType::S32), S));
      Instruction* is_last =
          CmpScalar(b, b.Iota(Shape::Array(S, sd), 1), static_cast<double>(o - 1), ComparisonDirection::kEq);
      start = b.Select(is_last, last, v);
    }
    cols.push_back(b.Reshape(b.Broadcast(start, bd, {0, static_cast<int64_t>(i) + 1}), bd1));
  }
  Instruction* index = b.Concatenate(cols, static_cast<int64_t>(nsp) + 1);
  hlo::GatherDimensionNumbers dn;
  for (size_t i = 0; i < nsp; ++i) dn.offset_dims.push_back(static_cast<int64_t>(nsp + 1 + i));
  dn.collapsed_slice_dims = {0};
  for (size_t i = 0; i <= nsp; ++i) dn.start_index_map.push_back(static_cast<int64_t>(i));
  dn.index_vector_dim = static_cast<int64_t>(nsp) + 1;
  std::vector<int64_t> slice = {1};
  slice.insert(slice.end(), k.begin(), k.end());
  std::vector<int64_t> gd = bd;
  gd.insert(gd.end(), k.begin(), k.end());
  Instruction* win = b.Gather(xs, index, dn, slice, Shape::Array(t, gd));
  Instruction* flat = b.Broadcast(b.Reshape(b.Iota(Shape::Array(S, {Numel(sp)}), 0), sp), xs_dims,
                                  DimRange(1, static_cast<int64_t>(nsp) + 1));
  Instruction* widx = b.Gather(flat, index, dn, slice, Shape::Array(S, gd));
  std::vector<int64_t> red = DimRange(static_cast<int64_t>(nsp) + 1, static_cast<int64_t>(2 * nsp) + 1);
  Instruction* r = b.Reduce({win, widx}, {MinValue(b, t), MaxValue(b, S)}, red, ArgMaxReducer(b, t, S, true));
  std::vector<int64_t> od(dims.begin(), dims.begin() + static_cast<long>(lead));
  od.insert(od.end(), out.begin(), out.end());
  return ctx.Finish({b.Reshape(b.GetTupleElement(r, 0), od), b.Reshape(b.GetTupleElement(r, 1), od)});
}

Expected<LoweredOp> MaxPool(const Node& n, Builder& b, size_t nsp) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  if (static_cast<size_t>(x->shape.rank()) < nsp + 1) return ctx.Unsupported("input rank too small");
  OPPROBE_ASSIGN_OR_RETURN(PoolParams p, ReadPool(ctx, nsp, 1, true));
  PrimitiveType t = x->shape.element_type();
  hlo::Window w = PoolWindow(Dims(x), p);
  return ctx.Finish({b.ReduceWindow({x}, {MinValue(b, t)}, w, b.ScalarBinaryComputation(Opcode::kMaximum, t))});
}

Expected<LoweredOp> MaxPoolWithIndicesBackward(const Node& n, Builder& b, size_t nsp) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 1));
  if (static_cast<size_t>(x->shape.rank()) < nsp + 1) return ctx.Unsupported("input rank too small");
  OPPROBE_ASSIGN_OR_RETURN(PoolParams p, ReadPool(ctx, nsp, 2, true));
  std::vector<int64_t> dims = Dims(x);
  PrimitiveType t = x->shape.element_type();
  size_t lead = dims.size() - nsp;
  bool dilated = false;
  for (int64_t d : p.dilation) dilated |= d != 1;
  if (dilated) {
    // select-and-scatter has no window dilation: scatter-add grad_output at the saved indices.
    Instruction* idx = ctx.Tensor("indices", 7);
    if (!idx) return ctx.Unsupported("dilated max-pool backward needs indices");
    std::vector<int64_t> gd = Dims(g);
    int64_t plane = 1, gplane = 1;
    for (size_t i = lead; i < dims.size(); ++i) plane *= dims[i], gplane *= gd[i];
    int64_t planes = 1;
    for (size_t i = 0; i < lead; ++i) planes *= dims[i];
    // Global index = plane_number * plane + local index; scatter into a flat zero vector.
    Instruction* local = b.Reshape(idx, {planes, gplane});
    Instruction* base =
        MulScalar(b, b.Iota(Shape::Array(PrimitiveType::S64, {planes, gplane}), 0), static_cast<double>(plane));
    Instruction* gidx = b.Reshape(Add(b, local, base), {planes * gplane, 1});
    Instruction* upd = b.Reshape(g, {planes * gplane});
    hlo::ScatterDimensionNumbers dn;
    dn.inserted_window_dims = {0};
    dn.scatter_dims_to_operand_dims = {0};
    dn.index_vector_dim = 1;
    Instruction* s =
        b.Scatter({Full(b, t, 0, {planes * plane})}, gidx, {upd}, dn, b.ScalarBinaryComputation(Opcode::kAdd, t));
    return ctx.Finish({b.Reshape(s, dims)});
  }
  hlo::Window w = PoolWindow(dims, p);
  // Pad explicitly with -inf, select-and-scatter over the padded input, slice the padding off.
  hlo::PaddingConfig cfg;
  cfg.dimensions.resize(dims.size());
  bool padded = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    cfg.dimensions[i].edge_padding_low = w.dimensions[i].padding_low;
    cfg.dimensions[i].edge_padding_high = w.dimensions[i].padding_high;
    padded |= w.dimensions[i].padding_low != 0 || w.dimensions[i].padding_high != 0;
    w.dimensions[i].padding_low = w.dimensions[i].padding_high = 0;
  }
  Instruction* operand = padded ? b.Pad(x, MinValue(b, t), cfg) : x;
  Builder sel = b.CreateSubBuilder("select");
  Instruction* s0 = sel.Parameter(0, Shape::Scalar(t));
  Instruction* s1 = sel.Parameter(1, Shape::Scalar(t));
  Computation* select = sel.Finish(sel.Compare(s0, s1, ComparisonDirection::kGe));
  Instruction* r = b.SelectAndScatter(operand, select, w, b.Convert(g, t), Scalar(b, t, 0),
                                      b.ScalarBinaryComputation(Opcode::kAdd, t));
  if (padded) {
    std::vector<int64_t> starts, limits, strides(dims.size(), 1);
    for (size_t i = 0; i < dims.size(); ++i) {
      starts.push_back(cfg.dimensions[i].edge_padding_low);
      limits.push_back(cfg.dimensions[i].edge_padding_low + dims[i]);
    }
    r = b.Slice(r, starts, limits, strides);
  }
  return ctx.Finish({r});
}

// Number of non-padding (or padding-inclusive) elements under each window, as a constant-free
// reduce-window of ones.
Instruction* WindowCounts(Builder& b, PrimitiveType t, const std::vector<int64_t>& dims, const hlo::Window& w,
                          const PoolParams& p, bool count_include_pad) {
  size_t nsp = p.kernel.size(), lead = dims.size() - nsp;
  if (count_include_pad) {
    // Count over the input padded by `padding` (not the extra ceil-mode padding).
    hlo::PaddingConfig cfg;
    cfg.dimensions.resize(dims.size());
    hlo::Window w2 = w;
    for (size_t i = 0; i < nsp; ++i) {
      cfg.dimensions[lead + i].edge_padding_low = p.padding[i];
      cfg.dimensions[lead + i].edge_padding_high = p.padding[i];
      w2.dimensions[lead + i].padding_low -= p.padding[i];
      w2.dimensions[lead + i].padding_high -= p.padding[i];
    }
    Instruction* ones = b.Pad(Full(b, t, 1, dims), Scalar(b, t, 1), cfg);
    return b.ReduceWindow({ones}, {Scalar(b, t, 0)}, w2, b.ScalarBinaryComputation(Opcode::kAdd, t));
  }
  return b.ReduceWindow({Full(b, t, 1, dims)}, {Scalar(b, t, 0)}, w, b.ScalarBinaryComputation(Opcode::kAdd, t));
}

Expected<LoweredOp> AvgPool(const Node& n, Builder& b, size_t nsp) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  if (static_cast<size_t>(x->shape.rank()) < nsp + 1) return ctx.Unsupported("input rank too small");
  OPPROBE_ASSIGN_OR_RETURN(PoolParams p, ReadPool(ctx, nsp, 1, false));
  bool include_pad = ctx.Bool("count_include_pad", 5, true);
  const Value* div = ctx.Arg("divisor_override", 6);
  PrimitiveType t = x->shape.element_type();
  std::vector<int64_t> dims = Dims(x);
  hlo::Window w = PoolWindow(dims, p);
  Instruction* sum = b.ReduceWindow({x}, {Scalar(b, t, 0)}, w, b.ScalarBinaryComputation(Opcode::kAdd, t));
  Instruction* r;
  if (div && !div->is_none() && div->kind == Value::Kind::kInt) {
    r = Div(b, sum, FullLike(b, sum, static_cast<double>(div->i)));
  } else {
    r = Div(b, sum, WindowCounts(b, t, dims, w, p, include_pad));
  }
  return ctx.Finish({r});
}

Expected<LoweredOp> AvgPoolBackward(const Node& n, Builder& b, size_t nsp) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 1));
  if (static_cast<size_t>(x->shape.rank()) < nsp + 1) return ctx.Unsupported("input rank too small");
  OPPROBE_ASSIGN_OR_RETURN(PoolParams p, ReadPool(ctx, nsp, 2, false));
  bool include_pad = ctx.Bool("count_include_pad", 6, true);
  const Value* div = ctx.Arg("divisor_override", 7);
  PrimitiveType t = x->shape.element_type();
  std::vector<int64_t> dims = Dims(x);
  size_t lead = dims.size() - nsp;
  hlo::Window w = PoolWindow(dims, p);
  Instruction* scaled;
  if (div && !div->is_none() && div->kind == Value::Kind::kInt)
    scaled = Div(b, g, FullLike(b, g, static_cast<double>(div->i)));
  else scaled = Div(b, g, WindowCounts(b, t, dims, w, p, include_pad));
  // The transpose of the window sum (XLA's AvgPoolGrad): grad dilated by the stride and padded by
  // k-1-pad (an interior/edge `pad`), then a stride-1 reduce-window add.
  hlo::PaddingConfig cfg;
  cfg.dimensions.resize(dims.size());
  hlo::Window bw;
  for (size_t i = 0; i < dims.size(); ++i) {
    hlo::WindowDimension d;
    if (i >= lead) {
      const auto& fw = w.dimensions[i];
      int64_t k_eff = (fw.size - 1) * fw.window_dilation + 1;
      d.size = fw.size;
      d.window_dilation = fw.window_dilation;
      int64_t gout = Dims(g)[i];
      int64_t expanded = (gout - 1) * fw.stride + 1;
      auto& pc = cfg.dimensions[i];
      pc.interior_padding = fw.stride - 1;
      pc.edge_padding_low = k_eff - 1 - fw.padding_low;
      pc.edge_padding_high = dims[i] + k_eff - 1 - expanded - pc.edge_padding_low;
    }
    bw.dimensions.push_back(d);
  }
  Instruction* padded = b.Pad(scaled, Scalar(b, t, 0), cfg);
  return ctx.Finish({b.ReduceWindow({padded}, {Scalar(b, t, 0)}, bw, b.ScalarBinaryComputation(Opcode::kAdd, t))});
}

// Adaptive pooling bins: start = floor(i*in/out), end = ceil((i+1)*in/out). When in % out == 0 the
// bins form a regular window (kernel = stride = in/out).
bool Regular(int64_t in, int64_t out) { return out > 0 && in % out == 0; }
int64_t BinStart(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
int64_t BinEnd(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

Expected<LoweredOp> AdaptiveAvgPool(const Node& n, Builder& b, size_t nsp) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> out = Fill(ctx.Ints("output_size", 1), nsp, 1);
  std::vector<int64_t> dims = Dims(x);
  if (dims.size() < nsp + 1 || out.size() != nsp) return ctx.Unsupported("bad output_size");
  size_t lead = dims.size() - nsp;
  PrimitiveType t = x->shape.element_type();
  bool regular = true;
  for (size_t i = 0; i < nsp; ++i) regular &= Regular(dims[lead + i], out[i]);
  if (regular) {
    hlo::Window w;
    int64_t count = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      hlo::WindowDimension d;
      if (i >= lead) {
        d.size = d.stride = dims[i] / out[i - lead];
        count *= d.size;
      }
      w.dimensions.push_back(d);
    }
    Instruction* s = b.ReduceWindow({x}, {Scalar(b, t, 0)}, w, b.ScalarBinaryComputation(Opcode::kAdd, t));
    return ctx.Finish({MulScalar(b, s, 1.0 / static_cast<double>(count))});
  }
  // General case: a matrix of bin weights per spatial dim, contracted with dot (one per dim).
  Instruction* r = x;
  for (size_t i = 0; i < nsp; ++i) {
    int64_t in = dims[lead + i], o = out[i];
    hlo::Literal m(Shape::Array(t, {in, o}));
    for (int64_t j = 0; j < o; ++j) {
      int64_t s = BinStart(j, in, o), e = BinEnd(j, in, o);
      for (int64_t k = s; k < e; ++k) m.SetFromDouble(k * o + j, 1.0 / static_cast<double>(e - s));
    }
    Instruction* wm = b.Constant(std::move(m));
    int64_t d = static_cast<int64_t>(lead + i);
    hlo::DotDimensionNumbers dn;
    dn.lhs_contracting_dimensions = {d};
    dn.rhs_contracting_dimensions = {0};
    Instruction* prod = b.Dot(r, wm, dn);  // result: other dims..., o (last)
    // move the new last dim back to position d
    std::vector<int64_t> perm;
    int64_t rank = prod->shape.rank();
    for (int64_t k = 0; k < rank - 1; ++k) {
      if (k == d) perm.push_back(rank - 1);
      perm.push_back(k);
    }
    if (d == rank - 1) perm.push_back(rank - 1);
    r = b.Transpose(prod, perm);
  }
  return ctx.Finish({r});
}

Expected<LoweredOp> AdaptiveAvgPoolBackward(const Node& n, Builder& b, size_t nsp) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 1));
  std::vector<int64_t> dims = Dims(x), gd = Dims(g);
  if (dims.size() < nsp + 1 || gd.size() != dims.size()) return ctx.Unsupported("bad ranks");
  size_t lead = dims.size() - nsp;
  PrimitiveType t = g->shape.element_type();
  // Transpose of the bin-weight contraction: dot with the transposed weight matrix per dim.
  Instruction* r = g;
  for (size_t i = 0; i < nsp; ++i) {
    int64_t in = dims[lead + i], o = gd[lead + i];
    hlo::Literal m(Shape::Array(t, {o, in}));
    for (int64_t j = 0; j < o; ++j) {
      int64_t s = BinStart(j, in, o), e = BinEnd(j, in, o);
      for (int64_t k = s; k < e; ++k) m.SetFromDouble(j * in + k, 1.0 / static_cast<double>(e - s));
    }
    Instruction* wm = b.Constant(std::move(m));
    int64_t d = static_cast<int64_t>(lead + i);
    hlo::DotDimensionNumbers dn;
    dn.lhs_contracting_dimensions = {d};
    dn.rhs_contracting_dimensions = {0};
    Instruction* prod = b.Dot(r, wm, dn);
    std::vector<int64_t> perm;
    int64_t rank = prod->shape.rank();
    for (int64_t k = 0; k < rank - 1; ++k) {
      if (k == d) perm.push_back(rank - 1);
      perm.push_back(k);
    }
    if (d == rank - 1) perm.push_back(rank - 1);
    r = b.Transpose(prod, perm);
  }
  return ctx.Finish({r});
}

Expected<LoweredOp> AdaptiveMaxPool(const Node& n, Builder& b, size_t nsp) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> out = Fill(ctx.Ints("output_size", 1), nsp, 1);
  std::vector<int64_t> dims = Dims(x);
  if (dims.size() < nsp + 1 || out.size() != nsp) return ctx.Unsupported("bad output_size");
  size_t lead = dims.size() - nsp;
  PrimitiveType t = x->shape.element_type();
  bool regular = true;
  for (size_t i = 0; i < nsp; ++i) regular &= Regular(dims[lead + i], out[i]);
  if (!regular) {
    // Uneven bins: one spatial dim at a time (last first), a masked variadic reduce over
    // (value, flat index) of [.., out, in, ..] with a constant bin-membership mask.
    Instruction* val = x;
    Instruction* idx = nullptr;
    int64_t stride = 1;
    for (int64_t i = static_cast<int64_t>(nsp) - 1; i >= 0; --i) {
      int64_t d = static_cast<int64_t>(lead) + i;
      int64_t in = dims[static_cast<size_t>(d)], o = out[static_cast<size_t>(i)];
      std::vector<int64_t> cur = Dims(val);
      std::vector<int64_t> big = cur;
      big.insert(big.begin() + d, o);
      std::vector<int64_t> map;
      map.reserve(cur.size());
      for (int64_t k = 0; k < static_cast<int64_t>(cur.size()); ++k) map.push_back(k < d ? k : k + 1);
      hlo::Literal m(Shape::Array(PrimitiveType::PRED, {o, in}));
      for (int64_t j = 0; j < o; ++j)
        for (int64_t k = BinStart(j, in, o); k < BinEnd(j, in, o); ++k) m.SetFromDouble(j * in + k, 1);
      Instruction* mb = b.Broadcast(b.Constant(std::move(m)), big, {d, d + 1});
      Instruction* flat =
          MulScalar(b, b.Iota(Shape::Array(PrimitiveType::S64, big), d + 1), static_cast<double>(stride));
      if (idx) flat = Add(b, flat, b.Broadcast(idx, big, map));
      Instruction* vb = b.Select(mb, b.Broadcast(val, big, map), b.Broadcast(MinValue(b, t), big, {}));
      flat = b.Select(mb, flat, b.Broadcast(MaxValue(b, PrimitiveType::S64), big, {}));
      Instruction* r = b.Reduce({vb, flat}, {MinValue(b, t), MaxValue(b, PrimitiveType::S64)}, {d + 1},
                                ArgMaxReducer(b, t, PrimitiveType::S64, true));
      val = b.GetTupleElement(r, 0);
      idx = b.GetTupleElement(r, 1);
      stride *= in;
    }
    return ctx.Finish({val, idx});
  }
  hlo::Window w;
  for (size_t i = 0; i < dims.size(); ++i) {
    hlo::WindowDimension d;
    if (i >= lead) d.size = d.stride = dims[i] / out[i - lead];
    w.dimensions.push_back(d);
  }
  std::vector<int64_t> flat(dims.begin(), dims.begin() + static_cast<long>(lead));
  flat.push_back(Numel(std::vector<int64_t>(dims.begin() + static_cast<long>(lead), dims.end())));
  // Indices are found in u32 and converted to s64, as PyTorch/XLA does (its dumps show `min_U32`
  // reduce-windows): s64 reduce-windows are not supported everywhere (TPU).
  PrimitiveType it = flat.back() < (int64_t{1} << 32) ? PrimitiveType::U32 : PrimitiveType::S64;
  Instruction* io = b.Reshape(b.Iota(Shape::Array(it, flat), static_cast<int64_t>(lead)), dims);
  Instruction* rw = b.ReduceWindow({x, io}, {MinValue(b, t), MaxValue(b, it)}, w, ArgMaxReducer(b, t, it, true));
  return ctx.Finish({b.GetTupleElement(rw, 0), b.Convert(b.GetTupleElement(rw, 1), PrimitiveType::S64)});
}

Expected<LoweredOp> AdaptiveMaxPoolBackward(const Node& n, Builder& b, size_t nsp) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx, ctx.RequiredTensor("indices", 2));
  std::vector<int64_t> dims = Dims(x), gd = Dims(g);
  size_t lead = dims.size() - nsp;
  PrimitiveType t = x->shape.element_type();
  int64_t plane = 1, gplane = 1, planes = 1;
  for (size_t i = lead; i < dims.size(); ++i) plane *= dims[i], gplane *= gd[i];
  for (size_t i = 0; i < lead; ++i) planes *= dims[i];
  Instruction* local = b.Reshape(idx, {planes, gplane});
  Instruction* base =
      MulScalar(b, b.Iota(Shape::Array(PrimitiveType::S64, {planes, gplane}), 0), static_cast<double>(plane));
  Instruction* gidx = b.Reshape(Add(b, local, base), {planes * gplane, 1});
  hlo::ScatterDimensionNumbers dn;
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  Instruction* s = b.Scatter({Full(b, t, 0, {planes * plane})}, gidx, {b.Reshape(b.Convert(g, t), {planes * gplane})},
                             dn, b.ScalarBinaryComputation(Opcode::kAdd, t));
  return ctx.Finish({b.Reshape(s, dims)});
}

// fractional_max_pool{2,3}d_backward(grad_output, self, kernel_size, output_size, indices): scatter-add of
// grad_output into a zero input at the saved (per-plane flat) indices.
Expected<LoweredOp> FractionalMaxPoolBackward(const Node& n, Builder& b, size_t nsp) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx, ctx.RequiredTensor("indices", 4));
  std::vector<int64_t> dims = Dims(x), gd = Dims(g);
  if (dims.size() < nsp || gd.size() != dims.size() || idx->shape.elements() != g->shape.elements())
    return ctx.Unsupported("shapes of grad_output, self and indices do not fit");
  PrimitiveType t = x->shape.element_type();
  size_t lead = dims.size() - nsp;
  int64_t plane = 1, gplane = 1, planes = 1;
  for (size_t i = lead; i < dims.size(); ++i) plane *= dims[i], gplane *= gd[i];
  for (size_t i = 0; i < lead; ++i) planes *= dims[i];
  Instruction* local = b.Reshape(b.Convert(idx, PrimitiveType::S64), {planes, gplane});
  Instruction* base =
      MulScalar(b, b.Iota(Shape::Array(PrimitiveType::S64, {planes, gplane}), 0), static_cast<double>(plane));
  Instruction* gidx = b.Reshape(Add(b, local, base), {planes * gplane, 1});
  hlo::ScatterDimensionNumbers dn;
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  Instruction* s = b.Scatter({Full(b, t, 0, {planes * plane})}, gidx, {b.Reshape(b.Convert(g, t), {planes * gplane})},
                             dn, b.ScalarBinaryComputation(Opcode::kAdd, t));
  return ctx.Finish({b.Reshape(s, dims)});
}

// max_unpool2d/3d: the values scattered to their indices in a zero tensor of the recorded output's size.
Expected<LoweredOp> MaxUnpool(const Node& n, Builder& b, size_t nsp) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx, ctx.RequiredTensor("indices", 1));
  const TensorMeta* out = ctx.OutputMeta(0);
  if (!out) return ctx.Unsupported("needs the recorded output");
  std::vector<int64_t> xd = Dims(x), od = out->sizes;
  if (xd.size() < nsp || od.size() != xd.size()) return ctx.Unsupported("rank mismatch");
  size_t lead = xd.size() - nsp;
  int64_t planes = 1, in_plane = 1, out_plane = 1;
  for (size_t i = 0; i < lead; ++i) planes *= xd[i];
  for (size_t i = lead; i < xd.size(); ++i) in_plane *= xd[i], out_plane *= od[i];
  PrimitiveType t = x->shape.element_type();
  Instruction* local = b.Reshape(b.Convert(idx, PrimitiveType::S64), {planes, in_plane});
  Instruction* base =
      MulScalar(b, b.Iota(Shape::Array(PrimitiveType::S64, {planes, in_plane}), 0), static_cast<double>(out_plane));
  Instruction* gidx = b.Reshape(Add(b, local, base), {planes * in_plane, 1});
  hlo::ScatterDimensionNumbers dn;
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  Instruction* s = b.Scatter({Full(b, t, 0, {planes * out_plane})}, gidx, {b.Reshape(x, {planes * in_plane})}, dn,
                             ReplaceComputation(b, t));
  return ctx.Finish({b.Reshape(s, od)});
}

// A pooling lowering over `kDims` spatial dims (max_pool2d: 2).
template <Expected<LoweredOp> (*kLowering)(const Node&, Builder&, size_t), size_t kDims>
Expected<LoweredOp> Pool(const Node& n, Builder& b) {
  return kLowering(n, b, kDims);
}

}  // namespace

Computation* ArgReducer(Builder& b, PrimitiveType vt, PrimitiveType it, bool is_max) {
  return ArgMaxReducer(b, vt, it, is_max);
}

const LoweringFamily& PoolingLowerings() {
  static const auto* family =
      new LoweringFamily{FamilyOf(__FILE__),
                         {
                             {"aten::max_pool1d", Pool<MaxPool, 1>},
                             {"aten::max_pool2d", Pool<MaxPool, 2>},
                             {"aten::max_pool3d", Pool<MaxPool, 3>},
                             {"aten::max_pool2d_with_indices", Pool<MaxPoolWithIndices, 2>},
                             {"aten::max_pool3d_with_indices", Pool<MaxPoolWithIndices, 3>},
                             {"aten::max_pool2d_with_indices_backward", Pool<MaxPoolWithIndicesBackward, 2>},
                             {"aten::max_pool3d_with_indices_backward", Pool<MaxPoolWithIndicesBackward, 3>},
                             {"aten::fractional_max_pool2d", Pool<FractionalMaxPool, 2>},
                             {"aten::fractional_max_pool3d", Pool<FractionalMaxPool, 3>},
                             {"aten::fractional_max_pool2d_backward", Pool<FractionalMaxPoolBackward, 2>},
                             {"aten::fractional_max_pool3d_backward", Pool<FractionalMaxPoolBackward, 3>},
                             {"aten::avg_pool1d", Pool<AvgPool, 1>},
                             {"aten::avg_pool2d", Pool<AvgPool, 2>},
                             {"aten::avg_pool3d", Pool<AvgPool, 3>},
                             {"aten::avg_pool2d_backward", Pool<AvgPoolBackward, 2>},
                             {"aten::avg_pool3d_backward", Pool<AvgPoolBackward, 3>},
                             {"aten::adaptive_avg_pool1d", Pool<AdaptiveAvgPool, 1>},
                             {"aten::adaptive_avg_pool2d", Pool<AdaptiveAvgPool, 2>},
                             {"aten::adaptive_avg_pool3d", Pool<AdaptiveAvgPool, 3>},
                             {"aten::_adaptive_avg_pool2d", Pool<AdaptiveAvgPool, 2>},
                             {"aten::_adaptive_avg_pool3d", Pool<AdaptiveAvgPool, 3>},
                             {"aten::_adaptive_avg_pool2d_backward", Pool<AdaptiveAvgPoolBackward, 2>},
                             {"aten::_adaptive_avg_pool3d_backward", Pool<AdaptiveAvgPoolBackward, 3>},
                             {"aten::adaptive_max_pool1d", Pool<AdaptiveMaxPool, 1>},
                             {"aten::adaptive_max_pool2d", Pool<AdaptiveMaxPool, 2>},
                             {"aten::adaptive_max_pool3d", Pool<AdaptiveMaxPool, 3>},
                             {"aten::adaptive_max_pool2d_backward", Pool<AdaptiveMaxPoolBackward, 2>},
                             {"aten::adaptive_max_pool3d_backward", Pool<AdaptiveMaxPoolBackward, 3>},
                             {"aten::max_unpool2d", Pool<MaxUnpool, 2>},
                             {"aten::max_unpool3d", Pool<MaxUnpool, 3>},
                         }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
