#include "analyzer/lowering/type_promotion.h"

#include <algorithm>
#include <limits>

namespace opprobe::analyzer::lowering {

namespace {
int Category(PrimitiveType t) {
  if (t == PrimitiveType::PRED) return 0;
  if (hlo::IsInteger(t)) return 1;
  if (hlo::IsFloatingPoint(t)) return 2;
  if (hlo::IsComplex(t)) return 3;
  return -1;
}
PrimitiveType SignedOfWidth(int bits) {
  switch (bits) {
    case 8: return PrimitiveType::S8;
    case 16: return PrimitiveType::S16;
    case 32: return PrimitiveType::S32;
    default: return PrimitiveType::S64;
  }
}
PrimitiveType ToComplex(PrimitiveType t) { return t == PrimitiveType::F64 ? PrimitiveType::C128 : PrimitiveType::C64; }
}  // namespace

bool IsFloatish(PrimitiveType t) { return hlo::IsFloatingPoint(t) || hlo::IsComplex(t); }
PrimitiveType DefaultFloat() { return PrimitiveType::F32; }
PrimitiveType FloatType(PrimitiveType t) { return IsFloatish(t) ? t : PrimitiveType::F32; }

PrimitiveType Promote(PrimitiveType a, PrimitiveType b) {
  if (a == PrimitiveType::PRIMITIVE_TYPE_INVALID) return b;
  if (b == PrimitiveType::PRIMITIVE_TYPE_INVALID || a == b) return a;
  int ca = Category(a), cb = Category(b);
  if (ca != cb) {
    PrimitiveType hi = ca > cb ? a : b, lo = ca > cb ? b : a;
    if (hlo::IsComplex(hi) && lo == PrimitiveType::F64) return PrimitiveType::C128;
    return hi;
  }
  switch (ca) {
    case 1: {
      bool ua = hlo::IsUnsignedInteger(a), ub = hlo::IsUnsignedInteger(b);
      int wa = hlo::BitWidth(a), wb = hlo::BitWidth(b);
      if (ua == ub) return wa >= wb ? a : b;
      int wu = ua ? wa : wb, ws = ua ? wb : wa;
      return ws > wu ? SignedOfWidth(ws) : SignedOfWidth(std::min(64, 2 * wu));
    }
    case 2:
      if ((a == PrimitiveType::F16 && b == PrimitiveType::BF16) ||
          (a == PrimitiveType::BF16 && b == PrimitiveType::F16))
        return PrimitiveType::F32;
      return hlo::BitWidth(a) >= hlo::BitWidth(b) ? a : b;
    case 3: return hlo::BitWidth(a) >= hlo::BitWidth(b) ? a : b;
    default: return a;
  }
}

namespace {
PrimitiveType CombineCategories(PrimitiveType higher, PrimitiveType lower) {
  using P = PrimitiveType;
  if (higher == P::PRIMITIVE_TYPE_INVALID) return lower;
  if (lower == P::PRIMITIVE_TYPE_INVALID) return higher;
  if (hlo::IsComplex(higher)) return higher;
  if (hlo::IsComplex(lower)) return hlo::IsFloatingPoint(higher) ? ToComplex(higher) : lower;
  if (hlo::IsFloatingPoint(higher)) return higher;
  if (higher == P::PRED || hlo::IsFloatingPoint(lower)) return Promote(higher, lower);
  return higher;
}
}  // namespace

PrimitiveType ResultType(const std::vector<const Value*>& values) {
  using P = PrimitiveType;
  P dim = P::PRIMITIVE_TYPE_INVALID, zero = P::PRIMITIVE_TYPE_INVALID, wrapped = P::PRIMITIVE_TYPE_INVALID;
  for (const Value* v : values) {
    if (!v) continue;
    switch (v->kind) {
      case Value::Kind::kTensor:
        if (v->tensor.rank() > 0) dim = Promote(dim, v->tensor.dtype);
        else zero = Promote(zero, v->tensor.dtype);
        break;
      case Value::Kind::kBool: wrapped = Promote(wrapped, P::PRED); break;
      case Value::Kind::kInt: wrapped = Promote(wrapped, P::S64); break;
      case Value::Kind::kFloat: wrapped = Promote(wrapped, P::F32); break;
      case Value::Kind::kComplex: wrapped = Promote(wrapped, P::C64); break;
      default: break;
    }
  }
  P r = CombineCategories(dim, CombineCategories(zero, wrapped));
  return r == P::PRIMITIVE_TYPE_INVALID ? P::F32 : r;
}

double MachineEpsilon(PrimitiveType t) {
  t = hlo::ComplexComponentType(t);
  if (t == PrimitiveType::F64) return std::numeric_limits<double>::epsilon();
  if (t == PrimitiveType::BF16) return 0.0078125;    // 2^-7
  if (t == PrimitiveType::F16) return 0.0009765625;  // 2^-10
  return std::numeric_limits<float>::epsilon();
}

}  // namespace opprobe::analyzer::lowering
