// support::HeapOptional<T>: std::optional's interface over one heap allocation, for the large attribute structs of
// hlo::Instruction that most instructions leave unset (a window, a sharding, a literal): an unset one costs a
// pointer, not the struct's size (issue #17.3: with every struct inline an instruction was 3 KB, and allocating,
// zeroing and freeing them was a large share of parsing a big module). Copies are deep, as std::optional's are.
#pragma once

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace opprobe::support {

template <typename T>
class HeapOptional {
 public:
  using value_type = T;

  HeapOptional() = default;
  HeapOptional(std::nullopt_t) {}                                 // NOLINT: implicit, as std::optional's
  HeapOptional(const T& v) : p_(std::make_unique<T>(v)) {}        // NOLINT
  HeapOptional(T&& v) : p_(std::make_unique<T>(std::move(v))) {}  // NOLINT
  HeapOptional(const std::optional<T>& v) : p_(v ? std::make_unique<T>(*v) : nullptr) {}        // NOLINT
  HeapOptional(std::optional<T>&& v) : p_(v ? std::make_unique<T>(std::move(*v)) : nullptr) {}  // NOLINT
  HeapOptional(const HeapOptional& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  HeapOptional(HeapOptional&&) noexcept = default;
  HeapOptional& operator=(const HeapOptional& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  HeapOptional& operator=(HeapOptional&&) noexcept = default;
  HeapOptional& operator=(std::nullopt_t) {
    p_.reset();
    return *this;
  }
  HeapOptional& operator=(const T& v) {
    emplace(v);
    return *this;
  }
  HeapOptional& operator=(T&& v) {
    emplace(std::move(v));
    return *this;
  }
  HeapOptional& operator=(const std::optional<T>& v) {
    if (v) emplace(*v);
    else p_.reset();
    return *this;
  }
  HeapOptional& operator=(std::optional<T>&& v) {
    if (v) emplace(std::move(*v));
    else p_.reset();
    return *this;
  }

  bool has_value() const { return p_ != nullptr; }
  explicit operator bool() const { return p_ != nullptr; }
  T& operator*() { return *p_; }
  const T& operator*() const { return *p_; }
  T* operator->() { return p_.get(); }
  const T* operator->() const { return p_.get(); }
  T& value() {
    if (!p_) throw std::bad_optional_access();
    return *p_;
  }
  const T& value() const {
    if (!p_) throw std::bad_optional_access();
    return *p_;
  }
  template <typename U>
  T value_or(U&& other) const {
    return p_ ? *p_ : static_cast<T>(std::forward<U>(other));
  }
  template <typename... Args>
  T& emplace(Args&&... args) {
    p_ = std::make_unique<T>(std::forward<Args>(args)...);
    return *p_;
  }
  void reset() { p_.reset(); }
  std::optional<T> ToOptional() const { return p_ ? std::optional<T>(*p_) : std::nullopt; }

  friend bool operator==(const HeapOptional& a, const HeapOptional& b) {
    if (a.has_value() != b.has_value()) return false;
    return !a.has_value() || *a == *b;
  }
  friend bool operator==(const HeapOptional& a, std::nullopt_t) { return !a.has_value(); }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace opprobe::support
