// The lexer of the StableHLO reader (mlir_parser.h): MLIR text as tokens — bare identifiers (`stablehlo.add`,
// `tensor`, `f32`), value ids (`%arg0`, `%0#1`'s `%0`), symbols (`@main`, `@"quoted"`), hash ids (`#loc3`),
// strings (escapes decoded), integers (decimal or 0x, range-checked), punctuation and `->` — with whitespace and
// `//` comments skipped. Every error reads `source:line:col: message`, one line, input text quoted (support/quote.h).
//
// The parser extends it (class Parser : Lexer) and reads each token by the kind its grammar expects at that place
// (LexBareId, LexString, LexSymbolName, LexValueName, LexInt); `Next` reads whichever token comes. Where MLIR's
// syntax is not made of tokens the parser reads characters at the cursor itself: a tensor type's dimension list
// (`2x?x3xf32` is one bare identifier to a tokenizer), numbers in `dense<...>`, and the brackets it skips whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "support/status.h"

namespace opprobe::hlo::stablehlo {

inline bool IsIdStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
// bare-id characters after the first (MLIR: letter, digit, `_`, `$`, `.`); `-` for suffix ids of values.
inline bool IsIdChar(char c) { return IsIdStart(c) || IsDigit(c) || c == '$' || c == '.'; }
inline bool IsSuffixIdChar(char c) { return IsIdChar(c) || c == '-'; }

struct Token {
  enum class Kind { kEnd, kBareId, kValueId, kSymbol, kHashId, kString, kInteger, kPunct, kArrow };
  Kind kind = Kind::kEnd;
  size_t pos = 0;             // offset of its first character
  std::string_view spelling;  // as written
  std::string text;           // kBareId: the id; kValueId/kSymbol/kHashId: the name without its sigil;
                              // kString: the decoded text; kPunct: the character
  int64_t value = 0;          // kInteger
};

class Lexer {
 public:
  // `text` must outlive the lexer; `source` names it in messages.
  Lexer(std::string_view text, std::string source) : s_(text), source_(std::move(source)) {}

  // The next token of any kind; kEnd at the end of the text. A character that starts no token is an error.
  Expected<Token> Next();

  size_t pos() const { return p_; }

 protected:
  // ---- the cursor ----
  bool AtEnd() const { return p_ >= s_.size(); }
  char Peek(size_t ahead = 0) const { return p_ + ahead < s_.size() ? s_[p_ + ahead] : '\0'; }
  bool LookingAt(std::string_view w) const { return s_.substr(p_, w.size()) == w; }
  // Whitespace and `//` comments.
  void SkipWs();
  // Spaces and tabs only: true when something other than a line end or comment follows on this line.
  bool SkipSpacesOnLine();

  // ---- punctuation and keywords (whitespace before them skipped) ----
  bool Consume(char c);
  bool ConsumeArrow();
  // A keyword: the word followed by a character that cannot continue an identifier.
  bool ConsumeWord(std::string_view w);
  Status Expect(char c);

  // ---- tokens by kind ----
  // A bare identifier at the cursor (no whitespace skipped); empty when none starts here.
  std::string LexBareId();
  // `"..."` with its escapes decoded.
  Expected<std::string> LexString();
  // `@name` or `@"name"` (the name without `@`).
  Expected<std::string> LexSymbolName();
  // `%name` (the name without `%`).
  Expected<std::string> LexValueName();
  // A decimal or 0x integer, optionally negative; the value must fit in int64.
  Expected<int64_t> LexInt();
  // The digits of a non-negative decimal or 0x integer at the cursor, up to 2^64-1.
  Expected<uint64_t> LexMagnitude();

  // ---- messages ----
  // The text at the cursor, quoted, for "expected X, got Y".
  std::string Describe() const;
  Status Err(size_t pos, const std::string& message) const;

  std::string_view s_;
  std::string source_;
  size_t p_ = 0;
};

}  // namespace opprobe::hlo::stablehlo
