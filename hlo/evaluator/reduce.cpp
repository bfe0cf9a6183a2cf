// Ops that apply a called computation: reduce (variadic), reduce-window, select-and-scatter, sort,
// scatter, map; and gather and topk.
#include <algorithm>
#include <numeric>

#include "hlo/evaluator/internal.h"

namespace opprobe::hlo::eval {
namespace {

Status ArraysOf(const Instruction& ins, const std::vector<const Literal*>& ops, size_t from, size_t to) {
  for (size_t i = from; i < to; ++i)
    if (!ops[i]->shape().IsArray()) return InvalidInput(fmt::format("{}: operand {} is not an array", ins.name, i));
  return Status::Ok();
}

// The result shapes: one array or a tuple of n arrays.
Status ExpectResults(const Instruction& ins, const std::vector<std::vector<int64_t>>& dims,
                     const std::vector<PrimitiveType>& types) {
  if (dims.size() == 1) return ExpectShape(ins, dims[0], types[0]);
  if (!ins.shape.IsTuple() || ins.shape.tuple_shapes().size() != dims.size())
    return InvalidInput(
        fmt::format("{}: result {} should be a tuple of {}", ins.name, ins.shape.ToString(false), dims.size()));
  for (size_t i = 0; i < dims.size(); ++i) {
    const Shape& s = ins.shape.tuple_shapes()[i];
    if (!s.IsArray() || s.element_type() != types[i] || s.dimensions() != dims[i])
      return InvalidInput(fmt::format("{}: result element {} is {}, expected {}{}", ins.name, i, s.ToString(false),
                                      PrimitiveTypeName(types[i]), DimsToString(dims[i])));
  }
  return Status::Ok();
}

// Result literals (one per output) allocated from the instruction's shape.
Expected<std::vector<Literal>> AllocateResults(Evaluator& ev, const Instruction& ins, size_t n) {
  std::vector<Literal> out;
  if (n == 1) {
    OPPROBE_ASSIGN_OR_RETURN(Literal l, ev.Allocate(ins.shape));
    out.push_back(std::move(l));
  } else {
    for (size_t i = 0; i < n; ++i) {
      OPPROBE_ASSIGN_OR_RETURN(Literal l, ev.Allocate(ins.shape.tuple_shapes()[i]));
      out.push_back(std::move(l));
    }
  }
  return out;
}

Literal Pack(std::vector<Literal> outs) {
  if (outs.size() == 1) return std::move(outs[0]);
  return Literal::Tuple(std::move(outs));
}

// Combines accumulators with elements through a computation taking (acc..., x...) and returning n
// values (a tuple when n > 1).
struct Combiner {
  ScalarFn fn;
  size_t n = 1;
  std::vector<int64_t> es;
  // acc[i] points at n accumulator scalars; x[i] at n element scalars. Results replace acc.
  Status Apply(const std::vector<uint8_t*>& acc, const std::vector<const uint8_t*>& x,
               const std::vector<PrimitiveType>& types) const {
    if (fn.binary) {
      if (fn.swap) fn.binary(x[0], acc[0], acc[0], 1);
      else fn.binary(acc[0], x[0], acc[0], 1);
      return Status::Ok();
    }
    if (fn.take_first) return Status::Ok();
    if (fn.take_second) {
      std::memcpy(acc[0], x[0], static_cast<size_t>(es[0]));
      return Status::Ok();
    }
    std::vector<Literal> scalars;
    scalars.reserve(2 * n);
    for (size_t i = 0; i < n; ++i) {
      Literal s(Shape::Scalar(types[i]));
      std::memcpy(s.data().data(), acc[i], static_cast<size_t>(es[i]));
      scalars.push_back(std::move(s));
    }
    for (size_t i = 0; i < n; ++i) {
      Literal s(Shape::Scalar(types[i]));
      std::memcpy(s.data().data(), x[i], static_cast<size_t>(es[i]));
      scalars.push_back(std::move(s));
    }
    std::vector<const Literal*> args;
    args.reserve(scalars.size());
    for (auto& s : scalars) args.push_back(&s);
    OPPROBE_ASSIGN_OR_RETURN(Literal r, fn.Call(args));
    return Unpack(r, acc, types);
  }
  Status Unpack(const Literal& r, const std::vector<uint8_t*>& acc, const std::vector<PrimitiveType>& types) const {
    if (n == 1 && r.shape().IsArray()) {
      if (r.shape().element_type() != types[0] || r.element_count() != 1)
        return InvalidInput(fmt::format("computation {} returns {}, expected {}[]", fn.comp->name(),
                                        r.shape().ToString(false), PrimitiveTypeName(types[0])));
      std::memcpy(acc[0], r.data().data(), static_cast<size_t>(es[0]));
      return Status::Ok();
    }
    if (!r.shape().IsTuple() || r.tuple_elements().size() != n)
      return InvalidInput(
          fmt::format("computation {} returns {}, expected {} values", fn.comp->name(), r.shape().ToString(false), n));
    for (size_t i = 0; i < n; ++i) {
      const Literal& e = r.tuple_elements()[i];
      if (!e.shape().IsArray() || e.shape().element_type() != types[i] || e.element_count() != 1)
        return InvalidInput(fmt::format("computation {} returns {}", fn.comp->name(), r.shape().ToString(false)));
      std::memcpy(acc[i], e.data().data(), static_cast<size_t>(es[i]));
    }
    return Status::Ok();
  }
};

Expected<Combiner> MakeCombiner(Evaluator& ev, const Instruction& ins, const Computation* comp,
                                const std::vector<PrimitiveType>& types) {
  Combiner c;
  c.n = types.size();
  for (auto t : types) c.es.push_back(ByteWidth(t));
  OPPROBE_ASSIGN_OR_RETURN(c.fn, ScalarFn::ForReducer(ev, ins, comp, static_cast<int>(types.size()), types[0]));
  return c;
}

}  // namespace

Expected<Literal> EvalReduce(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops) {
  if (ops.empty() || ops.size() % 2 != 0)
    return InvalidInput(fmt::format("{}: reduce needs operands and as many init values", ins.name));
  size_t n = ops.size() / 2;
  OPPROBE_RETURN_IF_ERROR(ArraysOf(ins, ops, 0, ops.size()));
  const auto& xd = ops[0]->shape().dimensions();
  std::vector<PrimitiveType> types;
  for (size_t i = 0; i < n; ++i) {
    if (ops[i]->shape().dimensions() != xd)
      return InvalidInput(fmt::format("{}: reduce operands differ in shape", ins.name));
    if (ops[n + i]->element_count() != 1 || ops[n + i]->shape().rank() != 0 ||
        ops[n + i]->shape().element_type() != ops[i]->shape().element_type())
      return InvalidInput(fmt::format("{}: init value {} does not fit operand {}", ins.name,
                                      ops[n + i]->shape().ToString(false), ops[i]->shape().ToString(false)));
    types.push_back(ops[i]->shape().element_type());
  }
  std::vector<bool> reduced(xd.size(), false);
  for (int64_t d : ins.dimensions) {
    if (d < 0 || d >= static_cast<int64_t>(xd.size()) || reduced[static_cast<size_t>(d)])
      return InvalidInput(fmt::format("{}: bad reduce dimensions {}", ins.name, DimsToString(ins.dimensions)));
    reduced[static_cast<size_t>(d)] = true;
  }
  std::vector<int64_t> od, kept, red;
  for (size_t i = 0; i < xd.size(); ++i) {
    if (reduced[i]) red.push_back(static_cast<int64_t>(i));
    else od.push_back(xd[i]), kept.push_back(static_cast<int64_t>(i));
  }
  OPPROBE_RETURN_IF_ERROR(ExpectResults(ins, std::vector<std::vector<int64_t>>(n, od), types));
  OPPROBE_ASSIGN_OR_RETURN(auto outs, AllocateResults(ev, ins, n));
  OPPROBE_ASSIGN_OR_RETURN(Combiner comb, MakeCombiner(ev, ins, ins.to_apply(), types));
  // View the operand as [kept..., reduced...]: for each output element, reduce a contiguous run.
  std::vector<int64_t> perm = kept;
  perm.insert(perm.end(), red.begin(), red.end());
  int64_t out_n = Product(od), red_n = 1;
  for (int64_t d : red) red_n *= xd[static_cast<size_t>(d)];
  for (size_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < out_n; ++k)
      std::memcpy(outs[i].data().data() + k * comb.es[i], ops[n + i]->data().data(), static_cast<size_t>(comb.es[i]));
  if (red_n == 0 || out_n == 0) return Pack(std::move(outs));
  if (ev.options().compiled_regions && CompiledReduce(ins, ops, outs, types, reduced)) return Pack(std::move(outs));
  std::vector<uint8_t*> acc(n);
  std::vector<const uint8_t*> x(n);
  Status st;
  int64_t count = 0;
  ForEachPermuted(xd, perm, [&](int64_t dst, int64_t src) {
    if (!st.ok()) return;
    int64_t o = dst / red_n;
    for (size_t i = 0; i < n; ++i) {
      acc[i] = outs[i].data().data() + o * comb.es[i];
      x[i] = ops[i]->data().data() + src * comb.es[i];
    }
    st = comb.Apply(acc, x, types);
    ++count;
  });
  OPPROBE_RETURN_IF_ERROR(st);
  return Pack(std::move(outs));
}

namespace {

Expected<WindowGeom> Geometry(const Instruction& ins, const std::vector<int64_t>& in_dims) {
  if (!ins.window || ins.window->dimensions.size() != in_dims.size())
    return InvalidInput(fmt::format("{}: window rank does not match operand rank {}", ins.name, in_dims.size()));
  WindowGeom g;
  g.in = in_dims;
  g.w = ins.window->dimensions;
  for (size_t i = 0; i < in_dims.size(); ++i) {
    const auto& w = g.w[i];
    if (w.size < 1 || w.stride < 1 || w.base_dilation < 1 || w.window_dilation < 1)
      return InvalidInput(fmt::format("{}: bad window dimension {}", ins.name, i));
    int64_t dil_in = in_dims[i] == 0 ? 0 : (in_dims[i] - 1) * w.base_dilation + 1;
    int64_t padded = dil_in + w.padding_low + w.padding_high;
    int64_t dil_w = (w.size - 1) * w.window_dilation + 1;
    g.out.push_back(padded < dil_w ? 0 : (padded - dil_w) / w.stride + 1);
    g.size.push_back(w.size);
  }
  return g;
}

// Visits the operand positions (linear index) inside the window at output index `oidx`.
template <class F>
void ForEachInWindow(const WindowGeom& g, const std::vector<int64_t>& oidx, const std::vector<int64_t>& in_str, F&& f) {
  ForEachIndex(g.size, [&](const std::vector<int64_t>& k) {
    int64_t lin = 0;
    for (size_t i = 0; i < k.size(); ++i) {
      const auto& w = g.w[i];
      int64_t kk = w.window_reversal ? g.size[i] - 1 - k[i] : k[i];
      int64_t p = oidx[i] * w.stride + kk * w.window_dilation - w.padding_low;
      if (p < 0 || p % w.base_dilation != 0) return;
      p /= w.base_dilation;
      if (p >= g.in[i]) return;
      lin += p * in_str[i];
    }
    f(lin);
  });
}

}  // namespace

Expected<Literal> EvalReduceWindow(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops) {
  if (ops.empty() || ops.size() % 2 != 0)
    return InvalidInput(fmt::format("{}: reduce-window needs operands and as many init values", ins.name));
  size_t n = ops.size() / 2;
  OPPROBE_RETURN_IF_ERROR(ArraysOf(ins, ops, 0, ops.size()));
  const auto& xd = ops[0]->shape().dimensions();
  std::vector<PrimitiveType> types;
  for (size_t i = 0; i < n; ++i) {
    if (ops[i]->shape().dimensions() != xd || ops[n + i]->shape().rank() != 0 ||
        ops[n + i]->shape().element_type() != ops[i]->shape().element_type())
      return InvalidInput(fmt::format("{}: reduce-window operands and init values do not fit", ins.name));
    types.push_back(ops[i]->shape().element_type());
  }
  OPPROBE_ASSIGN_OR_RETURN(WindowGeom g, Geometry(ins, xd));
  OPPROBE_RETURN_IF_ERROR(ExpectResults(ins, std::vector<std::vector<int64_t>>(n, g.out), types));
  OPPROBE_ASSIGN_OR_RETURN(auto outs, AllocateResults(ev, ins, n));
  OPPROBE_ASSIGN_OR_RETURN(Combiner comb, MakeCombiner(ev, ins, ins.to_apply(), types));
  OPPROBE_RETURN_IF_ERROR(
      ev.CheckFlops(ins, static_cast<double>(Product(g.out)) * static_cast<double>(Product(g.size))));
  if (ev.options().compiled_regions && CompiledReduceWindow(ins, ops, g, outs, types)) return Pack(std::move(outs));
  auto in_str = Strides(xd);
  std::vector<uint8_t*> acc(n);
  std::vector<const uint8_t*> x(n);
  Status st;
  int64_t o = 0;
  ForEachIndex(g.out, [&](const std::vector<int64_t>& oidx) {
    if (!st.ok()) return;
    for (size_t i = 0; i < n; ++i) {
      acc[i] = outs[i].data().data() + o * comb.es[i];
      std::memcpy(acc[i], ops[n + i]->data().data(), static_cast<size_t>(comb.es[i]));
    }
    ForEachInWindow(g, oidx, in_str, [&](int64_t lin) {
      if (!st.ok()) return;
      for (size_t i = 0; i < n; ++i) x[i] = ops[i]->data().data() + lin * comb.es[i];
      st = comb.Apply(acc, x, types);
    });
    ++o;
  });
  if (g.out.empty() && st.ok()) {  // rank 0: one window of one element
    for (size_t i = 0; i < n; ++i) {
      acc[i] = outs[i].data().data();
      std::memcpy(acc[i], ops[n + i]->data().data(), static_cast<size_t>(comb.es[i]));
      x[i] = ops[i]->data().data();
    }
    st = comb.Apply(acc, x, types);
  }
  OPPROBE_RETURN_IF_ERROR(st);
  return Pack(std::move(outs));
}

Expected<Literal> EvalSelectAndScatter(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops) {
  OPPROBE_RETURN_IF_ERROR(ArraysOf(ins, ops, 0, 3));
  const Literal &operand = *ops[0], &source = *ops[1], &init = *ops[2];
  PrimitiveType t = operand.shape().element_type();
  const auto& xd = operand.shape().dimensions();
  if (ins.called_computations.size() != 2)
    return InvalidInput(fmt::format("{}: select-and-scatter needs select and scatter computations", ins.name));
  if (init.shape().rank() != 0 || init.shape().element_type() != source.shape().element_type())
    return InvalidInput(fmt::format("{}: init value does not fit the source", ins.name));
  OPPROBE_ASSIGN_OR_RETURN(WindowGeom g, Geometry(ins, xd));
  if (source.shape().dimensions() != g.out)
    return InvalidInput(fmt::format("{}: source {} does not match the window output {}", ins.name,
                                    source.shape().ToString(false), DimsToString(g.out)));
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, xd, source.shape().element_type()));
  OPPROBE_RETURN_IF_ERROR(
      ev.CheckFlops(ins, static_cast<double>(Product(g.out)) * static_cast<double>(Product(g.size))));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  int64_t es = ByteWidth(t), ses = ByteWidth(source.shape().element_type());
  for (int64_t i = 0, count = out.element_count(); i < count; ++i)
    std::memcpy(out.data().data() + i * ses, init.data().data(), static_cast<size_t>(ses));
  // select(a, b): keep a when true. Fast path for a compare of the two parameters.
  const Computation* sel = ins.called_computations[0];
  if (!sel || !sel->root() || sel->parameters().size() != 2)
    return InvalidInput(fmt::format("{}: select computation must take 2 parameters", ins.name));
  CompareKernel fast_cmp = nullptr;
  {
    const Instruction* r = sel->root();
    auto ps = sel->parameters();
    if (r->opcode == Opcode::kCompare && r->unknown_opcode.empty() && r->operand_count() == 2 &&
        r->operand(0) == ps[0] && r->operand(1) == ps[1] && ps[0]->shape.element_type() == t &&
        ps[1]->shape.element_type() == t)
      fast_cmp = GetCompareKernel(r->comparison_direction, r->rare().comparison_type == "TOTALORDER", t);
  }
  OPPROBE_ASSIGN_OR_RETURN(Combiner scat,
                           MakeCombiner(ev, ins, ins.called_computations[1], {source.shape().element_type()}));
  if (ev.options().compiled_regions && CompiledSelectAndScatter(ins, operand, source, g, out)) return out;
  auto in_str = Strides(xd);
  Status st;
  int64_t s = 0;
  ForEachIndex(g.out, [&](const std::vector<int64_t>& oidx) {
    if (!st.ok()) return;
    int64_t best = -1;
    ForEachInWindow(g, oidx, in_str, [&](int64_t lin) {
      if (!st.ok()) return;
      if (best < 0) {
        best = lin;
        return;
      }
      const uint8_t* a = operand.data().data() + best * es;
      const uint8_t* b = operand.data().data() + lin * es;
      bool keep;
      if (fast_cmp) {
        uint8_t r;
        fast_cmp(a, b, &r, 1);
        keep = r != 0;
      } else {
        Literal la = ScalarAt(operand, best), lb = ScalarAt(operand, lin);
        auto r = ev.Run(*sel, {&la, &lb});
        if (!r.ok()) {
          st = r.status();
          return;
        }
        if (!r->shape().IsArray() || r->shape().element_type() != PrimitiveType::PRED || r->element_count() != 1) {
          st = InvalidInput(fmt::format("{}: select does not return pred[]", ins.name));
          return;
        }
        keep = r->data()[0] != 0;
      }
      if (!keep) best = lin;
    });
    if (best >= 0 && st.ok())
      st = scat.Apply({out.data().data() + best * ses}, {source.data().data() + s * ses},
                      {source.shape().element_type()});
    ++s;
  });
  OPPROBE_RETURN_IF_ERROR(st);
  return out;
}

Expected<Literal> EvalSort(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops) {
  size_t n = ops.size();
  OPPROBE_RETURN_IF_ERROR(ArraysOf(ins, ops, 0, n));
  const auto& xd = ops[0]->shape().dimensions();
  std::vector<PrimitiveType> types;
  for (const Literal* l : ops) {
    if (l->shape().dimensions() != xd) return InvalidInput(fmt::format("{}: sort operands differ in shape", ins.name));
    types.push_back(l->shape().element_type());
  }
  int64_t dim = ins.dimensions.empty() ? static_cast<int64_t>(xd.size()) - 1 : ins.dimensions[0];
  if (xd.empty() || dim < 0 || dim >= static_cast<int64_t>(xd.size()))
    return InvalidInput(fmt::format("{}: bad sort dimension {}", ins.name, dim));
  OPPROBE_RETURN_IF_ERROR(ExpectResults(ins, std::vector<std::vector<int64_t>>(n, xd), types));
  const Computation* cmp = ins.to_apply();
  if (!cmp || !cmp->root()) return InvalidInput(fmt::format("{}: sort needs a comparator", ins.name));
  auto params = cmp->parameters();
  if (params.size() != 2 * n)
    return InvalidInput(fmt::format("{}: comparator takes {} parameters, expected {}", ins.name, params.size(), 2 * n));
  OPPROBE_ASSIGN_OR_RETURN(auto outs, AllocateResults(ev, ins, n));
  // Fast path: root = compare(p_{2k}, p_{2k+1}) (or swapped).
  CompareKernel fast = nullptr;
  size_t key = 0;
  bool swapped = false;
  const Instruction* r = cmp->root();
  if (r->opcode == Opcode::kCompare && r->unknown_opcode.empty() && r->operand_count() == 2) {
    for (size_t k = 0; k < n; ++k) {
      if (r->operand(0) == params[2 * k] && r->operand(1) == params[2 * k + 1]) key = k, swapped = false;
      else if (r->operand(0) == params[2 * k + 1] && r->operand(1) == params[2 * k]) key = k, swapped = true;
      else continue;
      if (params[2 * k]->shape.element_type() == types[k])
        fast = GetCompareKernel(r->comparison_direction, r->rare().comparison_type == "TOTALORDER", types[k]);
      break;
    }
  }
  int64_t len = xd[static_cast<size_t>(dim)];
  int64_t inner = 1, outer = 1;
  for (size_t i = static_cast<size_t>(dim) + 1; i < xd.size(); ++i) inner *= xd[i];
  for (size_t i = 0; i < static_cast<size_t>(dim); ++i) outer *= xd[i];
  std::vector<int64_t> es;
  es.reserve(types.size());
  for (auto t : types) es.push_back(ByteWidth(t));
  Status st;
  std::vector<Literal> scalars(2 * n);
  for (size_t i = 0; i < n; ++i) scalars[2 * i] = scalars[2 * i + 1] = Literal(Shape::Scalar(types[i]));
  std::vector<const Literal*> args;
  args.reserve(scalars.size());
  for (auto& s : scalars) args.push_back(&s);
  // less(a, b) with a, b linear element indices.
  auto less = [&](int64_t a, int64_t b) -> bool {
    if (!st.ok()) return false;
    if (fast) {
      uint8_t res;
      const uint8_t* base = ops[key]->data().data();
      if (swapped) fast(base + b * es[key], base + a * es[key], &res, 1);
      else fast(base + a * es[key], base + b * es[key], &res, 1);
      return res != 0;
    }
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(scalars[2 * i].data().data(), ops[i]->data().data() + a * es[i], static_cast<size_t>(es[i]));
      std::memcpy(scalars[2 * i + 1].data().data(), ops[i]->data().data() + b * es[i], static_cast<size_t>(es[i]));
    }
    auto res = ev.Run(*cmp, args);
    if (!res.ok()) {
      st = res.status();
      return false;
    }
    if (!res->shape().IsArray() || res->shape().element_type() != PrimitiveType::PRED || res->element_count() != 1) {
      st = InvalidInput(fmt::format("{}: comparator does not return pred[]", ins.name));
      return false;
    }
    return res->data()[0] != 0;
  };
  std::vector<int64_t> idx(static_cast<size_t>(len)), tmp(static_cast<size_t>(len));
  for (int64_t o = 0; o < outer && st.ok(); ++o)
    for (int64_t in = 0; in < inner && st.ok(); ++in) {
      int64_t base = o * len * inner + in;
      for (int64_t k = 0; k < len; ++k) idx[static_cast<size_t>(k)] = base + k * inner;
      // Stable bottom-up merge sort (safe with any comparator).
      for (int64_t width = 1; width < len; width *= 2) {
        for (int64_t lo = 0; lo < len; lo += 2 * width) {
          int64_t mid = std::min(lo + width, len), hi = std::min(lo + 2 * width, len);
          int64_t a = lo, b = mid, t = lo;
          while (a < mid && b < hi) {
            if (less(idx[static_cast<size_t>(b)], idx[static_cast<size_t>(a)]))
              tmp[static_cast<size_t>(t++)] = idx[static_cast<size_t>(b++)];
            else tmp[static_cast<size_t>(t++)] = idx[static_cast<size_t>(a++)];
          }
          while (a < mid) tmp[static_cast<size_t>(t++)] = idx[static_cast<size_t>(a++)];
          while (b < hi) tmp[static_cast<size_t>(t++)] = idx[static_cast<size_t>(b++)];
        }
        std::swap(idx, tmp);
      }
      for (size_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < len; ++k)
          std::memcpy(outs[i].data().data() + (base + k * inner) * es[i],
                      ops[i]->data().data() + idx[static_cast<size_t>(k)] * es[i], static_cast<size_t>(es[i]));
    }
  OPPROBE_RETURN_IF_ERROR(st);
  return Pack(std::move(outs));
}

Expected<Literal> EvalTopK(Evaluator& ev, const Instruction& ins, const Literal& x) {
  if (!x.shape().IsArray() || x.shape().rank() < 1)
    return InvalidInput(fmt::format("{}: topk needs an array of rank >= 1", ins.name));
  auto d = x.shape().dimensions();
  int64_t len = d.back(), k = ins.k;
  if (k < 0 || k > len) return InvalidInput(fmt::format("{}: k={} for a last dimension of {}", ins.name, k, len));
  PrimitiveType t = x.shape().element_type();
  d.back() = k;
  OPPROBE_RETURN_IF_ERROR(ExpectResults(ins, {d, d}, {t, PrimitiveType::S32}));
  OPPROBE_ASSIGN_OR_RETURN(auto outs, AllocateResults(ev, ins, 2));
  CompareKernel gt = GetCompareKernel(ins.largest ? ComparisonDirection::kGt : ComparisonDirection::kLt, true, t);
  if (!gt) return Unimplemented(fmt::format("topk is not defined for {}", PrimitiveTypeName(t)));
  int64_t rows = len ? x.element_count() / len : 0, es = ByteWidth(t);
  std::vector<int64_t> idx(static_cast<size_t>(len));
  for (int64_t r = 0; r < rows; ++r) {
    std::iota(idx.begin(), idx.end(), 0);
    const uint8_t* base = x.data().data() + r * len * es;
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
      uint8_t res;
      gt(base + a * es, base + b * es, &res, 1);
      return res != 0;
    });
    for (int64_t j = 0; j < k; ++j) {
      std::memcpy(outs[0].data().data() + (r * k + j) * es, base + idx[static_cast<size_t>(j)] * es,
                  static_cast<size_t>(es));
      outs[1].Set<int32_t>(r * k + j, static_cast<int32_t>(idx[static_cast<size_t>(j)]));
    }
  }
  return Pack(std::move(outs));
}

namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

Status CheckIndexSet(const Instruction& ins, const std::vector<int64_t>& v, int64_t rank, const char* what) {
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t d : v) {
    if (d < 0 || d >= rank || seen[static_cast<size_t>(d)])
      return InvalidInput(fmt::format("{}: bad {} {}", ins.name, what, DimsToString(v)));
    seen[static_cast<size_t>(d)] = true;
  }
  return Status::Ok();
}

int64_t IndexValue(const Literal& l, int64_t i) {
  if (IsUnsignedInteger(l.shape().element_type()))
    return static_cast<int64_t>(std::min<uint64_t>(l.GetAsUint64(i), INT64_MAX / 4));
  return l.GetAsInt64(i);
}

}  // namespace

Expected<Literal> EvalGather(Evaluator& ev, const Instruction& ins, const Literal& operand, const Literal& indices) {
  if (!operand.shape().IsArray() || !indices.shape().IsArray() || !IsInteger(indices.shape().element_type()))
    return InvalidInput(fmt::format("{}: gather needs an array and integer indices", ins.name));
  if (!ins.gather_dimension_numbers) return InvalidInput(fmt::format("{}: gather without dimension numbers", ins.name));
  const auto& dn = *ins.gather_dimension_numbers;
  const auto& od = operand.shape().dimensions();
  const auto& slice = ins.rare().gather_slice_sizes;
  int64_t orank = static_cast<int64_t>(od.size());
  auto id = indices.shape().dimensions();
  int64_t ivd = dn.index_vector_dim;
  if (ivd < 0 || ivd > static_cast<int64_t>(id.size()))
    return InvalidInput(fmt::format("{}: bad index_vector_dim {}", ins.name, ivd));
  if (ivd == static_cast<int64_t>(id.size())) id.push_back(1);
  int64_t ivec = id[static_cast<size_t>(ivd)];
  if (static_cast<int64_t>(slice.size()) != orank || static_cast<int64_t>(dn.start_index_map.size()) != ivec ||
      dn.operand_batching_dims.size() != dn.start_indices_batching_dims.size())
    return InvalidInput(
        fmt::format("{}: slice_sizes / start_index_map do not fit {}", ins.name, operand.shape().ToString(false)));
  OPPROBE_RETURN_IF_ERROR(CheckIndexSet(ins, dn.start_index_map, orank, "start_index_map"));
  OPPROBE_RETURN_IF_ERROR(CheckIndexSet(ins, dn.collapsed_slice_dims, orank, "collapsed_slice_dims"));
  OPPROBE_RETURN_IF_ERROR(CheckIndexSet(ins, dn.operand_batching_dims, orank, "operand_batching_dims"));
  for (int64_t d : dn.start_indices_batching_dims)
    if (d < 0 || d >= static_cast<int64_t>(id.size()) || d == ivd)
      return InvalidInput(fmt::format("{}: bad start_indices_batching_dims", ins.name));
  for (int64_t i = 0; i < orank; ++i) {
    size_t ui = static_cast<size_t>(i);
    if (slice[ui] < 0 || slice[ui] > od[ui])
      return InvalidInput(fmt::format("{}: slice size {} exceeds dimension {} of {}", ins.name, slice[ui], i,
                                      operand.shape().ToString(false)));
    if ((Contains(dn.collapsed_slice_dims, i) || Contains(dn.operand_batching_dims, i)) && slice[ui] > 1)
      return InvalidInput(fmt::format("{}: collapsed dimension {} has slice size {}", ins.name, i, slice[ui]));
  }
  std::vector<int64_t> window_dims;  // operand dims that appear in the output, in order
  for (int64_t i = 0; i < orank; ++i)
    if (!Contains(dn.collapsed_slice_dims, i) && !Contains(dn.operand_batching_dims, i)) window_dims.push_back(i);
  std::vector<int64_t> batch_in_dims;  // indices dims that are batch dims, in order
  for (int64_t i = 0; i < static_cast<int64_t>(id.size()); ++i)
    if (i != ivd) batch_in_dims.push_back(i);
  int64_t out_rank = static_cast<int64_t>(batch_in_dims.size() + window_dims.size());
  if (dn.offset_dims.size() != window_dims.size())
    return InvalidInput(fmt::format("{}: {} offset_dims for {} window dimensions", ins.name, dn.offset_dims.size(),
                                    window_dims.size()));
  OPPROBE_RETURN_IF_ERROR(CheckIndexSet(ins, dn.offset_dims, out_rank, "offset_dims"));
  std::vector<int64_t> out_dims(static_cast<size_t>(out_rank));
  std::vector<int64_t> out_batch_pos;  // output positions of batch dims
  {
    size_t w = 0, b = 0;
    for (int64_t i = 0; i < out_rank; ++i) {
      if (Contains(dn.offset_dims, i)) out_dims[static_cast<size_t>(i)] = slice[static_cast<size_t>(window_dims[w++])];
      else out_dims[static_cast<size_t>(i)] = id[static_cast<size_t>(batch_in_dims[b++])], out_batch_pos.push_back(i);
    }
  }
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, out_dims, operand.shape().element_type()));
  // A collapsed dimension of slice size 0 (`f32[0,2]`, slice_sizes={0,2}) still yields result elements, and
  // there is no operand element for them to read.
  int64_t out_count = 1;
  for (int64_t d : out_dims) out_count *= d;
  if (operand.element_count() == 0 && out_count > 0)
    return InvalidInput(fmt::format("{}: gather of {} elements from the empty operand {}", ins.name, out_count,
                                    operand.shape().ToString(false)));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  auto ostr = Strides(od), istr = Strides(id);
  int64_t es = ByteWidth(operand.shape().element_type());
  std::vector<int64_t> start(od.size()), iidx(id.size());
  int64_t k = 0;
  ForEachIndex(out_dims, [&](const std::vector<int64_t>& o) {
    for (size_t b = 0; b < batch_in_dims.size(); ++b)
      iidx[static_cast<size_t>(batch_in_dims[b])] = o[static_cast<size_t>(out_batch_pos[b])];
    std::fill(start.begin(), start.end(), 0);
    for (int64_t j = 0; j < ivec; ++j) {
      iidx[static_cast<size_t>(ivd)] = j;
      int64_t lin = 0;
      for (size_t q = 0; q < iidx.size(); ++q) lin += iidx[q] * istr[q];
      start[static_cast<size_t>(dn.start_index_map[static_cast<size_t>(j)])] = IndexValue(indices, lin);
    }
    for (size_t q = 0; q < dn.operand_batching_dims.size(); ++q)
      start[static_cast<size_t>(dn.operand_batching_dims[q])] =
          iidx[static_cast<size_t>(dn.start_indices_batching_dims[q])];
    int64_t src = 0;
    size_t w = 0;
    for (size_t d = 0; d < od.size(); ++d) {
      int64_t s = std::clamp<int64_t>(start[d], 0, od[d] - slice[d]);
      int64_t off = 0;
      if (w < window_dims.size() && window_dims[w] == static_cast<int64_t>(d))
        off = o[static_cast<size_t>(dn.offset_dims[w++])];
      src += (s + off) * ostr[d];
    }
    std::memcpy(out.data().data() + (k++) * es, operand.data().data() + src * es, static_cast<size_t>(es));
  });
  return out;
}

Expected<Literal> EvalScatter(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops) {
  if (ops.size() < 3 || ops.size() % 2 != 1)
    return InvalidInput(fmt::format("{}: scatter needs operands, indices and as many updates", ins.name));
  size_t n = (ops.size() - 1) / 2;
  OPPROBE_RETURN_IF_ERROR(ArraysOf(ins, ops, 0, ops.size()));
  const Literal& indices = *ops[n];
  if (!IsInteger(indices.shape().element_type()))
    return InvalidInput(fmt::format("{}: scatter indices must be integers", ins.name));
  if (!ins.scatter_dimension_numbers)
    return InvalidInput(fmt::format("{}: scatter without dimension numbers", ins.name));
  const auto& dn = *ins.scatter_dimension_numbers;
  const auto& od = ops[0]->shape().dimensions();
  const auto& ud = ops[n + 1]->shape().dimensions();
  std::vector<PrimitiveType> types;
  for (size_t i = 0; i < n; ++i) {
    if (ops[i]->shape().dimensions() != od || ops[n + 1 + i]->shape().dimensions() != ud ||
        ops[n + 1 + i]->shape().element_type() != ops[i]->shape().element_type())
      return InvalidInput(fmt::format("{}: scatter operands / updates differ in shape", ins.name));
    types.push_back(ops[i]->shape().element_type());
  }
  int64_t orank = static_cast<int64_t>(od.size());
  auto id = indices.shape().dimensions();
  int64_t ivd = dn.index_vector_dim;
  if (ivd < 0 || ivd > static_cast<int64_t>(id.size()))
    return InvalidInput(fmt::format("{}: bad index_vector_dim {}", ins.name, ivd));
  if (ivd == static_cast<int64_t>(id.size())) id.push_back(1);
  int64_t ivec = id[static_cast<size_t>(ivd)];
  if (static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size()) != ivec ||
      dn.input_batching_dims.size() != dn.scatter_indices_batching_dims.size())
    return InvalidInput(fmt::format("{}: scatter_dims_to_operand_dims does not fit the index vector", ins.name));
  OPPROBE_RETURN_IF_ERROR(CheckIndexSet(ins, dn.scatter_dims_to_operand_dims, orank, "scatter_dims_to_operand_dims"));
  OPPROBE_RETURN_IF_ERROR(CheckIndexSet(ins, dn.inserted_window_dims, orank, "inserted_window_dims"));
  OPPROBE_RETURN_IF_ERROR(CheckIndexSet(ins, dn.input_batching_dims, orank, "input_batching_dims"));
  OPPROBE_RETURN_IF_ERROR(
      CheckIndexSet(ins, dn.update_window_dims, static_cast<int64_t>(ud.size()), "update_window_dims"));
  std::vector<int64_t> window_dims;
  for (int64_t i = 0; i < orank; ++i)
    if (!Contains(dn.inserted_window_dims, i) && !Contains(dn.input_batching_dims, i)) window_dims.push_back(i);
  if (window_dims.size() != dn.update_window_dims.size())
    return InvalidInput(fmt::format("{}: {} update_window_dims for {} window dimensions", ins.name,
                                    dn.update_window_dims.size(), window_dims.size()));
  std::vector<int64_t> batch_in_dims, upd_scatter_dims;
  for (int64_t i = 0; i < static_cast<int64_t>(id.size()); ++i)
    if (i != ivd) batch_in_dims.push_back(i);
  for (int64_t i = 0; i < static_cast<int64_t>(ud.size()); ++i)
    if (!Contains(dn.update_window_dims, i)) upd_scatter_dims.push_back(i);
  if (batch_in_dims.size() != upd_scatter_dims.size())
    return InvalidInput(fmt::format("{}: updates {} do not fit indices {}", ins.name,
                                    ops[n + 1]->shape().ToString(false), indices.shape().ToString(false)));
  for (size_t b = 0; b < batch_in_dims.size(); ++b)
    if (id[static_cast<size_t>(batch_in_dims[b])] != ud[static_cast<size_t>(upd_scatter_dims[b])])
      return InvalidInput(fmt::format("{}: updates {} do not fit indices {}", ins.name,
                                      ops[n + 1]->shape().ToString(false), indices.shape().ToString(false)));
  std::vector<int64_t> wsize(od.size(), 1);
  for (size_t w = 0; w < window_dims.size(); ++w) {
    wsize[static_cast<size_t>(window_dims[w])] = ud[static_cast<size_t>(dn.update_window_dims[w])];
    if (wsize[static_cast<size_t>(window_dims[w])] > od[static_cast<size_t>(window_dims[w])])
      return InvalidInput(fmt::format("{}: update window exceeds the operand", ins.name));
  }
  OPPROBE_RETURN_IF_ERROR(ExpectResults(ins, std::vector<std::vector<int64_t>>(n, od), types));
  std::vector<Literal> outs;
  outs.reserve(n);
  for (size_t i = 0; i < n; ++i) outs.push_back(*ops[i]);
  OPPROBE_ASSIGN_OR_RETURN(Combiner comb, MakeCombiner(ev, ins, ins.to_apply(), types));
  auto ostr = Strides(od), istr = Strides(id);
  std::vector<int64_t> start(od.size()), iidx(id.size());
  std::vector<uint8_t*> acc(n);
  std::vector<const uint8_t*> x(n);
  Status st;
  int64_t k = 0;
  ForEachIndex(ud, [&](const std::vector<int64_t>& u) {
    if (!st.ok()) return;
    int64_t uk = k++;
    for (size_t b = 0; b < batch_in_dims.size(); ++b)
      iidx[static_cast<size_t>(batch_in_dims[b])] = u[static_cast<size_t>(upd_scatter_dims[b])];
    std::fill(start.begin(), start.end(), 0);
    for (int64_t j = 0; j < ivec; ++j) {
      iidx[static_cast<size_t>(ivd)] = j;
      int64_t lin = 0;
      for (size_t q = 0; q < iidx.size(); ++q) lin += iidx[q] * istr[q];
      start[static_cast<size_t>(dn.scatter_dims_to_operand_dims[static_cast<size_t>(j)])] = IndexValue(indices, lin);
    }
    for (size_t q = 0; q < dn.input_batching_dims.size(); ++q)
      start[static_cast<size_t>(dn.input_batching_dims[q])] =
          iidx[static_cast<size_t>(dn.scatter_indices_batching_dims[q])];
    int64_t dst = 0;
    size_t w = 0;
    for (size_t d = 0; d < od.size(); ++d) {
      if (start[d] < 0 || start[d] > od[d] - wsize[d]) return;  // the window is out of bounds: skipped
      int64_t off = 0;
      if (w < window_dims.size() && window_dims[w] == static_cast<int64_t>(d))
        off = u[static_cast<size_t>(dn.update_window_dims[w++])];
      dst += (start[d] + off) * ostr[d];
    }
    for (size_t i = 0; i < n; ++i) {
      acc[i] = outs[i].data().data() + dst * comb.es[i];
      x[i] = ops[n + 1 + i]->data().data() + uk * comb.es[i];
    }
    st = comb.Apply(acc, x, types);
  });
  OPPROBE_RETURN_IF_ERROR(st);
  return Pack(std::move(outs));
}

Expected<Literal> EvalMap(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops) {
  OPPROBE_RETURN_IF_ERROR(ArraysOf(ins, ops, 0, ops.size()));
  const auto& xd = ops[0]->shape().dimensions();
  for (const Literal* l : ops)
    if (l->shape().dimensions() != xd) return InvalidInput(fmt::format("{}: map operands differ in shape", ins.name));
  const Computation* comp = ins.to_apply();
  if (!comp || !comp->root() || comp->parameters().size() != ops.size())
    return InvalidInput(fmt::format("{}: map computation does not take {} parameters", ins.name, ops.size()));
  if (!ins.shape.IsArray()) return InvalidInput(fmt::format("{}: map result is not an array", ins.name));
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, xd, ins.shape.element_type()));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  int64_t n = out.element_count(), oes = ByteWidth(ins.shape.element_type());
  std::vector<Literal> scalars;
  scalars.reserve(ops.size());
  for (const Literal* l : ops) scalars.emplace_back(Shape::Scalar(l->shape().element_type()));
  std::vector<const Literal*> args;
  args.reserve(scalars.size());
  for (auto& s : scalars) args.push_back(&s);
  for (int64_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < ops.size(); ++j) {
      int64_t es = ByteWidth(ops[j]->shape().element_type());
      std::memcpy(scalars[j].data().data(), ops[j]->data().data() + i * es, static_cast<size_t>(es));
    }
    OPPROBE_ASSIGN_OR_RETURN(Literal r, ev.Run(*comp, args));
    if (!r.shape().IsArray() || r.element_count() != 1 || r.shape().element_type() != ins.shape.element_type())
      return InvalidInput(fmt::format("{}: map computation returns {}", ins.name, r.shape().ToString(false)));
    std::memcpy(out.data().data() + i * oes, r.data().data(), static_cast<size_t>(oes));
  }
  return out;
}

}  // namespace opprobe::hlo::eval
