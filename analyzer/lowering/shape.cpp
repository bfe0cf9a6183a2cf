// View and shape ops: reshape, flatten, transpose, slice, broadcast, concatenate, split, pad, diagonals
// (diag, diag_embed, block_diag), rot90, ... Pure metadata ops (detach, alias, lift_fresh, contiguous) lower to
// nothing: their output is their input parameter.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

Expected<LoweredOp> Identity(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  // clone/contiguous/detach/alias keep dtype and shape; nothing to emit.
  return ctx.Finish({x});
}

// set_ from a storage (set_.source_Storage, set_.source_Storage_storage_offset): what `copy.deepcopy` of a CPU tensor
// dispatches (an empty tensor set onto a copy of the source's storage, viewed with the source's size, stride and
// offset). The storage is no traced tensor (the capture keeps it as its repr), so the viewed data enters the module as
// a parameter of the recorded result's type, which the module returns: on an XLA device `Tensor.__deepcopy__` is a
// clone() of device data, which lowers to no instruction either (Identity).
Expected<LoweredOp> SetFromStorage(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  const TensorMeta* out = ctx.OutputMeta(0);
  if (!out) return ctx.Unsupported("the result's shape was not recorded");
  if (out->is_dynamic()) return ctx.Unsupported("a symbolic result size");
  if (!ctx.ArgMeta("self", 0)) return ctx.Unsupported("self must be a tensor");
  const Value* src = ctx.Arg("source", 1);
  if (!src || src->kind != Value::Kind::kString) return ctx.Unsupported("source must be a storage");
  return ctx.Finish({b.NextParameter(Shape::Array(out->dtype, out->sizes))});
}

// view, reshape, _reshape_alias, _unsafe_view, view_copy; `dtype_view`: aten::view, whose view.dtype overload
// reinterprets the elements.
Expected<LoweredOp> ReshapeTo(const Node& n, Builder& b, bool dtype_view) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> size;
  if (const TensorMeta* m = ctx.OutputMeta(0)) {
    size = m->sizes;
  } else {
    size = ctx.Ints("size", 1, ctx.Ints("shape", 1));
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < size.size(); ++i) {
      if (size[i] == -1) infer = static_cast<int64_t>(i);
      else known *= size[i];
    }
    if (infer >= 0) size[static_cast<size_t>(infer)] = known == 0 ? 0 : x->shape.elements() / known;
  }
  if (dtype_view && ctx.Dtype("dtype", 1)) {
    // view.dtype: a bitcast between element types of the same width.
    PrimitiveType t = *ctx.Dtype("dtype", 1);
    if (hlo::BitWidth(t) != hlo::BitWidth(x->shape.element_type())) return ctx.Unsupported("view.dtype across widths");
    return ctx.Finish({b.BitcastConvert(x, t)});
  }
  return ctx.Finish({b.Reshape(x, size)});
}

Expected<LoweredOp> View(const Node& n, Builder& b) { return ReshapeTo(n, b, true); }
Expected<LoweredOp> Reshape(const Node& n, Builder& b) { return ReshapeTo(n, b, false); }

Expected<LoweredOp> Expand(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> size = ctx.Ints("size", 1);
  if (const TensorMeta* m = ctx.OutputMeta(0)) size = m->sizes;
  if (const TensorMeta* other = ctx.ArgMeta("other", 1)) size = other->sizes;  // expand_as
  size_t off = size.size() - static_cast<size_t>(x->shape.rank());
  for (size_t i = 0; i < size.size(); ++i)
    if (size[i] == -1 && i >= off) size[i] = x->shape.dimensions()[i - off];
  return ctx.Finish({b.BroadcastTo(x, size)});
}

Expected<LoweredOp> Permute(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> perm = ctx.Ints("dims", 1);
  for (auto& p : perm) {
    auto w = WrapDim(p, x->shape.rank());
    if (!w) return ctx.Unsupported("permutation out of range");
    p = *w;
  }
  if (x->shape.rank() == 0) return ctx.Finish({x});
  return ctx.Finish({b.Transpose(x, perm)});
}

// Which dims a transpose swaps: all of them reversed (t, numpy_T), the last two (mT, adjoint), or dim0 and dim1.
enum class Transposed { kAllDims, kLastTwo, kArgDims };

Expected<LoweredOp> Transpose(const Node& n, Builder& b, Transposed which) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t r = x->shape.rank();
  std::vector<int64_t> perm = AllDims(x);
  if (r < 2) return ctx.Finish({x});
  if (which == Transposed::kAllDims) {
    std::reverse(perm.begin(), perm.end());
  } else if (which == Transposed::kLastTwo) {
    std::swap(perm[static_cast<size_t>(r - 1)], perm[static_cast<size_t>(r - 2)]);
  } else {
    auto d0 = WrapDim(ctx.Int("dim0", 1, 0), r), d1 = WrapDim(ctx.Int("dim1", 2, 1), r);
    if (!d0 || !d1) return ctx.Unsupported("dimension out of range");
    std::swap(perm[static_cast<size_t>(*d0)], perm[static_cast<size_t>(*d1)]);
  }
  return ctx.Finish({b.Transpose(x, perm)});
}

template <Transposed kWhich>
Expected<LoweredOp> TransposeOf(const Node& n, Builder& b) {
  return Transpose(n, b, kWhich);
}

// transpose_, t_, swapdims_, swapaxes_ and unsqueeze_ change self's sizes in place. A trace that encoded the
// arguments after the call (the capture shim records from __torch_dispatch__ once the op has run) holds self with
// the new sizes, equal to the output: the sizes self had before the call are the inverse of the op's.
void SwapDims(TensorMeta& self, int64_t d0, int64_t d1) {
  auto w0 = WrapDim(d0, self.rank()), w1 = WrapDim(d1, self.rank());
  if (!w0 || !w1) return;
  std::swap(self.sizes[static_cast<size_t>(*w0)], self.sizes[static_cast<size_t>(*w1)]);
  if (self.dynamic.size() == self.sizes.size())
    self.dynamic.swap(self.dynamic[static_cast<size_t>(*w0)], self.dynamic[static_cast<size_t>(*w1)]);
}

int64_t IntArgOr(const Node& n, const char* name, size_t pos, int64_t def) {
  const Value* v = n.arg(name, pos);
  return v && v->kind == Value::Kind::kInt ? v->i : def;
}

void RestoreTransposed(const Node& n, TensorMeta& self) {
  if (self.rank() >= 2) SwapDims(self, IntArgOr(n, "dim0", 1, 0), IntArgOr(n, "dim1", 2, 1));
}

void RestoreT(const Node&, TensorMeta& self) {
  if (self.rank() == 2) SwapDims(self, 0, 1);
}

void RestoreUnsqueezed(const Node& n, TensorMeta& self) {
  auto w = WrapDim(IntArgOr(n, "dim", 1, 0), self.rank());
  if (w && self.sizes[static_cast<size_t>(*w)] == 1) {
    self.sizes.erase(self.sizes.begin() + *w);
    if (self.dynamic.size() > static_cast<size_t>(*w)) self.dynamic.erase(self.dynamic.begin() + *w);
  }
}

Expected<LoweredOp> Squeeze(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> dims = x->shape.dimensions();
  std::vector<int64_t> out;
  auto which = ctx.OptInts("dim", 1);
  std::vector<bool> drop(dims.size(), false);
  if (!which) {
    for (size_t i = 0; i < dims.size(); ++i) drop[i] = dims[i] == 1;
  } else {
    for (int64_t d : *which) {
      auto w = WrapDim(d, x->shape.rank());
      if (!w) return ctx.Unsupported("dimension out of range");
      if (!dims.empty() && dims[static_cast<size_t>(*w)] == 1) drop[static_cast<size_t>(*w)] = true;
    }
  }
  for (size_t i = 0; i < dims.size(); ++i)
    if (!drop[i]) out.push_back(dims[i]);
  return ctx.Finish({b.Reshape(x, out)});
}

Expected<LoweredOp> Unsqueeze(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> dims = x->shape.dimensions();
  auto w = WrapDim(ctx.Int("dim", 1, 0), x->shape.rank() + 1);
  if (!w) return ctx.Unsupported("dimension out of range");
  dims.insert(dims.begin() + *w, 1);
  return ctx.Finish({b.Reshape(x, dims)});
}

Expected<LoweredOp> SliceOp(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t r = x->shape.rank();
  auto d = WrapDim(ctx.Int("dim", 1, 0), r);
  if (!d || r == 0) return ctx.Unsupported("dimension out of range");
  int64_t size = x->shape.dimensions()[static_cast<size_t>(*d)];
  auto start_v = ctx.OptInt("start", 2);
  auto end_v = ctx.OptInt("end", 3);
  int64_t step = ctx.Int("step", 4, 1);
  if (step <= 0) return ctx.Unsupported("slice step must be positive");
  int64_t start = start_v.value_or(0), end = end_v.value_or(size);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  return ctx.Finish({b.SliceInDim(x, start, end, step, *d)});
}

Expected<LoweredOp> Select(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t r = x->shape.rank();
  auto d = WrapDim(ctx.Int("dim", 1, 0), r);
  if (!d || r == 0) return ctx.Unsupported("dimension out of range");
  int64_t size = x->shape.dimensions()[static_cast<size_t>(*d)];
  int64_t index = ctx.Int("index", 2, 0);
  if (index < 0) index += size;
  if (index < 0 || index >= size) return ctx.Unsupported("index out of range");
  Instruction* s = b.SliceInDim(x, index, index + 1, 1, *d);
  std::vector<int64_t> dims = x->shape.dimensions();
  dims.erase(dims.begin() + *d);
  return ctx.Finish({b.Reshape(s, dims)});
}

Expected<LoweredOp> Cat(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  std::vector<Instruction*> xs = ctx.TensorList("tensors", 0);
  const TensorMeta* out = ctx.OutputMeta(0);
  PrimitiveType t = out ? out->dtype : PrimitiveType::F32;
  std::vector<Instruction*> parts;
  int64_t rank = out ? out->rank() : 0;
  for (Instruction* x : xs) {
    if (!x) continue;
    if (!out) rank = std::max<int64_t>(rank, x->shape.rank());
  }
  auto d = WrapDim(ctx.Int("dim", 1, 0), rank);
  if (!d) return ctx.Unsupported("dimension out of range");
  for (Instruction* x : xs) {
    if (!x) continue;
    // Legacy behaviour: 1-d empty tensors are skipped.
    if (x->shape.rank() == 1 && x->shape.dimensions()[0] == 0 && rank != 1) continue;
    parts.push_back(b.Convert(x, t));
  }
  if (parts.empty()) return ctx.Finish({Full(b, t, 0, out ? out->sizes : std::vector<int64_t>{0})});
  if (parts.size() == 1) return ctx.Finish({parts[0]});
  return ctx.Finish({b.Concatenate(parts, *d)});
}

Expected<LoweredOp> Stack(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  std::vector<Instruction*> xs = ctx.TensorList("tensors", 0);
  if (xs.empty() || !xs[0]) return ctx.Unsupported("stack of no tensors");
  int64_t rank = xs[0]->shape.rank() + 1;
  auto d = WrapDim(ctx.Int("dim", 1, 0), rank);
  if (!d) return ctx.Unsupported("dimension out of range");
  PrimitiveType t = ctx.OutputType(0, xs[0]->shape.element_type());
  std::vector<Instruction*> parts;
  for (Instruction* x : xs) {
    std::vector<int64_t> dims = x->shape.dimensions();
    dims.insert(dims.begin() + *d, 1);
    parts.push_back(b.Reshape(b.Convert(x, t), dims));
  }
  if (parts.size() == 1) return ctx.Finish({parts[0]});
  return ctx.Finish({b.Concatenate(parts, *d)});
}

// channel_shuffle(self, groups): [N, g*k, ...] -> reshape [N, g, k, ...] -> swap g, k -> reshape back.
Expected<LoweredOp> ChannelShuffle(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t groups = ctx.Int("groups", 1, 1);
  std::vector<int64_t> dims = Dims(x);
  if (dims.size() < 3 || groups <= 0 || dims[1] % groups != 0)
    return ctx.Unsupported("channels not divisible by groups");
  std::vector<int64_t> split = {dims[0], groups, dims[1] / groups};
  split.insert(split.end(), dims.begin() + 2, dims.end());
  std::vector<int64_t> perm = DimRange(0, static_cast<int64_t>(split.size()));
  std::swap(perm[1], perm[2]);
  return ctx.Finish({b.Reshape(b.Transpose(b.Reshape(x, split), perm), dims)});
}

// How a split cuts: by split_size(s), into `chunks` pieces, or into single slices with the dim removed (unbind).
enum class Cut { kSizes, kChunks, kUnbind };

// `dim_pos`: where `dim` is when the call does not name it.
Expected<LoweredOp> Split(const Node& n, Builder& b, Cut cut, size_t dim_pos) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t r = x->shape.rank();
  auto d = WrapDim(ctx.Int("dim", dim_pos, 0), r);
  if (!d || r == 0) return ctx.Unsupported("dimension out of range");
  int64_t size = x->shape.dimensions()[static_cast<size_t>(*d)];
  std::vector<int64_t> sizes;
  if (cut == Cut::kUnbind) {
    sizes.assign(static_cast<size_t>(size), 1);
  } else if (cut == Cut::kChunks) {
    int64_t chunks = ctx.Int("chunks", 1, 1);
    int64_t each = (size + chunks - 1) / std::max<int64_t>(chunks, 1);
    for (int64_t s = 0; s < size; s += each) sizes.push_back(std::min(each, size - s));
    if (size == 0) sizes.push_back(0);
  } else if (const Value* v = ctx.Arg("split_sizes", 1); v && v->kind == Value::Kind::kIntList) {
    sizes = v->ints;
  } else if (const Value* v2 = ctx.Arg("split_size", 1); v2 && v2->kind == Value::Kind::kIntList) {
    sizes = v2->ints;
  } else {
    int64_t each = ctx.Int("split_size", 1, size);
    if (each <= 0) return ctx.Unsupported("split_size must be positive");
    for (int64_t s = 0; s < size; s += each) sizes.push_back(std::min(each, size - s));
    if (size == 0) sizes.push_back(0);
  }
  std::vector<Instruction*> outs;
  int64_t at = 0;
  for (int64_t s : sizes) {
    Instruction* part = b.SliceInDim(x, at, at + s, 1, *d);
    if (cut == Cut::kUnbind) {
      std::vector<int64_t> dims = x->shape.dimensions();
      dims.erase(dims.begin() + *d);
      part = b.Reshape(part, dims);
    }
    outs.push_back(part);
    at += s;
  }
  return ctx.Finish(outs);
}

Expected<LoweredOp> SplitBySizes(const Node& n, Builder& b) { return Split(n, b, Cut::kSizes, 2); }
Expected<LoweredOp> Chunk(const Node& n, Builder& b) { return Split(n, b, Cut::kChunks, 2); }
Expected<LoweredOp> Unbind(const Node& n, Builder& b) { return Split(n, b, Cut::kUnbind, 1); }
Expected<LoweredOp> UnbindCopy(const Node& n, Builder& b) { return Split(n, b, Cut::kUnbind, 2); }

// flip(self, dims); fliplr and flipud flip dim 1 and dim 0 (`fixed`).
Expected<LoweredOp> FlipDims(const Node& n, Builder& b, std::optional<int64_t> fixed) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> dims = fixed ? std::vector<int64_t>{*fixed} : ctx.Ints("dims", 1);
  auto nd = NormDims(dims, x->shape.rank(), false);
  if (!nd.ok()) return ctx.Unsupported(nd.status().message());
  if (nd->empty()) return ctx.Finish({x});
  return ctx.Finish({b.Reverse(x, *nd)});
}

Expected<LoweredOp> Flip(const Node& n, Builder& b) { return FlipDims(n, b, std::nullopt); }
Expected<LoweredOp> Fliplr(const Node& n, Builder& b) { return FlipDims(n, b, 1); }
Expected<LoweredOp> Flipud(const Node& n, Builder& b) { return FlipDims(n, b, 0); }

Expected<LoweredOp> Roll(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> shifts = ctx.Ints("shifts", 1), dims = ctx.Ints("dims", 2);
  Instruction* r = x;
  if (dims.empty()) {  // roll the flattened tensor
    int64_t total = x->shape.elements();
    r = b.Reshape(x, {total});
    dims = {0};
  }
  if (shifts.size() != dims.size()) return ctx.Unsupported("shifts and dims differ in length");
  for (size_t i = 0; i < dims.size(); ++i) {
    auto d = WrapDim(dims[i], r->shape.rank());
    if (!d) return ctx.Unsupported("dimension out of range");
    int64_t size = r->shape.dimensions()[static_cast<size_t>(*d)];
    if (size == 0) continue;
    int64_t s = ((shifts[i] % size) + size) % size;
    if (s == 0) continue;
    // concatenate(x[size-s:], x[:size-s])
    Instruction* tail = b.SliceInDim(r, size - s, size, 1, *d);
    Instruction* head = b.SliceInDim(r, 0, size - s, 1, *d);
    r = b.Concatenate({tail, head}, *d);
  }
  return ctx.Finish({b.Reshape(r, x->shape.dimensions())});
}

Expected<LoweredOp> Repeat(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> reps = ctx.Ints("repeats", 1);
  if (reps.size() < static_cast<size_t>(x->shape.rank())) return ctx.Unsupported("fewer repeats than dims");
  std::vector<int64_t> in = x->shape.dimensions();
  in.insert(in.begin(), reps.size() - in.size(), 1);
  // broadcast [r0, d0, r1, d1, ...] then reshape to [r0*d0, ...]
  std::vector<int64_t> bdims, map, out;
  for (size_t i = 0; i < in.size(); ++i) {
    bdims.push_back(reps[i]);
    bdims.push_back(in[i]);
    map.push_back(static_cast<int64_t>(2 * i + 1));
    out.push_back(reps[i] * in[i]);
  }
  Instruction* xr = b.Reshape(x, in);
  Instruction* br = b.Broadcast(xr, bdims, map);
  return ctx.Finish({b.Reshape(br, out)});
}

Expected<LoweredOp> ConstantPad(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> pad = ctx.Ints("pad", 1);
  if (pad.size() % 2 != 0 || pad.size() / 2 > static_cast<size_t>(x->shape.rank()))
    return ctx.Unsupported("bad pad list");
  hlo::PaddingConfig cfg;
  cfg.dimensions.resize(static_cast<size_t>(x->shape.rank()));
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    auto& d = cfg.dimensions[static_cast<size_t>(x->shape.rank()) - 1 - i];
    d.edge_padding_low = pad[2 * i];
    d.edge_padding_high = pad[2 * i + 1];
  }
  double v = ctx.Double("value", 2, 0);
  return ctx.Finish({b.Pad(x, Scalar(b, x->shape.element_type(), v), cfg)});
}

// Reflection/replication padding along one dim as slices + reverse + concatenate.
Instruction* PadDimMirror(Builder& b, Instruction* x, int64_t dim, int64_t lo, int64_t hi, bool reflect) {
  int64_t size = x->shape.dimensions()[static_cast<size_t>(dim)];
  std::vector<Instruction*> parts;
  if (lo > 0) {
    if (reflect) parts.push_back(b.Reverse(b.SliceInDim(x, 1, lo + 1, 1, dim), {dim}));
    else {
      Instruction* edge = b.SliceInDim(x, 0, 1, 1, dim);
      std::vector<int64_t> d = x->shape.dimensions();
      d[static_cast<size_t>(dim)] = lo;
      parts.push_back(b.BroadcastTo(edge, d));
    }
  }
  Instruction* mid = x;
  if (lo < 0 || hi < 0) mid = b.SliceInDim(x, std::max<int64_t>(-lo, 0), size - std::max<int64_t>(-hi, 0), 1, dim);
  parts.push_back(mid);
  if (hi > 0) {
    if (reflect) parts.push_back(b.Reverse(b.SliceInDim(x, size - hi - 1, size - 1, 1, dim), {dim}));
    else {
      Instruction* edge = b.SliceInDim(x, size - 1, size, 1, dim);
      std::vector<int64_t> d = x->shape.dimensions();
      d[static_cast<size_t>(dim)] = hi;
      parts.push_back(b.BroadcastTo(edge, d));
    }
  }
  return parts.size() == 1 ? parts[0] : b.Concatenate(parts, dim);
}

Expected<LoweredOp> MirrorPad(const Node& n, Builder& b, bool reflect) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> pad = ctx.Ints("padding", 1);
  Instruction* r = x;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    int64_t dim = x->shape.rank() - 1 - static_cast<int64_t>(i);
    if (dim < 0) return ctx.Unsupported("padding longer than the rank");
    r = PadDimMirror(b, r, dim, pad[2 * i], pad[2 * i + 1], reflect);
  }
  return ctx.Finish({r});
}

Expected<LoweredOp> ReflectionPad(const Node& n, Builder& b) { return MirrorPad(n, b, true); }
Expected<LoweredOp> ReplicationPad(const Node& n, Builder& b) { return MirrorPad(n, b, false); }

// Pads `x` with zeros: `lo` before and `hi` after along `dim`.
Instruction* ZeroPadDim(Builder& b, Instruction* x, int64_t dim, int64_t lo, int64_t hi) {
  hlo::PaddingConfig cfg;
  cfg.dimensions.resize(static_cast<size_t>(x->shape.rank()));
  cfg.dimensions[static_cast<size_t>(dim)].edge_padding_low = lo;
  cfg.dimensions[static_cast<size_t>(dim)].edge_padding_high = hi;
  return b.Pad(x, Scalar(b, x->shape.element_type(), 0), cfg);
}

// The gradient of PadDimMirror: g has size lo + size + hi along dim; the result has `size`. Each padded
// element's gradient goes back to the element it copied (reflected or the edge).
Instruction* PadDimMirrorBackward(Builder& b, Instruction* g, int64_t dim, int64_t lo, int64_t hi, int64_t size,
                                  bool reflect) {
  Instruction* r = b.SliceInDim(g, lo, lo + size, 1, dim);
  if (lo > 0) {
    Instruction* left = b.SliceInDim(g, 0, lo, 1, dim);
    if (reflect) {  // g[0:lo] reversed went to x[1:lo+1]
      r = Add(b, r, ZeroPadDim(b, b.Reverse(left, {dim}), dim, 1, size - lo - 1));
    } else {  // every one came from x[0]
      std::vector<int64_t> kd = Dims(left);
      kd[static_cast<size_t>(dim)] = 1;
      r = Add(b, r, ZeroPadDim(b, b.Reshape(ReduceSum(b, left, {dim}), kd), dim, 0, size - 1));
    }
  }
  if (hi > 0) {
    Instruction* right = b.SliceInDim(g, lo + size, lo + size + hi, 1, dim);
    if (reflect) {  // g[lo+size:] reversed went to x[size-hi-1:size-1]
      r = Add(b, r, ZeroPadDim(b, b.Reverse(right, {dim}), dim, size - hi - 1, 1));
    } else {
      std::vector<int64_t> kd = Dims(right);
      kd[static_cast<size_t>(dim)] = 1;
      r = Add(b, r, ZeroPadDim(b, b.Reshape(ReduceSum(b, right, {dim}), kd), dim, size - 1, 0));
    }
  }
  return r;
}

// reflection_padNd_backward / replication_padNd_backward(grad_output, self, padding).
Expected<LoweredOp> MirrorPadBackward(const Node& n, Builder& b, bool reflect) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 1));
  std::vector<int64_t> pad = ctx.Ints("padding", 2);
  Instruction* r = b.Convert(g, x->shape.element_type());
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    int64_t dim = x->shape.rank() - 1 - static_cast<int64_t>(i);
    if (dim < 0) return ctx.Unsupported("padding longer than the rank");
    int64_t lo = pad[2 * i], hi = pad[2 * i + 1], size = x->shape.dimensions(static_cast<int>(dim));
    if (lo < 0 || hi < 0) return ctx.Unsupported("negative padding");
    if (reflect && (lo >= size || hi >= size)) return ctx.Unsupported("reflection padding not smaller than the input");
    r = PadDimMirrorBackward(b, r, dim, lo, hi, size, reflect);
  }
  return ctx.Finish({r});
}

Expected<LoweredOp> ReflectionPadBackward(const Node& n, Builder& b) { return MirrorPadBackward(n, b, true); }
Expected<LoweredOp> ReplicationPadBackward(const Node& n, Builder& b) { return MirrorPadBackward(n, b, false); }

// The positions of a diagonal as a gather: returns the diagonal of dims (d1, d2) moved to the end.
Instruction* DiagonalOf(Builder& b, Instruction* x, int64_t offset, int64_t d1, int64_t d2) {
  int64_t r = x->shape.rank();
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < r; ++i)
    if (i != d1 && i != d2) perm.push_back(i);
  perm.push_back(d1);
  perm.push_back(d2);
  Instruction* t = b.Transpose(x, perm);
  std::vector<int64_t> dims = t->shape.dimensions();
  int64_t n1 = dims[static_cast<size_t>(r - 2)], n2 = dims[static_cast<size_t>(r - 1)];
  int64_t len =
      offset >= 0 ? std::max<int64_t>(0, std::min(n1, n2 - offset)) : std::max<int64_t>(0, std::min(n1 + offset, n2));
  // Flatten the last two dims and take a strided slice: index i*(n2+1) + start.
  std::vector<int64_t> flat(dims.begin(), dims.end() - 2);
  flat.push_back(n1 * n2);
  Instruction* f = b.Reshape(t, flat);
  int64_t start = offset >= 0 ? offset : -offset * n2;
  std::vector<int64_t> out(dims.begin(), dims.end() - 2);
  out.push_back(len);
  if (len == 0) return b.Full(x->shape.element_type(), 0, out);
  return b.SliceInDim(f, start, start + (len - 1) * (n2 + 1) + 1, n2 + 1, r - 2);
}

Expected<LoweredOp> Diagonal(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t r = x->shape.rank();
  auto d1 = WrapDim(ctx.Int("dim1", 2, 0), r), d2 = WrapDim(ctx.Int("dim2", 3, 1), r);
  if (!d1 || !d2 || *d1 == *d2) return ctx.Unsupported("bad diagonal dims");
  return ctx.Finish({DiagonalOf(b, x, ctx.Int("offset", 1, 0), *d1, *d2)});
}

Expected<LoweredOp> AsStrided(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> size = ctx.Ints("size", 1), stride = ctx.Ints("stride", 2);
  int64_t offset = ctx.Int("storage_offset", 3, 0);
  if (size.size() != stride.size()) return ctx.Unsupported("size and stride differ in length");
  // A gather from the flattened input at offset + sum(i_k * stride_k) (torch_xla's general path).
  int64_t total = x->shape.elements();
  Instruction* flat = b.Reshape(x, {total});
  int64_t count = Numel(size);
  Instruction* index = Full(b, PrimitiveType::S64, static_cast<double>(offset), size);
  for (size_t k = 0; k < size.size(); ++k) {
    if (stride[k] == 0) continue;
    Instruction* io = b.Iota(Shape::Array(PrimitiveType::S64, size), static_cast<int64_t>(k));
    index = Add(b, index, MulScalar(b, io, static_cast<double>(stride[k])));
  }
  index = b.Reshape(index, {count, 1});
  hlo::GatherDimensionNumbers dn;
  dn.offset_dims = {};
  dn.collapsed_slice_dims = {0};
  dn.start_index_map = {0};
  dn.index_vector_dim = 1;
  Instruction* g = b.Gather(flat, index, dn, {1}, Shape::Array(x->shape.element_type(), {count}));
  return ctx.Finish({b.Reshape(g, size)});
}

// as_strided_scatter: the element (i_0, ..., i_k) of src goes to flat position
// offset + sum(i_j * stride_j) of self (contiguous): a scatter with a replace computation into the
// flattened self, the index computed as AsStrided's gather index is.
Expected<LoweredOp> AsStridedScatter(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * src0, ctx.RequiredTensor("src", 1));
  std::vector<int64_t> size = ctx.Ints("size", 2), stride = ctx.Ints("stride", 3);
  int64_t offset = ctx.Int("storage_offset", 4, 0);
  if (size.size() != stride.size()) return ctx.Unsupported("size and stride differ in length");
  PrimitiveType t = x->shape.element_type();
  Instruction* src = b.Convert(src0, t);
  if (Dims(src) != size) {
    if (Numel(Dims(src)) != Numel(size)) return ctx.Unsupported("src does not have the view's size");
    src = b.Reshape(src, size);
  }
  int64_t total = x->shape.elements();
  int64_t count = Numel(size);
  Instruction* index = Full(b, PrimitiveType::S64, static_cast<double>(offset), size);
  for (size_t k = 0; k < size.size(); ++k) {
    if (stride[k] == 0) continue;
    Instruction* io = b.Iota(Shape::Array(PrimitiveType::S64, size), static_cast<int64_t>(k));
    index = Add(b, index, MulScalar(b, io, static_cast<double>(stride[k])));
  }
  hlo::ScatterDimensionNumbers dn;
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  Instruction* s = b.Scatter({b.Reshape(x, {total})}, b.Reshape(index, {count, 1}), {b.Reshape(src, {count})}, dn,
                             ReplaceComputation(b, t));
  return ctx.Finish({b.Reshape(s, Dims(x))});
}

// Writes `src` into `x` at a static position: a pad of src to x's shape plus a select on a mask of
// the same pad (XLA's UpdateSlice with static starts uses dynamic-update-slice; strided writes need
// the mask form).
Instruction* StridedUpdate(Builder& b, Instruction* x, Instruction* src, int64_t dim, int64_t start, int64_t step) {
  if (step == 1) {
    std::vector<Instruction*> starts;
    starts.reserve(static_cast<size_t>(x->shape.rank()));
    for (int64_t i = 0; i < x->shape.rank(); ++i) starts.push_back(ConstS64(b, i == dim ? start : 0));
    return b.DynamicUpdateSlice(x, src, starts);
  }
  hlo::PaddingConfig cfg;
  cfg.dimensions.resize(static_cast<size_t>(x->shape.rank()));
  int64_t size = x->shape.dimensions()[static_cast<size_t>(dim)];
  int64_t n = src->shape.dimensions()[static_cast<size_t>(dim)];
  auto& d = cfg.dimensions[static_cast<size_t>(dim)];
  d.edge_padding_low = start;
  d.interior_padding = step - 1;
  d.edge_padding_high = size - (start + (n == 0 ? 0 : (n - 1) * step + 1));
  Instruction* padded = b.Pad(src, Scalar(b, src->shape.element_type(), 0), cfg);
  Instruction* mask =
      b.Pad(Full(b, PrimitiveType::PRED, 1, src->shape.dimensions()), Scalar(b, PrimitiveType::PRED, 0), cfg);
  return b.Select(mask, padded, x);
}

Expected<LoweredOp> SliceScatter(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * src, ctx.RequiredTensor("src", 1));
  int64_t r = x->shape.rank();
  auto d = WrapDim(ctx.Int("dim", 2, 0), r);
  if (!d || r == 0) return ctx.Unsupported("dimension out of range");
  int64_t size = x->shape.dimensions()[static_cast<size_t>(*d)];
  int64_t start = ctx.OptInt("start", 3).value_or(0), step = ctx.Int("step", 5, 1);
  if (start < 0) start += size;
  start = std::clamp<int64_t>(start, 0, size);
  return ctx.Finish({StridedUpdate(b, x, b.Convert(src, x->shape.element_type()), *d, start, step)});
}

Expected<LoweredOp> SelectScatter(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * src, ctx.RequiredTensor("src", 1));
  int64_t r = x->shape.rank();
  auto d = WrapDim(ctx.Int("dim", 2, 0), r);
  if (!d || r == 0) return ctx.Unsupported("dimension out of range");
  int64_t size = x->shape.dimensions()[static_cast<size_t>(*d)];
  int64_t index = ctx.Int("index", 3, 0);
  if (index < 0) index += size;
  std::vector<int64_t> dims = x->shape.dimensions();
  dims[static_cast<size_t>(*d)] = 1;
  Instruction* s = b.Reshape(b.Convert(src, x->shape.element_type()), dims);
  return ctx.Finish({StridedUpdate(b, x, s, *d, index, 1)});
}

Expected<LoweredOp> DiagonalScatter(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * src, ctx.RequiredTensor("src", 1));
  int64_t r = x->shape.rank();
  int64_t offset = ctx.Int("offset", 2, 0);
  auto d1 = WrapDim(ctx.Int("dim1", 3, 0), r), d2 = WrapDim(ctx.Int("dim2", 4, 1), r);
  if (!d1 || !d2 || *d1 == *d2) return ctx.Unsupported("bad diagonal dims");
  // mask = (iota(d2) - iota(d1) == offset); the source broadcast along d2 (or d1).
  std::vector<int64_t> dims = x->shape.dimensions();
  Shape is = Shape::Array(PrimitiveType::S64, dims);
  Instruction* diff = Sub(b, b.Iota(is, *d2), b.Iota(is, *d1));
  Instruction* mask = CmpScalar(b, diff, static_cast<double>(offset), ComparisonDirection::kEq);
  // src has dims (others..., len); index along the diagonal is i = position on d1 (offset >= 0) or d2.
  int64_t along = offset >= 0 ? *d1 : *d2;
  int64_t len = src->shape.dimensions().back();
  std::vector<int64_t> others;
  for (int64_t i = 0; i < r; ++i)
    if (i != *d1 && i != *d2) others.push_back(i);
  // Broadcast src into [dims] mapping its last dim to `along` after padding to the full size.
  Instruction* s = b.Convert(src, x->shape.element_type());
  int64_t full = dims[static_cast<size_t>(along)];
  if (len < full) {
    hlo::PaddingConfig cfg;
    cfg.dimensions.resize(static_cast<size_t>(s->shape.rank()));
    cfg.dimensions.back().edge_padding_high = full - len;
    s = b.Pad(s, Scalar(b, s->shape.element_type(), 0), cfg);
  }
  std::vector<int64_t> map = others;
  map.push_back(along);
  Instruction* bs = b.Broadcast(s, dims, map);
  return ctx.Finish({b.Select(mask, bs, x)});
}

Expected<LoweredOp> TriOp(const Node& n, Builder& b, bool lower) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t r = x->shape.rank();
  if (r < 2) return ctx.Unsupported("needs at least 2 dims");
  int64_t k = ctx.Int("diagonal", 1, 0);
  Shape is = Shape::Array(PrimitiveType::S64, x->shape.dimensions());
  Instruction* diff = Sub(b, b.Iota(is, r - 1), b.Iota(is, r - 2));  // col - row
  Instruction* keep =
      CmpScalar(b, diff, static_cast<double>(k), lower ? ComparisonDirection::kLe : ComparisonDirection::kGe);
  return ctx.Finish({b.Select(keep, x, FullLike(b, x, 0))});
}

Expected<LoweredOp> Tril(const Node& n, Builder& b) { return TriOp(n, b, true); }
Expected<LoweredOp> Triu(const Node& n, Builder& b) { return TriOp(n, b, false); }

Expected<LoweredOp> PixelShuffle(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t f = ctx.Int("upscale_factor", 1, 1);
  std::vector<int64_t> d = x->shape.dimensions();
  if (d.size() < 3) return ctx.Unsupported("needs at least 3 dims");
  size_t k = d.size();
  std::vector<int64_t> lead(d.begin(), d.end() - 3);
  int64_t C = d[k - 3], H = d[k - 2], W = d[k - 1];
  std::vector<int64_t> s1 = lead;
  s1.insert(s1.end(), {C / (f * f), f, f, H, W});
  Instruction* r = b.Reshape(x, s1);
  int64_t L = static_cast<int64_t>(lead.size());
  std::vector<int64_t> perm = DimRange(0, L);
  perm.insert(perm.end(), {L, L + 3, L + 1, L + 4, L + 2});
  r = b.Transpose(r, perm);
  std::vector<int64_t> out = lead;
  out.insert(out.end(), {C / (f * f), H * f, W * f});
  return ctx.Finish({b.Reshape(r, out)});
}

Expected<LoweredOp> PixelUnshuffle(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t f = ctx.Int("downscale_factor", 1, 1);
  std::vector<int64_t> d = x->shape.dimensions();
  if (d.size() < 3) return ctx.Unsupported("needs at least 3 dims");
  size_t k = d.size();
  std::vector<int64_t> lead(d.begin(), d.end() - 3);
  int64_t C = d[k - 3], H = d[k - 2], W = d[k - 1];
  std::vector<int64_t> s1 = lead;
  s1.insert(s1.end(), {C, H / f, f, W / f, f});
  Instruction* r = b.Reshape(x, s1);
  int64_t L = static_cast<int64_t>(lead.size());
  std::vector<int64_t> perm = DimRange(0, L);
  perm.insert(perm.end(), {L, L + 2, L + 4, L + 1, L + 3});
  r = b.Transpose(r, perm);
  std::vector<int64_t> out = lead;
  out.insert(out.end(), {C * f * f, H / f, W / f});
  return ctx.Finish({b.Reshape(r, out)});
}

Expected<LoweredOp> Unfold(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t r = x->shape.rank();
  auto d = WrapDim(ctx.Int("dimension", 1, 0), r);
  if (!d) return ctx.Unsupported("dimension out of range");
  int64_t size = ctx.Int("size", 2, 1), step = ctx.Int("step", 3, 1);
  if (r == 0) return ctx.Finish({b.Reshape(x, {1})});
  int64_t len = x->shape.dimensions()[static_cast<size_t>(*d)];
  int64_t count = (len - size) / step + 1;
  // Each window is a strided slice; stack them: result dims (..., count, ..., size).
  std::vector<Instruction*> wins;
  for (int64_t w = 0; w < count; ++w) {
    Instruction* s = b.SliceInDim(x, w * step, w * step + size, 1, *d);
    std::vector<int64_t> dims = s->shape.dimensions();
    // move the window dim to the end
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < r; ++i)
      if (i != *d) perm.push_back(i);
    perm.push_back(*d);
    s = b.Transpose(s, perm);
    std::vector<int64_t> td = s->shape.dimensions();
    td.insert(td.begin() + *d, 1);
    wins.push_back(b.Reshape(s, td));
  }
  if (wins.empty()) return ctx.Unsupported("window larger than the dimension");
  return ctx.Finish({wins.size() == 1 ? wins[0] : b.Concatenate(wins, *d)});
}

// unfold_backward(grad_in, input_sizes, dim, size, step): the gradient of Tensor.unfold. grad_in is
// [..., count, ..., size] (the windows along `dim`, each window's elements last); element k of window w adds
// back at position w * step + k of `dim` (windows overlap when step < size). One scatter-add into zeros of
// input_sizes, the window elements moved next to their window and flattened as the scatter's indices.
Expected<LoweredOp> UnfoldBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_in", 0));
  std::vector<int64_t> in = ctx.Ints("input_sizes", 1);
  int64_t r = static_cast<int64_t>(in.size());
  int64_t size = ctx.Int("size", 3, 1), step = ctx.Int("step", 4, 1);
  if (r == 0) {  // unfold of a 0-d tensor is a [1]
    if (g->shape.elements() != 1) return ctx.Unsupported("a 0-d input's gradient must have one element");
    return ctx.Finish({b.Reshape(g, {})});
  }
  auto d = WrapDim(ctx.Int("dim", 2, 0), r);
  if (!d || size < 1 || step < 1) return ctx.Unsupported("dimension, size or step out of range");
  std::vector<int64_t> gd = Dims(g);
  size_t ud = static_cast<size_t>(*d);
  if (static_cast<int64_t>(gd.size()) != r + 1 || gd.back() != size)
    return ctx.Unsupported("grad_in does not match unfold's result");
  int64_t count = gd[ud];
  for (int64_t i = 0; i < r; ++i)
    if (i != *d && gd[static_cast<size_t>(i)] != in[static_cast<size_t>(i)])
      return ctx.Unsupported("grad_in does not match input_sizes");
  if (count > 0 && (count - 1) * step + size > in[ud]) return ctx.Unsupported("windows reach past the input");
  PrimitiveType t = g->shape.element_type();
  // [..., count, ..., size] -> [..., count, size, ...] -> [..., count * size, ...]
  std::vector<int64_t> perm;
  for (int64_t i = 0; i <= *d; ++i) perm.push_back(i);
  perm.push_back(r);
  for (int64_t i = *d + 1; i < r; ++i) perm.push_back(i);
  std::vector<int64_t> flat = in;
  flat[ud] = count * size;
  Instruction* upd = b.Reshape(b.Transpose(g, perm), flat);
  // Position of each (window, element) pair along dim: w * step + k.
  const PrimitiveType S = PrimitiveType::S64;
  Instruction* w = b.Iota(Shape::Array(S, {count, size}), 0);
  Instruction* k = b.Iota(Shape::Array(S, {count, size}), 1);
  Instruction* at = b.Reshape(Add(b, MulScalar(b, w, static_cast<double>(step)), k), {count * size, 1});
  hlo::ScatterDimensionNumbers dn = ScatterAlongDim(*d, r);
  Instruction* zeros = Full(b, t, 0, in);
  if (t == PrimitiveType::PRED) return ctx.Unsupported("bool unfold_backward");
  return ctx.Finish({b.Scatter({zeros}, at, {upd}, dn, b.ScalarBinaryComputation(Opcode::kAdd, t))});
}

// The sym_* queries of a tensor's geometry (an s64 scalar, or a pred for sym_is_contiguous).
enum class SymQuery { kSize, kStride, kNumel, kStorageOffset, kIsContiguous };

Expected<LoweredOp> Sym(const Node& n, Builder& b, SymQuery query) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t v = 0;
  if (query == SymQuery::kNumel) {
    v = x->shape.elements();
  } else if (query == SymQuery::kStorageOffset) {
    v = 0;
  } else if (query == SymQuery::kIsContiguous) {
    return ctx.Finish({b.ConstantScalar(PrimitiveType::PRED, 1)});
  } else {
    auto d = WrapDim(ctx.Int("dim", 1, 0), x->shape.rank());
    if (!d || x->shape.rank() == 0) return ctx.Unsupported("dimension out of range");
    if (query == SymQuery::kStride) {
      v = 1;
      for (int64_t i = *d + 1; i < x->shape.rank(); ++i) v *= x->shape.dimensions()[static_cast<size_t>(i)];
    } else {
      // XLA's get-dimension-size reads the (possibly dynamic) size of a dimension.
      Instruction* g = b.Add([&] {
        auto instr = std::make_unique<hlo::Instruction>();
        instr->opcode = Opcode::kGetDimensionSize;
        instr->shape = Shape::Scalar(PrimitiveType::S32);
        instr->operands = {x};
        instr->dimensions = {*d};
        return instr;
      }());
      return ctx.Finish({b.Convert(g, PrimitiveType::S64)});
    }
  }
  return ctx.Finish({ConstS64(b, v)});
}

template <SymQuery kQuery>
Expected<LoweredOp> SymOf(const Node& n, Builder& b) {
  return Sym(n, b, kQuery);
}

Expected<LoweredOp> ViewAsReal(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  if (!hlo::IsComplex(x->shape.element_type())) return ctx.Unsupported("needs a complex tensor");
  std::vector<int64_t> d = x->shape.dimensions();
  d.push_back(1);
  Instruction* re = b.Reshape(b.Real(x), d);
  Instruction* im = b.Reshape(b.Imag(x), d);
  return ctx.Finish({b.Concatenate({re, im}, static_cast<int64_t>(d.size()) - 1)});
}

Expected<LoweredOp> ViewAsComplex(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> d = x->shape.dimensions();
  if (d.empty() || d.back() != 2) return ctx.Unsupported("last dimension must be 2");
  int64_t last = static_cast<int64_t>(d.size()) - 1;
  d.pop_back();
  Instruction* re = b.Reshape(b.SliceInDim(x, 0, 1, 1, last), d);
  Instruction* im = b.Reshape(b.SliceInDim(x, 1, 2, 1, last), d);
  return ctx.Finish({b.Complex(re, im)});
}

Expected<LoweredOp> Resize(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  const TensorMeta* out = ctx.OutputMeta(0);
  std::vector<int64_t> size = out ? out->sizes : ctx.Ints("size", 1);
  int64_t want = Numel(size), have = x->shape.elements();
  Instruction* flat = b.Reshape(x, {have});
  if (want <= have) {
    flat = b.SliceInDim(flat, 0, want, 1, 0);
  } else {
    hlo::PaddingConfig cfg;
    cfg.dimensions.resize(1);
    cfg.dimensions[0].edge_padding_high = want - have;
    flat = b.Pad(flat, Scalar(b, x->shape.element_type(), 0), cfg);
  }
  return ctx.Finish({b.Reshape(flat, size)});
}

// Backward of the view ops: the gradient written into zeros of the input's size (`slice`: slice_backward,
// else select_backward).
Expected<LoweredOp> ViewBackward(const Node& n, Builder& b, bool slice) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  std::vector<int64_t> sizes = ctx.Ints("input_sizes", 1);
  if (const TensorMeta* out = ctx.OutputMeta(0)) sizes = out->sizes;
  PrimitiveType t = g->shape.element_type();
  Instruction* zeros = Full(b, t, 0, sizes);
  int64_t r = static_cast<int64_t>(sizes.size());
  if (slice) {
    auto d = WrapDim(ctx.Int("dim", 2, 0), r);
    if (!d || r == 0) return ctx.Unsupported("dimension out of range");
    int64_t size = sizes[static_cast<size_t>(*d)];
    int64_t start = ctx.Int("start", 3, 0), step = ctx.Int("step", 5, 1);
    if (start < 0) start += size;
    start = std::clamp<int64_t>(start, 0, size);
    return ctx.Finish({StridedUpdate(b, zeros, g, *d, start, step)});
  }
  {
    auto d = WrapDim(ctx.Int("dim", 2, 0), r);
    if (!d || r == 0) return ctx.Unsupported("dimension out of range");
    int64_t index = ctx.Int("index", 3, 0);
    if (index < 0) index += sizes[static_cast<size_t>(*d)];
    std::vector<int64_t> dims = sizes;
    dims[static_cast<size_t>(*d)] = 1;
    return ctx.Finish({StridedUpdate(b, zeros, b.Reshape(g, dims), *d, index, 1)});
  }
}

Expected<LoweredOp> SliceBackward(const Node& n, Builder& b) { return ViewBackward(n, b, true); }
Expected<LoweredOp> SelectBackward(const Node& n, Builder& b) { return ViewBackward(n, b, false); }

Expected<LoweredOp> Diag(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t k = ctx.Int("diagonal", 1, 0);
  if (x->shape.rank() == 2) {
    std::vector<int64_t> d = Dims(x);
    int64_t len =
        k >= 0 ? std::max<int64_t>(0, std::min(d[0], d[1] - k)) : std::max<int64_t>(0, std::min(d[0] + k, d[1]));
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
  Instruction* mask =
      CmpScalar(b, Sub(b, b.Iota(is, 1), b.Iota(is, 0)), static_cast<double>(k), ComparisonDirection::kEq);
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
  Instruction* mask =
      CmpScalar(b, Sub(b, b.Iota(is, *d2), b.Iota(is, *d1)), static_cast<double>(k), ComparisonDirection::kEq);
  return ctx.Finish({b.Select(mask, b.Broadcast(xp, od, map), Full(b, x->shape.element_type(), 0, od))});
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
  std::vector<int64_t> perm = DimRange(0, r);
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

Expected<LoweredOp> Flatten(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> d = Dims(x);
  if (d.empty()) return ctx.Finish({b.Reshape(x, {1})});
  auto start = WrapDim(ctx.Int("start_dim", 1, 0), Rank(x)), end = WrapDim(ctx.Int("end_dim", 2, -1), Rank(x));
  if (!start || !end || *start > *end) return ctx.Unsupported("start_dim/end_dim out of range");
  std::vector<int64_t> out(d.begin(), d.begin() + *start);
  int64_t m = 1;
  for (int64_t i = *start; i <= *end; ++i) m *= d[static_cast<size_t>(i)];
  out.push_back(m);
  out.insert(out.end(), d.begin() + *end + 1, d.end());
  return ctx.Finish({b.Reshape(x, out)});
}

Expected<LoweredOp> Unflatten(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> d = Dims(x);
  auto dim = WrapDim(ctx.Int("dim", 1, 0), Rank(x));
  std::vector<int64_t> sizes = ctx.Ints("sizes", 2);
  if (!dim || sizes.empty()) return ctx.Unsupported("bad dim or sizes");
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) infer = static_cast<int64_t>(i);
    else known *= sizes[i];
  }
  if (infer >= 0) sizes[static_cast<size_t>(infer)] = known ? d[static_cast<size_t>(*dim)] / known : 0;
  std::vector<int64_t> out(d.begin(), d.begin() + *dim);
  out.insert(out.end(), sizes.begin(), sizes.end());
  out.insert(out.end(), d.begin() + *dim + 1, d.end());
  return ctx.Finish({b.Reshape(x, out)});
}

}  // namespace

const LoweringFamily& ShapeLowerings() {
  using T = Transposed;
  static const auto* family =
      new LoweringFamily{FamilyOf(__FILE__),
                         {
                             {"aten::alias", Identity},
                             {"aten::alias_copy", Identity},
                             {"aten::clone", Identity},
                             {"aten::set_.source_Storage", SetFromStorage},
                             {"aten::set_.source_Storage_storage_offset", SetFromStorage},
                             {"aten::contiguous", Identity},
                             {"aten::detach", Identity, kInPlaceForm},
                             {"aten::detach_copy", Identity},
                             {"aten::lift", Identity},
                             {"aten::lift_fresh", Identity},
                             {"aten::lift_fresh_copy", Identity},
                             {"aten::view", View},
                             {"aten::view_copy", Reshape},
                             {"aten::reshape", Reshape},
                             {"aten::_reshape_alias", Reshape},
                             {"aten::_reshape_alias_copy", Reshape},
                             {"aten::_unsafe_view", Reshape},
                             {"aten::flatten", Flatten},
                             {"aten::unflatten", Unflatten},
                             {"aten::expand", Expand},
                             {"aten::expand_as", Expand},
                             {"aten::expand_copy", Expand},
                             {"aten::permute", Permute},
                             {"aten::permute_copy", Permute},
                             {"aten::t", TransposeOf<T::kAllDims>, InPlaceView(RestoreT)},
                             {"aten::numpy_T", TransposeOf<T::kAllDims>},
                             {"aten::mT", TransposeOf<T::kLastTwo>},
                             {"aten::adjoint", TransposeOf<T::kLastTwo>},
                             {"aten::transpose", TransposeOf<T::kArgDims>, InPlaceView(RestoreTransposed)},
                             {"aten::transpose_copy", TransposeOf<T::kArgDims>},
                             {"aten::t_copy", TransposeOf<T::kArgDims>},
                             {"aten::swapaxes", TransposeOf<T::kArgDims>, InPlaceView(RestoreTransposed)},
                             {"aten::swapdims", TransposeOf<T::kArgDims>, InPlaceView(RestoreTransposed)},
                             {"aten::squeeze", Squeeze, kInPlaceForm},
                             {"aten::squeeze_copy", Squeeze},
                             {"aten::unsqueeze", Unsqueeze, InPlaceView(RestoreUnsqueezed)},
                             {"aten::unsqueeze_copy", Unsqueeze},
                             {"aten::slice.Tensor", SliceOp},
                             {"aten::slice_copy", SliceOp},
                             {"aten::select.int", Select},
                             {"aten::select_copy", Select},
                             {"aten::narrow_copy", NarrowCopy},
                             {"aten::cat", Cat},
                             {"aten::concat", Cat},
                             {"aten::concatenate", Cat},
                             {"aten::stack", Stack},
                             {"aten::split", SplitBySizes},
                             {"aten::split_copy", SplitBySizes},
                             {"aten::split_with_sizes", SplitBySizes},
                             {"aten::split_with_sizes_copy", SplitBySizes},
                             {"aten::unsafe_split", SplitBySizes},
                             {"aten::unsafe_split_with_sizes", SplitBySizes},
                             {"aten::chunk", Chunk},
                             {"aten::unsafe_chunk", Chunk},
                             {"aten::unbind", Unbind},
                             {"aten::unbind_copy", UnbindCopy},
                             {"aten::channel_shuffle", ChannelShuffle},
                             {"aten::native_channel_shuffle", ChannelShuffle},
                             {"aten::flip", Flip},
                             {"aten::fliplr", Fliplr},
                             {"aten::flipud", Flipud},
                             {"aten::roll", Roll},
                             {"aten::rot90", Rot90},
                             {"aten::repeat", Repeat},
                             {"aten::constant_pad_nd", ConstantPad},
                             {"aten::reflection_pad1d", ReflectionPad},
                             {"aten::reflection_pad2d", ReflectionPad},
                             {"aten::reflection_pad3d", ReflectionPad},
                             {"aten::replication_pad1d", ReplicationPad},
                             {"aten::replication_pad2d", ReplicationPad},
                             {"aten::replication_pad3d", ReplicationPad},
                             {"aten::reflection_pad1d_backward", ReflectionPadBackward},
                             {"aten::reflection_pad2d_backward", ReflectionPadBackward},
                             {"aten::reflection_pad3d_backward", ReflectionPadBackward},
                             {"aten::replication_pad1d_backward", ReplicationPadBackward},
                             {"aten::replication_pad2d_backward", ReplicationPadBackward},
                             {"aten::replication_pad3d_backward", ReplicationPadBackward},
                             {"aten::diagonal", Diagonal},
                             {"aten::diagonal_copy", Diagonal},
                             {"aten::diag", Diag},
                             {"aten::diag_embed", DiagEmbed},
                             {"aten::block_diag", BlockDiag},
                             {"aten::as_strided", AsStrided, kInPlaceForm},
                             {"aten::as_strided_copy", AsStrided},
                             {"aten::as_strided_scatter", AsStridedScatter},
                             {"aten::slice_scatter", SliceScatter},
                             {"aten::select_scatter", SelectScatter},
                             {"aten::diagonal_scatter", DiagonalScatter},
                             {"aten::slice_backward", SliceBackward},
                             {"aten::select_backward", SelectBackward},
                             {"aten::tril", Tril, kInPlaceForm},
                             {"aten::triu", Triu, kInPlaceForm},
                             {"aten::pixel_shuffle", PixelShuffle},
                             {"aten::pixel_unshuffle", PixelUnshuffle},
                             {"aten::unfold", Unfold},
                             {"aten::unfold_backward", UnfoldBackward},
                             {"aten::unfold_copy", Unfold},
                             {"aten::sym_size", SymOf<SymQuery::kSize>},
                             {"aten::sym_stride", SymOf<SymQuery::kStride>},
                             {"aten::sym_numel", SymOf<SymQuery::kNumel>},
                             {"aten::sym_storage_offset", SymOf<SymQuery::kStorageOffset>},
                             {"aten::sym_is_contiguous", SymOf<SymQuery::kIsContiguous>},
                             {"aten::view_as_real", ViewAsReal},
                             {"aten::view_as_complex", ViewAsComplex},
                             {"aten::resize_", Resize},
                             {"aten::resize_as_", Resize},
                         }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
