#include "hlo/types.h"

#include <array>
#include <utility>

namespace opprobe::hlo {
namespace {

struct TypeInfo {
  PrimitiveType type;
  std::string_view name;
  int bits;
};

constexpr std::array<TypeInfo, 33> kTypes = {{
    {PrimitiveType::PRED, "pred", 8},
    {PrimitiveType::S8, "s8", 8},
    {PrimitiveType::S16, "s16", 16},
    {PrimitiveType::S32, "s32", 32},
    {PrimitiveType::S64, "s64", 64},
    {PrimitiveType::U8, "u8", 8},
    {PrimitiveType::U16, "u16", 16},
    {PrimitiveType::U32, "u32", 32},
    {PrimitiveType::U64, "u64", 64},
    {PrimitiveType::F16, "f16", 16},
    {PrimitiveType::F32, "f32", 32},
    {PrimitiveType::F64, "f64", 64},
    {PrimitiveType::TUPLE, "tuple", 0},
    {PrimitiveType::OPAQUE_TYPE, "opaque", 0},
    {PrimitiveType::C64, "c64", 64},
    {PrimitiveType::BF16, "bf16", 16},
    {PrimitiveType::TOKEN, "token", 0},
    {PrimitiveType::C128, "c128", 128},
    {PrimitiveType::F8E5M2, "f8e5m2", 8},
    {PrimitiveType::F8E4M3FN, "f8e4m3fn", 8},
    {PrimitiveType::S4, "s4", 4},
    {PrimitiveType::U4, "u4", 4},
    {PrimitiveType::F8E4M3B11FNUZ, "f8e4m3b11fnuz", 8},
    {PrimitiveType::F8E5M2FNUZ, "f8e5m2fnuz", 8},
    {PrimitiveType::F8E4M3FNUZ, "f8e4m3fnuz", 8},
    {PrimitiveType::S2, "s2", 2},
    {PrimitiveType::U2, "u2", 2},
    {PrimitiveType::F8E4M3, "f8e4m3", 8},
    {PrimitiveType::F8E3M4, "f8e3m4", 8},
    {PrimitiveType::S1, "s1", 1},
    {PrimitiveType::U1, "u1", 1},
    {PrimitiveType::F4E2M1FN, "f4e2m1fn", 4},
    {PrimitiveType::F8E8M0FNU, "f8e8m0fnu", 8},
}};

// kTypes lists the types in their enum order, PRED (1) first: a type's entry is at its value - 1 (asked for
// several times per instruction while a module is parsed and checked, so not searched).
constexpr bool InEnumOrder() {
  for (size_t i = 0; i < kTypes.size(); ++i)
    if (static_cast<size_t>(kTypes[i].type) != i + 1) return false;
  return true;
}
static_assert(InEnumOrder(), "kTypes must list the types in enum order");

const TypeInfo* Find(PrimitiveType t) {
  const auto v = static_cast<size_t>(t);
  return v >= 1 && v <= kTypes.size() ? &kTypes[v - 1] : nullptr;
}

}  // namespace

std::string_view PrimitiveTypeName(PrimitiveType t) {
  if (t == PrimitiveType::BUFFER) return "buffer";
  const TypeInfo* info = Find(t);
  return info ? info->name : std::string_view("invalid");
}

std::optional<PrimitiveType> PrimitiveTypeFromName(std::string_view name) {
  if (name == "opaque_type") return PrimitiveType::OPAQUE_TYPE;
  for (const auto& info : kTypes)
    if (info.name == name) return info.type;
  return std::nullopt;
}

bool IsFloatingPoint(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::F16:
    case PrimitiveType::BF16:
    case PrimitiveType::F32:
    case PrimitiveType::F64:
    case PrimitiveType::F8E5M2:
    case PrimitiveType::F8E4M3FN:
    case PrimitiveType::F8E4M3B11FNUZ:
    case PrimitiveType::F8E5M2FNUZ:
    case PrimitiveType::F8E4M3FNUZ:
    case PrimitiveType::F8E4M3:
    case PrimitiveType::F8E3M4:
    case PrimitiveType::F4E2M1FN:
    case PrimitiveType::F8E8M0FNU: return true;
    default: return false;
  }
}

bool IsComplex(PrimitiveType t) { return t == PrimitiveType::C64 || t == PrimitiveType::C128; }

bool IsSignedInteger(PrimitiveType t) {
  return t == PrimitiveType::S1 || t == PrimitiveType::S2 || t == PrimitiveType::S4 || t == PrimitiveType::S8 ||
         t == PrimitiveType::S16 || t == PrimitiveType::S32 || t == PrimitiveType::S64;
}

bool IsUnsignedInteger(PrimitiveType t) {
  return t == PrimitiveType::U1 || t == PrimitiveType::U2 || t == PrimitiveType::U4 || t == PrimitiveType::U8 ||
         t == PrimitiveType::U16 || t == PrimitiveType::U32 || t == PrimitiveType::U64;
}

bool IsArrayType(PrimitiveType t) {
  return t != PrimitiveType::TUPLE && t != PrimitiveType::OPAQUE_TYPE && t != PrimitiveType::TOKEN &&
         t != PrimitiveType::PRIMITIVE_TYPE_INVALID && Find(t) != nullptr;
}

int BitWidth(PrimitiveType t) {
  const TypeInfo* info = Find(t);
  return info ? info->bits : 0;
}

PrimitiveType ComplexComponentType(PrimitiveType t) {
  if (t == PrimitiveType::C64) return PrimitiveType::F32;
  if (t == PrimitiveType::C128) return PrimitiveType::F64;
  return t;
}

}  // namespace opprobe::hlo
