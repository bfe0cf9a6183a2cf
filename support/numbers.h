#pragma once
// Whole-string integer parsing for text opprobe reads (config fields, trace lines, /proc entries, store replies):
// unlike atoi, a malformed or out-of-range value is told apart from a zero.
#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

namespace opprobe::support {

// The integer that `text` spells in base 10 in full (an optional leading '-'; no spaces, no '+', nothing after it),
// or nullopt when it spells none or one out of T's range.
template <typename T = int64_t>
std::optional<T> ParseInteger(std::string_view text) {
  T value{};
  const char* first = text.data();
  const char* last = first + text.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr != last) return std::nullopt;
  return value;
}

}  // namespace opprobe::support
