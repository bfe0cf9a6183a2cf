// LAPACK-style linear algebra, lowered to what XLA's own builders emit (xla/hlo/builder/lib):
// cholesky and triangular-solve are HLO opcodes; QR, the Householder product, the symmetric
// eigendecomposition are the custom calls "Qr", "ProductOfElementaryHouseholderReflectors" and "Eigh"
// that XLA's compiler passes (QrExpander, EighExpander) expand; LU with partial pivoting is a plain-HLO
// `while` over the columns (XLA's "LuDecomposition" custom call has an implementation on TPU only).
// Everything else is built from those with dot, select and friends:
// - inverse, solve, det and slogdet from the LU factors and two triangular solves;
// - SVD from Eigh of the Hermitian Jordan–Wielandt matrix [[0, A], [Aᴴ, 0]], whose eigenvalues are
//   ±σ and whose eigenvectors stack U and V (scaled by 1/√2);
// - matrix_exp by scaling and squaring a degree-12 Taylor polynomial;
// - pivots → permutation (lu_unpack, lu_solve) with a `while` loop of row swaps.
// Shapes are [..., m, n] batches; batch dims of two operands broadcast.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analyzer/lowering/families.h"

namespace opprobe::analyzer::lowering {
namespace {

using hlo::TransposeA;
using hlo::TriangularSolveOptions;

std::vector<int64_t> BatchOf(const std::vector<int64_t>& d) { return {d.begin(), d.end() - 2}; }

std::vector<int64_t> With(std::vector<int64_t> batch, std::initializer_list<int64_t> tail) {
  batch.insert(batch.end(), tail.begin(), tail.end());
  return batch;
}

Instruction* Conj(Builder& b, Instruction* x) {
  if (!hlo::IsComplex(x->shape.element_type())) return x;
  return b.Complex(b.Real(x), b.Unary(Opcode::kNegate, b.Imag(x)));
}

// Swaps the last two dims (and conjugates for the adjoint).
Instruction* MT(Builder& b, Instruction* x) {
  int64_t r = Rank(x);
  std::vector<int64_t> perm = DimRange(0, r);
  std::swap(perm[static_cast<size_t>(r - 1)], perm[static_cast<size_t>(r - 2)]);
  return b.Transpose(x, perm);
}
Instruction* MH(Builder& b, Instruction* x) { return Conj(b, MT(b, x)); }

// pred[dims]: element (i, j) of each matrix is in the lower (j <= i + k) or upper (j >= i + k) triangle.
Instruction* TriMask(Builder& b, const std::vector<int64_t>& dims, bool lower, int64_t k = 0) {
  Shape s = Shape::Array(PrimitiveType::S64, dims);
  int64_t r = static_cast<int64_t>(dims.size());
  Instruction* row = AddScalar(b, b.Iota(s, r - 2), static_cast<double>(k));
  Instruction* col = b.Iota(s, r - 1);
  return b.Compare(col, row, lower ? ComparisonDirection::kLe : ComparisonDirection::kGe);
}
Instruction* Triangle(Builder& b, Instruction* x, bool lower, int64_t k = 0) {
  return b.Select(TriMask(b, Dims(x), lower, k), x, FullLike(b, x, 0));
}
Instruction* EyeMask(Builder& b, const std::vector<int64_t>& dims) {
  Shape s = Shape::Array(PrimitiveType::S64, dims);
  int64_t r = static_cast<int64_t>(dims.size());
  return b.Compare(b.Iota(s, r - 2), b.Iota(s, r - 1), ComparisonDirection::kEq);
}
Instruction* Eye(Builder& b, PrimitiveType t, const std::vector<int64_t>& dims) {
  return b.Convert(EyeMask(b, dims), t);
}
// The diagonal [..., min(m, n)] of [..., m, n].
Instruction* Diag(Builder& b, Instruction* x) {
  std::vector<int64_t> d = Dims(x);
  int64_t r = Rank(x), m = d[static_cast<size_t>(r - 2)], n = d[static_cast<size_t>(r - 1)], k = std::min(m, n);
  std::vector<int64_t> starts(static_cast<size_t>(r), 0), limits = d, strides(static_cast<size_t>(r), 1);
  limits[static_cast<size_t>(r - 2)] = k;
  limits[static_cast<size_t>(r - 1)] = k;
  Instruction* sq = b.Slice(x, starts, limits, strides);
  Instruction* masked = b.Select(EyeMask(b, Dims(sq)), sq, FullLike(b, sq, 0));
  return ReduceSum(b, masked, {r - 1});
}
// x[..., start:limit] along the last dim.
Instruction* SliceLast(Builder& b, Instruction* x, int64_t start, int64_t limit) {
  int64_t r = Rank(x);
  std::vector<int64_t> starts(static_cast<size_t>(r), 0), limits = Dims(x), strides(static_cast<size_t>(r), 1);
  starts.back() = start;
  limits.back() = limit;
  return b.Slice(x, starts, limits, strides);
}

// Last-two-dims slice [r0, r1) x [c0, c1).
Instruction* Block(Builder& b, Instruction* x, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  int64_t r = Rank(x);
  std::vector<int64_t> starts(static_cast<size_t>(r), 0), limits = Dims(x), strides(static_cast<size_t>(r), 1);
  starts[static_cast<size_t>(r - 2)] = r0;
  limits[static_cast<size_t>(r - 2)] = r1;
  starts[static_cast<size_t>(r - 1)] = c0;
  limits[static_cast<size_t>(r - 1)] = c1;
  return b.Slice(x, starts, limits, strides);
}
// [..., a, k] x [..., k, c] with equal batch dims.
Instruction* MatMul(Builder& b, Instruction* x, Instruction* y) {
  int64_t r = Rank(x);
  hlo::DotDimensionNumbers d;
  d.lhs_batch_dimensions = d.rhs_batch_dimensions = DimRange(0, r - 2);
  d.lhs_contracting_dimensions = {r - 1};
  d.rhs_contracting_dimensions = {r - 2};
  return b.Dot(x, y, d);
}
// Broadcasts x ([..., m, n]) to the batch dims `batch`.
Instruction* ToBatch(Builder& b, Instruction* x, const std::vector<int64_t>& batch) {
  std::vector<int64_t> d = Dims(x);
  std::vector<int64_t> want = batch;
  want.push_back(d[d.size() - 2]);
  want.push_back(d[d.size() - 1]);
  if (want == d) return x;
  return Bcast(b, x, want);
}

Instruction* TriSolve(Builder& b, Instruction* a, Instruction* rhs, bool left, bool lower, TransposeA op,
                      bool unit = false) {
  TriangularSolveOptions o;
  o.left_side = left;
  o.lower = lower;
  o.unit_diagonal = unit;
  o.transpose_a = op;
  return b.TriangularSolve(a, rhs, o);
}

// info output of a factorization: 1 + the first i with bad(diag[i]), else 0; s32 [...].
Instruction* FirstBad(Builder& b, Instruction* bad) {
  std::vector<int64_t> d = Dims(bad);
  int64_t r = Rank(bad), n = d.back();
  Shape s = Shape::Array(PrimitiveType::S32, d);
  Instruction* idx = AddScalar(b, b.Iota(s, r - 1), 1);
  Instruction* none = Full(b, PrimitiveType::S32, static_cast<double>(n + 1), d);
  Instruction* first = ReduceMin(b, b.Select(bad, idx, none), {r - 1});
  // (n == 0 reduces to the init, the largest s32.)
  return b.Select(CmpScalar(b, first, static_cast<double>(n + 1), ComparisonDirection::kGe), FullLike(b, first, 0),
                  first);
}

// A zero-filled output for values PyTorch returns empty (compute_uv=False, unused lstsq parts).
Expected<Instruction*> EmptyOut(const LoweringContext& ctx, size_t i) {
  const TensorMeta* m = ctx.OutputMeta(i);
  if (!m) return ctx.Unsupported(fmt::format("output {} is missing", i));
  return Full(ctx.builder, m->dtype, 0, m->sizes);
}

// ---- LU ----
struct Lu {
  Instruction* lu = nullptr;    // [..., m, n]
  Instruction* piv = nullptr;   // s32 [..., k], 0-based
  Instruction* perm = nullptr;  // s32 [..., m]: row i of P·A is row perm[i] of A
};

// LU with partial pivoting as plain HLO (what XLA's LU expander builds, and what LAPACK's getf2 computes):
// a `while` over the k = min(m, n) columns; step j picks the first row p >= j of largest magnitude in
// column j (|x| for reals, |re| + |im| for complex, as LAPACK's i?amax), records pivot p, swaps rows j and
// p of A and of the permutation, then divides the column below the pivot by it and subtracts the rank-1
// update from the trailing block (a zero pivot leaves the column as it is). Every backend sees real HLO;
// XLA's own "LuDecomposition" custom call has an implementation on TPU only.
Lu LuOf(Builder& b, Instruction* a) {
  std::vector<int64_t> d = Dims(a);
  int64_t r = Rank(a), m = d[d.size() - 2], n = d[d.size() - 1], k = std::min(m, n);
  std::vector<int64_t> batch = BatchOf(d), vm = With(batch, {m}), vn = With(batch, {n});
  PrimitiveType t = a->shape.element_type();
  bool complex = hlo::IsComplex(t);
  PrimitiveType rt = complex ? hlo::ComplexComponentType(t) : t;
  Instruction* perm0 = b.Iota(Shape::Array(PrimitiveType::S32, vm), r - 2);
  Instruction* piv0 = Full(b, PrimitiveType::S32, 0, With(batch, {k}));
  if (k == 0) return {a, piv0, perm0};
  std::vector<int64_t> bmap = DimRange(0, r - 2);         // batch dims
  std::vector<int64_t> rows_of_mn = With(bmap, {r - 2});  // a [..., m] vector as the rows of [..., m, n]
  std::vector<int64_t> cols_of_mn = With(bmap, {r - 1});  // a [..., n] vector as the columns
  auto cond = [&](Builder& cb, const LoopState& st) {
    return cb.Compare(st[0], cb.ConstantScalar(PrimitiveType::S32, static_cast<double>(k)), ComparisonDirection::kLt);
  };
  auto body = [&](Builder& bb, const LoopState& st) -> LoopState {
    Instruction *j = st[0], *x = st[1], *piv = st[2], *perm = st[3];
    Instruction* zero = bb.ConstantScalar(PrimitiveType::S32, 0);
    auto at = [&](std::initializer_list<Instruction*> tail) {  // dynamic-slice starts: batch dims at 0
      std::vector<Instruction*> s(static_cast<size_t>(r - 2), zero);
      s.insert(s.end(), tail.begin(), tail.end());
      return s;
    };
    auto column = [&](Instruction* y) {
      return bb.Reshape(bb.DynamicSlice(y, at({zero, j}), With(batch, {m, 1})), vm);
    };
    auto row = [&](Instruction* y) { return bb.Reshape(bb.DynamicSlice(y, at({j, zero}), With(batch, {1, n})), vn); };
    Instruction* rows = bb.Iota(Shape::Array(PrimitiveType::S32, vm), r - 2);
    Instruction* below_or_at = bb.Compare(rows, bb.Broadcast(j, vm, {}), ComparisonDirection::kGe);
    // The pivot row p: the first row >= j whose magnitude is the column's largest there (j when none is, e.g. NaN).
    Instruction* col = column(x);
    Instruction* mag = complex ? Add(bb, bb.Unary(Opcode::kAbs, bb.Real(col)), bb.Unary(Opcode::kAbs, bb.Imag(col)))
                               : bb.Unary(Opcode::kAbs, col);
    Instruction* cand = bb.Select(below_or_at, mag, Full(bb, rt, -1, vm));
    Instruction* largest = ReduceMax(bb, cand, {r - 2});
    Instruction* hit = bb.Binary(Opcode::kAnd, below_or_at,
                                 bb.Compare(cand, bb.Broadcast(largest, vm, bmap), ComparisonDirection::kEq));
    Instruction* first =
        ReduceMin(bb, bb.Select(hit, rows, Full(bb, PrimitiveType::S32, static_cast<double>(m), vm)), {r - 2});
    Instruction* jb = bb.Broadcast(j, batch, {});
    Instruction* p = bb.Select(CmpScalar(bb, first, static_cast<double>(m), ComparisonDirection::kLt), first, jb);
    piv = bb.DynamicUpdateSlice(piv, bb.Reshape(p, With(batch, {1})), at({j}));
    // Swap rows j and p of the matrix and of the permutation.
    Instruction* is_p = bb.Compare(rows, bb.Broadcast(p, vm, bmap), ComparisonDirection::kEq);
    Instruction* is_j = bb.Compare(rows, bb.Broadcast(j, vm, {}), ComparisonDirection::kEq);
    Instruction* perm_j = bb.Broadcast(bb.Reshape(bb.DynamicSlice(perm, at({j}), With(batch, {1})), batch), vm, bmap);
    Instruction* perm_p = bb.Broadcast(ReduceSum(bb, bb.Select(is_p, perm, FullLike(bb, perm, 0)), {r - 2}), vm, bmap);
    perm = bb.Select(is_j, perm_p, bb.Select(is_p, perm_j, perm));
    Instruction* is_p_mn = bb.Broadcast(is_p, d, rows_of_mn);
    Instruction* is_j_mn = bb.Broadcast(is_j, d, rows_of_mn);
    Instruction* row_j = bb.Broadcast(row(x), d, cols_of_mn);
    Instruction* row_p = bb.Broadcast(ReduceSum(bb, bb.Select(is_p_mn, x, FullLike(bb, x, 0)), {r - 2}), d, cols_of_mn);
    x = bb.Select(is_j_mn, row_p, bb.Select(is_p_mn, row_j, x));
    // Eliminate below the pivot: l = column / pivot, trailing block -= l · (row j).
    Instruction* u = row(x);  // the pivot row, [..., n]
    Instruction* pivot = bb.Reshape(bb.DynamicSlice(x, at({j, j}), With(batch, {1, 1})), batch);
    Instruction* nonzero = bb.Compare(pivot, FullLike(bb, pivot, 0), ComparisonDirection::kNe);
    Instruction* below = bb.Binary(Opcode::kAnd, bb.Compare(rows, bb.Broadcast(j, vm, {}), ComparisonDirection::kGt),
                                   bb.Broadcast(nonzero, vm, bmap));
    col = column(x);
    Instruction* l = bb.Select(below, Div(bb, col, bb.Broadcast(pivot, vm, bmap)), col);
    Instruction* cols = bb.Iota(Shape::Array(PrimitiveType::S32, d), r - 1);
    Instruction* right = bb.Compare(cols, bb.Broadcast(j, d, {}), ComparisonDirection::kGt);
    Instruction* below_mn = bb.Broadcast(below, d, rows_of_mn);
    Instruction* l_mn = bb.Broadcast(l, d, rows_of_mn);
    Instruction* updated = Sub(bb, x, Mul(bb, l_mn, bb.Broadcast(u, d, cols_of_mn)));
    x = bb.Select(bb.Binary(Opcode::kAnd, below_mn, right), updated, x);
    Instruction* at_j = bb.Compare(cols, bb.Broadcast(j, d, {}), ComparisonDirection::kEq);
    x = bb.Select(bb.Binary(Opcode::kAnd, below_mn, at_j), l_mn, x);
    return {bb.Binary(Opcode::kAdd, j, bb.ConstantScalar(PrimitiveType::S32, 1)), x, piv, perm};
  };
  LoopState out = Loop(b, {b.ConstantScalar(PrimitiveType::S32, 0), a, piv0, perm0}, "lu", cond, body);
  return {out[1], out[2], out[3]};
}

// P (type t, [..., m, m]) with A = P·L·U: P[r, c] = (r == perm[ctx]).
Instruction* PermMatrix(Builder& b, Instruction* perm, PrimitiveType t) {
  std::vector<int64_t> d = Dims(perm);
  int64_t m = d.back(), r = Rank(perm);
  std::vector<int64_t> md = BatchOf(With(d, {0}));  // batch dims
  md = With(md, {m, m});
  std::vector<int64_t> map = With(DimRange(0, r - 1), {r});  // perm's last dim is the column index c
  Instruction* pc = BcastIn(b, perm, md, map);
  Instruction* rows = b.Iota(Shape::Array(PrimitiveType::S32, md), r - 1);
  return b.Convert(b.Compare(rows, pc, ComparisonDirection::kEq), t);
}

// The permutation of LAPACK-style 0-based row swaps `piv` ([..., k]) over m rows: a while loop that
// swaps perm[i] and perm[piv[i]] for i = 0..k-1.
Instruction* PivotsToPerm(Builder& b, Instruction* piv, int64_t m) {
  std::vector<int64_t> d = Dims(piv);
  int64_t k = d.back(), r = Rank(piv);
  std::vector<int64_t> pd = d;
  pd.back() = m;
  Shape ps = Shape::Array(PrimitiveType::S32, pd);
  Instruction* perm0 = b.Iota(ps, r - 1);
  if (k == 0 || m == 0) return perm0;
  std::vector<int64_t> batch(d.begin(), d.end() - 1);
  std::vector<int64_t> one = With(batch, {1});
  std::vector<int64_t> bmap = DimRange(0, r - 1);
  auto cond = [&](Builder& cb, const LoopState& st) {
    return cb.Compare(st[0], cb.ConstantScalar(PrimitiveType::S32, static_cast<double>(k)), ComparisonDirection::kLt);
  };
  auto body = [&](Builder& bb, const LoopState& st) -> LoopState {
    Instruction *i = st[0], *perm = st[1], *pv = st[2];
    std::vector<Instruction*> starts;
    for (int64_t j = 0; j + 1 < r; ++j) starts.push_back(bb.ConstantScalar(PrimitiveType::S32, 0));
    starts.push_back(i);
    Instruction* target = bb.DynamicSlice(pv, starts, one);  // piv[..., i]  [..., 1]
    Instruction* here = bb.DynamicSlice(perm, starts, one);  // perm[..., i] [..., 1]
    Instruction* lanes = bb.Iota(ps, r - 1);
    Instruction* is_target =
        bb.Compare(lanes, bb.Broadcast(bb.Reshape(target, batch), pd, bmap), ComparisonDirection::kEq);
    Instruction* there = Reduce(bb, bb.Select(is_target, perm, Full(bb, PrimitiveType::S32, 0, pd)), {r - 1},
                                Opcode::kAdd, bb.ConstantScalar(PrimitiveType::S32, 0));  // perm[..., piv[i]]
    Instruction* is_i = bb.Compare(lanes, bb.Broadcast(i, pd, {}), ComparisonDirection::kEq);
    Instruction* swapped = bb.Select(is_i, bb.Broadcast(there, pd, bmap),
                                     bb.Select(is_target, bb.Broadcast(bb.Reshape(here, batch), pd, bmap), perm));
    return {bb.Binary(Opcode::kAdd, i, bb.ConstantScalar(PrimitiveType::S32, 1)), swapped, pv};
  };
  return Loop(b, {b.ConstantScalar(PrimitiveType::S32, 0), perm0, piv}, "pivots_to_permutation", cond, body)[1];
}

// X from the LU factors of A = P·L·U (lu square [..., n, n]); left: op(A)·X = B, else X·op(A) = B,
// op = identity or adjoint. Batch dims of lu, perm and rhs must agree.
Instruction* LuSolve(Builder& b, Instruction* lu, Instruction* perm, Instruction* rhs, bool left, bool adjoint) {
  PrimitiveType t = rhs->shape.element_type();
  Instruction* p = PermMatrix(b, perm, t);
  if (left && !adjoint) {  // X = U⁻¹ L⁻¹ Pᵀ B
    Instruction* y = MatMul(b, MT(b, p), rhs);
    y = TriSolve(b, lu, y, true, true, TransposeA::kNoTranspose, true);
    return TriSolve(b, lu, y, true, false, TransposeA::kNoTranspose);
  }
  if (left) {  // Uᴴ Lᴴ Pᵀ X = B
    Instruction* y = TriSolve(b, lu, rhs, true, false, TransposeA::kAdjoint);
    y = TriSolve(b, lu, y, true, true, TransposeA::kAdjoint, true);
    return MatMul(b, p, y);
  }
  if (!adjoint) {  // X P L U = B
    Instruction* y = TriSolve(b, lu, rhs, false, false, TransposeA::kNoTranspose);
    y = TriSolve(b, lu, y, false, true, TransposeA::kNoTranspose, true);
    return MatMul(b, y, MT(b, p));
  }
  // X Uᴴ Lᴴ Pᵀ = B
  Instruction* y = MatMul(b, rhs, p);
  y = TriSolve(b, lu, y, false, true, TransposeA::kAdjoint, true);
  return TriSolve(b, lu, y, false, false, TransposeA::kAdjoint);
}

// ---- QR and Eigh ----
struct Qr {
  Instruction* a = nullptr;     // R above the diagonal, Householder vectors below
  Instruction* taus = nullptr;  // [..., k]
};
Qr QrOf(Builder& b, Instruction* a) {
  std::vector<int64_t> d = Dims(a);
  int64_t k = std::min(d[d.size() - 2], d[d.size() - 1]);
  Shape s = Shape::Tuple({a->shape, Shape::Array(a->shape.element_type(), With(BatchOf(d), {k}))});
  Instruction* cc = b.CustomCall({a}, "Qr", s);
  return {b.GetTupleElement(cc, 0), b.GetTupleElement(cc, 1)};
}
Instruction* HouseholderProduct(Builder& b, Instruction* a, Instruction* taus) {
  return b.CustomCall({a, taus}, "ProductOfElementaryHouseholderReflectors", a->shape);
}
// The full m×m Q of Householder vectors a ([..., m, n]) and taus.
Instruction* FullQ(Builder& b, Instruction* a, Instruction* taus) {
  std::vector<int64_t> d = Dims(a);
  int64_t m = d[d.size() - 2], n = d[d.size() - 1];
  if (n > m) a = Block(b, a, 0, m, 0, m);
  if (n < m) {
    hlo::PaddingConfig pc;
    for (size_t i = 0; i < d.size(); ++i) pc.dimensions.push_back({0, i + 1 == d.size() ? m - n : 0, 0});
    a = b.Pad(a, Scalar(b, a->shape.element_type(), 0), pc);
  }
  return HouseholderProduct(b, a, taus);
}

struct Eig {
  Instruction* v = nullptr;  // eigenvectors as columns
  Instruction* w = nullptr;  // ascending real eigenvalues
};
Eig EighOf(Builder& b, Instruction* a, bool lower) {
  std::vector<int64_t> d = Dims(a);
  Shape ws =
      Shape::Array(hlo::ComplexComponentType(a->shape.element_type()), std::vector<int64_t>(d.begin(), d.end() - 1));
  Instruction* cc = b.CustomCall({a}, "Eigh", Shape::Tuple({a->shape, ws}));
  // XLA's SelfAdjointEig: "lower,sort_eigenvalues,max_iter,tol".
  cc->mutable_rare().backend_config = fmt::format("{},1,15,0.000010", lower ? 1 : 0);
  return {b.GetTupleElement(cc, 0), b.GetTupleElement(cc, 1)};
}

struct Svd {
  Instruction* u = nullptr;   // [..., m, k] (or m×m when full)
  Instruction* s = nullptr;   // [..., k] descending, real
  Instruction* vh = nullptr;  // [..., k, n] (or n×n when full)
};
// SVD through Eigh of [[0, A], [Aᴴ, 0]]: eigenpairs (±σ, [u; ±v]/√2), plus |m − n| zero eigenvalues
// whose vectors complete U (m > n) or V (n > m).
Svd SvdOf(Builder& b, Instruction* a, bool full) {
  std::vector<int64_t> d = Dims(a);
  int64_t r = Rank(a), m = d[d.size() - 2], n = d[d.size() - 1], k = std::min(m, n), N = m + n;
  std::vector<int64_t> batch = BatchOf(d);
  PrimitiveType t = a->shape.element_type();
  Instruction* top = b.Concatenate({Full(b, t, 0, With(batch, {m, m})), a}, r - 1);
  Instruction* bottom = b.Concatenate({MH(b, a), Full(b, t, 0, With(batch, {n, n}))}, r - 1);
  Eig e = EighOf(b, b.Concatenate({top, bottom}, r - 2), true);
  Svd out;
  out.s = b.Reverse(SliceLast(b, e.w, N - k, N), {r - 2});
  Instruction* vk = b.Reverse(Block(b, e.v, 0, N, N - k, N), {r - 1});  // [..., N, k], σ descending
  Instruction* root2 = Scalar(b, t, std::sqrt(2.0));
  Instruction* u = b.Binary(Opcode::kMultiply, Block(b, vk, 0, m, 0, k), b.Broadcast(root2, With(batch, {m, k}), {}));
  Instruction* v = b.Binary(Opcode::kMultiply, Block(b, vk, m, N, 0, k), b.Broadcast(root2, With(batch, {n, k}), {}));
  if (full && m > n) u = b.Concatenate({u, Block(b, e.v, 0, m, n, m)}, r - 1);
  if (full && n > m) v = b.Concatenate({v, Block(b, e.v, m, N, m, n)}, r - 1);
  out.u = u;
  out.vh = MH(b, v);
  return out;
}

// Float (or complex) operand `name` converted to the type of output `out`.
// The linalg_ forms name the matrix `A`, the older ones `self`; either is accepted for the other.
Expected<Instruction*> FloatArg(const LoweringContext& ctx, const std::string& name, size_t pos, size_t out,
                                PrimitiveType* t) {
  Instruction* x = ctx.Tensor(name, pos);
  if (!x && (name == "A" || name == "self")) x = ctx.Tensor(name == "A" ? "self" : "A", pos);
  if (!x) return ctx.Unsupported(fmt::format("tensor argument '{}' is missing", name));
  if (x->shape.rank() < 2) return ctx.Unsupported(fmt::format("{} must be a [..., m, n] matrix", name));
  *t = ctx.OutputType(out, FloatType(x->shape.element_type()));
  if (!IsFloatish(*t)) *t = FloatType(x->shape.element_type());
  return ctx.builder.Convert(x, *t);
}

Expected<Instruction*> SquareArg(const LoweringContext& ctx, const std::string& name, size_t pos, size_t out,
                                 PrimitiveType* t) {
  OPPROBE_ASSIGN_OR_RETURN(Instruction * x, FloatArg(ctx, name, pos, out, t));
  std::vector<int64_t> d = Dims(x);
  if (d[d.size() - 1] != d[d.size() - 2])
    return ctx.Unsupported(fmt::format("{} must be square, got [{}]", name, fmt::join(d, ",")));
  return x;
}

// Broadcasts the batch dims of a ([..., n, n]) and b ([..., n, k]).
void CommonBatch(Builder& b, Instruction*& x, Instruction*& y) {
  std::vector<int64_t> bx = BatchOf(Dims(x)), by = BatchOf(Dims(y));
  std::vector<int64_t> batch = BroadcastShapes(bx, by);
  x = ToBatch(b, x, batch);
  y = ToBatch(b, y, batch);
}

// cholesky(self, upper), linalg_cholesky(self, upper), linalg_cholesky_ex(self, upper, check_errors).
Expected<LoweredOp> Cholesky(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, SquareArg(ctx, "self", 0, 0, &t));
  bool upper = ctx.Bool("upper", 1, false);
  // XLA leaves the other triangle unspecified; torch returns zeros there.
  Instruction* f = Triangle(b, b.Cholesky(a, !upper), !upper);
  std::vector<Instruction*> outs = {f};
  if (ctx.OutputMeta(1)) outs.push_back(FirstBad(b, b.Compare(Diag(b, f), Diag(b, f), ComparisonDirection::kNe)));
  return ctx.Finish(outs);
}

// cholesky_solve(self=B, input2=L, upper) and cholesky_inverse(self=L, upper).
Expected<LoweredOp> CholeskySolveOrInverse(const Node& n, Builder& b, bool inverse) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * l, SquareArg(ctx, inverse ? "self" : "input2", inverse ? 0 : 1, 0, &t));
  bool upper = ctx.Bool("upper", inverse ? 1 : 2, false);
  Instruction* rhs;
  if (inverse) {
    rhs = Eye(b, t, Dims(l));
  } else {
    OPPROBE_ASSIGN_OR_RETURN(rhs, FloatArg(ctx, "self", 0, 0, &t));
    l = b.Convert(l, t);
  }
  CommonBatch(b, l, rhs);
  Instruction* y = TriSolve(b, l, rhs, true, !upper, upper ? TransposeA::kAdjoint : TransposeA::kNoTranspose);
  return ctx.Finish({TriSolve(b, l, y, true, !upper, upper ? TransposeA::kNoTranspose : TransposeA::kAdjoint)});
}

Expected<LoweredOp> CholeskySolve(const Node& n, Builder& b) { return CholeskySolveOrInverse(n, b, false); }
Expected<LoweredOp> CholeskyInverse(const Node& n, Builder& b) { return CholeskySolveOrInverse(n, b, true); }

// triangular_solve(self=B, A, upper, transpose, unitriangular) -> (X, A);
// linalg_solve_triangular(self=A, B, upper, left, unitriangular) -> X.
Expected<LoweredOp> TriangularSolveOp(const Node& n, Builder& b, bool legacy) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, SquareArg(ctx, legacy ? "A" : "self", legacy ? 1 : 0, 0, &t));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * rhs, FloatArg(ctx, legacy ? "self" : "B", legacy ? 0 : 1, 0, &t));
  a = b.Convert(a, t);
  bool upper = ctx.Bool("upper", 2, legacy);
  bool left = legacy ? true : ctx.Bool("left", 3, true);
  bool transpose = legacy && ctx.Bool("transpose", 3, false);
  bool unit = ctx.Bool("unitriangular", 4, false);
  CommonBatch(b, a, rhs);
  Instruction* x =
      TriSolve(b, a, rhs, left, !upper, transpose ? TransposeA::kTranspose : TransposeA::kNoTranspose, unit);
  if (legacy) return ctx.Finish({x, a});
  return ctx.Finish({x});
}

Expected<LoweredOp> TriangularSolve(const Node& n, Builder& b) { return TriangularSolveOp(n, b, true); }
Expected<LoweredOp> SolveTriangular(const Node& n, Builder& b) { return TriangularSolveOp(n, b, false); }

// linalg_lu_factor_ex(A, pivot, check_errors) -> (LU, pivots, info); linalg_lu_factor -> (LU, pivots);
// linalg_lu(A, pivot) -> (P, L, U).
Expected<LoweredOp> LuFactorOp(const Node& n, Builder& b, bool plu) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, FloatArg(ctx, "A", 0, plu ? 1 : 0, &t));
  if (!ctx.Bool("pivot", 1, true)) return ctx.Unsupported("LU without pivoting has no XLA form");
  Lu f = LuOf(b, a);
  std::vector<int64_t> d = Dims(a);
  int64_t m = d[d.size() - 2], nn = d[d.size() - 1], k = std::min(m, nn);
  if (plu) {
    Instruction* l = Block(b, f.lu, 0, m, 0, k);
    l = b.Binary(Opcode::kAdd, Triangle(b, l, true, -1), Eye(b, t, Dims(l)));
    Instruction* u = Triangle(b, Block(b, f.lu, 0, k, 0, nn), false);
    return ctx.Finish({PermMatrix(b, f.perm, t), l, u});
  }
  std::vector<Instruction*> outs = {f.lu, AddScalar(b, f.piv, 1)};
  if (ctx.OutputMeta(2)) outs.push_back(FirstBad(b, CmpScalar(b, Diag(b, f.lu), 0, ComparisonDirection::kEq)));
  return ctx.Finish(outs);
}

Expected<LoweredOp> LuFactor(const Node& n, Builder& b) { return LuFactorOp(n, b, false); }
Expected<LoweredOp> LinalgLu(const Node& n, Builder& b) { return LuFactorOp(n, b, true); }

// lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots) -> (P, L, U).
Expected<LoweredOp> LuUnpack(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * lu, FloatArg(ctx, "LU_data", 0, 1, &t));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * piv, ctx.RequiredTensor("LU_pivots", 1));
  std::vector<int64_t> d = Dims(lu);
  int64_t m = d[d.size() - 2], nn = d[d.size() - 1], k = std::min(m, nn);
  std::vector<Instruction*> outs;
  if (ctx.Bool("unpack_pivots", 3, true)) {
    Instruction* p0 = AddScalar(b, b.Convert(piv, PrimitiveType::S32), -1);
    outs.push_back(PermMatrix(b, PivotsToPerm(b, p0, m), t));
  } else {
    OPPROBE_ASSIGN_OR_RETURN(Instruction * e, EmptyOut(ctx, 0));
    outs.push_back(e);
  }
  if (ctx.Bool("unpack_data", 2, true)) {
    Instruction* l = Block(b, lu, 0, m, 0, k);
    outs.push_back(b.Binary(Opcode::kAdd, Triangle(b, l, true, -1), Eye(b, t, Dims(l))));
    outs.push_back(Triangle(b, Block(b, lu, 0, k, 0, nn), false));
  } else {
    for (size_t i = 1; i < 3; ++i) {
      OPPROBE_ASSIGN_OR_RETURN(Instruction * e, EmptyOut(ctx, i));
      outs.push_back(e);
    }
  }
  return ctx.Finish(outs);
}

// linalg_lu_solve(LU, pivots, B, left, adjoint); lu_solve(self=B, LU_data, LU_pivots).
Expected<LoweredOp> LuSolveOp(const Node& n, Builder& b, bool legacy) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * lu, SquareArg(ctx, legacy ? "LU_data" : "LU", legacy ? 1 : 0, 0, &t));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * piv, ctx.RequiredTensor(legacy ? "LU_pivots" : "pivots", legacy ? 2 : 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * rhs, FloatArg(ctx, legacy ? "self" : "B", legacy ? 0 : 2, 0, &t));
  bool left = legacy || ctx.Bool("left", 3, true);
  bool adjoint = !legacy && ctx.Bool("adjoint", 4, false);
  int64_t m = Dims(lu).back();
  Instruction* perm = PivotsToPerm(b, AddScalar(b, b.Convert(piv, PrimitiveType::S32), -1), m);
  std::vector<int64_t> batch = BroadcastShapes(BatchOf(Dims(lu)), BatchOf(Dims(rhs)));
  lu = ToBatch(b, lu, batch);
  rhs = ToBatch(b, rhs, batch);
  perm = Bcast(b, perm, With(batch, {m}));
  return ctx.Finish({LuSolve(b, lu, perm, rhs, left, adjoint)});
}

Expected<LoweredOp> LinalgLuSolve(const Node& n, Builder& b) { return LuSolveOp(n, b, false); }
Expected<LoweredOp> LegacyLuSolve(const Node& n, Builder& b) { return LuSolveOp(n, b, true); }

// linalg_inv_ex(A, check_errors) -> (inverse, info); linalg_inv / inverse -> inverse.
Expected<LoweredOp> Inverse(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, SquareArg(ctx, "A", 0, 0, &t));
  Lu f = LuOf(b, a);
  Instruction* inv = LuSolve(b, f.lu, f.perm, Eye(b, t, Dims(a)), true, false);
  std::vector<Instruction*> outs = {inv};
  if (ctx.OutputMeta(1)) outs.push_back(FirstBad(b, CmpScalar(b, Diag(b, f.lu), 0, ComparisonDirection::kEq)));
  return ctx.Finish(outs);
}

// _linalg_solve_ex(A, B, left, check_errors) -> (X, LU, pivots, info); linalg_solve(A, B, left) -> X.
// Like PyTorch on the CPU, a real A is factored as Aᵀ (what its contiguous memory is to LAPACK), so
// the LU and pivots outputs are those of Aᵀ and the solve uses the adjoint.
Expected<LoweredOp> Solve(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, SquareArg(ctx, "A", 0, 0, &t));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * rhs, ctx.RequiredTensor("B", 1));
  rhs = b.Convert(rhs, t);
  bool left = ctx.Bool("left", 2, true);
  std::vector<int64_t> ad = Dims(a), bd = Dims(rhs);
  int64_t nn = ad.back();
  // B is a vector (or a batch of them) when it has one dim fewer than A and matches A's leading dims.
  bool vec = rhs->shape.rank() == 1 ||
             (rhs->shape.rank() == a->shape.rank() - 1 && std::equal(bd.begin(), bd.end(), ad.begin()));
  if (vec) {
    std::vector<int64_t> col = bd;
    col.insert(col.end() - (left ? 0 : 1), 1);  // [..., n, 1] (left) or [..., 1, n]
    if (!left) col = With(std::vector<int64_t>(bd.begin(), bd.end() - 1), {1, nn});
    rhs = b.Reshape(rhs, col);
  }
  CommonBatch(b, a, rhs);
  bool use_at = !hlo::IsComplex(t);
  Lu f = LuOf(b, use_at ? MT(b, a) : a);
  Instruction* x = LuSolve(b, f.lu, f.perm, rhs, left, use_at);
  if (vec) x = b.Reshape(x, ctx.OutputMeta(0) ? ctx.OutputMeta(0)->sizes : bd);
  std::vector<Instruction*> outs = {x};
  if (ctx.OutputMeta(1)) outs.push_back(f.lu);
  if (ctx.OutputMeta(2)) outs.push_back(AddScalar(b, f.piv, 1));
  if (ctx.OutputMeta(3)) outs.push_back(FirstBad(b, CmpScalar(b, Diag(b, f.lu), 0, ComparisonDirection::kEq)));
  return ctx.Finish(outs);
}

// _linalg_det(A) -> (det, LU, pivots); _linalg_slogdet(A) -> (sign, logabsdet, LU, pivots);
// linalg_det / det -> det; logdet -> log(det) (nan for a negative det).
enum class DetForm { kDet, kLogdet, kSlogdet };

Expected<LoweredOp> Det(const Node& n, Builder& b, DetForm form) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, SquareArg(ctx, "A", 0, 0, &t));
  // PyTorch factors a real A as Aᵀ (its LU and pivots outputs show it); det(Aᵀ) = det(A).
  Lu f = LuOf(b, hlo::IsComplex(t) ? a : MT(b, a));
  Instruction* d = Diag(b, f.lu);
  int64_t r = Rank(d);
  std::vector<int64_t> dd = Dims(d);
  // (-1)^(number of actual row swaps).
  Instruction* swaps = b.Compare(f.piv, b.Iota(Shape::Array(PrimitiveType::S32, dd), r - 1), ComparisonDirection::kNe);
  Instruction* nswaps = ReduceSum(b, b.Convert(swaps, PrimitiveType::S32), {r - 1});
  Instruction* odd =
      CmpScalar(b, b.Binary(Opcode::kRemainder, nswaps, FullLike(b, nswaps, 2)), 1, ComparisonDirection::kEq);
  auto parity = [&](Instruction* like) { return b.Select(odd, FullLike(b, like, -1), FullLike(b, like, 1)); };
  bool slog = form == DetForm::kSlogdet;
  if (!slog) {
    Instruction* det = Reduce(b, d, {r - 1}, Opcode::kMultiply, Scalar(b, t, 1));
    det = b.Binary(Opcode::kMultiply, det, parity(det));
    if (form == DetForm::kLogdet) return ctx.Finish({b.Unary(Opcode::kLog, det)});
    std::vector<Instruction*> outs = {det};
    if (ctx.OutputMeta(1)) outs.push_back(f.lu);
    if (ctx.OutputMeta(2)) outs.push_back(AddScalar(b, f.piv, 1));
    return ctx.Finish(outs);
  }
  Instruction* absd = b.Unary(Opcode::kAbs, d);  // real
  Instruction* logabs = ReduceSum(b, b.Unary(Opcode::kLog, absd), {r - 1});
  Instruction* unit;
  if (hlo::IsComplex(t)) {
    Instruction* zero = CmpScalar(b, absd, 0, ComparisonDirection::kEq);
    Instruction* safe = b.Select(zero, FullLike(b, absd, 1), absd);
    unit = b.Select(zero, FullLike(b, d, 0), b.Binary(Opcode::kDivide, d, b.Complex(safe, FullLike(b, safe, 0))));
  } else {
    unit = b.Unary(Opcode::kSign, d);
  }
  Instruction* sign = Reduce(b, unit, {r - 1}, Opcode::kMultiply, Scalar(b, t, 1));
  sign = b.Binary(Opcode::kMultiply, sign, parity(sign));
  std::vector<Instruction*> outs = {sign, logabs};
  if (ctx.OutputMeta(2)) outs.push_back(f.lu);
  if (ctx.OutputMeta(3)) outs.push_back(AddScalar(b, f.piv, 1));
  return ctx.Finish(outs);
}

template <DetForm kForm>
Expected<LoweredOp> DetLowering(const Node& n, Builder& b) {
  return Det(n, b, kForm);
}

// linalg_qr(A, mode) / qr(self, some) -> (Q, R); geqrf(self) -> (a, tau).
enum class QrForm { kLinalgQr, kQr, kGeqrf };

Expected<LoweredOp> QrOp(const Node& n, Builder& b, QrForm form) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  bool legacy = form != QrForm::kLinalgQr;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, FloatArg(ctx, legacy ? "self" : "A", 0, 0, &t));
  Qr q = QrOf(b, a);
  if (form == QrForm::kGeqrf) return ctx.Finish({q.a, q.taus});
  std::string mode = legacy ? (ctx.Bool("some", 1, true) ? "reduced" : "complete") : ctx.String("mode", 1, "reduced");
  std::vector<int64_t> d = Dims(a);
  int64_t m = d[d.size() - 2], nn = d[d.size() - 1], k = std::min(m, nn);
  if (mode == "complete") return ctx.Finish({FullQ(b, q.a, q.taus), Triangle(b, q.a, false)});
  Instruction* r = Triangle(b, Block(b, q.a, 0, k, 0, nn), false);
  if (mode == "r") {
    OPPROBE_ASSIGN_OR_RETURN(Instruction * e, EmptyOut(ctx, 0));
    return ctx.Finish({e, r});
  }
  if (mode != "reduced") return ctx.Unsupported(fmt::format("unknown qr mode '{}'", mode));
  return ctx.Finish({HouseholderProduct(b, Block(b, q.a, 0, m, 0, k), q.taus), r});
}

template <QrForm kForm>
Expected<LoweredOp> QrLowering(const Node& n, Builder& b) {
  return QrOp(n, b, kForm);
}

// linalg_householder_product(input, tau) / orgqr(self, input2).
Expected<LoweredOp> HouseholderProductOp(const Node& n, Builder& b, bool orgqr) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, FloatArg(ctx, orgqr ? "self" : "input", 0, 0, &t));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * tau, ctx.RequiredTensor(orgqr ? "input2" : "tau", 1));
  return ctx.Finish({HouseholderProduct(b, a, b.Convert(tau, t))});
}

Expected<LoweredOp> LinalgHouseholderProduct(const Node& n, Builder& b) { return HouseholderProductOp(n, b, false); }
Expected<LoweredOp> Orgqr(const Node& n, Builder& b) { return HouseholderProductOp(n, b, true); }

// ormqr(self, input2=tau, input3=C, left, transpose): op(Q)·C or C·op(Q), Q the full m×m product.
Expected<LoweredOp> Ormqr(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, FloatArg(ctx, "self", 0, 0, &t));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * tau, ctx.RequiredTensor("input2", 1));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * other, FloatArg(ctx, "input3", 2, 0, &t));
  bool left = ctx.Bool("left", 3, true), transpose = ctx.Bool("transpose", 4, false);
  Instruction* q = FullQ(b, a, b.Convert(tau, t));
  if (transpose) q = MH(b, q);
  return ctx.Finish({left ? MatMul(b, q, other) : MatMul(b, other, q)});
}

// _linalg_eigh(A, UPLO, compute_v) / linalg_eigh -> (w, V); symeig(self, eigenvectors, upper) -> (w, V);
// linalg_eigvalsh(A, UPLO) -> w.
Expected<LoweredOp> EighOp(const Node& n, Builder& b, bool legacy) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, SquareArg(ctx, legacy ? "self" : "A", 0, 99, &t));
  bool lower = legacy ? !ctx.Bool("upper", 2, true) : ctx.String("UPLO", 1, "L") != "U";
  Eig e = EighOf(b, a, lower);
  std::vector<Instruction*> outs = {e.w};
  if (ctx.OutputMeta(1)) {
    bool want_v = legacy ? ctx.Bool("eigenvectors", 1, false) : ctx.Bool("compute_v", 2, true);
    if (want_v && ctx.OutputMeta(1)->sizes == Dims(a)) {
      outs.push_back(e.v);
    } else {
      OPPROBE_ASSIGN_OR_RETURN(Instruction * z, EmptyOut(ctx, 1));
      outs.push_back(z);
    }
  }
  return ctx.Finish(outs);
}

// _linalg_svd(A, full_matrices, compute_uv, driver) / linalg_svd -> (U, S, Vh); svd(self, some,
// compute_uv) -> (U, S, V); linalg_svdvals(A) -> S.
Expected<LoweredOp> Eigh(const Node& n, Builder& b) { return EighOp(n, b, false); }
Expected<LoweredOp> Symeig(const Node& n, Builder& b) { return EighOp(n, b, true); }

enum class SvdForm { kLinalgSvd, kSvd, kSvdvals };

Expected<LoweredOp> SvdOp(const Node& n, Builder& b, SvdForm form) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  bool legacy = form == SvdForm::kSvd;
  bool vals_only = form == SvdForm::kSvdvals;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, FloatArg(ctx, legacy ? "self" : "A", 0, vals_only ? 99 : 0, &t));
  if (vals_only) t = FloatType(a->shape.element_type());
  bool full = legacy ? !ctx.Bool("some", 1, true) : ctx.Bool("full_matrices", 1, true);
  bool uv = vals_only ? false : ctx.Bool("compute_uv", 2, true);
  Svd s = SvdOf(b, a, full);
  if (vals_only) return ctx.Finish({s.s});
  std::vector<Instruction*> outs;
  if (uv) {
    outs = {s.u, s.s, legacy ? MH(b, s.vh) : s.vh};
  } else {
    OPPROBE_ASSIGN_OR_RETURN(Instruction * u, EmptyOut(ctx, 0));
    OPPROBE_ASSIGN_OR_RETURN(Instruction * v, EmptyOut(ctx, 2));
    outs = {u, s.s, v};
  }
  return ctx.Finish(outs);
}

template <SvdForm kForm>
Expected<LoweredOp> SvdLowering(const Node& n, Builder& b) {
  return SvdOp(n, b, kForm);
}

// linalg_pinv (atol/rtol as tensors or floats, or rcond) -> the pseudo-inverse through the SVD (or
// Eigh when hermitian), dropping singular values at or below max(atol, rtol·σ_max).
Expected<LoweredOp> Pinv(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, FloatArg(ctx, "self", 0, 0, &t));
  std::vector<int64_t> d = Dims(a);
  int64_t r = Rank(a), m = d[d.size() - 2], nn = d[d.size() - 1];
  const TensorMeta* out = ctx.OutputMeta(0);
  if (out && Numel(out->sizes) == 0) return ctx.Finish({Full(b, t, 0, out->sizes)});
  PrimitiveType rt = hlo::ComplexComponentType(t);
  std::vector<int64_t> batch = BatchOf(d);
  // atol and rtol as [...] batch tensors of the real type (None -> absent).
  auto tol_arg = [&](const std::string& name, size_t pos) -> Instruction* {
    if (Instruction* x = ctx.Tensor(name, pos)) return Bcast(b, b.Convert(x, rt), batch);
    const Value* v = ctx.Arg(name, pos);
    if (v && (v->kind == Value::Kind::kFloat || v->kind == Value::Kind::kInt))
      return Full(b, rt, ctx.Double(name, pos, 0), batch);
    return nullptr;
  };
  Instruction* atol = tol_arg("atol", 1);
  Instruction* rtol = tol_arg("rtol", 2);
  bool hermitian = ctx.Bool("hermitian", 3, false);
  if (n.overload == "default" || n.overload == "rcond_tensor" || n.overload.empty()) {
    // linalg_pinv(self, rcond, hermitian): rcond is rtol.
    Instruction* rc = nullptr;
    if (Instruction* x = ctx.Tensor("rcond", 1)) rc = Bcast(b, b.Convert(x, rt), batch);
    else if (const Value* v = ctx.Arg("rcond", 1); v && !v->is_none())
      rc = Full(b, rt, ctx.Double("rcond", 1, 1e-15), batch);
    if (rc) rtol = rc, atol = nullptr;
    hermitian = ctx.Bool("hermitian", 2, hermitian);
  }
  Instruction* default_rtol = Full(b, rt, MachineEpsilon(t) * static_cast<double>(std::max(m, nn)), batch);
  bool atol_given = atol != nullptr;
  if (!atol) atol = Full(b, rt, 0, batch);
  if (!rtol) {  // PyTorch: eps·max(m, n), or 0 when a positive atol is given
    rtol = atol_given ? b.Select(CmpScalar(b, atol, 0, ComparisonDirection::kGt), Full(b, rt, 0, batch), default_rtol)
                      : default_rtol;
  }
  std::vector<int64_t> bmap = DimRange(0, r - 2);
  // left · diag(1/values where mag > max(atol, rtol·largest), else 0) · rightᴴ, values [..., k].
  auto pseudo_inverse = [&](Instruction* values, Instruction* mag, Instruction* largest, Instruction* left,
                            Instruction* right) {
    Instruction* tol = b.Binary(Opcode::kMaximum, atol, b.Binary(Opcode::kMultiply, rtol, largest));
    Instruction* keep = b.Compare(mag, b.Broadcast(tol, Dims(mag), bmap), ComparisonDirection::kGt);
    Instruction* inv =
        b.Select(keep, b.Binary(Opcode::kDivide, FullLike(b, values, 1), values), FullLike(b, values, 0));
    Instruction* scaled =
        b.Binary(Opcode::kMultiply, left, b.Broadcast(b.Convert(inv, t), Dims(left), With(bmap, {r - 1})));
    return MatMul(b, scaled, MH(b, right));
  };
  Instruction* result;
  if (hermitian) {
    Eig e = EighOf(b, a, true);
    Instruction* absw = b.Unary(Opcode::kAbs, e.w);
    result = pseudo_inverse(e.w, absw, ReduceMax(b, absw, {r - 2}), e.v, e.v);
  } else {
    Svd s = SvdOf(b, a, false);
    Instruction* largest = b.Reshape(SliceLast(b, s.s, 0, 1), batch);  // σ are descending
    result = pseudo_inverse(s.s, s.s, largest, MH(b, s.vh), s.u);
  }
  return ctx.Finish({result});
}

// linalg_matrix_exp(self) / matrix_exp: scaling and squaring. s = ⌈log2(‖A‖₁ / 0.5)⌉ (per matrix,
// at least 0), exp(A / 2^s) by a degree-12 Taylor polynomial (error below ‖·‖¹³/13! ≈ 2e-14), then
// s squarings in a `while` loop.
Expected<LoweredOp> MatrixExp(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, SquareArg(ctx, "self", 0, 0, &t));
  std::vector<int64_t> d = Dims(a);
  int64_t r = Rank(a);
  if (Numel(d) == 0) return ctx.Finish({a});
  PrimitiveType rt = hlo::ComplexComponentType(t);
  std::vector<int64_t> batch = BatchOf(d);
  std::vector<int64_t> bmap = DimRange(0, r - 2);
  Instruction* norm = ReduceMax(b, ReduceSum(b, b.Unary(Opcode::kAbs, a), {r - 2}), {r - 2});  // [...]
  Instruction* s = b.Unary(Opcode::kCeil, b.Binary(Opcode::kDivide, b.Unary(Opcode::kLog, MulScalar(b, norm, 2.0)),
                                                   Full(b, rt, std::log(2.0), batch)));
  s = b.Binary(Opcode::kMinimum, b.Binary(Opcode::kMaximum, s, FullLike(b, s, 0)), FullLike(b, s, 60));
  s = b.Select(b.Compare(s, s, ComparisonDirection::kEq), s, FullLike(b, s, 0));  // NaN norm: no scaling
  Instruction* scale = b.Binary(Opcode::kPower, Full(b, rt, 0.5, batch), s);
  Instruction* x = b.Binary(Opcode::kMultiply, a, b.Broadcast(b.Convert(scale, t), d, bmap));
  Instruction* eye = Eye(b, t, d);
  Instruction* p = eye;
  for (int j = 12; j >= 1; --j) p = b.Binary(Opcode::kAdd, eye, MulScalar(b, MatMul(b, x, p), 1.0 / j));
  // Square s times: the loop runs max(s) times, each matrix squares while i < its s.
  Instruction* si = b.Convert(s, PrimitiveType::S32);
  Instruction* count = Reduce(b, si, bmap, Opcode::kMaximum, b.ConstantScalar(PrimitiveType::S32, 0));
  auto cond = [](Builder& cb, const LoopState& st) { return cb.Compare(st[0], st[1], ComparisonDirection::kLt); };
  auto body = [&](Builder& bb, const LoopState& st) -> LoopState {
    Instruction *i = st[0], *sv = st[2], *cur = st[3];
    Instruction* go = bb.Compare(bb.Broadcast(i, batch, {}), sv, ComparisonDirection::kLt);
    Instruction* next = bb.Select(bb.Broadcast(go, d, bmap), MatMul(bb, cur, cur), cur);
    return {bb.Binary(Opcode::kAdd, i, bb.ConstantScalar(PrimitiveType::S32, 1)), st[1], sv, next};
  };
  LoopState out = Loop(b, {b.ConstantScalar(PrimitiveType::S32, 0), count, si, p}, "matrix_exp_squarings", cond, body);
  return ctx.Finish({out[3]});
}

// linalg_lstsq(self=A, b, rcond, driver) -> (solution, residuals, rank, singular_values): the QR
// solution of a full-rank problem (least squares when m >= n, minimum norm when m < n, as LAPACK's
// gels); rank and singular values (gelsy/gelsd/gelss) from the SVD when PyTorch returns them.
Expected<LoweredOp> Lstsq(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  PrimitiveType t;
  OPPROBE_ASSIGN_OR_RETURN(Instruction * a, FloatArg(ctx, "self", 0, 0, &t));
  OPPROBE_ASSIGN_OR_RETURN(Instruction * rhs, ctx.RequiredTensor("b", 1));
  rhs = b.Convert(rhs, t);
  bool vec = rhs->shape.rank() == a->shape.rank() - 1;
  if (vec) rhs = b.Reshape(rhs, With(Dims(rhs), {1}));
  CommonBatch(b, a, rhs);
  std::vector<int64_t> d = Dims(a);
  int64_t r = Rank(a), m = d[d.size() - 2], nn = d[d.size() - 1], k = std::min(m, nn);
  Instruction* x;
  if (m >= nn) {
    Qr q = QrOf(b, a);
    Instruction* qm = HouseholderProduct(b, Block(b, q.a, 0, m, 0, k), q.taus);
    Instruction* y = MatMul(b, MH(b, qm), rhs);
    x = TriSolve(b, Block(b, q.a, 0, nn, 0, nn), y, true, false, TransposeA::kNoTranspose);
  } else {
    Qr q = QrOf(b, MH(b, a));  // Aᴴ = Q R, A = Rᴴ Qᴴ, x = Q R⁻ᴴ b
    Instruction* qm = HouseholderProduct(b, Block(b, q.a, 0, nn, 0, k), q.taus);
    Instruction* z = TriSolve(b, Block(b, q.a, 0, m, 0, m), rhs, true, false, TransposeA::kAdjoint);
    x = MatMul(b, qm, z);
  }
  std::vector<Instruction*> outs;
  const TensorMeta* o0 = ctx.OutputMeta(0);
  outs.push_back(vec && o0 ? b.Reshape(x, o0->sizes) : x);
  const TensorMeta* o1 = ctx.OutputMeta(1);
  if (o1 && Numel(o1->sizes) > 0) {
    Instruction* res = b.Binary(Opcode::kSubtract, MatMul(b, a, x), rhs);
    Instruction* abs = b.Unary(Opcode::kAbs, res);
    outs.push_back(b.Reshape(ReduceSum(b, b.Binary(Opcode::kMultiply, abs, abs), {r - 2}), o1->sizes));
  } else {
    OPPROBE_ASSIGN_OR_RETURN(Instruction * e, EmptyOut(ctx, 1));
    outs.push_back(e);
  }
  const TensorMeta* o2 = ctx.OutputMeta(2);
  const TensorMeta* o3 = ctx.OutputMeta(3);
  if ((o2 && Numel(o2->sizes) > 0) || (o3 && Numel(o3->sizes) > 0)) {
    Svd s = SvdOf(b, a, false);
    std::vector<int64_t> batch = BatchOf(d);
    PrimitiveType rt = hlo::ComplexComponentType(t);
    double rc = ctx.Double("rcond", 2, MachineEpsilon(t) * static_cast<double>(std::max(m, nn)));
    Instruction* maxs = b.Broadcast(b.Reshape(SliceLast(b, s.s, 0, 1), batch), Dims(s.s), DimRange(0, r - 2));
    Instruction* big = b.Compare(s.s, MulScalar(b, maxs, rc), ComparisonDirection::kGt);
    if (o2 && Numel(o2->sizes) > 0) outs.push_back(ReduceSum(b, b.Convert(big, o2->dtype), {r - 2}));
    else {
      OPPROBE_ASSIGN_OR_RETURN(Instruction * e, EmptyOut(ctx, 2));
      outs.push_back(e);
    }
    if (o3 && Numel(o3->sizes) > 0) outs.push_back(b.Convert(s.s, rt));
    else {
      OPPROBE_ASSIGN_OR_RETURN(Instruction * e, EmptyOut(ctx, 3));
      outs.push_back(e);
    }
  } else {
    for (size_t i = 2; i < 4 && ctx.OutputMeta(i); ++i) {
      OPPROBE_ASSIGN_OR_RETURN(Instruction * e, EmptyOut(ctx, i));
      outs.push_back(e);
    }
  }
  return ctx.Finish(outs);
}

// _linalg_check_errors: a host-side check (raising on a bad info value) that emits no HLO.
Expected<LoweredOp> NoOutputs(const Node& n, Builder& b) {
  LoweringContext ctx(n, b);
  // Host-side checks (e.g. _linalg_check_errors raising on a bad info value) emit no HLO.
  LoweredOp op;
  if (!b.ok()) return b.status();
  return op;
}

}  // namespace

const LoweringFamily& FactorizationLowerings() {
  static const auto* family = new LoweringFamily{FamilyOf(__FILE__),
                                                 {
                                                     {"aten::cholesky", Cholesky},
                                                     {"aten::linalg_cholesky", Cholesky},
                                                     {"aten::linalg_cholesky_ex", Cholesky},
                                                     {"aten::cholesky_solve", CholeskySolve},
                                                     {"aten::cholesky_inverse", CholeskyInverse},
                                                     {"aten::triangular_solve", TriangularSolve},
                                                     {"aten::linalg_solve_triangular", SolveTriangular},
                                                     {"aten::linalg_lu_factor", LuFactor},
                                                     {"aten::linalg_lu_factor_ex", LuFactor},
                                                     {"aten::linalg_lu", LinalgLu},
                                                     {"aten::lu_unpack", LuUnpack},
                                                     {"aten::linalg_lu_solve", LinalgLuSolve},
                                                     {"aten::lu_solve", LegacyLuSolve},
                                                     {"aten::inverse", Inverse},
                                                     {"aten::linalg_inv", Inverse},
                                                     {"aten::linalg_inv_ex", Inverse},
                                                     {"aten::_linalg_solve_ex", Solve},
                                                     {"aten::linalg_solve", Solve},
                                                     {"aten::linalg_solve_ex", Solve},
                                                     {"aten::det", DetLowering<DetForm::kDet>},
                                                     {"aten::linalg_det", DetLowering<DetForm::kDet>},
                                                     {"aten::_linalg_det", DetLowering<DetForm::kDet>},
                                                     {"aten::logdet", DetLowering<DetForm::kLogdet>},
                                                     {"aten::slogdet", DetLowering<DetForm::kSlogdet>},
                                                     {"aten::linalg_slogdet", DetLowering<DetForm::kSlogdet>},
                                                     {"aten::_linalg_slogdet", DetLowering<DetForm::kSlogdet>},
                                                     {"aten::linalg_qr", QrLowering<QrForm::kLinalgQr>},
                                                     {"aten::qr", QrLowering<QrForm::kQr>},
                                                     {"aten::geqrf", QrLowering<QrForm::kGeqrf>},
                                                     {"aten::linalg_householder_product", LinalgHouseholderProduct},
                                                     {"aten::orgqr", Orgqr},
                                                     {"aten::ormqr", Ormqr},
                                                     {"aten::_linalg_eigh", Eigh},
                                                     {"aten::linalg_eigh", Eigh},
                                                     {"aten::linalg_eigvalsh", Eigh},
                                                     {"aten::symeig", Symeig},
                                                     {"aten::_linalg_svd", SvdLowering<SvdForm::kLinalgSvd>},
                                                     {"aten::linalg_svd", SvdLowering<SvdForm::kLinalgSvd>},
                                                     {"aten::svd", SvdLowering<SvdForm::kSvd>},
                                                     {"aten::linalg_svdvals", SvdLowering<SvdForm::kSvdvals>},
                                                     {"aten::linalg_pinv", Pinv},
                                                     {"aten::linalg_matrix_exp", MatrixExp},
                                                     {"aten::matrix_exp", MatrixExp},
                                                     {"aten::linalg_lstsq", Lstsq},
                                                     {"aten::_linalg_check_errors", NoOutputs},
                                                 }};
  return *family;
}

}  // namespace opprobe::analyzer::lowering
