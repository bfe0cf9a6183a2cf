// Scalar semantics shared by the elementwise kernels and the compiled region loops: XLA's binary
// arithmetic (integer wrap-around, division by zero, shifts, NaN-propagating max/min) and compare
// (incl. TOTALORDER), on the Compute type of an element type. Not a public header.
#pragma once

#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>

#include "hlo/evaluator/internal.h"

namespace opprobe::hlo::eval {

template <class C>
constexpr bool kIsFloat = std::is_floating_point_v<C>;

// ---------- binary ----------

template <class T>
T IPow(T base, T exp) {
  using U = std::make_unsigned_t<T>;
  U b = static_cast<U>(base), r = 1;
  U e = static_cast<U>(exp);
  while (e) {
    if (e & 1) r = static_cast<U>(r * b);
    b = static_cast<U>(b * b);
    e >>= 1;
  }
  return static_cast<T>(r);
}

template <Opcode op, class C>
constexpr bool BinaryValid() {
  constexpr bool fp = kIsFloat<C>, cx = kIsComplex<C>, in = kIsInt<C>, pr = std::is_same_v<C, bool>;
  switch (op) {
    case Opcode::kAdd:
    case Opcode::kSubtract:
    case Opcode::kMultiply: return true;
    case Opcode::kDivide:
    case Opcode::kPower: return fp || cx || in || (pr && op == Opcode::kPower);
    case Opcode::kRemainder: return fp || in;
    case Opcode::kMaximum:
    case Opcode::kMinimum: return fp || in || pr;
    case Opcode::kAtan2: return fp;
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor: return in || pr;
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical: return in;
    default: return false;
  }
}

template <Opcode op, class C>
C BinaryApply(C a, C b) {
  if constexpr (std::is_same_v<C, bool>) {
    if constexpr (op == Opcode::kAdd || op == Opcode::kOr || op == Opcode::kMaximum) return a || b;
    else if constexpr (op == Opcode::kMultiply || op == Opcode::kAnd || op == Opcode::kMinimum) return a && b;
    else if constexpr (op == Opcode::kSubtract || op == Opcode::kXor) return a != b;
    else if constexpr (op == Opcode::kPower) return a || !b;
    else return a;
  } else if constexpr (kIsInt<C>) {
    using U = std::make_unsigned_t<C>;
    constexpr int kBits = sizeof(C) * 8;
    if constexpr (op == Opcode::kAdd) return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
    else if constexpr (op == Opcode::kSubtract) return static_cast<C>(static_cast<U>(a) - static_cast<U>(b));
    else if constexpr (op == Opcode::kMultiply)
      return static_cast<C>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    else if constexpr (op == Opcode::kDivide) {
      if (b == 0) return static_cast<C>(-1);
      if constexpr (std::is_signed_v<C>)
        if (a == std::numeric_limits<C>::min() && b == -1) return a;
      return static_cast<C>(a / b);
    } else if constexpr (op == Opcode::kRemainder) {
      if (b == 0) return a;
      if constexpr (std::is_signed_v<C>)
        if (a == std::numeric_limits<C>::min() && b == -1) return 0;
      return static_cast<C>(a % b);
    } else if constexpr (op == Opcode::kMaximum) return a > b ? a : b;
    else if constexpr (op == Opcode::kMinimum) return a < b ? a : b;
    else if constexpr (op == Opcode::kPower) {
      if (a == 1 || b == 0) return 1;
      if constexpr (std::is_signed_v<C>)
        if (b < 0) return 0;
      return IPow<C>(a, b);
    } else if constexpr (op == Opcode::kAnd) return static_cast<C>(a & b);
    else if constexpr (op == Opcode::kOr) return static_cast<C>(a | b);
    else if constexpr (op == Opcode::kXor) return static_cast<C>(a ^ b);
    else if constexpr (op == Opcode::kShiftLeft) {
      if (static_cast<U>(b) >= static_cast<U>(kBits)) return 0;
      return static_cast<C>(static_cast<U>(a) << static_cast<U>(b));
    } else if constexpr (op == Opcode::kShiftRightLogical) {
      if (static_cast<U>(b) >= static_cast<U>(kBits)) return 0;
      return static_cast<C>(static_cast<U>(a) >> static_cast<U>(b));
    } else if constexpr (op == Opcode::kShiftRightArithmetic) {
      using S = std::make_signed_t<C>;
      S sa = static_cast<S>(a);
      if (static_cast<U>(b) >= static_cast<U>(kBits)) return static_cast<C>(sa < 0 ? -1 : 0);
      return static_cast<C>(sa >> static_cast<U>(b));
    } else {
      return a;
    }
  } else if constexpr (kIsFloat<C>) {
    if constexpr (op == Opcode::kAdd) return a + b;
    else if constexpr (op == Opcode::kSubtract) return a - b;
    else if constexpr (op == Opcode::kMultiply) return a * b;
    else if constexpr (op == Opcode::kDivide) return a / b;
    else if constexpr (op == Opcode::kRemainder) return std::fmod(a, b);
    else if constexpr (op == Opcode::kMaximum) {
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
      return a > b ? a : b;
    } else if constexpr (op == Opcode::kMinimum) {
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
      return a < b ? a : b;
    } else if constexpr (op == Opcode::kPower) {
      if (a == C(1) || b == C(0)) return C(1);
      return std::pow(a, b);
    } else if constexpr (op == Opcode::kAtan2) return std::atan2(a, b);
    else return a;
  } else {  // complex
    if constexpr (op == Opcode::kAdd) return a + b;
    else if constexpr (op == Opcode::kSubtract) return a - b;
    else if constexpr (op == Opcode::kMultiply) return a * b;
    else if constexpr (op == Opcode::kDivide) return a / b;
    else if constexpr (op == Opcode::kPower) {
      if (a == C(1) || b == C(0)) return C(1);
      if (a == C(0) && b.imag() == 0 && b.real() > 0) return C(0);
      return std::pow(a, b);
    } else return a;
  }
}

// ---------- compare ----------

template <class C>
auto TotalOrderKey(C v) {
  if constexpr (std::is_same_v<C, float>) {
    int32_t s = std::bit_cast<int32_t>(v);
    return s < 0 ? s ^ std::numeric_limits<int32_t>::max() : s;
  } else if constexpr (std::is_same_v<C, double>) {
    int64_t s = std::bit_cast<int64_t>(v);
    return s < 0 ? s ^ std::numeric_limits<int64_t>::max() : s;
  } else {
    return v;
  }
}

template <class C>
bool CompareApply(ComparisonDirection d, C a, C b) {
  switch (d) {
    case ComparisonDirection::kEq: return a == b;
    case ComparisonDirection::kNe: return a != b;
    case ComparisonDirection::kGe: return a >= b;
    case ComparisonDirection::kGt: return a > b;
    case ComparisonDirection::kLe: return a <= b;
    case ComparisonDirection::kLt: return a < b;
  }
  return false;
}

// compare of two values of element type P (complex: EQ and NE only).
template <PrimitiveType P, ComparisonDirection d, bool total>
bool CompareValues(typename Traits<P>::Compute x, typename Traits<P>::Compute y) {
  if constexpr (kIsComplex<typename Traits<P>::Compute>) {
    return d == ComparisonDirection::kEq ? x == y : x != y;
  } else if constexpr (total && kIsFloat<typename Traits<P>::Compute>) {
    return CompareApply(d, TotalOrderKey(x), TotalOrderKey(y));
  } else {
    return CompareApply(d, x, y);
  }
}

}  // namespace opprobe::hlo::eval
