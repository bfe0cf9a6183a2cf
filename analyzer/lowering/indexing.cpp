// Indexing as XLA builds it: embedding/embedding_bag/index_select/index/gather/take are `gather`; index_put,
// put, scatter*, index_add/index_copy and embedding backward are `scatter` (add or replace update
// computation); masked_fill/where-like ops are `select`; isin and searchsorted/bucketize compare and reduce. Ops whose
// output size depends on data (nonzero, masked_select, unique, boolean-mask index) lower to XLA's bounded form: a
// stable `sort` that moves the selected elements first, then `set-dimension-size` with their count (torch_xla
// BuildNonZero / BuildMaskedSelect); the result is marked dynamic-shape.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

// Negative indices wrap (index.Tensor, take): idx < 0 ? idx + size : idx.
Instruction* WrapIndex(Builder& b, Instruction* idx, int64_t size) {
  Instruction* neg = CmpScalar(b, idx, 0, ComparisonDirection::kLt);
  return b.Select(neg, AddScalar(b, idx, static_cast<double>(size)), idx);
}

// Coordinates [N, rank] (s64) for every element of an array of `dims`, with coordinate `dim`
// replaced by `index` (flattened): the full scatter/gather index of torch.gather/scatter.
Instruction* FullIndex(Builder& b, Instruction* index, const std::vector<int64_t>& dims, int64_t dim) {
  int64_t n = Numel(dims);
  std::vector<Instruction*> cols;
  for (int64_t k = 0; k < static_cast<int64_t>(dims.size()); ++k) {
    Instruction* col =
        k == dim ? b.Convert(index, PrimitiveType::S64) : b.Iota(Shape::Array(PrimitiveType::S64, dims), k);
    cols.push_back(b.Reshape(col, {n, 1}));
  }
  return cols.size() == 1 ? cols[0] : b.Concatenate(cols, 1);
}

Computation* UpdateComputation(const LoweringContext& ctx, Builder& b, PrimitiveType t, const std::string& reduce) {
  if (reduce.empty() || reduce == "none") return ReplaceComputation(b, t);
  if (reduce == "add" || reduce == "sum" || reduce == "mean")
    return b.ScalarBinaryComputation(t == PrimitiveType::PRED ? Opcode::kOr : Opcode::kAdd, t);
  if (reduce == "multiply" || reduce == "prod")
    return b.ScalarBinaryComputation(t == PrimitiveType::PRED ? Opcode::kAnd : Opcode::kMultiply, t);
  if (reduce == "amax") return b.ScalarBinaryComputation(Opcode::kMaximum, t);
  if (reduce == "amin") return b.ScalarBinaryComputation(Opcode::kMinimum, t);
  (void)ctx;
  return nullptr;
}

// Index tensors of index/index_put broadcast together; indexed dims of self.
struct Advanced {
  std::vector<int64_t> indexed;   // dims of self that are indexed, in order
  std::vector<Instruction*> idx;  // s64, broadcast to `bdims`
  std::vector<int64_t> bdims;
  bool adjacent = true;
  bool has_bool = false;
};

Expected<Advanced> ReadIndices(const LoweringContext& ctx, Instruction* self, size_t pos) {
  Builder& b = ctx.builder;
  Advanced a;
  std::vector<Instruction*> list = ctx.TensorList("indices", pos);
  const Value* v = ctx.Arg("indices", pos);
  if (!v || v->kind != Value::Kind::kTensorList) return ctx.Unsupported("indices must be a tensor list");
  std::vector<int64_t> sd = Dims(self);
  int64_t dim = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    Instruction* t = list[i];
    if (!t) {
      ++dim;
      continue;
    }
    if (t->shape.element_type() == PrimitiveType::PRED || t->shape.element_type() == PrimitiveType::U8) {
      a.has_bool = true;
      dim += t->shape.rank();
      continue;
    }
    if (dim >= static_cast<int64_t>(sd.size())) return ctx.Unsupported("too many indices");
    a.indexed.push_back(dim);
    a.idx.push_back(WrapIndex(b, b.Convert(t, PrimitiveType::S64), sd[static_cast<size_t>(dim)]));
    ++dim;
  }
  for (Instruction* t : a.idx) a.bdims = BroadcastShapes(a.bdims, Dims(t));
  for (auto& t : a.idx) t = Bcast(b, t, a.bdims);
  for (size_t i = 1; i < a.indexed.size(); ++i) a.adjacent &= a.indexed[i] == a.indexed[i - 1] + 1;
  return a;
}

// The stacked start indices [B..., k] of an advanced index.
Instruction* StackIndices(Builder& b, const Advanced& a) {
  std::vector<int64_t> d = a.bdims;
  d.push_back(1);
  std::vector<Instruction*> cols;
  cols.reserve(a.idx.size());
  for (Instruction* t : a.idx) cols.push_back(b.Reshape(t, d));
  return cols.size() == 1 ? cols[0] : b.Concatenate(cols, static_cast<int64_t>(a.bdims.size()));
}

// The bounded compaction of XLA's dynamic-shape lowerings: a stable sort of (!keep, iota) puts
// the positions to keep first; returns the permuted iota and the kept count (s32 scalar).
std::pair<Instruction*, Instruction*> CompactPositions(Builder& b, Instruction* keep_flat) {
  int64_t n = keep_flat->shape.dimensions()[0];
  Instruction* key = b.Convert(b.Unary(Opcode::kNot, keep_flat), PrimitiveType::S32);
  Instruction* io = b.Iota(Shape::Array(PrimitiveType::S64, {n}), 0);
  Instruction* s = b.Sort({key, io}, 0, SortComparator(b, {PrimitiveType::S32, PrimitiveType::S64}, false), true);
  Instruction* perm = b.GetTupleElement(s, 1);
  Instruction* count = ReduceSum(b, b.Convert(keep_flat, PrimitiveType::S32), {0});
  return {perm, count};
}

// A boolean mask as pred, broadcast to `dims` and flattened: [numel(dims)] (masked_select, masked_scatter and its
// backward).
Instruction* FlatMask(Builder& b, Instruction* mask, const std::vector<int64_t>& dims) {
  return b.Reshape(Bcast(b, b.Convert(mask, PrimitiveType::PRED), dims), {Numel(dims)});
}

Instruction* Gather1d(Builder& b, Instruction* flat, Instruction* idx) {
  int64_t n = idx->shape.dimensions()[0];
  hlo::GatherDimensionNumbers dn;
  dn.collapsed_slice_dims = {0};
  dn.start_index_map = {0};
  dn.index_vector_dim = 1;
  return b.Gather(flat, b.Reshape(idx, {n, 1}), dn, {1}, Shape::Array(flat->shape.element_type(), {n}));
}

Expected<LoweredOp> Embedding(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * w, ctx.RequiredTensor("weight", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx, ctx.RequiredTensor("indices", 1));
  if (w->shape.rank() != 2) return ctx.Unsupported("weight must be 2-d");
  std::vector<int64_t> id = Dims(idx);
  int64_t r = static_cast<int64_t>(id.size());
  std::vector<int64_t> id1 = id;
  id1.push_back(1);
  hlo::GatherDimensionNumbers dn;
  dn.offset_dims = {r};
  dn.collapsed_slice_dims = {0};
  dn.start_index_map = {0};
  dn.index_vector_dim = r;
  std::vector<int64_t> out = id;
  out.push_back(Dims(w)[1]);
  Instruction* g = b.Gather(w, b.Reshape(b.Convert(idx, PrimitiveType::S64), id1), dn, {1, Dims(w)[1]},
                            Shape::Array(w->shape.element_type(), out));
  return ctx.Finish({g});
}

Expected<LoweredOp> EmbeddingDenseBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx, ctx.RequiredTensor("indices", 1));
  int64_t num = ctx.Int("num_weights", 2, 0);
  int64_t pad = ctx.Int("padding_idx", 3, -1);
  PrimitiveType t = g->shape.element_type();
  int64_t cnt = idx->shape.elements();
  int64_t d = Dims(g).back();
  Instruction* fi = b.Reshape(b.Convert(idx, PrimitiveType::S64), {cnt, 1});
  Instruction* upd = b.Reshape(g, {cnt, d});
  if (pad >= 0) {
    Instruction* keep = CmpScalar(b, b.Reshape(fi, {cnt}), static_cast<double>(pad), ComparisonDirection::kNe);
    upd = b.Select(b.Broadcast(keep, {cnt, d}, {0}), upd, Full(b, t, 0, {cnt, d}));
  }
  if (ctx.Bool("scale_grad_by_freq", 4, false)) {
    hlo::ScatterDimensionNumbers cdn;
    cdn.inserted_window_dims = {0};
    cdn.scatter_dims_to_operand_dims = {0};
    cdn.index_vector_dim = 1;
    Instruction* counts =
        b.Scatter({Full(b, t, 0, {num})}, fi, {Full(b, t, 1, {cnt})}, cdn, b.ScalarBinaryComputation(Opcode::kAdd, t));
    Instruction* per = Gather1d(b, counts, b.Reshape(fi, {cnt}));
    upd = Div(b, upd, b.Broadcast(per, {cnt, d}, {0}));
  }
  hlo::ScatterDimensionNumbers dn;
  dn.update_window_dims = {1};
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  Instruction* s = b.Scatter({Full(b, t, 0, {num, d})}, fi, {upd}, dn, b.ScalarBinaryComputation(Opcode::kAdd, t));
  return ctx.Finish({s});
}

Expected<LoweredOp> IndexSelect(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx, ctx.RequiredTensor("index", 2));
  int64_t r = x->shape.rank();
  auto d = WrapDim(ctx.Int("dim", 1, 0), r);
  if (!d) return ctx.Unsupported("dimension out of range");
  if (r == 0) return ctx.Finish({x});
  std::vector<int64_t> xd = Dims(x);
  int64_t cnt = idx->shape.elements();
  hlo::GatherDimensionNumbers dn;
  for (int64_t i = 0; i < r; ++i)
    if (i != *d) dn.offset_dims.push_back(i);
  dn.collapsed_slice_dims = {*d};
  dn.start_index_map = {*d};
  dn.index_vector_dim = 1;
  std::vector<int64_t> slice = xd;
  slice[static_cast<size_t>(*d)] = 1;
  std::vector<int64_t> out = xd;
  out[static_cast<size_t>(*d)] = cnt;
  Instruction* g = b.Gather(x, b.Reshape(b.Convert(idx, PrimitiveType::S64), {cnt, 1}), dn, slice,
                            Shape::Array(x->shape.element_type(), out));
  return ctx.Finish({g});
}

Expected<LoweredOp> Gather(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx, ctx.RequiredTensor("index", 2));
  int64_t r = x->shape.rank();
  auto d = WrapDim(ctx.Int("dim", 1, 0), r);
  if (!d) return ctx.Unsupported("dimension out of range");
  std::vector<int64_t> id = Dims(idx);
  if (r == 0) return ctx.Finish({b.Reshape(x, id)});
  int64_t cnt = Numel(id);
  Instruction* full = FullIndex(b, idx, id, *d);
  hlo::GatherDimensionNumbers dn;
  for (int64_t i = 0; i < r; ++i) {
    dn.collapsed_slice_dims.push_back(i);
    dn.start_index_map.push_back(i);
  }
  dn.index_vector_dim = 1;
  // Each dimension is sliced by 1, or by 0 where x has none: an empty index (PyTorch's empty result) into an empty
  // dimension reads nothing, and XLA refuses a slice larger than its dimension.
  std::vector<int64_t> slice;
  for (int64_t e : Dims(x)) slice.push_back(std::min<int64_t>(1, e));
  Instruction* g = b.Gather(x, full, dn, slice, Shape::Array(x->shape.element_type(), {cnt}));
  return ctx.Finish({b.Reshape(g, id)});
}

// scatter (src or value, optionally with `reduce`), scatter_reduce, and with `add` scatter_add.
Expected<LoweredOp> LowerScatter(const Node& n, Builder& b, bool add) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx, ctx.RequiredTensor("index", 2));
  int64_t r = x->shape.rank();
  auto d = WrapDim(ctx.Int("dim", 1, 0), r);
  if (!d) return ctx.Unsupported("dimension out of range");
  PrimitiveType t = x->shape.element_type();
  std::vector<int64_t> id = Dims(idx);
  int64_t cnt = Numel(id);
  std::string reduce = ctx.String("reduce", 4);
  if (add) reduce = "add";
  bool include_self = ctx.Bool("include_self", 5, true);
  // Updates: src sliced to the index shape, or the scalar value.
  Instruction* upd;
  if (Instruction* src = ctx.Tensor("src", 3)) {
    std::vector<int64_t> zeros(id.size(), 0), ones(id.size(), 1);
    upd = b.Convert(src, t);
    if (Dims(upd) != id) upd = b.Slice(upd, zeros, id, ones);
  } else {
    const Value* v = ctx.Arg("value", 3);
    if (!v) return ctx.Unsupported("needs src or value");
    upd = b.Broadcast(ScalarOf(b, t, *v), id, {});
  }
  if (r == 0) {
    if (cnt == 0) return ctx.Finish({x});
    return ctx.Finish({b.Reshape(upd, {})});
  }
  Instruction* full = FullIndex(b, idx, id, *d);
  Instruction* flat_upd = b.Reshape(upd, {cnt});
  hlo::ScatterDimensionNumbers dn;
  for (int64_t i = 0; i < r; ++i) {
    dn.inserted_window_dims.push_back(i);
    dn.scatter_dims_to_operand_dims.push_back(i);
  }
  dn.index_vector_dim = 1;
  Computation* comp = UpdateComputation(ctx, b, t, reduce);
  if (!comp) return ctx.Unsupported("unknown reduce " + reduce);
  Instruction* base = x;
  if (!include_self && !reduce.empty()) {
    // Positions that receive updates start from the reduction's identity.
    double ident = reduce == "prod" || reduce == "multiply" ? 1 : 0;
    Instruction* id_v = reduce == "amax"   ? b.Broadcast(MinValue(b, t), {cnt}, {})
                        : reduce == "amin" ? b.Broadcast(MaxValue(b, t), {cnt}, {})
                                           : Full(b, t, ident, {cnt});
    base = b.Scatter({x}, full, {id_v}, dn, ReplaceComputation(b, t));
  }
  Instruction* s = b.Scatter({base}, full, {flat_upd}, dn, comp);
  if (reduce == "mean") {
    Instruction* ones = Full(b, t, 1, {cnt});
    Instruction* cnt0 = include_self ? FullLike(b, x, 1) : FullLike(b, x, 0);
    Instruction* counts = b.Scatter({cnt0}, full, {ones}, dn, b.ScalarBinaryComputation(Opcode::kAdd, t));
    Instruction* safe = b.Binary(Opcode::kMaximum, counts, FullLike(b, counts, 1));
    s = hlo::IsInteger(t) ? Div(b, s, safe) : Div(b, s, safe);
  }
  return ctx.Finish({s});
}

Expected<LoweredOp> Scatter(const Node& n, Builder& b) { return LowerScatter(n, b, false); }
Expected<LoweredOp> ScatterAdd(const Node& n, Builder& b) { return LowerScatter(n, b, true); }

// The gather of an advanced index `a` into x (PyTorch's rules: the broadcast index dims replace the indexed dims
// where those are adjacent, else they lead). `bpos` is set to where the broadcast dims start in the result.
Instruction* AdvancedGather(Builder& b, Instruction* x, const Advanced& a, int64_t* bpos) {
  std::vector<int64_t> xd = Dims(x);
  int64_t r = x->shape.rank();
  Instruction* start = StackIndices(b, a);
  int64_t nb = static_cast<int64_t>(a.bdims.size());
  hlo::GatherDimensionNumbers dn;
  dn.collapsed_slice_dims = a.indexed;
  dn.start_index_map = a.indexed;
  dn.index_vector_dim = nb;
  std::vector<int64_t> slice = xd;
  // A collapsed dimension is sliced by 1, or by 0 where x has none (XLA refuses a slice larger than its dimension;
  // an index into an empty dimension can only be an empty index tensor, so nothing is read).
  for (int64_t d : a.indexed) slice[static_cast<size_t>(d)] = std::min<int64_t>(1, xd[static_cast<size_t>(d)]);
  std::vector<int64_t> rest;  // non-indexed dims of x
  for (int64_t i = 0; i < r; ++i)
    if (std::find(a.indexed.begin(), a.indexed.end(), i) == a.indexed.end()) rest.push_back(i);
  std::vector<int64_t> out;
  int64_t first = a.indexed.front();
  if (a.adjacent) {
    for (int64_t i = 0; i < first; ++i) {
      dn.offset_dims.push_back(i);
      out.push_back(xd[static_cast<size_t>(i)]);
    }
    out.insert(out.end(), a.bdims.begin(), a.bdims.end());
    int64_t pos = first + nb;
    for (int64_t i : rest)
      if (i > first) {
        dn.offset_dims.push_back(pos++);
        out.push_back(xd[static_cast<size_t>(i)]);
      }
    if (bpos) *bpos = first;
  } else {
    out = a.bdims;
    int64_t pos = nb;
    for (int64_t i : rest) {
      dn.offset_dims.push_back(pos++);
      out.push_back(xd[static_cast<size_t>(i)]);
    }
    if (bpos) *bpos = 0;
  }
  return b.Gather(x, start, dn, slice, Shape::Array(x->shape.element_type(), out));
}

// x[..., mask, ...]: a boolean mask after full slices (None entries), optionally with integer index tensors that
// broadcast against it (0-d or one element). As in PyTorch, the mask stands for its nonzero() coordinates, one index
// tensor per mask dimension; their count depends on the data, so they are the bounded compaction of XLA's
// dynamic-shape lowerings (every mask position, the selected ones first) and the result's broadcast dimension gets
// set-dimension-size with the selected count.
Expected<LoweredOp> MaskAmongIndices(LoweringContext& ctx, Instruction* x, const std::vector<Instruction*>& list) {
  Builder& b = ctx.builder;
  std::vector<int64_t> xd = Dims(x);
  Advanced a;
  Instruction* count = nullptr;
  int64_t rows = 0;
  int64_t dim = 0;
  for (Instruction* t : list) {
    if (!t) {
      ++dim;
      continue;
    }
    bool is_mask = t->shape.element_type() == PrimitiveType::PRED || t->shape.element_type() == PrimitiveType::U8;
    int64_t k = is_mask ? t->shape.rank() : 1;
    if (dim + k > static_cast<int64_t>(xd.size())) return ctx.Unsupported("too many indices");
    if (!is_mask) {
      if (t->shape.elements() != 1)
        return ctx.Unsupported("a boolean mask index with an integer index tensor of more than one element");
      a.indexed.push_back(dim);
      a.idx.push_back(WrapIndex(b, b.Reshape(b.Convert(t, PrimitiveType::S64), {1}), xd[static_cast<size_t>(dim)]));
      ++dim;
      continue;
    }
    if (count) return ctx.Unsupported("more than one boolean mask index");
    if (k == 0) return ctx.Unsupported("a 0-d boolean mask index with other indices");
    std::vector<int64_t> md = Dims(t);
    for (int64_t j = 0; j < k; ++j)
      if (md[static_cast<size_t>(j)] != xd[static_cast<size_t>(dim + j)])
        return ctx.Unsupported("the boolean mask's shape does not match the indexed dimensions");
    rows = Numel(md);
    auto [perm, n_true] = CompactPositions(b, b.Reshape(b.Convert(t, PrimitiveType::PRED), {rows}));
    count = n_true;
    // Coordinate j of flat position p: (p / stride_j) % size_j.
    int64_t stride = rows;
    for (int64_t j = 0; j < k; ++j) {
      int64_t size = md[static_cast<size_t>(j)];
      stride = size == 0 ? 0 : stride / size;
      Instruction* c = perm;
      if (stride > 1)
        c = b.Binary(Opcode::kDivide, c, Full(b, PrimitiveType::S64, static_cast<double>(stride), {rows}));
      if (j > 0) c = b.Binary(Opcode::kRemainder, c, Full(b, PrimitiveType::S64, static_cast<double>(size), {rows}));
      a.indexed.push_back(dim + j);
      a.idx.push_back(c);
    }
    dim += k;
  }
  if (!count) return ctx.Unsupported("no boolean mask index");
  a.bdims = {rows};
  for (auto& t : a.idx) t = Bcast(b, t, a.bdims);
  for (size_t i = 1; i < a.indexed.size(); ++i) a.adjacent &= a.indexed[i] == a.indexed[i - 1] + 1;
  int64_t bpos = 0;
  Instruction* g = AdvancedGather(b, x, a, &bpos);
  OPPROBE_ASSIGN_OR_RETURN(LoweredOp op, ctx.Finish({b.SetDimensionSize(g, count, bpos)}));
  op.dynamic_shape = true;
  op.note = fmt::format("boolean-mask index: bounded by {} positions", rows);
  return op;
}

Expected<LoweredOp> Index(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<Instruction*> list = ctx.TensorList("indices", 1);
  bool other_than_one_mask = list.size() != 1 || !list[0];
  for (Instruction* t : list)  // (before ReadIndices, which would build the integer indices' wrap for nothing)
    if (other_than_one_mask && t &&
        (t->shape.element_type() == PrimitiveType::PRED || t->shape.element_type() == PrimitiveType::U8))
      return MaskAmongIndices(ctx, x, list);
  OPPROBE_ASSIGN_OR_RETURN(Advanced a, ReadIndices(ctx, x, 1));
  std::vector<int64_t> xd = Dims(x);
  if (a.has_bool) {
    // A single boolean mask over the leading dims: bounded compaction of the selected rows.
    Instruction* mask = b.Convert(list[0], PrimitiveType::PRED);
    int64_t mr = mask->shape.rank();
    int64_t rows = Numel(Dims(mask));
    std::vector<int64_t> rest(xd.begin() + mr, xd.end());
    int64_t inner = Numel(rest);
    auto [perm, count] = CompactPositions(b, b.Reshape(mask, {rows}));
    std::vector<int64_t> flat = {rows};
    flat.insert(flat.end(), rest.begin(), rest.end());
    Instruction* xf = b.Reshape(x, flat);
    hlo::GatherDimensionNumbers dn;
    for (size_t i = 0; i < rest.size(); ++i) dn.offset_dims.push_back(static_cast<int64_t>(i + 1));
    dn.collapsed_slice_dims = {0};
    dn.start_index_map = {0};
    dn.index_vector_dim = 1;
    std::vector<int64_t> slice = flat;
    slice[0] = 1;
    Instruction* g = b.Gather(xf, b.Reshape(perm, {rows, 1}), dn, slice, Shape::Array(x->shape.element_type(), flat));
    (void)inner;
    Instruction* r2 = b.SetDimensionSize(g, count, 0);
    OPPROBE_ASSIGN_OR_RETURN(LoweredOp op, ctx.Finish({r2}));
    op.dynamic_shape = true;
    op.note = fmt::format("boolean-mask index: bounded by {} rows", rows);
    return op;
  }
  if (a.indexed.empty()) return ctx.Finish({x});
  return ctx.Finish({AdvancedGather(b, x, a, nullptr)});
}

Expected<LoweredOp> IndexPut(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * vals0, ctx.RequiredTensor("values", 2));
  bool accumulate = ctx.Bool("accumulate", 3, false);
  PrimitiveType t = x->shape.element_type();
  Instruction* vals = b.Convert(vals0, t);
  OPPROBE_ASSIGN_OR_RETURN(Advanced a, ReadIndices(ctx, x, 1));
  std::vector<int64_t> xd = Dims(x);
  int64_t r = x->shape.rank();
  if (a.has_bool) {
    // x[mask] = v with a single-element v: a static-shape select (torchax takes the same path).
    std::vector<Instruction*> list = ctx.TensorList("indices", 1);
    if (list.size() != 1 || !list[0]) return ctx.Unsupported("boolean mask index mixed with other indices");
    Instruction* mask = b.Convert(list[0], PrimitiveType::PRED);
    int64_t mrank = mask->shape.rank();
    std::vector<int64_t> rest_dims(xd.begin() + mrank, xd.end());
    bool one_row = vals->shape.rank() <= static_cast<int64_t>(rest_dims.size()) || Dims(vals)[0] == 1;
    if (vals->shape.elements() != 1 && one_row) {
      // The same row for every selected position: a static-shape select.
      Instruction* m = b.Broadcast(mask, xd, DimRange(0, mrank));
      std::vector<int64_t> rmap = DimRange(mrank, mrank + static_cast<int64_t>(rest_dims.size()));
      // The trailing (at most rest_dims.size()) dims of vals; one vector, so both iterators are
      // into the same storage.
      std::vector<int64_t> vd = Dims(vals);
      int64_t keep = std::min<int64_t>(vals->shape.rank(), static_cast<int64_t>(rest_dims.size()));
      std::vector<int64_t> row_dims(vd.end() - keep, vd.end());
      Instruction* row = Bcast(b, b.Reshape(vals, row_dims), rest_dims);
      Instruction* v = b.Broadcast(row, xd, rmap);
      if (accumulate) v = Add(b, x, v);
      return ctx.Finish({b.Select(m, v, x)});
    }
    if (vals->shape.elements() != 1) {
      // x[mask] = values: the selected positions (bounded compaction, as XLA's dynamic-shape
      // lowerings) receive the values in order; their count is the recorded values' length.
      int64_t mr = mask->shape.rank();
      int64_t rows = Numel(Dims(mask));
      std::vector<int64_t> rest(xd.begin() + mr, xd.end());
      int64_t count = vals->shape.rank() > static_cast<int64_t>(rest.size()) ? Dims(vals)[0] : 1;
      if (count > rows) return ctx.Unsupported("more values than mask positions");
      auto [perm, n_true] = CompactPositions(b, b.Reshape(mask, {rows}));
      (void)n_true;
      Instruction* where = b.Reshape(b.SliceInDim(perm, 0, count, 1, 0), {count, 1});
      std::vector<int64_t> flat = {rows};
      flat.insert(flat.end(), rest.begin(), rest.end());
      std::vector<int64_t> ud = {count};
      ud.insert(ud.end(), rest.begin(), rest.end());
      hlo::ScatterDimensionNumbers dn;
      for (size_t i = 0; i < rest.size(); ++i) dn.update_window_dims.push_back(static_cast<int64_t>(i + 1));
      dn.inserted_window_dims = {0};
      dn.scatter_dims_to_operand_dims = {0};
      dn.index_vector_dim = 1;
      Instruction* s =
          b.Scatter({b.Reshape(x, flat)}, where, {Bcast(b, vals, ud)}, dn,
                    accumulate ? b.ScalarBinaryComputation(t == PrimitiveType::PRED ? Opcode::kOr : Opcode::kAdd, t)
                               : ReplaceComputation(b, t));
      OPPROBE_ASSIGN_OR_RETURN(LoweredOp op, ctx.Finish({b.Reshape(s, xd)}));
      op.dynamic_shape = true;
      op.note = fmt::format("boolean-mask assignment of {} values; positions depend on the data", count);
      return op;
    }
    std::vector<int64_t> map = AllDims(mask);
    Instruction* m = b.Broadcast(mask, xd, map);
    Instruction* v = b.Broadcast(b.Reshape(vals, {}), xd, {});
    if (accumulate) v = Add(b, x, v);
    return ctx.Finish({b.Select(m, v, x)});
  }
  if (a.indexed.empty()) return ctx.Finish({Bcast(b, vals, xd)});
  int64_t nb = static_cast<int64_t>(a.bdims.size());
  std::vector<int64_t> rest;
  for (int64_t i = 0; i < r; ++i)
    if (std::find(a.indexed.begin(), a.indexed.end(), i) == a.indexed.end()) rest.push_back(i);
  // The shape x[indices] has (as torch orders it); values broadcast to it.
  std::vector<int64_t> idx_shape;
  int64_t first = a.indexed.front();
  std::vector<int64_t> window_dims;  // positions of `rest` dims in idx_shape
  if (a.adjacent) {
    for (int64_t i = 0; i < first; ++i) {
      window_dims.push_back(static_cast<int64_t>(idx_shape.size()));
      idx_shape.push_back(xd[static_cast<size_t>(i)]);
    }
    idx_shape.insert(idx_shape.end(), a.bdims.begin(), a.bdims.end());
    for (int64_t i : rest)
      if (i > first) {
        window_dims.push_back(static_cast<int64_t>(idx_shape.size()));
        idx_shape.push_back(xd[static_cast<size_t>(i)]);
      }
  } else {
    idx_shape = a.bdims;
    for (int64_t i : rest) {
      window_dims.push_back(static_cast<int64_t>(idx_shape.size()));
      idx_shape.push_back(xd[static_cast<size_t>(i)]);
    }
  }
  Instruction* upd = Bcast(b, vals, idx_shape);
  hlo::ScatterDimensionNumbers dn;
  dn.update_window_dims = window_dims;
  dn.inserted_window_dims = a.indexed;
  dn.scatter_dims_to_operand_dims = a.indexed;
  dn.index_vector_dim = nb;
  Instruction* s =
      b.Scatter({x}, StackIndices(b, a), {upd}, dn,
                accumulate ? b.ScalarBinaryComputation(t == PrimitiveType::PRED ? Opcode::kOr : Opcode::kAdd, t)
                           : ReplaceComputation(b, t));
  return ctx.Finish({s});
}

Expected<LoweredOp> IndexAlong(const Node& n, Builder& b, bool add) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx, ctx.RequiredTensor("index", 2));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * src0, ctx.RequiredTensor("source", 3));
  int64_t r = x->shape.rank();
  auto d = WrapDim(ctx.Int("dim", 1, 0), r);
  if (!d) return ctx.Unsupported("dimension out of range");
  PrimitiveType t = x->shape.element_type();
  Instruction* src = b.Convert(src0, t);
  if (add) {
    const Value* alpha = ctx.Arg("alpha", 4);
    if (alpha && !alpha->is_none() && alpha->AsDouble() != 1)
      src = Mul(b, src, b.Broadcast(ScalarOf(b, t, *alpha), Dims(src), {}));
  }
  if (r == 0) return ctx.Finish({add ? Add(b, x, b.Reshape(src, {})) : b.Reshape(src, {})});
  int64_t cnt = idx->shape.elements();
  hlo::ScatterDimensionNumbers dn = ScatterAlongDim(*d, r);
  Instruction* s = b.Scatter({x}, b.Reshape(b.Convert(idx, PrimitiveType::S64), {cnt, 1}), {src}, dn,
                             add ? b.ScalarBinaryComputation(t == PrimitiveType::PRED ? Opcode::kOr : Opcode::kAdd, t)
                                 : ReplaceComputation(b, t));
  return ctx.Finish({s});
}

Expected<LoweredOp> IndexAdd(const Node& n, Builder& b) { return IndexAlong(n, b, true); }
Expected<LoweredOp> IndexCopy(const Node& n, Builder& b) { return IndexAlong(n, b, false); }

// index_reduce (prod, mean, amax, amin): a scatter along `dim` with the reduction's combiner; with
// include_self=False the indexed positions first get the identity (a replace scatter). mean divides
// by the number of contributions (plus one for self), flooring for integers as torch does.
Expected<LoweredOp> IndexReduce(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx, ctx.RequiredTensor("index", 2));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * src0, ctx.RequiredTensor("source", 3));
  std::string reduce = ctx.String("reduce", 4);
  bool include_self = ctx.Bool("include_self", 5, true);
  std::vector<int64_t> xd0 = Dims(x0);
  auto w = WrapDim(ctx.Int("dim", 1, 0), x0->shape.rank());
  if (!w) return ctx.Unsupported("dimension out of range");
  PrimitiveType t = x0->shape.element_type();
  if (t == PrimitiveType::PRED) return ctx.Unsupported("bool index_reduce");
  int64_t cnt = idx->shape.elements();
  // A 0-d self (and source) is a [1] one.
  Instruction* x = x0->shape.rank() == 0 ? b.Reshape(x0, {1}) : x0;
  Instruction* src = b.Convert(src0, t);
  if (src->shape.rank() == 0) src = b.Reshape(src, {1});
  int64_t d = *w;
  std::vector<int64_t> xd = Dims(x);
  int64_t r = x->shape.rank();
  if (src->shape.rank() != r || Dims(src)[static_cast<size_t>(d)] != cnt)
    return ctx.Unsupported("source does not fit index");
  Opcode op;
  Instruction* ident;
  if (reduce == "prod") op = Opcode::kMultiply, ident = Scalar(b, t, 1);
  else if (reduce == "mean") op = Opcode::kAdd, ident = Scalar(b, t, 0);
  else if (reduce == "amax") op = Opcode::kMaximum, ident = MinValue(b, t);
  else if (reduce == "amin") op = Opcode::kMinimum, ident = MaxValue(b, t);
  else return ctx.Unsupported("unknown reduce " + reduce);
  Instruction* where = b.Reshape(b.Convert(idx, PrimitiveType::S64), {cnt, 1});
  hlo::ScatterDimensionNumbers dn = ScatterAlongDim(d, r);
  Instruction* base = x;
  if (!include_self) base = b.Scatter({x}, where, {b.Broadcast(ident, Dims(src), {})}, dn, ReplaceComputation(b, t));
  Instruction* s = b.Scatter({base}, where, {src}, dn, b.ScalarBinaryComputation(op, t));
  if (reduce == "mean") {
    int64_t size = xd[static_cast<size_t>(d)];
    hlo::ScatterDimensionNumbers cdn;
    cdn.inserted_window_dims = {0};
    cdn.scatter_dims_to_operand_dims = {0};
    cdn.index_vector_dim = 1;
    Instruction* counts = b.Scatter({Full(b, t, include_self ? 1 : 0, {size})}, where, {Full(b, t, 1, {cnt})}, cdn,
                                    b.ScalarBinaryComputation(Opcode::kAdd, t));
    counts = b.Binary(Opcode::kMaximum, counts, Full(b, t, 1, {size}));
    Instruction* cb = b.Broadcast(counts, xd, {d});
    Instruction* q = Div(b, s, cb);
    if (hlo::IsInteger(t)) {
      // floor division (counts > 0): one less where the remainder is nonzero and s is negative.
      Instruction* rem = b.Binary(Opcode::kRemainder, s, cb);
      Instruction* adj = b.Binary(Opcode::kAnd, CmpScalar(b, rem, 0, ComparisonDirection::kNe),
                                  CmpScalar(b, s, 0, ComparisonDirection::kLt));
      q = b.Select(adj, AddScalar(b, q, -1), q);
    }
    s = q;
  }
  return ctx.Finish({b.Reshape(s, xd0)});
}

// repeat_interleave.Tensor: output j holds the number of inclusive prefix sums of `repeats` that are
// <= j. The output length is the sum of repeats (data-dependent): the lowering takes the traced
// output length (or output_size) as the bound and marks the result bounded-dynamic like nonzero.
Expected<LoweredOp> RepeatInterleave(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * rep0, ctx.RequiredTensor("repeats", 0));
  const TensorMeta* out = ctx.OutputMeta(0);
  auto output_size = ctx.OptInt("output_size", 1);
  if (!out && !output_size) return ctx.Unsupported("the output length comes from the traced output or output_size");
  int64_t len = out ? out->sizes.empty() ? 0 : out->sizes[0] : *output_size;
  PrimitiveType ot = out ? out->dtype : rep0->shape.element_type();
  if (rep0->shape.rank() > 1) return ctx.Unsupported("repeats must be 0-d or 1-d");
  int64_t nr = rep0->shape.elements();
  const PrimitiveType S = PrimitiveType::S64;
  Instruction* rep = b.Reshape(b.Convert(rep0, S), {nr});
  hlo::Window win;
  hlo::WindowDimension wd;
  wd.size = std::max<int64_t>(nr, 1);
  wd.padding_low = std::max<int64_t>(nr - 1, 0);
  win.dimensions.push_back(wd);
  Instruction* ends = b.ReduceWindow({rep}, {ConstS64(b, 0)}, win, b.ScalarBinaryComputation(Opcode::kAdd, S));
  Instruction* le =
      b.Compare(b.Broadcast(ends, {len, nr}, {1}), b.Iota(Shape::Array(S, {len, nr}), 0), ComparisonDirection::kLe);
  Instruction* v = b.Convert(ReduceSum(b, b.Convert(le, S), {1}), ot);
  if (output_size) return ctx.Finish({v});
  Instruction* total = b.Convert(ReduceSum(b, rep, {0}), PrimitiveType::S32);
  OPPROBE_ASSIGN_OR_RETURN(LoweredOp op, ctx.Finish({b.SetDimensionSize(v, total, 0)}));
  op.dynamic_shape = true;
  op.note = fmt::format("output length is the sum of repeats; bounded by the traced length {}", len);
  return op;
}

Expected<LoweredOp> IndexFill(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx, ctx.RequiredTensor("index", 2));
  int64_t r = x->shape.rank();
  auto d = WrapDim(ctx.Int("dim", 1, 0), r);
  if (!d) return ctx.Unsupported("dimension out of range");
  PrimitiveType t = x->shape.element_type();
  std::vector<int64_t> xd = Dims(x);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * v, ctx.Operand("value", 3, t, xd));
  if (r == 0) return ctx.Finish({v});
  int64_t size = xd[static_cast<size_t>(*d)];
  int64_t cnt = idx->shape.elements();
  // A [size] mask from a scatter of `true` at the indices, broadcast along dim.
  hlo::ScatterDimensionNumbers dn;
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  Instruction* wi = WrapIndex(b, b.Reshape(b.Convert(idx, PrimitiveType::S64), {cnt}), size);
  Instruction* mask =
      b.Scatter({Full(b, PrimitiveType::PRED, 0, {size})}, b.Reshape(wi, {cnt, 1}),
                {Full(b, PrimitiveType::PRED, 1, {cnt})}, dn, ReplaceComputation(b, PrimitiveType::PRED));
  return ctx.Finish({b.Select(b.Broadcast(mask, xd, {*d}), v, x)});
}

Expected<LoweredOp> MaskedFill(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  PrimitiveType t = x->shape.element_type();
  std::vector<int64_t> dims = ctx.OutputMeta(0) ? ctx.OutputMeta(0)->sizes : Dims(x);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * m, ctx.Operand("mask", 1, PrimitiveType::PRED, dims));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * v, ctx.Operand("value", 2, t, dims));
  return ctx.Finish({b.Select(m, v, Bcast(b, x, dims))});
}

// For each element of a flat [n] mask, how many set elements come before it (an exclusive cumsum by reduce-window),
// s64[n]: a set element's rank among the set ones.
Instruction* SelectedBefore(Builder& b, Instruction* mask_flat) {
  const int64_t total = mask_flat->shape.dimensions()[0];
  hlo::Window w;
  hlo::WindowDimension wd;
  wd.size = total;
  wd.padding_low = total;
  wd.padding_high = -1;
  w.dimensions.push_back(wd);
  return b.ReduceWindow({b.Convert(mask_flat, PrimitiveType::S64)}, {ConstS64(b, 0)}, w,
                        b.ScalarBinaryComputation(Opcode::kAdd, PrimitiveType::S64));
}

Expected<LoweredOp> MaskedScatter(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * m0, ctx.RequiredTensor("mask", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * src, ctx.RequiredTensor("source", 2));
  std::vector<int64_t> xd = Dims(x);
  int64_t total = Numel(xd);
  // Position k of each selected element = number of selected elements before it; gather src.flat[k] and select.
  Instruction* m = FlatMask(b, m0, xd);
  Instruction* before = SelectedBefore(b, m);
  int64_t sn = src->shape.elements();
  Instruction* sf = b.Reshape(b.Convert(src, x->shape.element_type()), {sn});
  Instruction* k = b.Binary(Opcode::kMinimum, before,
                            Full(b, PrimitiveType::S64, static_cast<double>(std::max<int64_t>(sn - 1, 0)), {total}));
  Instruction* picked = Gather1d(b, sf, k);
  return ctx.Finish({b.Reshape(b.Select(m, picked, b.Reshape(x, {total})), xd)});
}

// masked_scatter_backward(grad_output, mask, sizes): the gradient of masked_scatter's `source`, ATen's
// grad_output.masked_select(mask) padded with zeros to the source's numel and shaped as `sizes`. Each selected element
// of grad_output is scattered to its rank among the selected; the others to the index past the end, which the scatter
// drops (as it drops ranks past the source's numel, where PyTorch's forward would have refused a short source).
Expected<LoweredOp> MaskedScatterBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * m0, ctx.RequiredTensor("mask", 1));
  const std::vector<int64_t> sizes = ctx.Ints("sizes", 2);
  for (int64_t d : sizes)
    if (d < 0) return ctx.Unsupported("a negative size");
  const PrimitiveType t = g->shape.element_type();
  const std::vector<int64_t> gd = Dims(g);
  const int64_t total = Numel(gd), numel = Numel(sizes);
  if (m0->shape.rank() > g->shape.rank()) return ctx.Unsupported("a mask of higher rank than grad_output");
  Instruction* m = FlatMask(b, m0, gd);
  Instruction* past_end = Full(b, PrimitiveType::S64, static_cast<double>(numel), {total});
  Instruction* where = b.Select(m, SelectedBefore(b, m), past_end);
  Instruction* flat = b.Scatter({Full(b, t, 0, {numel})}, b.Reshape(where, {total, 1}), {b.Reshape(g, {total})},
                                ScatterAlongDim(0, 1), ReplaceComputation(b, t));
  return ctx.Finish({b.Reshape(flat, sizes)});
}

// The coordinates of x's nonzero elements, in order, in the first `count` of its numel rows (s64[numel, rank]; the
// rows past `count` hold other positions' coordinates).
std::pair<Instruction*, Instruction*> NonzeroCoordinates(Builder& b, Instruction* x) {
  std::vector<int64_t> xd = Dims(x);
  int64_t total = Numel(xd);
  int64_t r = static_cast<int64_t>(xd.size());
  Instruction* keep = b.Reshape(
      x->shape.element_type() == PrimitiveType::PRED ? x : CmpScalar(b, x, 0, ComparisonDirection::kNe), {total});
  auto [perm, count] = CompactPositions(b, keep);
  // Flat position -> coordinates: (p / stride_k) % size_k.
  std::vector<Instruction*> cols;
  int64_t stride = total;
  for (int64_t k = 0; k < r; ++k) {
    int64_t size = xd[static_cast<size_t>(k)];
    stride = size == 0 ? 0 : stride / size;
    Instruction* q =
        stride > 1 ? Div(b, perm, Full(b, PrimitiveType::S64, static_cast<double>(stride), {total})) : perm;
    Instruction* co = b.Binary(Opcode::kRemainder, q,
                               Full(b, PrimitiveType::S64, static_cast<double>(std::max<int64_t>(size, 1)), {total}));
    cols.push_back(b.Reshape(co, {total, 1}));
  }
  Instruction* out = cols.empty()       ? Full(b, PrimitiveType::S64, 0, {total, 0})
                     : cols.size() == 1 ? cols[0]
                                        : b.Concatenate(cols, 1);
  return {out, count};
}

Expected<LoweredOp> Nonzero(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  const int64_t total = Numel(Dims(x));
  auto [out, count] = NonzeroCoordinates(b, x);
  Instruction* dyn = b.SetDimensionSize(out, count, 0);
  OPPROBE_ASSIGN_OR_RETURN(LoweredOp op, ctx.Finish({dyn}));
  op.dynamic_shape = true;
  op.note = fmt::format("output rows depend on the data; bounded by {}", total);
  return op;
}

// nonzero_static: nonzero's coordinates in a fixed `size` rows, the rows past the count of nonzeros `fill_value`
// (torch.nonzero_static): a static shape, what --suggest offers where a backend refuses nonzero's bounded one.
Expected<LoweredOp> NonzeroStatic(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  const int64_t size = ctx.Int("size", 1, 0);
  const int64_t fill = ctx.Int("fill_value", 2, -1);
  if (size < 0) return ctx.Unsupported("size must be non-negative");
  const int64_t total = Numel(Dims(x));
  const int64_t r = static_cast<int64_t>(Dims(x).size());
  auto [out, count] = NonzeroCoordinates(b, x);
  if (size < total) out = b.SliceInDim(out, 0, size, 1, 0);
  if (size > total)
    out = b.Concatenate({out, Full(b, PrimitiveType::S64, static_cast<double>(fill), {size - total, r})}, 0);
  Instruction* row = b.Iota(Shape::Array(PrimitiveType::S64, {size, r}), 0);
  Instruction* found = b.Broadcast(b.Convert(count, PrimitiveType::S64), {size, r}, {});
  Instruction* valid = Cmp(b, row, found, ComparisonDirection::kLt);
  return ctx.Finish({b.Select(valid, out, Full(b, PrimitiveType::S64, static_cast<double>(fill), {size, r}))});
}

Expected<LoweredOp> MaskedSelect(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * m, ctx.RequiredTensor("mask", 1));
  std::vector<int64_t> dims = BroadcastShapes(Dims(x), Dims(m));
  int64_t total = Numel(dims);
  Instruction* xf = b.Reshape(Bcast(b, x, dims), {total});
  Instruction* mf = FlatMask(b, m, dims);
  auto [perm, count] = CompactPositions(b, mf);
  Instruction* vals = Gather1d(b, xf, perm);
  OPPROBE_ASSIGN_OR_RETURN(LoweredOp op, ctx.Finish({b.SetDimensionSize(vals, count, 0)}));
  op.dynamic_shape = true;
  op.note = fmt::format("output size depends on the mask; bounded by {}", total);
  return op;
}

// The unique ops: _unique (values and inverse indices), _unique2 (values, inverse, counts) and
// unique_consecutive (runs of equal values, no sort).
enum class UniqueForm { kUnique, kUnique2, kConsecutive };

Expected<LoweredOp> LowerUnique(const Node& n, Builder& b, UniqueForm form) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  bool consecutive = form == UniqueForm::kConsecutive;
  bool ret_inverse = ctx.Bool("return_inverse", consecutive ? 1 : 2, false);
  bool ret_counts = ctx.Bool("return_counts", consecutive ? 2 : 3, false);
  if (form == UniqueForm::kUnique) ret_inverse = ctx.Bool("return_inverse", 2, false), ret_counts = false;
  PrimitiveType t = x->shape.element_type();
  int64_t total = x->shape.elements();
  Instruction* xf = b.Reshape(x, {total});
  Instruction* sorted = xf;
  Instruction* order = b.Iota(Shape::Array(PrimitiveType::S64, {total}), 0);
  if (!consecutive) {
    Instruction* s = b.Sort({xf, order}, 0, SortComparator(b, {t, PrimitiveType::S64}, false), true);
    sorted = b.GetTupleElement(s, 0);
    order = b.GetTupleElement(s, 1);
  }
  // first[i] = i == 0 || sorted[i] != sorted[i-1]
  Instruction* first;
  if (total <= 1) {
    first = Full(b, PrimitiveType::PRED, 1, {total});
  } else {
    Instruction* prev = b.SliceInDim(sorted, 0, total - 1, 1, 0);
    Instruction* cur = b.SliceInDim(sorted, 1, total, 1, 0);
    Instruction* ne = b.Compare(cur, prev, ComparisonDirection::kNe);
    first = b.Concatenate({Full(b, PrimitiveType::PRED, 1, {1}), ne}, 0);
  }
  auto [perm, count] = CompactPositions(b, first);
  Instruction* values = b.SetDimensionSize(Gather1d(b, sorted, perm), count, 0);
  std::vector<Instruction*> outs = {values};
  // group id of each sorted element: inclusive cumsum of `first` minus one.
  hlo::Window w;
  hlo::WindowDimension wd;
  wd.size = std::max<int64_t>(total, 1);
  wd.padding_low = std::max<int64_t>(total - 1, 0);
  w.dimensions.push_back(wd);
  Instruction* gid = AddScalar(b,
                               b.ReduceWindow({b.Convert(first, PrimitiveType::S64)}, {ConstS64(b, 0)}, w,
                                              b.ScalarBinaryComputation(Opcode::kAdd, PrimitiveType::S64)),
                               -1);
  hlo::ScatterDimensionNumbers dn;
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  {  // every form returns the inverse indices (empty when not asked for)
    Instruction* inv = b.Scatter({Full(b, PrimitiveType::S64, 0, {total})}, b.Reshape(order, {total, 1}), {gid}, dn,
                                 ReplaceComputation(b, PrimitiveType::S64));
    const TensorMeta* m = ctx.OutputMeta(1);
    if (m && m->sizes != Dims(inv) && Numel(m->sizes) == 0) outs.push_back(Full(b, PrimitiveType::S64, 0, m->sizes));
    else if (m || ret_inverse) outs.push_back(b.Reshape(inv, m ? m->sizes : Dims(x)));
  }
  if (ret_counts || form != UniqueForm::kUnique) {
    Instruction* counts = b.Scatter({Full(b, PrimitiveType::S64, 0, {total})}, b.Reshape(gid, {total, 1}),
                                    {Full(b, PrimitiveType::S64, 1, {total})}, dn,
                                    b.ScalarBinaryComputation(Opcode::kAdd, PrimitiveType::S64));
    const TensorMeta* m = ctx.OutputMeta(outs.size());
    if (m && Numel(m->sizes) == 0 && !ret_counts) outs.push_back(Full(b, PrimitiveType::S64, 0, m->sizes));
    else if (m || ret_counts) outs.push_back(b.SetDimensionSize(counts, count, 0));
  }
  OPPROBE_ASSIGN_OR_RETURN(LoweredOp op, ctx.Finish(outs));
  op.dynamic_shape = true;
  op.note = fmt::format("number of unique values depends on the data; bounded by {}", total);
  return op;
}

template <UniqueForm kForm>
Expected<LoweredOp> Unique(const Node& n, Builder& b) {
  return LowerUnique(n, b, kForm);
}

Expected<LoweredOp> Take(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx, ctx.RequiredTensor("index", 1));
  int64_t total = x->shape.elements();
  int64_t cnt = idx->shape.elements();
  Instruction* wi = WrapIndex(b, b.Reshape(b.Convert(idx, PrimitiveType::S64), {cnt}), total);
  return ctx.Finish({b.Reshape(Gather1d(b, b.Reshape(x, {total}), wi), Dims(idx))});
}

Expected<LoweredOp> OneHot(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  const TensorMeta* out = ctx.OutputMeta(0);
  if (!out) return ctx.Unsupported("the number of classes comes from the recorded output");
  std::vector<int64_t> od = out->sizes;
  std::vector<int64_t> map = AllDims(x);
  Instruction* xb = b.Broadcast(b.Convert(x, PrimitiveType::S64), od, map);
  Instruction* io = b.Iota(Shape::Array(PrimitiveType::S64, od), static_cast<int64_t>(od.size()) - 1);
  return ctx.Finish({b.Convert(b.Compare(xb, io, ComparisonDirection::kEq), out->dtype)});
}

// embedding_renorm_(self, indices, max_norm, norm_type): the rows named by indices whose p-norm exceeds max_norm
// are scaled to max_norm / (norm + 1e-7); the other rows stay.
Expected<LoweredOp> EmbeddingRenorm(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * w, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx, ctx.RequiredTensor("indices", 1));
  double max_norm = ctx.Double("max_norm", 2, 1), p = ctx.Double("norm_type", 3, 2);
  std::vector<int64_t> dims = Dims(w);
  if (dims.size() != 2) return ctx.Unsupported("weight must be 2-d");
  PrimitiveType t = w->shape.element_type();
  int64_t V = dims[0], K = idx->shape.elements();
  hlo::ScatterDimensionNumbers dn;
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  Instruction* hit = b.Scatter({Full(b, t, 0, {V})}, b.Reshape(b.Convert(idx, PrimitiveType::S64), {K, 1}),
                               {Full(b, t, 1, {K})}, dn, b.ScalarBinaryComputation(Opcode::kMaximum, t));
  Instruction* a = b.Unary(Opcode::kAbs, w);
  Instruction* norm = b.Binary(Opcode::kPower, ReduceSum(b, b.Binary(Opcode::kPower, a, FullLike(b, a, p)), {1}),
                               Full(b, t, 1 / p, {V}));
  Instruction* scale = Div(b, Full(b, t, max_norm, {V}), AddScalar(b, norm, 1e-7));
  Instruction* apply = b.Binary(Opcode::kAnd, CmpScalar(b, hit, 0, ComparisonDirection::kGt),
                                CmpScalar(b, norm, max_norm, ComparisonDirection::kGt));
  scale = b.Select(apply, scale, Full(b, t, 1, {V}));
  return ctx.Finish({Mul(b, w, b.Broadcast(scale, dims, {0}))});
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

// searchsorted(sorted_sequence, self, ...) and bucketize(self, boundaries, ...) (`is_bucketize`): the count of
// boundaries below each value.
Expected<LoweredOp> SearchSorted(const Node& n, Builder& b, bool is_bucketize) {
  LoweringContext ctx(n, b);
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
    std::vector<int64_t> map = DimRange(0, last - 1);
    map.push_back(last);
    sb = b.Broadcast(b.Convert(seq, t), big, map);
  }
  Instruction* vb = b.Broadcast(b.Convert(v, t), big, AllDims(v));
  // count of boundaries below the value (left) or not above it (right)
  Instruction* below = b.Compare(sb, vb, right ? ComparisonDirection::kLe : ComparisonDirection::kLt);
  Instruction* cnt = ReduceSum(b, b.Convert(below, PrimitiveType::S64), {last});
  return ctx.Finish({b.Convert(cnt, ctx.OutputType(0, PrimitiveType::S64))});
}

Expected<LoweredOp> Searchsorted(const Node& n, Builder& b) { return SearchSorted(n, b, false); }
Expected<LoweredOp> Bucketize(const Node& n, Builder& b) { return SearchSorted(n, b, true); }

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
  Instruction* s =
      b.Scatter({b.Reshape(x, {total})}, b.Reshape(i, {cnt, 1}), {b.Reshape(b.Convert(src, t), {cnt})}, dn, comp);
  return ctx.Finish({b.Reshape(s, Dims(x))});
}

// _embedding_bag: the rows of each bag (by offsets) summed, averaged or maxed.
Expected<LoweredOp> EmbeddingBag(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * w, ctx.RequiredTensor("weight", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx0, ctx.RequiredTensor("indices", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * off0, ctx.RequiredTensor("offsets", 2));
  int64_t mode = ctx.Int("mode", 4, 0);
  bool include_last = ctx.Bool("include_last_offset", 7, false);
  Instruction* psw = ctx.Tensor("per_sample_weights", 6);
  int64_t pad = ctx.OptInt("padding_idx", 8).value_or(-1);
  if (idx0->shape.rank() != 1) return ctx.Unsupported("2-d indices are flattened before _embedding_bag");
  PrimitiveType t = w->shape.element_type();
  int64_t L = Dims(idx0)[0], D = Dims(w)[1], nb = Dims(off0)[0] - (include_last ? 1 : 0);
  Instruction* idx = b.Convert(idx0, PrimitiveType::S64);
  Instruction* off = b.Convert(off0, PrimitiveType::S64);
  if (include_last) off = b.SliceInDim(off, 0, nb, 1, 0);
  // bag of position l = #(offsets <= l) - 1
  Instruction* pos = b.Iota(Shape::Array(PrimitiveType::S64, {L, nb}), 0);
  Instruction* ob = b.Broadcast(off, {L, nb}, {1});
  Instruction* bag =
      AddScalar(b, ReduceSum(b, b.Convert(b.Compare(ob, pos, ComparisonDirection::kLe), PrimitiveType::S64), {1}), -1);
  // rows [L, D]
  hlo::GatherDimensionNumbers gdn;
  gdn.offset_dims = {1};
  gdn.collapsed_slice_dims = {0};
  gdn.start_index_map = {0};
  gdn.index_vector_dim = 1;
  Instruction* rows = b.Gather(w, b.Reshape(idx, {L, 1}), gdn, {1, D}, Shape::Array(t, {L, D}));
  Instruction* keep = pad >= 0 ? CmpScalar(b, idx, static_cast<double>(pad), ComparisonDirection::kNe)
                               : Full(b, PrimitiveType::PRED, 1, {L});
  if (psw) rows = Mul(b, rows, b.Broadcast(b.Convert(psw, t), {L, D}, {0}));
  hlo::ScatterDimensionNumbers sdn;
  sdn.update_window_dims = {1};
  sdn.inserted_window_dims = {0};
  sdn.scatter_dims_to_operand_dims = {0};
  sdn.index_vector_dim = 1;
  // Dropped (padding) rows go to an out-of-range bag index, which scatter skips.
  Instruction* tbag = b.Select(keep, bag, Full(b, PrimitiveType::S64, static_cast<double>(nb), {L}));
  Instruction* tb2 = b.Reshape(tbag, {L, 1});
  Instruction* out;
  Instruction* counts = nullptr;
  {
    // counts[j] = #(l with tbag[l] == j), compared and summed like `bag` above rather than an s64 scatter-add:
    // the same numbers, and no integer scatter-reduce, which Neuron refuses (NCC_EVRF016; torch_xla has none).
    Instruction* lanes = b.Iota(Shape::Array(PrimitiveType::S64, {L, nb}), 1);
    Instruction* in_bag = b.Compare(b.Broadcast(tbag, {L, nb}, {0}), lanes, ComparisonDirection::kEq);
    counts = ReduceSum(b, b.Convert(in_bag, PrimitiveType::S64), {0});
  }
  if (mode == 2) {
    out = b.Scatter({b.Broadcast(MinValue(b, t), {nb, D}, {})}, tb2, {rows}, sdn,
                    b.ScalarBinaryComputation(Opcode::kMaximum, t));
    Instruction* empty = b.Broadcast(CmpScalar(b, counts, 0, ComparisonDirection::kEq), {nb, D}, {0});
    out = b.Select(empty, Full(b, t, 0, {nb, D}), out);
  } else {
    out = b.Scatter({Full(b, t, 0, {nb, D})}, tb2, {rows}, sdn, b.ScalarBinaryComputation(Opcode::kAdd, t));
    if (mode == 1) {
      Instruction* cf = b.Convert(b.Binary(Opcode::kMaximum, counts, Full(b, PrimitiveType::S64, 1, {nb})), t);
      out = Div(b, out, b.Broadcast(cf, {nb, D}, {0}));
    }
  }
  std::vector<Instruction*> outs = {out};
  // offset2bag, bag_size, max_indices: shaped as recorded (ATen leaves some empty per mode).
  auto shaped = [&](size_t i, Instruction* v) -> Instruction* {
    const TensorMeta* m = ctx.OutputMeta(i);
    if (!m) return v;
    if (m->sizes == Dims(v)) return b.Convert(v, m->dtype);
    return Full(b, m->dtype, 0, m->sizes);
  };
  outs.push_back(shaped(1, bag));
  // ATen fills bag_size only for mean/max bags (or when a gradient is needed).
  outs.push_back(shaped(2, mode == 0 ? Full(b, PrimitiveType::S64, 0, {nb}) : counts));
  outs.push_back(shaped(3, Full(b, PrimitiveType::S64, 0, {nb, D})));
  return ctx.Finish(outs);
}

// _embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, maximum_indices, num_weights,
// scale_grad_by_freq, mode, per_sample_weights, padding_idx) and _embedding_bag_backward (below), as ATen's CPU
// kernel: for sum and mean each index
// i gets its bag's gradient row grad[offset2bag[i]], times its per-sample weight, divided by its bag's size
// (mean, non-empty bags) and by the number of times the index occurs (scale_grad_by_freq), scatter-added into
// zeros [num_weights, D]; padding_idx rows get nothing. For max, grad[bag, d] goes to row maximum_indices[bag, d]
// of column d, for the non-empty bags.
// Where the gradient's arguments sit: _embedding_bag_backward (PyTorch 2.x) has `offsets` after `indices` and
// `sparse` after `mode`.
struct EmbeddingBagGradArgs {
  size_t offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq, mode, per_sample_weights, padding_idx;
};

Expected<LoweredOp> EmbeddingBagGradient(LoweringContext& ctx, Builder& b, const EmbeddingBagGradArgs& at,
                                         std::optional<size_t> offsets_at = std::nullopt) {
  OPPROBE_ASSIGN_OR_RETURN(Instruction * grad, ctx.RequiredTensor("grad", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * idx0, ctx.RequiredTensor("indices", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * o2b0, ctx.RequiredTensor("offset2bag", at.offset2bag));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * bag_size0, ctx.RequiredTensor("bag_size", at.bag_size));
  const TensorMeta* out = ctx.OutputMeta(0);
  int64_t num = ctx.Int("num_weights", at.num_weights, out && out->rank() == 2 ? out->sizes[0] : 0);
  bool by_freq = ctx.Bool("scale_grad_by_freq", at.scale_grad_by_freq, false);
  int64_t mode = ctx.Int("mode", at.mode, 0);
  Instruction* psw = ctx.Tensor("per_sample_weights", at.per_sample_weights);
  int64_t pad = ctx.Int("padding_idx", at.padding_idx, -1);
  if (grad->shape.rank() != 2 || idx0->shape.rank() != 1)
    return ctx.Unsupported("needs a [bags, D] grad and 1-d indices");
  PrimitiveType t = ctx.OutputType(0, grad->shape.element_type());
  const PrimitiveType S = PrimitiveType::S64;
  int64_t B = Dims(grad)[0], D = Dims(grad)[1], L = Dims(idx0)[0];
  Instruction* g = b.Convert(grad, t);
  Instruction* bag_size = b.Convert(b.Reshape(bag_size0, {B}), S);
  Instruction* zeros = Full(b, t, 0, {num, D});
  if (mode == 2) {
    OPPROBE_ASSIGN_OR_RETURN(Instruction * maxi0, ctx.RequiredTensor("maximum_indices", at.maximum_indices));
    if (Dims(maxi0) != std::vector<int64_t>{B, D}) return ctx.Unsupported("maximum_indices must be [bags, D]");
    // (row, column) pairs; an empty bag's rows go out of range, which the scatter drops.
    Instruction* empty = b.Broadcast(CmpScalar(b, bag_size, 0, ComparisonDirection::kEq), {B, D}, {0});
    Instruction* rows = b.Select(empty, Full(b, S, static_cast<double>(num), {B, D}), b.Convert(maxi0, S));
    Instruction* cols = b.Iota(Shape::Array(S, {B, D}), 1);
    Instruction* at = b.Concatenate({b.Reshape(rows, {B * D, 1}), b.Reshape(cols, {B * D, 1})}, 1);
    hlo::ScatterDimensionNumbers dn;
    dn.inserted_window_dims = {0, 1};
    dn.scatter_dims_to_operand_dims = {0, 1};
    dn.index_vector_dim = 1;
    return ctx.Finish(
        {b.Scatter({zeros}, at, {b.Reshape(g, {B * D})}, dn, b.ScalarBinaryComputation(Opcode::kAdd, t))});
  }
  Instruction* idx = b.Convert(idx0, S);
  if (o2b0->shape.elements() == 0 && L > 0 && offsets_at) {
    OPPROBE_ASSIGN_OR_RETURN(Instruction * offsets0, ctx.RequiredTensor("offsets", *offsets_at));
    if (offsets0->shape.rank() != 1) return ctx.Unsupported("offsets must be 1-d");
    int64_t O = Dims(offsets0)[0];
    Instruction* starts = b.Broadcast(b.Convert(offsets0, S), {L, O}, {1});
    Instruction* at_or_after = b.Compare(b.Iota(Shape::Array(S, {L, O}), 0), starts, ComparisonDirection::kGe);
    o2b0 = AddScalar(b, ReduceSum(b, b.Convert(at_or_after, S), {1}), -1);
  }
  if (o2b0->shape.elements() != L || (psw && psw->shape.elements() != L))
    return ctx.Unsupported("offset2bag and per_sample_weights need one entry per index");
  Instruction* bag = b.Convert(b.Reshape(o2b0, {L}), S);
  hlo::GatherDimensionNumbers gdn;
  gdn.offset_dims = {1};
  gdn.collapsed_slice_dims = {0};
  gdn.start_index_map = {0};
  gdn.index_vector_dim = 1;
  Instruction* rows = b.Gather(g, b.Reshape(bag, {L, 1}), gdn, {1, D}, Shape::Array(t, {L, D}));  // [L, D]
  Instruction* scale = Full(b, t, 1, {L});
  if (psw) scale = Mul(b, scale, b.Convert(b.Reshape(psw, {L}), t));
  if (by_freq) {  // occurrences of each index among the L
    Instruction* same =
        b.Compare(b.Broadcast(idx, {L, L}, {0}), b.Broadcast(idx, {L, L}, {1}), ComparisonDirection::kEq);
    scale = Div(b, scale, b.Convert(ReduceSum(b, b.Convert(same, S), {1}), t));
  }
  if (mode == 1) {  // divided by the bag's size (a non-empty bag)
    Instruction* size = Gather1d(b, bag_size, bag);
    Instruction* nonzero = CmpScalar(b, size, 0, ComparisonDirection::kNe);
    scale = b.Select(nonzero, Div(b, scale, b.Convert(size, t)), scale);
  }
  rows = Mul(b, rows, b.Broadcast(scale, {L, D}, {0}));
  Instruction* target = idx;
  if (pad >= 0)  // padding rows go out of range, which the scatter drops
    target = b.Select(CmpScalar(b, idx, static_cast<double>(pad), ComparisonDirection::kEq),
                      Full(b, S, static_cast<double>(num), {L}), idx);
  hlo::ScatterDimensionNumbers dn;
  dn.update_window_dims = {1};
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  return ctx.Finish(
      {b.Scatter({zeros}, b.Reshape(target, {L, 1}), {rows}, dn, b.ScalarBinaryComputation(Opcode::kAdd, t))});
}

Expected<LoweredOp> EmbeddingBagDenseBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  return EmbeddingBagGradient(ctx, b, {2, 3, 4, 5, 6, 7, 8, 9});
}

// _embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights,
// scale_grad_by_freq, mode, sparse, per_sample_weights, padding_idx): PyTorch 2.x's entry, which ATen sends to
// the dense gradient above unless `sparse`. The forward leaves offset2bag empty on its fast paths (sum or
// mean without per-sample weights); the gradient then derives it from `offsets`, as ATen does: index i belongs
// to the last bag whose offset is <= i.
Expected<LoweredOp> EmbeddingBagBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  if (ctx.Bool("sparse", 9, false))
    return ctx.Unsupported("a sparse gradient (sparse=True): XLA has no sparse tensors");
  return EmbeddingBagGradient(ctx, b, {3, 4, 5, 6, 7, 8, 10, 11}, /*offsets_at=*/2);
}

// _pack_padded_sequence(input, lengths, batch_first) -> (data, batch_sizes): the time steps of each sequence
// packed time-major, and the number of sequences still running at each step. Both sizes come from the values of
// `lengths`, a CPU tensor: PyTorch/XLA reads them on the host and slices the input at those sizes, so its XLA
// program is built for one set of lengths. Without the values here, this is XLA's bounded form, as for
// masked_select: running[t, b] = t < lengths[b] over the time-major [T, B] grid, a stable sort moving the running
// rows first, and `set-dimension-size` to their count (data bounded by T * B rows, batch_sizes by T steps).
Expected<LoweredOp> PackPaddedSequence(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x0, ctx.RequiredTensor("input", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * lengths0, ctx.RequiredTensor("lengths", 1));
  bool batch_first = ctx.Bool("batch_first", 2, false);
  if (x0->shape.rank() < 2) return ctx.Unsupported("input must be [T, B, *] (or [B, T, *] batch first)");
  std::vector<int64_t> perm = AllDims(x0);
  if (batch_first) std::swap(perm[0], perm[1]);
  Instruction* x = batch_first ? b.Transpose(x0, perm) : x0;  // [T, B, *]
  std::vector<int64_t> xd = Dims(x);
  int64_t T = xd[0], B = xd[1], rows = T * B;
  if (lengths0->shape.elements() != B) return ctx.Unsupported("lengths needs one entry per sequence");
  const PrimitiveType S = PrimitiveType::S64;
  Instruction* lengths = b.Convert(b.Reshape(lengths0, {B}), S);
  Instruction* running =
      b.Compare(b.Iota(Shape::Array(S, {T, B}), 0), b.Broadcast(lengths, {T, B}, {1}), ComparisonDirection::kLt);
  auto [perm_rows, count] = CompactPositions(b, b.Reshape(running, {rows}));
  std::vector<int64_t> row_dims = {rows};
  row_dims.insert(row_dims.end(), xd.begin() + 2, xd.end());
  std::vector<int64_t> slice = {1};
  slice.insert(slice.end(), xd.begin() + 2, xd.end());
  hlo::GatherDimensionNumbers dn;
  for (int64_t d = 1; d < static_cast<int64_t>(slice.size()); ++d) dn.offset_dims.push_back(d);
  dn.collapsed_slice_dims = {0};
  dn.start_index_map = {0};
  dn.index_vector_dim = 1;
  Instruction* packed = b.Gather(b.Reshape(x, row_dims), b.Reshape(perm_rows, {rows, 1}), dn, slice,
                                 Shape::Array(x->shape.element_type(), row_dims));
  Instruction* data = b.SetDimensionSize(packed, count, 0);
  Instruction* sizes = ReduceSum(b, b.Convert(running, S), {1});  // [T]
  Instruction* steps =
      ReduceSum(b, b.Convert(CmpScalar(b, sizes, 0, ComparisonDirection::kGt), PrimitiveType::S32), {0});
  Instruction* batch_sizes = b.SetDimensionSize(b.Convert(sizes, ctx.OutputType(1, S)), steps, 0);
  OPPROBE_ASSIGN_OR_RETURN(LoweredOp op, ctx.Finish({data, batch_sizes}));
  op.dynamic_shape = true;
  op.note = fmt::format(
      "packed size is the sum of the lengths (values of a CPU tensor); bounded by {} rows of {} "
      "steps",
      rows, T);
  return op;
}

}  // namespace

const LoweringFamily& IndexingLowerings() {
  using U = UniqueForm;
  static const auto* family = new LoweringFamily{FamilyOf(__FILE__),
                                                 {
                                                     {"aten::embedding", Embedding},
                                                     {"aten::embedding_dense_backward", EmbeddingDenseBackward},
                                                     {"aten::embedding_renorm", EmbeddingRenorm, kInPlaceForm},
                                                     {"aten::_embedding_bag", EmbeddingBag},
                                                     {"aten::_embedding_bag_forward_only", EmbeddingBag},
                                                     {"aten::_embedding_bag_dense_backward", EmbeddingBagDenseBackward},
                                                     {"aten::_embedding_bag_backward", EmbeddingBagBackward},
                                                     {"aten::index_select", IndexSelect},
                                                     {"aten::gather", Gather},
                                                     {"aten::take", Take},
                                                     {"aten::index.Tensor", Index},
                                                     {"aten::_unsafe_index", Index},
                                                     {"aten::index_put", IndexPut, kInPlaceForm},
                                                     {"aten::_index_put_impl_", IndexPut},
                                                     {"aten::_unsafe_index_put", IndexPut},
                                                     {"aten::put", Put, kInPlaceForm},
                                                     {"aten::scatter", Scatter, kInPlaceForm},
                                                     {"aten::scatter_reduce", Scatter, kInPlaceForm},
                                                     {"aten::scatter_add", ScatterAdd, kInPlaceForm},
                                                     {"aten::index_add", IndexAdd, kInPlaceForm},
                                                     {"aten::index_copy", IndexCopy, kInPlaceForm},
                                                     {"aten::index_fill", IndexFill, kInPlaceForm},
                                                     {"aten::index_reduce", IndexReduce, kInPlaceForm},
                                                     {"aten::masked_fill", MaskedFill, kInPlaceForm},
                                                     {"aten::masked_scatter", MaskedScatter, kInPlaceForm},
                                                     {"aten::masked_scatter_backward", MaskedScatterBackward},
                                                     {"aten::masked_select", MaskedSelect},
                                                     {"aten::_pack_padded_sequence", PackPaddedSequence},
                                                     {"aten::nonzero", Nonzero},
                                                     {"aten::nonzero_static", NonzeroStatic},
                                                     {"aten::argwhere", Nonzero},
                                                     {"aten::_unique", Unique<U::kUnique>},
                                                     {"aten::_unique2", Unique<U::kUnique2>},
                                                     {"aten::unique_consecutive", Unique<U::kConsecutive>},
                                                     {"aten::repeat_interleave.Tensor", RepeatInterleave},
                                                     {"aten::one_hot", OneHot},
                                                     {"aten::isin", Isin},
                                                     {"aten::searchsorted", Searchsorted},
                                                     {"aten::bucketize", Bucketize},
                                                 }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
