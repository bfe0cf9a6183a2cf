#include "hlo/stablehlo/mlir_lexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "hlo/stablehlo/mlir_ir.h"
#include "support/quote.h"

namespace opprobe::hlo::stablehlo {

void Lexer::SkipWs() {
  while (p_ < s_.size()) {
    char c = s_[p_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++p_;
    } else if (c == '/' && Peek(1) == '/') {
      while (p_ < s_.size() && s_[p_] != '\n') ++p_;
    } else {
      break;
    }
  }
}

bool Lexer::SkipSpacesOnLine() {
  while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\t')) ++p_;
  return p_ < s_.size() && s_[p_] != '\n' && s_[p_] != '\r' && !(s_[p_] == '/' && Peek(1) == '/');
}

bool Lexer::Consume(char c) {
  SkipWs();
  if (Peek() != c) return false;
  ++p_;
  return true;
}

bool Lexer::ConsumeArrow() {
  SkipWs();
  if (!LookingAt("->")) return false;
  p_ += 2;
  return true;
}

bool Lexer::ConsumeWord(std::string_view w) {
  SkipWs();
  if (!LookingAt(w) || IsIdChar(Peek(w.size()))) return false;
  p_ += w.size();
  return true;
}

Status Lexer::Expect(char c) {
  if (Consume(c)) return Status::Ok();
  return Err(p_, fmt::format("expected '{}', got {}", c, Describe()));
}

std::string Lexer::Describe() const {
  if (AtEnd()) return "end of input";
  size_t n = 0;
  while (p_ + n < s_.size() && n < 24 && s_[p_ + n] != ' ' && s_[p_ + n] != '\n' && s_[p_ + n] != '\t') ++n;
  return support::Quote(s_.substr(p_, std::max<size_t>(n, 1)), 24);
}

Status Lexer::Err(size_t pos, const std::string& message) const {
  auto [line, col] = LineColumn(s_, pos);
  return InvalidInput(fmt::format("{}:{}:{}: {}", source_, line, col, message));
}

std::string Lexer::LexBareId() {
  size_t start = p_;
  if (p_ < s_.size() && IsIdStart(s_[p_])) {
    ++p_;
    while (p_ < s_.size() && IsIdChar(s_[p_])) ++p_;
  }
  return std::string(s_.substr(start, p_ - start));
}

Expected<std::string> Lexer::LexString() {
  SkipWs();
  size_t start = p_;
  if (Peek() != '"') return Err(p_, fmt::format("expected a string, got {}", Describe()));
  ++p_;
  std::string out;
  while (true) {
    if (AtEnd() || s_[p_] == '\n') return Err(start, "unterminated string");
    char c = s_[p_++];
    if (c == '"') break;
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (AtEnd()) return Err(start, "unterminated string");
    char e = s_[p_++];
    if (e == 'n') out.push_back('\n');
    else if (e == 't') out.push_back('\t');
    else if (e == '"' || e == '\\') out.push_back(e);
    else if (IsHexDigit(e) && IsHexDigit(Peek())) {
      out.push_back(static_cast<char>(std::stoi(std::string{e, s_[p_]}, nullptr, 16)));
      ++p_;
    } else {
      return Err(p_ - 2, "unknown escape in string");
    }
  }
  return out;
}

Expected<std::string> Lexer::LexSymbolName() {
  SkipWs();
  if (Peek() != '@') return Err(p_, fmt::format("expected a symbol '@name', got {}", Describe()));
  ++p_;
  if (Peek() == '"') return LexString();
  size_t start = p_;
  while (p_ < s_.size() && (IsSuffixIdChar(s_[p_]))) ++p_;
  if (p_ == start) return Err(start, "expected a symbol name after '@'");
  return std::string(s_.substr(start, p_ - start));
}

Expected<std::string> Lexer::LexValueName() {
  SkipWs();
  if (Peek() != '%') return Err(p_, fmt::format("expected a value '%name', got {}", Describe()));
  ++p_;
  size_t start = p_;
  while (p_ < s_.size() && IsSuffixIdChar(s_[p_])) ++p_;
  if (p_ == start) return Err(start - 1, "expected a value name after '%'");
  return std::string(s_.substr(start, p_ - start));
}

Expected<int64_t> Lexer::LexInt() {
  SkipWs();
  size_t start = p_;
  bool neg = false;
  if (Peek() == '-') {
    neg = true;
    ++p_;
  }
  auto mag = LexMagnitude();
  if (!mag.ok()) {
    p_ = start;
    return Err(start, fmt::format("expected an integer, got {}", Describe()));
  }
  if (*mag > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (neg ? 1u : 0u))
    return Err(start, "integer out of range");
  return neg ? static_cast<int64_t>(0 - *mag) : static_cast<int64_t>(*mag);
}

Expected<uint64_t> Lexer::LexMagnitude() {
  size_t start = p_;
  int base = 10;
  if (Peek() == '0' && (Peek(1) == 'x' || Peek(1) == 'X') && IsHexDigit(Peek(2))) {
    base = 16;
    p_ += 2;
  }
  size_t digits = p_;
  while (p_ < s_.size() && (base == 16 ? IsHexDigit(s_[p_]) : IsDigit(s_[p_]))) ++p_;
  if (p_ == digits) return Err(start, "expected digits");
  uint64_t v = 0;
  for (size_t i = digits; i < p_; ++i) {
    char c = s_[i];
    uint64_t d = IsDigit(c) ? static_cast<uint64_t>(c - '0') : static_cast<uint64_t>((c | 0x20) - 'a' + 10);
    if (v > (std::numeric_limits<uint64_t>::max() - d) / static_cast<uint64_t>(base))
      return Err(start, "integer out of range");
    v = v * static_cast<uint64_t>(base) + d;
  }
  return v;
}

Expected<Token> Lexer::Next() {
  SkipWs();
  Token t;
  t.pos = p_;
  if (AtEnd()) return t;
  const char c = Peek();
  if (IsIdStart(c)) {
    t.kind = Token::Kind::kBareId;
    t.text = LexBareId();
  } else if (c == '%') {
    t.kind = Token::Kind::kValueId;
    OPPROBE_ASSIGN_OR_RETURN(t.text, LexValueName());
  } else if (c == '@') {
    t.kind = Token::Kind::kSymbol;
    OPPROBE_ASSIGN_OR_RETURN(t.text, LexSymbolName());
  } else if (c == '"') {
    t.kind = Token::Kind::kString;
    OPPROBE_ASSIGN_OR_RETURN(t.text, LexString());
  } else if (c == '#') {
    ++p_;
    t.kind = Token::Kind::kHashId;
    t.text = LexBareId();
    if (t.text.empty()) {  // `#0`, as in `%0#1`
      while (p_ < s_.size() && IsSuffixIdChar(s_[p_])) ++p_;
      t.text = std::string(s_.substr(t.pos + 1, p_ - t.pos - 1));
    }
    if (t.text.empty()) return Err(t.pos, "expected a name after '#'");
  } else if (c == '-' && Peek(1) == '>') {
    t.kind = Token::Kind::kArrow;
    p_ += 2;
  } else if (IsDigit(c) || (c == '-' && IsDigit(Peek(1)))) {
    t.kind = Token::Kind::kInteger;
    OPPROBE_ASSIGN_OR_RETURN(t.value, LexInt());
  } else if (std::string_view("(){}[]<>,:=?*!+-^/|").find(c) != std::string_view::npos) {
    t.kind = Token::Kind::kPunct;
    t.text = std::string(1, c);
    ++p_;
  } else {
    return Err(p_, fmt::format("unexpected character {}", support::Quote(s_.substr(p_, 1))));
  }
  t.spelling = s_.substr(t.pos, p_ - t.pos);
  return t;
}

}  // namespace opprobe::hlo::stablehlo
