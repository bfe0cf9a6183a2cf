// hlo::Literal: a dense array value (row-major bytes in the shape's element type), or a tuple.
#pragma once

#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hlo/shape.h"

namespace opprobe::hlo {

class Literal {
 public:
  Literal() = default;
  // A zero-filled literal of an array shape (row-major regardless of the shape's layout).
  explicit Literal(Shape shape);
  static Literal Tuple(std::vector<Literal> elements);
  // Scalars, for constants made by lowerings.
  static Literal ScalarF64(PrimitiveType type, double v);  // converts to `type` (floats, ints, pred)
  static Literal ScalarComplex(PrimitiveType type, std::complex<double> v);

  const Shape& shape() const { return shape_; }
  Shape& mutable_shape() { return shape_; }
  int64_t element_count() const { return shape_.elements(); }
  std::vector<uint8_t>& data() { return data_; }
  const std::vector<uint8_t>& data() const { return data_; }
  const std::vector<Literal>& tuple_elements() const { return tuple_; }
  std::vector<Literal>& mutable_tuple_elements() { return tuple_; }

  // True when the printed text was `{...}` (a dump without large constants): the values are unknown.
  bool elided() const { return elided_; }
  void set_elided(bool e) { elided_ = e; }
  // True when the text gave one value for every element (`f32[4096,4096] constant(0)`): it prints back so, in
  // constant time, instead of as millions of elements.
  bool splat() const { return splat_; }
  void set_splat(bool s) { splat_ = s; }

  // Element access through double/complex, converting from the element type.
  double GetAsDouble(int64_t linear_index) const;
  std::complex<double> GetAsComplex(int64_t linear_index) const;
  void SetFromDouble(int64_t linear_index, double v);
  void SetFromComplex(int64_t linear_index, std::complex<double> v);
  // Integers exactly (s64/u64 do not survive a double).
  int64_t GetAsInt64(int64_t linear_index) const;
  uint64_t GetAsUint64(int64_t linear_index) const;
  void SetFromInt64(int64_t linear_index, int64_t v);

  template <typename T>
  T Get(int64_t i) const {
    T v;
    std::memcpy(&v, data_.data() + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    return v;
  }
  template <typename T>
  void Set(int64_t i, T v) {
    std::memcpy(data_.data() + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
  }

  // XLA's text form of the value: `0`, `-inf`, `{1, 2}`, `{ { 1, 2 }, { 3, 4 } }`, `(1, 2)` for complex,
  // `true`; `{...}` when elided.
  std::string ValueToString() const;

  bool operator==(const Literal& o) const {
    return shape_.Compatible(o.shape_) && data_ == o.data_ && tuple_ == o.tuple_ && elided_ == o.elided_;
  }

 private:
  Shape shape_;
  std::vector<uint8_t> data_;
  std::vector<Literal> tuple_;
  bool elided_ = false;
  bool splat_ = false;
};

// bf16 / f16 conversions (round to nearest even), used by literals and the evaluator.
uint16_t FloatToBf16(float f);
float Bf16ToFloat(uint16_t b);
uint16_t FloatToF16(float f);
float F16ToFloat(uint16_t h);
// The shortest text that reads back to the same float/double (XLA's RoundTripFpToString spirit).
std::string RoundTripDouble(double v, bool is_f32);

}  // namespace opprobe::hlo
