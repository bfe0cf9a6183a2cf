#include "hlo/parser.h"
#include "hlo/quote.h"
#include "hlo/shape_inference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

namespace opprobe::hlo {
namespace {

constexpr int kMaxDepth = 64;  // nesting of tuple shapes, literal braces and attribute values

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Where an instruction's operands and called computations still have to be looked up by name.
struct PendingOperand {
  std::string name;
  size_t pos;
};
struct PendingCall {
  Instruction* instr;
  size_t slot;  // index into instr->called_computations
  std::string name;
  size_t pos;
};

class Parser {
 public:
  Parser(std::string_view text, size_t begin, size_t end, const std::string& source)
      : s_(text), p_(begin), end_(end), src_(source) {}

  Expected<std::unique_ptr<Module>> ParseModule();
  Expected<Shape> ParseShapeOnly() {
    auto shape = ParseShape(0);
    if (!shape.ok()) return shape.status();
    SkipWs();
    if (p_ < end_) return Err(p_, "unexpected text after the shape");
    return shape;
  }

 private:
  // ---- lexing -------------------------------------------------------------------------------------
  Status Err(size_t at, const std::string& msg) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return InvalidInput(fmt::format("{}:{}:{}: {}", src_, line, col, OneLine(msg, 1000)));
  }
  char Peek(size_t k = 0) const { return p_ + k < end_ ? s_[p_ + k] : '\0'; }
  bool AtEnd() const { return p_ >= end_; }
  // Skips blanks, newlines and /* */ or // comments.
  void SkipWs() {
    while (p_ < end_) {
      char c = s_[p_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        ++p_;
      } else if (c == '/' && Peek(1) == '*') {
        size_t close = s_.find("*/", p_ + 2);
        p_ = (close == std::string_view::npos || close + 2 > end_) ? end_ : close + 2;
      } else if (c == '/' && Peek(1) == '/') {
        while (p_ < end_ && s_[p_] != '\n') ++p_;
      } else {
        break;
      }
    }
  }
  // Skips blanks and /* */ comments on the current line.
  void SkipInlineWs() {
    while (p_ < end_) {
      char c = s_[p_];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++p_;
      } else if (c == '/' && Peek(1) == '*') {
        size_t close = s_.find("*/", p_ + 2);
        p_ = (close == std::string_view::npos || close + 2 > end_) ? end_ : close + 2;
      } else {
        break;
      }
    }
  }
  bool TryConsume(char c) {
    SkipWs();
    if (Peek() == c) {
      ++p_;
      return true;
    }
    return false;
  }
  Status Expect(char c, std::string_view what) {
    size_t before = p_;
    SkipWs();
    if (Peek() != c) {
      // When the expected character is missing at the end of a line, point at the line, not the next one.
      bool crossed_line = s_.substr(before, p_ - before).find('\n') != std::string_view::npos;
      size_t at = crossed_line ? before : p_;
      if (crossed_line) p_ = before;
      return Err(at, fmt::format("expected '{}' {}, got {}", c, what, Describe()));
    }
    ++p_;
    return Status::Ok();
  }
  std::string Describe() const {
    if (p_ >= end_) return "end of input";
    size_t n = 0;
    while (p_ + n < end_ && n < 16 && s_[p_ + n] != '\n') ++n;
    return Quote(s_.substr(p_, n));
  }
  // A name, with an optional leading '%' dropped.
  std::string ReadName() {
    SkipWs();
    size_t start = p_;
    if (Peek() == '%') ++p_;
    size_t name_start = p_;
    while (p_ < end_ && IsNameChar(s_[p_])) ++p_;
    if (p_ == name_start) {
      p_ = start;
      return {};
    }
    return std::string(s_.substr(name_start, p_ - name_start));
  }
  bool LookingAtWord(std::string_view w) const {
    if (s_.substr(p_, w.size()) != w || p_ + w.size() > end_) return false;
    char next = p_ + w.size() < end_ ? s_[p_ + w.size()] : ' ';
    return !IsNameChar(next);
  }
  std::string_view ReadWord() {
    SkipWs();
    size_t start = p_;
    while (p_ < end_ && IsNameChar(s_[p_])) ++p_;
    return s_.substr(start, p_ - start);
  }
  Expected<int64_t> ParseInt() {
    SkipWs();
    size_t start = p_;
    bool neg = false;
    if (Peek() == '-' || Peek() == '+') {
      neg = Peek() == '-';
      ++p_;
    }
    if (!IsDigit(Peek())) {
      p_ = start;
      return Err(start, fmt::format("expected an integer, got {}", Describe()));
    }
    unsigned __int128 v = 0;
    while (IsDigit(Peek())) {
      v = v * 10 + static_cast<unsigned>(s_[p_] - '0');
      if (v > static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max()) + 1)
        return Err(start, "integer does not fit in 64 bits");
      ++p_;
    }
    if (!neg && v > static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max()))
      return Err(start, "integer does not fit in 64 bits");
    return neg ? static_cast<int64_t>(-static_cast<__int128>(v)) : static_cast<int64_t>(v);
  }
  // Reads a value verbatim up to the next ',' or newline outside brackets and quotes.
  // One attribute value: brackets and quotes balanced; outside them it ends at ',' or whitespace (so a
  // value may start on the next line, and the line layout never matters).
  std::string_view CaptureValue() {
    SkipWs();
    size_t start = p_;
    int depth = 0;
    while (p_ < end_) {
      char c = s_[p_];
      if (c == '"') {
        ++p_;
        while (p_ < end_ && s_[p_] != '"') p_ += s_[p_] == '\\' ? 2 : 1;
        if (p_ < end_) ++p_;
        continue;
      }
      if (c == '{' || c == '(' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ')' || c == ']') {
        if (depth == 0) break;
        --depth;
      } else if (depth == 0 && (c == ',' || c == '\n' || c == ' ' || c == '\t' || c == '\r')) {
        break;
      }
      ++p_;
    }
    if (p_ > end_) p_ = end_;
    size_t stop = p_;
    while (stop > start && (s_[stop - 1] == ' ' || s_[stop - 1] == '\t' || s_[stop - 1] == '\r')) --stop;
    return s_.substr(start, stop - start);
  }

  // Runs `fn` with the input limited to [begin, begin + len); the whole range must be consumed.
  template <typename Fn>
  Status WithRange(size_t begin, size_t len, Fn fn) {
    size_t saved_p = p_, saved_end = end_;
    p_ = begin;
    end_ = begin + len;
    Status st = fn();
    if (st.ok()) {
      SkipWs();
      if (p_ < end_) st = Err(p_, fmt::format("unexpected {} in attribute value", Describe()));
    }
    p_ = saved_p;
    end_ = saved_end;
    return st;
  }

  // ---- shapes ----------------------------------------------------------------------------------------
  Expected<Shape> ParseShape(int depth);
  Status ParseLayout(Shape& shape);
  bool LooksLikeShape() const;

  // ---- literals --------------------------------------------------------------------------------------
  Expected<Literal> ParseLiteral(const Shape& shape, int depth);
  Status ParseArrayElements(const Shape& shape, size_t dim, std::vector<std::pair<std::string_view, size_t>>& out,
                            int depth);
  std::string_view ReadElementToken();
  Status SetElement(Literal& lit, int64_t index, std::string_view text, size_t pos);

  // ---- attributes ------------------------------------------------------------------------------------
  Expected<std::vector<int64_t>> ParseIntList();
  Expected<std::string> ParseQuoted();
  Status ParseWindow(Window& w);
  Status ParseDimLabels(ConvolutionDimensionNumbers& d);
  Status ParseSlice(SliceDimensions& s);
  Status ParsePadding(PaddingConfig& c);
  Status ParseMetadata(OpMetadata& m, bool& has_unknown_fields);
  Status ParseAttribute(Instruction& in, const std::string& key, size_t key_pos, std::string_view value,
                        size_t value_pos, std::vector<PendingCall>& calls);
  Status ParseCalledList(Instruction& in, std::vector<PendingCall>& calls);

  // ---- structure -------------------------------------------------------------------------------------
  Status ParseComputation(Module& module, std::vector<PendingCall>& calls, Computation*& entry);
  Status ParseInstruction(Computation& comp, std::vector<std::vector<PendingOperand>>& operands,
                          std::vector<size_t>& positions, std::vector<PendingCall>& calls, bool& is_root);
  // Shapes the text left out (`t = tuple(a, b)`), once operands and called computations are known.
  Status InferShapes(Module& module);
  Status ParseInstructionRhs(Computation& comp, const std::string& name, size_t name_pos, size_t start,
                             std::optional<Shape> shape, std::vector<std::vector<PendingOperand>>& operands,
                             std::vector<size_t>& positions, std::vector<PendingCall>& calls, int depth,
                             Instruction*& added);
  std::string SyntheticName(const std::string& base);

  std::string_view s_;
  size_t p_;
  size_t end_;
  const std::string& src_;
  std::unordered_map<const Instruction*, size_t> infer_;  // instructions without a written shape -> position
  std::set<std::string> names_in_computation_;  // names the text gives in the computation being parsed
  int64_t synthetic_count_ = 0;
};

// ---------------------------------------------------------------------------------------------------
// Shapes

bool Parser::LooksLikeShape() const {
  size_t q = p_;
  if (q < end_ && s_[q] == '(') return true;
  size_t start = q;
  while (q < end_ && ((s_[q] >= 'a' && s_[q] <= 'z') || IsDigit(s_[q]))) ++q;
  if (q == start || q >= end_ || s_[q] != '[') return false;
  return PrimitiveTypeFromName(s_.substr(start, q - start)).has_value();
}

Expected<Shape> Parser::ParseShape(int depth) {
  SkipWs();
  size_t start = p_;
  if (depth > kMaxDepth) return Err(p_, "shape nested too deeply");
  if (Peek() == '(') {
    ++p_;
    std::vector<Shape> elements;
    SkipWs();
    if (Peek() == ')') {
      ++p_;
      return Shape::Tuple({});
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
    return Shape::Tuple(std::move(elements));
  }
  size_t name_start = p_;
  while (p_ < end_ && ((s_[p_] >= 'a' && s_[p_] <= 'z') || IsDigit(s_[p_]) || s_[p_] == '_')) ++p_;
  std::string_view type_name = s_.substr(name_start, p_ - name_start);
  if (type_name.empty()) return Err(p_, fmt::format("expected a shape, got {}", Describe()));
  auto type = PrimitiveTypeFromName(type_name);
  if (!type || *type == PrimitiveType::TUPLE)
    return Err(name_start, fmt::format("unknown element type {}", Quote(type_name)));
  if (Peek() != '[') return Err(p_, fmt::format("expected '[' after element type {}", type_name));
  ++p_;
  std::vector<int64_t> dims;
  std::vector<int> dynamic;
  SkipWs();
  if (Peek() != ']') {
    while (true) {
      SkipWs();
      bool is_dynamic = false;
      if (Peek() == '<' && Peek(1) == '=') {
        is_dynamic = true;
        p_ += 2;
      } else if (Peek() == '?') {
        return Err(p_, "unbounded dynamic dimensions ('?') are not supported");
      }
      size_t dim_pos = p_;
      auto d = ParseInt();
      if (!d.ok()) return d.status();
      if (*d < 0) return Err(dim_pos, "negative dimension");
      if (is_dynamic) dynamic.push_back(static_cast<int>(dims.size()));
      dims.push_back(*d);
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
  Shape shape;
  if (*type == PrimitiveType::TOKEN) {
    if (!dims.empty()) return Err(start, "token shapes have no dimensions");
    shape = Shape::Token();
  } else {
    shape.set_element_type(*type);
    shape.mutable_dimensions() = dims;
    for (int i : dynamic) shape.set_dynamic_dimension(i, true);
    if (shape.IsArray()) {
      auto count = shape.ElementCount();
      if (!count.ok()) return Err(start, count.status().message());
    }
  }
  if (Peek() == '{') {
    OPPROBE_RETURN_IF_ERROR(ParseLayout(shape));
  }
  return shape;
}

Status Parser::ParseLayout(Shape& shape) {
  size_t start = p_;
  ++p_;  // '{'
  std::vector<int64_t> m2m;
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
      std::vector<bool> seen(m2m.size(), false);
      for (int64_t d : m2m) {
        if (d < 0 || d >= shape.rank() || seen[static_cast<size_t>(d)])
          return Err(start, "layout is not a permutation of the dimensions");
        seen[static_cast<size_t>(d)] = true;
      }
    } else if (shape.rank() != 0 && suffix.empty()) {
      return Err(start, "empty layout on a non-scalar shape");
    }
  }
  shape.set_layout(std::move(m2m));
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
  while (p_ < end_) {
    char c = s_[p_];
    if (c == ',' || c == '}' || c == ' ' || c == '\t' || c == '\n' || c == '\r') break;
    if (c == ')') {
      // `nan(0x7f)` keeps its parenthesis; a bare ')' ends the element.
      if (s_.substr(start, p_ - start).find('(') == std::string_view::npos) break;
    }
    ++p_;
  }
  return s_.substr(start, p_ - start);
}

Status Parser::ParseArrayElements(const Shape& shape, size_t dim,
                                  std::vector<std::pair<std::string_view, size_t>>& out, int depth) {
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

Status Parser::SetElement(Literal& lit, int64_t i, std::string_view text, size_t pos) {
  PrimitiveType t = lit.shape().element_type();
  std::string tok(text);
  if (t == PrimitiveType::PRED) {
    if (tok == "true" || tok == "1") lit.Set<uint8_t>(i, 1);
    else if (tok == "false" || tok == "0") lit.Set<uint8_t>(i, 0);
    else return Err(pos, fmt::format("{} is not a pred value", Quote(tok)));
    return Status::Ok();
  }
  if (IsInteger(t)) {
    char* endp = nullptr;
    errno = 0;
    if (IsSignedInteger(t)) {
      long long v = std::strtoll(tok.c_str(), &endp, 10);
      if (errno || !endp || *endp || tok.empty()) return Err(pos, fmt::format("{} is not an integer", Quote(tok)));
      int bits = BitWidth(t);
      if (bits < 64) {
        long long lo = -(1LL << (bits - 1)), hi = (1LL << (bits - 1)) - 1;
        if (v < lo || v > hi) return Err(pos, fmt::format("{} does not fit in {}", tok, PrimitiveTypeName(t)));
      }
      switch (t) {
        case PrimitiveType::S4: case PrimitiveType::S8: lit.Set<int8_t>(i, static_cast<int8_t>(v)); break;
        case PrimitiveType::S16: lit.Set<int16_t>(i, static_cast<int16_t>(v)); break;
        case PrimitiveType::S32: lit.Set<int32_t>(i, static_cast<int32_t>(v)); break;
        default: lit.Set<int64_t>(i, v);
      }
    } else {
      if (!tok.empty() && tok[0] == '-') return Err(pos, fmt::format("{} is negative for {}", tok, PrimitiveTypeName(t)));
      unsigned long long v = std::strtoull(tok.c_str(), &endp, 10);
      if (errno || !endp || *endp || tok.empty()) return Err(pos, fmt::format("{} is not an integer", Quote(tok)));
      int bits = BitWidth(t);
      if (bits < 64 && v > ((1ULL << bits) - 1))
        return Err(pos, fmt::format("{} does not fit in {}", tok, PrimitiveTypeName(t)));
      switch (t) {
        case PrimitiveType::U4: case PrimitiveType::U8: lit.Set<uint8_t>(i, static_cast<uint8_t>(v)); break;
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
      return Err(pos, fmt::format("{} is not a complex value (re, im)", Quote(tok)));
    body = body.substr(1, body.size() - 2);
    size_t comma = body.find(',');
    if (comma == std::string_view::npos) return Err(pos, fmt::format("{} is not a complex value (re, im)", Quote(tok)));
    auto trim = [](std::string_view v) {
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
      return v;
    };
    double re, im;
    if (!ParseDoubleText(trim(body.substr(0, comma)), &re) || !ParseDoubleText(trim(body.substr(comma + 1)), &im))
      return Err(pos, fmt::format("{} is not a complex value (re, im)", Quote(tok)));
    lit.SetFromComplex(i, {re, im});
    return Status::Ok();
  }
  if (IsFloatingPoint(t)) {
    if (t == PrimitiveType::F32) {
      double d;
      if (!ParseDoubleText(tok, &d)) return Err(pos, fmt::format("{} is not a number", Quote(tok)));
      float f = std::isfinite(d) ? std::strtof(tok.c_str(), nullptr) : static_cast<float>(d);
      lit.Set<float>(i, f);
      return Status::Ok();
    }
    double d;
    if (!ParseDoubleText(tok, &d)) return Err(pos, fmt::format("{} is not a number", Quote(tok)));
    lit.SetFromDouble(i, d);
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
  std::vector<std::pair<std::string_view, size_t>> elements;
  SkipWs();
  if (shape.rank() > 0 && Peek() != '{') {
    // `s32[3,3] constant(1)`: one value for every element. Bounded, since the text no longer bounds the size.
    size_t pos = p_;
    std::string_view tok = ReadElementToken();
    if (tok.empty()) return Err(pos, fmt::format("expected a constant value, got {}", Describe()));
    int64_t width = std::max<int64_t>(ByteWidth(shape.element_type()), 1);
    if (shape.elements() > (int64_t{64} << 20) / width)
      return Err(pos, fmt::format("a scalar constant for shape {} would take more than 64 MiB", shape.ToString()));
    Literal lit(shape);
    OPPROBE_RETURN_IF_ERROR(SetElement(lit, 0, tok, pos));
    const int64_t es = ByteWidth(shape.element_type());
    for (int64_t k = 1; k < shape.elements(); ++k)
      std::memcpy(lit.data().data() + k * es, lit.data().data(), static_cast<size_t>(es));
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

// ---------------------------------------------------------------------------------------------------
// Attribute values

Expected<std::vector<int64_t>> Parser::ParseIntList() {
  OPPROBE_RETURN_IF_ERROR(Expect('{', "to open a list"));
  std::vector<int64_t> out;
  SkipWs();
  if (Peek() == '}') {
    ++p_;
    return out;
  }
  while (true) {
    auto v = ParseInt();
    if (!v.ok()) return v.status();
    out.push_back(*v);
    SkipWs();
    if (Peek() == ',') {
      ++p_;
      continue;
    }
    if (Peek() == '}') {
      ++p_;
      return out;
    }
    return Err(p_, fmt::format("expected ',' or '}}' in list, got {}", Describe()));
  }
}

Expected<std::string> Parser::ParseQuoted() {
  SkipWs();
  if (Peek() != '"') return Err(p_, fmt::format("expected a quoted string, got {}", Describe()));
  size_t start = p_;
  ++p_;
  std::string out;
  while (true) {
    if (p_ >= end_) return Err(start, "unterminated string");
    char c = s_[p_++];
    if (c == '"') break;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (p_ >= end_) return Err(start, "unterminated string");
    char e = s_[p_++];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\': out += '\\'; break;
      case '"': out += '"'; break;
      case '\'': out += '\''; break;
      case '?': out += '?'; break;
      case 'x': {
        int v = 0, n = 0;
        while (n < 2 && p_ < end_ && std::isxdigit(static_cast<unsigned char>(s_[p_]))) {
          char h = s_[p_++];
          v = v * 16 + (IsDigit(h) ? h - '0' : (std::tolower(h) - 'a' + 10));
          ++n;
        }
        out += static_cast<char>(v);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          int v = e - '0', n = 1;
          while (n < 3 && p_ < end_ && s_[p_] >= '0' && s_[p_] <= '7') {
            v = v * 8 + (s_[p_++] - '0');
            ++n;
          }
          out += static_cast<char>(v);
        } else {
          return Err(p_ - 2, fmt::format("unknown escape {}", Quote(s_.substr(p_ - 2, 2))));
        }
    }
  }
  return out;
}

Status Parser::ParseWindow(Window& w) {
  OPPROBE_RETURN_IF_ERROR(Expect('{', "to open a window"));
  std::map<std::string, std::vector<std::string>> fields;
  SkipWs();
  while (Peek() != '}') {
    if (AtEnd()) return Err(p_, "unterminated window");
    size_t kpos = p_;
    std::string key(ReadWord());
    if (key.empty()) return Err(kpos, fmt::format("expected a window field, got {}", Describe()));
    OPPROBE_RETURN_IF_ERROR(Expect('=', "after window field"));
    SkipWs();
    size_t vstart = p_;
    while (p_ < end_ && (IsNameChar(s_[p_]))) ++p_;
    std::string value(s_.substr(vstart, p_ - vstart));
    std::vector<std::string> parts;
    size_t b = 0;
    while (true) {
      size_t x = value.find('x', b);
      parts.push_back(value.substr(b, x == std::string::npos ? std::string::npos : x - b));
      if (x == std::string::npos) break;
      b = x + 1;
    }
    if (fields.count(key)) return Err(kpos, fmt::format("window field {} given twice", key));
    fields[key] = parts;
    SkipWs();
  }
  ++p_;
  if (fields.empty()) return Status::Ok();
  if (!fields.count("size")) return Err(p_, "window has no size");
  size_t rank = fields["size"].size();
  w.dimensions.assign(rank, WindowDimension{});
  auto to_int = [&](const std::string& t, int64_t* v) {
    char* e = nullptr;
    errno = 0;
    long long x = std::strtoll(t.c_str(), &e, 10);
    if (errno || !e || *e || t.empty()) return false;
    *v = x;
    return true;
  };
  for (const auto& [key, parts] : fields) {
    if (parts.size() != rank) return Err(p_, fmt::format("window field {} has {} entries, size has {}", key, parts.size(), rank));
    for (size_t i = 0; i < rank; ++i) {
      WindowDimension& d = w.dimensions[i];
      int64_t v = 0;
      if (key == "pad") {
        size_t u = parts[i].find('_');
        int64_t lo, hi;
        if (u == std::string::npos || !to_int(parts[i].substr(0, u), &lo) || !to_int(parts[i].substr(u + 1), &hi))
          return Err(p_, fmt::format("bad window padding {}", Quote(parts[i])));
        d.padding_low = lo;
        d.padding_high = hi;
        continue;
      }
      if (!to_int(parts[i], &v)) return Err(p_, fmt::format("bad window {} {}", key, Quote(parts[i])));
      if (key == "size") d.size = v;
      else if (key == "stride") d.stride = v;
      else if (key == "lhs_dilate") d.base_dilation = v;
      else if (key == "rhs_dilate") d.window_dilation = v;
      else if (key == "rhs_reversal") d.window_reversal = v != 0;
      else return Err(p_, fmt::format("unknown window field {}", Quote(key)));
    }
  }
  return Status::Ok();
}

Status Parser::ParseDimLabels(ConvolutionDimensionNumbers& d) {
  SkipWs();
  size_t start = p_;
  while (p_ < end_ && (IsNameChar(s_[p_]) || s_[p_] == '>')) ++p_;
  std::string text(s_.substr(start, p_ - start));
  size_t u = text.find('_'), arrow = text.find("->");
  if (u == std::string::npos || arrow == std::string::npos || arrow < u)
    return Err(start, fmt::format("bad dim_labels {}", Quote(text)));
  std::string lhs = text.substr(0, u), rhs = text.substr(u + 1, arrow - u - 1), out = text.substr(arrow + 2);
  if (lhs.size() != rhs.size() || lhs.size() != out.size() || lhs.size() < 2)
    return Err(start, fmt::format("dim_labels {} have different ranks", Quote(text)));
  size_t spatial = lhs.size() - 2;
  auto parse = [&](const std::string& labels, char a, char b, int64_t& da, int64_t& db,
                   std::vector<int64_t>& sp) -> bool {
    da = db = -1;
    sp.assign(spatial, -1);
    for (size_t i = 0; i < labels.size(); ++i) {
      char c = labels[i];
      if (c == a && da < 0) da = static_cast<int64_t>(i);
      else if (c == b && db < 0) db = static_cast<int64_t>(i);
      else if (IsDigit(c) && static_cast<size_t>(c - '0') < spatial && sp[static_cast<size_t>(c - '0')] < 0)
        sp[static_cast<size_t>(c - '0')] = static_cast<int64_t>(i);
      else return false;
    }
    return da >= 0 && db >= 0 && std::none_of(sp.begin(), sp.end(), [](int64_t v) { return v < 0; });
  };
  if (!parse(lhs, 'b', 'f', d.input_batch_dimension, d.input_feature_dimension, d.input_spatial_dimensions) ||
      !parse(rhs, 'i', 'o', d.kernel_input_feature_dimension, d.kernel_output_feature_dimension,
             d.kernel_spatial_dimensions) ||
      !parse(out, 'b', 'f', d.output_batch_dimension, d.output_feature_dimension, d.output_spatial_dimensions))
    return Err(start, fmt::format("bad dim_labels {}", Quote(text)));
  return Status::Ok();
}

Status Parser::ParseSlice(SliceDimensions& s) {
  OPPROBE_RETURN_IF_ERROR(Expect('{', "to open slice"));
  SkipWs();
  if (Peek() == '}') {
    ++p_;
    return Status::Ok();
  }
  while (true) {
    OPPROBE_RETURN_IF_ERROR(Expect('[', "to open a slice dimension"));
    auto a = ParseInt();
    if (!a.ok()) return a.status();
    OPPROBE_RETURN_IF_ERROR(Expect(':', "in a slice dimension"));
    auto b = ParseInt();
    if (!b.ok()) return b.status();
    int64_t stride = 1;
    if (TryConsume(':')) {
      auto c = ParseInt();
      if (!c.ok()) return c.status();
      stride = *c;
    }
    OPPROBE_RETURN_IF_ERROR(Expect(']', "to close a slice dimension"));
    s.starts.push_back(*a);
    s.limits.push_back(*b);
    s.strides.push_back(stride);
    SkipWs();
    if (Peek() == ',') {
      ++p_;
      continue;
    }
    return Expect('}', "to close slice");
  }
}

Status Parser::ParsePadding(PaddingConfig& c) {
  SkipWs();
  size_t start = p_;
  while (p_ < end_ && (IsNameChar(s_[p_]))) ++p_;
  std::string text(s_.substr(start, p_ - start));
  if (text.empty()) return Err(start, "expected padding");
  size_t b = 0;
  while (true) {
    size_t x = text.find('x', b);
    std::string part = text.substr(b, x == std::string::npos ? std::string::npos : x - b);
    std::vector<int64_t> nums;
    size_t q = 0;
    while (q <= part.size()) {
      size_t u = part.find('_', q);
      std::string n = part.substr(q, u == std::string::npos ? std::string::npos : u - q);
      char* e = nullptr;
      errno = 0;
      long long v = std::strtoll(n.c_str(), &e, 10);
      if (errno || !e || *e || n.empty()) return Err(start, fmt::format("bad padding {}", Quote(text)));
      nums.push_back(v);
      if (u == std::string::npos) break;
      q = u + 1;
    }
    if (nums.size() != 2 && nums.size() != 3) return Err(start, fmt::format("bad padding {}", Quote(text)));
    c.dimensions.push_back({nums[0], nums[1], nums.size() == 3 ? nums[2] : 0});
    if (x == std::string::npos) break;
    b = x + 1;
  }
  return Status::Ok();
}

Status Parser::ParseMetadata(OpMetadata& m, bool& has_unknown) {
  OPPROBE_RETURN_IF_ERROR(Expect('{', "to open metadata"));
  SkipWs();
  while (Peek() != '}') {
    if (AtEnd()) return Err(p_, "unterminated metadata");
    size_t kpos = p_;
    std::string key(ReadWord());
    if (key.empty()) return Err(kpos, fmt::format("expected a metadata field, got {}", Describe()));
    OPPROBE_RETURN_IF_ERROR(Expect('=', "after metadata field"));
    SkipWs();
    if (key == "op_type" || key == "op_name" || key == "source_file") {
      auto v = ParseQuoted();
      if (!v.ok()) return v.status();
      (key == "op_type" ? m.op_type : key == "op_name" ? m.op_name : m.source_file) = *v;
    } else if (key == "source_line") {
      auto v = ParseInt();
      if (!v.ok()) return v.status();
      if (*v < std::numeric_limits<int32_t>::min() || *v > std::numeric_limits<int32_t>::max())
        return Err(kpos, "source_line does not fit in 32 bits");
      m.source_line = static_cast<int32_t>(*v);
    } else {
      has_unknown = true;
      if (Peek() == '"') {
        auto v = ParseQuoted();
        if (!v.ok()) return v.status();
      } else if (Peek() == '{') {
        int depth = 0;
        while (p_ < end_) {
          char c = s_[p_++];
          if (c == '{') ++depth;
          if (c == '}' && --depth == 0) break;
        }
      } else {
        while (p_ < end_ && s_[p_] != '}' && s_[p_] != ' ' && s_[p_] != '\n' && s_[p_] != ',') ++p_;
      }
    }
    SkipWs();
    if (Peek() == ',') {  // XLA also accepts fields separated by commas
      ++p_;
      SkipWs();
    }
  }
  ++p_;
  return Status::Ok();
}

Status Parser::ParseCalledList(Instruction& in, std::vector<PendingCall>& calls) {
  OPPROBE_RETURN_IF_ERROR(Expect('{', "to open a computation list"));
  SkipWs();
  if (Peek() == '}') {
    ++p_;
    return Status::Ok();
  }
  while (true) {
    SkipWs();
    size_t pos = p_;
    std::string name = ReadName();
    if (name.empty()) return Err(pos, "expected a computation name");
    calls.push_back({&in, in.called_computations.size(), name, pos});
    in.called_computations.push_back(nullptr);
    SkipWs();
    if (Peek() == ',') {
      ++p_;
      continue;
    }
    return Expect('}', "to close a computation list");
  }
}

bool UsesDimensions(Opcode op) {
  switch (op) {
    case Opcode::kBroadcast: case Opcode::kTranspose: case Opcode::kReverse: case Opcode::kConcatenate:
    case Opcode::kReduce: case Opcode::kMap: case Opcode::kSort: case Opcode::kSetDimensionSize:
    case Opcode::kGetDimensionSize:
      return true;
    default:
      return false;
  }
}

Status Parser::ParseAttribute(Instruction& in, const std::string& key, size_t key_pos, std::string_view value,
                              size_t value_pos, std::vector<PendingCall>& calls) {
  const Opcode op = in.opcode;
  const bool known = in.unknown_opcode.empty();
  auto keep = [&]() {
    in.extra_attributes.emplace_back(key, std::string(value));
    return Status::Ok();
  };
  auto run = [&](auto fn) { return WithRange(value_pos, value.size(), fn); };
  auto int_attr = [&](int64_t& field) {
    return run([&]() -> Status {
      auto v = ParseInt();
      if (!v.ok()) return v.status();
      field = *v;
      return Status::Ok();
    });
  };
  auto list_attr = [&](std::vector<int64_t>& field) {
    return run([&]() -> Status {
      auto v = ParseIntList();
      if (!v.ok()) return v.status();
      field = std::move(*v);
      return Status::Ok();
    });
  };
  auto bool_attr = [&](bool& field) -> Status {
    if (value == "true") field = true;
    else if (value == "false") field = false;
    else return Err(value_pos, fmt::format("{} must be true or false", key));
    return Status::Ok();
  };
  auto call_attr = [&](size_t slot) -> Status {
    return run([&]() -> Status {
      SkipWs();
      size_t pos = p_;
      std::string name = ReadName();
      if (name.empty()) return Err(pos, "expected a computation name");
      if (in.called_computations.size() <= slot) in.called_computations.resize(slot + 1, nullptr);
      calls.push_back({&in, slot, name, pos});
      return Status::Ok();
    });
  };

  if (key == "metadata") {
    bool unknown_fields = false;
    OpMetadata m;
    OPPROBE_RETURN_IF_ERROR(run([&]() { return ParseMetadata(m, unknown_fields); }));
    in.metadata = m;
    if (unknown_fields) return keep();
    return Status::Ok();
  }
  if (!known) return keep();

  // Called computations.
  if (key == "to_apply" || (key == "calls" && op != Opcode::kCustomCall)) return call_attr(0);
  if (op == Opcode::kWhile && key == "body") return call_attr(0);
  if (op == Opcode::kWhile && key == "condition") return call_attr(1);
  if (op == Opcode::kSelectAndScatter && key == "select") return call_attr(0);
  if (op == Opcode::kSelectAndScatter && key == "scatter") return call_attr(1);
  if (op == Opcode::kConditional && key == "true_computation") return call_attr(0);
  if (op == Opcode::kConditional && key == "false_computation") return call_attr(1);
  if ((op == Opcode::kConditional && key == "branch_computations") ||
      (op == Opcode::kCustomCall && key == "called_computations"))
    return run([&]() { return ParseCalledList(in, calls); });

  if (key == "dimensions" && UsesDimensions(op)) return list_attr(in.dimensions);
  switch (op) {
    case Opcode::kSort:
      if (key == "is_stable") return bool_attr(in.is_stable);
      break;
    case Opcode::kSlice:
      if (key == "slice") {
        SliceDimensions s;
        OPPROBE_RETURN_IF_ERROR(run([&]() { return ParseSlice(s); }));
        in.slice = s;
        return Status::Ok();
      }
      break;
    case Opcode::kDynamicSlice:
      if (key == "dynamic_slice_sizes") return list_attr(in.dynamic_slice_sizes);
      break;
    case Opcode::kPad:
      if (key == "padding") {
        PaddingConfig c;
        OPPROBE_RETURN_IF_ERROR(run([&]() { return ParsePadding(c); }));
        in.padding_config = c;
        return Status::Ok();
      }
      break;
    case Opcode::kIota:
      if (key == "iota_dimension") return int_attr(in.iota_dimension);
      break;
    case Opcode::kGetTupleElement:
      if (key == "index") return int_attr(in.tuple_index);
      break;
    case Opcode::kCompare:
      if (key == "direction") {
        auto d = ComparisonDirectionFromName(value);
        if (!d) return Err(value_pos, fmt::format("unknown comparison direction {}", Quote(value)));
        in.comparison_direction = *d;
        return Status::Ok();
      }
      if (key == "type") {
        if (value != "FLOAT" && value != "TOTALORDER" && value != "SIGNED" && value != "UNSIGNED")
          return Err(value_pos, fmt::format("unknown comparison type {}", Quote(value)));
        in.comparison_type = std::string(value);
        return Status::Ok();
      }
      break;
    case Opcode::kConvolution:
      if (key == "dim_labels") {
        ConvolutionDimensionNumbers d;
        OPPROBE_RETURN_IF_ERROR(run([&]() { return ParseDimLabels(d); }));
        in.convolution_dimension_numbers = d;
        return Status::Ok();
      }
      if (key == "feature_group_count") return int_attr(in.feature_group_count);
      if (key == "batch_group_count") return int_attr(in.batch_group_count);
      break;
    case Opcode::kDot:
      if (key == "lhs_contracting_dims" || key == "rhs_contracting_dims" || key == "lhs_batch_dims" ||
          key == "rhs_batch_dims") {
        if (!in.dot_dimension_numbers) in.dot_dimension_numbers.emplace();
        auto& d = *in.dot_dimension_numbers;
        return list_attr(key == "lhs_contracting_dims"   ? d.lhs_contracting_dimensions
                         : key == "rhs_contracting_dims" ? d.rhs_contracting_dimensions
                         : key == "lhs_batch_dims"       ? d.lhs_batch_dimensions
                                                         : d.rhs_batch_dimensions);
      }
      break;
    case Opcode::kGather:
      if (key == "offset_dims" || key == "collapsed_slice_dims" || key == "start_index_map" ||
          key == "operand_batching_dims" || key == "start_indices_batching_dims") {
        if (!in.gather_dimension_numbers) in.gather_dimension_numbers.emplace();
        auto& g = *in.gather_dimension_numbers;
        return list_attr(key == "offset_dims"             ? g.offset_dims
                         : key == "collapsed_slice_dims"  ? g.collapsed_slice_dims
                         : key == "start_index_map"       ? g.start_index_map
                         : key == "operand_batching_dims" ? g.operand_batching_dims
                                                          : g.start_indices_batching_dims);
      }
      if (key == "index_vector_dim") {
        if (!in.gather_dimension_numbers) in.gather_dimension_numbers.emplace();
        return int_attr(in.gather_dimension_numbers->index_vector_dim);
      }
      if (key == "slice_sizes") return list_attr(in.gather_slice_sizes);
      if (key == "indices_are_sorted") return bool_attr(in.indices_are_sorted);
      break;
    case Opcode::kScatter:
      if (key == "update_window_dims" || key == "inserted_window_dims" || key == "scatter_dims_to_operand_dims" ||
          key == "input_batching_dims" || key == "scatter_indices_batching_dims") {
        if (!in.scatter_dimension_numbers) in.scatter_dimension_numbers.emplace();
        auto& s = *in.scatter_dimension_numbers;
        return list_attr(key == "update_window_dims"             ? s.update_window_dims
                         : key == "inserted_window_dims"         ? s.inserted_window_dims
                         : key == "scatter_dims_to_operand_dims" ? s.scatter_dims_to_operand_dims
                         : key == "input_batching_dims"          ? s.input_batching_dims
                                                                 : s.scatter_indices_batching_dims);
      }
      if (key == "index_vector_dim") {
        if (!in.scatter_dimension_numbers) in.scatter_dimension_numbers.emplace();
        return int_attr(in.scatter_dimension_numbers->index_vector_dim);
      }
      if (key == "indices_are_sorted") return bool_attr(in.indices_are_sorted);
      if (key == "unique_indices") return bool_attr(in.unique_indices);
      break;
    case Opcode::kFft:
      if (key == "fft_type") {
        auto t = FftTypeFromName(value);
        if (!t) return Err(value_pos, fmt::format("unknown fft_type {}", Quote(value)));
        in.fft_type = *t;
        return Status::Ok();
      }
      if (key == "fft_length") return list_attr(in.fft_length);
      break;
    case Opcode::kReducePrecision:
      if (key == "exponent_bits" || key == "mantissa_bits") {
        int64_t v = 0;
        OPPROBE_RETURN_IF_ERROR(int_attr(v));
        if (v < 0 || v > 1000) return Err(value_pos, fmt::format("{} out of range", key));
        (key == "exponent_bits" ? in.exponent_bits : in.mantissa_bits) = static_cast<int32_t>(v);
        return Status::Ok();
      }
      break;
    case Opcode::kBatchNormTraining: case Opcode::kBatchNormInference: case Opcode::kBatchNormGrad:
      if (key == "epsilon") {
        std::string t(value);
        char* e = nullptr;
        float f = std::strtof(t.c_str(), &e);
        if (!e || *e || t.empty()) return Err(value_pos, fmt::format("bad epsilon {}", Quote(value)));
        in.epsilon = f;
        return Status::Ok();
      }
      if (key == "feature_index") return int_attr(in.feature_index);
      break;
    case Opcode::kRng:
      if (key == "distribution") {
        if (value == "rng_uniform") in.distribution = RandomDistribution::kUniform;
        else if (value == "rng_normal") in.distribution = RandomDistribution::kNormal;
        else return Err(value_pos, fmt::format("unknown distribution {}", Quote(value)));
        return Status::Ok();
      }
      break;
    case Opcode::kRngBitGenerator:
      if (key == "algorithm") {
        if (value != "rng_default" && value != "rng_three_fry" && value != "rng_philox")
          return Err(value_pos, fmt::format("unknown rng algorithm {}", Quote(value)));
        in.rng_algorithm = std::string(value);
        return Status::Ok();
      }
      break;
    case Opcode::kCustomCall:
      if (key == "custom_call_target") {
        return run([&]() -> Status {
          auto v = ParseQuoted();
          if (!v.ok()) return v.status();
          in.custom_call_target = *v;
          return Status::Ok();
        });
      }
      if (key == "backend_config") {
        if (!value.empty() && value.front() == '"') {
          return run([&]() -> Status {
            auto v = ParseQuoted();
            if (!v.ok()) return v.status();
            in.backend_config = *v;
            return Status::Ok();
          });
        }
        in.backend_config = std::string(value);
        return Status::Ok();
      }
      break;
    case Opcode::kCholesky:
      if (key == "lower") return bool_attr(in.cholesky_lower);
      break;
    case Opcode::kTriangularSolve: {
      auto& t = in.triangular_solve_options;
      if (key == "left_side") return bool_attr(t.left_side);
      if (key == "lower") return bool_attr(t.lower);
      if (key == "unit_diagonal") return bool_attr(t.unit_diagonal);
      if (key == "transpose_a") {
        auto v = TransposeAFromName(value);
        if (!v) return Err(value_pos, fmt::format("unknown transpose_a {}", Quote(value)));
        t.transpose_a = *v;
        return Status::Ok();
      }
      break;
    }
    case Opcode::kTopK:
      if (key == "k") return int_attr(in.k);
      if (key == "largest") return bool_attr(in.largest);
      break;
    case Opcode::kFusion:
      if (key == "kind") {
        if (value.empty()) return Err(value_pos, "empty fusion kind");
        in.fusion_kind = std::string(value);
        return Status::Ok();
      }
      break;
    default:
      break;
  }
  if ((op == Opcode::kConvolution || op == Opcode::kReduceWindow || op == Opcode::kSelectAndScatter) &&
      key == "window") {
    Window w;
    OPPROBE_RETURN_IF_ERROR(run([&]() { return ParseWindow(w); }));
    in.window = w;
    return Status::Ok();
  }
  if ((op == Opcode::kConvolution || op == Opcode::kDot) && key == "operand_precision") {
    std::vector<PrecisionLevel> levels;
    Status st = run([&]() -> Status {
      OPPROBE_RETURN_IF_ERROR(Expect('{', "to open operand_precision"));
      SkipWs();
      while (Peek() != '}') {
        size_t pos = p_;
        std::string_view w = ReadWord();
        if (w == "default" || w == "DEFAULT") levels.push_back(PrecisionLevel::kDefault);
        else if (w == "high" || w == "HIGH") levels.push_back(PrecisionLevel::kHigh);
        else if (w == "highest" || w == "HIGHEST") levels.push_back(PrecisionLevel::kHighest);
        else return Err(pos, fmt::format("unknown precision {}", Quote(w)));
        SkipWs();
        if (Peek() == ',') ++p_;
        else if (Peek() != '}') return Err(p_, "expected ',' or '}' in operand_precision");
        SkipWs();
      }
      ++p_;
      return Status::Ok();
    });
    if (!st.ok()) return keep();  // a precision this IR does not model (e.g. packed_nibble)
    in.operand_precision = levels;
    return Status::Ok();
  }
  (void)key_pos;
  return keep();
}

// ---------------------------------------------------------------------------------------------------
// Instructions, computations, modules

Status Parser::ParseInstruction(Computation& comp, std::vector<std::vector<PendingOperand>>& operands,
                                std::vector<size_t>& positions, std::vector<PendingCall>& calls, bool& is_root) {
  SkipWs();
  size_t start = p_;
  is_root = false;
  if (LookingAtWord("ROOT")) {
    is_root = true;
    p_ += 4;
  }
  SkipWs();
  size_t name_pos = p_;
  std::string name = ReadName();
  if (name.empty()) return Err(name_pos, fmt::format("expected an instruction name, got {}", Describe()));
  names_in_computation_.insert(name);
  OPPROBE_RETURN_IF_ERROR(Expect('=', fmt::format("after instruction name {}", name)));
  SkipWs();
  // XLA's parser infers a left-out result shape (`gte = get-tuple-element(t), index=1`); so does InferShapes.
  std::optional<Shape> shape;
  if (LooksLikeShape()) {
    auto parsed = ParseShape(0);
    if (!parsed.ok()) return parsed.status();
    shape = std::move(*parsed);
  }
  Instruction* added = nullptr;
  return ParseInstructionRhs(comp, name, name_pos, start, std::move(shape), operands, positions, calls, 0, added);
}

// A name for an instruction the text does not name (an inline operand, a `%t#1` tuple element).
std::string Parser::SyntheticName(const std::string& base) {
  std::string name;
  do {
    name = fmt::format("{}.{}", base, ++synthetic_count_);
  } while (names_in_computation_.count(name));
  names_in_computation_.insert(name);
  return name;
}

Status Parser::ParseInstructionRhs(Computation& comp, const std::string& name, size_t name_pos, size_t start,
                                   std::optional<Shape> shape, std::vector<std::vector<PendingOperand>>& operands,
                                   std::vector<size_t>& positions, std::vector<PendingCall>& calls, int depth,
                                   Instruction*& added) {
  if (depth > kMaxDepth) return Err(p_, "inline operands nested too deeply");
  const bool infer_shape = !shape.has_value();
  SkipWs();
  size_t op_pos = p_;
  while (p_ < end_ && (IsNameChar(s_[p_]))) ++p_;
  std::string opname(s_.substr(op_pos, p_ - op_pos));
  if (opname.empty()) return Err(op_pos, fmt::format("expected an opcode, got {}", Describe()));
  if (infer_shape && Peek() == '[') return Err(op_pos, fmt::format("unknown element type {}", Quote(opname)));
  auto instr = std::make_unique<Instruction>();
  instr->name = name;
  if (shape) instr->shape = std::move(*shape);
  if (auto op = OpcodeFromName(opname)) {
    instr->opcode = *op;
  } else {
    instr->opcode = Opcode::kCustomCall;
    instr->unknown_opcode = opname;
  }
  if (Peek() != '(') return Err(p_, fmt::format("expected '(' after opcode {}", opname));
  ++p_;
  std::vector<PendingOperand> ops;
  if (instr->opcode == Opcode::kParameter) {
    size_t pos = p_;
    auto n = ParseInt();
    if (!n.ok()) return n.status();
    if (*n < 0) return Err(pos, "negative parameter number");
    instr->parameter_number = *n;
  } else if (instr->opcode == Opcode::kConstant) {
    if (infer_shape) return Err(name_pos, fmt::format("constant {} needs a shape", name));
    auto lit = ParseLiteral(instr->shape, 0);
    if (!lit.ok()) return lit.status();
    instr->literal = std::move(*lit);
  } else {
    SkipWs();
    if (Peek() != ')') {
      while (true) {
        SkipWs();
        std::optional<Shape> operand_shape;
        if (LooksLikeShape()) {
          auto parsed = ParseShape(0);
          if (!parsed.ok()) return parsed.status();
          operand_shape = std::move(*parsed);
        }
        SkipWs();
        size_t pos = p_;
        // An inline operand: `add(p, s32[] constant(1))` defines an unnamed instruction in place.
        size_t q = p_;
        while (q < end_ && IsNameChar(s_[q])) ++q;
        if (q > p_ && q < end_ && s_[q] == '(') {
          std::string inline_name = SyntheticName(std::string(s_.substr(p_, q - p_)));
          Instruction* inner = nullptr;
          OPPROBE_RETURN_IF_ERROR(ParseInstructionRhs(comp, inline_name, pos, pos, std::move(operand_shape), operands,
                                                      positions, calls, depth + 1, inner));
          ops.push_back({inline_name, pos});
        } else {
          std::string operand = ReadName();
          if (operand.empty()) return Err(pos, fmt::format("expected an operand name, got {}", Describe()));
          // `%t#1#0`: element 0 of element 1 of tuple t, an implicit get-tuple-element per index.
          while (Peek() == '#') {
            ++p_;
            size_t index_pos = p_;
            auto index = ParseInt();
            if (!index.ok()) return index.status();
            if (*index < 0) return Err(index_pos, "negative tuple index");
            auto gte = std::make_unique<Instruction>();
            gte->opcode = Opcode::kGetTupleElement;
            gte->name = SyntheticName(operand);
            gte->tuple_index = *index;
            operands.push_back({{operand, pos}});
            positions.push_back(pos);
            infer_.emplace(gte.get(), pos);
            operand = gte->name;
            comp.AddInstruction(std::move(gte));
          }
          ops.push_back({operand, pos});
        }
        SkipWs();
        if (Peek() == ',') {
          ++p_;
          continue;
        }
        break;
      }
    }
  }
  OPPROBE_RETURN_IF_ERROR(Expect(')', fmt::format("to close the operands of {}", name)));
  if (instr->unknown_opcode.empty()) {
    int arity = OpcodeArity(instr->opcode);
    // async-update and async-done pass on every operand of the wrapped computation, as XLA writes them.
    const bool any_count = instr->opcode == Opcode::kAsyncUpdate || instr->opcode == Opcode::kAsyncDone;
    if (arity >= 0 && !any_count && instr->opcode != Opcode::kParameter && instr->opcode != Opcode::kConstant &&
        static_cast<int>(ops.size()) != arity)
      return Err(op_pos, fmt::format("{} takes {} operand(s), {} has {}", opname, arity, name, ops.size()));
  }
  // Attributes. After an inline operand, `, x` is the next operand of the enclosing instruction, not an
  // attribute: only `, key=` continues the attributes there.
  const size_t first_call = calls.size();
  std::set<std::string> seen;
  while (true) {
    size_t save = p_;
    SkipWs();
    if (Peek() != ',') {
      p_ = save;
      break;
    }
    ++p_;
    SkipWs();
    size_t key_pos = p_;
    while (p_ < end_ && (IsNameChar(s_[p_]))) ++p_;
    std::string key(s_.substr(key_pos, p_ - key_pos));
    if (depth > 0) {
      size_t after_key = p_;
      SkipWs();
      bool is_attribute = !key.empty() && Peek() == '=';
      p_ = after_key;
      if (!is_attribute) {
        p_ = save;
        break;
      }
    }
    if (key.empty()) return Err(key_pos, fmt::format("expected an attribute name, got {}", Describe()));
    if (!seen.insert(key).second) return Err(key_pos, fmt::format("attribute {} given twice", key));
    SkipWs();
    if (Peek() != '=') return Err(p_, fmt::format("expected '=' after attribute {}", key));
    ++p_;
    SkipWs();
    size_t value_pos = p_;
    std::string_view value = CaptureValue();
    if (value.empty()) return Err(value_pos, fmt::format("attribute {} has no value", key));
    OPPROBE_RETURN_IF_ERROR(ParseAttribute(*instr, key, key_pos, value, value_pos, calls));
  }
  for (size_t k = 0; k < instr->called_computations.size(); ++k) {
    bool pending = std::any_of(calls.begin() + static_cast<std::ptrdiff_t>(first_call), calls.end(),
                               [&](const PendingCall& c) { return c.instr == instr.get() && c.slot == k; });
    if (!pending) return Err(start, fmt::format("{} is missing a called computation", name));
  }
  if (instr->opcode == Opcode::kWhile && instr->unknown_opcode.empty() && instr->called_computations.size() != 2)
    return Err(op_pos, fmt::format("while {} needs condition= and body=", name));
  if (instr->opcode == Opcode::kSelectAndScatter && instr->called_computations.size() != 2)
    return Err(op_pos, fmt::format("select-and-scatter {} needs select= and scatter=", name));
  operands.push_back(std::move(ops));
  positions.push_back(name_pos);
  if (infer_shape) infer_.emplace(instr.get(), name_pos);
  added = comp.AddInstruction(std::move(instr));
  return Status::Ok();
}

Status Parser::ParseComputation(Module& module, std::vector<PendingCall>& calls, Computation*& entry) {
  SkipWs();
  bool is_entry = false;
  if (LookingAtWord("ENTRY")) {
    is_entry = true;
    p_ += 5;
  }
  SkipWs();
  size_t name_pos = p_;
  std::string name = ReadName();
  if (name.empty()) return Err(name_pos, fmt::format("expected a computation name, got {}", Describe()));
  if (module.FindComputation(name)) return Err(name_pos, fmt::format("computation {} defined twice", name));
  SkipWs();
  if (Peek() == '(') {  // signature: (name: shape, ...) -> shape
    ++p_;
    SkipWs();
    while (Peek() != ')') {
      std::string pname = ReadName();
      if (pname.empty()) return Err(p_, fmt::format("expected a parameter name, got {}", Describe()));
      OPPROBE_RETURN_IF_ERROR(Expect(':', "after a parameter name"));
      auto ps = ParseShape(0);
      if (!ps.ok()) return ps.status();
      SkipWs();
      if (Peek() == ',') {
        ++p_;
        SkipWs();
      } else if (Peek() != ')') {
        return Err(p_, fmt::format("expected ',' or ')' in signature, got {}", Describe()));
      }
    }
    ++p_;
    SkipWs();
    if (!(Peek() == '-' && Peek(1) == '>')) return Err(p_, "expected '->' in computation signature");
    p_ += 2;
    auto rs = ParseShape(0);
    if (!rs.ok()) return rs.status();
  }
  OPPROBE_RETURN_IF_ERROR(Expect('{', fmt::format("to open computation {}", name)));
  auto comp = std::make_unique<Computation>(name);
  names_in_computation_.clear();
  std::vector<std::vector<PendingOperand>> operands;
  std::vector<size_t> positions;
  Instruction* root = nullptr;
  while (true) {
    SkipWs();
    if (AtEnd()) return Err(p_, fmt::format("computation {} is not closed with '}}'", name));
    if (Peek() == '}') {
      ++p_;
      // `}, execution_thread="worker"`: the thread the computation runs on.
      size_t save = p_;
      SkipWs();
      if (Peek() == ',') {
        ++p_;
        SkipWs();
        if (!LookingAtWord("execution_thread")) return Err(p_, fmt::format("expected execution_thread, got {}", Describe()));
        p_ += 16;
        OPPROBE_RETURN_IF_ERROR(Expect('=', "after execution_thread"));
        SkipWs();
        auto thread = ParseQuoted();
        if (!thread.ok()) return thread.status();
        comp->execution_thread = std::move(*thread);
      } else {
        p_ = save;
      }
      break;
    }
    bool is_root = false;
    OPPROBE_RETURN_IF_ERROR(ParseInstruction(*comp, operands, positions, calls, is_root));
    if (is_root) {
      if (root) return Err(positions.back(), fmt::format("computation {} has two ROOT instructions", name));
      root = comp->instructions().back().get();
    }
  }
  auto& instrs = comp->mutable_instructions();
  if (instrs.empty()) return Err(name_pos, fmt::format("computation {} has no instructions", name));
  // Resolve operands by name (forward references allowed), then order operands before users.
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < instrs.size(); ++i)
    if (!index.emplace(instrs[i]->name, i).second)
      return Err(positions[i], fmt::format("instruction {} defined twice in {}", instrs[i]->name, name));
  std::set<int64_t> param_numbers;
  for (size_t i = 0; i < instrs.size(); ++i) {
    if (instrs[i]->opcode == Opcode::kParameter && !param_numbers.insert(instrs[i]->parameter_number).second)
      return Err(positions[i], fmt::format("parameter number {} used twice in {}", instrs[i]->parameter_number, name));
    for (const auto& o : operands[i]) {
      auto it = index.find(o.name);
      if (it == index.end())
        return Err(o.pos, fmt::format("instruction {} uses unknown operand {}", instrs[i]->name, o.name));
      instrs[i]->operands.push_back(instrs[it->second].get());
    }
  }
  for (size_t k = 0; k < param_numbers.size(); ++k)
    if (!param_numbers.count(static_cast<int64_t>(k)))
      return Err(name_pos, fmt::format("computation {} has no parameter {}", name, k));
  bool ordered = true;
  for (size_t i = 0; i < instrs.size() && ordered; ++i)
    for (const auto& o : operands[i])
      if (index[o.name] >= i) ordered = false;
  if (!ordered) {
    // Kahn's algorithm, keeping text order among ready instructions; a leftover means a cycle.
    size_t n = instrs.size();
    std::vector<std::vector<size_t>> users(n);
    std::vector<size_t> pending(n, 0);
    for (size_t i = 0; i < n; ++i) {
      std::set<size_t> uniq;
      for (const auto& o : operands[i]) uniq.insert(index[o.name]);
      pending[i] = uniq.size();
      for (size_t d : uniq) users[d].push_back(i);
    }
    std::set<size_t> ready;
    for (size_t i = 0; i < n; ++i)
      if (pending[i] == 0) ready.insert(i);
    std::vector<size_t> order;
    while (!ready.empty()) {
      size_t i = *ready.begin();
      ready.erase(ready.begin());
      order.push_back(i);
      for (size_t u : users[i])
        if (--pending[u] == 0) ready.insert(u);
    }
    if (order.size() != n) {
      for (size_t i = 0; i < n; ++i)
        if (pending[i] != 0)
          return Err(positions[i], fmt::format("instruction {} is part of an operand cycle in {}", instrs[i]->name, name));
    }
    std::vector<std::unique_ptr<Instruction>> sorted;
    for (size_t i : order) sorted.push_back(std::move(instrs[i]));
    instrs = std::move(sorted);
  }
  comp->set_root(root ? root : instrs.back().get());
  Computation* added = module.AddComputation(std::move(comp));
  if (is_entry) {
    if (entry) return Err(name_pos, "module has two ENTRY computations");
    entry = added;
  }
  return Status::Ok();
}

Expected<std::unique_ptr<Module>> Parser::ParseModule() {
  SkipWs();
  auto module = std::make_unique<Module>("module");
  if (LookingAtWord("HloModule")) {
    p_ += 9;
    SkipInlineWs();
    size_t name_start = p_;
    while (p_ < end_ && s_[p_] != ',' && s_[p_] != ' ' && s_[p_] != '\n' && s_[p_] != '\r' && s_[p_] != '\t') ++p_;
    if (p_ == name_start) return Err(p_, "expected a module name after HloModule");
    module->set_name(std::string(s_.substr(name_start, p_ - name_start)));
    // The header's attributes may continue over several lines (`entry_computation_layout={\n ...}`).
    while (true) {
      size_t save = p_;
      SkipWs();
      if (Peek() != ',') {
        p_ = save;
        break;
      }
      ++p_;
      SkipWs();
      size_t kpos = p_;
      while (p_ < end_ && IsNameChar(s_[p_])) ++p_;
      std::string key(s_.substr(kpos, p_ - kpos));
      if (key.empty()) return Err(kpos, fmt::format("expected a module attribute, got {}", Describe()));
      SkipWs();
      if (Peek() != '=') return Err(p_, fmt::format("expected '=' after module attribute {}", key));
      ++p_;
      std::string_view value = CaptureValue();
      if (value.empty()) return Err(p_, fmt::format("module attribute {} has no value", key));
      module->header_attributes.emplace_back(key, std::string(value));
    }
    SkipInlineWs();
    if (!AtEnd() && Peek() != '\n' && Peek() != '\r' && !(Peek() == '/' && (Peek(1) == '/' || Peek(1) == '*')))
      return Err(p_, fmt::format("unexpected {} in the HloModule line", Describe()));
  }
  std::vector<PendingCall> calls;
  Computation* entry = nullptr;
  while (true) {
    SkipWs();
    if (AtEnd()) break;
    if (LookingAtWord("HloModule")) return Err(p_, "a second HloModule in the same module text");
    // Stack-frame sections (`FileNames`, `FunctionNames`, `FileLocations`, `StackFrames`): numbered entries of
    // a string or a {...} record. opprobe reads no stack frames yet; the sections are skipped.
    if (LookingAtWord("FileNames") || LookingAtWord("FunctionNames") || LookingAtWord("FileLocations") ||
        LookingAtWord("StackFrames")) {
      size_t save = p_;
      while (p_ < end_ && IsNameChar(s_[p_])) ++p_;
      SkipWs();
      if (AtEnd() || IsDigit(Peek())) {
        while (true) {
          SkipWs();
          if (!IsDigit(Peek())) break;
          while (p_ < end_ && IsDigit(s_[p_])) ++p_;
          size_t value_pos = p_;
          if (CaptureValue().empty()) return Err(value_pos, "expected a string or {...} entry in a stack-frame section");
        }
        continue;
      }
      p_ = save;  // a computation that happens to have one of these names
    }
    OPPROBE_RETURN_IF_ERROR(ParseComputation(*module, calls, entry));
  }
  if (module->computations().empty()) return Err(p_, "module has no computations");
  std::unordered_map<std::string, Computation*> by_name;
  for (const auto& c : module->computations()) by_name[c->name()] = c.get();
  for (const auto& call : calls) {
    auto it = by_name.find(call.name);
    if (it == by_name.end()) return Err(call.pos, fmt::format("{} calls unknown computation {}", call.instr->name, call.name));
    call.instr->called_computations[call.slot] = it->second;
  }
  module->set_entry(entry ? entry : module->computations().back().get());
  // The call graph must be acyclic (callees are run by their callers).
  std::map<const Computation*, int> state;  // 1 visiting, 2 done
  std::vector<std::pair<const Computation*, size_t>> stack;
  for (const auto& c : module->computations()) {
    if (state[c.get()] == 2) continue;
    // Iterative DFS over (computation, next callee index), callees flattened per computation.
    std::map<const Computation*, std::vector<const Computation*>> callees_cache;
    auto callees = [&](const Computation* comp) -> const std::vector<const Computation*>& {
      auto it = callees_cache.find(comp);
      if (it != callees_cache.end()) return it->second;
      std::vector<const Computation*> v;
      for (const auto& i : comp->instructions())
        for (auto* cc : i->called_computations) v.push_back(cc);
      return callees_cache.emplace(comp, std::move(v)).first->second;
    };
    stack.push_back({c.get(), 0});
    state[c.get()] = 1;
    while (!stack.empty()) {
      auto& [comp, next] = stack.back();
      const auto& cs = callees(comp);
      if (next < cs.size()) {
        const Computation* callee = cs[next++];
        if (state[callee] == 1)
          return InvalidInput(fmt::format("{}: computation {} calls itself (directly or through {})", src_,
                                          callee->name(), comp->name()));
        if (state[callee] == 0) {
          state[callee] = 1;
          stack.push_back({callee, 0});
        }
      } else {
        state[comp] = 2;
        stack.pop_back();
      }
    }
  }
  OPPROBE_RETURN_IF_ERROR(InferShapes(*module));
  module->AssignIds();
  return module;
}

Status Parser::InferShapes(Module& module) {
  if (infer_.empty()) return Status::Ok();
  // Callees first (the call graph is acyclic by now); within a computation, instructions are in operand order.
  std::set<const Computation*> done;
  std::function<Status(const Computation*, int)> visit = [&](const Computation* c, int depth) -> Status {
    if (!c || !done.insert(c).second) return Status::Ok();
    if (depth > 512) return InvalidInput(fmt::format("{}: computations nested too deeply to infer shapes", src_));
    for (const auto& i : c->instructions()) {
      for (const Computation* callee : i->called_computations) OPPROBE_RETURN_IF_ERROR(visit(callee, depth + 1));
      auto it = infer_.find(i.get());
      if (it == infer_.end()) continue;
      auto shape = InferShape(*i);
      if (!shape.ok()) return Err(it->second, shape.status().message());
      i->shape = std::move(*shape);
    }
    return Status::Ok();
  };
  for (const auto& c : module.computations()) OPPROBE_RETURN_IF_ERROR(visit(c.get(), 0));
  return Status::Ok();
}

// Byte ranges of module texts in a file.
std::vector<std::pair<size_t, size_t>> SplitRanges(std::string_view text) {
  std::vector<std::pair<size_t, size_t>> out;
  auto line_starts_with = [&](size_t at, std::string_view w) { return text.substr(at, w.size()) == w; };
  std::vector<size_t> lines;
  for (size_t i = 0; i < text.size();) {
    lines.push_back(i);
    size_t nl = text.find('\n', i);
    if (nl == std::string_view::npos) break;
    i = nl + 1;
  }
  bool framed = false;
  for (size_t l : lines)
    if (line_starts_with(l, "## BEGIN_GRAPH")) framed = true;
  if (framed) {
    for (size_t k = 0; k < lines.size(); ++k) {
      if (!line_starts_with(lines[k], "## BEGIN_GRAPH")) continue;
      size_t begin = k + 1 < lines.size() ? lines[k + 1] : text.size();
      size_t end = text.size();
      for (size_t j = k + 1; j < lines.size(); ++j)
        // torch_xla 2.x writes `Graph Hash: <hex>` after the module, before `## END_GRAPH`.
        if (line_starts_with(lines[j], "## END_GRAPH") || line_starts_with(lines[j], "## BEGIN_GRAPH") ||
            line_starts_with(lines[j], "Graph Hash:")) {
          end = lines[j];
          break;
        }
      out.emplace_back(begin, end);
    }
    return out;
  }
  std::vector<size_t> starts;
  for (size_t l : lines) {
    size_t q = l;
    while (q < text.size() && (text[q] == ' ' || text[q] == '\t')) ++q;
    if (line_starts_with(q, "HloModule ") || line_starts_with(q, "HloModule\t")) starts.push_back(l);
  }
  if (starts.empty()) {
    out.emplace_back(0, text.size());
    return out;
  }
  // Anything before the first HloModule line belongs to the first module (so that junk is an error).
  starts[0] = 0;
  for (size_t k = 0; k < starts.size(); ++k) out.emplace_back(starts[k], k + 1 < starts.size() ? starts[k + 1] : text.size());
  return out;
}

}  // namespace

Expected<std::vector<std::unique_ptr<Module>>> ParseModules(std::string_view text, const std::string& source_name) {
  std::vector<std::unique_ptr<Module>> out;
  for (auto [begin, end] : SplitRanges(text)) {
    Parser parser(text, begin, end, source_name);
    auto m = parser.ParseModule();
    if (!m.ok()) return m.status();
    out.push_back(std::move(*m));
  }
  if (out.empty()) return InvalidInput(source_name + ": no HLO module found");
  return out;
}

Expected<std::unique_ptr<Module>> ParseModule(std::string_view text, const std::string& source_name) {
  auto ranges = SplitRanges(text);
  if (ranges.size() != 1)
    return InvalidInput(fmt::format("{}: holds {} modules where one was expected", source_name, ranges.size()));
  Parser parser(text, ranges[0].first, ranges[0].second, source_name);
  return parser.ParseModule();
}

std::vector<std::string_view> SplitModuleTexts(std::string_view text) {
  std::vector<std::string_view> out;
  for (auto [begin, end] : SplitRanges(text)) out.push_back(text.substr(begin, end - begin));
  return out;
}

PrintOptions DetectPrintStyle(std::string_view module_text) {
  size_t brace = module_text.find('{');
  size_t eq = module_text.find(" = ", brace == std::string_view::npos ? 0 : brace);
  if (eq == std::string_view::npos) return PrintOptions::Long();
  size_t line = module_text.rfind('\n', eq);
  std::string_view head = module_text.substr(line == std::string_view::npos ? 0 : line + 1,
                                             eq - (line == std::string_view::npos ? 0 : line + 1));
  return head.find('%') != std::string_view::npos ? PrintOptions::Long() : PrintOptions::Short();
}

Expected<Shape> ParseShape(std::string_view text) {
  static const std::string kSource = "shape";
  Parser parser(text, 0, text.size(), kSource);
  return parser.ParseShapeOnly();
}

}  // namespace opprobe::hlo
