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

}  // namespace

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

}  // namespace opprobe::analyzer::lowering
