// dot and convolution: with f32 accumulation and at least kOneDnnMinMultiplyAdds, through oneDNN
// (onednn.cpp); otherwise, or where oneDNN does not take the case, through Eigen's matrix products: dot
// transposes into [B,M,K] x [B,K,N] GEMMs; convolution builds im2col patch matrices (channels last) and
// multiplies them per group.
#include <Eigen/Core>
#include <algorithm>

#include "hlo/evaluator/internal.h"

namespace opprobe::hlo::eval {
namespace {

// The type dot/convolution accumulate in: complex<double|float>, double, float or int64.
enum class Acc { kF32, kF64, kC64, kC128, kI64 };

Acc AccFor(PrimitiveType a, PrimitiveType b, PrimitiveType out) {
  bool cx = IsComplex(a) || IsComplex(b) || IsComplex(out);
  bool wide = a == PrimitiveType::F64 || b == PrimitiveType::F64 || out == PrimitiveType::F64 ||
              a == PrimitiveType::C128 || b == PrimitiveType::C128 || out == PrimitiveType::C128;
  if (cx) return wide ? Acc::kC128 : Acc::kC64;
  if (IsFloatingPoint(a) || IsFloatingPoint(b) || IsFloatingPoint(out)) return wide ? Acc::kF64 : Acc::kF32;
  return Acc::kI64;
}

template <class F>
Status DispatchAcc(Acc a, F&& f) {
  switch (a) {
    case Acc::kF32: return f(float{});
    case Acc::kF64: return f(double{});
    case Acc::kC64: return f(std::complex<float>{});
    case Acc::kC128: return f(std::complex<double>{});
    case Acc::kI64: return f(int64_t{});
  }
  return Internal("bad accumulator");
}

// buf[j] (row-major over dims x.dims[perm[..]]) = x at the permuted position, converted to A.
template <class A>
Status LoadPermuted(const Literal& x, const std::vector<int64_t>& perm, std::vector<A>& buf) {
  buf.resize(static_cast<size_t>(x.element_count()));
  return DispatchType(x.shape().element_type(), [&](auto tc) {
    using T = Traits<decltype(tc)::value>;
    const uint8_t* p = x.data().data();
    A* b = buf.data();
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
    if (identity) {
      int64_t n = x.element_count();
      for (int64_t i = 0; i < n; ++i) b[i] = ConvertValue<A>(T::Load(p, i));
    } else {
      ForEachPermuted(x.shape().dimensions(), perm,
                      [&](int64_t dst, int64_t src) { b[dst] = ConvertValue<A>(T::Load(p, src)); });
    }
    return Status::Ok();
  });
}

// Stores buf (row-major over dims out.dims[perm[..]]) into `out`.
template <class A>
Status StorePermuted(const std::vector<A>& buf, const std::vector<int64_t>& perm, Literal& out) {
  return DispatchType(out.shape().element_type(), [&](auto tc) {
    using T = Traits<decltype(tc)::value>;
    using C = typename T::Compute;
    uint8_t* p = out.data().data();
    const A* b = buf.data();
    ForEachPermuted(out.shape().dimensions(), perm,
                    [&](int64_t dst, int64_t src) { T::Store(p, src, ConvertValue<C>(b[dst])); });
    return Status::Ok();
  });
}

template <class A>
using RowMat = Eigen::Matrix<A, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Status CheckDims(const Instruction& ins, const std::vector<int64_t>& dims, int rank, const char* what) {
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || seen[static_cast<size_t>(d)])
      return InvalidInput(fmt::format("{}: bad {} dimensions {}", ins.name, what, DimsToString(dims)));
    seen[static_cast<size_t>(d)] = true;
  }
  return Status::Ok();
}

bool IsIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// dot as B GEMMs [M,K] x [K,N] through oneDNN. An f32 operand whose layout already is the matrix or its
// transpose is read in place; any other is copied into that layout first. lperm / rperm list the operand
// dims in [batch, free, contracting] / [batch, contracting, free] order.
bool DotThroughOneDnn(const Literal& lhs, const Literal& rhs, const DotDimensionNumbers& dn,
                      const std::vector<int64_t>& lperm, const std::vector<int64_t>& rperm, int64_t B, int64_t M,
                      int64_t N, int64_t K, Literal& out) {
  // The operand as float data [batch][rows][cols] (trans: [batch][cols][rows]).
  auto matrix = [&](const Literal& x, const std::vector<int64_t>& perm, const std::vector<int64_t>& batch,
                    const std::vector<int64_t>& first, const std::vector<int64_t>& second, std::vector<float>& copy,
                    bool& trans) -> const float* {
    trans = false;
    if (x.shape().element_type() == PrimitiveType::F32) {
      if (IsIdentity(perm)) return reinterpret_cast<const float*>(x.data().data());
      std::vector<int64_t> swapped = batch;
      swapped.insert(swapped.end(), second.begin(), second.end());
      swapped.insert(swapped.end(), first.begin(), first.end());
      if (IsIdentity(swapped)) {
        trans = true;
        return reinterpret_cast<const float*>(x.data().data());
      }
    }
    if (!LoadPermuted(x, perm, copy).ok()) return nullptr;
    return copy.data();
  };
  auto free_dims = [](const std::vector<int64_t>& perm, size_t skip_front, size_t skip_back) {
    return std::vector<int64_t>(perm.begin() + static_cast<long>(skip_front),
                                perm.end() - static_cast<long>(skip_back));
  };
  size_t nb = dn.lhs_batch_dimensions.size(), nc = dn.lhs_contracting_dimensions.size();
  std::vector<int64_t> lfree = free_dims(lperm, nb, nc), rfree = free_dims(rperm, nb + nc, 0);
  std::vector<float> lcopy, rcopy, ccopy;
  bool ta = false, tb = false;
  const float* a = matrix(lhs, lperm, dn.lhs_batch_dimensions, lfree, dn.lhs_contracting_dimensions, lcopy, ta);
  const float* b = matrix(rhs, rperm, dn.rhs_batch_dimensions, dn.rhs_contracting_dimensions, rfree, rcopy, tb);
  if (!a || !b) return false;
  bool direct = out.shape().element_type() == PrimitiveType::F32;
  if (!direct) ccopy.resize(static_cast<size_t>(B * M * N));
  float* c = direct ? reinterpret_cast<float*>(out.data().data()) : ccopy.data();
  if (!OneDnnGemm(B, M, N, K, a, ta, b, tb, c)) return false;
  if (!direct) {
    std::vector<int64_t> id(static_cast<size_t>(out.shape().rank()));
    for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<int64_t>(i);
    return StorePermuted(ccopy, id, out).ok();
  }
  return true;
}

}  // namespace

Expected<Literal> EvalDot(Evaluator& ev, const Instruction& ins, const Literal& lhs, const Literal& rhs) {
  if (!lhs.shape().IsArray() || !rhs.shape().IsArray() || !ins.shape.IsArray())
    return InvalidInput(fmt::format("{}: dot needs arrays", ins.name));
  DotDimensionNumbers dn;
  if (ins.dot_dimension_numbers) dn = *ins.dot_dimension_numbers;
  else if (lhs.shape().rank() >= 1 && rhs.shape().rank() >= 1)
    dn.lhs_contracting_dimensions = {lhs.shape().rank() - 1}, dn.rhs_contracting_dimensions = {0};
  const auto &ld = lhs.shape().dimensions(), &rd = rhs.shape().dimensions();
  int lr = lhs.shape().rank(), rr = rhs.shape().rank();
  OPPROBE_RETURN_IF_ERROR(CheckDims(ins, dn.lhs_batch_dimensions, lr, "lhs batch"));
  OPPROBE_RETURN_IF_ERROR(CheckDims(ins, dn.rhs_batch_dimensions, rr, "rhs batch"));
  OPPROBE_RETURN_IF_ERROR(CheckDims(ins, dn.lhs_contracting_dimensions, lr, "lhs contracting"));
  OPPROBE_RETURN_IF_ERROR(CheckDims(ins, dn.rhs_contracting_dimensions, rr, "rhs contracting"));
  std::vector<int64_t> lall = dn.lhs_batch_dimensions, rall = dn.rhs_batch_dimensions;
  lall.insert(lall.end(), dn.lhs_contracting_dimensions.begin(), dn.lhs_contracting_dimensions.end());
  rall.insert(rall.end(), dn.rhs_contracting_dimensions.begin(), dn.rhs_contracting_dimensions.end());
  OPPROBE_RETURN_IF_ERROR(CheckDims(ins, lall, lr, "lhs batch+contracting"));
  OPPROBE_RETURN_IF_ERROR(CheckDims(ins, rall, rr, "rhs batch+contracting"));
  if (dn.lhs_batch_dimensions.size() != dn.rhs_batch_dimensions.size() ||
      dn.lhs_contracting_dimensions.size() != dn.rhs_contracting_dimensions.size())
    return InvalidInput(fmt::format("{}: lhs and rhs dimension numbers differ in count", ins.name));
  int64_t B = 1, K = 1, M = 1, N = 1;
  std::vector<int64_t> out_dims;
  for (size_t i = 0; i < dn.lhs_batch_dimensions.size(); ++i) {
    int64_t a = ld[static_cast<size_t>(dn.lhs_batch_dimensions[i])],
            b = rd[static_cast<size_t>(dn.rhs_batch_dimensions[i])];
    if (a != b) return InvalidInput(fmt::format("{}: batch dimension sizes {} and {} differ", ins.name, a, b));
    B *= a;
    out_dims.push_back(a);
  }
  for (size_t i = 0; i < dn.lhs_contracting_dimensions.size(); ++i) {
    int64_t a = ld[static_cast<size_t>(dn.lhs_contracting_dimensions[i])];
    int64_t b = rd[static_cast<size_t>(dn.rhs_contracting_dimensions[i])];
    if (a != b) return InvalidInput(fmt::format("{}: contracting dimension sizes {} and {} differ", ins.name, a, b));
    K *= a;
  }
  std::vector<int64_t> lperm = dn.lhs_batch_dimensions, rperm = dn.rhs_batch_dimensions;
  for (int i = 0; i < lr; ++i)
    if (std::find(lall.begin(), lall.end(), i) == lall.end()) {
      lperm.push_back(i);
      M *= ld[static_cast<size_t>(i)];
      out_dims.push_back(ld[static_cast<size_t>(i)]);
    }
  lperm.insert(lperm.end(), dn.lhs_contracting_dimensions.begin(), dn.lhs_contracting_dimensions.end());
  rperm.insert(rperm.end(), dn.rhs_contracting_dimensions.begin(), dn.rhs_contracting_dimensions.end());
  for (int i = 0; i < rr; ++i)
    if (std::find(rall.begin(), rall.end(), i) == rall.end()) {
      rperm.push_back(i);
      N *= rd[static_cast<size_t>(i)];
      out_dims.push_back(rd[static_cast<size_t>(i)]);
    }
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, out_dims, ins.shape.element_type()));
  OPPROBE_RETURN_IF_ERROR(ev.CheckFlops(ins, static_cast<double>(B) * M * N * K));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  Acc acc = AccFor(lhs.shape().element_type(), rhs.shape().element_type(), ins.shape.element_type());
  if (acc == Acc::kF32 && static_cast<double>(B) * M * N * K >= kOneDnnMinMultiplyAdds &&
      DotThroughOneDnn(lhs, rhs, dn, lperm, rperm, B, M, N, K, out))
    return out;
  // Below oneDNN's threshold an f32 (or f16/bf16) product accumulates in double and rounds once: a
  // short sum with cancellation (addbmm's 5x5 batches) then stays within the conformance tolerance of
  // PyTorch's own FMA-accumulated result, whose rounding order no plain f32 loop reproduces.
  if (acc == Acc::kF32) acc = Acc::kF64;
  OPPROBE_RETURN_IF_ERROR(DispatchAcc(acc, [&](auto zero) -> Status {
    using A = decltype(zero);
    std::vector<A> a, b, c(static_cast<size_t>(B * M * N), A(0));
    OPPROBE_RETURN_IF_ERROR(LoadPermuted(lhs, lperm, a));
    OPPROBE_RETURN_IF_ERROR(LoadPermuted(rhs, rperm, b));
    if (K > 0) {
      for (int64_t i = 0; i < B; ++i) {
        Eigen::Map<const RowMat<A>> am(a.data() + i * M * K, M, K);
        Eigen::Map<const RowMat<A>> bm(b.data() + i * K * N, K, N);
        Eigen::Map<RowMat<A>> cm(c.data() + i * M * N, M, N);
        cm.noalias() = am * bm;
      }
    }
    std::vector<int64_t> id(out_dims.size());
    for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<int64_t>(i);
    return StorePermuted(c, id, out);
  }));
  return out;
}

Expected<Literal> EvalConvolution(Evaluator& ev, const Instruction& ins, const Literal& lhs, const Literal& rhs) {
  if (!lhs.shape().IsArray() || !rhs.shape().IsArray() || !ins.shape.IsArray())
    return InvalidInput(fmt::format("{}: convolution needs arrays", ins.name));
  if (!ins.convolution_dimension_numbers || !ins.window)
    return InvalidInput(fmt::format("{}: convolution without dim_labels or window", ins.name));
  const auto& dn = *ins.convolution_dimension_numbers;
  const auto& win = ins.window->dimensions;
  size_t nsp = dn.input_spatial_dimensions.size();
  int rank = static_cast<int>(nsp) + 2;
  if (dn.kernel_spatial_dimensions.size() != nsp || dn.output_spatial_dimensions.size() != nsp || win.size() != nsp ||
      lhs.shape().rank() != rank || rhs.shape().rank() != rank || ins.shape.rank() != rank)
    return InvalidInput(fmt::format("{}: ranks of {}, {} and {} do not fit {} spatial dimensions", ins.name,
                                    lhs.shape().ToString(false), rhs.shape().ToString(false), ins.shape.ToString(false),
                                    nsp));
  std::vector<int64_t> lperm{dn.input_batch_dimension}, kperm, operm{dn.output_batch_dimension};
  for (auto d : dn.input_spatial_dimensions) lperm.push_back(d);
  lperm.push_back(dn.input_feature_dimension);
  for (auto d : dn.kernel_spatial_dimensions) kperm.push_back(d);
  kperm.push_back(dn.kernel_input_feature_dimension);
  kperm.push_back(dn.kernel_output_feature_dimension);
  for (auto d : dn.output_spatial_dimensions) operm.push_back(d);
  operm.push_back(dn.output_feature_dimension);
  OPPROBE_RETURN_IF_ERROR(CheckDims(ins, lperm, rank, "input"));
  OPPROBE_RETURN_IF_ERROR(CheckDims(ins, kperm, rank, "kernel"));
  OPPROBE_RETURN_IF_ERROR(CheckDims(ins, operm, rank, "output"));
  const auto &ld = lhs.shape().dimensions(), &kd = rhs.shape().dimensions();
  auto at = [](const std::vector<int64_t>& v, int64_t i) { return v[static_cast<size_t>(i)]; };
  int64_t N = at(ld, dn.input_batch_dimension), C = at(ld, dn.input_feature_dimension);
  int64_t Cg = at(kd, dn.kernel_input_feature_dimension), O = at(kd, dn.kernel_output_feature_dimension);
  int64_t fgc = ins.feature_group_count, bgc = ins.batch_group_count;
  if (fgc < 1 || bgc < 1 || (fgc > 1 && bgc > 1))
    return InvalidInput(fmt::format("{}: feature_group_count={} batch_group_count={}", ins.name, fgc, bgc));
  if (C != Cg * fgc)
    return InvalidInput(fmt::format("{}: input features {} != kernel input features {} x feature_group_count {}",
                                    ins.name, C, Cg, fgc));
  int64_t G = fgc * bgc;
  if (O % G != 0 || N % bgc != 0)
    return InvalidInput(
        fmt::format("{}: output features {} / batch {} do not divide into {} groups", ins.name, O, N, G));
  int64_t Nout = N / bgc, Og = O / G;
  std::vector<int64_t> in_sp, k_sp, out_sp;
  std::vector<int64_t> out_dims(static_cast<size_t>(rank));
  out_dims[static_cast<size_t>(dn.output_batch_dimension)] = Nout;
  out_dims[static_cast<size_t>(dn.output_feature_dimension)] = O;
  for (size_t i = 0; i < nsp; ++i) {
    const WindowDimension& w = win[i];
    int64_t in = at(ld, dn.input_spatial_dimensions[i]), k = at(kd, dn.kernel_spatial_dimensions[i]);
    if (w.size != k || w.stride < 1 || w.base_dilation < 1 || w.window_dilation < 1)
      return InvalidInput(fmt::format("{}: window dimension {} does not fit the kernel", ins.name, i));
    int64_t dilated_in = in == 0 ? 0 : (in - 1) * w.base_dilation + 1;
    int64_t padded = dilated_in + w.padding_low + w.padding_high;
    int64_t dilated_k = k == 0 ? 0 : (k - 1) * w.window_dilation + 1;
    int64_t o = padded < dilated_k ? 0 : (padded - dilated_k) / w.stride + 1;
    in_sp.push_back(in), k_sp.push_back(k), out_sp.push_back(o);
    out_dims[static_cast<size_t>(dn.output_spatial_dimensions[i])] = o;
  }
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, out_dims, ins.shape.element_type()));
  int64_t KP = Product(k_sp), IP = Product(in_sp), OP = Product(out_sp);
  int64_t KC = KP * Cg, rows = Nout * OP;
  OPPROBE_RETURN_IF_ERROR(ev.CheckFlops(ins, static_cast<double>(rows) * KC * O));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  if (Product(out_dims) == 0) return out;
  if (AccFor(lhs.shape().element_type(), rhs.shape().element_type(), ins.shape.element_type()) == Acc::kF32 &&
      static_cast<double>(rows) * KC * O >= kOneDnnMinMultiplyAdds && OneDnnConvolution(ins, lhs, rhs, out))
    return out;

  // Per spatial dim: input coordinate of (output position, kernel weight index), or -1 (padding/hole).
  std::vector<std::vector<int64_t>> tap(nsp);
  for (size_t i = 0; i < nsp; ++i) {
    const WindowDimension& w = win[i];
    tap[i].assign(static_cast<size_t>(out_sp[i] * k_sp[i]), -1);
    for (int64_t o = 0; o < out_sp[i]; ++o)
      for (int64_t kw = 0; kw < k_sp[i]; ++kw) {
        int64_t k = w.window_reversal ? k_sp[i] - 1 - kw : kw;
        int64_t p = o * w.stride + k * w.window_dilation - w.padding_low;
        int64_t dilated_in = in_sp[i] == 0 ? 0 : (in_sp[i] - 1) * w.base_dilation + 1;
        if (p < 0 || p >= dilated_in || p % w.base_dilation != 0) continue;
        tap[i][static_cast<size_t>(o * k_sp[i] + kw)] = p / w.base_dilation;
      }
  }
  auto in_str = Strides(in_sp);

  // With lhs (base) dilation most taps hit holes. Output positions fall into phase classes (per dim,
  // (o*stride - pad_low) mod base_dilation) that share one set of live kernel taps; each class is one
  // smaller GEMM over its live taps only (the sub-pixel decomposition of a transposed convolution).
  std::vector<int64_t> phases(nsp, 1);
  for (size_t i = 0; i < nsp; ++i) phases[i] = win[i].base_dilation;
  int64_t nclasses = Product(phases);
  std::vector<std::vector<int64_t>> klist(static_cast<size_t>(nclasses));  // live kernel positions
  std::vector<std::vector<int64_t>> rlist(static_cast<size_t>(nclasses));  // output rows (n * OP + opix)
  {
    auto pstr = Strides(phases);
    std::vector<int64_t> kw(nsp, 0);
    for (int64_t c = 0; c < nclasses; ++c) {
      for (int64_t kp = 0; kp < KP; ++kp) {
        bool live = true;
        for (int64_t i = static_cast<int64_t>(nsp) - 1, rem = kp; i >= 0; --i) {
          size_t ui = static_cast<size_t>(i);
          int64_t kwi = rem % k_sp[ui];
          rem /= k_sp[ui];
          int64_t k = win[ui].window_reversal ? k_sp[ui] - 1 - kwi : kwi;
          int64_t ci = (c / pstr[ui]) % phases[ui];
          if ((k * win[ui].window_dilation + ci) % phases[ui] != 0) live = false;
        }
        if (live) klist[static_cast<size_t>(c)].push_back(kp);
      }
    }
    for (int64_t op = 0; op < OP; ++op) {
      int64_t cls = 0;
      for (int64_t i = static_cast<int64_t>(nsp) - 1, rem = op; i >= 0; --i) {
        size_t ui = static_cast<size_t>(i);
        int64_t o = rem % out_sp[ui];
        rem /= out_sp[ui];
        int64_t r = ((o * win[ui].stride - win[ui].padding_low) % phases[ui] + phases[ui]) % phases[ui];
        cls += r * pstr[ui];
      }
      for (int64_t n = 0; n < Nout; ++n) rlist[static_cast<size_t>(cls)].push_back(n * OP + op);
    }
    for (auto& r : rlist) std::sort(r.begin(), r.end());
  }

  Acc acc = AccFor(lhs.shape().element_type(), rhs.shape().element_type(), ins.shape.element_type());
  OPPROBE_RETURN_IF_ERROR(DispatchAcc(acc, [&](auto zero) -> Status {
    using A = decltype(zero);
    std::vector<A> in_buf, k_buf, out_buf(static_cast<size_t>(rows * O), A(0));
    OPPROBE_RETURN_IF_ERROR(LoadPermuted(lhs, lperm, in_buf));  // [N][in spatial][C]
    OPPROBE_RETURN_IF_ERROR(LoadPermuted(rhs, kperm, k_buf));   // [KP][Cg][O]
    std::vector<int64_t> oidx(nsp);
    std::vector<A> patch, kcls, res;
    for (int64_t cls = 0; cls < nclasses; ++cls) {
      const auto& taps = klist[static_cast<size_t>(cls)];
      const auto& rws = rlist[static_cast<size_t>(cls)];
      int64_t nt = static_cast<int64_t>(taps.size()), nrows = static_cast<int64_t>(rws.size());
      int64_t kc = nt * Cg;
      if (kc == 0 || nrows == 0) continue;
      // The kernel rows of the live taps: [kc][O].
      const A* kmat_base = k_buf.data();
      if (nt != KP) {
        kcls.resize(static_cast<size_t>(kc * O));
        for (int64_t t = 0; t < nt; ++t)
          std::copy(k_buf.begin() + taps[static_cast<size_t>(t)] * Cg * O,
                    k_buf.begin() + (taps[static_cast<size_t>(t)] + 1) * Cg * O, kcls.begin() + t * Cg * O);
        kmat_base = kcls.data();
      }
      // Per-dim kernel index of each live tap.
      std::vector<int64_t> tap_k(static_cast<size_t>(nt) * nsp);
      for (int64_t t = 0; t < nt; ++t)
        for (int64_t i = static_cast<int64_t>(nsp) - 1, rem = taps[static_cast<size_t>(t)]; i >= 0; --i) {
          tap_k[static_cast<size_t>(t) * nsp + static_cast<size_t>(i)] = rem % k_sp[static_cast<size_t>(i)];
          rem /= k_sp[static_cast<size_t>(i)];
        }
      int64_t block =
          std::max<int64_t>(1, std::min<int64_t>(nrows, (int64_t{64} << 20) / static_cast<int64_t>(sizeof(A)) / kc));
      patch.resize(static_cast<size_t>(block * kc));
      res.resize(static_cast<size_t>(block * Og));
      for (int64_t g = 0; g < G; ++g) {
        int64_t batch0 = bgc > 1 ? g * Nout : 0, chan0 = fgc > 1 ? g * Cg : 0;
        Eigen::Map<const RowMat<A>, 0, Eigen::OuterStride<>> kmat(kmat_base + g * Og, kc, Og, Eigen::OuterStride<>(O));
        for (int64_t r0 = 0; r0 < nrows; r0 += block) {
          int64_t nr = std::min(block, nrows - r0);
          for (int64_t r = 0; r < nr; ++r) {
            int64_t row = rws[static_cast<size_t>(r0 + r)], n = row / OP, op = row % OP;
            for (int64_t i = static_cast<int64_t>(nsp) - 1, rem = op; i >= 0; --i) {
              oidx[static_cast<size_t>(i)] = rem % out_sp[static_cast<size_t>(i)];
              rem /= out_sp[static_cast<size_t>(i)];
            }
            A* prow = patch.data() + r * kc;
            const A* in_n = in_buf.data() + (batch0 + n) * IP * C + chan0;
            for (int64_t t = 0; t < nt; ++t) {
              int64_t lin = 0;
              bool valid = true;
              for (size_t i = 0; i < nsp; ++i) {
                int64_t tp = tap[i][static_cast<size_t>(oidx[i] * k_sp[i] + tap_k[static_cast<size_t>(t) * nsp + i])];
                if (tp < 0) {
                  valid = false;
                  break;
                }
                lin += tp * in_str[i];
              }
              A* dst = prow + t * Cg;
              if (valid) std::copy(in_n + lin * C, in_n + lin * C + Cg, dst);
              else std::fill(dst, dst + Cg, A(0));
            }
          }
          Eigen::Map<const RowMat<A>> pm(patch.data(), nr, kc);
          Eigen::Map<RowMat<A>> rm(res.data(), nr, Og);
          rm.noalias() = pm * kmat;
          for (int64_t r = 0; r < nr; ++r)
            std::copy(res.begin() + r * Og, res.begin() + (r + 1) * Og,
                      out_buf.begin() + rws[static_cast<size_t>(r0 + r)] * O + g * Og);
        }
      }
    }
    // out_buf is [Nout][out spatial][O] = output permuted by operm.
    return StorePermuted(out_buf, operm, out);
  }));
  return out;
}

}  // namespace opprobe::hlo::eval
