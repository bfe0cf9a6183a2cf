// hlo::Shape: an array shape (element type, dims, dynamic dims, layout) or a tuple of shapes.
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hlo/types.h"
#include "support/heap_optional.h"
#include "support/status.h"

namespace opprobe::hlo {

class Shape {
 public:
  Shape() = default;
  // Makes this an array shape of `type` with no dimensions and no layout, as a new one, keeping the storage.
  void ResetArray(PrimitiveType type) {
    element_type_ = type;
    dims_.clear();
    has_layout_ = false;
    minor_to_major_.clear();
    rare_.reset();
    tuple_.clear();
  }
  // An array shape with the default (descending, row-major) layout.
  static Shape Array(PrimitiveType type, std::vector<int64_t> dims);
  static Shape Scalar(PrimitiveType type) { return Array(type, {}); }
  static Shape Tuple(std::vector<Shape> elements);
  static Shape Token();
  // XLA's buffer shape `b(s32[4])`: a buffer holding one array (the one tuple_shapes() element).
  static Shape Buffer(Shape array);
  // A dimension written `?` (unbounded dynamic); is_dynamic_dimension() is true for it.
  static constexpr int64_t kUnboundedSize = INT64_MIN;

  PrimitiveType element_type() const { return element_type_; }
  void set_element_type(PrimitiveType t) { element_type_ = t; }
  bool IsTuple() const { return element_type_ == PrimitiveType::TUPLE; }
  bool IsArray() const { return IsArrayType(element_type_); }
  bool IsToken() const { return element_type_ == PrimitiveType::TOKEN; }
  bool IsBuffer() const { return element_type_ == PrimitiveType::BUFFER; }
  bool is_unbounded_dynamic() const;  // some dimension is `?`

  const std::vector<int64_t>& dimensions() const { return dims_; }
  std::vector<int64_t>& mutable_dimensions() { return dims_; }
  int64_t dimensions(int i) const { return dims_[static_cast<size_t>(i)]; }
  int rank() const { return static_cast<int>(dims_.size()); }

  // Bounded dynamic dimensions (`s32[<=8]`): the dimension holds the bound.
  bool is_dynamic_dimension(int i) const {
    if (!rare_) return false;
    const std::vector<bool>& d = rare_->dynamic;
    return static_cast<size_t>(i) < d.size() && d[static_cast<size_t>(i)];
  }
  void set_dynamic_dimension(int i, bool dynamic);
  bool is_dynamic() const;
  const std::vector<bool>& dynamic_dimensions() const { return rare_ ? rare_->dynamic : kNoRare.dynamic; }

  // Layout: minor_to_major. `has_layout()` is false when the text had none; printing then omits it.
  bool has_layout() const { return has_layout_; }
  const std::vector<int64_t>& minor_to_major() const { return minor_to_major_; }
  void set_layout(std::vector<int64_t> minor_to_major);
  // The layout, marked present, to fill in place (the parser reuses one shape's storage for operand shapes).
  std::vector<int64_t>& mutable_minor_to_major() {
    has_layout_ = true;
    return minor_to_major_;
  }
  void clear_layout();
  void SetDefaultLayout();  // {rank-1, ..., 0}, recursively for tuples
  // Tiling / memory-space suffix of a layout as printed by TPU dumps (`:T(8,128)S(5)`), kept verbatim.
  const std::string& layout_suffix() const { return rare_ ? rare_->layout_suffix : kNoRare.layout_suffix; }
  void set_layout_suffix(std::string s);

  const std::vector<Shape>& tuple_shapes() const { return tuple_; }
  std::vector<Shape>& mutable_tuple_shapes() { return tuple_; }

  // Number of elements; an error when a dimension is negative or unbounded, or the product overflows 64 bits.
  Expected<int64_t> ElementCount() const;
  // Element count, assuming the shape was validated (returns 0 on overflow).
  int64_t elements() const;

  // XLA's text form: `f32[4,3]{1,0}`, `f32[]`, `s32[<=8,2]{1,0}`, `f32[?,2]`, `(f32[2]{0}, s32[])`, `b(s32[4])`.
  std::string ToString(bool print_layout = true) const;

  // Same element type and dims (and tuple structure); layout ignored.
  bool Compatible(const Shape& other) const;
  bool operator==(const Shape& other) const;
  bool operator!=(const Shape& other) const { return !(*this == other); }

 private:
  PrimitiveType element_type_ = PrimitiveType::PRIMITIVE_TYPE_INVALID;
  std::vector<int64_t> dims_;
  bool has_layout_ = false;
  std::vector<int64_t> minor_to_major_;
  // What few shapes have, out of line (a shape is part of every instruction): dynamic dimensions, a layout suffix.
  struct Rare {
    std::vector<bool> dynamic;
    std::string layout_suffix;
    bool operator==(const Rare&) const = default;
  };
  static const Rare kNoRare;  // a namespace-scope object: reading it needs no guard
  support::HeapOptional<Rare> rare_;
  std::vector<Shape> tuple_;
};

}  // namespace opprobe::hlo
