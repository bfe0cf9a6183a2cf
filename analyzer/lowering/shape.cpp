// View and shape ops: reshape, transpose, slice, broadcast, concatenate, pad, ... Pure metadata ops
// (detach, alias, lift_fresh, contiguous) lower to nothing: their output is their input parameter.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "analyzer/lowering/ops.h"

namespace opprobe::analyzer::lowering {
Expected<LoweredOp> Identity(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  // clone/contiguous/detach/alias keep dtype and shape; nothing to emit.
  return ctx.Finish({x});
}

Expected<LoweredOp> View(const Node& n, Builder& b) {
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
  if (n.op == "aten::view" && ctx.Dtype("dtype", 1)) {
    // view.dtype: a bitcast between element types of the same width.
    PrimitiveType t = *ctx.Dtype("dtype", 1);
    if (hlo::BitWidth(t) != hlo::BitWidth(x->shape.element_type())) return ctx.Unsupported("view.dtype across widths");
    return ctx.Finish({b.BitcastConvert(x, t)});
  }
  return ctx.Finish({b.Reshape(x, size)});
}

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

Expected<LoweredOp> TransposeOp(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t r = x->shape.rank();
  std::vector<int64_t> perm(static_cast<size_t>(r));
  std::iota(perm.begin(), perm.end(), 0);
  if (r < 2) return ctx.Finish({x});
  if (n.op == "aten::t" || n.op == "aten::t_" || n.op == "aten::numpy_T") {
    std::reverse(perm.begin(), perm.end());
  } else if (n.op == "aten::mT" || n.op == "aten::adjoint") {
    std::swap(perm[static_cast<size_t>(r - 1)], perm[static_cast<size_t>(r - 2)]);
  } else {
    auto d0 = WrapDim(ctx.Int("dim0", 1, 0), r), d1 = WrapDim(ctx.Int("dim1", 2, 1), r);
    if (!d0 || !d1) return ctx.Unsupported("dimension out of range");
    std::swap(perm[static_cast<size_t>(*d0)], perm[static_cast<size_t>(*d1)]);
  }
  return ctx.Finish({b.Transpose(x, perm)});
}

// transpose_, t_, swapdims_, swapaxes_ and unsqueeze_ change self's sizes in place. A trace that encoded the
// arguments after the call (the capture shim records from __torch_dispatch__ once the op has run) holds self with
// the new sizes, equal to the output: the sizes self had before the call are the inverse of the op's.
Fn InPlaceView(Fn fn) {
  return [fn](const Node& n, Builder& b) -> Expected<LoweredOp> {
    if (n.args.empty() || !n.args[0].value.is_tensor() || n.outputs.empty() || !n.outputs[0].is_tensor() ||
        !(n.args[0].value.tensor.sizes == n.outputs[0].tensor.sizes))
      return fn(n, b);
    Node pre = n;
    TensorMeta& self = pre.args[0].value.tensor;
    int64_t r = self.rank();
    auto IntArg = [&](size_t pos, int64_t dflt) {
      const Value* v = n.arg(pos == 1 ? "dim0" : "dim1", pos);
      if (n.op == "aten::unsqueeze_") v = n.arg("dim", 1);
      return v && v->kind == Value::Kind::kInt ? v->i : dflt;
    };
    auto Swap = [&](int64_t d0, int64_t d1) {
      auto w0 = WrapDim(d0, r), w1 = WrapDim(d1, r);
      if (!w0 || !w1) return;
      std::swap(self.sizes[static_cast<size_t>(*w0)], self.sizes[static_cast<size_t>(*w1)]);
      if (self.dynamic.size() == self.sizes.size())
        self.dynamic.swap(self.dynamic[static_cast<size_t>(*w0)], self.dynamic[static_cast<size_t>(*w1)]);
    };
    if (n.op == "aten::t_") {
      if (r == 2) Swap(0, 1);
    } else if (n.op == "aten::unsqueeze_") {
      auto w = WrapDim(IntArg(1, 0), r);
      if (w && self.sizes[static_cast<size_t>(*w)] == 1) {
        self.sizes.erase(self.sizes.begin() + *w);
        if (self.dynamic.size() > static_cast<size_t>(*w)) self.dynamic.erase(self.dynamic.begin() + *w);
      }
    } else if (r >= 2) {
      Swap(IntArg(1, 0), IntArg(2, 1));
    }
    return fn(pre, b);
  };
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
  Instruction* r = b.Concatenate(parts, *d);
  if (n.op == "aten::hstack" || n.op == "aten::vstack") return ctx.Unsupported("hstack/vstack are composites");
  return ctx.Finish({r});
}

// channel_shuffle(self, groups): [N, g*k, ...] -> reshape [N, g, k, ...] -> swap g, k -> reshape back.
Expected<LoweredOp> ChannelShuffle(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t groups = ctx.Int("groups", 1, 1);
  std::vector<int64_t> dims = Dims(x);
  if (dims.size() < 3 || groups <= 0 || dims[1] % groups != 0) return ctx.Unsupported("channels not divisible by groups");
  std::vector<int64_t> split = {dims[0], groups, dims[1] / groups};
  split.insert(split.end(), dims.begin() + 2, dims.end());
  std::vector<int64_t> perm(split.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[1], perm[2]);
  return ctx.Finish({b.Reshape(b.Transpose(b.Reshape(x, split), perm), dims)});
}

Expected<LoweredOp> Split(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t r = x->shape.rank();
  auto d = WrapDim(ctx.Int("dim", n.op == "aten::unbind" ? 1 : 2, 0), r);
  if (!d || r == 0) return ctx.Unsupported("dimension out of range");
  int64_t size = x->shape.dimensions()[static_cast<size_t>(*d)];
  std::vector<int64_t> sizes;
  if (n.op == "aten::unbind" || n.op == "aten::unbind_copy") {
    sizes.assign(static_cast<size_t>(size), 1);
  } else if (n.op == "aten::chunk" || n.op == "aten::unsafe_chunk") {
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
    if (n.op == "aten::unbind" || n.op == "aten::unbind_copy") {
      std::vector<int64_t> dims = x->shape.dimensions();
      dims.erase(dims.begin() + *d);
      part = b.Reshape(part, dims);
    }
    outs.push_back(part);
    at += s;
  }
  return ctx.Finish(outs);
}

Expected<LoweredOp> Flip(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  std::vector<int64_t> dims;
  if (n.op == "aten::fliplr") dims = {1};
  else if (n.op == "aten::flipud") dims = {0};
  else dims = ctx.Ints("dims", 1);
  auto nd = NormDims(dims, x->shape.rank(), false);
  if (!nd.ok()) return ctx.Unsupported(nd.status().message());
  if (nd->empty()) return ctx.Finish({x});
  return ctx.Finish({b.Reverse(x, *nd)});
}

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
  if (pad.size() % 2 != 0 || pad.size() / 2 > static_cast<size_t>(x->shape.rank())) return ctx.Unsupported("bad pad list");
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

namespace {
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
}  // namespace

Expected<LoweredOp> ReflectionPad(const Node& n, Builder& b) { return MirrorPad(n, b, true); }
Expected<LoweredOp> ReplicationPad(const Node& n, Builder& b) { return MirrorPad(n, b, false); }

namespace {
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
}  // namespace

// reflection_padNd_backward / replication_padNd_backward(grad_output, self, padding).
Expected<LoweredOp> MirrorPadBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 1));
  std::vector<int64_t> pad = ctx.Ints("padding", 2);
  bool reflect = n.op.find("reflection") != std::string::npos;
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

namespace {
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
  int64_t len = offset >= 0 ? std::max<int64_t>(0, std::min(n1, n2 - offset)) : std::max<int64_t>(0, std::min(n1 + offset, n2));
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
}  // namespace

Expected<LoweredOp> Diagonal(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor(n.op == "aten::diagonal" || n.op == "aten::diagonal_copy" ? "self" : "input", 0));
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
  std::vector<int64_t> idx_dims = size;
  Instruction* index = Full(b, PrimitiveType::S64, static_cast<double>(offset), idx_dims);
  for (size_t k = 0; k < size.size(); ++k) {
    if (stride[k] == 0) continue;
    Instruction* io = b.Iota(Shape::Array(PrimitiveType::S64, idx_dims), static_cast<int64_t>(k));
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

namespace {
// Writes `src` into `x` at a static position: a pad of src to x's shape plus a select on a mask of
// the same pad (XLA's UpdateSlice with static starts uses dynamic-update-slice; strided writes need
// the mask form).
Instruction* StridedUpdate(Builder& b, Instruction* x, Instruction* src, int64_t dim, int64_t start, int64_t step) {
  if (step == 1) {
    std::vector<Instruction*> starts;
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
  Instruction* mask = b.Pad(Full(b, PrimitiveType::PRED, 1, src->shape.dimensions()), Scalar(b, PrimitiveType::PRED, 0), cfg);
  return b.Select(mask, padded, x);
}
}  // namespace

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

namespace {
Expected<LoweredOp> TriOp(const Node& n, Builder& b, bool lower) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t r = x->shape.rank();
  if (r < 2) return ctx.Unsupported("needs at least 2 dims");
  int64_t k = ctx.Int("diagonal", 1, 0);
  Shape is = Shape::Array(PrimitiveType::S64, x->shape.dimensions());
  Instruction* diff = Sub(b, b.Iota(is, r - 1), b.Iota(is, r - 2));  // col - row
  Instruction* keep = CmpScalar(b, diff, static_cast<double>(k), lower ? ComparisonDirection::kLe : ComparisonDirection::kGe);
  return ctx.Finish({b.Select(keep, x, FullLike(b, x, 0))});
}
}  // namespace

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
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < L; ++i) perm.push_back(i);
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
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < L; ++i) perm.push_back(i);
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

Expected<LoweredOp> SymSize(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  int64_t v = 0;
  if (n.op == "aten::sym_numel") {
    v = x->shape.elements();
  } else if (n.op == "aten::sym_storage_offset") {
    v = 0;
  } else if (n.op == "aten::sym_is_contiguous") {
    return ctx.Finish({b.ConstantScalar(PrimitiveType::PRED, 1)});
  } else {
    auto d = WrapDim(ctx.Int("dim", 1, 0), x->shape.rank());
    if (!d || x->shape.rank() == 0) return ctx.Unsupported("dimension out of range");
    if (n.op == "aten::sym_stride") {
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

}  // namespace opprobe::analyzer::lowering

namespace opprobe::analyzer::lowering {

// Backward of the view ops: the gradient written into zeros of the input's size.
Expected<LoweredOp> ViewBackward(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * g, ctx.RequiredTensor("grad_output", 0));
  std::vector<int64_t> sizes = ctx.Ints("input_sizes", 1);
  if (const TensorMeta* out = ctx.OutputMeta(0)) sizes = out->sizes;
  PrimitiveType t = g->shape.element_type();
  Instruction* zeros = Full(b, t, 0, sizes);
  int64_t r = static_cast<int64_t>(sizes.size());
  if (n.op == "aten::slice_backward") {
    auto d = WrapDim(ctx.Int("dim", 2, 0), r);
    if (!d || r == 0) return ctx.Unsupported("dimension out of range");
    int64_t size = sizes[static_cast<size_t>(*d)];
    int64_t start = ctx.Int("start", 3, 0), step = ctx.Int("step", 5, 1);
    if (start < 0) start += size;
    start = std::clamp<int64_t>(start, 0, size);
    return ctx.Finish({StridedUpdate(b, zeros, g, *d, start, step)});
  }
  if (n.op == "aten::select_backward") {
    auto d = WrapDim(ctx.Int("dim", 2, 0), r);
    if (!d || r == 0) return ctx.Unsupported("dimension out of range");
    int64_t index = ctx.Int("index", 3, 0);
    if (index < 0) index += sizes[static_cast<size_t>(*d)];
    std::vector<int64_t> dims = sizes;
    dims[static_cast<size_t>(*d)] = 1;
    return ctx.Finish({StridedUpdate(b, zeros, b.Reshape(g, dims), *d, index, 1)});
  }
  return ctx.Unsupported("no view backward body");
}

}  // namespace opprobe::analyzer::lowering
