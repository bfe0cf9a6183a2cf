#include "support/quote.h"

#include <fmt/format.h>

namespace opprobe::support {
namespace {

// Length of the valid UTF-8 sequence of two to four bytes that starts at text[i], or 0.
size_t Utf8Length(std::string_view text, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char c = b(i);
  size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && b(i + 1) < 0xA0) return 0;  // overlong
  if (c == 0xED && b(i + 1) > 0x9F) return 0;  // surrogates
  if (c == 0xF0 && b(i + 1) < 0x90) return 0;  // overlong
  if (c == 0xF4 && b(i + 1) > 0x8F) return 0;  // past U+10FFFF
  return n;
}

std::string Escape(std::string_view text, size_t max_chars, bool quoted) {
  std::string out;
  size_t chars = 0, i = 0;
  for (; i < text.size() && chars < max_chars; ++chars) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (quoted && (c == '\\' || c == '\'')) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else if (size_t n = c >= 0x80 ? Utf8Length(text, i) : 0; n > 0) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
    ++i;
  }
  if (quoted) out = "'" + out + "'";
  if (i < text.size()) out += "...";
  return out;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = Utf8Length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string Quote(std::string_view text, size_t max_chars) { return Escape(text, max_chars, true); }

std::string OneLine(std::string_view text, size_t max_chars) { return Escape(text, max_chars, false); }

}  // namespace opprobe::support
