// Strict JSON (RFC 8259, as nlohmann::json's parser accepts it: a leading UTF-8 byte order mark is skipped, strings
// must be valid UTF-8 without raw control characters, integers that do not fit 64 bits become doubles) read as a
// stream: a JsonStream hands out one value at a time from a file read in pieces (or from text in memory), and each
// value is scanned into a JsonTape, a flat array that JsonRef walks. A large document (a trace's `calls` array) is
// thus read element by element, never held whole and never built into a tree of allocated nodes.
// Used by analyzer/loaders/trace_loader.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/file_io.h"
#include "support/status.h"

namespace opprobe::analyzer::json {

class Scanner;  // json_stream.cpp: fills a Tape

enum class Type : uint8_t { kNull, kFalse, kTrue, kInt, kUint, kFloat, kString, kArray, kObject };

// One scanned value: its entries in document order. A container's entry is followed by its children (an object's
// by key, value, key, value, ...); `next` is the index just past an entry's subtree. A string without escapes is a
// view of the scanned text; one with escapes is decoded into the tape's arena (and every string is, in a tape that
// owns its strings: one kept after its text is gone).
class Tape {
 public:
  struct Entry {
    Type type;
    bool in_text;       // kString: the string is the scanned bytes at s.off (not the arena)
    uint32_t next;      // index after this entry's subtree
    uint32_t count;     // array elements, object members
    size_t begin, end;  // the value's bytes in the scanned text (offsets from the scan's start)
    union {
      int64_t i;   // kInt: a negative integer
      uint64_t u;  // kUint: a non-negative integer
      double d;    // kFloat
      struct {
        size_t off, len;  // kString: where the text is (scanned text or arena)
      } s;
    };
  };

  explicit Tape(bool own_strings = false) : own_strings_(own_strings) {}

  bool empty() const { return size_ == 0; }
  const Entry& at(uint32_t i) const { return entries_[i]; }
  // String entry `i` of a value scanned from `text`.
  std::string_view String(uint32_t i, const char* text) const {
    const Entry& e = entries_[i];
    return {(e.in_text ? text : arena_.data()) + e.s.off, e.s.len};
  }

 private:
  friend class Scanner;
  std::vector<Entry> entries_;  // [0, size_) hold the value; the rest is capacity kept between values
  uint32_t size_ = 0;
  std::string arena_;
  bool own_strings_;
};

// A value inside a Tape (valid while the tape is unchanged). `source()` is the value's text, valid while the text
// it was scanned from is (JsonStream: until the next value is read).
class Ref {
 public:
  Ref() = default;
  Ref(const Tape* tape, uint32_t index, const char* text) : tape_(tape), index_(index), text_(text) {}

  Type type() const { return e().type; }
  bool is_null() const { return type() == Type::kNull; }
  bool is_boolean() const { return type() == Type::kFalse || type() == Type::kTrue; }
  bool is_integer() const { return type() == Type::kInt || type() == Type::kUint; }
  bool is_unsigned() const { return type() == Type::kUint; }
  bool is_number() const { return is_integer() || type() == Type::kFloat; }
  bool is_string() const { return type() == Type::kString; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_object() const { return type() == Type::kObject; }

  bool boolean() const { return type() == Type::kTrue; }
  int64_t int64() const { return e().i; }    // kInt, or a kUint that fits
  uint64_t uint64() const { return e().u; }  // kUint
  double number() const;                     // any number, as nlohmann's get<double>()
  std::string_view str() const { return tape_->String(index_, text_); }
  size_t size() const { return e().count; }  // array elements, object members
  std::string_view source() const { return {text_ + e().begin, e().end - e().begin}; }

  // Array elements and object members in document order.
  class Iterator {
   public:
    Iterator(const Tape* tape, const char* text, uint32_t i, bool object)
        : tape_(tape), text_(text), i_(i), object_(object) {}
    bool operator!=(const Iterator& o) const { return i_ != o.i_; }
    Iterator& operator++();
    Ref value() const;             // the element, or the member's value
    std::string_view key() const;  // objects: the member's name
    Ref operator*() const { return value(); }

   private:
    const Tape* tape_;
    const char* text_;
    uint32_t i_;  // the element's entry (objects: the member's key entry)
    bool object_;
  };
  Iterator begin() const { return {tape_, text_, index_ + 1, is_object()}; }
  Iterator end() const { return {tape_, text_, e().next, is_object()}; }

  // The member named `key` (the last one when the name repeats, as a JSON object read into a map keeps it), or
  // nullopt when absent or when this is not an object.
  std::optional<Ref> Find(std::string_view key) const;
  // Find for several names in one pass: found[k] is the member named names[k].
  template <size_t N>
  void FindAll(const std::string_view (&names)[N], std::optional<Ref> (&found)[N]) const {
    for (auto& f : found) f.reset();
    if (!is_object()) return;
    for (auto it = begin(); it != end(); ++it) {
      const std::string_view key = it.key();
      for (size_t k = 0; k < N; ++k) {
        if (key == names[k]) {
          found[k] = it.value();
          break;
        }
      }
    }
  }

 private:
  const Tape::Entry& e() const { return tape_->at(index_); }
  const Tape* tape_ = nullptr;
  uint32_t index_ = 0;
  const char* text_ = nullptr;
};

// Where a document stopped being JSON: the byte offset (0-based) and what was wrong there (no input bytes in it).
struct SyntaxError {
  uint64_t offset = 0;
  std::string what;
};

// Reads a JSON document front to back. Each call moves past what it read; a SyntaxError (or a read error of the
// file) stops the stream for good: error() says which.
class Stream {
 public:
  // Text in memory (not copied: it must outlive the stream), or a file read in pieces of `read_bytes` (at least; a
  // value longer than that is read whole before it is scanned).
  static Stream FromText(std::string_view text);
  static Stream FromFile(io::FileReader reader, size_t read_bytes = size_t{1} << 20);

  // Skips a leading UTF-8 byte order mark and whitespace; false at the end of the input (or on an error).
  bool AtValue();
  // The next non-whitespace character, or nullopt at the end of the input (or on an error); not consumed.
  std::optional<char> Peek();
  // Consumes `c` (after whitespace); else a SyntaxError saying `expected`.
  bool Expect(char c, const char* expected);
  // Scans the next value (after whitespace) into `tape`, whose Refs see it until the next read.
  bool Read(Tape& tape, Ref* value);
  // Consumes the end of the document: only whitespace may follow the value.
  bool ExpectEnd();

  bool failed() const { return !io_error_.ok() || syntax_error_.has_value(); }
  bool io_failed() const { return !io_error_.ok(); }
  // The error that stopped the stream: a read error of the file (kInvalidInput naming the file), or a syntax error
  // as `not valid JSON at line L, column C (byte B): what`, B 1-based as nlohmann reports it.
  Status error() const;
  const std::optional<SyntaxError>& syntax_error() const { return syntax_error_; }
  // Whether the input had nothing but whitespace (checked when an error is reported for an empty input).
  bool only_whitespace_so_far() const { return only_whitespace_; }
  // `line L, column C` of a byte offset already read (the error's place).
  std::string LineColumn(uint64_t offset) const;

 private:
  Stream() = default;
  // Reads more of the file, keeping the bytes from `keep` on (they may move); false when there is no more.
  bool Fill(size_t keep);
  bool SkipWhitespace();
  void Fail(size_t pos, std::string what);

  std::optional<io::FileReader> reader_;
  size_t read_bytes_ = 0;       // how much a file stream reads at a time
  std::string owned_;           // the buffer of a file stream
  const char* data_ = nullptr;  // the text, or owned_.data()
  size_t size_ = 0;             // bytes in data_
  size_t pos_ = 0;              // next byte to read
  bool eof_ = false;            // no more input beyond data_[size_)
  bool started_ = false;        // the byte order mark check is done
  bool only_whitespace_ = true;
  uint64_t dropped_ = 0;               // bytes before data_[0] already read and dropped
  uint64_t dropped_newlines_ = 0;      // '\n' among them
  int64_t dropped_last_newline_ = -1;  // the offset of the last of them
  std::vector<uint32_t> stack_;        // the scanner's open containers (kept for its capacity)
  Status io_error_;
  std::optional<SyntaxError> syntax_error_;
};

}  // namespace opprobe::analyzer::json
