// support::SharedValue<T>: an immutable value that copies share (one reference-counted allocation), copied only when
// it is changed, and a T{} that costs no allocation. For values that many instructions hold alike: the HLO text
// parser gives every instruction whose `metadata={...}` text is the same one OpMetadata (issue #17.3: a big
// torch_xla module's 170k instructions carry a few hundred distinct metadata, each with its own strings when held
// by value), and copying an instruction (probe units, Module::Clone) copies no strings.
#pragma once

#include <memory>
#include <utility>

namespace opprobe::support {

template <typename T>
class SharedValue {
 public:
  using value_type = T;

  SharedValue() = default;
  SharedValue(const T& v) : p_(std::make_shared<T>(v)) {}        // NOLINT: implicit, as a T field would take one
  SharedValue(T&& v) : p_(std::make_shared<T>(std::move(v))) {}  // NOLINT
  explicit SharedValue(std::shared_ptr<T> p) : p_(std::move(p)) {}

  const T& operator*() const { return p_ ? *p_ : Default(); }
  const T* operator->() const { return &**this; }
  const T& get() const { return **this; }
  // This holder's own copy to change (the value is copied first when another holder shares it).
  T& mutable_value() {
    if (!p_) {
      p_ = std::make_shared<T>();
    } else if (p_.use_count() > 1) {
      p_ = std::make_shared<T>(*p_);
    }
    return const_cast<T&>(*p_);  // every value is made as a non-const T, and no other holder sees this one
  }
  void reset() { p_.reset(); }
  // Whether both hold the same allocation (then the values are equal without comparing them).
  bool SharesWith(const SharedValue& o) const { return p_ == o.p_; }

  friend bool operator==(const SharedValue& a, const SharedValue& b) { return a.p_ == b.p_ || *a == *b; }

 private:
  static const T& Default() {
    static const T kDefault{};
    return kDefault;
  }
  std::shared_ptr<const T> p_;
};

}  // namespace opprobe::support
