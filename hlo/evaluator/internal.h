// Internals shared by the evaluator's source files: element type traits, value conversion, index
// helpers and the Evaluator class. Not a public header.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "hlo/evaluator/evaluator.h"
#include "hlo/instruction.h"

namespace opprobe::hlo::eval {

template <class T>
struct IsComplexT : std::false_type {};
template <class T>
struct IsComplexT<std::complex<T>> : std::true_type {};
template <class T>
inline constexpr bool kIsComplex = IsComplexT<T>::value;
template <class T>
inline constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Storage (bytes in a Literal) and Compute (the C++ type arithmetic runs in) per element type.
template <PrimitiveType P>
struct Traits;

#define OPPROBE_PLAIN_TRAITS(PT, T)                                                          \
  template <>                                                                                \
  struct Traits<PrimitiveType::PT> {                                                         \
    using Compute = T;                                                                       \
    static constexpr int kSize = sizeof(T);                                                  \
    static T Load(const uint8_t* p, int64_t i) {                                             \
      T v;                                                                                   \
      std::memcpy(&v, p + i * kSize, kSize);                                                 \
      return v;                                                                              \
    }                                                                                        \
    static void Store(uint8_t* p, int64_t i, T v) { std::memcpy(p + i * kSize, &v, kSize); } \
  };
OPPROBE_PLAIN_TRAITS(S8, int8_t)
OPPROBE_PLAIN_TRAITS(S16, int16_t)
OPPROBE_PLAIN_TRAITS(S32, int32_t)
OPPROBE_PLAIN_TRAITS(S64, int64_t)
OPPROBE_PLAIN_TRAITS(U8, uint8_t)
OPPROBE_PLAIN_TRAITS(U16, uint16_t)
OPPROBE_PLAIN_TRAITS(U32, uint32_t)
OPPROBE_PLAIN_TRAITS(U64, uint64_t)
OPPROBE_PLAIN_TRAITS(F32, float)
OPPROBE_PLAIN_TRAITS(F64, double)
OPPROBE_PLAIN_TRAITS(C64, std::complex<float>)
OPPROBE_PLAIN_TRAITS(C128, std::complex<double>)
#undef OPPROBE_PLAIN_TRAITS

template <>
struct Traits<PrimitiveType::PRED> {
  using Compute = bool;
  static constexpr int kSize = 1;
  static bool Load(const uint8_t* p, int64_t i) { return p[i] != 0; }
  static void Store(uint8_t* p, int64_t i, bool v) { p[i] = v ? 1 : 0; }
};
template <>
struct Traits<PrimitiveType::F16> {
  using Compute = float;
  static constexpr int kSize = 2;
  static float Load(const uint8_t* p, int64_t i) {
    uint16_t h;
    std::memcpy(&h, p + i * 2, 2);
    return F16ToFloat(h);
  }
  static void Store(uint8_t* p, int64_t i, float v) {
    uint16_t h = FloatToF16(v);
    std::memcpy(p + i * 2, &h, 2);
  }
};
template <>
struct Traits<PrimitiveType::BF16> {
  using Compute = float;
  static constexpr int kSize = 2;
  static float Load(const uint8_t* p, int64_t i) {
    uint16_t h;
    std::memcpy(&h, p + i * 2, 2);
    return Bf16ToFloat(h);
  }
  static void Store(uint8_t* p, int64_t i, float v) {
    uint16_t h = FloatToBf16(v);
    std::memcpy(p + i * 2, &h, 2);
  }
};

template <PrimitiveType P>
using TypeC = std::integral_constant<PrimitiveType, P>;

// Calls f(TypeC<P>{}) for the element types the evaluator computes with; f returns a Status.
template <class F>
Status DispatchType(PrimitiveType t, F&& f) {
  switch (t) {
    case PrimitiveType::PRED: return f(TypeC<PrimitiveType::PRED>{});
    case PrimitiveType::S8: return f(TypeC<PrimitiveType::S8>{});
    case PrimitiveType::S16: return f(TypeC<PrimitiveType::S16>{});
    case PrimitiveType::S32: return f(TypeC<PrimitiveType::S32>{});
    case PrimitiveType::S64: return f(TypeC<PrimitiveType::S64>{});
    case PrimitiveType::U8: return f(TypeC<PrimitiveType::U8>{});
    case PrimitiveType::U16: return f(TypeC<PrimitiveType::U16>{});
    case PrimitiveType::U32: return f(TypeC<PrimitiveType::U32>{});
    case PrimitiveType::U64: return f(TypeC<PrimitiveType::U64>{});
    case PrimitiveType::F16: return f(TypeC<PrimitiveType::F16>{});
    case PrimitiveType::BF16: return f(TypeC<PrimitiveType::BF16>{});
    case PrimitiveType::F32: return f(TypeC<PrimitiveType::F32>{});
    case PrimitiveType::F64: return f(TypeC<PrimitiveType::F64>{});
    case PrimitiveType::C64: return f(TypeC<PrimitiveType::C64>{});
    case PrimitiveType::C128: return f(TypeC<PrimitiveType::C128>{});
    default:
      return Unimplemented(fmt::format("element type {} is not supported by the evaluator", PrimitiveTypeName(t)));
  }
}

// Value conversion with XLA's convert semantics: float -> int saturates and NaN becomes 0; complex ->
// real takes the real part; anything -> pred is `!= 0`; int -> int wraps.
template <class To, class From>
To ConvertValue(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (kIsComplex<From>) {
    if constexpr (kIsComplex<To>) {
      return To(static_cast<typename To::value_type>(v.real()), static_cast<typename To::value_type>(v.imag()));
    } else {
      return ConvertValue<To>(v.real());
    }
  } else if constexpr (kIsComplex<To>) {
    return To(ConvertValue<typename To::value_type>(v), 0);
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return static_cast<To>(v ? 1 : 0);
  } else if constexpr (std::is_floating_point_v<From> && kIsInt<To>) {
    if (std::isnan(v)) return 0;
    if (v <= static_cast<From>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (v >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Row-major strides.
inline std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i)
    s[static_cast<size_t>(i)] = s[static_cast<size_t>(i) + 1] * dims[static_cast<size_t>(i) + 1];
  return s;
}

inline int64_t Product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Calls f(index) for every multi-index of `dims` in row-major order (nothing when a dim is 0).
template <class F>
void ForEachIndex(const std::vector<int64_t>& dims, F&& f) {
  for (int64_t d : dims)
    if (d <= 0) return;
  std::vector<int64_t> idx(dims.size(), 0);
  while (true) {
    f(idx);
    int64_t k = static_cast<int64_t>(dims.size()) - 1;
    for (; k >= 0; --k) {
      if (++idx[static_cast<size_t>(k)] < dims[static_cast<size_t>(k)]) break;
      idx[static_cast<size_t>(k)] = 0;
    }
    if (k < 0) return;
  }
}

// Visits the elements of a permuted view: the result has dims src_dims[perm[j]]; for each result
// element (row-major, linear index `dst`) f(dst, src) gets the source's linear index.
template <class F>
void ForEachPermuted(const std::vector<int64_t>& src_dims, const std::vector<int64_t>& perm, F&& f) {
  size_t r = perm.size();
  std::vector<int64_t> sstr = Strides(src_dims);
  std::vector<int64_t> dims(r), str(r);
  for (size_t j = 0; j < r; ++j) {
    dims[j] = src_dims[static_cast<size_t>(perm[j])];
    str[j] = sstr[static_cast<size_t>(perm[j])];
  }
  int64_t total = Product(dims);
  if (total <= 0) return;
  if (r == 0) {
    f(int64_t{0}, int64_t{0});
    return;
  }
  std::vector<int64_t> idx(r, 0);
  int64_t inner = dims[r - 1], inner_stride = str[r - 1];
  int64_t dst = 0, src = 0;
  while (true) {
    int64_t s = src;
    for (int64_t k = 0; k < inner; ++k, s += inner_stride) f(dst++, s);
    int64_t k = static_cast<int64_t>(r) - 2;
    for (; k >= 0; --k) {
      size_t uk = static_cast<size_t>(k);
      src += str[uk];
      if (++idx[uk] < dims[uk]) break;
      src -= str[uk] * dims[uk];
      idx[uk] = 0;
    }
    if (k < 0) return;
  }
}

Status ShapeMismatch(const Instruction& ins, const std::vector<int64_t>& expected_dims, PrimitiveType expected_type);
// kInvalidInput unless `ins.shape` is an array of `type` with `dims`.
Status ExpectShape(const Instruction& ins, const std::vector<int64_t>& dims, PrimitiveType type);
std::string DimsToString(const std::vector<int64_t>& dims);

// A called computation applied to scalars (reduce, sort comparators, scatter combiners, ...), with a
// fast path for the common one-instruction bodies.
class Evaluator;
using BinaryKernel = void (*)(const uint8_t* a, const uint8_t* b, uint8_t* out, int64_t n);
using CompareKernel = void (*)(const uint8_t* a, const uint8_t* b, uint8_t* out, int64_t n);
BinaryKernel GetBinaryKernel(Opcode op, PrimitiveType type);
CompareKernel GetCompareKernel(ComparisonDirection dir, bool total_order, PrimitiveType type);

class Evaluator {
 public:
  explicit Evaluator(const EvaluatorOptions& options) : options_(options), rng_state_(options.seed) {}

  Expected<Literal> Run(const Computation& computation, const std::vector<const Literal*>& args);
  const EvaluatorOptions& options() const { return options_; }
  uint64_t NextRandom();

  // A zero-filled literal of `shape`, or an error when it is larger than the options allow.
  Expected<Literal> Allocate(const Shape& shape);
  Status CheckFlops(const Instruction& ins, double flops) const;

  // The size of a dynamic dimension recorded by set-dimension-size (else the bound).
  std::unordered_map<const Instruction*, std::vector<int64_t>> dynamic_sizes;

 private:
  // How one computation is run: its instructions reachable from the root, operands first; each one's operand
  // positions in that order; how many uses each value has; the root's position.
  struct Plan {
    std::vector<const Instruction*> order;
    std::vector<std::vector<size_t>> operands;
    std::vector<int> uses;
    size_t root = 0;
  };
  Expected<const Plan*> PlanFor(const Computation& computation);
  Expected<Literal> EvalInstruction(const Instruction& ins, const std::vector<const Literal*>& ops);
  EvaluatorOptions options_;
  uint64_t rng_state_;
  int depth_ = 0;
  int64_t instructions_evaluated_ = 0;
  std::unordered_map<const Computation*, std::unique_ptr<Plan>> plans_;
};

// Handlers, by family (one source file each).
Expected<Literal> EvalElementwise(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops);
Expected<Literal> EvalConvert(Evaluator& ev, const Instruction& ins, const Literal& x);
Expected<Literal> EvalBitcastConvert(Evaluator& ev, const Instruction& ins, const Literal& x);
Expected<Literal> EvalDot(Evaluator& ev, const Instruction& ins, const Literal& lhs, const Literal& rhs);
Expected<Literal> EvalConvolution(Evaluator& ev, const Instruction& ins, const Literal& lhs, const Literal& rhs);
Expected<Literal> EvalReduce(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops);
Expected<Literal> EvalReduceWindow(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops);
Expected<Literal> EvalSelectAndScatter(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops);
Expected<Literal> EvalSort(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops);
Expected<Literal> EvalTopK(Evaluator& ev, const Instruction& ins, const Literal& x);
Expected<Literal> EvalGather(Evaluator& ev, const Instruction& ins, const Literal& operand, const Literal& indices);
Expected<Literal> EvalScatter(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops);
Expected<Literal> EvalMap(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops);
Expected<Literal> EvalFft(Evaluator& ev, const Instruction& ins, const Literal& x);
Expected<Literal> EvalRng(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops);
Expected<Literal> EvalRngBitGenerator(Evaluator& ev, const Instruction& ins, const Literal& state);
Expected<Literal> EvalBatchNorm(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops);
Expected<Literal> EvalReducePrecision(Evaluator& ev, const Instruction& ins, const Literal& x);
// decomposition.cpp: cholesky, triangular-solve and the custom-call targets of XLA's linear-algebra
// builders ("Qr", "ProductOfElementaryHouseholderReflectors", "Eigh", "LuDecomposition").
Expected<Literal> EvalCholesky(Evaluator& ev, const Instruction& ins, const Literal& a);
Expected<Literal> EvalTriangularSolve(Evaluator& ev, const Instruction& ins, const Literal& a, const Literal& b);
Expected<Literal> EvalCustomCall(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops);

// A scalar literal holding element `i` of `x`.
Literal ScalarAt(const Literal& x, int64_t i);

// onednn.cpp: f32 GEMM and convolution through oneDNN, single-threaded. OneDnnGemm computes c[i] = op(a[i]) *
// op(b[i]) for i < batch (row-major; a[i] is [m,k], or [k,m] when trans_a; b[i] is [k,n], or [n,k] when
// trans_b); OneDnnConvolution computes `ins` (checked by the caller) into `out`. Both return false when
// oneDNN does not take the case (f32 operands only; no base dilation, batch groups or negative padding), and
// the caller computes it with Eigen.
bool OneDnnGemm(int64_t batch, int64_t m, int64_t n, int64_t k, const float* a, bool trans_a, const float* b,
                bool trans_b, float* c);
bool OneDnnConvolution(const Instruction& ins, const Literal& lhs, const Literal& rhs, Literal& out);
// Below this many multiply-adds a dot or convolution stays on Eigen: oneDNN's set-up (and, for a
// convolution, generating its kernel) costs more than the product.
inline constexpr double kOneDnnMinMultiplyAdds = 1 << 16;

// The geometry of a reduce-window / select-and-scatter window over an operand of dims `in`.
struct WindowGeom {
  std::vector<int64_t> in, out, size;
  std::vector<WindowDimension> w;
};

// compiled_loops.cpp: the typed loops for called computations region.h recognises. Each is called after
// the generic path's checks, with the results allocated (reduce: filled with the init values), and
// returns false, having changed nothing, when the computation is not one it recognises.
bool CompiledReduce(const Instruction& ins, const std::vector<const Literal*>& ops, std::vector<Literal>& outs,
                    const std::vector<PrimitiveType>& types, const std::vector<bool>& reduced);
bool CompiledReduceWindow(const Instruction& ins, const std::vector<const Literal*>& ops, const WindowGeom& g,
                          std::vector<Literal>& outs, const std::vector<PrimitiveType>& types);
bool CompiledSelectAndScatter(const Instruction& ins, const Literal& operand, const Literal& source,
                              const WindowGeom& g, Literal& out);

// A called computation applied to scalars. Fast when the body is one binary op / compare of its
// parameters; otherwise evaluates the computation on rank-0 literals.
class ScalarFn {
 public:
  // `n` operands combined pairwise: parameters are (acc_0..acc_{n-1}, x_0..x_{n-1}) for reduce-like
  // computations.
  static Expected<ScalarFn> ForReducer(Evaluator& ev, const Instruction& ins, const Computation* comp, int n,
                                       PrimitiveType type);
  // Fast path kernel (nullptr if the body is general).
  BinaryKernel binary = nullptr;
  bool swap = false;         // root is op(p1, p0)
  bool take_second = false;  // root is p1 (scatter's "assign")
  bool take_first = false;   // root is p0
  const Computation* comp = nullptr;
  Evaluator* ev = nullptr;

  // General call: returns the root literal (a tuple when the root is a tuple).
  Expected<Literal> Call(const std::vector<const Literal*>& args) const;
};

}  // namespace opprobe::hlo::eval
