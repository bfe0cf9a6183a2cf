#include "analyzer/loaders/json_stream.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "support/quote.h"

namespace opprobe::analyzer::json {

namespace {

// How a byte is handled inside a string: 0 plain, 1 `"`, 2 `\`, 3 a control character, 4 not ASCII (UTF-8).
constexpr std::array<uint8_t, 256> kStringClass = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = 3;
  t['"'] = 1;
  t['\\'] = 2;
  for (int c = 0x80; c < 0x100; ++c) t[c] = 4;
  return t;
}();

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// A byte of the input in a message: `'x'`, or escaped (`'\x01'`).
std::string Describe(char c) { return support::Quote(std::string_view(&c, 1)); }

}  // namespace

// Scans one JSON value from [begin, end) into a Tape; `eof` says whether more input can follow `end` (if it can, a
// value cut off by `end` asks for more instead of failing).
class Scanner {
 public:
  enum class Result { kOk, kNeedMore, kError };

  Scanner(const char* begin, const char* end, bool eof, Tape& tape, std::vector<uint32_t>& stack)
      : b_(begin), p_(begin), e_(end), eof_(eof), t_(tape), ents_(tape.entries_), arena_(tape.arena_), stack_(stack) {}

  Result Scan(size_t* consumed);
  size_t error_at() const { return error_at_; }
  std::string& what() { return what_; }

 private:
  Result Error(const char* at, std::string what) {
    error_at_ = static_cast<size_t>(at - b_);
    what_ = std::move(what);
    return Result::kError;
  }
  // The input ran out at `e_`: more may come, or the document ended too early.
  Result More(const char* expected) {
    if (!eof_) return Result::kNeedMore;
    return Error(e_, fmt::format("unexpected end of input; expected {}", expected));
  }
  bool SkipSpace() {
    while (p_ < e_ && IsSpace(*p_)) ++p_;
    return p_ < e_;
  }
  uint32_t Push(Type type) {
    const uint32_t index = t_.size_;
    if (index == ents_.size()) ents_.resize(std::max<size_t>(64, ents_.size() * 2));
    Tape::Entry& e = ents_[index];
    e.type = type;
    e.in_text = false;
    e.next = index + 1;
    e.count = 0;
    e.begin = static_cast<size_t>(p_ - b_);
    e.end = e.begin;
    t_.size_ = index + 1;
    return index;
  }
  void Close() {
    Tape::Entry& e = ents_[stack_.back()];
    e.next = t_.size_;
    e.end = static_cast<size_t>(p_ - b_);
    stack_.pop_back();
  }
  Result Key();
  Result String();
  Result Utf8OrControl();
  Result Escape();
  Result Literal(const char* word, Type type);
  Result Number();

  const char* b_;
  const char* p_;
  const char* e_;
  bool eof_;
  Tape& t_;
  std::vector<Tape::Entry>& ents_;
  std::string& arena_;
  std::vector<uint32_t>& stack_;  // open containers
  size_t error_at_ = 0;
  std::string what_;
};

Scanner::Result Scanner::Scan(size_t* consumed) {
  t_.size_ = 0;
  arena_.clear();
  stack_.clear();
  Result r;
  for (;;) {
    // A value starts here.
    if (!SkipSpace()) return More("a value");
    switch (*p_) {
      case '{': {
        stack_.push_back(Push(Type::kObject));
        ++p_;
        if (!SkipSpace()) return More("a member name or '}'");
        if (*p_ != '}') {
          r = Key();
          if (r != Result::kOk) return r;
          continue;  // the member's value
        }
        ++p_;
        Close();
        break;
      }
      case '[': {
        stack_.push_back(Push(Type::kArray));
        ++p_;
        if (!SkipSpace()) return More("a value or ']'");
        if (*p_ != ']') continue;  // the first element
        ++p_;
        Close();
        break;
      }
      case '"':
        r = String();
        if (r != Result::kOk) return r;
        break;
      case 't':
        r = Literal("true", Type::kTrue);
        if (r != Result::kOk) return r;
        break;
      case 'f':
        r = Literal("false", Type::kFalse);
        if (r != Result::kOk) return r;
        break;
      case 'n':
        r = Literal("null", Type::kNull);
        if (r != Result::kOk) return r;
        break;
      case '-':
      case '0':
      case '1':
      case '2':
      case '3':
      case '4':
      case '5':
      case '6':
      case '7':
      case '8':
      case '9':
        r = Number();
        if (r != Result::kOk) return r;
        break;
      default: return Error(p_, fmt::format("unexpected {}; expected a value", Describe(*p_)));
    }
    // A value is complete: it belongs to the innermost open container, which goes on or closes.
    for (;;) {
      if (stack_.empty()) {
        *consumed = static_cast<size_t>(p_ - b_);
        return Result::kOk;
      }
      Tape::Entry& top = ents_[stack_.back()];
      ++top.count;
      const bool object = top.type == Type::kObject;
      if (!SkipSpace()) return More(object ? "',' or '}'" : "',' or ']'");
      if (*p_ == ',') {
        ++p_;
        if (object) {
          r = Key();
          if (r != Result::kOk) return r;
        }
        break;  // the next element or member value
      }
      if (*p_ == (object ? '}' : ']')) {
        ++p_;
        Close();
        continue;  // the closed container is a complete value of its parent
      }
      return Error(p_, fmt::format("unexpected {}; expected {}", Describe(*p_), object ? "',' or '}'" : "',' or ']'"));
    }
  }
}

// A member name and its colon.
Scanner::Result Scanner::Key() {
  if (!SkipSpace()) return More("a member name");
  if (*p_ != '"') return Error(p_, fmt::format("unexpected {}; expected a member name (a string)", Describe(*p_)));
  Result r = String();
  if (r != Result::kOk) return r;
  if (!SkipSpace()) return More("':'");
  if (*p_ != ':') return Error(p_, fmt::format("unexpected {}; expected ':'", Describe(*p_)));
  ++p_;
  return Result::kOk;
}

// The first byte of `w` (8 bytes, little-endian) that ends a run of plain string characters: `"`, `\`, a control
// character or a byte that is not ASCII; 8 when there is none. (The borrows of the subtractions can only mark a byte
// above a byte that is marked rightly, so the lowest mark is always right.)
inline unsigned FirstSpecial(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  const uint64_t quote = w ^ (kOnes * '"'), backslash = w ^ (kOnes * '\\');
  const uint64_t marks =
      ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | ((w - kOnes * 0x20) & ~w) | w;
  const uint64_t m = marks & kHigh;
  return m == 0 ? 8 : static_cast<unsigned>(std::countr_zero(m)) >> 3;
}

Scanner::Result Scanner::String() {
  const uint32_t index = Push(Type::kString);
  const char* p = p_ + 1;  // past the opening quote
  const char* start = p;
  // The common case: no escape (nor, where the tape owns its strings, a copy): the string is a view of the text.
  for (;;) {
    while (e_ - p >= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      const unsigned k = FirstSpecial(w);
      p += k;
      if (k < 8) break;
    }
    while (p < e_ && kStringClass[static_cast<unsigned char>(*p)] == 0) ++p;
    if (p == e_) {
      p_ = p;
      return More("the rest of the string and its closing '\"'");
    }
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"') {
      Tape::Entry& e = ents_[index];
      if (t_.own_strings_) {
        e.s.off = arena_.size();
        arena_.append(start, static_cast<size_t>(p - start));
      } else {
        e.in_text = true;
        e.s.off = static_cast<size_t>(start - b_);
      }
      e.s.len = static_cast<size_t>(p - start);
      p_ = p + 1;
      e.end = static_cast<size_t>(p_ - b_);
      return Result::kOk;
    }
    if (c == '\\') break;  // escapes: decode into the arena below
    p_ = p;
    Result r = Utf8OrControl();
    if (r != Result::kOk) return r;
    p = p_;
  }
  // With escapes: the text so far, then the rest decoded.
  const size_t off = arena_.size();
  arena_.append(start, static_cast<size_t>(p - start));
  p_ = p;
  for (;;) {
    const char* q = p_;
    while (q < e_ && kStringClass[static_cast<unsigned char>(*q)] == 0) ++q;
    arena_.append(p_, static_cast<size_t>(q - p_));
    p_ = q;
    if (p_ == e_) return More("the rest of the string and its closing '\"'");
    const unsigned char c = static_cast<unsigned char>(*p_);
    if (c == '"') {
      ++p_;
      Tape::Entry& e = ents_[index];
      e.s.off = off;
      e.s.len = arena_.size() - off;
      e.end = static_cast<size_t>(p_ - b_);
      return Result::kOk;
    }
    if (c == '\\') {
      Result r = Escape();
      if (r != Result::kOk) return r;
      continue;
    }
    const char* before = p_;
    Result r = Utf8OrControl();
    if (r != Result::kOk) return r;
    arena_.append(before, static_cast<size_t>(p_ - before));
  }
}

// At p_: a control character (an error) or the lead byte of a UTF-8 character, which must be whole and well formed
// as RFC 3629 allows it (no overlong forms, no surrogates, nothing past U+10FFFF); moves past it.
Scanner::Result Scanner::Utf8OrControl() {
  const unsigned char c = static_cast<unsigned char>(*p_);
  if (c < 0x20) return Error(p_, fmt::format("control character U+{:04X} in a string (JSON needs it escaped)", c));
  int n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 1;
  else if (c == 0xE0) n = 2, lo = 0xA0;
  else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) n = 2;
  else if (c == 0xED) n = 2, hi = 0x9F;
  else if (c == 0xF0) n = 3, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) n = 3;
  else if (c == 0xF4) n = 3, hi = 0x8F;
  else return Error(p_, fmt::format("invalid UTF-8 byte 0x{:02X} in a string", c));
  const char* q = p_ + 1;
  for (int k = 0; k < n; ++k, ++q) {
    if (q == e_) return More("the rest of a UTF-8 character");
    const unsigned char x = static_cast<unsigned char>(*q);
    if (x < lo || x > hi) return Error(q, fmt::format("invalid UTF-8 byte 0x{:02X} in a string", x));
    lo = 0x80, hi = 0xBF;
  }
  p_ = q;
  return Result::kOk;
}

// An escape sequence at p_ (the backslash), decoded into the arena.
Scanner::Result Scanner::Escape() {
  if (p_ + 1 >= e_) return More("an escape sequence");
  const char c = p_[1];
  switch (c) {
    case '"':
    case '\\':
    case '/':
      arena_ += c;
      p_ += 2;
      return Result::kOk;
    case 'b':
      arena_ += '\b';
      p_ += 2;
      return Result::kOk;
    case 'f':
      arena_ += '\f';
      p_ += 2;
      return Result::kOk;
    case 'n':
      arena_ += '\n';
      p_ += 2;
      return Result::kOk;
    case 'r':
      arena_ += '\r';
      p_ += 2;
      return Result::kOk;
    case 't':
      arena_ += '\t';
      p_ += 2;
      return Result::kOk;
    case 'u': break;
    default: return Error(p_ + 1, fmt::format("invalid escape {} in a string", Describe(c)));
  }
  auto hex4 = [&](const char* at, uint32_t* out) -> Result {
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      if (at + k >= e_) return More("the four hex digits of a \\u escape");
      int h = HexValue(at[k]);
      if (h < 0)
        return Error(at + k, fmt::format("unexpected {} in a \\u escape; expected a hex digit", Describe(at[k])));
      v = v * 16 + static_cast<uint32_t>(h);
    }
    *out = v;
    return Result::kOk;
  };
  uint32_t cp = 0;
  Result r = hex4(p_ + 2, &cp);
  if (r != Result::kOk) return r;
  const char* after = p_ + 6;
  if (cp >= 0xDC00 && cp <= 0xDFFF) return Error(p_, "a \\u escape of a low surrogate without a high one before it");
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    if (after + 1 >= e_) return More("the low surrogate after a high one");
    if (after[0] != '\\' || after[1] != 'u')
      return Error(after, "a high surrogate \\u escape without a low one after it");
    uint32_t low = 0;
    r = hex4(after + 2, &low);
    if (r != Result::kOk) return r;
    if (low < 0xDC00 || low > 0xDFFF) return Error(after, "a high surrogate \\u escape without a low one after it");
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    after += 6;
  }
  AppendUtf8(arena_, cp);
  p_ = after;
  return Result::kOk;
}

Scanner::Result Scanner::Literal(const char* word, Type type) {
  const size_t n = std::strlen(word);
  for (size_t k = 0; k < n; ++k) {
    if (p_ + k >= e_) return More(fmt::format("'{}'", word).c_str());
    if (p_[k] != word[k]) return Error(p_ + k, fmt::format("invalid literal; expected '{}'", word));
  }
  const uint32_t index = Push(type);
  p_ += n;
  ents_[index].end = static_cast<size_t>(p_ - b_);
  return Result::kOk;
}

// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?: an integer when it has neither fraction nor exponent and fits 64 bits
// (negative ones in int64, the others in uint64), else a double (as strtod reads it, so 1e999 is infinity).
Scanner::Result Scanner::Number() {
  const char* start = p_;
  const char* q = p_;
  const bool negative = *q == '-';
  if (negative) ++q;
  auto digit_needed = [&](const char* what) -> Result {
    if (q == e_) return More(what);
    return Error(q, fmt::format("unexpected {} in a number; expected {}", Describe(*q), what));
  };
  if (q == e_ || !IsDigit(*q)) return digit_needed("a digit");
  uint64_t magnitude = 0;
  bool overflow = false;
  if (*q == '0') {
    ++q;
  } else {
    while (q < e_ && IsDigit(*q)) {
      const uint64_t d = static_cast<uint64_t>(*q - '0');
      if (magnitude > (UINT64_MAX - d) / 10) overflow = true;
      else magnitude = magnitude * 10 + d;
      ++q;
    }
  }
  bool is_float = false;
  if (q < e_ && *q == '.') {
    is_float = true;
    ++q;
    if (q == e_ || !IsDigit(*q)) return digit_needed("a digit after '.'");
    while (q < e_ && IsDigit(*q)) ++q;
  }
  if (q < e_ && (*q == 'e' || *q == 'E')) {
    is_float = true;
    ++q;
    if (q < e_ && (*q == '+' || *q == '-')) ++q;
    if (q == e_ || !IsDigit(*q)) return digit_needed("a digit in the exponent");
    while (q < e_ && IsDigit(*q)) ++q;
  }
  if (q == e_ && !eof_) return Result::kNeedMore;  // more digits may follow
  const uint32_t index = Push(Type::kUint);
  Tape::Entry& e = ents_[index];
  if (!is_float && !overflow && (!negative || magnitude <= (uint64_t{1} << 63))) {
    if (negative) {
      e.type = Type::kInt;
      e.i = magnitude == (uint64_t{1} << 63) ? INT64_MIN : -static_cast<int64_t>(magnitude);
    } else {
      e.u = magnitude;
    }
  } else {
    e.type = Type::kFloat;
    double d = 0;
    auto [end, ec] = std::from_chars(start, q, d);
    if (ec != std::errc() || end != q) {  // out of range: strtod's zero for a tiny number, infinity for a huge one
      std::string text(start, q);
      d = std::strtod(text.c_str(), nullptr);
    }
    if (std::isinf(d)) return Error(start, "a number too large for a double");  // nlohmann refuses it too
    e.d = d;
  }
  p_ = q;
  e.end = static_cast<size_t>(p_ - b_);
  return Result::kOk;
}

double Ref::number() const {
  switch (type()) {
    case Type::kInt: return static_cast<double>(e().i);
    case Type::kUint: return static_cast<double>(e().u);
    case Type::kFloat: return e().d;
    default: return 0;
  }
}

Ref::Iterator& Ref::Iterator::operator++() {
  if (object_) ++i_;  // past the key
  i_ = tape_->at(i_).next;
  return *this;
}

Ref Ref::Iterator::value() const { return Ref(tape_, object_ ? i_ + 1 : i_, text_); }

std::string_view Ref::Iterator::key() const { return tape_->String(i_, text_); }

std::optional<Ref> Ref::Find(std::string_view key) const {
  if (!is_object()) return std::nullopt;
  std::optional<Ref> found;
  for (auto it = begin(); it != end(); ++it)
    if (it.key() == key) found = it.value();
  return found;
}

Stream Stream::FromText(std::string_view text) {
  Stream s;
  s.data_ = text.data();
  s.size_ = text.size();
  s.eof_ = true;
  return s;
}

Stream Stream::FromFile(io::FileReader reader, size_t read_bytes) {
  Stream s;
  s.reader_.emplace(std::move(reader));
  s.read_bytes_ = std::max<size_t>(1, read_bytes);
  return s;
}

bool Stream::Fill(size_t keep) {
  if (eof_ || failed() || !reader_) return false;
  if (keep > 0) {  // drop what was read before `keep`, remembering its lines for error places
    const char* d = owned_.data();
    const char* end = d + keep;
    for (const char* q = d; (q = static_cast<const char*>(std::memchr(q, '\n', static_cast<size_t>(end - q)))); ++q) {
      ++dropped_newlines_;
      dropped_last_newline_ = static_cast<int64_t>(dropped_ + static_cast<uint64_t>(q - d));
    }
    std::memmove(owned_.data(), owned_.data() + keep, size_ - keep);
    size_ -= keep;
    pos_ -= keep;
    dropped_ += keep;
  }
  // Room for one more piece; the buffer only grows when a value is longer than what it holds.
  if (owned_.size() - size_ < read_bytes_) owned_.resize(std::max(size_ + read_bytes_, owned_.size() * 2));
  auto n = reader_->Read(owned_.data() + size_, read_bytes_);
  data_ = owned_.data();
  if (!n.ok()) {
    io_error_ = n.status();
    return false;
  }
  if (*n == 0) eof_ = true;
  size_ += *n;
  return true;
}

bool Stream::SkipWhitespace() {
  for (;;) {
    if (failed()) return false;
    if (!started_) {
      // A UTF-8 byte order mark may open the document (nlohmann skips it too).
      if (size_ - pos_ < 3 && !eof_) {
        if (!Fill(pos_)) return false;
        continue;
      }
      started_ = true;
      if (pos_ < size_ && data_[pos_] == '\xEF') {
        only_whitespace_ = false;
        if (size_ - pos_ >= 3 && data_[pos_ + 1] == '\xBB' && data_[pos_ + 2] == '\xBF') {
          pos_ += 3;
        } else {
          Fail(pos_, "a byte 0xEF that does not start a UTF-8 byte order mark");
          return false;
        }
      }
    }
    while (pos_ < size_ && IsSpace(data_[pos_])) ++pos_;
    if (pos_ < size_) {
      only_whitespace_ = false;
      return true;
    }
    if (!Fill(pos_)) return false;
  }
}

bool Stream::AtValue() { return SkipWhitespace(); }

std::optional<char> Stream::Peek() {
  if (!SkipWhitespace()) return std::nullopt;
  return data_[pos_];
}

bool Stream::Expect(char c, const char* expected) {
  if (!SkipWhitespace()) {
    if (!failed()) Fail(pos_, fmt::format("unexpected end of input; expected {}", expected));
    return false;
  }
  if (data_[pos_] != c) {
    Fail(pos_, fmt::format("unexpected {}; expected {}", Describe(data_[pos_]), expected));
    return false;
  }
  ++pos_;
  return true;
}

bool Stream::Read(Tape& tape, Ref* value) {
  for (;;) {
    if (!SkipWhitespace()) {
      if (!failed()) Fail(pos_, "unexpected end of input; expected a value");
      return false;
    }
    Scanner scanner(data_ + pos_, data_ + size_, eof_, tape, stack_);
    size_t consumed = 0;
    switch (scanner.Scan(&consumed)) {
      case Scanner::Result::kOk:
        *value = Ref(&tape, 0, data_ + pos_);
        pos_ += consumed;
        return true;
      case Scanner::Result::kError: Fail(pos_ + scanner.error_at(), std::move(scanner.what())); return false;
      case Scanner::Result::kNeedMore:
        if (!Fill(pos_)) return false;  // a read error (without one, the scan at the end could not ask for more)
        break;
    }
  }
}

bool Stream::ExpectEnd() {
  if (SkipWhitespace()) {
    Fail(pos_, fmt::format("unexpected {} after the end of the document", Describe(data_[pos_])));
    return false;
  }
  return !failed();
}

void Stream::Fail(size_t pos, std::string what) {
  if (!failed()) syntax_error_ = SyntaxError{dropped_ + pos, std::move(what)};
}

std::string Stream::LineColumn(uint64_t offset) const {
  uint64_t line = 1 + dropped_newlines_;
  int64_t last_newline = dropped_last_newline_;
  if (offset > dropped_) {
    const size_t rel = static_cast<size_t>(std::min<uint64_t>(offset - dropped_, size_));
    for (size_t i = 0; i < rel; ++i) {
      if (data_[i] == '\n') {
        ++line;
        last_newline = static_cast<int64_t>(dropped_ + i);
      }
    }
  }
  return fmt::format("line {}, column {}", line, static_cast<int64_t>(offset) - last_newline);
}

Status Stream::error() const {
  if (!io_error_.ok()) return io_error_;
  if (!syntax_error_) return Status::Ok();
  return InvalidInput(fmt::format("not valid JSON at {} (byte {}): {}", LineColumn(syntax_error_->offset),
                                  syntax_error_->offset + 1, syntax_error_->what));
}

}  // namespace opprobe::analyzer::json
