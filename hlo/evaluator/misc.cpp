// fft (FFT/IFFT/RFFT/IRFFT over up to 3 trailing dims), rng, rng-bit-generator and batch-norm.
#include <cmath>
#include <unsupported/Eigen/FFT>

#include "hlo/evaluator/internal.h"

namespace opprobe::hlo::eval {
namespace {

using Cd = std::complex<double>;

// In-place 1-D transforms along `axis` of a row-major complex array with dims `d`.
void Transform1D(std::vector<Cd>& a, const std::vector<int64_t>& d, size_t axis, bool inverse) {
  int64_t len = d[axis];
  if (len <= 1) return;
  int64_t inner = 1, outer = 1;
  for (size_t i = axis + 1; i < d.size(); ++i) inner *= d[i];
  for (size_t i = 0; i < axis; ++i) outer *= d[i];
  Eigen::FFT<double> fft;
  std::vector<Cd> in(static_cast<size_t>(len)), out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      Cd* base = a.data() + o * len * inner + j;
      for (int64_t k = 0; k < len; ++k) in[static_cast<size_t>(k)] = base[k * inner];
      if (inverse) fft.inv(out, in);  // scaled by 1/len
      else fft.fwd(out, in);
      for (int64_t k = 0; k < len; ++k) base[k * inner] = out[static_cast<size_t>(k)];
    }
}

}  // namespace

Expected<Literal> EvalFft(Evaluator& ev, const Instruction& ins, const Literal& x) {
  if (!x.shape().IsArray() || !ins.shape.IsArray()) return InvalidInput(fmt::format("{}: fft needs arrays", ins.name));
  const auto& len = ins.rare().fft_length;
  size_t nf = len.size();
  auto xd = x.shape().dimensions();
  size_t rank = xd.size();
  if (nf < 1 || nf > 3 || nf > rank)
    return InvalidInput(fmt::format("{}: fft_length must name 1 to 3 trailing dimensions", ins.name));
  PrimitiveType t = x.shape().element_type();
  std::vector<int64_t> od = xd;
  PrimitiveType rt = t;
  for (int64_t l : len)
    if (l < 0) return InvalidInput(fmt::format("{}: negative fft_length", ins.name));
  switch (ins.fft_type) {
    case FftType::kFft:
    case FftType::kIfft:
      if (!IsComplex(t)) return InvalidInput(fmt::format("{}: FFT needs a complex operand", ins.name));
      for (size_t i = 0; i < nf; ++i)
        if (xd[rank - nf + i] != len[i])
          return InvalidInput(fmt::format("{}: fft_length does not match {}", ins.name, x.shape().ToString(false)));
      break;
    case FftType::kRfft:
      if (t != PrimitiveType::F32 && t != PrimitiveType::F64)
        return InvalidInput(fmt::format("{}: RFFT needs an f32 or f64 operand", ins.name));
      for (size_t i = 0; i < nf; ++i)
        if (xd[rank - nf + i] != len[i])
          return InvalidInput(fmt::format("{}: fft_length does not match {}", ins.name, x.shape().ToString(false)));
      rt = t == PrimitiveType::F32 ? PrimitiveType::C64 : PrimitiveType::C128;
      od.back() = len.back() / 2 + 1;
      break;
    case FftType::kIrfft:
      if (!IsComplex(t)) return InvalidInput(fmt::format("{}: IRFFT needs a complex operand", ins.name));
      for (size_t i = 0; i + 1 < nf; ++i)
        if (xd[rank - nf + i] != len[i])
          return InvalidInput(fmt::format("{}: fft_length does not match {}", ins.name, x.shape().ToString(false)));
      if (xd.back() != len.back() / 2 + 1)
        return InvalidInput(fmt::format("{}: IRFFT input's last dimension must be fft_length/2+1", ins.name));
      rt = ComplexComponentType(t);
      od.back() = len.back();
      break;
  }
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, od, rt));
  OPPROBE_RETURN_IF_ERROR(ev.CheckFlops(ins, static_cast<double>(Product(od)) * 64));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  if (Product(od) == 0 || Product(xd) == 0) return out;
  bool inverse = ins.fft_type == FftType::kIfft || ins.fft_type == FftType::kIrfft;
  if (ins.fft_type != FftType::kIrfft) {
    std::vector<Cd> a(static_cast<size_t>(x.element_count()));
    for (int64_t i = 0; i < x.element_count(); ++i) a[static_cast<size_t>(i)] = x.GetAsComplex(i);
    for (size_t i = 0; i < nf; ++i) Transform1D(a, xd, rank - nf + i, inverse);
    if (ins.fft_type == FftType::kRfft) {
      int64_t in_last = xd.back(), out_last = od.back(), rows = Product(od) / out_last;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < out_last; ++k)
          out.SetFromComplex(r * out_last + k, a[static_cast<size_t>(r * in_last + k)]);
    } else {
      for (int64_t i = 0; i < out.element_count(); ++i) out.SetFromComplex(i, a[static_cast<size_t>(i)]);
    }
    return out;
  }
  // IRFFT: inverse over the leading fft dims, then a Hermitian-extended inverse over the last one.
  std::vector<Cd> a(static_cast<size_t>(x.element_count()));
  for (int64_t i = 0; i < x.element_count(); ++i) a[static_cast<size_t>(i)] = x.GetAsComplex(i);
  for (size_t i = 0; i + 1 < nf; ++i) Transform1D(a, xd, rank - nf + i, true);
  int64_t n = od.back(), half = xd.back(), rows = Product(xd) / half;
  std::vector<Cd> full(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < n; ++k) {
      Cd v = k < half ? a[static_cast<size_t>(r * half + k)] : std::conj(a[static_cast<size_t>(r * half + (n - k))]);
      if (k == 0 || (n % 2 == 0 && k == n / 2)) v = Cd(v.real(), 0.0);
      full[static_cast<size_t>(r * n + k)] = v;
    }
  Transform1D(full, od, rank - 1, true);
  for (int64_t i = 0; i < out.element_count(); ++i) out.SetFromDouble(i, full[static_cast<size_t>(i)].real());
  return out;
}

Expected<Literal> EvalRng(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops) {
  if (ops.size() != 2 || !ops[0]->shape().IsArray() || !ops[1]->shape().IsArray() || ops[0]->shape().rank() != 0 ||
      ops[1]->shape().rank() != 0)
    return InvalidInput(fmt::format("{}: rng takes two scalar parameters", ins.name));
  if (!ins.shape.IsArray() || ins.shape.element_type() != ops[0]->shape().element_type())
    return InvalidInput(fmt::format("{}: rng result type differs from its parameters", ins.name));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  PrimitiveType t = ins.shape.element_type();
  int64_t n = out.element_count();
  auto unit = [&] { return static_cast<double>(ev.NextRandom() >> 11) * 0x1.0p-53; };
  if (ins.distribution == RandomDistribution::kNormal) {
    if (!IsFloatingPoint(t)) return InvalidInput(fmt::format("{}: normal rng needs a float type", ins.name));
    double mu = ops[0]->GetAsDouble(0), sigma = ops[1]->GetAsDouble(0);
    for (int64_t i = 0; i < n; ++i) {
      double u1 = std::max(unit(), 1e-300), u2 = unit();
      out.SetFromDouble(i, mu + sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2));
    }
    return out;
  }
  if (ins.distribution != RandomDistribution::kUniform)
    return InvalidInput(fmt::format("{}: rng without a distribution", ins.name));
  if (IsFloatingPoint(t)) {
    double a = ops[0]->GetAsDouble(0), b = ops[1]->GetAsDouble(0);
    for (int64_t i = 0; i < n; ++i) {
      double v = a + (b - a) * unit();
      out.SetFromDouble(i, v);
      if (out.GetAsDouble(i) >= b && b > a) out.SetFromDouble(i, a);  // rounding must not reach b
    }
  } else if (IsInteger(t) || t == PrimitiveType::PRED) {
    int64_t a = ops[0]->GetAsInt64(0), b = ops[1]->GetAsInt64(0);
    uint64_t span = b > a ? static_cast<uint64_t>(b) - static_cast<uint64_t>(a) : 0;
    for (int64_t i = 0; i < n; ++i)
      out.SetFromInt64(i, span ? static_cast<int64_t>(static_cast<uint64_t>(a) + ev.NextRandom() % span) : a);
  } else {
    return Unimplemented(fmt::format("rng is not defined for {}", PrimitiveTypeName(t)));
  }
  return out;
}

Expected<Literal> EvalRngBitGenerator(Evaluator& ev, const Instruction& ins, const Literal& state) {
  // Deterministic bits from the state (not bit-identical to XLA's Philox/ThreeFry streams).
  if (!state.shape().IsArray() || !ins.shape.IsTuple() || ins.shape.tuple_shapes().size() != 2 ||
      !ins.shape.tuple_shapes()[0].Compatible(state.shape()) || !ins.shape.tuple_shapes()[1].IsArray())
    return InvalidInput(fmt::format("{}: rng-bit-generator returns (state, bits)", ins.name));
  OPPROBE_ASSIGN_OR_RETURN(Literal bits, ev.Allocate(ins.shape.tuple_shapes()[1]));
  uint64_t seed = 0x243f6a8885a308d3ULL;
  for (uint8_t b : state.data()) seed = (seed ^ b) * 0x100000001b3ULL;
  uint64_t s = seed;
  auto next = [&] {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  for (size_t i = 0; i < bits.data().size(); i += 8) {
    uint64_t r = next();
    std::memcpy(bits.data().data() + i, &r, std::min<size_t>(8, bits.data().size() - i));
  }
  Literal new_state = state;
  if (!new_state.data().empty()) {
    uint64_t r = next();
    std::memcpy(new_state.data().data(), &r, std::min<size_t>(8, new_state.data().size()));
  }
  (void)ev;
  return Literal::Tuple({std::move(new_state), std::move(bits)});
}

Expected<Literal> EvalBatchNorm(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops) {
  for (const Literal* l : ops)
    if (!l->shape().IsArray()) return InvalidInput(fmt::format("{}: batch-norm operands must be arrays", ins.name));
  const Literal& x = *ops[0];
  const auto& xd = x.shape().dimensions();
  int64_t f = ins.feature_index;
  if (f < 0 || f >= static_cast<int64_t>(xd.size()))
    return InvalidInput(
        fmt::format("{}: feature_index {} out of range for {}", ins.name, f, x.shape().ToString(false)));
  PrimitiveType t = x.shape().element_type();
  if (!IsFloatingPoint(t)) return InvalidInput(fmt::format("{}: batch-norm needs a float operand", ins.name));
  int64_t F = xd[static_cast<size_t>(f)];
  for (size_t i = 1; i < ops.size(); ++i) {
    bool full = ins.opcode == Opcode::kBatchNormGrad && i == 4;
    if (full ? ops[i]->shape().dimensions() != xd
             : (ops[i]->shape().rank() != 1 || ops[i]->shape().dimensions()[0] != F))
      return InvalidInput(fmt::format("{}: operand {} is {}, expected [{}]", ins.name, i,
                                      ops[i]->shape().ToString(false), full ? DimsToString(xd) : std::to_string(F)));
    if (ops[i]->shape().element_type() != t) return InvalidInput(fmt::format("{}: operand types differ", ins.name));
  }
  int64_t inner = 1, outer = 1;
  for (size_t i = static_cast<size_t>(f) + 1; i < xd.size(); ++i) inner *= xd[i];
  for (size_t i = 0; i < static_cast<size_t>(f); ++i) outer *= xd[i];
  int64_t count = outer * inner;
  double eps = ins.epsilon;
  auto feat = [&](int64_t lin) { return (lin / inner) % F; };
  int64_t n = x.element_count();
  std::vector<double> xv(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) xv[static_cast<size_t>(i)] = x.GetAsDouble(i);
  auto vec = [&](const Literal& l) {
    std::vector<double> v(static_cast<size_t>(F));
    for (int64_t i = 0; i < F; ++i) v[static_cast<size_t>(i)] = l.GetAsDouble(i);
    return v;
  };
  Shape vshape = Shape::Array(t, {F});
  if (ins.opcode == Opcode::kBatchNormInference) {
    if (ops.size() != 5) return InvalidInput(fmt::format("{}: batch-norm-inference takes 5 operands", ins.name));
    OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, xd, t));
    auto scale = vec(*ops[1]), offset = vec(*ops[2]), mean = vec(*ops[3]), var = vec(*ops[4]);
    OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
    for (int64_t i = 0; i < n; ++i) {
      size_t c = static_cast<size_t>(feat(i));
      out.SetFromDouble(i, (xv[static_cast<size_t>(i)] - mean[c]) / std::sqrt(var[c] + eps) * scale[c] + offset[c]);
    }
    return out;
  }
  std::vector<double> mean(static_cast<size_t>(F), 0.0), var(static_cast<size_t>(F), 0.0);
  if (ins.opcode == Opcode::kBatchNormTraining) {
    if (ops.size() != 3) return InvalidInput(fmt::format("{}: batch-norm-training takes 3 operands", ins.name));
    for (int64_t i = 0; i < n; ++i) mean[static_cast<size_t>(feat(i))] += xv[static_cast<size_t>(i)];
    for (auto& m : mean) m = count ? m / static_cast<double>(count) : 0.0;
    for (int64_t i = 0; i < n; ++i) {
      double dlt = xv[static_cast<size_t>(i)] - mean[static_cast<size_t>(feat(i))];
      var[static_cast<size_t>(feat(i))] += dlt * dlt;
    }
    for (auto& v : var) v = count ? v / static_cast<double>(count) : 0.0;
    if (!ins.shape.IsTuple() || ins.shape.tuple_shapes().size() != 3 ||
        !ins.shape.tuple_shapes()[0].Compatible(x.shape()) || !ins.shape.tuple_shapes()[1].Compatible(vshape) ||
        !ins.shape.tuple_shapes()[2].Compatible(vshape))
      return InvalidInput(fmt::format("{}: result {} should be ({}, {}, {})", ins.name, ins.shape.ToString(false),
                                      x.shape().ToString(false), vshape.ToString(false), vshape.ToString(false)));
    auto scale = vec(*ops[1]), offset = vec(*ops[2]);
    OPPROBE_ASSIGN_OR_RETURN(Literal y, ev.Allocate(x.shape()));
    for (int64_t i = 0; i < n; ++i) {
      size_t c = static_cast<size_t>(feat(i));
      y.SetFromDouble(i, (xv[static_cast<size_t>(i)] - mean[c]) / std::sqrt(var[c] + eps) * scale[c] + offset[c]);
    }
    Literal m(vshape), v(vshape);
    for (int64_t c = 0; c < F; ++c)
      m.SetFromDouble(c, mean[static_cast<size_t>(c)]), v.SetFromDouble(c, var[static_cast<size_t>(c)]);
    return Literal::Tuple({std::move(y), std::move(m), std::move(v)});
  }
  // batch-norm-grad(operand, scale, mean, variance, grad_output) -> (grad_operand, grad_scale, grad_offset)
  if (ops.size() != 5) return InvalidInput(fmt::format("{}: batch-norm-grad takes 5 operands", ins.name));
  if (!ins.shape.IsTuple() || ins.shape.tuple_shapes().size() != 3 ||
      !ins.shape.tuple_shapes()[0].Compatible(x.shape()) || !ins.shape.tuple_shapes()[1].Compatible(vshape) ||
      !ins.shape.tuple_shapes()[2].Compatible(vshape))
    return InvalidInput(fmt::format("{}: result {} should be ({}, {}, {})", ins.name, ins.shape.ToString(false),
                                    x.shape().ToString(false), vshape.ToString(false), vshape.ToString(false)));
  auto scale = vec(*ops[1]);
  mean = vec(*ops[2]);
  var = vec(*ops[3]);
  const Literal& gy = *ops[4];
  std::vector<double> sum_gy(static_cast<size_t>(F), 0.0), sum_gy_xc(static_cast<size_t>(F), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    size_t c = static_cast<size_t>(feat(i));
    double g = gy.GetAsDouble(i);
    sum_gy[c] += g;
    sum_gy_xc[c] += g * (xv[static_cast<size_t>(i)] - mean[c]);
  }
  OPPROBE_ASSIGN_OR_RETURN(Literal gx, ev.Allocate(x.shape()));
  double cnt = static_cast<double>(std::max<int64_t>(count, 1));
  for (int64_t i = 0; i < n; ++i) {
    size_t c = static_cast<size_t>(feat(i));
    double rs = 1.0 / std::sqrt(var[c] + eps);
    double xc = xv[static_cast<size_t>(i)] - mean[c];
    double g = gy.GetAsDouble(i);
    gx.SetFromDouble(i, scale[c] * rs * (g - sum_gy[c] / cnt - xc * (sum_gy_xc[c] / cnt) / (var[c] + eps)));
  }
  Literal gs(vshape), gb(vshape);
  for (int64_t c = 0; c < F; ++c) {
    size_t uc = static_cast<size_t>(c);
    gs.SetFromDouble(c, sum_gy_xc[uc] / std::sqrt(var[uc] + eps));
    gb.SetFromDouble(c, sum_gy[uc]);
  }
  return Literal::Tuple({std::move(gx), std::move(gs), std::move(gb)});
}

}  // namespace opprobe::hlo::eval
