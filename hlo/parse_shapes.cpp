// The HLO text parser, part 1: shapes, layouts and literals.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "hlo/parser_internal.h"

namespace opprobe::hlo::parse_internal {

// ---------------------------------------------------------------------------------------------------
// Shapes

namespace {

// PrimitiveTypeFromName with the element types HLO text spells most often looked up first (shapes are the most
// frequent token of an HLO file).
std::optional<PrimitiveType> ElementType(std::string_view name) {
  switch (name.size()) {
    case 3:
      if (name == "f32") return PrimitiveType::F32;
      if (name == "s32") return PrimitiveType::S32;
      if (name == "s64") return PrimitiveType::S64;
      if (name == "f16") return PrimitiveType::F16;
      if (name == "u32") return PrimitiveType::U32;
      if (name == "f64") return PrimitiveType::F64;
      break;
    case 4:
      if (name == "pred") return PrimitiveType::PRED;
      if (name == "bf16") return PrimitiveType::BF16;
      break;
    default: break;
  }
  return PrimitiveTypeFromName(name);
}

}  // namespace

bool Parser::LooksLikeShape() const {
  size_t q = p_;
  if (q < end_ && s_[q] == '(') return true;
  size_t start = q;
  while (q < end_ && ((s_[q] >= 'a' && s_[q] <= 'z') || IsDigit(s_[q]))) ++q;
  if (q == start) return false;
  std::string_view type = s_.substr(start, q - start);
  if (type == "b" && q < end_ && s_[q] == '(') return true;  // a buffer `b(s32[4])`
  while (q < end_ && (s_[q] == ' ' || s_[q] == '\t')) ++q;   // XLA's lexer allows `s32 [4]`
  if (q >= end_ || s_[q] != '[') return false;
  return ElementType(type).has_value();
}

bool Parser::LooksLikeLayout() const {
  size_t q = p_;
  while (q < end_ && (s_[q] == ' ' || s_[q] == '\t' || s_[q] == '\r' || s_[q] == '\n')) ++q;
  if (q >= end_ || s_[q] != '{') return false;
  ++q;
  while (q < end_ && (s_[q] == ' ' || s_[q] == '\t' || s_[q] == '\r' || s_[q] == '\n')) ++q;
  return q < end_ && (IsDigit(s_[q]) || s_[q] == ':' || s_[q] == '}');
}

Expected<Shape> Parser::ParseShape(int depth) {
  Shape shape;
  OPPROBE_RETURN_IF_ERROR(ParseShapeInto(shape, depth));
  return shape;
}

// An array shape as printers write it, `f32[16,128]{1,0}` or `pred[]`: no blanks, no comments, plain dimensions
// and a plain layout. Reads it and returns true when that is what is at p_ and it is valid (the checks of the
// general path below: the element count fits, the layout is a permutation of the dimensions); leaves p_ alone and
// returns false otherwise, for the general path to read it or to report the error.
bool Parser::TryParsePlainArrayShape(Shape& shape) {
  size_t q = p_;
  while (q < end_ && ((s_[q] >= 'a' && s_[q] <= 'z') || IsDigit(s_[q]) || s_[q] == '_')) ++q;
  if (q == p_ || q >= end_ || s_[q] != '[') return false;
  const auto type = ElementType(s_.substr(p_, q - p_));
  if (!type || !IsArrayType(*type)) return false;
  // A number of at most 18 digits (no overflow); -1 when there is none.
  auto number = [&]() -> int64_t {
    const size_t first = q;
    int64_t v = 0;
    while (q < end_ && IsDigit(s_[q]) && q - first < 18) v = v * 10 + (s_[q++] - '0');
    return q == first || (q < end_ && IsDigit(s_[q])) ? -1 : v;
  };
  shape.ResetArray(*type);
  std::vector<int64_t>& dims = shape.mutable_dimensions();
  ++q;                          // '['
  if (q >= end_) return false;  // the text ends inside the dimensions
  int64_t elements = 1;
  if (s_[q] != ']') {
    dims.reserve(4);  // most shapes have rank 4 or less: one allocation (a scalar needs none)
    while (true) {
      const int64_t d = number();
      if (d < 0 || __builtin_mul_overflow(elements, d, &elements)) return false;
      dims.push_back(d);
      if (q < end_ && s_[q] == ',') {
        ++q;
        continue;
      }
      if (q < end_ && s_[q] == ']') break;
      return false;
    }
  }
  ++q;  // ']'
  if (q < end_ && s_[q] == '{') {
    const size_t rank = dims.size();
    ++q;
    if (q >= end_) return false;  // the text ends inside the layout
    std::vector<int64_t>& m2m = shape.mutable_minor_to_major();
    m2m.clear();
    uint64_t seen = 0;  // a permutation of the dimensions: each once (ranks up to 64; more go the general way)
    if (rank > 64) return false;
    if (s_[q] != '}') {
      m2m.reserve(rank);
      while (true) {
        const int64_t d = number();
        if (d < 0 || static_cast<size_t>(d) >= rank || ((seen >> d) & 1)) return false;
        seen |= uint64_t{1} << d;
        m2m.push_back(d);
        if (q < end_ && s_[q] == ',') {
          ++q;
          continue;
        }
        if (q < end_ && s_[q] == '}') break;
        return false;  // a tiling suffix `:T(8,128)`, blanks, or an error
      }
    }
    if (m2m.size() != rank) return false;
    ++q;  // '}'
  } else {
    // Blanks may stand before a layout (`f32[2] {1,0}`): the general path reads those.
    size_t r = q;
    while (r < end_ && (s_[r] == ' ' || s_[r] == '\t' || s_[r] == '\r' || s_[r] == '\n')) ++r;
    if (r > q && r < end_ && s_[r] == '{') return false;
  }
  p_ = q;
  return true;
}

Status Parser::ParseShapeInto(Shape& shape, int depth) {
  SkipWs();
  size_t start = p_;
  if (depth > kMaxDepth) return Err(p_, "shape nested too deeply");
  if (TryParsePlainArrayShape(shape)) return Status::Ok();
  if (Peek() == '(') {
    ++p_;
    std::vector<Shape> elements;
    SkipWs();
    if (Peek() == ')') {
      ++p_;
      shape = Shape::Tuple({});
      return Status::Ok();
    }
    while (true) {
      auto e = ParseShape(depth + 1);
      if (!e.ok()) return e.status();
      elements.push_back(std::move(*e));
      SkipWs();
      if (Peek() == ',') {
        ++p_;
        continue;
      }
      if (Peek() == ')') {
        ++p_;
        break;
      }
      return Err(p_, fmt::format("expected ',' or ')' in tuple shape, got {}", Describe()));
    }
    shape = Shape::Tuple(std::move(elements));
    return Status::Ok();
  }
  size_t name_start = p_;
  while (p_ < end_ && ((s_[p_] >= 'a' && s_[p_] <= 'z') || IsDigit(s_[p_]) || s_[p_] == '_')) ++p_;
  std::string_view type_name = s_.substr(name_start, p_ - name_start);
  if (type_name.empty()) return Err(p_, fmt::format("expected a shape, got {}", Describe()));
  if (type_name == "b" && Peek() == '(') {  // buffer: `b(s32[4])`
    ++p_;
    auto inner = ParseShape(depth + 1);
    if (!inner.ok()) return inner.status();
    if (!inner->IsArray()) return Err(name_start, "a buffer holds an array shape");
    OPPROBE_RETURN_IF_ERROR(Expect(')', "to close a buffer shape"));
    shape = Shape::Buffer(std::move(*inner));
    return Status::Ok();
  }
  auto type = ElementType(type_name);
  if (!type || *type == PrimitiveType::TUPLE)
    return Err(name_start, fmt::format("unknown element type {}", support::Quote(type_name)));
  SkipInlineWs();
  if (Peek() != '[') return Err(p_, fmt::format("expected '[' after element type {}", type_name));
  ++p_;
  // Filled in place: a reused shape (operand shapes) keeps its storage.
  shape.ResetArray(*type);
  std::vector<int64_t>& dims = shape.mutable_dimensions();
  std::vector<int> dynamic;
  SkipWs();
  if (Peek() != ']') {
    dims.reserve(4);  // most shapes have rank 4 or less: one allocation (a scalar needs none)
    while (true) {
      SkipWs();
      bool is_dynamic = false;
      if (Peek() == '?') {  // unbounded dynamic dimension
        ++p_;
        dynamic.push_back(static_cast<int>(dims.size()));
        dims.push_back(Shape::kUnboundedSize);
      } else {
        if (Peek() == '<' && Peek(1) == '=') {
          is_dynamic = true;
          p_ += 2;
        }
        size_t dim_pos = p_;
        auto d = ParseInt();
        if (!d.ok()) return d.status();
        if (*d < 0) return Err(dim_pos, "negative dimension");
        if (is_dynamic) dynamic.push_back(static_cast<int>(dims.size()));
        dims.push_back(*d);
      }
      SkipWs();
      if (Peek() == ',') {
        ++p_;
        continue;
      }
      if (Peek() == ']') break;
      return Err(p_, fmt::format("expected ',' or ']' in dimensions, got {}", Describe()));
    }
  }
  ++p_;  // ']'
  if (*type == PrimitiveType::TOKEN) {
    if (!dims.empty()) return Err(start, "token shapes have no dimensions");
  } else {
    for (int i : dynamic) shape.set_dynamic_dimension(i, true);
    if (shape.IsArray()) {
      // Bounded dimensions must not overflow the element count; `?` ones have no count (a copy counts them as 1).
      const auto& d = shape.dimensions();
      if (std::find(d.begin(), d.end(), Shape::kUnboundedSize) == d.end()) {
        auto count = shape.ElementCount();
        if (!count.ok()) return Err(start, count.status().message());
      } else {
        Shape bounded = shape;
        for (auto& b : bounded.mutable_dimensions())
          if (b == Shape::kUnboundedSize) b = 1;
        auto count = bounded.ElementCount();
        if (!count.ok()) return Err(start, count.status().message());
      }
    }
  }
  // `f32[2,2] {1,0}`: XLA's lexer lets blanks stand before the layout; a '{' that opens something else (a
  // computation body after a signature's result shape) is not a layout.
  if (LooksLikeLayout()) {
    SkipWs();
    OPPROBE_RETURN_IF_ERROR(ParseLayout(shape));
  }
  return Status::Ok();
}

Status Parser::ParseLayout(Shape& shape) {
  size_t start = p_;
  ++p_;                                                        // '{'
  std::vector<int64_t>& m2m = shape.mutable_minor_to_major();  // in place (a reused shape keeps its storage)
  m2m.clear();
  m2m.reserve(static_cast<size_t>(shape.rank()));  // one allocation, not one per doubling
  SkipWs();
  while (Peek() != '}' && Peek() != ':') {
    auto v = ParseInt();
    if (!v.ok()) return v.status();
    m2m.push_back(*v);
    SkipWs();
    if (Peek() == ',') {
      ++p_;
      SkipWs();
    } else if (Peek() != '}' && Peek() != ':') {
      return Err(p_, fmt::format("expected ',' or '}}' in layout, got {}", Describe()));
    }
  }
  std::string suffix;
  if (Peek() == ':') {
    size_t suffix_start = p_;
    int depth = 0;
    while (p_ < end_ && !(depth == 0 && s_[p_] == '}')) {
      if (s_[p_] == '(') ++depth;
      if (s_[p_] == ')') --depth;
      if (s_[p_] == '\n' || depth < 0) return Err(p_, "malformed layout");
      ++p_;
    }
    suffix = std::string(s_.substr(suffix_start, p_ - suffix_start));
    // Tile sizes, element sizes and memory spaces are int64 in XLA's LayoutProto.
    for (size_t i = 0; i < suffix.size();) {
      size_t j = i;
      while (j < suffix.size() && IsDigit(suffix[j])) ++j;
      if (j > i) {
        errno = 0;
        std::strtoll(suffix.c_str() + i, nullptr, 10);
        if (errno == ERANGE) return Err(suffix_start + i, "layout number out of the 64-bit range");
        i = j;
      } else {
        ++i;
      }
    }
  }
  if (Peek() != '}') return Err(p_, "unterminated layout");
  ++p_;
  if (!shape.IsArray()) {
    if (!m2m.empty()) return Err(start, "layout on a non-array shape");
  } else {
    if (!m2m.empty() || shape.rank() == 0) {
      if (static_cast<int>(m2m.size()) != shape.rank())
        return Err(start, fmt::format("layout has {} entries for a rank-{} shape", m2m.size(), shape.rank()));
      // A permutation: each dimension once (ranks up to 64 in a bit mask; XLA's limit is far below).
      uint64_t mask = 0;
      std::vector<bool> seen(m2m.size() > 64 ? m2m.size() : 0, false);
      for (int64_t d : m2m) {
        if (d < 0 || d >= shape.rank()) return Err(start, "layout is not a permutation of the dimensions");
        const auto i = static_cast<size_t>(d);
        const bool again = i < 64 ? ((mask >> i) & 1) != 0 : static_cast<bool>(seen[i]);
        if (again) return Err(start, "layout is not a permutation of the dimensions");
        if (i < 64) mask |= uint64_t{1} << i;
        else seen[i] = true;
      }
    } else if (shape.rank() != 0 && suffix.empty()) {
      return Err(start, "empty layout on a non-scalar shape");
    }
  }
  shape.set_layout_suffix(std::move(suffix));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------------
// Literals

std::string_view Parser::ReadElementToken() {
  SkipWs();
  size_t start = p_;
  if (Peek() == '(') {  // complex (re, im)
    while (p_ < end_ && s_[p_] != ')' && s_[p_] != '\n') ++p_;
    if (Peek() == ')') ++p_;
    return s_.substr(start, p_ - start);
  }
  int open = 0;
  while (p_ < end_) {
    char c = s_[p_];
    if (c == ',' || c == '}' || c == ' ' || c == '\t' || c == '\n' || c == '\r') break;
    // `nan(0x7f)` keeps its parenthesis; a ')' that closes none (`constant(nan(0x7f))`) ends the element.
    if (c == '(') ++open;
    if (c == ')' && open-- == 0) break;
    ++p_;
  }
  return s_.substr(start, p_ - start);
}

Status Parser::ParseArrayElements(const Shape& shape, size_t dim, std::vector<std::pair<std::string_view, size_t>>& out,
                                  int depth) {
  if (depth > kMaxDepth) return Err(p_, "literal nested too deeply");
  OPPROBE_RETURN_IF_ERROR(Expect('{', "to open a literal dimension"));
  int64_t n = shape.dimensions()[dim];
  bool innermost = dim + 1 == shape.dimensions().size();
  int64_t count = 0;
  SkipWs();
  if (Peek() == '}') {
    ++p_;
  } else {
    while (true) {
      SkipWs();
      const size_t element_pos = p_;
      if (innermost) {
        size_t pos = p_;
        std::string_view tok = ReadElementToken();
        if (tok.empty()) return Err(pos, fmt::format("expected a literal element, got {}", Describe()));
        out.emplace_back(tok, pos);
      } else {
        OPPROBE_RETURN_IF_ERROR(ParseArrayElements(shape, dim + 1, out, depth + 1));
      }
      ++count;
      if (count > n) return Err(element_pos, fmt::format("literal has more than {} elements in dimension {}", n, dim));
      SkipWs();
      if (Peek() == ',') {
        ++p_;
        continue;
      }
      if (Peek() == '}') {
        ++p_;
        break;
      }
      return Err(p_, fmt::format("expected ',' or '}}' in literal, got {}", Describe()));
    }
  }
  if (count != n) return Err(p_, fmt::format("literal has {} elements in dimension {}, shape says {}", count, dim, n));
  return Status::Ok();
}

namespace {
bool ParseDoubleText(std::string_view text, double* out) {
  std::string t(text);
  if (t == "inf" || t == "+inf") {
    *out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (t == "-inf") {
    *out = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (t.rfind("nan", 0) == 0 || t.rfind("-nan", 0) == 0) {
    *out = t[0] == '-' ? -std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (t == "true") {
    *out = 1;
    return true;
  }
  if (t == "false") {
    *out = 0;
    return true;
  }
  char* endp = nullptr;
  errno = 0;
  *out = std::strtod(t.c_str(), &endp);
  return endp && *endp == '\0' && !t.empty();
}
}  // namespace

// Mantissa bits of the floating-point types whose NaNs carry a payload (`nan(0x7f)`); 0 for the others.
static int NanPayloadBits(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::F16: return 10;
    case PrimitiveType::BF16: return 7;
    case PrimitiveType::F32: return 23;
    case PrimitiveType::F64: return 52;
    default: return 0;
  }
}

Status Parser::SetNan(Literal& lit, int64_t i, std::string_view tok, size_t pos) {
  const PrimitiveType t = lit.shape().element_type();
  const bool negative = !tok.empty() && tok[0] == '-';
  std::string_view rest = tok.substr(negative ? 4 : 3);  // after "nan" / "-nan"
  if (rest.empty()) {
    lit.SetFromDouble(i,
                      negative ? -std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::quiet_NaN());
    return Status::Ok();
  }
  // `nan(0x...)`: the payload, which must be a non-zero value of the type's mantissa bits (XLA's parser).
  if (rest.size() < 5 || rest.substr(0, 3) != "(0x" || rest.back() != ')')
    return Err(pos, fmt::format("{} is not a number", support::Quote(tok)));
  std::string hex(rest.substr(3, rest.size() - 4));
  char* endp = nullptr;
  errno = 0;
  const unsigned long long payload = std::strtoull(hex.c_str(), &endp, 16);
  if (hex.empty() || errno || !endp || *endp || hex[0] == '-' || hex[0] == '+')
    return Err(pos, fmt::format("{} is not a number", support::Quote(tok)));
  const int bits = NanPayloadBits(t);
  if (bits == 0) {  // the small float types: any NaN stands for the type's NaN
    lit.SetFromDouble(i, std::numeric_limits<double>::quiet_NaN());
    return Status::Ok();
  }
  const unsigned long long max = (1ULL << bits) - 1;
  if (payload == 0 || payload > max)
    return Err(pos, fmt::format("NaN payload {} is out of range for {} (1 to {:#x})", support::Quote(tok),
                                PrimitiveTypeName(t), max));
  const unsigned long long sign = negative ? 1ULL : 0ULL;
  switch (t) {
    case PrimitiveType::F16:
      lit.Set<uint16_t>(i, static_cast<uint16_t>((sign << 15) | (0x1fULL << 10) | payload));
      break;
    case PrimitiveType::BF16:
      lit.Set<uint16_t>(i, static_cast<uint16_t>((sign << 15) | (0xffULL << 7) | payload));
      break;
    case PrimitiveType::F32:
      lit.Set<uint32_t>(i, static_cast<uint32_t>((sign << 31) | (0xffULL << 23) | payload));
      break;
    default: lit.Set<uint64_t>(i, (sign << 63) | (0x7ffULL << 52) | payload); break;
  }
  return Status::Ok();
}

Status Parser::SetElement(Literal& lit, int64_t i, std::string_view text, size_t pos) {
  PrimitiveType t = lit.shape().element_type();
  std::string tok(text);
  if (t == PrimitiveType::PRED) {
    if (tok == "true" || tok == "1") lit.Set<uint8_t>(i, 1);
    else if (tok == "false" || tok == "0") lit.Set<uint8_t>(i, 0);
    else return Err(pos, fmt::format("{} is not a pred value", support::Quote(tok)));
    return Status::Ok();
  }
  if (IsInteger(t)) {
    char* endp = nullptr;
    errno = 0;
    if (IsSignedInteger(t)) {
      long long v = std::strtoll(tok.c_str(), &endp, 10);
      if (errno || !endp || *endp || tok.empty())
        return Err(pos, fmt::format("{} is not an integer", support::Quote(tok)));
      int bits = BitWidth(t);
      if (bits < 64) {
        long long lo = -(1LL << (bits - 1)), hi = (1LL << (bits - 1)) - 1;
        if (v < lo || v > hi) return Err(pos, fmt::format("{} does not fit in {}", tok, PrimitiveTypeName(t)));
      }
      switch (t) {
        case PrimitiveType::S1:
        case PrimitiveType::S2:
        case PrimitiveType::S4:
        case PrimitiveType::S8: lit.Set<int8_t>(i, static_cast<int8_t>(v)); break;
        case PrimitiveType::S16: lit.Set<int16_t>(i, static_cast<int16_t>(v)); break;
        case PrimitiveType::S32: lit.Set<int32_t>(i, static_cast<int32_t>(v)); break;
        default: lit.Set<int64_t>(i, v);
      }
    } else {
      int bits = BitWidth(t);
      unsigned long long v = 0;
      if (!tok.empty() && tok[0] == '-') {
        // XLA reads an integer literal as int64 and keeps u64's two's complement (`u64[] constant(-1)`).
        long long sv = std::strtoll(tok.c_str(), &endp, 10);
        if (errno || !endp || *endp) return Err(pos, fmt::format("{} is not an integer", support::Quote(tok)));
        if (bits < 64) return Err(pos, fmt::format("{} is negative for {}", tok, PrimitiveTypeName(t)));
        v = static_cast<unsigned long long>(sv);
      } else {
        v = std::strtoull(tok.c_str(), &endp, 10);
        if (errno || !endp || *endp || tok.empty())
          return Err(pos, fmt::format("{} is not an integer", support::Quote(tok)));
      }
      if (bits < 64 && v > ((1ULL << bits) - 1))
        return Err(pos, fmt::format("{} does not fit in {}", tok, PrimitiveTypeName(t)));
      switch (t) {
        case PrimitiveType::U1:
        case PrimitiveType::U2:
        case PrimitiveType::U4:
        case PrimitiveType::U8: lit.Set<uint8_t>(i, static_cast<uint8_t>(v)); break;
        case PrimitiveType::U16: lit.Set<uint16_t>(i, static_cast<uint16_t>(v)); break;
        case PrimitiveType::U32: lit.Set<uint32_t>(i, static_cast<uint32_t>(v)); break;
        default: lit.Set<uint64_t>(i, v);
      }
    }
    return Status::Ok();
  }
  if (IsComplex(t)) {
    std::string_view body = text;
    if (body.size() < 2 || body.front() != '(' || body.back() != ')')
      return Err(pos, fmt::format("{} is not a complex value (re, im)", support::Quote(tok)));
    body = body.substr(1, body.size() - 2);
    size_t comma = body.find(',');
    if (comma == std::string_view::npos)
      return Err(pos, fmt::format("{} is not a complex value (re, im)", support::Quote(tok)));
    auto trim = [](std::string_view v) {
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
      return v;
    };
    double re, im;
    if (!ParseDoubleText(trim(body.substr(0, comma)), &re) || !ParseDoubleText(trim(body.substr(comma + 1)), &im))
      return Err(pos, fmt::format("{} is not a complex value (re, im)", support::Quote(tok)));
    lit.SetFromComplex(i, {re, im});
    return Status::Ok();
  }
  if (IsFloatingPoint(t)) {
    double d;
    if (!ParseDoubleText(tok, &d)) return Err(pos, fmt::format("{} is not a number", support::Quote(tok)));
    if (std::isnan(d)) return SetNan(lit, i, tok, pos);
    if (t == PrimitiveType::F32) {
      float f = std::isfinite(d) ? std::strtof(tok.c_str(), nullptr) : static_cast<float>(d);
      lit.Set<float>(i, f);
    } else {
      lit.SetFromDouble(i, d);
    }
    // XLA's parser: a finite value that the type cannot hold (f16 65520, bf16 1e100) is out of range.
    if (std::isfinite(d) && !std::isfinite(lit.GetAsDouble(i)))
      return Err(pos, fmt::format("{} is out of range for {}", support::Quote(tok), PrimitiveTypeName(t)));
    return Status::Ok();
  }
  return Err(pos, fmt::format("cannot hold a literal of type {}", PrimitiveTypeName(t)));
}

Expected<Literal> Parser::ParseLiteral(const Shape& shape, int depth) {
  SkipWs();
  if (depth > kMaxDepth) return Err(p_, "literal nested too deeply");
  if (s_.substr(p_, 5) == "{...}" && p_ + 5 <= end_) {
    p_ += 5;
    Literal lit;
    lit.mutable_shape() = shape;
    lit.set_elided(true);
    return lit;
  }
  if (shape.IsTuple()) {
    OPPROBE_RETURN_IF_ERROR(Expect('(', "to open a tuple literal"));
    std::vector<Literal> elements;
    for (size_t k = 0; k < shape.tuple_shapes().size(); ++k) {
      if (k) OPPROBE_RETURN_IF_ERROR(Expect(',', "between tuple literal elements"));
      auto e = ParseLiteral(shape.tuple_shapes()[k], depth + 1);
      if (!e.ok()) return e.status();
      elements.push_back(std::move(*e));
    }
    OPPROBE_RETURN_IF_ERROR(Expect(')', "to close a tuple literal"));
    Literal lit = Literal::Tuple(std::move(elements));
    lit.mutable_shape() = shape;
    return lit;
  }
  if (!shape.IsArray()) {
    size_t pos = p_;
    std::string_view tok = ReadElementToken();
    if (tok != "token" && !tok.empty()) return Err(pos, "a constant of this shape has no value");
    Literal lit;
    lit.mutable_shape() = shape;
    return lit;
  }
  if (shape.is_unbounded_dynamic()) return Err(p_, fmt::format("a constant of shape {} has no size", shape.ToString()));
  std::vector<std::pair<std::string_view, size_t>> elements;
  SkipWs();
  if (shape.rank() > 0 && Peek() != '{') {
    // `s32[3,3] constant(1)`: one value for every element. Bounded, since the text no longer bounds the size.
    size_t pos = p_;
    std::string_view tok = ReadElementToken();
    if (tok.empty()) return Err(pos, fmt::format("expected a constant value, got {}", Describe()));
    int64_t width = std::max<int64_t>(ByteWidth(shape.element_type()), 1);
    if (shape.elements() > (int64_t{256} << 20) / width)
      return Err(pos, fmt::format("a scalar constant for shape {} would take more than 256 MiB", shape.ToString()));
    Literal lit(shape);
    OPPROBE_RETURN_IF_ERROR(SetElement(lit, 0, tok, pos));
    const int64_t es = ByteWidth(shape.element_type());
    for (int64_t k = 1; k < shape.elements(); ++k)
      std::memcpy(lit.data().data() + k * es, lit.data().data(), static_cast<size_t>(es));
    lit.set_splat(true);
    return lit;
  }
  if (shape.rank() == 0) {
    size_t pos = p_;
    std::string_view tok = ReadElementToken();
    if (tok.empty()) return Err(pos, fmt::format("expected a constant value, got {}", Describe()));
    elements.emplace_back(tok, pos);
  } else {
    OPPROBE_RETURN_IF_ERROR(ParseArrayElements(shape, 0, elements, depth + 1));
  }
  if (static_cast<int64_t>(elements.size()) != shape.elements())
    return Err(p_, fmt::format("literal has {} elements, shape {} needs {}", elements.size(), shape.ToString(),
                               shape.elements()));
  Literal lit(shape);
  for (size_t k = 0; k < elements.size(); ++k)
    OPPROBE_RETURN_IF_ERROR(SetElement(lit, static_cast<int64_t>(k), elements[k].first, elements[k].second));
  return lit;
}

Expected<Shape> Parser::ParseShapeOnly() {
  auto shape = ParseShape(0);
  if (!shape.ok()) return shape.status();
  SkipWs();
  if (p_ < end_) return Err(p_, "unexpected text after the shape");
  return shape;
}

}  // namespace opprobe::hlo::parse_internal
