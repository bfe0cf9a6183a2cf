#include "compiler_probe/worker/compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace opprobe::compiler_probe::worker {

namespace {

using hlo::PrimitiveType;

std::string IndexString(const std::vector<int64_t>& dims, int64_t linear) {
  std::vector<int64_t> idx(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    int64_t d = dims[k] > 0 ? dims[k] : 1;
    idx[k] = linear % d;
    linear /= d;
  }
  return fmt::format("[{}]", fmt::join(idx, ","));
}

std::string TypeName(PrimitiveType t) { return std::string(hlo::PrimitiveTypeName(t)); }

std::string DimsString(const std::vector<int64_t>& dims) { return fmt::format("[{}]", fmt::join(dims, ",")); }

std::string FormatValue(double v) { return fmt::format("{:.9g}", v); }

bool Close(double got, double want, const Tolerance& tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  if (std::isnan(got) || std::isinf(got)) return false;
  return std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

}  // namespace

Tolerance ToleranceFor(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::F64:
    case PrimitiveType::C128: return {1e-9, 1e-12};
    case PrimitiveType::F32:
    case PrimitiveType::C64: return {1e-4, 1e-5};
    case PrimitiveType::F16: return {1e-2, 1e-3};
    case PrimitiveType::BF16: return {2e-2, 1e-2};
    default:
      if (hlo::IsFloatingPoint(type)) return {0.25, 0.1};  // f8 kinds
      return {0, 0};                                       // integers and pred: exact
  }
}

namespace {
// Element i of n values of T laid out in `bytes`, as a double.
template <typename T>
double ElementAt(const char* bytes, int64_t i) {
  T v;
  std::memcpy(&v, bytes + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return static_cast<double>(v);
}

// The largest finite magnitude among `l`'s elements (f32 and f64, most outputs, read in place).
double MaxFiniteAbs(const hlo::Literal& l) {
  const char* bytes = reinterpret_cast<const char*>(l.data().data());
  const PrimitiveType t = l.shape().element_type();
  double max_abs = 0;
  for (int64_t i = 0, n = l.element_count(); i < n; ++i) {
    const double v = std::fabs(t == PrimitiveType::F32   ? ElementAt<float>(bytes, i)
                               : t == PrimitiveType::F64 ? ElementAt<double>(bytes, i)
                                                         : l.GetAsDouble(i));
    if (std::isfinite(v)) max_abs = std::max(max_abs, v);
  }
  return max_abs;
}

// Whether every element of `got` (n values of T, the bytes as received) is Close to interp's: what the loop of
// CompareOutput decides for a floating-point type, without building a literal or formatting anything.
template <typename T>
bool AllClose(const hlo::Literal& expected, const std::string& got, int64_t n, const Tolerance& tol) {
  const char* want = reinterpret_cast<const char*>(expected.data().data());
  for (int64_t i = 0; i < n; ++i)
    if (!Close(ElementAt<T>(got.data(), i), ElementAt<T>(want, i), tol)) return false;
  return true;
}
}  // namespace

std::optional<std::string> CompareOutput(const hlo::Literal& expected, const HostArray& got, size_t output_index,
                                         bool accumulated) {
  const hlo::Shape& shape = expected.shape();
  auto got_type = PrimitiveTypeFromPjrt(got.type);
  if (!got_type || *got_type != shape.element_type())
    return fmt::format("output {} has element type {}, interp {}", output_index,
                       got_type ? TypeName(*got_type) : fmt::format("pjrt#{}", got.type),
                       TypeName(shape.element_type()));
  if (got.dims != shape.dimensions())
    return fmt::format("output {} has dims {}, interp {}", output_index, DimsString(got.dims),
                       DimsString(shape.dimensions()));
  if (got.data.size() != expected.data().size())
    return fmt::format("output {} has {} bytes, interp {}", output_index, got.data.size(), expected.data().size());
  const PrimitiveType t = shape.element_type();
  const int64_t n = expected.element_count();
  Tolerance tol = ToleranceFor(t);
  // A sum of many terms differs by rounding in another summation order, most visibly where it cancels to near zero:
  // the absolute tolerance follows the largest magnitude in the output.
  if (accumulated && hlo::IsFloatingPoint(t)) tol.atol = std::max(tol.atol, tol.rtol * MaxFiniteAbs(expected));
  // f32 and f64, most outputs, compared in place first; only a difference is looked at element by element below.
  if (t == PrimitiveType::F32 && AllClose<float>(expected, got.data, n, tol)) return std::nullopt;
  if (t == PrimitiveType::F64 && AllClose<double>(expected, got.data, n, tol)) return std::nullopt;
  hlo::Literal g(hlo::Shape::Array(shape.element_type(), shape.dimensions()));
  std::memcpy(g.data().data(), got.data.data(), got.data.size());
  int64_t bad = 0;
  std::string first;
  for (int64_t i = 0; i < n; ++i) {
    bool same = true;
    std::string got_s, want_s;
    if (hlo::IsComplex(t)) {
      auto a = g.GetAsComplex(i), b = expected.GetAsComplex(i);
      same = Close(a.real(), b.real(), tol) && Close(a.imag(), b.imag(), tol);
      if (!same) {
        got_s = fmt::format("({}, {})", FormatValue(a.real()), FormatValue(a.imag()));
        want_s = fmt::format("({}, {})", FormatValue(b.real()), FormatValue(b.imag()));
      }
    } else if (hlo::IsFloatingPoint(t)) {
      double a = g.GetAsDouble(i), b = expected.GetAsDouble(i);
      same = Close(a, b, tol);
      if (!same) got_s = FormatValue(a), want_s = FormatValue(b);
    } else if (t == PrimitiveType::PRED) {
      bool a = g.data()[static_cast<size_t>(i)] != 0, b = expected.data()[static_cast<size_t>(i)] != 0;
      same = a == b;
      if (!same) got_s = a ? "true" : "false", want_s = b ? "true" : "false";
    } else if (hlo::IsUnsignedInteger(t)) {
      uint64_t a = g.GetAsUint64(i), b = expected.GetAsUint64(i);
      same = a == b;
      if (!same) got_s = std::to_string(a), want_s = std::to_string(b);
    } else {
      int64_t a = g.GetAsInt64(i), b = expected.GetAsInt64(i);
      same = a == b;
      if (!same) got_s = std::to_string(a), want_s = std::to_string(b);
    }
    if (!same) {
      if (bad == 0)
        first = fmt::format("output {} element {}: got {}, interp {}", output_index, IndexString(shape.dimensions(), i),
                            got_s, want_s);
      ++bad;
    }
  }
  if (bad == 0) return std::nullopt;
  std::string tol_s = tol.rtol == 0 ? "exact" : fmt::format("rtol {:g}, atol {:g}", tol.rtol, tol.atol);
  return fmt::format("{} ({} of {} elements differ beyond the {} tolerance: {})", first, bad, n, TypeName(t), tol_s);
}

}  // namespace opprobe::compiler_probe::worker
