// The evaluator's core: evaluating a computation in dependency order, the per-opcode dispatch, and the
// data-movement ops (broadcast, reshape, transpose, slice, pad, concatenate, ...), control flow
// (call, while, conditional) and tuples.
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "hlo/evaluator/internal.h"
#include "hlo/probe_unit.h"

namespace opprobe::hlo {
namespace eval {

std::string DimsToString(const std::vector<int64_t>& dims) { return fmt::format("[{}]", fmt::join(dims, ",")); }

Status ShapeMismatch(const Instruction& ins, const std::vector<int64_t>& dims, PrimitiveType type) {
  return InvalidInput(fmt::format("{}: result shape {} is inconsistent with its operands (expected {}{})", ins.name,
                                  ins.shape.ToString(false), PrimitiveTypeName(type), DimsToString(dims)));
}

Status ExpectShape(const Instruction& ins, const std::vector<int64_t>& dims, PrimitiveType type) {
  if (!ins.shape.IsArray() || ins.shape.element_type() != type || ins.shape.dimensions() != dims)
    return ShapeMismatch(ins, dims, type);
  return Status::Ok();
}

Literal ScalarAt(const Literal& x, int64_t i) {
  Literal s(Shape::Scalar(x.shape().element_type()));
  int64_t es = ByteWidth(x.shape().element_type());
  std::memcpy(s.data().data(), x.data().data() + i * es, static_cast<size_t>(es));
  return s;
}

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Evaluator::NextRandom() { return SplitMix64(rng_state_); }

Expected<Literal> Evaluator::Allocate(const Shape& shape) {
  if (shape.IsTuple()) {
    std::vector<Literal> elems;
    for (const auto& s : shape.tuple_shapes()) {
      OPPROBE_ASSIGN_OR_RETURN(Literal e, Allocate(s));
      elems.push_back(std::move(e));
    }
    return Literal::Tuple(std::move(elems));
  }
  if (shape.IsToken()) return Literal(shape);
  if (!shape.IsArray())
    return Unimplemented(
        fmt::format("element type {} is not supported by the evaluator", PrimitiveTypeName(shape.element_type())));
  OPPROBE_ASSIGN_OR_RETURN(int64_t n, shape.ElementCount());
  int64_t width = ByteWidth(shape.element_type());
  if (BitWidth(shape.element_type()) % 8 != 0 || (IsFloatingPoint(shape.element_type()) && width == 1))
    return Unimplemented(
        fmt::format("element type {} is not supported by the evaluator", PrimitiveTypeName(shape.element_type())));
  if (width && n > options_.max_literal_bytes / width)
    return Unimplemented(fmt::format("value {} is too large to evaluate ({} bytes, limit {})", shape.ToString(false),
                                     static_cast<double>(n) * static_cast<double>(width), options_.max_literal_bytes));
  Shape s = shape;
  return Literal(std::move(s));
}

Status Evaluator::CheckFlops(const Instruction& ins, double flops) const {
  if (flops > options_.max_flops)
    return Unimplemented(fmt::format("{}: {:.3g} multiply-adds exceed the evaluator's limit of {:.3g}", ins.name, flops,
                                     options_.max_flops));
  return Status::Ok();
}

Expected<ScalarFn> ScalarFn::ForReducer(Evaluator& ev, const Instruction& ins, const Computation* comp, int n,
                                        PrimitiveType type) {
  if (!comp || !comp->root()) return InvalidInput(fmt::format("{}: missing called computation", ins.name));
  ScalarFn fn;
  fn.comp = comp;
  fn.ev = &ev;
  auto params = comp->parameters();
  if (static_cast<int>(params.size()) != 2 * n)
    return InvalidInput(fmt::format("{}: computation {} takes {} parameters, expected {}", ins.name, comp->name(),
                                    params.size(), 2 * n));
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i]->parameter_number != static_cast<int64_t>(i) || !params[i]->shape.IsArray() ||
        params[i]->shape.rank() != 0)
      return InvalidInput(
          fmt::format("{}: computation {} must take scalar parameters 0..{}", ins.name, comp->name(), 2 * n - 1));
  }
  if (n != 1) return fn;
  const Instruction* root = comp->root();
  const Instruction *p0 = params[0], *p1 = params[1];
  if (p0->shape.element_type() != type || p1->shape.element_type() != type) return fn;
  if (root == p1) {
    fn.take_second = true;
  } else if (root == p0) {
    fn.take_first = true;
  } else if (root->operand_count() == 2 && root->shape.IsArray() && root->shape.rank() == 0 &&
             root->shape.element_type() == type && root->unknown_opcode.empty()) {
    BinaryKernel k = GetBinaryKernel(root->opcode, type);
    if (k && root->operand(0) == p0 && root->operand(1) == p1) fn.binary = k;
    if (k && root->operand(0) == p1 && root->operand(1) == p0) fn.binary = k, fn.swap = true;
  }
  return fn;
}

Expected<Literal> ScalarFn::Call(const std::vector<const Literal*>& args) const { return ev->Run(*comp, args); }

namespace {

// Copies `out_dims` elements from `src` where out dim j advances the source by src_strides[j] bytes-elements.
template <int ES>
void CopyStridedT(const uint8_t* src, int64_t offset, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& strides, uint8_t* dst) {
  size_t r = dims.size();
  if (Product(dims) <= 0) return;
  if (r == 0) {
    std::memcpy(dst, src + offset * ES, ES);
    return;
  }
  std::vector<int64_t> idx(r, 0);
  int64_t inner = dims[r - 1], is = strides[r - 1];
  int64_t s = offset, d = 0;
  while (true) {
    const uint8_t* sp = src + s * ES;
    uint8_t* dp = dst + d * ES;
    if (is == 1) {
      std::memcpy(dp, sp, static_cast<size_t>(inner * ES));
    } else {
      for (int64_t k = 0; k < inner; ++k) std::memcpy(dp + k * ES, sp + k * is * ES, ES);
    }
    d += inner;
    int64_t k = static_cast<int64_t>(r) - 2;
    for (; k >= 0; --k) {
      size_t uk = static_cast<size_t>(k);
      s += strides[uk];
      if (++idx[uk] < dims[uk]) break;
      s -= strides[uk] * dims[uk];
      idx[uk] = 0;
    }
    if (k < 0) return;
  }
}

void CopyStrided(const uint8_t* src, int64_t offset, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& strides, uint8_t* dst, int64_t es) {
  switch (es) {
    case 1: return CopyStridedT<1>(src, offset, dims, strides, dst);
    case 2: return CopyStridedT<2>(src, offset, dims, strides, dst);
    case 4: return CopyStridedT<4>(src, offset, dims, strides, dst);
    case 8: return CopyStridedT<8>(src, offset, dims, strides, dst);
    case 16: return CopyStridedT<16>(src, offset, dims, strides, dst);
    default: return;
  }
}

Status NeedArray(const Instruction& ins, const Literal& l, const char* what = "operand") {
  if (!l.shape().IsArray()) return InvalidInput(fmt::format("{}: {} is not an array", ins.name, what));
  return Status::Ok();
}

int64_t ElementSize(const Literal& l) { return ByteWidth(l.shape().element_type()); }

Expected<Literal> EvalBroadcast(Evaluator& ev, const Instruction& ins, const Literal& x) {
  OPPROBE_RETURN_IF_ERROR(NeedArray(ins, x));
  if (!ins.shape.IsArray() || ins.shape.element_type() != x.shape().element_type() ||
      static_cast<int>(ins.dimensions.size()) != x.shape().rank())
    return InvalidInput(fmt::format("{}: broadcast of {} to {} with dimensions={}", ins.name, x.shape().ToString(false),
                                    ins.shape.ToString(false), DimsToString(ins.dimensions)));
  const auto& od = ins.shape.dimensions();
  std::vector<int64_t> strides(od.size(), 0);
  auto xs = Strides(x.shape().dimensions());
  for (size_t i = 0; i < ins.dimensions.size(); ++i) {
    int64_t d = ins.dimensions[i];
    if (d < 0 || d >= static_cast<int64_t>(od.size()) || od[static_cast<size_t>(d)] != x.shape().dimensions()[i])
      return InvalidInput(fmt::format("{}: broadcast of {} to {} with dimensions={}", ins.name,
                                      x.shape().ToString(false), ins.shape.ToString(false),
                                      DimsToString(ins.dimensions)));
    strides[static_cast<size_t>(d)] += xs[i];
  }
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  CopyStrided(x.data().data(), 0, od, strides, out.data().data(), ElementSize(x));
  return out;
}

Expected<Literal> EvalReshape(Evaluator& ev, const Instruction& ins, const Literal& x) {
  OPPROBE_RETURN_IF_ERROR(NeedArray(ins, x));
  if (!ins.shape.IsArray()) return InvalidInput(fmt::format("{}: result is not an array", ins.name));
  OPPROBE_ASSIGN_OR_RETURN(int64_t n, ins.shape.ElementCount());
  bool same_type = ins.shape.element_type() == x.shape().element_type();
  if (same_type && n == x.element_count()) {
    OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
    out.data() = x.data();
    return out;
  }
  if (ins.opcode == Opcode::kBitcast) return EvalBitcastConvert(ev, ins, x);
  return InvalidInput(
      fmt::format("{}: {} cannot be reshaped to {}", ins.name, x.shape().ToString(false), ins.shape.ToString(false)));
}

Expected<Literal> EvalTranspose(Evaluator& ev, const Instruction& ins, const Literal& x) {
  OPPROBE_RETURN_IF_ERROR(NeedArray(ins, x));
  const auto& perm = ins.dimensions;
  const auto& xd = x.shape().dimensions();
  std::vector<bool> seen(xd.size(), false);
  if (perm.size() != xd.size())
    return InvalidInput(
        fmt::format("{}: permutation {} does not fit {}", ins.name, DimsToString(perm), x.shape().ToString(false)));
  std::vector<int64_t> od, strides;
  auto xs = Strides(xd);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(xd.size()) || seen[static_cast<size_t>(p)])
      return InvalidInput(fmt::format("{}: {} is not a permutation", ins.name, DimsToString(perm)));
    seen[static_cast<size_t>(p)] = true;
    od.push_back(xd[static_cast<size_t>(p)]);
    strides.push_back(xs[static_cast<size_t>(p)]);
  }
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, od, x.shape().element_type()));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  CopyStrided(x.data().data(), 0, od, strides, out.data().data(), ElementSize(x));
  return out;
}

Expected<Literal> EvalReverse(Evaluator& ev, const Instruction& ins, const Literal& x) {
  OPPROBE_RETURN_IF_ERROR(NeedArray(ins, x));
  const auto& xd = x.shape().dimensions();
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, xd, x.shape().element_type()));
  auto strides = Strides(xd);
  int64_t offset = 0;
  std::vector<bool> seen(xd.size(), false);
  for (int64_t d : ins.dimensions) {
    if (d < 0 || d >= static_cast<int64_t>(xd.size()) || seen[static_cast<size_t>(d)])
      return InvalidInput(fmt::format("{}: bad reverse dimensions {}", ins.name, DimsToString(ins.dimensions)));
    seen[static_cast<size_t>(d)] = true;
    size_t ud = static_cast<size_t>(d);
    if (xd[ud] > 0) offset += (xd[ud] - 1) * strides[ud];
    strides[ud] = -strides[ud];
  }
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  CopyStrided(x.data().data(), offset, xd, strides, out.data().data(), ElementSize(x));
  return out;
}

Expected<Literal> EvalSlice(Evaluator& ev, const Instruction& ins, const Literal& x) {
  OPPROBE_RETURN_IF_ERROR(NeedArray(ins, x));
  const auto& xd = x.shape().dimensions();
  if (!ins.slice || ins.slice->starts.size() != xd.size() || ins.slice->limits.size() != xd.size())
    return InvalidInput(fmt::format("{}: slice does not fit {}", ins.name, x.shape().ToString(false)));
  auto xs = Strides(xd);
  std::vector<int64_t> od, strides;
  int64_t offset = 0;
  for (size_t i = 0; i < xd.size(); ++i) {
    int64_t st = ins.slice->starts[i], lim = ins.slice->limits[i];
    int64_t step = i < ins.slice->strides.size() ? ins.slice->strides[i] : 1;
    if (st < 0 || lim < st || lim > xd[i] || step < 1)
      return InvalidInput(fmt::format("{}: slice [{}:{}:{}] out of bounds for dimension {} of {}", ins.name, st, lim,
                                      step, i, x.shape().ToString(false)));
    od.push_back((lim - st + step - 1) / step);
    strides.push_back(xs[i] * step);
    offset += st * xs[i];
  }
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, od, x.shape().element_type()));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  CopyStrided(x.data().data(), offset, od, strides, out.data().data(), ElementSize(x));
  return out;
}

// Start indices of dynamic-slice / dynamic-update-slice: scalar operands from `first`, or one vector.
Expected<std::vector<int64_t>> StartIndices(const Instruction& ins, const std::vector<const Literal*>& ops,
                                            size_t first, size_t rank) {
  std::vector<int64_t> starts;
  if (ops.size() == first + 1 && ops[first]->shape().IsArray() && ops[first]->shape().rank() == 1 && rank != 1) {
    const Literal& v = *ops[first];
    if (static_cast<size_t>(v.element_count()) != rank)
      return InvalidInput(fmt::format("{}: {} start indices for rank {}", ins.name, v.element_count(), rank));
    for (size_t i = 0; i < rank; ++i) starts.push_back(v.GetAsInt64(static_cast<int64_t>(i)));
    return starts;
  }
  if (ops.size() != first + rank)
    return InvalidInput(fmt::format("{}: {} start indices for rank {}", ins.name, ops.size() - first, rank));
  for (size_t i = first; i < ops.size(); ++i) {
    const Literal& s = *ops[i];
    if (!s.shape().IsArray() || s.element_count() != 1 || !IsInteger(s.shape().element_type()))
      return InvalidInput(fmt::format("{}: start index {} is not an integer scalar", ins.name, i - first));
    if (IsUnsignedInteger(s.shape().element_type()))
      starts.push_back(static_cast<int64_t>(std::min<uint64_t>(s.GetAsUint64(0), INT64_MAX)));
    else starts.push_back(s.GetAsInt64(0));
  }
  return starts;
}

Expected<Literal> EvalDynamicSlice(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops) {
  const Literal& x = *ops[0];
  OPPROBE_RETURN_IF_ERROR(NeedArray(ins, x));
  const auto& xd = x.shape().dimensions();
  OPPROBE_ASSIGN_OR_RETURN(auto starts, StartIndices(ins, ops, 1, xd.size()));
  const auto& sizes = ins.rare().dynamic_slice_sizes.empty() ? ins.shape.dimensions() : ins.rare().dynamic_slice_sizes;
  if (sizes.size() != xd.size())
    return InvalidInput(
        fmt::format("{}: slice sizes {} do not fit {}", ins.name, DimsToString(sizes), x.shape().ToString(false)));
  auto xs = Strides(xd);
  int64_t offset = 0;
  for (size_t i = 0; i < xd.size(); ++i) {
    if (sizes[i] < 0 || sizes[i] > xd[i])
      return InvalidInput(fmt::format("{}: slice size {} exceeds dimension {} of {}", ins.name, sizes[i], i,
                                      x.shape().ToString(false)));
    int64_t s = std::clamp<int64_t>(starts[i], 0, xd[i] - sizes[i]);
    offset += s * xs[i];
  }
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, sizes, x.shape().element_type()));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  CopyStrided(x.data().data(), offset, sizes, xs, out.data().data(), ElementSize(x));
  return out;
}

Expected<Literal> EvalDynamicUpdateSlice(Evaluator& ev, const Instruction& ins,
                                         const std::vector<const Literal*>& ops) {
  if (ops.size() < 2) return InvalidInput(fmt::format("{}: expects an operand and an update", ins.name));
  const Literal &x = *ops[0], &u = *ops[1];
  OPPROBE_RETURN_IF_ERROR(NeedArray(ins, x));
  OPPROBE_RETURN_IF_ERROR(NeedArray(ins, u, "update"));
  const auto &xd = x.shape().dimensions(), &ud = u.shape().dimensions();
  if (xd.size() != ud.size() || x.shape().element_type() != u.shape().element_type())
    return InvalidInput(
        fmt::format("{}: update {} does not fit {}", ins.name, u.shape().ToString(false), x.shape().ToString(false)));
  OPPROBE_ASSIGN_OR_RETURN(auto starts, StartIndices(ins, ops, 2, xd.size()));
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, xd, x.shape().element_type()));
  auto xs = Strides(xd);
  int64_t offset = 0;
  for (size_t i = 0; i < xd.size(); ++i) {
    if (ud[i] > xd[i])
      return InvalidInput(
          fmt::format("{}: update {} does not fit {}", ins.name, u.shape().ToString(false), x.shape().ToString(false)));
    offset += std::clamp<int64_t>(starts[i], 0, xd[i] - ud[i]) * xs[i];
  }
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  out.data() = x.data();
  int64_t es = ElementSize(x);
  auto us = Strides(ud);
  // Scatter the update: walk the update row-major and write at offset + idx * xs.
  int64_t k = 0;
  ForEachIndex(ud, [&](const std::vector<int64_t>& idx) {
    int64_t o = offset;
    for (size_t i = 0; i < idx.size(); ++i) o += idx[i] * xs[i];
    std::memcpy(out.data().data() + o * es, u.data().data() + (k++) * es, static_cast<size_t>(es));
  });
  if (ud.empty()) std::memcpy(out.data().data() + offset * es, u.data().data(), static_cast<size_t>(es));
  return out;
}

Expected<Literal> EvalPad(Evaluator& ev, const Instruction& ins, const Literal& x, const Literal& pv) {
  OPPROBE_RETURN_IF_ERROR(NeedArray(ins, x));
  const auto& xd = x.shape().dimensions();
  if (!ins.padding_config || ins.padding_config->dimensions.size() != xd.size() || !pv.shape().IsArray() ||
      pv.element_count() != 1 || pv.shape().element_type() != x.shape().element_type())
    return InvalidInput(fmt::format("{}: padding does not fit {}", ins.name, x.shape().ToString(false)));
  const auto& pc = ins.padding_config->dimensions;
  std::vector<int64_t> od;
  for (size_t i = 0; i < xd.size(); ++i) {
    if (pc[i].interior_padding < 0) return InvalidInput(fmt::format("{}: negative interior padding", ins.name));
    int64_t n = xd[i];
    int64_t o =
        pc[i].edge_padding_low + pc[i].edge_padding_high + n + std::max<int64_t>(n - 1, 0) * pc[i].interior_padding;
    if (o < 0) return InvalidInput(fmt::format("{}: padding makes dimension {} negative", ins.name, i));
    od.push_back(o);
  }
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, od, x.shape().element_type()));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  int64_t es = ElementSize(x), total = out.element_count();
  uint8_t* o = out.data().data();
  for (int64_t i = 0; i < total; ++i) std::memcpy(o + i * es, pv.data().data(), static_cast<size_t>(es));
  if (xd.empty()) {
    std::memcpy(o, x.data().data(), static_cast<size_t>(es));
    return out;
  }
  // Row by row: the rows of the operand's last dimension that land inside the result, each copied as one
  // run (or strided, with interior padding) from the first to the last element that lands inside.
  auto os = Strides(od);
  size_t last = xd.size() - 1;
  int64_t n = xd[last], step = pc[last].interior_padding + 1, lo = pc[last].edge_padding_low;
  int64_t j0 = lo >= 0 ? 0 : (-lo + step - 1) / step;
  int64_t j1 = od[last] - 1 - lo < 0 ? 0 : std::min(n, (od[last] - 1 - lo) / step + 1);
  std::vector<int64_t> outer(xd.begin(), xd.end() - 1);
  int64_t row = 0;
  ForEachIndex(outer, [&](const std::vector<int64_t>& idx) {
    int64_t lin = 0;
    bool inside = true;
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t p = pc[d].edge_padding_low + idx[d] * (pc[d].interior_padding + 1);
      if (p < 0 || p >= od[d]) {
        inside = false;
        break;
      }
      lin += p * os[d];
    }
    const uint8_t* src = x.data().data() + row++ * n * es;
    if (!inside || j0 >= j1) return;
    uint8_t* dst = o + (lin + lo + j0 * step) * es;
    if (step == 1) std::memcpy(dst, src + j0 * es, static_cast<size_t>((j1 - j0) * es));
    else
      for (int64_t j = j0; j < j1; ++j) std::memcpy(dst + (j - j0) * step * es, src + j * es, static_cast<size_t>(es));
  });
  return out;
}

Expected<Literal> EvalConcatenate(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops) {
  if (ops.empty() || ins.dimensions.size() != 1)
    return InvalidInput(fmt::format("{}: concatenate needs operands and one dimension", ins.name));
  const Literal& first = *ops[0];
  OPPROBE_RETURN_IF_ERROR(NeedArray(ins, first));
  int64_t dim = ins.dimensions[0];
  int rank = first.shape().rank();
  if (dim < 0 || dim >= rank) return InvalidInput(fmt::format("{}: bad concatenate dimension {}", ins.name, dim));
  std::vector<int64_t> od = first.shape().dimensions();
  od[static_cast<size_t>(dim)] = 0;
  for (const Literal* l : ops) {
    OPPROBE_RETURN_IF_ERROR(NeedArray(ins, *l));
    const auto& d = l->shape().dimensions();
    bool ok = l->shape().rank() == rank && l->shape().element_type() == first.shape().element_type();
    for (int i = 0; ok && i < rank; ++i)
      if (i != dim && d[static_cast<size_t>(i)] != od[static_cast<size_t>(i)]) ok = false;
    if (!ok)
      return InvalidInput(fmt::format("{}: operand {} does not concatenate with {}", ins.name,
                                      l->shape().ToString(false), first.shape().ToString(false)));
    od[static_cast<size_t>(dim)] += d[static_cast<size_t>(dim)];
  }
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, od, first.shape().element_type()));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  int64_t es = ElementSize(first);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < dim; ++i) outer *= od[static_cast<size_t>(i)];
  for (int i = static_cast<int>(dim) + 1; i < rank; ++i) inner *= od[static_cast<size_t>(i)];
  int64_t out_row = od[static_cast<size_t>(dim)] * inner * es;
  int64_t col = 0;
  for (const Literal* l : ops) {
    int64_t row = l->shape().dimensions()[static_cast<size_t>(dim)] * inner * es;
    for (int64_t r = 0; r < outer && row > 0; ++r)
      std::memcpy(out.data().data() + r * out_row + col, l->data().data() + r * row, static_cast<size_t>(row));
    col += row;
  }
  return out;
}

Expected<Literal> EvalIota(Evaluator& ev, const Instruction& ins) {
  if (!ins.shape.IsArray() || ins.iota_dimension < 0 || ins.iota_dimension >= std::max(ins.shape.rank(), 1))
    return InvalidInput(
        fmt::format("{}: bad iota_dimension {} for {}", ins.name, ins.iota_dimension, ins.shape.ToString(false)));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  if (ins.shape.rank() == 0) return out;
  const auto& d = ins.shape.dimensions();
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(ins.iota_dimension) + 1; i < d.size(); ++i) inner *= d[i];
  int64_t n = out.element_count(), len = d[static_cast<size_t>(ins.iota_dimension)];
  int64_t outer = len * inner == 0 ? 0 : n / (len * inner);
  OPPROBE_RETURN_IF_ERROR(DispatchType(ins.shape.element_type(), [&](auto tc) {
    using T = Traits<decltype(tc)::value>;
    uint8_t* p = out.data().data();
    int64_t i = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t l = 0; l < len; ++l) {
        auto v = ConvertValue<typename T::Compute>(l);
        for (int64_t j = 0; j < inner; ++j) T::Store(p, i++, v);
      }
    return Status::Ok();
  }));
  return out;
}

Expected<Literal> EvalConstant(Evaluator& ev, const Instruction& ins) {
  if (!ins.literal) return InvalidInput(fmt::format("{}: constant without a value", ins.name));
  const Literal& l = *ins.literal;
  if (l.elided()) {
    OPPROBE_ASSIGN_OR_RETURN(Literal probe, ev.Allocate(ins.shape));
    (void)probe;
    return RandomLiteral(ins.shape, Fnv1a64(ins.name) ^ ev.options().seed);
  }
  if (!l.shape().Compatible(ins.shape))
    return InvalidInput(fmt::format("{}: literal of shape {} in a constant of shape {}", ins.name,
                                    l.shape().ToString(false), ins.shape.ToString(false)));
  std::function<bool(const Literal&)> sized = [&](const Literal& x) {
    if (x.shape().IsTuple()) {
      if (x.tuple_elements().size() != x.shape().tuple_shapes().size()) return false;
      for (const auto& e : x.tuple_elements())
        if (!sized(e)) return false;
      return true;
    }
    if (!x.shape().IsArray()) return true;
    return static_cast<int64_t>(x.data().size()) == x.shape().elements() * ByteWidth(x.shape().element_type());
  };
  if (!sized(l)) return InvalidInput(fmt::format("{}: constant data does not match its shape", ins.name));
  return l;
}

int64_t ConditionalIndex(const Literal& sel, size_t branches) {
  int64_t b = IsUnsignedInteger(sel.shape().element_type())
                  ? static_cast<int64_t>(std::min<uint64_t>(sel.GetAsUint64(0), INT64_MAX))
                  : sel.GetAsInt64(0);
  if (b < 0 || b >= static_cast<int64_t>(branches)) b = static_cast<int64_t>(branches) - 1;
  return b;
}

}  // namespace

Expected<const Evaluator::Plan*> Evaluator::PlanFor(const Computation& c) {
  auto found = plans_.find(&c);
  if (found != plans_.end()) return found->second.get();
  const Instruction* root = c.root();
  if (!root) return InvalidInput(fmt::format("computation {} has no root", c.name()));
  // Instructions reachable from the root, operands first (iterative DFS; cycles are errors).
  std::unordered_map<const Instruction*, int> state;  // 1 visiting, 2 done
  std::unordered_map<const Instruction*, size_t> pos;
  for (const auto& i : c.instructions()) state[i.get()] = 0;
  if (!state.count(root)) return InvalidInput(fmt::format("computation {}: root is not in it", c.name()));
  auto plan = std::make_unique<Plan>();
  std::vector<std::pair<const Instruction*, size_t>> stack{{root, 0}};
  state[root] = 1;
  while (!stack.empty()) {
    auto& [ins, next] = stack.back();
    if (next < ins->operands.size()) {
      const Instruction* op = ins->operands[next++];
      auto it = state.find(op);
      if (it == state.end())
        return InvalidInput(
            fmt::format("{}: operand {} is not in computation {}", ins->name, op ? op->name : "(null)", c.name()));
      if (it->second == 1) return InvalidInput(fmt::format("{}: cycle through {}", c.name(), op->name));
      if (it->second == 0) {
        it->second = 1;
        stack.emplace_back(op, 0);
      }
    } else {
      state[ins] = 2;
      pos[ins] = plan->order.size();
      plan->order.push_back(ins);
      stack.pop_back();
    }
  }
  plan->operands.resize(plan->order.size());
  plan->uses.assign(plan->order.size(), 0);
  for (size_t k = 0; k < plan->order.size(); ++k)
    for (const Instruction* op : plan->order[k]->operands) {
      size_t p = pos[op];
      plan->operands[k].push_back(p);
      ++plan->uses[p];
    }
  plan->root = pos[root];
  return plans_.emplace(&c, std::move(plan)).first->second.get();
}

Expected<Literal> Evaluator::Run(const Computation& c, const std::vector<const Literal*>& args) {
  struct DepthGuard {
    int& d;
    explicit DepthGuard(int& x) : d(x) { ++d; }
    ~DepthGuard() { --d; }
  } guard(depth_);
  if (depth_ > 64) return InvalidInput(fmt::format("computation {}: calls nest deeper than 64", c.name()));
  // The plan (evaluation order, operand positions, use counts) is made once per computation: a region runs
  // once per element of a sort, scatter or map.
  OPPROBE_ASSIGN_OR_RETURN(const Plan* plan, PlanFor(c));
  const std::vector<const Instruction*>& order = plan->order;
  instructions_evaluated_ += static_cast<int64_t>(order.size());
  if (instructions_evaluated_ > options_.max_instructions)
    return Unimplemented(fmt::format(
        "computation {}: the evaluation needs more than {:.3g} instruction evaluations (called computations "
        "included), the evaluator's limit",
        c.name(), static_cast<double>(options_.max_instructions)));
  std::vector<int> uses = plan->uses;
  std::vector<Literal> owned(order.size());
  std::vector<const Literal*> value(order.size(), nullptr);
  std::vector<const Literal*> ops;
  for (size_t k = 0; k < order.size(); ++k) {
    const Instruction& ins = *order[k];
    if (ins.opcode == Opcode::kParameter && ins.unknown_opcode.empty()) {
      if (ins.parameter_number < 0 || ins.parameter_number >= static_cast<int64_t>(args.size()))
        return InvalidInput(fmt::format("{}: parameter {} of computation {} is not given ({} arguments)", ins.name,
                                        ins.parameter_number, c.name(), args.size()));
      const Literal* a = args[static_cast<size_t>(ins.parameter_number)];
      if (!a->shape().Compatible(ins.shape))
        return InvalidInput(fmt::format("{}: argument of shape {} for parameter of shape {}", ins.name,
                                        a->shape().ToString(false), ins.shape.ToString(false)));
      value[k] = a;
    } else {
      ops.clear();
      for (size_t p : plan->operands[k]) ops.push_back(value[p]);
      auto r = EvalInstruction(ins, ops);
      if (!r.ok()) return r.status();
      owned[k] = std::move(r).value();
      value[k] = &owned[k];
      // Dynamic sizes flow through ops that keep their operand's dims.
      if (!ins.operands.empty() && ins.opcode != Opcode::kSetDimensionSize && !dynamic_sizes.empty()) {
        auto it = dynamic_sizes.find(ins.operands[0]);
        if (it != dynamic_sizes.end() && ins.shape.IsArray() &&
            ins.shape.dimensions() == ins.operands[0]->shape.dimensions())
          dynamic_sizes[&ins] = it->second;
      }
    }
    for (size_t p : plan->operands[k]) {
      if (--uses[p] == 0 && p != plan->root) {
        owned[p] = Literal();
        value[p] = nullptr;
      }
    }
  }
  size_t r = plan->root;
  if (value[r] == &owned[r]) return std::move(owned[r]);
  return *value[r];
}

Expected<Literal> Evaluator::EvalInstruction(const Instruction& ins, const std::vector<const Literal*>& ops) {
  if (!ins.unknown_opcode.empty())
    return Unimplemented(fmt::format("opcode '{}' is not implemented by the evaluator", ins.unknown_opcode));
  int arity = OpcodeArity(ins.opcode);
  if (arity >= 0 && static_cast<int>(ops.size()) != arity && ins.opcode != Opcode::kRng)
    return InvalidInput(
        fmt::format("{}: {} takes {} operands, got {}", ins.name, OpcodeName(ins.opcode), arity, ops.size()));
  for (const Literal* l : ops)
    if (!l) return Internal(fmt::format("{}: operand value was released early", ins.name));
  auto need = [&](size_t n) -> Status {
    if (ops.size() < n)
      return InvalidInput(fmt::format("{}: {} needs at least {} operands", ins.name, OpcodeName(ins.opcode), n));
    return Status::Ok();
  };
  switch (ins.opcode) {
    case Opcode::kConstant: return EvalConstant(*this, ins);
    case Opcode::kIota: return EvalIota(*this, ins);
    case Opcode::kConvert: return EvalConvert(*this, ins, *ops[0]);
    case Opcode::kBitcastConvert: return EvalBitcastConvert(*this, ins, *ops[0]);
    case Opcode::kBroadcast: return EvalBroadcast(*this, ins, *ops[0]);
    case Opcode::kReshape:
    case Opcode::kBitcast: return EvalReshape(*this, ins, *ops[0]);
    case Opcode::kTranspose: return EvalTranspose(*this, ins, *ops[0]);
    case Opcode::kReverse: return EvalReverse(*this, ins, *ops[0]);
    case Opcode::kSlice: return EvalSlice(*this, ins, *ops[0]);
    case Opcode::kDynamicSlice: OPPROBE_RETURN_IF_ERROR(need(1)); return EvalDynamicSlice(*this, ins, ops);
    case Opcode::kDynamicUpdateSlice: return EvalDynamicUpdateSlice(*this, ins, ops);
    case Opcode::kPad: return EvalPad(*this, ins, *ops[0], *ops[1]);
    case Opcode::kConcatenate: return EvalConcatenate(*this, ins, ops);
    case Opcode::kDot: return EvalDot(*this, ins, *ops[0], *ops[1]);
    case Opcode::kConvolution: return EvalConvolution(*this, ins, *ops[0], *ops[1]);
    case Opcode::kReduce: return EvalReduce(*this, ins, ops);
    case Opcode::kReduceWindow: return EvalReduceWindow(*this, ins, ops);
    case Opcode::kSelectAndScatter: return EvalSelectAndScatter(*this, ins, ops);
    case Opcode::kSort: OPPROBE_RETURN_IF_ERROR(need(1)); return EvalSort(*this, ins, ops);
    case Opcode::kTopK: return EvalTopK(*this, ins, *ops[0]);
    case Opcode::kGather: return EvalGather(*this, ins, *ops[0], *ops[1]);
    case Opcode::kScatter: return EvalScatter(*this, ins, ops);
    case Opcode::kMap: OPPROBE_RETURN_IF_ERROR(need(1)); return EvalMap(*this, ins, ops);
    case Opcode::kFft: return EvalFft(*this, ins, *ops[0]);
    case Opcode::kRng: return EvalRng(*this, ins, ops);
    case Opcode::kRngBitGenerator: return EvalRngBitGenerator(*this, ins, *ops[0]);
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormGrad: return EvalBatchNorm(*this, ins, ops);
    case Opcode::kReducePrecision: return EvalReducePrecision(*this, ins, *ops[0]);
    case Opcode::kTuple: {
      std::vector<Literal> elems;
      elems.reserve(ops.size());
      for (const Literal* l : ops) elems.push_back(*l);
      Literal t = Literal::Tuple(std::move(elems));
      if (!t.shape().Compatible(ins.shape))
        return InvalidInput(fmt::format("{}: tuple of {} declared as {}", ins.name, t.shape().ToString(false),
                                        ins.shape.ToString(false)));
      return t;
    }
    case Opcode::kGetTupleElement: {
      const Literal& t = *ops[0];
      if (!t.shape().IsTuple() || ins.tuple_index < 0 ||
          ins.tuple_index >= static_cast<int64_t>(t.tuple_elements().size()))
        return InvalidInput(fmt::format("{}: index {} of {}", ins.name, ins.tuple_index, t.shape().ToString(false)));
      const Literal& e = t.tuple_elements()[static_cast<size_t>(ins.tuple_index)];
      if (!e.shape().Compatible(ins.shape))
        return InvalidInput(fmt::format("{}: element {} declared as {}", ins.name, e.shape().ToString(false),
                                        ins.shape.ToString(false)));
      return e;
    }
    case Opcode::kCall:
    case Opcode::kFusion:
    case Opcode::kAsyncStart: {
      if (ins.called_computations.empty() || !ins.called_computations[0])
        return InvalidInput(fmt::format("{}: no called computation", ins.name));
      OPPROBE_ASSIGN_OR_RETURN(Literal r, Run(*ins.called_computations[0], ops));
      if (ins.opcode != Opcode::kAsyncStart && !r.shape().Compatible(ins.shape))
        return InvalidInput(fmt::format("{}: callee returns {}, declared {}", ins.name, r.shape().ToString(false),
                                        ins.shape.ToString(false)));
      if (ins.opcode == Opcode::kAsyncStart) return Unimplemented("async-start is not implemented by the evaluator");
      return r;
    }
    case Opcode::kWhile: {
      if (ins.called_computations.size() != 2 || !ins.called_computations[0] || !ins.called_computations[1])
        return InvalidInput(fmt::format("{}: while needs a body and a condition", ins.name));
      const Computation &body = *ins.called_computations[0], &cond = *ins.called_computations[1];
      Literal state = *ops[0];
      std::function<int64_t(const Literal&)> bytes_of = [&](const Literal& l) {
        int64_t n = static_cast<int64_t>(l.data().size());
        for (const Literal& e : l.tuple_elements()) n += bytes_of(e);
        return n;
      };
      const int64_t state_bytes = std::max<int64_t>(1, bytes_of(state));
      for (int64_t it = 0;; ++it) {
        if (it >= options_.max_while_iterations)
          return Unimplemented(
              fmt::format("{}: while loop ran more than {} iterations", ins.name, options_.max_while_iterations));
        if (it > options_.max_while_state_bytes / state_bytes)
          return Unimplemented(
              fmt::format("{}: while loop ran {} iterations over a {}-byte state, more than the "
                          "evaluator's limit of {} bytes",
                          ins.name, it, state_bytes, options_.max_while_state_bytes));
        OPPROBE_ASSIGN_OR_RETURN(Literal p, Run(cond, {&state}));
        if (!p.shape().IsArray() || p.shape().element_type() != PrimitiveType::PRED || p.element_count() != 1)
          return InvalidInput(fmt::format("{}: condition does not return pred[]", ins.name));
        if (!p.data()[0]) break;
        OPPROBE_ASSIGN_OR_RETURN(Literal next, Run(body, {&state}));
        if (!next.shape().Compatible(state.shape()))
          return InvalidInput(fmt::format("{}: body returns {}, loop state is {}", ins.name,
                                          next.shape().ToString(false), state.shape().ToString(false)));
        state = std::move(next);
      }
      return state;
    }
    case Opcode::kConditional: {
      OPPROBE_RETURN_IF_ERROR(need(1));
      const Literal& sel = *ops[0];
      size_t nb = ins.called_computations.size();
      if (!sel.shape().IsArray() || sel.element_count() != 1 || nb == 0 || ops.size() != nb + 1)
        return InvalidInput(fmt::format("{}: conditional with {} branches and {} operands", ins.name, nb, ops.size()));
      size_t b;
      if (sel.shape().element_type() == PrimitiveType::PRED) {
        if (nb != 2) return InvalidInput(fmt::format("{}: a pred conditional needs 2 branches", ins.name));
        b = sel.data()[0] ? 0 : 1;
      } else if (IsInteger(sel.shape().element_type())) {
        b = static_cast<size_t>(ConditionalIndex(sel, nb));
      } else {
        return InvalidInput(fmt::format("{}: branch index is {}", ins.name, sel.shape().ToString(false)));
      }
      if (!ins.called_computations[b]) return InvalidInput(fmt::format("{}: missing branch", ins.name));
      OPPROBE_ASSIGN_OR_RETURN(Literal r, Run(*ins.called_computations[b], {ops[b + 1]}));
      if (!r.shape().Compatible(ins.shape))
        return InvalidInput(fmt::format("{}: branch returns {}, declared {}", ins.name, r.shape().ToString(false),
                                        ins.shape.ToString(false)));
      return r;
    }
    case Opcode::kCustomCall:
      if (!ins.unknown_opcode.empty())
        return Unimplemented(
            fmt::format("{}: opcode '{}' is not implemented by the evaluator", ins.name, ins.unknown_opcode));
      return EvalCustomCall(*this, ins, ops);
    case Opcode::kCholesky: return EvalCholesky(*this, ins, *ops[0]);
    case Opcode::kTriangularSolve:
      OPPROBE_RETURN_IF_ERROR(need(2));
      return EvalTriangularSolve(*this, ins, *ops[0], *ops[1]);
    case Opcode::kCopy:
      if (!ops[0]->shape().IsArray()) {
        if (!ops[0]->shape().Compatible(ins.shape))
          return InvalidInput(fmt::format("{}: copy changes shape", ins.name));
        return *ops[0];
      }
      return EvalElementwise(*this, ins, ops);
    case Opcode::kOptimizationBarrier:
    case Opcode::kDomain:
    case Opcode::kAddDependency:
    case Opcode::kCopyStart:
    case Opcode::kCopyDone: {
      if (ops.empty()) return InvalidInput(fmt::format("{}: needs an operand", ins.name));
      if (ins.opcode == Opcode::kCopyStart) return Unimplemented("copy-start is not implemented by the evaluator");
      // copy-done of copy-start's (destination, source, context) tuple: the destination.
      if (ins.opcode == Opcode::kCopyDone && ops[0]->shape().IsTuple() && !ops[0]->tuple_elements().empty() &&
          ops[0]->tuple_elements()[0].shape().Compatible(ins.shape))
        return ops[0]->tuple_elements()[0];
      if (!ops[0]->shape().Compatible(ins.shape))
        return InvalidInput(fmt::format("{}: operand {} declared as {}", ins.name, ops[0]->shape().ToString(false),
                                        ins.shape.ToString(false)));
      return *ops[0];
    }
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kAllToAll:
    case Opcode::kCollectivePermute:
    case Opcode::kCollectiveBroadcast:
    case Opcode::kReduceScatter: {
      // A single participant (this process): every collective is the identity when shapes allow.
      Literal r = ops.size() == 1 ? *ops[0] : [&] {
        std::vector<Literal> e;
        e.reserve(ops.size());
        for (const Literal* l : ops) e.push_back(*l);
        return Literal::Tuple(std::move(e));
      }();
      if (!r.shape().Compatible(ins.shape))
        return Unimplemented(fmt::format("{}: {} across several participants is not implemented by the evaluator",
                                         ins.name, OpcodeName(ins.opcode)));
      return r;
    }
    case Opcode::kReplicaId:
    case Opcode::kPartitionId: {
      OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, {}, PrimitiveType::U32));
      return Literal(Shape::Scalar(PrimitiveType::U32));
    }
    case Opcode::kAfterAll: return Literal(Shape::Token());
    case Opcode::kGetDimensionSize: {
      const Literal& x = *ops[0];
      if (!x.shape().IsArray() || ins.dimensions.size() != 1 || ins.dimensions[0] < 0 ||
          ins.dimensions[0] >= x.shape().rank())
        return InvalidInput(fmt::format("{}: bad dimension for {}", ins.name, x.shape().ToString(false)));
      OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, {}, PrimitiveType::S32));
      size_t d = static_cast<size_t>(ins.dimensions[0]);
      int64_t size = x.shape().dimensions()[d];
      auto it = dynamic_sizes.find(ins.operands[0]);
      if (it != dynamic_sizes.end() && d < it->second.size()) size = it->second[d];
      Literal out(Shape::Scalar(PrimitiveType::S32));
      out.Set<int32_t>(0, static_cast<int32_t>(size));
      return out;
    }
    case Opcode::kSetDimensionSize: {
      const Literal &x = *ops[0], &sz = *ops[1];
      if (!x.shape().IsArray() || ins.dimensions.size() != 1 || ins.dimensions[0] < 0 ||
          ins.dimensions[0] >= x.shape().rank() || !sz.shape().IsArray() || sz.element_count() != 1 ||
          !IsInteger(sz.shape().element_type()))
        return InvalidInput(fmt::format("{}: bad set-dimension-size on {}", ins.name, x.shape().ToString(false)));
      if (!ins.shape.IsArray() || ins.shape.dimensions() != x.shape().dimensions() ||
          ins.shape.element_type() != x.shape().element_type())
        return ShapeMismatch(ins, x.shape().dimensions(), x.shape().element_type());
      size_t d = static_cast<size_t>(ins.dimensions[0]);
      std::vector<int64_t> sizes = x.shape().dimensions();
      auto it = dynamic_sizes.find(ins.operands[0]);
      if (it != dynamic_sizes.end()) sizes = it->second;
      sizes[d] = std::clamp<int64_t>(sz.GetAsInt64(0), 0, x.shape().dimensions()[d]);
      dynamic_sizes[&ins] = sizes;
      return x;
    }
    case Opcode::kParameter: return InvalidInput(fmt::format("{}: parameter evaluated as an instruction", ins.name));
    default:
      if (IsElementwise(ins.opcode) || ins.opcode == Opcode::kClamp || ins.opcode == Opcode::kSelect ||
          ins.opcode == Opcode::kComplex || ins.opcode == Opcode::kCompare || ins.opcode == Opcode::kIsFinite ||
          ins.opcode == Opcode::kReal || ins.opcode == Opcode::kImag || ins.opcode == Opcode::kPopulationCount ||
          ins.opcode == Opcode::kClz)
        return EvalElementwise(*this, ins, ops);
      return Unimplemented(fmt::format("opcode '{}' is not implemented by the evaluator", OpcodeName(ins.opcode)));
  }
}

}  // namespace eval

Status CheckArguments(const Computation& entry, const std::vector<Literal>& arguments) {
  auto params = entry.parameters();
  if (params.size() != arguments.size())
    return InvalidInput(fmt::format("{} takes {} inputs, got {}", entry.name(), params.size(), arguments.size()));
  for (size_t i = 0; i < params.size(); ++i) {
    const Shape &want = params[i]->shape, &got = arguments[i].shape();
    if (want.IsArray() && got.IsArray() && want.element_type() != got.element_type())
      return InvalidInput(fmt::format("input {} ({}): dtype {} where {} is expected", i, params[i]->name,
                                      PrimitiveTypeName(got.element_type()), PrimitiveTypeName(want.element_type())));
    if (!want.Compatible(got))
      return InvalidInput(fmt::format("input {} ({}): shape {} where {} is expected", i, params[i]->name,
                                      got.ToString(false), want.ToString(false)));
  }
  return Status::Ok();
}

Expected<Literal> EvaluateComputation(const Computation& computation, const std::vector<const Literal*>& arguments,
                                      const EvaluatorOptions& options) {
  eval::Evaluator ev(options);
  try {
    return ev.Run(computation, arguments);
  } catch (const std::bad_alloc&) {
    return Unimplemented("out of memory while evaluating " + computation.name());
  } catch (const std::exception& e) { return Internal(fmt::format("evaluating {}: {}", computation.name(), e.what())); }
}

Expected<Literal> Evaluate(const Module& module, const std::vector<Literal>& arguments,
                           const EvaluatorOptions& options) {
  if (!module.entry()) return InvalidInput(fmt::format("module {} has no entry computation", module.name()));
  OPPROBE_RETURN_IF_ERROR(CheckArguments(*module.entry(), arguments));
  std::vector<const Literal*> args;
  args.reserve(arguments.size());
  for (const auto& a : arguments) args.push_back(&a);
  return EvaluateComputation(*module.entry(), args, options);
}

Literal RandomLiteral(const Shape& shape, uint64_t seed) {
  if (shape.IsTuple()) {
    std::vector<Literal> elems;
    uint64_t k = 0;
    for (const auto& s : shape.tuple_shapes()) elems.push_back(RandomLiteral(s, seed * 31 + (++k)));
    return Literal::Tuple(std::move(elems));
  }
  Literal l(shape);
  if (!shape.IsArray()) return l;
  uint64_t state = seed ^ 0x5851f42d4c957f2dULL;
  int64_t n = l.element_count();
  PrimitiveType t = shape.element_type();
  auto unit = [&] { return static_cast<double>(eval::SplitMix64(state) >> 11) * 0x1.0p-53 * 2.0 - 1.0; };
  // f32 and f64, most of any unit's inputs, written directly: the same values SetFromDouble stores.
  if (t == PrimitiveType::F32 || t == PrimitiveType::F64) {
    for (int64_t i = 0; i < n; ++i) {
      const double v = unit();
      if (t == PrimitiveType::F32) {
        const float f = static_cast<float>(v);
        std::memcpy(l.data().data() + i * 4, &f, 4);
      } else {
        std::memcpy(l.data().data() + i * 8, &v, 8);
      }
    }
    return l;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (t == PrimitiveType::PRED) {
      l.data()[static_cast<size_t>(i)] = eval::SplitMix64(state) & 1;
    } else if (IsSignedInteger(t)) {
      l.SetFromInt64(i, static_cast<int64_t>(eval::SplitMix64(state) % 17) - 8);
    } else if (IsUnsignedInteger(t)) {
      l.SetFromInt64(i, static_cast<int64_t>(eval::SplitMix64(state) % 16));
    } else if (IsComplex(t)) {
      double re = unit();
      l.SetFromComplex(i, {re, unit()});
    } else {
      l.SetFromDouble(i, unit());
    }
  }
  return l;
}

std::vector<Literal> RandomArguments(const Computation& entry, uint64_t seed) {
  std::vector<Literal> out;
  for (const Instruction* p : entry.parameters())
    out.push_back(RandomLiteral(p->shape, seed * 1000003ULL + static_cast<uint64_t>(p->parameter_number)));
  return out;
}

}  // namespace opprobe::hlo
