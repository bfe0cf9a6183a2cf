// Echoing input text in error messages: every loader that puts a name, token or value from its input into a
// message goes through these, so a message is always one line of printable text of bounded length
// (control bytes, newlines and invalid UTF-8 become escapes; long text is cut with "...").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace opprobe::support {

// `text` in single quotes, escaped (\n, \r, \t, \\, \', \xNN) and cut to at most `max_chars` characters of
// the input (then "..." after the closing quote).
std::string Quote(std::string_view text, size_t max_chars = 48);

// `text` escaped the same way but without quotes, cut to at most `max_chars` characters: for a message
// someone else composed (a library's exception text) that may carry input bytes.
std::string OneLine(std::string_view text, size_t max_chars = 400);

// Whether `text` is well-formed UTF-8 (what protobuf requires of a string field), by the same rule the escapes use.
bool IsValidUtf8(std::string_view text);

}  // namespace opprobe::support
