// Error values used at every folder boundary of opprobe (DESIGN.md: exceptions never cross a folder).
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace opprobe {

// What went wrong, in no layer's vocabulary: the libraries say what failed, and only the CLI decides what that
// means for its exit code (cli/exit_codes.h).
enum class ErrorCode {
  kOk = 0,
  kInvalidInput,   // the caller's input is wrong: a malformed file, a bad argument or option value, a bad spec
  kUnavailable,    // something needed is not there or will not start (a plugin, a compiler, a Python package)
  kUnimplemented,  // a feature that is not (yet) there: becomes a verdict, not a crash
  kInternal,       // a bug in opprobe
};

class Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with a place ("file.pt2: entry model.json", "line 3:7"), innermost last.
  Status WithContext(const std::string& where) const {
    if (ok()) return *this;
    return Status(code_, where + ": " + message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status InvalidInput(std::string m) { return Status(ErrorCode::kInvalidInput, std::move(m)); }
inline Status Unavailable(std::string m) { return Status(ErrorCode::kUnavailable, std::move(m)); }
inline Status Unimplemented(std::string m) { return Status(ErrorCode::kUnimplemented, std::move(m)); }
inline Status Internal(std::string m) { return Status(ErrorCode::kInternal, std::move(m)); }

// A value or the Status that explains why there is none.
template <typename T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}                                              // NOLINT(implicit)
  Expected(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace opprobe

#define OPPROBE_CONCAT_INNER(a, b) a##b
#define OPPROBE_CONCAT(a, b) OPPROBE_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` (a Status) is not ok.
#define OPPROBE_RETURN_IF_ERROR(expr) \
  do {                                \
    ::opprobe::Status _st = (expr);   \
    if (!_st.ok()) return _st;        \
  } while (0)

// `OPPROBE_ASSIGN_OR_RETURN(auto x, MakeX());` unwraps an Expected or returns its Status.
#define OPPROBE_ASSIGN_OR_RETURN(lhs, expr) \
  OPPROBE_ASSIGN_OR_RETURN_IMPL(OPPROBE_CONCAT(_expected_, __LINE__), lhs, expr)
// `lhs` is a declaration (`auto x`) and `tmp` a name: neither can be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define OPPROBE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
