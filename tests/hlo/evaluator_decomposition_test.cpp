// cholesky, triangular-solve and the linear-algebra custom calls ("Qr",
// "ProductOfElementaryHouseholderReflectors", "Eigh", "LuDecomposition"): their text and proto forms
// round-trip, and the evaluator gives the values worked out by hand below; XLA's sharding annotations give their
// operand back.
#include <gtest/gtest.h>

#include <cmath>

#include "hlo/printer.h"
#include "hlo/proto_io.h"
#include "tests/hlo/evaluator_test_util.h"

namespace opprobe::hlo {
namespace {

using testing::EvalStr;
using testing::EvalText;
using testing::Module;

const std::string kSpd = "a = f32[2,2]{1,0} constant({ {4, 2}, {2, 3} })\n";

TEST(EvaluatorDecomposition, CholeskyLowerAndUpper) {
  // [[4,2],[2,3]] = L·Lᵀ with L = [[2,0],[1,√2]].
  auto l = EvalText(Module(kSpd + "ROOT c = f32[2,2]{1,0} cholesky(a), lower=true"));
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_FLOAT_EQ(l->GetAsDouble(0), 2);
  EXPECT_FLOAT_EQ(l->GetAsDouble(1), 0);
  EXPECT_FLOAT_EQ(l->GetAsDouble(2), 1);
  EXPECT_FLOAT_EQ(l->GetAsDouble(3), std::sqrt(2.0f));
  auto u = EvalText(Module(kSpd + "ROOT c = f32[2,2]{1,0} cholesky(a)"));
  ASSERT_TRUE(u.ok());
  EXPECT_FLOAT_EQ(u->GetAsDouble(1), 1);
  EXPECT_FLOAT_EQ(u->GetAsDouble(2), 0);
}

TEST(EvaluatorDecomposition, CholeskyOfAnIndefiniteMatrixIsNaN) {
  EXPECT_EQ(EvalStr(Module("a = f32[2,2]{1,0} constant({ {1, 2}, {2, 1} })\n"
                           "ROOT c = f32[2,2]{1,0} cholesky(a), lower=true")),
            "{ {nan, nan}, {nan, nan} }");
}

TEST(EvaluatorDecomposition, TriangularSolveSidesAndTranspose) {
  std::string a = "a = f32[2,2]{1,0} constant({ {2, 99}, {1, 1} })\n";  // 99 is outside the lower triangle
  // [[2,0],[1,1]]·x = [2,3] -> x = [1,2].
  EXPECT_EQ(EvalStr(Module(a + "b = f32[2,1]{1,0} constant({ {2}, {3} })\n"
                               "ROOT x = f32[2,1]{1,0} triangular-solve(a, b), left_side=true, lower=true, "
                               "transpose_a=NO_TRANSPOSE")),
            "{ {1}, {2} }");
  // [[2,1],[0,1]]·x = [2,3] -> x = [-0.5, 3].
  EXPECT_EQ(EvalStr(Module(a + "b = f32[2,1]{1,0} constant({ {2}, {3} })\n"
                               "ROOT x = f32[2,1]{1,0} triangular-solve(a, b), left_side=true, lower=true, "
                               "transpose_a=TRANSPOSE")),
            "{ {-0.5}, {3} }");
  // x·[[2,0],[1,1]] = [2,3] -> x = [-0.5, 3].
  EXPECT_EQ(EvalStr(Module(a + "b = f32[1,2]{1,0} constant({ {2, 3} })\n"
                               "ROOT x = f32[1,2]{1,0} triangular-solve(a, b), lower=true, transpose_a=NO_TRANSPOSE")),
            "{ {-0.5, 3} }");
  // unit_diagonal ignores the 2: [[1,0],[1,1]]·x = [2,3] -> x = [2,1].
  EXPECT_EQ(EvalStr(Module(a + "b = f32[2,1]{1,0} constant({ {2}, {3} })\n"
                               "ROOT x = f32[2,1]{1,0} triangular-solve(a, b), left_side=true, lower=true, "
                               "unit_diagonal=true, transpose_a=NO_TRANSPOSE")),
            "{ {2}, {1} }");
}

TEST(EvaluatorDecomposition, QrAndHouseholderProductFollowLapack) {
  // geqrf of [3,4]ᵀ: beta = -5, tau = 1.6, v = [1, 0.5]; Q's column = [-0.6, -0.8].
  std::string qr =
      "a = f32[2,1]{1,0} constant({ {3}, {4} })\n"
      "qr = (f32[2,1]{1,0}, f32[1]{0}) custom-call(a), custom_call_target=\"Qr\"\n";
  EXPECT_EQ(EvalStr(Module(qr + "ROOT r = (f32[2,1]{1,0}, f32[1]{0}) copy(qr)")), "({ {-5}, {0.5} }, {1.6})");
  EXPECT_EQ(EvalStr(Module(qr + "v = f32[2,1]{1,0} get-tuple-element(qr), index=0\n"
                                "t = f32[1]{0} get-tuple-element(qr), index=1\n"
                                "ROOT q = f32[2,1]{1,0} custom-call(v, t), "
                                "custom_call_target=\"ProductOfElementaryHouseholderReflectors\"")),
            "{ {-0.6}, {-0.8} }");
}

TEST(EvaluatorDecomposition, EighGivesAscendingEigenpairs) {
  auto r =
      EvalText(Module("a = f64[2,2]{1,0} constant({ {2, 1}, {1, 2} })\n"
                      "ROOT e = (f64[2,2]{1,0}, f64[2]{0}) custom-call(a), custom_call_target=\"Eigh\", "
                      "backend_config=\"1,1,15,0.000010\""));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Literal& v = r->tuple_elements()[0];
  const Literal& w = r->tuple_elements()[1];
  EXPECT_NEAR(w.GetAsDouble(0), 1, 1e-12);
  EXPECT_NEAR(w.GetAsDouble(1), 3, 1e-12);
  // A·v_j = w_j·v_j for each column j, and the columns are unit vectors.
  double a[2][2] = {{2, 1}, {1, 2}};
  for (int j = 0; j < 2; ++j) {
    double x0 = v.GetAsDouble(0 * 2 + j), x1 = v.GetAsDouble(1 * 2 + j);
    EXPECT_NEAR(x0 * x0 + x1 * x1, 1, 1e-12);
    EXPECT_NEAR(a[0][0] * x0 + a[0][1] * x1, w.GetAsDouble(j) * x0, 1e-12);
    EXPECT_NEAR(a[1][0] * x0 + a[1][1] * x1, w.GetAsDouble(j) * x1, 1e-12);
  }
}

TEST(EvaluatorDecomposition, LuDecompositionPivotsOnTheLargestEntry) {
  EXPECT_EQ(EvalStr(Module("a = f64[2,2]{1,0} constant({ {1, 2}, {3, 4} })\n"
                           "ROOT lu = (f64[2,2]{1,0}, s32[2]{0}, s32[2]{0}) custom-call(a), "
                           "custom_call_target=\"LuDecomposition\"")),
            "({ {3, 4}, {0.3333333333333333, 0.6666666666666667} }, {1, 1}, {1, 0})");
}

TEST(EvaluatorDecomposition, ShardingAnnotationsGiveTheirOperandOnOneDevice) {
  for (const char* target : {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"}) {
    EXPECT_EQ(EvalStr(Module(std::string("a = f32[2,2]{1,0} constant({ {1, 2}, {3, 4} })\n"
                                         "ROOT s = f32[2,2]{1,0} custom-call(a), custom_call_target=\"") +
                             target + "\", sharding={replicated}")),
              "{ {1, 2}, {3, 4} }")
        << target;
  }
  // A shard's shape is another device count's: not one device's.
  EXPECT_NE(EvalStr(Module("a = f32[4]{0} constant({1, 2, 3, 4})\n"
                           "ROOT s = f32[2]{0} custom-call(a), custom_call_target=\"SPMDFullToShardShape\", "
                           "sharding={devices=[2]0,1}"))
                .find("splits across devices"),
            std::string::npos);
}

TEST(EvaluatorDecomposition, UnknownTargetAndBadShapesAreErrors) {
  EXPECT_NE(EvalStr(Module("a = f32[2]{0} constant({1, 2})\n"
                           "ROOT c = f32[2]{0} custom-call(a), custom_call_target=\"NoSuchTarget\""))
                .find("custom-call target 'NoSuchTarget' is not implemented"),
            std::string::npos);
  EXPECT_NE(EvalStr(Module("a = f32[2,3]{1,0} constant({ {1, 2, 3}, {4, 5, 6} })\n"
                           "ROOT c = (f32[2,3]{1,0}, f32[3]{0}) custom-call(a), custom_call_target=\"Qr\""))
                .find("Qr returns (a, taus)"),
            std::string::npos);
}

TEST(EvaluatorDecomposition, OptionsRoundTripThroughTextAndProto) {
  std::string text =
      "HloModule t, entry_computation_layout={(f32[3,3]{1,0}, f32[3,2]{1,0})->f32[3,2]{1,0}}\n\n"
      "ENTRY %main (a: f32[3,3], b: f32[3,2]) -> f32[3,2] {\n"
      "  %a = f32[3,3]{1,0} parameter(0)\n"
      "  %c = f32[3,3]{1,0} cholesky(f32[3,3]{1,0} %a), lower=true\n"
      "  %b = f32[3,2]{1,0} parameter(1)\n"
      "  ROOT %x = f32[3,2]{1,0} triangular-solve(f32[3,3]{1,0} %c, f32[3,2]{1,0} %b), left_side=true, lower=true, "
      "unit_diagonal=true, transpose_a=ADJOINT\n"
      "}\n\n";
  auto m = ParseModule(text, "t.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(ToString(**m), text);
  const Instruction* x = (*m)->entry()->root();
  EXPECT_TRUE(x->triangular_solve_options.unit_diagonal);
  EXPECT_EQ(x->triangular_solve_options.transpose_a, TransposeA::kAdjoint);
  auto bytes = ModuleToProtoBytes(**m);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto back = ModuleFromProtoBytes(*bytes, "t.pb");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ToString(**back), text);
  EXPECT_FALSE(ParseModule("HloModule t\n\nENTRY main {\n  a = f32[2,2]{1,0} parameter(0)\n"
                           "  ROOT x = f32[2,2]{1,0} triangular-solve(a, a), transpose_a=SIDEWAYS\n}\n",
                           "bad.hlo")
                   .ok());
}

}  // namespace
}  // namespace opprobe::hlo
