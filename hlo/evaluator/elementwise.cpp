// Elementwise ops: unary math, binary arithmetic with XLA's integer semantics, compare (incl.
// TOTALORDER), select, clamp, complex/real/imag, convert, bitcast-convert, reduce-precision.
#include <bit>
#include <cmath>

#include "hlo/evaluator/internal.h"
#include "hlo/evaluator/scalar_ops.h"

namespace opprobe::hlo::eval {
namespace {

template <PrimitiveType P, Opcode op>
void BinaryLoop(const uint8_t* a, const uint8_t* b, uint8_t* o, int64_t n) {
  using T = Traits<P>;
  for (int64_t i = 0; i < n; ++i) T::Store(o, i, BinaryApply<op>(T::Load(a, i), T::Load(b, i)));
}

template <PrimitiveType P, Opcode op>
constexpr BinaryKernel MakeBinary() {
  if constexpr (BinaryValid<op, typename Traits<P>::Compute>()) return &BinaryLoop<P, op>;
  else return nullptr;
}

template <Opcode op>
BinaryKernel BinaryFor(PrimitiveType t) {
  switch (t) {
    // A list of cases made by a macro, as many to a line as fit.
    // clang-format off
#define OPPROBE_CASE(PT) \
  case PrimitiveType::PT: return MakeBinary<PrimitiveType::PT, op>();
    OPPROBE_CASE(PRED) OPPROBE_CASE(S8) OPPROBE_CASE(S16) OPPROBE_CASE(S32) OPPROBE_CASE(S64)
    OPPROBE_CASE(U8) OPPROBE_CASE(U16) OPPROBE_CASE(U32) OPPROBE_CASE(U64) OPPROBE_CASE(F16)
    OPPROBE_CASE(BF16) OPPROBE_CASE(F32) OPPROBE_CASE(F64) OPPROBE_CASE(C64) OPPROBE_CASE(C128)
#undef OPPROBE_CASE
    default: return nullptr;
    // clang-format on
  }
}

template <PrimitiveType P, ComparisonDirection d, bool total>
void CompareLoop(const uint8_t* a, const uint8_t* b, uint8_t* o, int64_t n) {
  using T = Traits<P>;
  for (int64_t i = 0; i < n; ++i) o[i] = CompareValues<P, d, total>(T::Load(a, i), T::Load(b, i));
}

template <PrimitiveType P, bool total>
CompareKernel CompareForType(ComparisonDirection d) {
  if constexpr (kIsComplex<typename Traits<P>::Compute>) {
    if (d != ComparisonDirection::kEq && d != ComparisonDirection::kNe) return nullptr;
  }
  switch (d) {
    case ComparisonDirection::kEq: return &CompareLoop<P, ComparisonDirection::kEq, total>;
    case ComparisonDirection::kNe: return &CompareLoop<P, ComparisonDirection::kNe, total>;
    case ComparisonDirection::kGe: return &CompareLoop<P, ComparisonDirection::kGe, total>;
    case ComparisonDirection::kGt: return &CompareLoop<P, ComparisonDirection::kGt, total>;
    case ComparisonDirection::kLe: return &CompareLoop<P, ComparisonDirection::kLe, total>;
    case ComparisonDirection::kLt: return &CompareLoop<P, ComparisonDirection::kLt, total>;
  }
  return nullptr;
}

// ---------- unary ----------

template <class C>
C SignOf(C v) {
  if constexpr (kIsFloat<C>) {
    if (std::isnan(v) || v == C(0)) return v;
    return v > 0 ? C(1) : C(-1);
  } else if constexpr (kIsComplex<C>) {
    auto m = std::abs(v);
    return m == 0 ? C(0) : v / m;
  } else if constexpr (std::is_signed_v<C>) {
    return static_cast<C>(v > 0 ? 1 : (v < 0 ? -1 : 0));
  } else {
    return static_cast<C>(v > 0 ? 1 : 0);
  }
}

template <PrimitiveType P>
Status UnaryTyped(Opcode op, const Literal& x, Literal& out) {
  using T = Traits<P>;
  using C = typename T::Compute;
  const uint8_t* in = x.data().data();
  uint8_t* o = out.data().data();
  int64_t n = x.element_count();
  auto loop = [&](auto fn) {
    for (int64_t i = 0; i < n; ++i) T::Store(o, i, static_cast<C>(fn(T::Load(in, i))));
    return Status::Ok();
  };
  if (op == Opcode::kCopy) return loop([](C v) { return v; });
  if constexpr (kIsFloat<C>) {
    switch (op) {
      case Opcode::kAbs: return loop([](C v) { return std::abs(v); });
      case Opcode::kNegate: return loop([](C v) { return -v; });
      case Opcode::kSign: return loop([](C v) { return SignOf(v); });
      case Opcode::kFloor: return loop([](C v) { return std::floor(v); });
      case Opcode::kCeil: return loop([](C v) { return std::ceil(v); });
      case Opcode::kRoundNearestAfz: return loop([](C v) { return std::round(v); });
      case Opcode::kRoundNearestEven: return loop([](C v) { return std::nearbyint(v); });
      case Opcode::kExp: return loop([](C v) { return std::exp(v); });
      case Opcode::kExpm1: return loop([](C v) { return std::expm1(v); });
      case Opcode::kLog: return loop([](C v) { return std::log(v); });
      case Opcode::kLog1p: return loop([](C v) { return std::log1p(v); });
      case Opcode::kSqrt: return loop([](C v) { return std::sqrt(v); });
      case Opcode::kRsqrt: return loop([](C v) { return C(1) / std::sqrt(v); });
      case Opcode::kCbrt: return loop([](C v) { return std::cbrt(v); });
      case Opcode::kSin: return loop([](C v) { return std::sin(v); });
      case Opcode::kCos: return loop([](C v) { return std::cos(v); });
      case Opcode::kTan: return loop([](C v) { return std::tan(v); });
      case Opcode::kTanh: return loop([](C v) { return std::tanh(v); });
      case Opcode::kLogistic: return loop([](C v) { return C(1) / (C(1) + std::exp(-v)); });
      case Opcode::kErf: return loop([](C v) { return std::erf(v); });
      case Opcode::kReal: return loop([](C v) { return v; });
      case Opcode::kImag: return loop([](C) { return C(0); });
      default: break;
    }
  } else if constexpr (kIsComplex<C>) {
    switch (op) {
      case Opcode::kNegate: return loop([](C v) { return -v; });
      case Opcode::kSign: return loop([](C v) { return SignOf(v); });
      case Opcode::kExp: return loop([](C v) { return std::exp(v); });
      case Opcode::kExpm1: return loop([](C v) { return std::exp(v) - C(1); });
      case Opcode::kLog: return loop([](C v) { return std::log(v); });
      case Opcode::kLog1p: return loop([](C v) { return std::log(v + C(1)); });
      case Opcode::kSqrt: return loop([](C v) { return std::sqrt(v); });
      case Opcode::kRsqrt: return loop([](C v) { return C(1) / std::sqrt(v); });
      case Opcode::kSin: return loop([](C v) { return std::sin(v); });
      case Opcode::kCos: return loop([](C v) { return std::cos(v); });
      case Opcode::kTan: return loop([](C v) { return std::tan(v); });
      case Opcode::kTanh: return loop([](C v) { return std::tanh(v); });
      case Opcode::kLogistic: return loop([](C v) { return C(1) / (C(1) + std::exp(-v)); });
      default: break;
    }
  } else if constexpr (std::is_same_v<C, bool>) {
    switch (op) {
      case Opcode::kNot: return loop([](C v) { return !v; });
      case Opcode::kAbs:
      case Opcode::kSign: return loop([](C v) { return v; });
      default: break;
    }
  } else {  // integers
    using U = std::make_unsigned_t<C>;
    switch (op) {
      case Opcode::kAbs:
        return loop([](C v) {
          if constexpr (std::is_signed_v<C>) return v < 0 ? static_cast<C>(U(0) - static_cast<U>(v)) : v;
          else return v;
        });
      case Opcode::kNegate: return loop([](C v) { return static_cast<C>(U(0) - static_cast<U>(v)); });
      case Opcode::kSign: return loop([](C v) { return SignOf(v); });
      case Opcode::kNot: return loop([](C v) { return static_cast<C>(~static_cast<U>(v)); });
      case Opcode::kPopulationCount: return loop([](C v) { return static_cast<C>(std::popcount(static_cast<U>(v))); });
      case Opcode::kClz: return loop([](C v) { return static_cast<C>(std::countl_zero(static_cast<U>(v))); });
      default: break;
    }
  }
  return Unimplemented(fmt::format("{} is not defined for {}", OpcodeName(op), PrimitiveTypeName(P)));
}

// Ops whose result type differs from the operand's: abs/real/imag of complex, is-finite.
template <PrimitiveType P>
Status ToRealTyped(Opcode op, const Literal& x, Literal& out) {
  using T = Traits<P>;
  using C = typename T::Compute;
  const uint8_t* in = x.data().data();
  uint8_t* o = out.data().data();
  int64_t n = x.element_count();
  if constexpr (kIsComplex<C>) {
    using R = typename C::value_type;
    constexpr PrimitiveType RP = std::is_same_v<R, float> ? PrimitiveType::F32 : PrimitiveType::F64;
    for (int64_t i = 0; i < n; ++i) {
      C v = T::Load(in, i);
      R r = op == Opcode::kAbs ? std::abs(v) : op == Opcode::kReal ? v.real() : v.imag();
      Traits<RP>::Store(o, i, r);
    }
    return Status::Ok();
  } else if constexpr (kIsFloat<C>) {
    for (int64_t i = 0; i < n; ++i) o[i] = std::isfinite(T::Load(in, i)) ? 1 : 0;
    return Status::Ok();
  } else {
    return Unimplemented(fmt::format("{} is not defined for {}", OpcodeName(op), PrimitiveTypeName(P)));
  }
}

// ---------- reduce-precision ----------

template <class Fp, class Uint>
Fp ReducePrecisionValue(Fp input, int exponent_bits, int mantissa_bits) {
  constexpr int kSrcMantissa = std::numeric_limits<Fp>::digits - 1;
  constexpr int kSrcExponent = static_cast<int>(sizeof(Fp)) * 8 - 1 - kSrcMantissa;
  Uint value = std::bit_cast<Uint>(input);
  if (mantissa_bits < kSrcMantissa && mantissa_bits >= 0) {
    Uint last_bit_mask = Uint{1} << (kSrcMantissa - mantissa_bits);
    Uint base_bias = (last_bit_mask >> 1) - 1;
    Uint x_last_bit = (value & last_bit_mask) >> (kSrcMantissa - mantissa_bits);
    Uint bias = x_last_bit + base_bias;
    Uint truncation_mask = ~(last_bit_mask - 1);
    value = (value + bias) & truncation_mask;
  }
  if (exponent_bits < kSrcExponent && exponent_bits > 0) {
    Uint sign_mask = Uint{1} << (sizeof(Fp) * 8 - 1);
    Uint exp_mask = ((Uint{1} << kSrcExponent) - 1) << kSrcMantissa;
    Uint exponent_bias = (Uint{1} << (kSrcExponent - 1)) - 1;
    Uint reduced_bias = (Uint{1} << (exponent_bits - 1)) - 1;
    Uint reduced_max = exponent_bias + reduced_bias;
    Uint reduced_min = exponent_bias - reduced_bias;
    Uint x_exp = value & exp_mask;
    bool overflows = x_exp > (reduced_max << kSrcMantissa);
    bool underflows = x_exp <= (reduced_min << kSrcMantissa);
    if (overflows) value = (value & sign_mask) | exp_mask;
    else if (underflows) value = value & sign_mask;
  }
  Fp reduced = std::bit_cast<Fp>(value);
  if (std::isnan(input)) {
    reduced = mantissa_bits > 0 ? input
                                : std::bit_cast<Fp>((std::bit_cast<Uint>(input) & (Uint{1} << (sizeof(Fp) * 8 - 1))) |
                                                    (((Uint{1} << kSrcExponent) - 1) << kSrcMantissa));
  }
  return reduced;
}

}  // namespace

BinaryKernel GetBinaryKernel(Opcode op, PrimitiveType t) {
  switch (op) {
    // A list of cases made by a macro, as many to a line as fit.
    // clang-format off
#define OPPROBE_OP(OP) \
  case Opcode::OP: return BinaryFor<Opcode::OP>(t);
    OPPROBE_OP(kAdd) OPPROBE_OP(kSubtract) OPPROBE_OP(kMultiply) OPPROBE_OP(kDivide) OPPROBE_OP(kRemainder)
    OPPROBE_OP(kMaximum) OPPROBE_OP(kMinimum) OPPROBE_OP(kPower) OPPROBE_OP(kAtan2) OPPROBE_OP(kAnd)
    OPPROBE_OP(kOr) OPPROBE_OP(kXor) OPPROBE_OP(kShiftLeft) OPPROBE_OP(kShiftRightArithmetic)
    OPPROBE_OP(kShiftRightLogical)
#undef OPPROBE_OP
    default: return nullptr;
    // clang-format on
  }
}

CompareKernel GetCompareKernel(ComparisonDirection d, bool total, PrimitiveType t) {
  CompareKernel k = nullptr;
  Status st = DispatchType(t, [&](auto tc) {
    constexpr PrimitiveType P = decltype(tc)::value;
    k = total ? CompareForType<P, true>(d) : CompareForType<P, false>(d);
    return Status::Ok();
  });
  return st.ok() ? k : nullptr;
}

namespace {

bool IsUnaryOp(Opcode op) {
  switch (op) {
    case Opcode::kAbs:
    case Opcode::kNegate:
    case Opcode::kSign:
    case Opcode::kFloor:
    case Opcode::kCeil:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kSqrt:
    case Opcode::kRsqrt:
    case Opcode::kCbrt:
    case Opcode::kSin:
    case Opcode::kCos:
    case Opcode::kTan:
    case Opcode::kTanh:
    case Opcode::kLogistic:
    case Opcode::kErf:
    case Opcode::kNot:
    case Opcode::kPopulationCount:
    case Opcode::kClz:
    case Opcode::kCopy:
    case Opcode::kReal:
    case Opcode::kImag:
    case Opcode::kIsFinite: return true;
    default: return false;
  }
}

Status CheckSameDims(const Instruction& ins, const Literal& a, const Literal& b, const char* what) {
  if (!a.shape().IsArray() || !b.shape().IsArray() || a.shape().dimensions() != b.shape().dimensions())
    return InvalidInput(
        fmt::format("{}: {} {} and {} differ", ins.name, what, a.shape().ToString(false), b.shape().ToString(false)));
  return Status::Ok();
}

}  // namespace

Expected<Literal> EvalElementwise(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops) {
  Opcode op = ins.opcode;
  for (const Literal* l : ops)
    if (!l->shape().IsArray()) return InvalidInput(fmt::format("{}: operand is not an array", ins.name));
  const Literal& x = *ops[0];
  PrimitiveType t = x.shape().element_type();
  const auto& dims = x.shape().dimensions();

  if (IsUnaryOp(op)) {
    if (ops.size() != 1) return InvalidInput(fmt::format("{}: expects 1 operand", ins.name));
    PrimitiveType rt = t;
    if ((op == Opcode::kAbs && IsComplex(t)) || op == Opcode::kReal || op == Opcode::kImag)
      rt = ComplexComponentType(t);
    if (op == Opcode::kIsFinite) rt = PrimitiveType::PRED;
    OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, dims, rt));
    OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
    bool to_real =
        (IsComplex(t) && (op == Opcode::kAbs || op == Opcode::kReal || op == Opcode::kImag)) || op == Opcode::kIsFinite;
    if (to_real) {
      OPPROBE_RETURN_IF_ERROR(DispatchType(t, [&](auto tc) { return ToRealTyped<decltype(tc)::value>(op, x, out); }));
    } else {
      OPPROBE_RETURN_IF_ERROR(DispatchType(t, [&](auto tc) { return UnaryTyped<decltype(tc)::value>(op, x, out); }));
    }
    return out;
  }

  switch (op) {
    case Opcode::kCompare: {
      if (ops.size() != 2) return InvalidInput(fmt::format("{}: expects 2 operands", ins.name));
      OPPROBE_RETURN_IF_ERROR(CheckSameDims(ins, x, *ops[1], "operands"));
      if (ops[1]->shape().element_type() != t) return InvalidInput(fmt::format("{}: operand types differ", ins.name));
      OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, dims, PrimitiveType::PRED));
      CompareKernel k = GetCompareKernel(ins.comparison_direction, ins.rare().comparison_type == "TOTALORDER", t);
      if (!k)
        return Unimplemented(fmt::format("compare direction {} is not defined for {}",
                                         ComparisonDirectionName(ins.comparison_direction), PrimitiveTypeName(t)));
      OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
      k(x.data().data(), ops[1]->data().data(), out.data().data(), x.element_count());
      return out;
    }
    case Opcode::kSelect: {
      if (ops.size() != 3) return InvalidInput(fmt::format("{}: expects 3 operands", ins.name));
      const Literal &p = *ops[0], &a = *ops[1], &b = *ops[2];
      OPPROBE_RETURN_IF_ERROR(CheckSameDims(ins, a, b, "operands"));
      if (a.shape().element_type() != b.shape().element_type() || p.shape().element_type() != PrimitiveType::PRED)
        return InvalidInput(fmt::format("{}: operand types do not fit", ins.name));
      if (p.shape().rank() != 0) OPPROBE_RETURN_IF_ERROR(CheckSameDims(ins, p, a, "predicate and operand"));
      OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, a.shape().dimensions(), a.shape().element_type()));
      OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
      int64_t n = a.element_count(), es = ByteWidth(a.shape().element_type());
      bool scalar = p.shape().rank() == 0;
      for (int64_t i = 0; i < n; ++i) {
        bool c = p.data()[static_cast<size_t>(scalar ? 0 : i)] != 0;
        std::memcpy(out.data().data() + i * es, (c ? a : b).data().data() + i * es, static_cast<size_t>(es));
      }
      return out;
    }
    case Opcode::kClamp: {
      if (ops.size() != 3) return InvalidInput(fmt::format("{}: expects 3 operands", ins.name));
      const Literal &lo = *ops[0], &v = *ops[1], &hi = *ops[2];
      PrimitiveType vt = v.shape().element_type();
      for (const Literal* b : {&lo, &hi}) {
        if (b->shape().element_type() != vt) return InvalidInput(fmt::format("{}: operand types differ", ins.name));
        if (b->shape().rank() != 0) OPPROBE_RETURN_IF_ERROR(CheckSameDims(ins, *b, v, "bound and operand"));
      }
      OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, v.shape().dimensions(), vt));
      BinaryKernel mx = GetBinaryKernel(Opcode::kMaximum, vt), mn = GetBinaryKernel(Opcode::kMinimum, vt);
      if (!mx || !mn) return Unimplemented(fmt::format("clamp is not defined for {}", PrimitiveTypeName(vt)));
      OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
      int64_t n = v.element_count(), es = ByteWidth(vt);
      bool slo = lo.shape().rank() == 0, shi = hi.shape().rank() == 0;
      uint8_t* o = out.data().data();
      for (int64_t i = 0; i < n; ++i) {
        mx(v.data().data() + i * es, lo.data().data() + (slo ? 0 : i * es), o + i * es, 1);
        mn(o + i * es, hi.data().data() + (shi ? 0 : i * es), o + i * es, 1);
      }
      return out;
    }
    case Opcode::kComplex: {
      if (ops.size() != 2) return InvalidInput(fmt::format("{}: expects 2 operands", ins.name));
      OPPROBE_RETURN_IF_ERROR(CheckSameDims(ins, x, *ops[1], "operands"));
      if (ops[1]->shape().element_type() != t || (t != PrimitiveType::F32 && t != PrimitiveType::F64))
        return InvalidInput(fmt::format("{}: complex needs two f32 or two f64 operands", ins.name));
      PrimitiveType ct = t == PrimitiveType::F32 ? PrimitiveType::C64 : PrimitiveType::C128;
      OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, dims, ct));
      OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
      int64_t n = x.element_count();
      for (int64_t i = 0; i < n; ++i) {
        if (t == PrimitiveType::F32) out.Set<std::complex<float>>(i, {x.Get<float>(i), ops[1]->Get<float>(i)});
        else out.Set<std::complex<double>>(i, {x.Get<double>(i), ops[1]->Get<double>(i)});
      }
      return out;
    }
    default: break;
  }

  // Binary arithmetic / logic.
  if (ops.size() != 2) return InvalidInput(fmt::format("{}: expects 2 operands", ins.name));
  OPPROBE_RETURN_IF_ERROR(CheckSameDims(ins, x, *ops[1], "operands"));
  if (ops[1]->shape().element_type() != t)
    return InvalidInput(fmt::format("{}: operand types {} and {} differ", ins.name, PrimitiveTypeName(t),
                                    PrimitiveTypeName(ops[1]->shape().element_type())));
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, dims, t));
  BinaryKernel k = GetBinaryKernel(op, t);
  if (!k) return Unimplemented(fmt::format("{} is not defined for {}", OpcodeName(op), PrimitiveTypeName(t)));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  k(x.data().data(), ops[1]->data().data(), out.data().data(), x.element_count());
  return out;
}

Expected<Literal> EvalConvert(Evaluator& ev, const Instruction& ins, const Literal& x) {
  if (!x.shape().IsArray()) return InvalidInput(fmt::format("{}: operand is not an array", ins.name));
  if (!ins.shape.IsArray()) return InvalidInput(fmt::format("{}: result is not an array", ins.name));
  PrimitiveType from = x.shape().element_type(), to = ins.shape.element_type();
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, x.shape().dimensions(), to));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  int64_t n = x.element_count();
  OPPROBE_RETURN_IF_ERROR(DispatchType(from, [&](auto fc) {
    return DispatchType(to, [&](auto tc) {
      using F = Traits<decltype(fc)::value>;
      using T = Traits<decltype(tc)::value>;
      const uint8_t* in = x.data().data();
      uint8_t* o = out.data().data();
      for (int64_t i = 0; i < n; ++i) T::Store(o, i, ConvertValue<typename T::Compute>(F::Load(in, i)));
      return Status::Ok();
    });
  }));
  return out;
}

Expected<Literal> EvalBitcastConvert(Evaluator& ev, const Instruction& ins, const Literal& x) {
  if (!x.shape().IsArray() || !ins.shape.IsArray())
    return InvalidInput(fmt::format("{}: bitcast-convert needs arrays", ins.name));
  int64_t in_bytes = x.element_count() * ByteWidth(x.shape().element_type());
  auto out_n = ins.shape.ElementCount();
  if (!out_n.ok()) return out_n.status();
  int64_t out_bytes = *out_n * ByteWidth(ins.shape.element_type());
  if (in_bytes != out_bytes || BitWidth(ins.shape.element_type()) % 8 != 0)
    return InvalidInput(
        fmt::format("{}: {} cannot be bitcast to {}", ins.name, x.shape().ToString(false), ins.shape.ToString(false)));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  if (in_bytes) std::memcpy(out.data().data(), x.data().data(), static_cast<size_t>(in_bytes));
  return out;
}

Expected<Literal> EvalReducePrecision(Evaluator& ev, const Instruction& ins, const Literal& x) {
  if (!x.shape().IsArray()) return InvalidInput(fmt::format("{}: operand is not an array", ins.name));
  PrimitiveType t = x.shape().element_type();
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, x.shape().dimensions(), t));
  if (!IsFloatingPoint(t) || ins.exponent_bits < 1 || ins.mantissa_bits < 0)
    return InvalidInput(fmt::format("{}: reduce-precision needs a float operand and exponent_bits >= 1", ins.name));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  int64_t n = x.element_count();
  for (int64_t i = 0; i < n; ++i) {
    if (t == PrimitiveType::F64) {
      out.Set<double>(i,
                      ReducePrecisionValue<double, uint64_t>(x.Get<double>(i), ins.exponent_bits, ins.mantissa_bits));
    } else {
      float v = static_cast<float>(x.GetAsDouble(i));
      out.SetFromDouble(i, ReducePrecisionValue<float, uint32_t>(v, ins.exponent_bits, ins.mantissa_bits));
    }
  }
  return out;
}

}  // namespace opprobe::hlo::eval
