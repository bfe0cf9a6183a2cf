#include "hlo/shape.h"

#include <fmt/format.h>

namespace opprobe::hlo {

Shape Shape::Array(PrimitiveType type, std::vector<int64_t> dims) {
  Shape s;
  s.element_type_ = type;
  s.dims_ = std::move(dims);
  s.SetDefaultLayout();
  return s;
}

Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape s;
  s.element_type_ = PrimitiveType::TUPLE;
  s.tuple_ = std::move(elements);
  return s;
}

Shape Shape::Token() {
  Shape s;
  s.element_type_ = PrimitiveType::TOKEN;
  return s;
}

Shape Shape::Buffer(Shape array) {
  Shape s;
  s.element_type_ = PrimitiveType::BUFFER;
  s.tuple_.push_back(std::move(array));
  return s;
}

bool Shape::is_unbounded_dynamic() const {
  for (int64_t d : dims_)
    if (d == kUnboundedSize) return true;
  for (const auto& t : tuple_)
    if (t.is_unbounded_dynamic()) return true;
  return false;
}

// At namespace scope, not in a function: read without the guard a function's static needs. (Not constinit: clang
// cannot constant-initialize a std::string; no static initializer of another file reads it.)
const Shape::Rare Shape::kNoRare{};

void Shape::set_dynamic_dimension(int i, bool dynamic) {
  std::vector<bool>& d = (rare_ ? *rare_ : rare_.emplace()).dynamic;
  if (d.size() < dims_.size()) d.resize(dims_.size(), false);
  d[static_cast<size_t>(i)] = dynamic;
}

void Shape::set_layout_suffix(std::string s) {
  if (s.empty() && !rare_) return;
  (rare_ ? *rare_ : rare_.emplace()).layout_suffix = std::move(s);
}

bool Shape::is_dynamic() const {
  for (bool d : dynamic_dimensions())
    if (d) return true;
  for (const auto& t : tuple_)
    if (t.is_dynamic()) return true;
  return false;
}

void Shape::set_layout(std::vector<int64_t> minor_to_major) {
  minor_to_major_ = std::move(minor_to_major);
  has_layout_ = true;
}

void Shape::clear_layout() {
  has_layout_ = false;
  minor_to_major_.clear();
  if (rare_) rare_->layout_suffix.clear();
  for (auto& t : tuple_) t.clear_layout();
}

void Shape::SetDefaultLayout() {
  if (IsTuple()) {
    for (auto& t : tuple_) t.SetDefaultLayout();
    return;
  }
  if (!IsArray()) return;
  minor_to_major_.clear();
  for (int64_t i = static_cast<int64_t>(dims_.size()) - 1; i >= 0; --i) minor_to_major_.push_back(i);
  has_layout_ = true;
}

Expected<int64_t> Shape::ElementCount() const {
  if (!IsArray()) return InvalidInput(fmt::format("shape {} has no element count", ToString()));
  __int128 n = 1;
  for (int64_t d : dims_) {
    if (d == kUnboundedSize)
      return InvalidInput(fmt::format("shape {} has an unbounded dynamic dimension", ToString()));
    if (d < 0) return InvalidInput(fmt::format("shape {} has a negative dimension", ToString()));
    n *= d;
    if (n > static_cast<__int128>(INT64_MAX))
      return InvalidInput(fmt::format("shape {} has more than 2^63 elements", ToString()));
  }
  return static_cast<int64_t>(n);
}

int64_t Shape::elements() const {
  auto n = ElementCount();
  return n.ok() ? *n : 0;
}

std::string Shape::ToString(bool print_layout) const {
  if (IsTuple()) {
    std::string out = "(";
    for (size_t i = 0; i < tuple_.size(); ++i) {
      if (i) out += ", ";
      if (i && i % 5 == 0) out += fmt::format("/*index={}*/", i);
      out += tuple_[i].ToString(print_layout);
    }
    return out + ")";
  }
  if (IsBuffer()) return "b(" + (tuple_.empty() ? std::string() : tuple_[0].ToString(print_layout)) + ")";
  std::string out(PrimitiveTypeName(element_type_));
  out += '[';
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) out += ',';
    if (dims_[i] == kUnboundedSize) {
      out += '?';
      continue;
    }
    if (is_dynamic_dimension(static_cast<int>(i))) out += "<=";
    out += std::to_string(dims_[i]);
  }
  out += ']';
  // XLA omits the layout of non-array shapes, and of scalars unless it has tiling (`f32[]{:T(128)}`).
  if (print_layout && has_layout_ && IsArray() && (!dims_.empty() || !layout_suffix().empty())) {
    out += '{';
    for (size_t i = 0; i < minor_to_major_.size(); ++i) {
      if (i) out += ',';
      out += std::to_string(minor_to_major_[i]);
    }
    out += layout_suffix();
    out += '}';
  }
  return out;
}

bool Shape::Compatible(const Shape& o) const {
  if (element_type_ != o.element_type_) return false;
  if (IsTuple() || IsBuffer()) {
    if (tuple_.size() != o.tuple_.size()) return false;
    for (size_t i = 0; i < tuple_.size(); ++i)
      if (!tuple_[i].Compatible(o.tuple_[i])) return false;
    return true;
  }
  return dims_ == o.dims_;
}

bool Shape::operator==(const Shape& o) const {
  return element_type_ == o.element_type_ && dims_ == o.dims_ && is_dynamic() == o.is_dynamic() &&
         has_layout_ == o.has_layout_ && minor_to_major_ == o.minor_to_major_ && layout_suffix() == o.layout_suffix() &&
         tuple_ == o.tuple_;
}

}  // namespace opprobe::hlo
