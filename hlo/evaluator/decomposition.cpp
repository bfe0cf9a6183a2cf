// Matrix decompositions: the cholesky and triangular-solve opcodes, and the custom-call targets
// XLA's own builders emit for the LAPACK-style ops and its compiler passes expand ("Qr",
// "ProductOfElementaryHouseholderReflectors", "Eigh", "LuDecomposition"). Every [..., m, n] operand is
// a batch of row-major matrices in its last two dimensions; arithmetic runs in double (or
// complex<double>) and is stored back in the result's element type. Results follow LAPACK's
// conventions (geqrf/orgqr Householder vectors and taus, getrf partial pivoting with the first
// largest pivot), so they agree with what PyTorch computes on the CPU.
#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cstdlib>

#include "hlo/evaluator/internal.h"

namespace opprobe::hlo::eval {
namespace {

template <class S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Cd = std::complex<double>;

template <class S>
S GetS(const Literal& l, int64_t i) {
  if constexpr (kIsComplex<S>) return l.GetAsComplex(i);
  else return l.GetAsDouble(i);
}
template <class S>
void PutS(Literal& l, int64_t i, S v) {
  if constexpr (kIsComplex<S>) l.SetFromComplex(i, v);
  else l.SetFromDouble(i, v);
}
template <class S>
double Re(S v) {
  if constexpr (kIsComplex<S>) return v.real();
  else return v;
}
template <class S>
S Conj(S v) {
  if constexpr (kIsComplex<S>) return std::conj(v);
  else return v;
}

// Batch count and matrix dims of a [..., m, n] shape.
struct MatDims {
  int64_t batch = 1, m = 0, n = 0;
};
Expected<MatDims> DimsOf(const Instruction& ins, const Shape& s, const char* what) {
  if (!s.IsArray() || s.rank() < 2)
    return InvalidInput(fmt::format("{}: {} must be a [..., m, n] array, got {}", ins.name, what, s.ToString(false)));
  MatDims d;
  const auto& dims = s.dimensions();
  for (int i = 0; i + 2 < s.rank(); ++i) d.batch *= dims[static_cast<size_t>(i)];
  d.m = dims[dims.size() - 2];
  d.n = dims[dims.size() - 1];
  return d;
}

template <class S>
Mat<S> Load(const Literal& l, int64_t b, int64_t m, int64_t n) {
  Mat<S> x(m, n);
  int64_t base = b * m * n;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) x(i, j) = GetS<S>(l, base + i * n + j);
  return x;
}
template <class S>
void Store(Literal& l, int64_t b, const Mat<S>& x) {
  int64_t m = x.rows(), n = x.cols(), base = b * m * n;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) PutS<S>(l, base + i * n + j, x(i, j));
}

// The Hermitian matrix one triangle of `a` stands for.
template <class S>
Mat<S> Hermitian(const Mat<S>& a, bool lower) {
  Mat<S> h = a;
  for (int64_t i = 0; i < a.rows(); ++i) {
    h(i, i) = S(Re(a(i, i)));
    for (int64_t j = 0; j < i; ++j) {
      S v = lower ? a(i, j) : Conj(a(j, i));
      h(i, j) = v;
      h(j, i) = Conj(v);
    }
  }
  return h;
}

template <class F>
Status ByScalar(PrimitiveType t, F&& f) {
  if (IsComplex(t)) return f(Cd{});
  if (IsFloatingPoint(t)) return f(double{});
  return InvalidInput(fmt::format("decompositions need float or complex values, got {}", PrimitiveTypeName(t)));
}

}  // namespace

Expected<Literal> EvalCholesky(Evaluator& ev, const Instruction& ins, const Literal& a) {
  OPPROBE_ASSIGN_OR_RETURN(MatDims d, DimsOf(ins, a.shape(), "the operand"));
  if (d.m != d.n) return InvalidInput(fmt::format("{}: cholesky needs square matrices", ins.name));
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, a.shape().dimensions(), a.shape().element_type()));
  OPPROBE_RETURN_IF_ERROR(ev.CheckFlops(ins, static_cast<double>(d.batch) * d.n * d.n * d.n / 3.0));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  bool lower = ins.cholesky_lower;
  OPPROBE_RETURN_IF_ERROR(ByScalar(a.shape().element_type(), [&](auto zero) -> Status {
    using S = decltype(zero);
    for (int64_t b = 0; b < d.batch && d.n > 0; ++b) {
      Mat<S> h = Hermitian<S>(Load<S>(a, b, d.n, d.n), lower);
      Eigen::LLT<Mat<S>, Eigen::Lower> llt(h);
      Mat<S> l = llt.matrixL();
      if (llt.info() != Eigen::Success) l.setConstant(S(std::numeric_limits<double>::quiet_NaN()));
      if (!lower) l = l.adjoint().eval();
      Store<S>(out, b, l);
    }
    return Status::Ok();
  }));
  return out;
}

Expected<Literal> EvalTriangularSolve(Evaluator& ev, const Instruction& ins, const Literal& a, const Literal& bl) {
  OPPROBE_ASSIGN_OR_RETURN(MatDims da, DimsOf(ins, a.shape(), "a"));
  OPPROBE_ASSIGN_OR_RETURN(MatDims db, DimsOf(ins, bl.shape(), "b"));
  const auto& o = ins.triangular_solve_options;
  if (da.m != da.n || da.batch != db.batch || (o.left_side ? db.m : db.n) != da.n)
    return InvalidInput(fmt::format("{}: a {} and b {} do not form a triangular system", ins.name,
                                    a.shape().ToString(false), bl.shape().ToString(false)));
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, bl.shape().dimensions(), bl.shape().element_type()));
  OPPROBE_RETURN_IF_ERROR(
      ev.CheckFlops(ins, static_cast<double>(db.batch) * da.n * da.n * (o.left_side ? db.n : db.m)));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  OPPROBE_RETURN_IF_ERROR(ByScalar(a.shape().element_type(), [&](auto zero) -> Status {
    using S = decltype(zero);
    for (int64_t b = 0; b < da.batch && da.n > 0 && db.m * db.n > 0; ++b) {
      Mat<S> t = Load<S>(a, b, da.n, da.n);
      for (int64_t i = 0; i < da.n; ++i)  // only the named triangle counts
        for (int64_t j = 0; j < da.n; ++j)
          if (o.lower ? j > i : j < i) t(i, j) = S(0);
      if (o.unit_diagonal) t.diagonal().setOnes();
      bool low = o.lower;
      if (o.transpose_a == TransposeA::kTranspose) t = t.transpose().eval(), low = !low;
      if (o.transpose_a == TransposeA::kAdjoint) t = t.adjoint().eval(), low = !low;
      Mat<S> rhs = Load<S>(bl, b, db.m, db.n);
      Mat<S> x;
      if (!o.left_side) {  // x·t = rhs  <=>  tᵀ·xᵀ = rhsᵀ
        t = t.transpose().eval();
        low = !low;
        rhs = rhs.transpose().eval();
      }
      if (low) x = t.template triangularView<Eigen::Lower>().solve(rhs);
      else x = t.template triangularView<Eigen::Upper>().solve(rhs);
      if (!o.left_side) x = x.transpose().eval();
      Store<S>(out, b, x);
    }
    return Status::Ok();
  }));
  return out;
}

namespace {

// LAPACK geqrf: R in and above the diagonal, the Householder vectors v_j (v_j[j] = 1 implied) below
// it, and taus; H_j = I - tau_j v_j v_jᴴ, A = H_0 H_1 ... H_{k-1} R.
template <class S>
void HouseholderQr(Mat<S>& a, std::vector<S>& taus) {
  int64_t m = a.rows(), n = a.cols(), k = std::min(m, n);
  taus.assign(static_cast<size_t>(k), S(0));
  for (int64_t j = 0; j < k; ++j) {
    S alpha = a(j, j);
    double xnorm2 = 0;
    for (int64_t i = j + 1; i < m; ++i) xnorm2 += std::norm(a(i, j));
    double alpha_im = 0;
    if constexpr (kIsComplex<S>) alpha_im = alpha.imag();
    if (xnorm2 == 0 && alpha_im == 0) continue;  // H = I
    double beta = std::sqrt(std::norm(alpha) + xnorm2);
    if (Re(alpha) >= 0) beta = -beta;
    S tau = (S(beta) - alpha) / S(beta);
    S scale = S(1) / (alpha - S(beta));
    for (int64_t i = j + 1; i < m; ++i) a(i, j) *= scale;
    a(j, j) = S(beta);
    taus[static_cast<size_t>(j)] = tau;
    // Apply H_jᴴ to the trailing columns: A -= conj(tau) v (vᴴ A).
    for (int64_t c = j + 1; c < n; ++c) {
      S w = a(j, c);
      for (int64_t i = j + 1; i < m; ++i) w += Conj(a(i, j)) * a(i, c);
      w *= Conj(tau);
      a(j, c) -= w;
      for (int64_t i = j + 1; i < m; ++i) a(i, c) -= a(i, j) * w;
    }
  }
}

// LAPACK orgqr: the first n columns of H_0 H_1 ... H_{k-1} (vectors below the diagonal of a).
template <class S>
Mat<S> HouseholderProduct(const Mat<S>& a, const std::vector<S>& taus) {
  int64_t m = a.rows(), n = a.cols(), k = static_cast<int64_t>(taus.size());
  Mat<S> q = Mat<S>::Identity(m, n);
  for (int64_t j = k - 1; j >= 0; --j) {
    S tau = taus[static_cast<size_t>(j)];
    if (tau == S(0)) continue;
    for (int64_t c = 0; c < n; ++c) {  // q = H_j q = q - tau v (vᴴ q)
      S w = q(j, c);
      for (int64_t i = j + 1; i < m; ++i) w += Conj(a(i, j)) * q(i, c);
      w *= tau;
      q(j, c) -= w;
      for (int64_t i = j + 1; i < m; ++i) q(i, c) -= a(i, j) * w;
    }
  }
  return q;
}

Expected<Literal> EvalQr(Evaluator& ev, const Instruction& ins, const Literal& a) {
  OPPROBE_ASSIGN_OR_RETURN(MatDims d, DimsOf(ins, a.shape(), "the operand"));
  int64_t k = std::min(d.m, d.n);
  std::vector<int64_t> tdims(a.shape().dimensions().begin(), a.shape().dimensions().end() - 2);
  tdims.push_back(k);
  if (!ins.shape.IsTuple() || ins.shape.tuple_shapes().size() != 2 ||
      ins.shape.tuple_shapes()[0].dimensions() != a.shape().dimensions() ||
      ins.shape.tuple_shapes()[1].dimensions() != tdims)
    return InvalidInput(fmt::format("{}: Qr returns (a, taus) shaped {} and [{}]", ins.name, a.shape().ToString(false),
                                    fmt::join(tdims, ",")));
  OPPROBE_RETURN_IF_ERROR(ev.CheckFlops(ins, 2.0 * d.batch * d.m * d.n * k));
  OPPROBE_ASSIGN_OR_RETURN(Literal r, ev.Allocate(ins.shape.tuple_shapes()[0]));
  OPPROBE_ASSIGN_OR_RETURN(Literal t, ev.Allocate(ins.shape.tuple_shapes()[1]));
  OPPROBE_RETURN_IF_ERROR(ByScalar(a.shape().element_type(), [&](auto zero) -> Status {
    using S = decltype(zero);
    std::vector<S> taus;
    for (int64_t b = 0; b < d.batch; ++b) {
      Mat<S> x = Load<S>(a, b, d.m, d.n);
      HouseholderQr(x, taus);
      Store<S>(r, b, x);
      for (int64_t j = 0; j < k; ++j) PutS<S>(t, b * k + j, taus[static_cast<size_t>(j)]);
    }
    return Status::Ok();
  }));
  std::vector<Literal> parts;
  parts.push_back(std::move(r));
  parts.push_back(std::move(t));
  return Literal::Tuple(std::move(parts));
}

Expected<Literal> EvalHouseholderProduct(Evaluator& ev, const Instruction& ins, const Literal& a, const Literal& taus) {
  OPPROBE_ASSIGN_OR_RETURN(MatDims d, DimsOf(ins, a.shape(), "the vectors"));
  const Shape& ts = taus.shape();
  int64_t k = ts.IsArray() && ts.rank() >= 1 ? ts.dimensions().back() : -1;
  if (k < 0 || k > d.n || d.n > d.m || ts.elements() != d.batch * k)
    return InvalidInput(fmt::format("{}: taus {} do not fit the vectors {} (k <= n <= m)", ins.name, ts.ToString(false),
                                    a.shape().ToString(false)));
  OPPROBE_RETURN_IF_ERROR(ExpectShape(ins, a.shape().dimensions(), a.shape().element_type()));
  OPPROBE_RETURN_IF_ERROR(ev.CheckFlops(ins, 4.0 * d.batch * d.m * d.n * k));
  OPPROBE_ASSIGN_OR_RETURN(Literal out, ev.Allocate(ins.shape));
  OPPROBE_RETURN_IF_ERROR(ByScalar(a.shape().element_type(), [&](auto zero) -> Status {
    using S = decltype(zero);
    std::vector<S> tv(static_cast<size_t>(k));
    for (int64_t b = 0; b < d.batch; ++b) {
      for (int64_t j = 0; j < k; ++j) tv[static_cast<size_t>(j)] = GetS<S>(taus, b * k + j);
      Store<S>(out, b, HouseholderProduct<S>(Load<S>(a, b, d.m, d.n), tv));
    }
    return Status::Ok();
  }));
  return out;
}

// "Eigh": backend_config "lower,sort_eigenvalues,max_iter,tol" (XLA's SelfAdjointEig); returns
// (eigenvectors [..., n, n] as columns, eigenvalues [..., n] ascending).
Expected<Literal> EvalEigh(Evaluator& ev, const Instruction& ins, const Literal& a) {
  OPPROBE_ASSIGN_OR_RETURN(MatDims d, DimsOf(ins, a.shape(), "the operand"));
  if (d.m != d.n) return InvalidInput(fmt::format("{}: Eigh needs square matrices", ins.name));
  bool lower = ins.rare().backend_config.empty() || ins.rare().backend_config[0] != '0';
  std::vector<int64_t> wdims(a.shape().dimensions().begin(), a.shape().dimensions().end() - 1);
  if (!ins.shape.IsTuple() || ins.shape.tuple_shapes().size() != 2 ||
      ins.shape.tuple_shapes()[0].dimensions() != a.shape().dimensions() ||
      ins.shape.tuple_shapes()[1].dimensions() != wdims)
    return InvalidInput(fmt::format("{}: Eigh returns (vectors, values) shaped {} and [{}]", ins.name,
                                    a.shape().ToString(false), fmt::join(wdims, ",")));
  OPPROBE_RETURN_IF_ERROR(ev.CheckFlops(ins, 10.0 * d.batch * d.n * d.n * d.n));
  OPPROBE_ASSIGN_OR_RETURN(Literal v, ev.Allocate(ins.shape.tuple_shapes()[0]));
  OPPROBE_ASSIGN_OR_RETURN(Literal w, ev.Allocate(ins.shape.tuple_shapes()[1]));
  OPPROBE_RETURN_IF_ERROR(ByScalar(a.shape().element_type(), [&](auto zero) -> Status {
    using S = decltype(zero);
    for (int64_t b = 0; b < d.batch && d.n > 0; ++b) {
      Mat<S> h = Hermitian<S>(Load<S>(a, b, d.n, d.n), lower);
      Eigen::SelfAdjointEigenSolver<Mat<S>> es(h);
      Mat<S> vecs = es.eigenvectors();
      auto vals = es.eigenvalues();
      if (es.info() != Eigen::Success) {
        vecs.setConstant(S(std::numeric_limits<double>::quiet_NaN()));
        vals.setConstant(std::numeric_limits<double>::quiet_NaN());
      }
      Store<S>(v, b, vecs);
      for (int64_t j = 0; j < d.n; ++j) w.SetFromDouble(b * d.n + j, vals(j));
    }
    return Status::Ok();
  }));
  std::vector<Literal> parts;
  parts.push_back(std::move(v));
  parts.push_back(std::move(w));
  return Literal::Tuple(std::move(parts));
}

// "LuDecomposition" (XLA's LuDecomposition builder): returns (lu, pivots s32 [..., min(m,n)],
// permutation s32 [..., m]), 0-based; row i of P·A is row permutation[i] of A.
Expected<Literal> EvalLu(Evaluator& ev, const Instruction& ins, const Literal& a) {
  OPPROBE_ASSIGN_OR_RETURN(MatDims d, DimsOf(ins, a.shape(), "the operand"));
  int64_t k = std::min(d.m, d.n);
  std::vector<int64_t> batch(a.shape().dimensions().begin(), a.shape().dimensions().end() - 2);
  std::vector<int64_t> pdims = batch, permdims = batch;
  pdims.push_back(k);
  permdims.push_back(d.m);
  const auto& ts = ins.shape.tuple_shapes();
  if (!ins.shape.IsTuple() || ts.size() != 3 || ts[0].dimensions() != a.shape().dimensions() ||
      ts[1].dimensions() != pdims || ts[2].dimensions() != permdims || !IsInteger(ts[1].element_type()) ||
      !IsInteger(ts[2].element_type()))
    return InvalidInput(fmt::format("{}: LuDecomposition returns (lu {}, pivots s32[{}], permutation s32[{}])",
                                    ins.name, a.shape().ToString(false), fmt::join(pdims, ","),
                                    fmt::join(permdims, ",")));
  OPPROBE_RETURN_IF_ERROR(ev.CheckFlops(ins, 2.0 * d.batch * d.m * d.n * k));
  OPPROBE_ASSIGN_OR_RETURN(Literal lu, ev.Allocate(ts[0]));
  OPPROBE_ASSIGN_OR_RETURN(Literal piv, ev.Allocate(ts[1]));
  OPPROBE_ASSIGN_OR_RETURN(Literal perm, ev.Allocate(ts[2]));
  OPPROBE_RETURN_IF_ERROR(ByScalar(a.shape().element_type(), [&](auto zero) -> Status {
    using S = decltype(zero);
    auto mag = [](S v) {  // LAPACK's i?amax: |x| for reals, |re| + |im| for complex
      if constexpr (kIsComplex<S>) return std::fabs(v.real()) + std::fabs(v.imag());
      else return std::fabs(v);
    };
    for (int64_t b = 0; b < d.batch; ++b) {
      Mat<S> x = Load<S>(a, b, d.m, d.n);
      std::vector<int64_t> p(static_cast<size_t>(d.m));
      for (int64_t i = 0; i < d.m; ++i) p[static_cast<size_t>(i)] = i;
      for (int64_t j = 0; j < k; ++j) {
        int64_t best = j;
        for (int64_t i = j + 1; i < d.m; ++i)
          if (mag(x(i, j)) > mag(x(best, j))) best = i;
        piv.SetFromInt64(b * k + j, best);
        if (best != j) {
          x.row(j).swap(x.row(best));
          std::swap(p[static_cast<size_t>(j)], p[static_cast<size_t>(best)]);
        }
        S pivot = x(j, j);
        if (pivot == S(0)) continue;
        for (int64_t i = j + 1; i < d.m; ++i) {
          x(i, j) /= pivot;
          S f = x(i, j);
          for (int64_t c = j + 1; c < d.n; ++c) x(i, c) -= f * x(j, c);
        }
      }
      Store<S>(lu, b, x);
      for (int64_t i = 0; i < d.m; ++i) perm.SetFromInt64(b * d.m + i, p[static_cast<size_t>(i)]);
    }
    return Status::Ok();
  }));
  std::vector<Literal> parts;
  parts.push_back(std::move(lu));
  parts.push_back(std::move(piv));
  parts.push_back(std::move(perm));
  return Literal::Tuple(std::move(parts));
}

}  // namespace

Expected<Literal> EvalCustomCall(Evaluator& ev, const Instruction& ins, const std::vector<const Literal*>& ops) {
  const std::string& t = ins.custom_call_target;
  auto need = [&](size_t n) -> Status {
    if (ops.size() != n) return InvalidInput(fmt::format("{}: custom-call '{}' takes {} operands", ins.name, t, n));
    return Status::Ok();
  };
  if (t == "Qr") {
    OPPROBE_RETURN_IF_ERROR(need(1));
    return EvalQr(ev, ins, *ops[0]);
  }
  if (t == "ProductOfElementaryHouseholderReflectors") {
    OPPROBE_RETURN_IF_ERROR(need(2));
    return EvalHouseholderProduct(ev, ins, *ops[0], *ops[1]);
  }
  if (t == "Eigh") {
    OPPROBE_RETURN_IF_ERROR(need(1));
    return EvalEigh(ev, ins, *ops[0]);
  }
  if (t == "LuDecomposition") {
    OPPROBE_RETURN_IF_ERROR(need(1));
    return EvalLu(ev, ins, *ops[0]);
  }
  // XLA's sharding annotations (a sharding constraint: jax's with_sharding_constraint, torchax's random numbers and
  // torch_xla's mark_sharding; the SPMD partitioner's shape changes): on the one device the evaluator is, each gives
  // its operand back. A full-to-shard or shard-to-full change of shape needs several devices.
  if (t == "Sharding" || t == "SPMDFullToShardShape" || t == "SPMDShardToFullShape") {
    OPPROBE_RETURN_IF_ERROR(need(1));
    if (!(ops[0]->shape() == ins.shape))
      return Unimplemented(fmt::format("{}: custom-call '{}' from {} to {} splits across devices; the evaluator is one",
                                       ins.name, t, ops[0]->shape().ToString(false), ins.shape.ToString(false)));
    return *ops[0];
  }
  return Unimplemented(fmt::format("custom-call target '{}' is not implemented by the evaluator", t));
}

}  // namespace opprobe::hlo::eval
