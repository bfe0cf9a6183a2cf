#include "hlo/stablehlo/mlir_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>

#include "hlo/stablehlo/mlir_lexer.h"
#include "support/quote.h"

namespace opprobe::hlo::stablehlo {

const Attr* Attr::Get(const std::string& k) const {
  for (const auto& e : dict)
    if (e.key == k) return &e;
  return nullptr;
}

std::vector<Attr> ToDict(NamedAttrs attrs) {
  std::vector<Attr> out;
  out.reserve(attrs.size());
  for (auto& entry : attrs) {
    entry.second.key = std::move(entry.first);
    out.push_back(std::move(entry.second));
  }
  return out;
}

NamedAttrs FromDict(const std::vector<Attr>& dict) {
  NamedAttrs out;
  for (const auto& e : dict) out.emplace_back(e.key, e);
  return out;
}

const Attr* FindAttr(const NamedAttrs& attrs, const std::string& key) {
  for (const auto& [k, v] : attrs)
    if (k == key) return &v;
  return nullptr;
}

int64_t Operation::ResultCount() const {
  int64_t n = 0;
  for (const auto& r : results) n += r.second;
  return n;
}

std::pair<int64_t, int64_t> LineColumn(std::string_view text, size_t pos) {
  pos = std::min(pos, text.size());
  int64_t line = 1, col = 1;
  for (size_t i = 0; i < pos; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

bool IsKnownDialect(std::string_view dialect) {
  static constexpr std::array<std::string_view, 6> kDialects = {"stablehlo", "chlo", "mhlo", "func", "sdy", "builtin"};
  return std::find(kDialects.begin(), kDialects.end(), dialect) != kDialects.end();
}

namespace {

constexpr int kMaxDepth = 200;

std::optional<PrimitiveType> ElementTypeFromName(std::string_view n) {
  struct Entry {
    std::string_view name;
    PrimitiveType type;
  };
  static constexpr Entry kTypes[] = {
      {"i1", PrimitiveType::PRED},
      {"i2", PrimitiveType::S2},
      {"i4", PrimitiveType::S4},
      {"i8", PrimitiveType::S8},
      {"i16", PrimitiveType::S16},
      {"i32", PrimitiveType::S32},
      {"i64", PrimitiveType::S64},
      {"si2", PrimitiveType::S2},
      {"si4", PrimitiveType::S4},
      {"si8", PrimitiveType::S8},
      {"si16", PrimitiveType::S16},
      {"si32", PrimitiveType::S32},
      {"si64", PrimitiveType::S64},
      {"ui1", PrimitiveType::U1},
      {"ui2", PrimitiveType::U2},
      {"ui4", PrimitiveType::U4},
      {"ui8", PrimitiveType::U8},
      {"ui16", PrimitiveType::U16},
      {"ui32", PrimitiveType::U32},
      {"ui64", PrimitiveType::U64},
      {"f16", PrimitiveType::F16},
      {"bf16", PrimitiveType::BF16},
      {"f32", PrimitiveType::F32},
      {"f64", PrimitiveType::F64},
      {"f8E5M2", PrimitiveType::F8E5M2},
      {"f8E4M3FN", PrimitiveType::F8E4M3FN},
      {"f8E4M3B11FNUZ", PrimitiveType::F8E4M3B11FNUZ},
      {"f8E5M2FNUZ", PrimitiveType::F8E5M2FNUZ},
      {"f8E4M3FNUZ", PrimitiveType::F8E4M3FNUZ},
      {"f8E4M3", PrimitiveType::F8E4M3},
      {"f8E3M4", PrimitiveType::F8E3M4},
      {"f4E2M1FN", PrimitiveType::F4E2M1FN},
      {"f8E8M0FNU", PrimitiveType::F8E8M0FNU},
      {"index", PrimitiveType::S64},
  };
  for (const auto& e : kTypes)
    if (e.name == n) return e.type;
  return std::nullopt;
}

// The grammar over the lexer's tokens (mlir_lexer.h), which it extends: its cursor is the parser's position.
class Parser : Lexer {
 public:
  Parser(std::string_view text, const std::string& source) : Lexer(text, source) {}

  Expected<ParsedModule> Parse() {
    ParsedModule m;
    m.source_name = source_;
    m.text = s_;
    bool saw_module = false;
    while (true) {
      SkipWs();
      if (AtEnd()) break;
      size_t start = p_;
      if (LookingAt("{-#")) {  // dialect resources (`dense_resource` blobs): not needed, skipped whole
        size_t end = s_.find("#-}", p_ + 3);
        if (end == std::string_view::npos) return Err(start, "unterminated '{-#' resource section");
        p_ = end + 3;
        continue;
      }
      if (Peek() == '#') {
        OPPROBE_RETURN_IF_ERROR(ParseAliasDefinition(m));
        continue;
      }
      if (Peek() == '"') {  // a generic `"builtin.module"() ({...}) ...` or `"func.func"() ...`
        auto op = ParseOperation();
        if (!op.ok()) return op.status();
        OPPROBE_RETURN_IF_ERROR(AddTopLevelGeneric(m, std::move(*op), saw_module));
        continue;
      }
      if (!IsIdStart(Peek())) return Err(p_, fmt::format("expected 'module' or 'func.func', got {}", Describe()));
      std::string word = LexBareId();
      if (word == "module" || word == "builtin.module") {
        if (saw_module) return Err(start, "a second top-level module (opprobe reads one module per file)");
        saw_module = true;
        OPPROBE_RETURN_IF_ERROR(ParseModuleBody(m));
        continue;
      }
      if (word == "func.func") {
        auto f = ParseFunction(start);
        if (!f.ok()) return f.status();
        m.functions.push_back(std::move(*f));
        continue;
      }
      return Err(start, fmt::format("expected 'module' or 'func.func' at the top level, got {}", support::Quote(word)));
    }
    if (m.functions.empty()) return Err(p_, "no functions: expected a 'module' holding 'func.func' operations");
    return m;
  }

 private:
  Expected<Value> ParseValueUse() {
    SkipWs();
    Value v;
    v.pos = p_;
    OPPROBE_ASSIGN_OR_RETURN(v.name, LexValueName());
    if (Peek() == '#' && IsDigit(Peek(1))) {
      ++p_;
      OPPROBE_ASSIGN_OR_RETURN(v.index, LexInt());
    }
    return v;
  }

  // ---- types ----
  Expected<Type> ParseType() {
    SkipWs();
    if (++depth_ > kMaxDepth) return Err(p_, "types nested too deeply");
    auto t = ParseTypeInner();
    --depth_;
    return t;
  }

  Expected<Type> ParseTypeInner() {
    size_t start = p_;
    Type t;
    if (Peek() == '(') {  // function type
      ++p_;
      t.kind = Type::Kind::kFunction;
      if (!Consume(')')) {
        do {
          OPPROBE_ASSIGN_OR_RETURN(Type in, ParseType());
          t.elements.push_back(std::move(in));
        } while (Consume(','));
        OPPROBE_RETURN_IF_ERROR(Expect(')'));
      }
      if (!ConsumeArrow()) return Err(p_, fmt::format("expected '->' in a function type, got {}", Describe()));
      OPPROBE_ASSIGN_OR_RETURN(t.results, ParseResultTypes());
      t.text = std::string(s_.substr(start, p_ - start));
      return t;
    }
    if (Peek() == '!') {
      ++p_;
      std::string name = LexBareId();
      if (name == "stablehlo.token" || name == "mhlo.token") {
        t.kind = Type::Kind::kToken;
      } else if (name == "quant.uniform" || name == "quant.calibrated" || name == "quant.any") {
        // The storage type names the element: `!quant.uniform<i8<-127:127>:f32, 0.5:3>`.
        OPPROBE_RETURN_IF_ERROR(Expect('<'));
        size_t body = p_;
        SkipWs();
        std::string storage = LexBareId();
        auto e = ElementTypeFromName(storage);
        if (!e) return Err(body, fmt::format("unknown quantized storage type {}", support::Quote(storage)));
        t.kind = Type::Kind::kElement;
        t.element = *e;
        p_ = body;
        OPPROBE_RETURN_IF_ERROR(SkipBalanced('<', '>', body - 1));
        t.quantized = "!" + name + "<" + std::string(s_.substr(body, p_ - 1 - body)) + ">";
      } else if (name.empty()) {
        return Err(start, "expected a dialect type name after '!'");
      } else {
        t.kind = Type::Kind::kOther;
        if (Peek() == '<') {
          ++p_;
          OPPROBE_RETURN_IF_ERROR(SkipBalanced('<', '>', p_ - 1));
        }
      }
      t.text = std::string(s_.substr(start, p_ - start));
      return t;
    }
    std::string word = LexBareId();
    if (word.empty()) return Err(start, fmt::format("expected a type, got {}", Describe()));
    if (word == "tensor") {
      OPPROBE_RETURN_IF_ERROR(ParseTensorBody(t));
    } else if (word == "tuple") {
      t.kind = Type::Kind::kTuple;
      OPPROBE_RETURN_IF_ERROR(Expect('<'));
      if (!Consume('>')) {
        do {
          OPPROBE_ASSIGN_OR_RETURN(Type e, ParseType());
          t.elements.push_back(std::move(e));
        } while (Consume(','));
        OPPROBE_RETURN_IF_ERROR(Expect('>'));
      }
    } else if (word == "complex") {
      OPPROBE_RETURN_IF_ERROR(Expect('<'));
      SkipWs();
      size_t epos = p_;
      std::string inner = LexBareId();
      OPPROBE_RETURN_IF_ERROR(Expect('>'));
      t.kind = Type::Kind::kElement;
      if (inner == "f32") t.element = PrimitiveType::C64;
      else if (inner == "f64") t.element = PrimitiveType::C128;
      else
        return Err(epos, fmt::format("complex<{}> has no XLA element type (complex<f32> and complex<f64> do)",
                                     support::Quote(inner)));
    } else if (auto e = ElementTypeFromName(word)) {
      t.kind = Type::Kind::kElement;
      t.element = *e;
    } else if (word == "none" || word == "vector" || word == "memref") {
      t.kind = Type::Kind::kOther;
      if (Peek() == '<') {
        ++p_;
        OPPROBE_RETURN_IF_ERROR(SkipBalanced('<', '>', p_ - 1));
      }
    } else {
      return Err(start, fmt::format("unknown type {}", support::Quote(word)));
    }
    t.text = std::string(s_.substr(start, p_ - start));
    return t;
  }

  // After `tensor`: `<2x?x3xf32, encoding>` or `<*xf32>`.
  Status ParseTensorBody(Type& t) {
    t.kind = Type::Kind::kTensor;
    if (Peek() != '<') return Err(p_, fmt::format("expected '<' after 'tensor', got {}", Describe()));
    ++p_;
    SkipWs();
    if (Peek() == '*') {
      ++p_;
      t.unranked = true;
      if (Peek() != 'x') return Err(p_, "expected 'x' after '*' in an unranked tensor type");
      ++p_;
    } else {
      while (IsDigit(Peek()) || Peek() == '?') {
        size_t dpos = p_;
        if (Peek() == '?') {
          ++p_;
          t.dims.push_back(-1);
        } else {  // decimal only: `tensor<0x3xf32>` is a 0 by 3 tensor, not 0x3
          uint64_t d = 0;
          while (IsDigit(Peek())) {
            d = d * 10 + static_cast<uint64_t>(s_[p_++] - '0');
            if (d > (uint64_t{1} << 62)) return Err(dpos, "tensor dimension out of range");
          }
          t.dims.push_back(static_cast<int64_t>(d));
        }
        if (Peek() != 'x') return Err(p_, fmt::format("expected 'x' after a tensor dimension, got {}", Describe()));
        ++p_;
        if (t.dims.size() > 64) return Err(dpos, "tensor type with more than 64 dimensions");
      }
    }
    OPPROBE_ASSIGN_OR_RETURN(Type element, ParseType());
    if (element.kind != Type::Kind::kElement)
      return Err(p_, fmt::format("tensor element type {} is not a number type", support::Quote(element.text)));
    t.element = element.element;
    t.quantized = element.quantized;
    if (Consume(',')) {  // encoding: bounds of dynamic dimensions
      SkipWs();
      size_t epos = p_;
      OPPROBE_ASSIGN_OR_RETURN(Attr enc, ParseAttr());
      OPPROBE_RETURN_IF_ERROR(BoundsFromEncoding(enc, t, epos));
    }
    return Expect('>');
  }

  Status BoundsFromEncoding(const Attr& enc, Type& t, size_t pos) {
    std::string list;
    if (enc.kind == Attr::Kind::kOther && (enc.name == "stablehlo.bounds" || enc.name == "mhlo.bounds")) {
      list = enc.text;
    } else if (enc.kind == Attr::Kind::kOther &&
               (enc.name == "stablehlo.type_extensions" || enc.name == "mhlo.type_extensions")) {
      auto eq = enc.text.find('[');
      auto close = enc.text.rfind(']');
      if (eq == std::string::npos || close == std::string::npos || close < eq) return Status::Ok();
      list = enc.text.substr(eq + 1, close - eq - 1);
    } else {
      return Status::Ok();  // another encoding (sparsity, ...): no bounds
    }
    std::vector<int64_t> bounds;
    size_t i = 0;
    while (i < list.size()) {
      while (i < list.size() && (list[i] == ' ' || list[i] == ',')) ++i;
      if (i >= list.size()) break;
      if (list[i] == '?') {
        bounds.push_back(-1);
        ++i;
        continue;
      }
      size_t j = i;
      while (j < list.size() && IsDigit(list[j])) ++j;
      if (j == i || j - i > 18) return Err(pos, "malformed bounds in a tensor type");
      bounds.push_back(std::stoll(list.substr(i, j - i)));
      i = j;
    }
    if (bounds.size() != t.dims.size()) return Err(pos, "bounds do not match the tensor's rank");
    t.bounds = std::move(bounds);
    return Status::Ok();
  }

  // `T`, `(T, U)` or `()` after `->`.
  Expected<std::vector<Type>> ParseResultTypes() {
    std::vector<Type> out;
    SkipWs();
    if (Peek() == '(') {
      // `(T) -> U` would be a function type as a result; StableHLO never returns one, so `(` opens a list.
      ++p_;
      if (Consume(')')) return out;
      do {
        OPPROBE_ASSIGN_OR_RETURN(Type t, ParseType());
        OPPROBE_RETURN_IF_ERROR(SkipResultAttrs());
        out.push_back(std::move(t));
      } while (Consume(','));
      OPPROBE_RETURN_IF_ERROR(Expect(')'));
      return out;
    }
    OPPROBE_ASSIGN_OR_RETURN(Type t, ParseType());
    out.push_back(std::move(t));
    return out;
  }
  // `{jax.result_info = "..."}` after a function result type: not needed.
  Status SkipResultAttrs() {
    SkipWs();
    if (Peek() != '{') return Status::Ok();
    auto d = ParseAttrDict();
    return d.ok() ? Status::Ok() : d.status();
  }

  // Skips to the matching `close` (the opening one is already consumed), minding strings and `->`.
  Status SkipBalanced(char open, char close, size_t open_pos) {
    int depth = 1;
    while (!AtEnd()) {
      char c = s_[p_];
      if (c == '"') {
        auto s = LexString();
        if (!s.ok()) return s.status();
        continue;
      }
      if (c == '-' && Peek(1) == '>') {
        p_ += 2;
        continue;
      }
      ++p_;
      if (c == open) ++depth;
      else if (c == close && --depth == 0) return Status::Ok();
      if (depth > kMaxDepth) return Err(p_, "brackets nested too deeply");
    }
    return Err(open_pos, fmt::format("unterminated '{}'", open));
  }

  // ---- attributes ----
  Expected<NamedAttrs> ParseAttrDict() {
    NamedAttrs out;
    SkipWs();
    size_t open = p_;
    OPPROBE_RETURN_IF_ERROR(Expect('{'));
    if (Consume('}')) return out;
    do {
      SkipWs();
      size_t kpos = p_;
      std::string key;
      if (Peek() == '"') {
        OPPROBE_ASSIGN_OR_RETURN(key, LexString());
      } else {
        key = LexBareId();
        if (key.empty()) return Err(kpos, fmt::format("expected an attribute name, got {}", Describe()));
      }
      Attr v;
      v.pos = kpos;
      if (Consume('=')) { OPPROBE_ASSIGN_OR_RETURN(v, ParseAttr()); }
      out.emplace_back(std::move(key), std::move(v));
    } while (Consume(','));
    if (!Consume('}'))
      return Err(p_, fmt::format("expected ',' or '}}' in the attribute dictionary opened at {}, got {}", Where(open),
                                 Describe()));
    return out;
  }

  std::string Where(size_t pos) const {
    auto [line, col] = LineColumn(s_, pos);
    return fmt::format("{}:{}", line, col);
  }

  Expected<Attr> ParseAttr() {
    SkipWs();
    if (++depth_ > kMaxDepth) return Err(p_, "attributes nested too deeply");
    size_t start = p_;
    auto a = ParseAttrInner();
    --depth_;
    if (a.ok()) {
      a->pos = start;
      a->end = p_;
    }
    return a;
  }

  Status ParseOptionalColonType(Attr& a) {
    size_t save = p_;
    SkipWs();
    if (Peek() == ':' && Peek(1) != ':') {
      ++p_;
      OPPROBE_ASSIGN_OR_RETURN(a.type, ParseType());
      return Status::Ok();
    }
    p_ = save;
    return Status::Ok();
  }

  Expected<Attr> ParseAttrInner() {
    Attr a;
    a.pos = p_;
    char c = Peek();
    if (c == '{') {
      a.kind = Attr::Kind::kDict;
      OPPROBE_ASSIGN_OR_RETURN(NamedAttrs entries, ParseAttrDict());
      a.dict = ToDict(std::move(entries));
      return a;
    }
    if (c == '[') {
      ++p_;
      a.kind = Attr::Kind::kArray;
      if (Consume(']')) return a;
      do {
        OPPROBE_ASSIGN_OR_RETURN(Attr e, ParseAttr());
        a.elements.push_back(std::move(e));
      } while (Consume(','));
      OPPROBE_RETURN_IF_ERROR(Expect(']'));
      return a;
    }
    if (c == '"') {
      a.kind = Attr::Kind::kString;
      OPPROBE_ASSIGN_OR_RETURN(a.text, LexString());
      OPPROBE_RETURN_IF_ERROR(ParseOptionalColonType(a));
      return a;
    }
    if (c == '@') {
      a.kind = Attr::Kind::kSymbol;
      OPPROBE_ASSIGN_OR_RETURN(a.text, LexSymbolName());
      while (LookingAt("::@")) {  // nested reference: keep the leaf
        p_ += 2;
        OPPROBE_ASSIGN_OR_RETURN(a.text, LexSymbolName());
      }
      return a;
    }
    if (c == '#') return ParseHashAttr();
    if (c == '-' || IsDigit(c)) {
      OPPROBE_RETURN_IF_ERROR(ParseNumber(a));
      OPPROBE_RETURN_IF_ERROR(ParseOptionalColonType(a));
      return a;
    }
    if (c == '(' || c == '!') {
      a.kind = Attr::Kind::kType;
      OPPROBE_ASSIGN_OR_RETURN(a.type, ParseType());
      return a;
    }
    size_t start = p_;
    std::string word = LexBareId();
    if (word.empty()) return Err(start, fmt::format("expected an attribute value, got {}", Describe()));
    if (word == "true" || word == "false") {
      a.kind = Attr::Kind::kBool;
      a.b = word == "true";
      OPPROBE_RETURN_IF_ERROR(ParseOptionalColonType(a));
      return a;
    }
    if (word == "unit") {
      a.kind = Attr::Kind::kUnit;
      return a;
    }
    if (word == "dense" || word == "dense_resource") {
      OPPROBE_RETURN_IF_ERROR(ParseDense(a, word == "dense_resource"));
      return a;
    }
    if (word == "array") {
      OPPROBE_RETURN_IF_ERROR(ParseDenseArray(a));
      return a;
    }
    if (word == "inf" || word == "nan") {
      a.kind = Attr::Kind::kFloat;
      a.f = word == "inf" ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
      OPPROBE_RETURN_IF_ERROR(ParseOptionalColonType(a));
      return a;
    }
    if (word == "affine_map" || word == "affine_set" || word == "sparse" || word == "opaque" || word == "distinct" ||
        word == "strided") {
      a.kind = Attr::Kind::kOther;
      a.name = word;
      if (Peek() == '<') {
        size_t open = p_++;
        OPPROBE_RETURN_IF_ERROR(SkipBalanced('<', '>', open));
        a.text = std::string(s_.substr(open + 1, p_ - open - 2));
      } else if (Peek() == '[') {  // distinct[0]<...>
        size_t open = p_++;
        OPPROBE_RETURN_IF_ERROR(SkipBalanced('[', ']', open));
        if (Peek() == '<') {
          size_t o2 = p_++;
          OPPROBE_RETURN_IF_ERROR(SkipBalanced('<', '>', o2));
        }
      }
      OPPROBE_RETURN_IF_ERROR(ParseOptionalColonType(a));
      return a;
    }
    // A type used as an attribute (`tensor<2xf32>`, `i32`, `tuple<...>`): re-read it as a type.
    if (word == "tensor" || word == "tuple" || word == "complex" || word == "none" || ElementTypeFromName(word)) {
      p_ = start;
      a.kind = Attr::Kind::kType;
      OPPROBE_ASSIGN_OR_RETURN(a.type, ParseType());
      return a;
    }
    // A bare word: an enum value in some contexts (`LT`, `DEFAULT`).
    a.kind = Attr::Kind::kEnum;
    a.text = word;
    return a;
  }

  Status ParseNumber(Attr& a) {
    size_t start = p_;
    bool neg = false;
    if (Peek() == '-') {
      neg = true;
      ++p_;
    }
    if (Peek() == '0' && (Peek(1) == 'x' || Peek(1) == 'X')) {
      OPPROBE_ASSIGN_OR_RETURN(uint64_t bits, LexMagnitude());
      a.kind = Attr::Kind::kInt;  // a float's bits when the type says so (resolved by the reader of the attr)
      a.i = neg ? static_cast<int64_t>(0 - bits) : static_cast<int64_t>(bits);
      return Status::Ok();
    }
    size_t digits = p_;
    while (IsDigit(Peek())) ++p_;
    if (p_ == digits) return Err(start, fmt::format("expected a number, got {}", Describe()));
    bool is_float = false;
    if (Peek() == '.' && IsDigit(Peek(1))) {
      is_float = true;
      ++p_;
      while (IsDigit(Peek())) ++p_;
    } else if (Peek() == '.') {
      is_float = true;
      ++p_;
    }
    if ((Peek() == 'e' || Peek() == 'E') &&
        (IsDigit(Peek(1)) || ((Peek(1) == '-' || Peek(1) == '+') && IsDigit(Peek(2))))) {
      is_float = true;
      p_ += 2;
      while (IsDigit(Peek())) ++p_;
    }
    std::string text(s_.substr(start, p_ - start));
    if (is_float) {
      a.kind = Attr::Kind::kFloat;
      a.f = std::strtod(text.c_str(), nullptr);
      return Status::Ok();
    }
    a.kind = Attr::Kind::kInt;
    p_ = digits;
    OPPROBE_ASSIGN_OR_RETURN(uint64_t mag, LexMagnitude());
    a.i = neg ? static_cast<int64_t>(0 - mag) : static_cast<int64_t>(mag);
    return Status::Ok();
  }

  // After `dense`/`dense_resource`: `<...>` then an optional `: type`.
  Status ParseDense(Attr& a, bool resource) {
    a.kind = Attr::Kind::kDense;
    a.dense = std::make_shared<DenseLiteral>();
    size_t open = p_;
    if (Peek() != '<') return Err(p_, fmt::format("expected '<' after 'dense', got {}", Describe()));
    ++p_;
    SkipWs();
    if (resource) {
      size_t start = p_;
      while (!AtEnd() && s_[p_] != '>' && s_[p_] != '\n') ++p_;
      a.dense->resource = std::string(s_.substr(start, p_ - start));
      if (a.dense->resource.empty()) a.dense->resource = "?";
      OPPROBE_RETURN_IF_ERROR(Expect('>'));
    } else if (Peek() == '"') {
      OPPROBE_ASSIGN_OR_RETURN(std::string hex, LexString());
      if (hex.size() < 2 || hex[0] != '0' || (hex[1] != 'x' && hex[1] != 'X'))
        return Err(open, "a quoted dense literal must be hex bytes '\"0x...\"'");
      for (size_t i = 2; i < hex.size(); ++i)
        if (!IsHexDigit(hex[i])) return Err(open, "a quoted dense literal holds a non-hex character");
      if (hex.size() % 2 != 0) return Err(open, "a quoted dense literal has an odd number of hex digits");
      a.dense->raw_hex = hex.substr(2);
      OPPROBE_RETURN_IF_ERROR(Expect('>'));
    } else if (Peek() == '>') {
      ++p_;
    } else if (Peek() == '[') {
      OPPROBE_RETURN_IF_ERROR(ParseDenseList(*a.dense, 0));
      OPPROBE_RETURN_IF_ERROR(Expect('>'));
    } else {
      a.dense->splat = true;
      OPPROBE_RETURN_IF_ERROR(ParseDenseElement(*a.dense));
      OPPROBE_RETURN_IF_ERROR(Expect('>'));
    }
    return ParseOptionalColonType(a);
  }

  Status ParseDenseList(DenseLiteral& d, int depth) {
    if (depth > 64) return Err(p_, "dense literal nested too deeply");
    OPPROBE_RETURN_IF_ERROR(Expect('['));
    if (Consume(']')) return Status::Ok();
    do {
      SkipWs();
      if (Peek() == '[') {
        OPPROBE_RETURN_IF_ERROR(ParseDenseList(d, depth + 1));
      } else {
        OPPROBE_RETURN_IF_ERROR(ParseDenseElement(d));
      }
    } while (Consume(','));
    return Expect(']');
  }

  Status ParseDenseElement(DenseLiteral& d) {
    SkipWs();
    DenseElement e;
    if (Peek() == '(') {  // complex: (re, im)
      ++p_;
      Attr re, im;
      SkipWs();
      OPPROBE_RETURN_IF_ERROR(ParseNumber(re));
      OPPROBE_RETURN_IF_ERROR(Expect(','));
      SkipWs();
      OPPROBE_RETURN_IF_ERROR(ParseNumber(im));
      OPPROBE_RETURN_IF_ERROR(Expect(')'));
      e.kind = DenseElement::Kind::kComplex;
      e.real = re.kind == Attr::Kind::kFloat ? re.f : static_cast<double>(re.i);
      e.imag = im.kind == Attr::Kind::kFloat ? im.f : static_cast<double>(im.i);
      d.elements.push_back(e);
      return Status::Ok();
    }
    if (ConsumeWord("true") || ConsumeWord("false")) {
      e.kind = DenseElement::Kind::kBool;
      e.boolean = s_[p_ - 1] == 'e' && s_.substr(p_ - 4, 4) == "true";
      d.elements.push_back(e);
      return Status::Ok();
    }
    size_t start = p_;
    bool neg = false;
    if (Peek() == '-') {
      neg = true;
      ++p_;
    }
    if (Peek() == '0' && (Peek(1) == 'x' || Peek(1) == 'X')) {
      OPPROBE_ASSIGN_OR_RETURN(e.magnitude, LexMagnitude());
      e.kind = DenseElement::Kind::kBits;
      e.negative = neg;
      d.elements.push_back(e);
      return Status::Ok();
    }
    if (ConsumeWord("inf") || ConsumeWord("nan")) {
      e.kind = DenseElement::Kind::kFloat;
      e.real = s_[p_ - 1] == 'f' ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
      if (neg) e.real = -e.real;
      d.elements.push_back(e);
      return Status::Ok();
    }
    p_ = start;
    Attr n;
    OPPROBE_RETURN_IF_ERROR(ParseNumber(n));
    if (n.kind == Attr::Kind::kFloat) {
      e.kind = DenseElement::Kind::kFloat;
      e.real = n.f;
    } else {
      e.kind = DenseElement::Kind::kInt;
      e.negative = neg;
      // The magnitude again, without the int64 wrap (u64 values above 2^63 are legal).
      size_t save = p_;
      p_ = start + (neg ? 1 : 0);
      OPPROBE_ASSIGN_OR_RETURN(e.magnitude, LexMagnitude());
      p_ = save;
    }
    d.elements.push_back(e);
    return Status::Ok();
  }

  // After `array`: `<i64: 1, 2>` or `<i64>`.
  Status ParseDenseArray(Attr& a) {
    a.kind = Attr::Kind::kArray;
    OPPROBE_RETURN_IF_ERROR(Expect('<'));
    OPPROBE_ASSIGN_OR_RETURN(a.type, ParseType());
    if (Consume(':')) {
      do {
        SkipWs();
        Attr e;
        e.pos = p_;
        if (ConsumeWord("true") || ConsumeWord("false")) {
          e.kind = Attr::Kind::kBool;
          e.b = s_.substr(p_ - 4, 4) == "true";
        } else {
          OPPROBE_RETURN_IF_ERROR(ParseNumber(e));
        }
        a.elements.push_back(std::move(e));
      } while (Consume(','));
    }
    return Expect('>');
  }

  // `#alias`, `#dialect<body>`, `#dialect.name<body>`.
  Expected<Attr> ParseHashAttr() {
    Attr a;
    a.pos = p_;
    ++p_;  // '#'
    std::string name = LexBareId();
    if (name.empty()) return Err(a.pos, "expected an attribute name after '#'");
    if (Peek() != '<') {  // an alias
      auto it = attr_aliases_.find(name);
      if (it == attr_aliases_.end())
        return Err(a.pos, fmt::format("undefined attribute alias {}", support::Quote("#" + name)));
      Attr resolved = it->second;
      resolved.pos = a.pos;
      return resolved;
    }
    size_t open = p_++;
    size_t body = p_;
    OPPROBE_RETURN_IF_ERROR(SkipBalanced('<', '>', open));
    size_t end = p_;
    std::string_view text = s_.substr(body, end - 1 - body);
    a.name = name;
    if (name.find('.') == std::string::npos) {  // `#stablehlo<comparison_direction LT>`
      a.kind = Attr::Kind::kEnum;
      size_t i = 0;
      while (i < text.size() && text[i] == ' ') ++i;
      size_t j = i;
      while (j < text.size() && IsIdChar(text[j])) ++j;
      a.name = std::string(text.substr(i, j - i));
      while (j < text.size() && text[j] == ' ') ++j;
      a.text = std::string(text.substr(j));
      while (!a.text.empty() && a.text.back() == ' ') a.text.pop_back();
      return a;
    }
    // A structured attribute: `key = value, ...` when its body reads so, else its raw text.
    a.text = std::string(text);
    size_t save = p_;
    p_ = body;
    bool dict = false;
    if (name != "stablehlo.conv" && name != "mhlo.conv" && name != "stablehlo.bounds" && name != "mhlo.bounds") {
      NamedAttrs d;
      dict = ParseDictBody(d, end - 1);
      if (dict) a.dict = ToDict(std::move(d));
    }
    p_ = save;
    a.kind = dict ? Attr::Kind::kDict : Attr::Kind::kOther;
    return a;
  }

  // `key = attr, ...` up to `end` (exclusive); false (and no error) when the text is not that.
  bool ParseDictBody(NamedAttrs& out, size_t end) {
    SkipWs();
    if (p_ == end) return true;
    while (true) {
      SkipWs();
      std::string key = LexBareId();
      if (key.empty() || !Consume('=')) return false;
      SkipWs();
      Attr v;
      if (Peek() == '?') return false;
      auto parsed = ParseAttr();
      if (!parsed.ok() || p_ > end) return false;
      out.emplace_back(std::move(key), std::move(*parsed));
      SkipWs();
      if (p_ == end) return true;
      if (!Consume(',')) return false;
    }
  }

  // ---- locations ----
  // After `loc(`: the location, then `)`.
  Expected<Location> ParseLocation(bool pretty) {
    SkipWs();
    if (++depth_ > kMaxDepth) return Err(p_, "locations nested too deeply");
    auto l = ParseLocationInner(pretty);
    --depth_;
    if (!l.ok()) return l;
    // `callee at caller` (pretty form of callsite)
    size_t save = p_;
    if (pretty && ConsumeWord("at")) {
      Location cs;
      cs.kind = Location::Kind::kCallSite;
      cs.children.push_back(std::move(*l));
      OPPROBE_ASSIGN_OR_RETURN(Location caller, ParseLocation(pretty));
      cs.children.push_back(std::move(caller));
      return cs;
    }
    p_ = save;
    return l;
  }

  Expected<Location> ParseLocationInner(bool pretty) {
    Location l;
    size_t start = p_;
    char c = Peek();
    if (c == '#') {
      ++p_;
      l.kind = Location::Kind::kAlias;
      l.text = LexBareId();
      if (l.text.empty()) return Err(start, "expected a location alias name after '#'");
      return l;
    }
    if (c == '[') {  // pretty: `[unknown]` or a fused list
      ++p_;
      if (ConsumeWord("unknown")) {
        OPPROBE_RETURN_IF_ERROR(Expect(']'));
        return l;
      }
      l.kind = Location::Kind::kFused;
      if (Consume(']')) return l;
      do {
        OPPROBE_ASSIGN_OR_RETURN(Location part, ParseLocation(pretty));
        l.children.push_back(std::move(part));
      } while (Consume(','));
      OPPROBE_RETURN_IF_ERROR(Expect(']'));
      return l;
    }
    if (c == '"') {
      OPPROBE_ASSIGN_OR_RETURN(std::string s, LexString());
      SkipSpacesOnLine();
      if (Peek() == ':' && IsDigit(Peek(1))) return FileLocation(std::move(s));
      l.kind = Location::Kind::kName;
      l.text = std::move(s);
      if (Peek() == '(') {
        ++p_;
        OPPROBE_ASSIGN_OR_RETURN(Location child, ParseLocation(pretty));
        l.children.push_back(std::move(child));
        OPPROBE_RETURN_IF_ERROR(Expect(')'));
      }
      return l;
    }
    if (ConsumeWord("unknown")) return l;
    if (ConsumeWord("callsite")) {
      OPPROBE_RETURN_IF_ERROR(Expect('('));
      l.kind = Location::Kind::kCallSite;
      OPPROBE_ASSIGN_OR_RETURN(Location callee, ParseLocation(pretty));
      if (!ConsumeWord("at")) return Err(p_, fmt::format("expected 'at' in a callsite location, got {}", Describe()));
      OPPROBE_ASSIGN_OR_RETURN(Location caller, ParseLocation(pretty));
      l.children.push_back(std::move(callee));
      l.children.push_back(std::move(caller));
      OPPROBE_RETURN_IF_ERROR(Expect(')'));
      return l;
    }
    if (ConsumeWord("fused")) {
      l.kind = Location::Kind::kFused;
      if (Peek() == '<') {  // metadata attribute
        size_t open = p_++;
        OPPROBE_RETURN_IF_ERROR(SkipBalanced('<', '>', open));
      }
      OPPROBE_RETURN_IF_ERROR(Expect('['));
      if (Consume(']')) return l;
      do {
        OPPROBE_ASSIGN_OR_RETURN(Location part, ParseLocation(pretty));
        l.children.push_back(std::move(part));
      } while (Consume(','));
      OPPROBE_RETURN_IF_ERROR(Expect(']'));
      return l;
    }
    if (pretty && c != '\0' && c != ')' && c != ',' && c != ']' && c != '\n') {
      // An unquoted file location: `/path/to/file.py:841:0`.
      size_t e = p_;
      while (e < s_.size() && s_[e] != ' ' && s_[e] != '\n' && s_[e] != '\r' && s_[e] != '\t' && s_[e] != ',' &&
             s_[e] != ')' && s_[e] != ']')
        ++e;
      std::string_view tok = s_.substr(p_, e - p_);
      size_t c2 = tok.rfind(':');
      size_t c1 = c2 == std::string_view::npos || c2 == 0 ? std::string_view::npos : tok.rfind(':', c2 - 1);
      if (c1 != std::string_view::npos && c1 > 0) {
        std::string file(tok.substr(0, c1));
        p_ += c1;
        return FileLocation(std::move(file));
      }
    }
    return Err(start, fmt::format("expected a location, got {}", Describe()));
  }

  // At `:line:col` after a file name; also `to [line]:col` for ranges.
  Expected<Location> FileLocation(std::string file) {
    Location l;
    l.kind = Location::Kind::kFile;
    l.text = std::move(file);
    OPPROBE_RETURN_IF_ERROR(Expect(':'));
    OPPROBE_ASSIGN_OR_RETURN(l.line, LexInt());
    OPPROBE_RETURN_IF_ERROR(Expect(':'));
    OPPROBE_ASSIGN_OR_RETURN(int64_t col, LexInt());
    (void)col;
    size_t save = p_;
    if (ConsumeWord("to")) {
      SkipWs();
      if (IsDigit(Peek())) {
        OPPROBE_ASSIGN_OR_RETURN(int64_t end_line, LexInt());
        (void)end_line;
      }
      if (!Consume(':')) {
        p_ = save;
        return l;
      }
      OPPROBE_ASSIGN_OR_RETURN(int64_t end_col, LexInt());
      (void)end_col;
    }
    return l;
  }

  // An optional location after an operation, an argument or a closing brace, on the same line: `loc(...)`, or the
  // pretty debug-info form (`"name"(#loc3)`, `#loc3`, `[unknown]`, `/file.py:3:0`).
  Status ParseTrailingLocation(bool& has, Location& out) {
    size_t save = p_;
    if (!SkipSpacesOnLine()) {
      p_ = save;
      return Status::Ok();
    }
    if (LookingAt("loc(")) {
      p_ += 4;
      OPPROBE_ASSIGN_OR_RETURN(out, ParseLocation(false));
      OPPROBE_RETURN_IF_ERROR(Expect(')'));
      has = true;
      return Status::Ok();
    }
    char c = Peek();
    if (c == '"' || c == '#' || c == '[' || c == '/') {
      OPPROBE_ASSIGN_OR_RETURN(out, ParseLocation(true));
      has = true;
      return Status::Ok();
    }
    p_ = save;
    return Status::Ok();
  }

  // `#name = loc(...)` / `#name = <pretty location>` / `#name = attribute`.
  Status ParseAliasDefinition(ParsedModule& m) {
    size_t start = p_;
    ++p_;
    std::string name = LexBareId();
    if (name.empty()) return Err(start, "expected an alias name after '#'");
    if (!Consume('='))
      return Err(p_, fmt::format("expected '=' after {}, got {}", support::Quote("#" + name), Describe()));
    SkipWs();
    if (LookingAt("loc(")) {
      p_ += 4;
      OPPROBE_ASSIGN_OR_RETURN(Location l, ParseLocation(false));
      OPPROBE_RETURN_IF_ERROR(Expect(')'));
      m.location_aliases[name] = std::move(l);
      return Status::Ok();
    }
    // torch_xla's pretty debug info: `#loc1 = /path/file.py:12:0`, `#loc9 = "name"(#loc1)`, `#loc = [unknown]`.
    if (name.rfind("loc", 0) == 0) {
      OPPROBE_ASSIGN_OR_RETURN(Location l, ParseLocation(true));
      m.location_aliases[name] = std::move(l);
      return Status::Ok();
    }
    OPPROBE_ASSIGN_OR_RETURN(Attr a, ParseAttr());
    attr_aliases_[name] = std::move(a);
    return Status::Ok();
  }

  // ---- module and functions ----
  // After `module`: `[@name] [attributes {...}] { ... } [loc]`.
  Status ParseModuleBody(ParsedModule& m) {
    SkipWs();
    if (Peek() == '@') { OPPROBE_ASSIGN_OR_RETURN(m.name, LexSymbolName()); }
    if (ConsumeWord("attributes")) { OPPROBE_ASSIGN_OR_RETURN(m.attributes, ParseAttrDict()); }
    SkipWs();
    size_t open = p_;
    OPPROBE_RETURN_IF_ERROR(Expect('{'));
    while (true) {
      SkipWs();
      if (AtEnd()) return Err(open, "unterminated module: no closing '}'");
      if (Peek() == '}') {
        ++p_;
        break;
      }
      size_t start = p_;
      if (Peek() == '"') {
        OPPROBE_ASSIGN_OR_RETURN(Operation op, ParseOperation());
        bool unused = true;
        OPPROBE_RETURN_IF_ERROR(AddTopLevelGeneric(m, std::move(op), unused));
        continue;
      }
      std::string word = LexBareId();
      if (word == "func.func") {
        OPPROBE_ASSIGN_OR_RETURN(Function f, ParseFunction(start));
        m.functions.push_back(std::move(f));
        continue;
      }
      if (word.empty()) return Err(start, fmt::format("expected an operation in the module, got {}", Describe()));
      std::string dialect = word.substr(0, word.find('.'));
      if (!IsKnownDialect(dialect) || word.find('.') == std::string::npos)
        return Err(start, UnknownDialectMessage(word));
      // Module-level ops other than functions (`sdy.mesh @mesh = <...>`): nothing to convert; skip the line.
      OPPROBE_RETURN_IF_ERROR(SkipToLineEnd());
    }
    bool has = false;
    Location ignored;
    return ParseTrailingLocation(has, ignored);
  }

  std::string UnknownDialectMessage(const std::string& op_name) {
    std::string dialect = op_name.substr(0, op_name.find('.'));
    return fmt::format(
        "operation {} is from dialect {}, which opprobe does not read (StableHLO text holds "
        "stablehlo, chlo, mhlo, func and sdy operations)",
        support::Quote(op_name), support::Quote(dialect));
  }

  // To the end of the line, over any brackets opened on it.
  Status SkipToLineEnd() {
    size_t start = p_;
    int depth = 0;
    while (!AtEnd()) {
      char c = s_[p_];
      if (c == '"') {
        auto s = LexString();
        if (!s.ok()) return s.status();
        continue;
      }
      if (c == '-' && Peek(1) == '>') {
        p_ += 2;
        continue;
      }
      if (c == '\n' && depth == 0) return Status::Ok();
      if (c == '(' || c == '[' || c == '{' || c == '<') ++depth;
      if (c == ')' || c == ']' || c == '}' || c == '>') {
        if (depth == 0) return Status::Ok();  // the enclosing block's end
        --depth;
      }
      ++p_;
    }
    if (depth != 0) return Err(start, "unterminated operation");
    return Status::Ok();
  }

  // After `func.func`: `[visibility] @name(args) [-> results] [attributes {...}] [{ body }] [loc]`.
  Expected<Function> ParseFunction(size_t start) {
    Function f;
    f.pos = start;
    SkipWs();
    if (IsIdStart(Peek())) f.visibility = LexBareId();
    OPPROBE_ASSIGN_OR_RETURN(f.name, LexSymbolName());
    OPPROBE_RETURN_IF_ERROR(Expect('('));
    if (!Consume(')')) {
      do {
        OPPROBE_ASSIGN_OR_RETURN(std::string name, LexValueName());
        OPPROBE_RETURN_IF_ERROR(Expect(':'));
        OPPROBE_ASSIGN_OR_RETURN(Type t, ParseType());
        NamedAttrs attrs;
        SkipWs();
        if (Peek() == '{') { OPPROBE_ASSIGN_OR_RETURN(attrs, ParseAttrDict()); }
        bool has = false;
        Location loc;
        OPPROBE_RETURN_IF_ERROR(ParseTrailingLocation(has, loc));
        f.arguments.emplace_back(std::move(name), std::move(t));
        f.argument_attributes.push_back(std::move(attrs));
        f.argument_locations.push_back(std::move(loc));
      } while (Consume(','));
      OPPROBE_RETURN_IF_ERROR(Expect(')'));
    }
    if (ConsumeArrow()) { OPPROBE_ASSIGN_OR_RETURN(f.result_types, ParseResultTypes()); }
    if (ConsumeWord("attributes")) { OPPROBE_ASSIGN_OR_RETURN(NamedAttrs ignored, ParseAttrDict()); }
    SkipWs();
    if (Peek() != '{')
      return Err(p_,
                 fmt::format("expected the body of function @{}, got {}", support::OneLine(f.name, 64), Describe()));
    std::vector<std::pair<std::string, Type>> args = f.arguments;
    OPPROBE_ASSIGN_OR_RETURN(f.body, ParseRegion(&args));
    bool has = false;
    Location ignored;
    OPPROBE_RETURN_IF_ERROR(ParseTrailingLocation(has, ignored));
    return f;
  }

  // A generic top-level op: `"builtin.module"` (its region holds the functions) or `"func.func"`.
  Status AddTopLevelGeneric(ParsedModule& m, Operation op, bool& saw_module) {
    if (op.name == "builtin.module") {
      if (saw_module) return Err(op.pos, "a second top-level module (opprobe reads one module per file)");
      saw_module = true;
      if (const Attr* n = op.Find("sym_name"); n && n->kind == Attr::Kind::kString) m.name = n->text;
      if (op.regions.size() != 1 || op.regions[0].blocks.size() != 1)
        return Err(op.pos, "a generic builtin.module needs one region with one block");
      for (auto& inner : op.regions[0].blocks[0].operations)
        OPPROBE_RETURN_IF_ERROR(AddTopLevelGeneric(m, std::move(inner), saw_module));
      return Status::Ok();
    }
    if (op.name == "func.func") {
      Function f;
      f.pos = op.pos;
      const Attr* name = op.Find("sym_name");
      const Attr* type = op.Find("function_type");
      if (!name || name->kind != Attr::Kind::kString || !type || type->kind != Attr::Kind::kType ||
          type->type.kind != Type::Kind::kFunction)
        return Err(op.pos, "a generic func.func needs a string sym_name and a function_type");
      f.name = name->text;
      if (const Attr* v = op.Find("sym_visibility"); v && v->kind == Attr::Kind::kString) f.visibility = v->text;
      f.result_types = type->type.results;
      if (op.regions.size() != 1 || op.regions[0].blocks.empty())
        return Err(op.pos, "a generic func.func needs a body");
      const Block& entry = op.regions[0].blocks[0];
      if (entry.arguments.size() != type->type.elements.size())
        return Err(op.pos, "the function's block arguments do not match its function_type");
      f.arguments = entry.arguments;
      const Attr* arg_attrs = op.Find("arg_attrs");
      for (size_t i = 0; i < f.arguments.size(); ++i) {
        NamedAttrs a;
        if (arg_attrs && arg_attrs->kind == Attr::Kind::kArray && i < arg_attrs->elements.size() &&
            arg_attrs->elements[i].kind == Attr::Kind::kDict)
          a = FromDict(arg_attrs->elements[i].dict);
        f.argument_attributes.push_back(std::move(a));
        f.argument_locations.emplace_back();
      }
      f.body = std::move(op.regions[0]);
      m.functions.push_back(std::move(f));
      return Status::Ok();
    }
    std::string dialect = op.name.substr(0, op.name.find('.'));
    if (!IsKnownDialect(dialect)) return Err(op.pos, UnknownDialectMessage(op.name));
    return Status::Ok();  // another module-level op: nothing to convert
  }

  // `{ [^bb0(%a: T, ...):] ops }`; `args` names the entry block's arguments when the syntax gives them outside
  // the region (function arguments, while's iterArgs, reduce's reducer arguments).
  Expected<Region> ParseRegion(const std::vector<std::pair<std::string, Type>>* args) {
    SkipWs();
    size_t open = p_;
    if (++depth_ > kMaxDepth) return Err(p_, "regions nested too deeply");
    OPPROBE_RETURN_IF_ERROR(Expect('{'));
    Region r;
    r.blocks.emplace_back();
    if (args) r.blocks.back().arguments = *args;
    bool first = true;
    while (true) {
      SkipWs();
      if (AtEnd()) return Err(open, "unterminated region: no closing '}'");
      if (Peek() == '}') {
        ++p_;
        break;
      }
      if (Peek() == '^') {
        size_t lpos = p_;
        ++p_;
        std::string label = LexBareId();
        if (label.empty()) return Err(lpos, "expected a block label after '^'");
        if (!first || !r.blocks.back().operations.empty()) r.blocks.emplace_back();
        Block& b = r.blocks.back();
        b.arguments.clear();
        if (Consume('(')) {
          if (!Consume(')')) {
            do {
              OPPROBE_ASSIGN_OR_RETURN(std::string name, LexValueName());
              OPPROBE_RETURN_IF_ERROR(Expect(':'));
              OPPROBE_ASSIGN_OR_RETURN(Type t, ParseType());
              bool has = false;
              Location loc;
              OPPROBE_RETURN_IF_ERROR(ParseTrailingLocation(has, loc));
              b.arguments.emplace_back(std::move(name), std::move(t));
            } while (Consume(','));
            OPPROBE_RETURN_IF_ERROR(Expect(')'));
          }
        }
        OPPROBE_RETURN_IF_ERROR(Expect(':'));
        first = false;
        continue;
      }
      first = false;
      OPPROBE_ASSIGN_OR_RETURN(Operation op, ParseOperation());
      r.blocks.back().operations.push_back(std::move(op));
    }
    --depth_;
    return r;
  }

  // ---- operations ----
  Expected<Operation> ParseOperation() {
    SkipWs();
    Operation op;
    if (Peek() == '%') {
      do {
        OPPROBE_ASSIGN_OR_RETURN(std::string name, LexValueName());
        int64_t count = 1;
        if (Peek() == ':' && IsDigit(Peek(1))) {
          ++p_;
          size_t cpos = p_;
          OPPROBE_ASSIGN_OR_RETURN(count, LexInt());
          if (count < 1 || count > 100000) return Err(cpos, "result count out of range");
        }
        op.results.emplace_back(std::move(name), count);
      } while (Consume(','));
      OPPROBE_RETURN_IF_ERROR(Expect('='));
    }
    SkipWs();
    op.pos = p_;
    if (Peek() == '"') {
      OPPROBE_ASSIGN_OR_RETURN(op.name, LexString());
      OPPROBE_RETURN_IF_ERROR(CheckDialect(op));
      OPPROBE_RETURN_IF_ERROR(ParseGenericBody(op));
    } else {
      std::string word = LexBareId();
      if (word.empty()) return Err(op.pos, fmt::format("expected an operation, got {}", Describe()));
      if (word == "return") word = "func.return";
      if (word == "call") word = "func.call";
      op.name = std::move(word);
      OPPROBE_RETURN_IF_ERROR(CheckDialect(op));
      OPPROBE_RETURN_IF_ERROR(ParsePrettyBody(op));
    }
    OPPROBE_RETURN_IF_ERROR(ParseTrailingLocation(op.has_location, op.location));
    return op;
  }

  Status CheckDialect(const Operation& op) {
    if (op.name.empty() || !std::all_of(op.name.begin(), op.name.end(), IsIdChar))
      return Err(op.pos, fmt::format("malformed operation name {}", support::Quote(op.name)));
    auto dot = op.name.find('.');
    if (dot == std::string::npos || dot == 0)
      return Err(op.pos, fmt::format("operation {} has no dialect prefix (expected e.g. 'stablehlo.add')",
                                     support::Quote(op.name)));
    if (!IsKnownDialect(std::string_view(op.name).substr(0, dot))) return Err(op.pos, UnknownDialectMessage(op.name));
    return Status::Ok();
  }

  // `(operands) [successors] [<{properties}>] [(regions)] [{attributes}] : functional-type`
  Status ParseGenericBody(Operation& op) {
    OPPROBE_RETURN_IF_ERROR(Expect('('));
    if (!Consume(')')) {
      do {
        OPPROBE_ASSIGN_OR_RETURN(Value v, ParseValueUse());
        op.operands.push_back(std::move(v));
      } while (Consume(','));
      OPPROBE_RETURN_IF_ERROR(Expect(')'));
    }
    SkipWs();
    if (Peek() == '[') return Err(p_, "block successors are not supported in StableHLO");
    if (Peek() == '<' && Peek(1) == '{') {
      ++p_;
      OPPROBE_ASSIGN_OR_RETURN(NamedAttrs props, ParseAttrDict());
      OPPROBE_RETURN_IF_ERROR(Expect('>'));
      for (auto& kv : props) op.attributes.push_back(std::move(kv));
    }
    SkipWs();
    if (Peek() == '(') {
      ++p_;
      do {
        OPPROBE_ASSIGN_OR_RETURN(Region r, ParseRegion(nullptr));
        op.regions.push_back(std::move(r));
      } while (Consume(','));
      OPPROBE_RETURN_IF_ERROR(Expect(')'));
    }
    SkipWs();
    if (Peek() == '{') {
      OPPROBE_ASSIGN_OR_RETURN(NamedAttrs attrs, ParseAttrDict());
      for (auto& kv : attrs) op.attributes.push_back(std::move(kv));
    }
    OPPROBE_RETURN_IF_ERROR(Expect(':'));
    SkipWs();
    size_t tpos = p_;
    OPPROBE_ASSIGN_OR_RETURN(Type t, ParseType());
    if (t.kind != Type::Kind::kFunction)
      return Err(tpos, "expected a function type '(...) -> ...' after a generic operation");
    op.operand_types = std::move(t.elements);
    op.result_types = std::move(t.results);
    return Status::Ok();
  }

  // ---- pretty forms ----
  // One value of `key = value` in a pretty form: `[1, 2]`, `[1] x [0]`, `[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]`,
  // `[[1, 1], [0, 0]]`, `{stride = [2, 2], ...}`, a number, a word (`LT`, `e5m10`), a string, `#attr`, `<...>`.
  Expected<Attr> ParsePrettyValue() {
    SkipWs();
    if (++depth_ > kMaxDepth) return Err(p_, "values nested too deeply");
    auto v = ParsePrettyValueInner();
    --depth_;
    return v;
  }

  Expected<Attr> ParsePrettyValueInner() {
    Attr a;
    a.pos = p_;
    char c = Peek();
    if (c == '[') {
      OPPROBE_ASSIGN_OR_RETURN(a, ParsePrettyList());
      // `[1] x [0]` (dot dimensions), `[b, f]x[o, i]->[b, f]` (convolution dimensions)
      size_t save = p_;
      SkipWs();
      if (Peek() == 'x' && !IsIdChar(Peek(1))) {
        ++p_;
        SkipWs();
        if (Peek() == '[') {
          Attr pair;
          pair.kind = Attr::Kind::kArray;
          pair.name = "x";
          pair.pos = a.pos;
          pair.elements.push_back(std::move(a));
          OPPROBE_ASSIGN_OR_RETURN(Attr rhs, ParsePrettyList());
          pair.elements.push_back(std::move(rhs));
          if (ConsumeArrow()) {
            SkipWs();
            OPPROBE_ASSIGN_OR_RETURN(Attr out, ParsePrettyList());
            pair.elements.push_back(std::move(out));
          }
          return pair;
        }
      }
      p_ = save;
      return a;
    }
    if (c == '{') {  // `{stride = [2, 2], pad = [[1, 1]], ...}`
      ++p_;
      a.kind = Attr::Kind::kDict;
      if (Consume('}')) return a;
      do {
        SkipWs();
        size_t kpos = p_;
        std::string key = LexBareId();
        if (key.empty()) return Err(kpos, fmt::format("expected a name, got {}", Describe()));
        OPPROBE_RETURN_IF_ERROR(Expect('='));
        OPPROBE_ASSIGN_OR_RETURN(Attr v, ParsePrettyValue());
        v.key = std::move(key);
        a.dict.push_back(std::move(v));
      } while (Consume(','));
      OPPROBE_RETURN_IF_ERROR(Expect('}'));
      return a;
    }
    if (c == '<') {  // `algorithm = <lhs_precision_type = f32, ...>`
      size_t open = p_++;
      OPPROBE_RETURN_IF_ERROR(SkipBalanced('<', '>', open));
      a.kind = Attr::Kind::kOther;
      a.text = std::string(s_.substr(open + 1, p_ - open - 2));
      return a;
    }
    if (IsIdStart(c) && !LookingAt("dense") && !LookingAt("array<") && !LookingAt("true") && !LookingAt("false")) {
      a.kind = Attr::Kind::kEnum;
      a.text = LexBareId();
      return a;
    }
    if (c == '-' || IsDigit(c)) {  // a number never carries a type here: `dim = 0 : tensor<4xf32>` ends the op
      OPPROBE_RETURN_IF_ERROR(ParseNumber(a));
      return a;
    }
    return ParseAttr();
  }

  // `[a, b, ...]` whose elements are numbers, words, booleans, nested lists, or slice ranges `start:limit[:stride]`.
  Expected<Attr> ParsePrettyList() {
    Attr a;
    a.pos = p_;
    a.kind = Attr::Kind::kArray;
    OPPROBE_RETURN_IF_ERROR(Expect('['));
    if (Consume(']')) return a;
    do {
      SkipWs();
      if (Peek() == '[') {
        if (++depth_ > kMaxDepth) return Err(p_, "lists nested too deeply");
        auto inner = ParsePrettyList();
        --depth_;
        if (!inner.ok()) return inner.status();
        a.elements.push_back(std::move(*inner));
        continue;
      }
      Attr e;
      e.pos = p_;
      if (IsIdStart(Peek())) {
        std::string w = LexBareId();
        if (w == "true" || w == "false") {
          e.kind = Attr::Kind::kBool;
          e.b = w == "true";
        } else {
          e.kind = Attr::Kind::kEnum;
          e.text = std::move(w);
        }
      } else {
        OPPROBE_RETURN_IF_ERROR(ParseNumber(e));
        if (e.kind != Attr::Kind::kInt && e.kind != Attr::Kind::kFloat)
          return Err(e.pos, "expected a number in a list");
        SkipWs();
        if (Peek() == ':' && (IsDigit(Peek(1)) || Peek(1) == '-')) {  // a slice range
          Attr range;
          range.kind = Attr::Kind::kArray;
          range.name = "range";
          range.pos = e.pos;
          range.elements.push_back(e);
          while (Peek() == ':' && (IsDigit(Peek(1)) || Peek(1) == '-')) {
            ++p_;
            Attr n;
            n.pos = p_;
            OPPROBE_RETURN_IF_ERROR(ParseNumber(n));
            range.elements.push_back(n);
            if (range.elements.size() > 3) return Err(n.pos, "a slice range has at most start:limit:stride");
          }
          e = std::move(range);
        }
      }
      a.elements.push_back(std::move(e));
    } while (Consume(','));
    OPPROBE_RETURN_IF_ERROR(Expect(']'));
    return a;
  }

  // Operands, `key = value` items, positional words, a symbol, a string, a `[...]` list and an attribute dict, up
  // to the `:` before the types (or the end of the op when it has no types). Parenthesized groups are read
  // through: `(%a, %b)`, `(%x init: %c)`, `(%iterArg = %init)`, `(%x, k = 3)`.
  Status ParsePrettyItems(Operation& op, std::vector<Attr>& words, bool in_group, int group_depth = 0) {
    if (group_depth > 8) return Err(p_, "groups nested too deeply");
    while (true) {
      SkipWs();
      char c = Peek();
      if (c == ',') {
        ++p_;
        continue;
      }
      if (c == '%') {
        OPPROBE_ASSIGN_OR_RETURN(Value v, ParseValueUse());
        SkipWs();
        if (Peek() == '=' && in_group) {  // while: `%iterArg = %init`
          ++p_;
          Attr name;
          name.kind = Attr::Kind::kString;
          name.text = v.name;
          op.attributes.emplace_back("__iter_arg", std::move(name));
          OPPROBE_ASSIGN_OR_RETURN(Value init, ParseValueUse());
          op.operands.push_back(std::move(init));
          continue;
        }
        op.operands.push_back(std::move(v));
        continue;
      }
      if (c == '(') {
        ++p_;
        OPPROBE_RETURN_IF_ERROR(ParsePrettyItems(op, words, true, group_depth + 1));
        OPPROBE_RETURN_IF_ERROR(Expect(')'));
        continue;
      }
      if (c == ')' && in_group) return Status::Ok();
      if (c == '@') {
        OPPROBE_ASSIGN_OR_RETURN(std::string sym, LexSymbolName());
        op.callees.push_back(std::move(sym));
        continue;
      }
      if (c == '"') {
        Attr s;
        s.kind = Attr::Kind::kString;
        s.pos = p_;
        OPPROBE_ASSIGN_OR_RETURN(s.text, LexString());
        words.push_back(std::move(s));
        continue;
      }
      if (c == '[') {
        OPPROBE_ASSIGN_OR_RETURN(Attr list, ParsePrettyList());
        op.attributes.emplace_back("__list", std::move(list));
        continue;
      }
      if (c == '<' && Peek(1) == '{') {
        ++p_;
        OPPROBE_ASSIGN_OR_RETURN(NamedAttrs props, ParseAttrDict());
        OPPROBE_RETURN_IF_ERROR(Expect('>'));
        for (auto& kv : props) op.attributes.push_back(std::move(kv));
        continue;
      }
      if (c == '{') {
        OPPROBE_ASSIGN_OR_RETURN(NamedAttrs attrs, ParseAttrDict());
        for (auto& kv : attrs) op.attributes.push_back(std::move(kv));
        continue;
      }
      if (c == ':' && in_group) {  // `init:` in a reduce group, `k:`-style labels
        ++p_;
        continue;
      }
      if (c == ':' || c == '}' || c == '\0' || c == ']') return Status::Ok();
      if (IsIdStart(c)) {
        size_t wpos = p_;
        // A keyword followed by `=` is a `key = value` item; otherwise a positional word.
        std::string w = LexBareId();
        size_t after = p_;
        SkipWs();
        if (Peek() == '=' && Peek(1) != '=') {
          ++p_;
          OPPROBE_ASSIGN_OR_RETURN(Attr v, ParsePrettyValue());
          op.attributes.emplace_back(std::move(w), std::move(v));
          continue;
        }
        p_ = after;
        if (w == "init" && in_group) {  // reduce: `(%x init: %c)`
          if (!Consume(':')) return Err(p_, "expected ':' after 'init'");
          OPPROBE_ASSIGN_OR_RETURN(Value init, ParseValueUse());
          Attr mark;
          mark.kind = Attr::Kind::kInt;
          mark.i = static_cast<int64_t>(op.operands.size());
          op.attributes.emplace_back("__init", std::move(mark));
          op.operands.push_back(std::move(init));
          continue;
        }
        if (w == "applies") {  // reduce: `applies stablehlo.add`
          SkipWs();
          size_t ap = p_;
          std::string body = LexBareId();
          if (body.empty()) return Err(ap, "expected an operation after 'applies'");
          Attr b;
          b.kind = Attr::Kind::kString;
          b.text = std::move(body);
          b.pos = ap;
          op.attributes.emplace_back("__applies", std::move(b));
          continue;
        }
        // A word that ends the op's operand part: the start of the next operation or of a region keyword.
        if (!in_group && (w == "cond" || w == "do" || w == "reducer")) {
          p_ = wpos;
          return Status::Ok();
        }
        Attr e;
        e.kind = Attr::Kind::kEnum;
        e.text = std::move(w);
        e.pos = wpos;
        words.push_back(std::move(e));
        continue;
      }
      if (c == '#' || (c == '<' && Peek(1) != '{')) {  // an attribute of an op's own syntax (`<@mesh, [{}]>`)
        Attr a;
        a.pos = p_;
        if (c == '#') {
          OPPROBE_ASSIGN_OR_RETURN(a, ParseAttr());
        } else {
          size_t open = p_++;
          OPPROBE_RETURN_IF_ERROR(SkipBalanced('<', '>', open));
          a.kind = Attr::Kind::kOther;
          a.text = std::string(s_.substr(open + 1, p_ - open - 2));
        }
        words.push_back(std::move(a));
        continue;
      }
      if (c == '-' || IsDigit(c)) {  // a bare number (`stablehlo.constant 1.0 : ...` is not StableHLO, but be exact)
        Attr n;
        n.pos = p_;
        OPPROBE_RETURN_IF_ERROR(ParseNumber(n));
        words.push_back(std::move(n));
        continue;
      }
      return Err(p_, fmt::format("unexpected {} in operation {}", Describe(), support::Quote(op.name)));
    }
  }

  // `: types` after a pretty form: a function type, or a list of types optionally followed by `-> results`.
  // Sets operand_types/result_types; `list` gets the types when they are a plain list.
  Status ParsePrettyTypes(Operation& op, std::vector<Type>& list, bool& functional) {
    functional = false;
    SkipWs();
    if (Peek() != ':') return Status::Ok();
    ++p_;
    SkipWs();
    size_t tpos = p_;
    OPPROBE_ASSIGN_OR_RETURN(Type first, ParseType());
    if (first.kind == Type::Kind::kFunction) {
      functional = true;
      op.operand_types = std::move(first.elements);
      op.result_types = std::move(first.results);
      return Status::Ok();
    }
    (void)tpos;
    list.push_back(std::move(first));
    while (true) {
      size_t save = p_;
      SkipWs();
      if (Peek() != ',') {
        p_ = save;
        break;
      }
      ++p_;
      SkipWs();
      // A list ends where the next token is not a type (the next operation never starts with one).
      if (Peek() == '%' || Peek() == '"' || Peek() == '}' || Peek() == '^') {
        p_ = save;
        break;
      }
      OPPROBE_ASSIGN_OR_RETURN(Type t, ParseType());
      list.push_back(std::move(t));
    }
    if (ConsumeArrow()) {  // chlo: `T -> U`, `T -> (U, V)`
      functional = true;
      op.operand_types = std::move(list);
      list.clear();
      OPPROBE_ASSIGN_OR_RETURN(op.result_types, ParseResultTypes());
    }
    return Status::Ok();
  }

  static Attr IntAttr(int64_t v) {
    Attr a;
    a.kind = Attr::Kind::kInt;
    a.i = v;
    return a;
  }
  static Attr EnumAttr(std::string v) {
    Attr a;
    a.kind = Attr::Kind::kEnum;
    a.text = std::move(v);
    return a;
  }

  Status Rename(Operation& op, const std::string& from, const std::string& to) {
    for (auto& [k, v] : op.attributes)
      if (k == from) k = to;
    return Status::Ok();
  }

  std::string BaseName(const Operation& op) const {
    auto dot = op.name.find('.');
    std::string dialect = op.name.substr(0, dot);
    std::string base = op.name.substr(dot + 1);
    return (dialect == "mhlo" || dialect == "stablehlo") ? base : op.name;
  }

  Status ParsePrettyBody(Operation& op) {
    const std::string base = BaseName(op);
    if (op.name == "func.func") return Err(op.pos, "a nested func.func");
    if (base == "constant" || op.name == "chlo.constant") {
      SkipWs();
      if (Peek() == '(' || Peek() == '<' || Peek() == '{') {
        std::vector<Attr> words;
        std::vector<Type> list;
        bool functional = false;
        OPPROBE_RETURN_IF_ERROR(ParsePrettyItems(op, words, false));
        OPPROBE_RETURN_IF_ERROR(ParsePrettyTypes(op, list, functional));
        if (!functional) op.result_types = list;
        return Status::Ok();
      }
      size_t vpos = p_;
      OPPROBE_ASSIGN_OR_RETURN(Attr value, ParseAttr());
      if (value.kind != Attr::Kind::kDense && value.kind != Attr::Kind::kInt && value.kind != Attr::Kind::kFloat &&
          value.kind != Attr::Kind::kBool)
        return Err(vpos, "expected a dense literal after 'constant'");
      if (value.type.kind == Type::Kind::kOther) return Err(vpos, "a constant needs its type (': tensor<...>')");
      op.result_types.push_back(value.type);
      op.attributes.emplace_back("value", std::move(value));
      return Status::Ok();
    }
    std::vector<Attr> words;
    OPPROBE_RETURN_IF_ERROR(ParsePrettyItems(op, words, false));
    std::vector<Type> list;
    bool functional = false;
    OPPROBE_RETURN_IF_ERROR(ParsePrettyTypes(op, list, functional));

    if (base == "while") {
      std::vector<std::pair<std::string, Type>> args;
      std::vector<std::string> names;
      for (const auto& [k, v] : op.attributes)
        if (k == "__iter_arg") names.push_back(v.text);
      if (names.size() != list.size() || names.size() != op.operands.size())
        return Err(op.pos, "while: the iteration arguments and their types do not match");
      args.reserve(names.size());
      for (size_t i = 0; i < names.size(); ++i) args.emplace_back(names[i], list[i]);
      op.operand_types = list;
      op.result_types = list;
      if (!ConsumeWord("cond")) return Err(p_, fmt::format("while: expected 'cond', got {}", Describe()));
      OPPROBE_ASSIGN_OR_RETURN(Region cond, ParseRegion(&args));
      if (!ConsumeWord("do")) return Err(p_, fmt::format("while: expected 'do', got {}", Describe()));
      OPPROBE_ASSIGN_OR_RETURN(Region body, ParseRegion(&args));
      op.regions.push_back(std::move(cond));
      op.regions.push_back(std::move(body));
      return Status::Ok();
    }
    if (base == "reduce") return FinishPrettyReduce(op, list, functional);

    if (!functional) {
      // A plain type list: the result type(s) in the op's own convention.
      if (base == "select") {
        if (!list.empty()) op.result_types = {list.back()};
      } else if (base == "optimization_barrier" || op.name == "func.return" || base == "return") {
        if (base == "optimization_barrier") op.result_types = list;
        op.operand_types = list;
      } else if (!list.empty()) {
        op.result_types = {list.back()};
        if (list.size() == 1) op.operand_types.assign(op.operands.size(), list[0]);
      }
    }
    if (op.name == "func.return" || base == "return") op.result_types.clear();

    // Positional words and keys, mapped to the generic form's attribute names.
    if (base == "compare") {
      if (words.empty()) return Err(op.pos, "compare: expected a comparison direction");
      op.attributes.emplace_back("comparison_direction", EnumAttr(words[0].text));
      if (words.size() > 1) op.attributes.emplace_back("compare_type", EnumAttr(words[1].text));
      return Status::Ok();
    }
    if (base == "composite") {
      if (words.empty() || words[0].kind != Attr::Kind::kString) return Err(op.pos, "composite: expected its name");
      op.attributes.emplace_back("name", words[0]);
      return Status::Ok();
    }
    if (base == "custom_call") {
      if (op.callees.empty()) return Err(op.pos, "custom_call: expected '@target'");
      Attr t;
      t.kind = Attr::Kind::kString;
      t.text = op.callees[0];
      op.attributes.emplace_back("call_target_name", std::move(t));
      op.callees.clear();
      return Status::Ok();
    }
    if (op.name == "func.call") {
      if (op.callees.empty()) return Err(op.pos, "call: expected '@callee'");
      Attr t;
      t.kind = Attr::Kind::kSymbol;
      t.text = op.callees[0];
      op.attributes.emplace_back("callee", std::move(t));
      op.callees.clear();
      return Status::Ok();
    }
    if (!words.empty()) {  // positional items no known form has: the conversion refuses them for ops it knows
      Attr list;
      list.kind = Attr::Kind::kArray;
      list.pos = words[0].pos;
      list.elements = std::move(words);
      op.attributes.emplace_back("__words", std::move(list));
    }
    if (base == "broadcast_in_dim") return Rename(op, "dims", "broadcast_dimensions");
    if (base == "transpose") return Rename(op, "dims", "permutation");
    if (base == "reverse") return Rename(op, "dims", "dimensions");
    if (base == "broadcast") return Rename(op, "sizes", "broadcast_sizes");
    if (base == "dynamic_slice") return Rename(op, "sizes", "slice_sizes");
    if (base == "iota") return Rename(op, "dim", "iota_dimension");
    if (base == "concatenate" || base == "get_dimension_size") return Rename(op, "dim", "dimension");
    if (base == "pad") {
      Rename(op, "low", "edge_padding_low");
      Rename(op, "high", "edge_padding_high");
      return Rename(op, "interior", "interior_padding");
    }
    if (base == "fft") {
      Rename(op, "type", "fft_type");
      return Rename(op, "length", "fft_length");
    }
    if (base == "rng_bit_generator") return Rename(op, "algorithm", "rng_algorithm");
    if (base == "rng") return Rename(op, "distribution", "rng_distribution");
    if (base == "einsum" || base == "unary_einsum") return Rename(op, "config", "einsum_config");
    if (base == "dot" || base == "dot_general") return Rename(op, "precision", "precision_config");
    if (base == "convolution") {
      Rename(op, "dim_numbers", "dimension_numbers");
      return Rename(op, "window", "__window");
    }
    if (base == "slice") return Rename(op, "__list", "__ranges");
    if (base == "get_tuple_element") {
      const Attr* l = op.Find("__list");
      if (!l || l->elements.size() != 1 || l->elements[0].kind != Attr::Kind::kInt)
        return Err(op.pos, "get_tuple_element: expected '[index]'");
      op.attributes.emplace_back("index", IntAttr(l->elements[0].i));
      return Status::Ok();
    }
    if (base == "reduce_precision") {
      const Attr* f = op.Find("format");
      if (!f || f->kind != Attr::Kind::kEnum) return Err(op.pos, "reduce_precision: expected 'format = eNmM'");
      const std::string t = f->text;  // a copy: adding attributes below moves them
      const size_t fpos = f->pos;
      auto m = t.find('m');
      if (t.size() < 4 || t[0] != 'e' || m == std::string::npos || m < 2 || m + 1 >= t.size() || m - 1 > 9 ||
          t.size() - m - 1 > 9 || !std::all_of(t.begin() + 1, t.begin() + static_cast<long>(m), IsDigit) ||
          !std::all_of(t.begin() + static_cast<long>(m) + 1, t.end(), IsDigit))
        return Err(fpos, fmt::format("reduce_precision: malformed format {}", support::Quote(t)));
      op.attributes.emplace_back("exponent_bits", IntAttr(std::stoll(t.substr(1, m - 1))));
      op.attributes.emplace_back("mantissa_bits", IntAttr(std::stoll(t.substr(m + 1))));
      return Status::Ok();
    }
    return Status::Ok();
  }

  // reduce: `(%x init: %c), (%y init: %d) applies OP across dimensions = [..] : types` or the same with
  // `across dimensions = [..] : types reducer(%a: T, %b: T) (%c: T, %d: T) { body }`.
  Status FinishPrettyReduce(Operation& op, const std::vector<Type>& list, bool functional) {
    if (!functional) {
      if (list.empty()) return Err(op.pos, "reduce: expected its types");
      op.result_types = {list.back()};
    }
    // Operands were read as input, init, input, init, ...: put the inputs first, then the inits.
    std::vector<Value> inputs, inits;
    std::set<int64_t> init_positions;
    for (const auto& [k, v] : op.attributes)
      if (k == "__init") init_positions.insert(v.i);
    for (size_t i = 0; i < op.operands.size(); ++i)
      (init_positions.count(static_cast<int64_t>(i)) ? inits : inputs).push_back(op.operands[i]);
    if (inputs.size() != inits.size() || inputs.empty())
      return Err(op.pos, "reduce: expected '(%input init: %init)' pairs");
    op.operands = inputs;
    op.operands.insert(op.operands.end(), inits.begin(), inits.end());
    if (op.operand_types.size() == op.operands.size()) {  // types were written input, init, input, init too
      std::vector<Type> in_t, init_t;
      for (size_t i = 0; i < op.operand_types.size(); ++i) (i % 2 == 0 ? in_t : init_t).push_back(op.operand_types[i]);
      if (inputs.size() > 1) {
        op.operand_types = in_t;
        op.operand_types.insert(op.operand_types.end(), init_t.begin(), init_t.end());
      }
    }
    size_t n = inputs.size();
    if (const Attr* applies = op.Find("__applies")) {
      if (n != 1) return Err(applies->pos, "reduce: 'applies' takes one input");
      if (op.operand_types.size() != 2) return Err(op.pos, "reduce: expected the types of its input and init value");
      Type scalar = op.operand_types[1];
      Block b;
      b.arguments = {{"__lhs", scalar}, {"__rhs", scalar}};
      Operation body;
      body.name = applies->text;
      body.pos = applies->pos;
      OPPROBE_RETURN_IF_ERROR(CheckDialect(body));
      Value l, r;
      l.name = "__lhs";
      r.name = "__rhs";
      body.operands = {l, r};
      body.results = {{"__result", 1}};
      body.result_types = {scalar};
      Operation ret;
      ret.name = "stablehlo.return";
      Value res;
      res.name = "__result";
      ret.operands = {res};
      b.operations.push_back(std::move(body));
      b.operations.push_back(std::move(ret));
      Region region;
      region.blocks.push_back(std::move(b));
      op.regions.push_back(std::move(region));
      return Status::Ok();
    }
    if (!ConsumeWord("reducer"))
      return Err(p_, fmt::format("reduce: expected 'applies' or 'reducer', got {}", Describe()));
    std::vector<std::pair<std::string, Type>> lhs, rhs;
    for (size_t i = 0; i < n; ++i) {
      OPPROBE_RETURN_IF_ERROR(Expect('('));
      for (int k = 0; k < 2; ++k) {
        OPPROBE_ASSIGN_OR_RETURN(std::string name, LexValueName());
        OPPROBE_RETURN_IF_ERROR(Expect(':'));
        OPPROBE_ASSIGN_OR_RETURN(Type t, ParseType());
        bool has = false;
        Location loc;
        OPPROBE_RETURN_IF_ERROR(ParseTrailingLocation(has, loc));
        (k == 0 ? lhs : rhs).emplace_back(std::move(name), std::move(t));
        if (k == 0) OPPROBE_RETURN_IF_ERROR(Expect(','));
      }
      OPPROBE_RETURN_IF_ERROR(Expect(')'));
    }
    std::vector<std::pair<std::string, Type>> args = lhs;
    args.insert(args.end(), rhs.begin(), rhs.end());
    OPPROBE_ASSIGN_OR_RETURN(Region region, ParseRegion(&args));
    op.regions.push_back(std::move(region));
    return Status::Ok();
  }

  int depth_ = 0;
  std::map<std::string, Attr> attr_aliases_;
};

}  // namespace

Expected<ParsedModule> ParseMlir(std::string_view text, const std::string& source_name) {
  return Parser(text, source_name).Parse();
}

}  // namespace opprobe::hlo::stablehlo
