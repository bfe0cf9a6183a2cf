// XLA element types with XLA's numbering (xla_data.proto PrimitiveType).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace opprobe::hlo {

enum class PrimitiveType : int {
  PRIMITIVE_TYPE_INVALID = 0,
  PRED = 1,
  S8 = 2,
  S16 = 3,
  S32 = 4,
  S64 = 5,
  U8 = 6,
  U16 = 7,
  U32 = 8,
  U64 = 9,
  F16 = 10,
  F32 = 11,
  F64 = 12,
  TUPLE = 13,
  OPAQUE_TYPE = 14,
  C64 = 15,
  BF16 = 16,
  TOKEN = 17,
  C128 = 18,
  F8E5M2 = 19,
  F8E4M3FN = 20,
  S4 = 21,
  U4 = 22,
  F8E4M3B11FNUZ = 23,
  F8E5M2FNUZ = 24,
  F8E4M3FNUZ = 25,
  S2 = 26,
  U2 = 27,
  F8E4M3 = 28,
  F8E3M4 = 29,
  S1 = 30,
  U1 = 31,
  F4E2M1FN = 32,
  F8E8M0FNU = 33,
  BUFFER = 34,  // a buffer holding one array: `b(s32[4])` (Shape::Buffer)
};

// `f32`, `bf16`, `pred`, `opaque`, ...; "buffer" for BUFFER (written `b(...)` around its array shape, never
// as a type name); "invalid" for unknown values.
std::string_view PrimitiveTypeName(PrimitiveType t);
std::optional<PrimitiveType> PrimitiveTypeFromName(std::string_view name);

bool IsFloatingPoint(PrimitiveType t);  // f16 bf16 f32 f64 and f8 kinds
bool IsComplex(PrimitiveType t);
bool IsSignedInteger(PrimitiveType t);
bool IsUnsignedInteger(PrimitiveType t);
inline bool IsInteger(PrimitiveType t) { return IsSignedInteger(t) || IsUnsignedInteger(t); }
bool IsArrayType(PrimitiveType t);  // not TUPLE, OPAQUE, TOKEN, INVALID
int BitWidth(PrimitiveType t);      // 0 for non-array types; pred is 8 (one byte per element)
inline int ByteWidth(PrimitiveType t) { return (BitWidth(t) + 7) / 8; }
// The real type of a complex type (c64 -> f32, c128 -> f64); other types map to themselves.
PrimitiveType ComplexComponentType(PrimitiveType t);

}  // namespace opprobe::hlo
