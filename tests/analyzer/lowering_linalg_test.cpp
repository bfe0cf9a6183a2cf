// LAPACK-style linear algebra (analyzer/lowering/factorization.cpp): each op lowers to the XLA forms
// (cholesky / triangular-solve opcodes, "Qr", "Eigh", "LuDecomposition" custom calls) and, evaluated
// by the interp evaluator on small matrices, gives the values worked out by hand (the conformance
// suite checks them against PyTorch on OpInfo's samples).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/analyzer/lowering_test_util.h"

namespace opprobe::analyzer {
namespace {

using hlo::Literal;
using hlo::PrimitiveType;
using testing::ExpectValues;
using testing::Lit;
using testing::LowerAndRun;
using testing::MakeNode;
using testing::T;
constexpr auto F64 = PrimitiveType::F64;
constexpr auto S32 = PrimitiveType::S32;

Literal F64s(std::vector<int64_t> dims, std::vector<double> v) { return Lit(F64, std::move(dims), v); }
Literal S32s(std::vector<int64_t> dims, std::vector<double> v) { return Lit(S32, std::move(dims), v); }

struct Evaluated {
  std::string hlo;
  std::vector<Literal> outs;
};

Evaluated LowerAndEval(const Node& n, const std::vector<Literal>& args) {
  Evaluated r;
  r.outs = LowerAndRun(n, args, &r.hlo);
  return r;
}

TEST(LoweringLinalg, CholeskyUpperAndInfo) {
  Node n = MakeNode("aten::linalg_cholesky_ex", "default",
                    {{"self", T(F64, {2, 2})}, {"upper", Value::Bool(true)}, {"check_errors", Value::Bool(false)}},
                    {T(F64, {2, 2}), T(S32, {})});
  Evaluated r = LowerAndEval(n, {F64s({2, 2}, {4, 2, 2, 5})});
  EXPECT_NE(r.hlo.find("cholesky("), std::string::npos) << r.hlo;
  ASSERT_EQ(r.outs.size(), 2u);
  ExpectValues(r.outs[0], {2, 1, 0, 2}, 1e-12);  // U with UᵀU = A
  ExpectValues(r.outs[1], {0}, 1e-12);
  Evaluated bad = LowerAndEval(n, {F64s({2, 2}, {1, 2, 2, 1})});  // indefinite
  ASSERT_EQ(bad.outs.size(), 2u);
  ExpectValues(bad.outs[1], {1}, 1e-12);
}

TEST(LoweringLinalg, InverseAndSolveThroughLu) {
  Node inv = MakeNode("aten::linalg_inv_ex", "default", {{"A", T(F64, {2, 2})}, {"check_errors", Value::Bool(false)}},
                      {T(F64, {2, 2}), T(S32, {})});
  Evaluated r = LowerAndEval(inv, {F64s({2, 2}, {4, 7, 2, 6})});
  EXPECT_EQ(r.hlo.find("custom-call("), std::string::npos) << r.hlo;  // LU is plain HLO
  EXPECT_NE(r.hlo.find("while("), std::string::npos);
  EXPECT_NE(r.hlo.find("triangular-solve("), std::string::npos);
  ASSERT_EQ(r.outs.size(), 2u);
  ExpectValues(r.outs[0], {0.6, -0.7, -0.2, 0.4}, 1e-12);
  // A·x = b with b a vector: [[1,2],[3,4]]·[1,1] = [3,7]; LU and pivots are those of Aᵀ, as on the CPU.
  Node solve = MakeNode(
      "aten::_linalg_solve_ex", "default",
      {{"A", T(F64, {2, 2})}, {"B", T(F64, {2})}, {"left", Value::Bool(true)}, {"check_errors", Value::Bool(false)}},
      {T(F64, {2}), T(F64, {2, 2}), T(S32, {2}), T(S32, {})});
  Evaluated s = LowerAndEval(solve, {F64s({2, 2}, {1, 2, 3, 4}), F64s({2}, {3, 7})});
  ASSERT_EQ(s.outs.size(), 4u);
  ExpectValues(s.outs[0], {1, 1}, 1e-12);
  ExpectValues(s.outs[1], {2, 4, 0.5, 1}, 1e-12);  // LU of [[1,3],[2,4]]
  EXPECT_EQ(s.outs[2].GetAsInt64(0), 2);           // 1-based pivots
}

TEST(LoweringLinalg, DetAndSlogdet) {
  Node det =
      MakeNode("aten::_linalg_det", "default", {{"A", T(F64, {2, 2})}}, {T(F64, {}), T(F64, {2, 2}), T(S32, {2})});
  Evaluated r = LowerAndEval(det, {F64s({2, 2}, {1, 2, 3, 4})});
  ASSERT_EQ(r.outs.size(), 3u);
  ExpectValues(r.outs[0], {-2}, 1e-12);
  Node slog = MakeNode("aten::_linalg_slogdet", "default", {{"A", T(F64, {2, 2})}},
                       {T(F64, {}), T(F64, {}), T(F64, {2, 2}), T(S32, {2})});
  Evaluated s = LowerAndEval(slog, {F64s({2, 2}, {1, 2, 3, 4})});
  ASSERT_EQ(s.outs.size(), 4u);
  ExpectValues(s.outs[0], {-1}, 1e-12);
  ExpectValues(s.outs[1], {std::log(2.0)}, 1e-12);
}

TEST(LoweringLinalg, LuUnpackRebuildsThePermutationFromPivots) {
  // Pivots [3, 3, 3] (1-based) over 3 rows: swap 0<->2, then 1<->2 -> row order [2, 0, 1].
  Node n = MakeNode("aten::lu_unpack", "default",
                    {{"LU_data", T(F64, {3, 3})},
                     {"LU_pivots", T(S32, {3})},
                     {"unpack_data", Value::Bool(true)},
                     {"unpack_pivots", Value::Bool(true)}},
                    {T(F64, {3, 3}), T(F64, {3, 3}), T(F64, {3, 3})});
  Evaluated r = LowerAndEval(n, {F64s({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), S32s({3}, {3, 3, 3})});
  EXPECT_NE(r.hlo.find("while("), std::string::npos);
  ASSERT_EQ(r.outs.size(), 3u);
  // A = P·L·U with P[perm[c], c] = 1, perm = [2, 0, 1].
  ExpectValues(r.outs[0], {0, 1, 0, 0, 0, 1, 1, 0, 0}, 1e-12);
  ExpectValues(r.outs[1], {1, 0, 0, 4, 1, 0, 7, 8, 1}, 1e-12);
  ExpectValues(r.outs[2], {1, 2, 3, 0, 5, 6, 0, 0, 9}, 1e-12);
}

TEST(LoweringLinalg, QrReconstructsTheMatrix) {
  Node n = MakeNode("aten::linalg_qr", "default", {{"A", T(F64, {3, 2})}, {"mode", Value::String("reduced")}},
                    {T(F64, {3, 2}), T(F64, {2, 2})});
  std::vector<double> a = {1, 2, 3, 4, 5, 7};
  Evaluated r = LowerAndEval(n, {F64s({3, 2}, a)});
  EXPECT_NE(r.hlo.find("custom_call_target=\"Qr\""), std::string::npos);
  EXPECT_NE(r.hlo.find("custom_call_target=\"ProductOfElementaryHouseholderReflectors\""), std::string::npos);
  ASSERT_EQ(r.outs.size(), 2u);
  const Literal &q = r.outs[0], &rr = r.outs[1];
  EXPECT_NEAR(rr.GetAsDouble(2), 0, 1e-15);                         // R is upper triangular
  EXPECT_NEAR(rr.GetAsDouble(0), -std::sqrt(1 + 9 + 25.0), 1e-12);  // LAPACK's sign: R[0,0] = -‖a₀‖
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      double s = 0;
      for (int k = 0; k < 2; ++k) s += q.GetAsDouble(i * 2 + k) * rr.GetAsDouble(k * 2 + j);
      EXPECT_NEAR(s, a[static_cast<size_t>(i * 2 + j)], 1e-12);
    }
}

TEST(LoweringLinalg, SvdThroughEighOfTheJordanWielandtMatrix) {
  // [[3,0],[0,-2],[0,0]]: σ = 3, 2.
  Node n = MakeNode("aten::_linalg_svd", "default",
                    {{"A", T(F64, {3, 2})},
                     {"full_matrices", Value::Bool(true)},
                     {"compute_uv", Value::Bool(true)},
                     {"driver", Value::None()}},
                    {T(F64, {3, 3}), T(F64, {2}), T(F64, {2, 2})});
  std::vector<double> a = {3, 0, 0, -2, 0, 0};
  Evaluated r = LowerAndEval(n, {F64s({3, 2}, a)});
  EXPECT_NE(r.hlo.find("custom_call_target=\"Eigh\""), std::string::npos);
  ASSERT_EQ(r.outs.size(), 3u);
  ExpectValues(r.outs[1], {3, 2}, 1e-12);
  const Literal &u = r.outs[0], &s = r.outs[1], &vh = r.outs[2];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      double x = 0;
      for (int k = 0; k < 2; ++k) x += u.GetAsDouble(i * 3 + k) * s.GetAsDouble(k) * vh.GetAsDouble(k * 2 + j);
      EXPECT_NEAR(x, a[static_cast<size_t>(i * 2 + j)], 1e-12);
    }
  // The third column of the full U is the unit vector orthogonal to A's range: ±e₂.
  EXPECT_NEAR(std::fabs(u.GetAsDouble(2 * 3 + 2)), 1, 1e-12);
}

TEST(LoweringLinalg, MatrixExpOfARotationGenerator) {
  Node n = MakeNode("aten::linalg_matrix_exp", "default", {{"self", T(F64, {2, 2})}}, {T(F64, {2, 2})});
  // exp([[0, t], [-t, 0]]) = [[cos t, sin t], [-sin t, cos t]]; t = 5 needs scaling and squaring.
  Evaluated r = LowerAndEval(n, {F64s({2, 2}, {0, 5, -5, 0})});
  ASSERT_EQ(r.outs.size(), 1u);
  ExpectValues(r.outs[0], {std::cos(5.0), std::sin(5.0), -std::sin(5.0), std::cos(5.0)}, 1e-12);
}

TEST(LoweringLinalg, PinvOfARankDeficientMatrix) {
  Node n = MakeNode(
      "aten::linalg_pinv", "atol_rtol_tensor",
      {{"self", T(F64, {2, 2})}, {"atol", Value::None()}, {"rtol", Value::None()}, {"hermitian", Value::Bool(false)}},
      {T(F64, {2, 2})});
  // pinv([[1,1],[1,1]]) = [[1,1],[1,1]] / 4.
  Evaluated r = LowerAndEval(n, {F64s({2, 2}, {1, 1, 1, 1})});
  ASSERT_EQ(r.outs.size(), 1u);
  ExpectValues(r.outs[0], {0.25, 0.25, 0.25, 0.25}, 1e-12);
}

TEST(LoweringLinalg, NonPivotingLuIsAnErrorValue) {
  Node n = MakeNode("aten::linalg_lu_factor_ex", "default",
                    {{"A", T(F64, {2, 2})}, {"pivot", Value::Bool(false)}, {"check_errors", Value::Bool(false)}},
                    {T(F64, {2, 2}), T(S32, {2}), T(S32, {})});
  auto m = Lower(n, LoweringTable::Builtin());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("without pivoting"), std::string::npos) << m.status().message();
}

}  // namespace
}  // namespace opprobe::analyzer
