// reduce, reduce-window and select-and-scatter whose called computations region.h recognises, as typed
// loops. Each visits the elements in the generic path's order and applies the same scalar semantics
// (scalar_ops.h, the compare kernels, f16/bf16 rounded after every step), so both paths give identical
// bits; the tests run modules through both (EvaluatorOptions::compiled_regions).
#include <algorithm>

#include "hlo/evaluator/internal.h"
#include "hlo/evaluator/region.h"
#include "hlo/evaluator/scalar_ops.h"

namespace opprobe::hlo::eval {
namespace {

// A value of P as the generic path leaves it after storing: f16 / bf16 round, others are unchanged.
template <PrimitiveType P>
typename Traits<P>::Compute Round(typename Traits<P>::Compute v) {
  if constexpr (P == PrimitiveType::F16 || P == PrimitiveType::BF16) {
    uint8_t b[2];
    Traits<P>::Store(b, 0, v);
    return Traits<P>::Load(b, 0);
  } else {
    return v;
  }
}

template <Opcode op>
using OpC = std::integral_constant<Opcode, op>;

// Calls f(TypeC<P>{}, OpC<op>{}) for the binary reducers region.h recognises on the types they are
// defined for; false when (op, t) is not one of them.
template <class F>
bool DispatchBinary(Opcode op, PrimitiveType t, F&& f) {
  bool done = false;
  Status st = DispatchType(t, [&](auto tc) {
    using C = typename Traits<decltype(tc)::value>::Compute;
    auto call = [&](auto oc) {
      if constexpr (BinaryValid<decltype(oc)::value, C>()) {
        f(tc, oc);
        done = true;
      }
    };
    switch (op) {
      case Opcode::kAdd: call(OpC<Opcode::kAdd>{}); break;
      case Opcode::kMultiply: call(OpC<Opcode::kMultiply>{}); break;
      case Opcode::kMaximum: call(OpC<Opcode::kMaximum>{}); break;
      case Opcode::kMinimum: call(OpC<Opcode::kMinimum>{}); break;
      case Opcode::kAnd: call(OpC<Opcode::kAnd>{}); break;
      case Opcode::kOr: call(OpC<Opcode::kOr>{}); break;
      case Opcode::kXor: call(OpC<Opcode::kXor>{}); break;
      default: break;
    }
    return Status::Ok();
  });
  return st.ok() && done;
}

template <PrimitiveType P, Opcode op>
typename Traits<P>::Compute Apply(bool swap, typename Traits<P>::Compute acc, typename Traits<P>::Compute x) {
  return Round<P>(swap ? BinaryApply<op>(x, acc) : BinaryApply<op>(acc, x));
}

// The atoms of a selection through their compare kernels (any element types).
class KernelAtoms {
 public:
  explicit KernelAtoms(const Selection& sel) : sel_(sel) {}
  uint32_t operator()(const uint8_t* const* slot) const { return sel_.Atoms(slot); }

 private:
  const Selection& sel_;
};

// The atoms of a selection whose comparisons are all between values of PV or of PI (or preds), inlined:
// a switch per atom instead of a kernel call. Codes: 0 a pred slot; 1 + 2 * direction (+1 for TOTALORDER)
// a compare of PV values; 13 + ... of PI values (ComparisonDirection's order: EQ NE GE GT LE LT).
template <PrimitiveType PV, PrimitiveType PI>
class TypedAtoms {
 public:
  // False when some atom compares another type.
  bool Bind(const Selection& sel) {
    for (const auto& a : sel.atoms()) {
      int code;
      if (!a.cmp) code = 0;
      else if (a.type == PV) code = 1 + static_cast<int>(a.dir) * 2 + (a.total ? 1 : 0);
      else if (a.type == PI) code = 13 + static_cast<int>(a.dir) * 2 + (a.total ? 1 : 0);
      else return false;
      atoms_.push_back({a.a, a.b, code});
    }
    return true;
  }
  [[gnu::always_inline]] uint32_t operator()(const uint8_t* const* slot) const {
    uint32_t bits = 0;
    for (size_t j = 0; j < atoms_.size(); ++j) {
      const A& a = atoms_[j];
      bool r = false;
      switch (a.code) {
        case 0: r = *slot[a.a] != 0; break;
#define OPPROBE_ATOM(BASE, P, D, I)                                                               \
  case (BASE) + (I)*2:                                                                            \
    r = CompareValues<P, D, false>(Traits<P>::Load(slot[a.a], 0), Traits<P>::Load(slot[a.b], 0)); \
    break;                                                                                        \
  case (BASE) + (I)*2 + 1:                                                                        \
    r = CompareValues<P, D, true>(Traits<P>::Load(slot[a.a], 0), Traits<P>::Load(slot[a.b], 0));  \
    break;
#define OPPROBE_ATOMS(BASE, P)                       \
  OPPROBE_ATOM(BASE, P, ComparisonDirection::kEq, 0) \
  OPPROBE_ATOM(BASE, P, ComparisonDirection::kNe, 1) \
  OPPROBE_ATOM(BASE, P, ComparisonDirection::kGe, 2) \
  OPPROBE_ATOM(BASE, P, ComparisonDirection::kGt, 3) \
  OPPROBE_ATOM(BASE, P, ComparisonDirection::kLe, 4) \
  OPPROBE_ATOM(BASE, P, ComparisonDirection::kLt, 5)
          OPPROBE_ATOMS(1, PV)
          OPPROBE_ATOMS(13, PI)
#undef OPPROBE_ATOMS
#undef OPPROBE_ATOM
        default: break;
      }
      bits |= static_cast<uint32_t>(r) << j;
    }
    return bits;
  }

 private:
  struct A {
    int a, b, code;
  };
  std::vector<A> atoms_;
};

// One step of a selection reducer: acc[k] (k < n) becomes the value its table entry chooses among the
// accumulators, the elements x[k] and the constants. N: the number of results when fixed at compile time
// (0: sel.num_results()).
template <class Atoms, size_t N = 0>
class SelectionStepper {
 public:
  SelectionStepper(const Selection& sel, const Atoms& atoms)
      : sel_(sel), atoms_(atoms), n_(N ? N : static_cast<size_t>(sel.num_results())) {
    sel.BindConstants(slot_);
    for (size_t k = 0; k < n_; ++k) es_[k] = ByteWidth(sel.slot_type(static_cast<int>(k)));
  }
  [[gnu::always_inline]] void Step(uint8_t* const* acc, const uint8_t* const* x) {
    const size_t n = N ? N : n_;
    for (size_t k = 0; k < n; ++k) slot_[k] = acc[k], slot_[n + k] = x[k];
    uint32_t bits = atoms_(slot_);
    if (!sel_.crosses()) {
      for (size_t k = 0; k < n; ++k) Write(acc[k], sel_.Choice(static_cast<int>(k), bits), k);
      return;
    }
    uint8_t tmp[Selection::kMaxSlots][16];
    for (size_t k = 0; k < n_; ++k) {
      int8_t c = sel_.Choice(static_cast<int>(k), bits);
      if (c >= 0) std::memcpy(tmp[k], slot_[c], static_cast<size_t>(es_[k]));
      else tmp[k][0] = c == Selection::kTrue ? 1 : 0;
    }
    for (size_t k = 0; k < n_; ++k) std::memcpy(acc[k], tmp[k], static_cast<size_t>(es_[k]));
  }
  // For an (a, b) -> pred selection: its result.
  bool Pick(const uint8_t* a, const uint8_t* b) {
    slot_[0] = a, slot_[1] = b;
    return sel_.Choice(0, atoms_(slot_)) == Selection::kTrue;
  }

 private:
  [[gnu::always_inline]] void Write(uint8_t* acc, int8_t c, size_t k) {
    if (c < 0) {
      *acc = c == Selection::kTrue ? 1 : 0;
      return;
    }
    const uint8_t* src = slot_[c];
    if (src == acc) return;
    switch (es_[k]) {
      case 1: *acc = *src; break;
      case 2: std::memcpy(acc, src, 2); break;
      case 4: std::memcpy(acc, src, 4); break;
      case 8: std::memcpy(acc, src, 8); break;
      default: std::memcpy(acc, src, static_cast<size_t>(es_[k])); break;
    }
  }
  const Selection& sel_;
  const Atoms& atoms_;
  size_t n_;
  int64_t es_[Selection::kMaxSlots] = {};
  const uint8_t* slot_[Selection::kMaxSlots] = {};
};

// Calls f(stepper) with a SelectionStepper for `sel`: with inlined compares when its atoms compare the
// common value and index types (the element types of its first two parameters), else through kernels.
template <class F>
void WithStepper(const Selection& sel, F&& f) {
  PrimitiveType a = sel.slot_type(0), b = sel.num_params() > 1 ? sel.slot_type(1) : a;
  bool done = false;
  auto typed = [&](auto v, auto i) {
    TypedAtoms<decltype(v)::value, decltype(i)::value> atoms;
    if (!atoms.Bind(sel)) return;
    if (sel.num_results() == 2) {
      SelectionStepper<decltype(atoms), 2> st(sel, atoms);
      f(st);
    } else {
      SelectionStepper<decltype(atoms)> st(sel, atoms);
      f(st);
    }
    done = true;
  };
  using PT = PrimitiveType;
  auto with_index = [&](auto v) {
    switch (b) {
      case PT::S32: typed(v, TypeC<PT::S32>{}); break;
      case PT::U32: typed(v, TypeC<PT::U32>{}); break;
      case PT::S64: typed(v, TypeC<PT::S64>{}); break;
      default:
        if (b == a) typed(v, v);
        break;
    }
  };
  switch (a) {
    case PT::F32: with_index(TypeC<PT::F32>{}); break;
    case PT::F64: with_index(TypeC<PT::F64>{}); break;
    case PT::BF16: with_index(TypeC<PT::BF16>{}); break;
    case PT::F16: with_index(TypeC<PT::F16>{}); break;
    case PT::S32: with_index(TypeC<PT::S32>{}); break;
    case PT::S64: with_index(TypeC<PT::S64>{}); break;
    default: break;
  }
  if (done) return;
  KernelAtoms atoms(sel);
  SelectionStepper<KernelAtoms> st(sel, atoms);
  f(st);
}

// The operand of a reduce as runs: dims collapsed where neighbours are both reduced or both kept (dims of
// size 1 dropped); run(out, in, len, reduced) for each innermost line, in the operand's row-major order.
// A reduced line folds len elements into output `out`; a kept line combines them into outputs out..out+len.
template <class F>
void ForEachRun(const std::vector<int64_t>& xd, const std::vector<bool>& reduced, F&& run) {
  std::vector<int64_t> size;
  std::vector<bool> red;
  for (size_t i = 0; i < xd.size(); ++i) {
    if (xd[i] == 1) continue;
    if (!size.empty() && red.back() == reduced[i]) size.back() *= xd[i];
    else size.push_back(xd[i]), red.push_back(reduced[i]);
  }
  if (size.empty()) size.push_back(1), red.push_back(false);
  size_t m = size.size();
  std::vector<int64_t> in_str(m, 1), out_str(m, 0);
  for (size_t i = m - 1; i > 0; --i) in_str[i - 1] = in_str[i] * size[i];
  int64_t o = 1;
  for (size_t i = m; i-- > 0;)
    if (!red[i]) out_str[i] = o, o *= size[i];
  std::vector<int64_t> idx(m, 0);
  int64_t in = 0, out = 0;
  const int64_t len = size[m - 1];
  const bool inner_reduced = red[m - 1];
  while (true) {
    run(out, in, len, inner_reduced);
    int64_t k = static_cast<int64_t>(m) - 2;
    for (; k >= 0; --k) {
      size_t uk = static_cast<size_t>(k);
      in += in_str[uk], out += out_str[uk];
      if (++idx[uk] < size[uk]) break;
      in -= in_str[uk] * size[uk], out -= out_str[uk] * size[uk];
      idx[uk] = 0;
    }
    if (k < 0) return;
  }
}

// The operand positions (linear index) inside each window, in the generic path's order: per output element
// in row-major order, f(out, outer, n_outer, inner, n_inner), the window's in-bounds, non-hole elements
// being outer[i] + inner[j] for i < n_outer (the leading dims), j < n_inner (the last dim), row-major.
class WindowWalk {
 public:
  explicit WindowWalk(const WindowGeom& g) : g_(g), r_(g.in.size()) {
    auto in_str = Strides(g.in);
    lists_.resize(r_);
    begin_.resize(r_);
    for (size_t i = 0; i < r_; ++i) {
      const auto& w = g.w[i];
      begin_[i].push_back(0);
      for (int64_t o = 0; o < g.out[i]; ++o) {
        for (int64_t k = 0; k < g.size[i]; ++k) {
          int64_t kk = w.window_reversal ? g.size[i] - 1 - k : k;
          int64_t p = o * w.stride + kk * w.window_dilation - w.padding_low;
          if (p < 0 || p % w.base_dilation != 0) continue;
          p /= w.base_dilation;
          if (p >= g.in[i]) continue;
          lists_[i].push_back(p * in_str[i]);
        }
        begin_[i].push_back(static_cast<int64_t>(lists_[i].size()));
      }
    }
    prefix_.resize(r_ + 1);
    prefix_[0] = {0};
  }
  template <class F>
  void ForEach(F&& f) {
    int64_t out = 0;
    if (r_ == 0) {  // one window of one element
      const int64_t zero = 0;
      f(out, &zero, int64_t{1}, &zero, int64_t{1});
      return;
    }
    Walk(0, out, f);
  }

 private:
  template <class F>
  void Walk(size_t d, int64_t& out, F& f) {
    const auto& list = lists_[d];
    const auto& outer = prefix_[d];
    for (int64_t o = 0; o < g_.out[d]; ++o) {
      const int64_t* b = list.data() + begin_[d][static_cast<size_t>(o)];
      int64_t n = begin_[d][static_cast<size_t>(o) + 1] - begin_[d][static_cast<size_t>(o)];
      if (d + 1 == r_) {
        f(out++, outer.data(), static_cast<int64_t>(outer.size()), b, n);
        continue;
      }
      auto& next = prefix_[d + 1];
      next.clear();
      for (int64_t base : outer)
        for (int64_t j = 0; j < n; ++j) next.push_back(base + b[j]);
      Walk(d + 1, out, f);
    }
  }
  const WindowGeom& g_;
  size_t r_;
  std::vector<std::vector<int64_t>> lists_, begin_, prefix_;
};

}  // namespace

bool CompiledReduce(const Instruction& ins, const std::vector<const Literal*>& ops, std::vector<Literal>& outs,
                    const std::vector<PrimitiveType>& types, const std::vector<bool>& reduced) {
  RegionPlan plan = PlanReducer(ins.to_apply(), types);
  const auto& xd = ops[0]->shape().dimensions();
  size_t n = types.size();
  switch (plan.kind) {
    case RegionPlan::Kind::kGeneric: return false;
    case RegionPlan::Kind::kTakeFirst: return true;  // the init values stay
    case RegionPlan::Kind::kTakeSecond: {
      int64_t es = ByteWidth(types[0]);
      ForEachRun(xd, reduced, [&](int64_t out, int64_t in, int64_t len, bool red) {
        const uint8_t* x = ops[0]->data().data();
        uint8_t* o = outs[0].data().data();
        if (red) std::memcpy(o + out * es, x + (in + len - 1) * es, static_cast<size_t>(es));
        else std::memcpy(o + out * es, x + in * es, static_cast<size_t>(len * es));
      });
      return true;
    }
    case RegionPlan::Kind::kBinary:
      return DispatchBinary(plan.op, types[0], [&](auto tc, auto oc) {
        constexpr PrimitiveType P = decltype(tc)::value;
        constexpr Opcode op = decltype(oc)::value;
        using T = Traits<P>;
        using C = typename T::Compute;
        const uint8_t* x = ops[0]->data().data();
        uint8_t* o = outs[0].data().data();
        bool swap = plan.swap;
        ForEachRun(xd, reduced, [&](int64_t out, int64_t in, int64_t len, bool red) {
          if (red) {
            C acc = T::Load(o, out);
            for (int64_t j = 0; j < len; ++j) acc = Apply<P, op>(swap, acc, T::Load(x, in + j));
            T::Store(o, out, acc);
          } else {
            for (int64_t j = 0; j < len; ++j)
              T::Store(o, out + j, Apply<P, op>(swap, T::Load(o, out + j), T::Load(x, in + j)));
          }
        });
      });
    case RegionPlan::Kind::kSelection: {
      std::vector<int64_t> es(n);
      for (size_t k = 0; k < n; ++k) es[k] = ByteWidth(types[k]);
      WithStepper(plan.selection, [&](auto& step) {
        uint8_t* acc[Selection::kMaxSlots];
        const uint8_t* x[Selection::kMaxSlots];
        ForEachRun(xd, reduced, [&](int64_t out, int64_t in, int64_t len, bool red) {
          for (int64_t j = 0; j < len; ++j) {
            for (size_t k = 0; k < n; ++k) {
              acc[k] = outs[k].data().data() + (red ? out : out + j) * es[k];
              x[k] = ops[k]->data().data() + (in + j) * es[k];
            }
            step.Step(acc, x);
          }
        });
      });
      return true;
    }
  }
  return false;
}

bool CompiledReduceWindow(const Instruction& ins, const std::vector<const Literal*>& ops, const WindowGeom& g,
                          std::vector<Literal>& outs, const std::vector<PrimitiveType>& types) {
  RegionPlan plan = PlanReducer(ins.to_apply(), types);
  size_t n = types.size();
  WindowWalk walk(g);
  switch (plan.kind) {
    case RegionPlan::Kind::kGeneric: return false;
    case RegionPlan::Kind::kTakeFirst:
    case RegionPlan::Kind::kTakeSecond: {
      int64_t es = ByteWidth(types[0]);
      bool second = plan.kind == RegionPlan::Kind::kTakeSecond;
      walk.ForEach([&](int64_t out, const int64_t* outer, int64_t n_outer, const int64_t* inner, int64_t n_inner) {
        const uint8_t* src = ops[1]->data().data();
        if (second && n_outer > 0 && n_inner > 0)
          src = ops[0]->data().data() + (outer[n_outer - 1] + inner[n_inner - 1]) * es;
        std::memcpy(outs[0].data().data() + out * es, src, static_cast<size_t>(es));
      });
      return true;
    }
    case RegionPlan::Kind::kBinary:
      return DispatchBinary(plan.op, types[0], [&](auto tc, auto oc) {
        constexpr PrimitiveType P = decltype(tc)::value;
        constexpr Opcode op = decltype(oc)::value;
        using T = Traits<P>;
        using C = typename T::Compute;
        const uint8_t* x = ops[0]->data().data();
        uint8_t* o = outs[0].data().data();
        const C init = T::Load(ops[1]->data().data(), 0);
        bool swap = plan.swap;
        walk.ForEach([&](int64_t out, const int64_t* outer, int64_t n_outer, const int64_t* inner, int64_t n_inner) {
          C acc = init;
          for (int64_t i = 0; i < n_outer; ++i)
            for (int64_t j = 0; j < n_inner; ++j) acc = Apply<P, op>(swap, acc, T::Load(x, outer[i] + inner[j]));
          T::Store(o, out, acc);
        });
      });
    case RegionPlan::Kind::kSelection: {
      std::vector<int64_t> es(n);
      for (size_t k = 0; k < n; ++k) es[k] = ByteWidth(types[k]);
      WithStepper(plan.selection, [&](auto& step) {
        uint8_t* acc[Selection::kMaxSlots];
        const uint8_t* x[Selection::kMaxSlots];
        walk.ForEach([&](int64_t out, const int64_t* outer, int64_t n_outer, const int64_t* inner, int64_t n_inner) {
          for (size_t k = 0; k < n; ++k) {
            acc[k] = outs[k].data().data() + out * es[k];
            std::memcpy(acc[k], ops[n + k]->data().data(), static_cast<size_t>(es[k]));
          }
          for (int64_t i = 0; i < n_outer; ++i)
            for (int64_t j = 0; j < n_inner; ++j) {
              int64_t lin = outer[i] + inner[j];
              for (size_t k = 0; k < n; ++k) x[k] = ops[k]->data().data() + lin * es[k];
              step.Step(acc, x);
            }
        });
      });
      return true;
    }
  }
  return false;
}

bool CompiledSelectAndScatter(const Instruction& ins, const Literal& operand, const Literal& source,
                              const WindowGeom& g, Literal& out) {
  PrimitiveType t = operand.shape().element_type(), st = source.shape().element_type();
  RegionPlan sel = PlanSelect(ins.called_computations[0], t);
  RegionPlan scat = PlanReducer(ins.called_computations[1], {st});
  if (sel.kind != RegionPlan::Kind::kSelection) return false;
  if (scat.kind != RegionPlan::Kind::kBinary && scat.kind != RegionPlan::Kind::kTakeFirst &&
      scat.kind != RegionPlan::Kind::kTakeSecond)
    return false;
  int64_t es = ByteWidth(t);
  const uint8_t* x = operand.data().data();
  // The selected operand position of every window (-1: none), in the generic path's order.
  std::vector<int64_t> chosen(static_cast<size_t>(source.element_count()), -1);
  WindowWalk walk(g);
  WithStepper(sel.selection, [&](auto& step) {
    walk.ForEach([&](int64_t s, const int64_t* outer, int64_t n_outer, const int64_t* inner, int64_t n_inner) {
      int64_t best = -1;
      for (int64_t i = 0; i < n_outer; ++i)
        for (int64_t j = 0; j < n_inner; ++j) {
          int64_t lin = outer[i] + inner[j];
          if (best < 0 || !step.Pick(x + best * es, x + lin * es)) best = lin;
        }
      chosen[static_cast<size_t>(s)] = best;
    });
  });
  if (scat.kind == RegionPlan::Kind::kTakeFirst) return true;
  int64_t ses = ByteWidth(st);
  if (scat.kind == RegionPlan::Kind::kTakeSecond) {
    for (size_t s = 0; s < chosen.size(); ++s)
      if (chosen[s] >= 0)
        std::memcpy(out.data().data() + chosen[s] * ses, source.data().data() + static_cast<int64_t>(s) * ses,
                    static_cast<size_t>(ses));
    return true;
  }
  return DispatchBinary(scat.op, st, [&](auto tc, auto oc) {
    constexpr PrimitiveType P = decltype(tc)::value;
    constexpr Opcode op = decltype(oc)::value;
    using T = Traits<P>;
    uint8_t* o = out.data().data();
    const uint8_t* src = source.data().data();
    for (size_t s = 0; s < chosen.size(); ++s) {
      int64_t b = chosen[s];
      if (b >= 0) T::Store(o, b, Apply<P, op>(scat.swap, T::Load(o, b), T::Load(src, static_cast<int64_t>(s))));
    }
  });
}

}  // namespace opprobe::hlo::eval
