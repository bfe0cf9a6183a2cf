// FFTs lower to XLA's `fft` (fft_type FFT/IFFT/RFFT/IRFFT with fft_length over the trailing
// dims), as JAX's lax.fft does; transformed dims that are not trailing are moved there with a
// transpose and back. torch's normalization (0 none, 1 1/sqrt(n), 2 1/n) is a multiply; XLA's IFFT
// and IRFFT already divide by n, which a backward (inverse) transform compensates.
#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

struct Moved {
  Instruction* x;
  std::vector<int64_t> inverse;  // permutation back
};

// Moves `dims` (sorted) to the end in order.
Moved ToBack(Builder& b, Instruction* x, const std::vector<int64_t>& dims) {
  int64_t r = x->shape.rank();
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < r; ++i)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) perm.push_back(i);
  for (int64_t d : dims) perm.push_back(d);
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return {b.Transpose(x, perm), inv};
}

// Scale so that the result equals torch's normalization `norm` for a transform over n points;
// `xla_divides` when the XLA op already divided by n (inverse transforms).
Instruction* Normalize(Builder& b, Instruction* x, int64_t norm, double n, bool xla_divides) {
  double want = norm == 0 ? 1.0 : norm == 1 ? 1.0 / std::sqrt(n) : 1.0 / n;
  double have = xla_divides ? 1.0 / n : 1.0;
  double scale = want / have;
  if (scale == 1.0) return x;
  if (hlo::IsComplex(x->shape.element_type()))
    return Mul(b, x, b.Broadcast(ScalarC(b, x->shape.element_type(), scale), Dims(x), {}));
  return MulScalar(b, x, scale);
}

Expected<std::vector<int64_t>> FftDims(const LoweringContext& ctx, int64_t rank) {
  std::vector<int64_t> dims = ctx.Ints("dim", 1);
  auto nd = NormDims(dims, rank, false);
  if (!nd.ok()) return ctx.Unsupported(nd.status().message());
  if (nd->empty() || nd->size() > 3) return ctx.Unsupported("fft over 1 to 3 dims only");
  return nd;
}

// Runs complex FFT/IFFT over `dims` of a complex x, in chunks of up to 3 trailing dims.
Instruction* ComplexFft(Builder& b, Instruction* x, const std::vector<int64_t>& dims, bool forward) {
  Moved m = ToBack(b, x, dims);
  std::vector<int64_t> d = Dims(m.x);
  std::vector<int64_t> len(d.end() - static_cast<long>(dims.size()), d.end());
  Instruction* f = b.Fft(m.x, forward ? hlo::FftType::kFft : hlo::FftType::kIfft, len);
  return b.Transpose(f, m.inverse);
}

Expected<LoweredOp> FftR2C(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(std::vector<int64_t> dims, FftDims(ctx, x->shape.rank()));
  int64_t norm = ctx.Int("normalization", 2, 0);
  bool onesided = ctx.Bool("onesided", 3, true);
  PrimitiveType t = x->shape.element_type();
  if (!hlo::IsFloatingPoint(t)) return ctx.Unsupported("needs a real floating-point input");
  PrimitiveType ct = t == PrimitiveType::F64 ? PrimitiveType::C128 : PrimitiveType::C64;
  double count = 1;
  for (int64_t d : dims) count *= static_cast<double>(Dims(x)[static_cast<size_t>(d)]);
  Instruction* r;
  if (onesided) {
    Moved m = ToBack(b, x, dims);
    std::vector<int64_t> md = Dims(m.x);
    std::vector<int64_t> len(md.end() - static_cast<long>(dims.size()), md.end());
    r = b.Transpose(b.Fft(m.x, hlo::FftType::kRfft, len), m.inverse);
  } else {
    // Full spectrum: convert to complex (as XLA frontends do for a c2c transform) and FFT.
    r = ComplexFft(b, b.Convert(x, ct), dims, true);
  }
  return ctx.Finish({Normalize(b, r, norm, count, false)});
}

Expected<LoweredOp> FftC2C(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(std::vector<int64_t> dims, FftDims(ctx, x->shape.rank()));
  int64_t norm = ctx.Int("normalization", 2, 0);
  bool forward = ctx.Bool("forward", 3, true);
  if (!hlo::IsComplex(x->shape.element_type())) return ctx.Unsupported("needs a complex input");
  double count = 1;
  for (int64_t d : dims) count *= static_cast<double>(Dims(x)[static_cast<size_t>(d)]);
  Instruction* r = ComplexFft(b, x, dims, forward);
  return ctx.Finish({Normalize(b, r, norm, count, !forward)});
}

Expected<LoweredOp> FftC2R(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, ctx.RequiredTensor("self", 0));
  OPPROBE_ASSIGN_OR_RETURN(std::vector<int64_t> dims, FftDims(ctx, x->shape.rank()));
  int64_t norm = ctx.Int("normalization", 2, 0);
  int64_t last = ctx.Int("last_dim_size", 3, 0);
  if (!hlo::IsComplex(x->shape.element_type())) return ctx.Unsupported("needs a complex input");
  Moved m = ToBack(b, x, dims);
  std::vector<int64_t> md = Dims(m.x);
  std::vector<int64_t> len(md.end() - static_cast<long>(dims.size()), md.end());
  len.back() = last;
  // IRFFT reads last/2+1 input points on the last dim: trim or zero-pad to that.
  int64_t want = last / 2 + 1, have = md.back();
  Instruction* in = m.x;
  int64_t ld = static_cast<int64_t>(md.size()) - 1;
  if (have > want) {
    in = b.SliceInDim(in, 0, want, 1, ld);
  } else if (have < want) {
    hlo::PaddingConfig cfg;
    cfg.dimensions.resize(md.size());
    cfg.dimensions.back().edge_padding_high = want - have;
    in = b.Pad(in, ScalarC(b, x->shape.element_type(), 0), cfg);
  }
  Instruction* r = b.Transpose(b.Fft(in, hlo::FftType::kIrfft, len), m.inverse);
  double count = 1;
  for (int64_t l : len) count *= static_cast<double>(l);
  return ctx.Finish({Normalize(b, r, norm, count, true)});
}

}  // namespace

const LoweringFamily& FftLowerings() {
  static const auto* family = new LoweringFamily{FamilyOf(__FILE__),
                                                 {
                                                     {"aten::_fft_r2c", FftR2C},
                                                     {"aten::_fft_c2r", FftC2R},
                                                     {"aten::_fft_c2c", FftC2C},
                                                 }};
  return *family;
}
}  // namespace opprobe::analyzer::lowering
