// Special-function lowerings (analyzer/lowering/special.cpp, erfcx and log_ndtr included): each
// node is lowered with the built-in table, evaluated with the HLO evaluator and compared with known
// values (closed forms, tabulated zeros and values of DLMF/Abramowitz-Stegun), in f32 and f64.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "tests/analyzer/lowering_test_util.h"

namespace opprobe::analyzer {
namespace {

using hlo::Literal;
using hlo::PrimitiveType;
constexpr auto F32 = PrimitiveType::F32;
constexpr auto F64 = PrimitiveType::F64;
constexpr auto S64 = PrimitiveType::S64;

using testing::Lit;
using testing::LowerAndRun;
using testing::MakeNode;
using testing::T;

// Lowers `op` over 1-d tensors named `names` (one per input) of type t and evaluates it.
std::vector<double> Eval(const std::string& op, const std::vector<std::string>& names, PrimitiveType t,
                         const std::vector<std::vector<double>>& inputs) {
  int64_t len = static_cast<int64_t>(inputs[0].size());
  std::vector<Argument> args;
  std::vector<Literal> values;
  for (size_t i = 0; i < names.size(); ++i) {
    args.push_back({names[i], T(t, {len})});
    values.push_back(Lit(t, {len}, inputs[i]));
  }
  std::vector<Literal> r = LowerAndRun(MakeNode(op, "default", std::move(args), {T(t, {len})}), values);
  if (r.empty()) return {};
  std::vector<double> out;
  for (int64_t i = 0; i < len; ++i) out.push_back(r[0].GetAsDouble(i));
  return out;
}

std::vector<double> Eval1(const std::string& op, const std::string& name, PrimitiveType t,
                          const std::vector<double>& x) {
  return Eval(op, {name}, t, {x});
}

// |got - want| <= tol (absolute and relative), NaN matching NaN, infinities exactly.
void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << "[" << i << "] = " << got[i] << ", want NaN";
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << "[" << i << "]";
    } else {
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << "[" << i << "]";
    }
  }
}

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(LoweringSpecial, ChebyshevAndShiftedPolynomials) {
  for (PrimitiveType t : {F32, F64}) {
    double tol = t == F32 ? 2e-5 : 1e-12;
    // T_5(x) = 16x^5 - 20x^3 + 5x; degree 9 at |x| < 1 takes the closed form cos(9 acos x).
    auto t5 = [](double x) { return 16 * std::pow(x, 5) - 20 * std::pow(x, 3) + 5 * x; };
    ExpectNear(
        Eval("aten::special_chebyshev_polynomial_t", {"x", "n"}, t, {{0.3, 1.5, -2.0, 1.0, -1.0}, {5, 5, 5, 5, 5}}),
        {t5(0.3), t5(1.5), t5(-2.0), 1, -1}, tol, "T5");
    ExpectNear(Eval("aten::special_chebyshev_polynomial_t", {"x", "n"}, t, {{0.3, 0.3, 0.3, 0.3}, {9, 0, -2, 1.9}}),
               {std::cos(9 * std::acos(0.3)), 1, 0, 0.3}, tol, "T_n(0.3)");
    // U_3 = 8x^3 - 4x, V_2 = 4x^2 - 2x - 1, W_2 = 4x^2 + 2x - 1; U_10(1) = 11, W_3(-1) = -1.
    ExpectNear(Eval("aten::special_chebyshev_polynomial_u", {"x", "n"}, t, {{0.5, 2, 1}, {3, 3, 10}}), {-1, 56, 11},
               tol, "U");
    ExpectNear(Eval("aten::special_chebyshev_polynomial_v", {"x", "n"}, t, {{0.5, 3}, {2, 2}}), {-1, 29}, tol, "V");
    ExpectNear(Eval("aten::special_chebyshev_polynomial_w", {"x", "n"}, t, {{0.5, 3, -1}, {2, 2, 3}}), {1, 41, -1}, tol,
               "W");
    // Shifted: T*_n(x) = T_n(2x - 1); T*_2(0.25) = T_2(-0.5) = -0.5; U*_3(1) = 4.
    ExpectNear(Eval("aten::special_shifted_chebyshev_polynomial_t", {"x", "n"}, t, {{0.25, 0.8, 0}, {2, 12, 3}}),
               {-0.5, std::cos(12 * std::acos(0.6)), -1}, tol, "T*");
    ExpectNear(Eval("aten::special_shifted_chebyshev_polynomial_u", {"x", "n"}, t, {{1, 0.75}, {3, 2}}), {4, 0}, tol,
               "U*");
  }
}

TEST(LoweringSpecial, HermiteLaguerreLegendre) {
  for (PrimitiveType t : {F32, F64}) {
    double tol = t == F32 ? 2e-5 : 1e-12;
    // H_3 = 8x^3 - 12x, He_4 = x^4 - 6x^2 + 3, L_2 = (x^2 - 4x + 2)/2, P_3 = (5x^3 - 3x)/2.
    ExpectNear(Eval("aten::special_hermite_polynomial_h", {"x", "n"}, t, {{0.5, 2, 1}, {3, 3, 0}}), {-5, 40, 1}, tol,
               "H");
    ExpectNear(Eval("aten::special_hermite_polynomial_he", {"x", "n"}, t, {{2, 1}, {4, 1}}), {-5, 1}, tol, "He");
    ExpectNear(Eval("aten::special_laguerre_polynomial_l", {"x", "n"}, t, {{1, 3, 0}, {2, 2, 7}}), {-0.5, -0.5, 1}, tol,
               "L");
    ExpectNear(Eval("aten::special_legendre_polynomial_p", {"x", "n"}, t, {{0.5, -1, 2}, {3, 3, -1}}), {-0.4375, -1, 0},
               tol, "P");
  }
}

TEST(LoweringSpecial, ModifiedBesselFunctions) {
  for (PrimitiveType t : {F32, F64}) {
    double tol = t == F32 ? 2e-6 : 1e-13;
    // I0(1) = 1.2660658777520082, I1(1) = 0.5651591039924851, I0(30) = 781672297823.9775 (series and asymptotic)
    ExpectNear(Eval1("aten::i0", "self", t, {0, 1, -1, 30}),
               {1, 1.2660658777520082, 1.2660658777520082, 781672297823.9775}, tol, "I0");
    ExpectNear(Eval1("aten::special_i1", "self", t, {1, -1, 0}), {0.5651591039924851, -0.5651591039924851, 0}, tol,
               "I1");
    ExpectNear(Eval1("aten::special_i0e", "self", t, {1, 50}),
               {1.2660658777520082 / std::exp(1.0), 0.056561626647454184}, tol, "I0e");
    ExpectNear(Eval1("aten::special_i1e", "self", t, {-50}), {-0.055993123892895395}, tol, "I1e");
    // K0(1) = 0.42102443824070834, K1(1) = 0.6019072301972346, K0(5) = 0.0036910983340425942; K at 0 and < 0.
    ExpectNear(Eval1("aten::special_modified_bessel_k0", "self", t, {1, 5, 0, -1}),
               {0.42102443824070834, 0.0036910983340425942, kInf, kNan}, tol, "K0");
    ExpectNear(Eval1("aten::special_modified_bessel_k1", "self", t, {1, 5}), {0.6019072301972346, 0.004044613445452164},
               tol, "K1");
    ExpectNear(Eval1("aten::special_scaled_modified_bessel_k0", "x", t, {1, 100}),
               {0.42102443824070834 * std::exp(1.0), 0.1251756216591265}, tol, "K0e");
    ExpectNear(Eval1("aten::special_scaled_modified_bessel_k1", "x", t, {1}), {0.6019072301972346 * std::exp(1.0)}, tol,
               "K1e");
  }
}

TEST(LoweringSpecial, BesselFunctionsAndAiry) {
  for (PrimitiveType t : {F32, F64}) {
    double tol = t == F32 ? 5e-6 : 1e-13;
    // The first zeros: J0(2.404825557695773) = 0, J1(3.8317059702075125) = 0, Y0(0.8935769662791675) = 0,
    // Y1(2.197141326031017) = 0; J0(10) = -0.2459357644513483, Y0(1) = 0.08825696421567697.
    ExpectNear(Eval1("aten::special_bessel_j0", "self", t, {2.404825557695773, 10, -10, 0, 1}),
               {0, -0.2459357644513483, -0.2459357644513483, 1, 0.7651976865579666}, tol, "J0");
    ExpectNear(Eval1("aten::special_bessel_j1", "self", t, {3.8317059702075125, 1, -1}),
               {0, 0.44005058574493355, -0.44005058574493355}, tol, "J1");
    ExpectNear(Eval1("aten::special_bessel_y0", "self", t, {0.8935769662791675, 1, 0, -1}),
               {0, 0.08825696421567697, -kInf, kNan}, tol, "Y0");
    ExpectNear(Eval1("aten::special_bessel_y1", "self", t, {2.197141326031017, 1, 0}), {0, -0.7812128213002887, -kInf},
               tol, "Y1");
    // Ai(0) = 3^{-2/3}/Gamma(2/3), Ai(1), Ai(5) (K_{1/3} integral), Ai(-5) (Hankel integral), the first zero -2.338.
    ExpectNear(Eval1("aten::special_airy_ai", "x", t, {0, 1, 5, -5, -2.338107410459767}),
               {0.3550280538878172, 0.13529241631288141, 1.0834442813607441e-4, 0.3507610090241142, 0}, tol, "Ai");
    // j0(x) = sin x / x
    ExpectNear(Eval1("aten::special_spherical_bessel_j0", "x", t, {0, 2, kInf}), {1, std::sin(2.0) / 2, 0}, tol, "j0");
  }
}

TEST(LoweringSpecial, ErfcxAndLogNdtrInTheTails) {
  for (PrimitiveType t : {F32, F64}) {
    double tol = t == F32 ? 2e-6 : 1e-13;
    // erfcx(x) ~ 1/(x sqrt(pi)) where exp(x^2) overflows; erfcx(4.828) = 0.1145 (was 0: overflow).
    ExpectNear(Eval1("aten::special_erfcx", "self", t, {0, 1, 30, 1e10}),
               {1, 0.42758357615580705, 0.018795888861416751, 1 / (1e10 * std::sqrt(std::numbers::pi))}, tol, "erfcx");
    // log Phi(x) ~ -x^2/2 - log(-x sqrt(2 pi)) far left (was -inf: underflow).
    ExpectNear(Eval1("aten::special_log_ndtr", "self", t, {0, -1, -20, 3}),
               {-0.6931471805599453, -1.8410216450092636, -203.91715537109848, -0.0013508099647481938}, tol,
               "log_ndtr");
  }
}

TEST(LoweringSpecial, ZetaAndIncompleteGamma) {
  for (PrimitiveType t : {F32, F64}) {
    double tol = t == F32 ? 1e-5 : 1e-12;
    double pi2 = std::numbers::pi * std::numbers::pi;
    // zeta(2, 1) = pi^2/6, zeta(4, 1) = pi^4/90, zeta(2, 2) = pi^2/6 - 1, zeta(1, q) = inf, zeta(0.5, 1) = NaN.
    ExpectNear(Eval("aten::special_zeta", {"self", "other"}, t, {{2, 4, 2, 1, 0.5}, {1, 1, 2, 3, 1}}),
               {pi2 / 6, pi2 * pi2 / 90, pi2 / 6 - 1, kInf, kNan}, tol, "zeta");
    // P(1, x) = 1 - e^-x; P(0.5, x) = erf(sqrt x); P(a, 0) = 0; Q = 1 - P.
    ExpectNear(Eval("aten::igamma", {"self", "other"}, t, {{1, 1, 0.5, 0.5, 3, 2}, {1, 7, 0.25, 9, 0, -1}}),
               {1 - std::exp(-1.0), 1 - std::exp(-7.0), std::erf(0.5), std::erf(3.0), 0, kNan}, tol, "igamma");
    ExpectNear(Eval("aten::igammac", {"self", "other"}, t, {{1, 0.5}, {7, 9}}), {std::exp(-7.0), std::erfc(3.0)}, tol,
               "igammac");
  }
}

TEST(LoweringSpecial, GcdLcmNextafter) {
  std::vector<double> a = {12, 6, -9, 0, 0, 7}, b = {18, -5, 0, 0, 4, 13};
  EXPECT_EQ(Eval("aten::gcd", {"self", "other"}, S64, {a, b}), (std::vector<double>{6, 1, 9, 0, 4, 1}));
  EXPECT_EQ(Eval("aten::lcm", {"self", "other"}, S64, {a, b}), (std::vector<double>{36, 30, 0, 0, 0, 91}));
  auto up = Eval("aten::nextafter", {"self", "other"}, F64, {{1, 1, 0, -0.0}, {2, 0, 1, -1}});
  EXPECT_EQ(up, (std::vector<double>{std::nextafter(1.0, 2.0), std::nextafter(1.0, 0.0), std::nextafter(0.0, 1.0),
                                     -std::nextafter(0.0, 1.0)}));
  auto upf = Eval("aten::nextafter", {"self", "other"}, F32, {{1, 3.5f}, {2, -kInf}});
  float down = std::nextafter(3.5f, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(upf, (std::vector<double>{std::nextafter(1.0f, 2.0f), down}));
}

}  // namespace
}  // namespace opprobe::analyzer
