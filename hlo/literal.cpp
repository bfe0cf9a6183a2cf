#include "hlo/literal.h"

#include <fmt/format.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace opprobe::hlo {

uint16_t FloatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
  uint32_t rounding_bias = 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>((u + rounding_bias) >> 16);
}

float Bf16ToFloat(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t FloatToF16(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }
float F16ToFloat(uint16_t h) { return static_cast<float>(std::bit_cast<_Float16>(h)); }

std::string RoundTripDouble(double v, bool is_f32) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  // Shortest round-trip text (`10`, not `1e+01`, which "%.1g" gives).
  char buf[64];
  auto r =
      is_f32 ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v)) : std::to_chars(buf, buf + sizeof buf, v);
  if (r.ec == std::errc()) return std::string(buf, r.ptr);
  return fmt::format("{}", v);
}

Literal::Literal(Shape shape) : shape_(std::move(shape)) {
  if (shape_.IsArray()) data_.assign(static_cast<size_t>(shape_.elements() * ByteWidth(shape_.element_type())), 0);
}

Literal Literal::Tuple(std::vector<Literal> elements) {
  std::vector<Shape> shapes;
  shapes.reserve(elements.size());
  for (const auto& e : elements) shapes.push_back(e.shape());
  Literal l;
  l.shape_ = Shape::Tuple(std::move(shapes));
  l.tuple_ = std::move(elements);
  return l;
}

Literal Literal::ScalarF64(PrimitiveType type, double v) {
  Literal l(Shape::Scalar(type));
  if (IsComplex(type)) l.SetFromComplex(0, v);
  else l.SetFromDouble(0, v);
  return l;
}

Literal Literal::ScalarComplex(PrimitiveType type, std::complex<double> v) {
  Literal l(Shape::Scalar(type));
  l.SetFromComplex(0, v);
  return l;
}

double Literal::GetAsDouble(int64_t i) const {
  switch (shape_.element_type()) {
    case PrimitiveType::PRED: return Get<uint8_t>(i) ? 1.0 : 0.0;
    case PrimitiveType::S8: return Get<int8_t>(i);
    case PrimitiveType::S16: return Get<int16_t>(i);
    case PrimitiveType::S32: return Get<int32_t>(i);
    case PrimitiveType::S64: return static_cast<double>(Get<int64_t>(i));
    case PrimitiveType::U8: return Get<uint8_t>(i);
    case PrimitiveType::U16: return Get<uint16_t>(i);
    case PrimitiveType::U32: return Get<uint32_t>(i);
    case PrimitiveType::U64: return static_cast<double>(Get<uint64_t>(i));
    case PrimitiveType::F16: return F16ToFloat(Get<uint16_t>(i));
    case PrimitiveType::BF16: return Bf16ToFloat(Get<uint16_t>(i));
    case PrimitiveType::F32: return Get<float>(i);
    case PrimitiveType::F64: return Get<double>(i);
    case PrimitiveType::C64: return Get<std::complex<float>>(i).real();
    case PrimitiveType::C128: return Get<std::complex<double>>(i).real();
    default: return 0.0;
  }
}

std::complex<double> Literal::GetAsComplex(int64_t i) const {
  switch (shape_.element_type()) {
    case PrimitiveType::C64: {
      auto c = Get<std::complex<float>>(i);
      return {c.real(), c.imag()};
    }
    case PrimitiveType::C128: return Get<std::complex<double>>(i);
    default: return {GetAsDouble(i), 0.0};
  }
}

int64_t Literal::GetAsInt64(int64_t i) const {
  switch (shape_.element_type()) {
    case PrimitiveType::S64: return Get<int64_t>(i);
    case PrimitiveType::U64: return static_cast<int64_t>(Get<uint64_t>(i));
    default: return static_cast<int64_t>(GetAsDouble(i));
  }
}

uint64_t Literal::GetAsUint64(int64_t i) const {
  switch (shape_.element_type()) {
    case PrimitiveType::S64: return static_cast<uint64_t>(Get<int64_t>(i));
    case PrimitiveType::U64: return Get<uint64_t>(i);
    default: return static_cast<uint64_t>(GetAsInt64(i));
  }
}

void Literal::SetFromDouble(int64_t i, double v) {
  switch (shape_.element_type()) {
    case PrimitiveType::PRED: Set<uint8_t>(i, v != 0.0); break;
    case PrimitiveType::S8: Set<int8_t>(i, static_cast<int8_t>(v)); break;
    case PrimitiveType::S16: Set<int16_t>(i, static_cast<int16_t>(v)); break;
    case PrimitiveType::S32: Set<int32_t>(i, static_cast<int32_t>(v)); break;
    case PrimitiveType::S64: Set<int64_t>(i, static_cast<int64_t>(v)); break;
    case PrimitiveType::U8: Set<uint8_t>(i, static_cast<uint8_t>(v)); break;
    case PrimitiveType::U16: Set<uint16_t>(i, static_cast<uint16_t>(v)); break;
    case PrimitiveType::U32: Set<uint32_t>(i, static_cast<uint32_t>(v)); break;
    case PrimitiveType::U64: Set<uint64_t>(i, static_cast<uint64_t>(v)); break;
    case PrimitiveType::F16: Set<uint16_t>(i, FloatToF16(static_cast<float>(v))); break;
    case PrimitiveType::BF16: Set<uint16_t>(i, FloatToBf16(static_cast<float>(v))); break;
    case PrimitiveType::F32: Set<float>(i, static_cast<float>(v)); break;
    case PrimitiveType::F64: Set<double>(i, v); break;
    case PrimitiveType::C64: Set<std::complex<float>>(i, {static_cast<float>(v), 0.f}); break;
    case PrimitiveType::C128: Set<std::complex<double>>(i, {v, 0.0}); break;
    default: break;
  }
}

void Literal::SetFromComplex(int64_t i, std::complex<double> v) {
  switch (shape_.element_type()) {
    case PrimitiveType::C64:
      Set<std::complex<float>>(i, {static_cast<float>(v.real()), static_cast<float>(v.imag())});
      break;
    case PrimitiveType::C128: Set<std::complex<double>>(i, v); break;
    default: SetFromDouble(i, v.real());
  }
}

void Literal::SetFromInt64(int64_t i, int64_t v) {
  switch (shape_.element_type()) {
    case PrimitiveType::S64: Set<int64_t>(i, v); break;
    case PrimitiveType::U64: Set<uint64_t>(i, static_cast<uint64_t>(v)); break;
    default: SetFromDouble(i, static_cast<double>(v));
  }
}

namespace {

std::string ElementToString(const Literal& l, int64_t i) {
  PrimitiveType t = l.shape().element_type();
  if (t == PrimitiveType::PRED) return l.Get<uint8_t>(i) ? "true" : "false";
  if (IsSignedInteger(t)) return std::to_string(l.GetAsInt64(i));
  if (IsUnsignedInteger(t)) return std::to_string(l.GetAsUint64(i));
  if (IsComplex(t)) {
    auto c = l.GetAsComplex(i);
    bool f32 = t == PrimitiveType::C64;
    return "(" + RoundTripDouble(c.real(), f32) + ", " + RoundTripDouble(c.imag(), f32) + ")";
  }
  return RoundTripDouble(l.GetAsDouble(i), t != PrimitiveType::F64);
}

void PrintDims(const Literal& l, int dim, int64_t& index, std::string& out) {
  const auto& dims = l.shape().dimensions();
  if (dim == static_cast<int>(dims.size())) {
    out += ElementToString(l, index++);
    return;
  }
  bool innermost = dim + 1 == static_cast<int>(dims.size());
  out += innermost ? "{" : "{ ";
  for (int64_t k = 0; k < dims[static_cast<size_t>(dim)]; ++k) {
    if (k) out += ", ";
    PrintDims(l, dim + 1, index, out);
  }
  out += innermost ? "}" : " }";
}

}  // namespace

std::string Literal::ValueToString() const {
  if (elided_) return "{...}";
  if (shape_.IsTuple()) {
    std::string out = "(";
    for (size_t i = 0; i < tuple_.size(); ++i) {
      if (i) out += ", ";
      out += tuple_[i].ValueToString();
    }
    return out + ")";
  }
  if (shape_.rank() == 0) return ElementToString(*this, 0);
  std::string out;
  int64_t index = 0;
  PrintDims(*this, 0, index, out);
  return out;
}

}  // namespace opprobe::hlo
