// Data-movement ops with hand-checked values: broadcast, reshape, transpose, slice, dynamic-slice,
// dynamic-update-slice, pad (negative and interior), concatenate, reverse, iota, tuples, control flow.
#include <gtest/gtest.h>

#include "tests/hlo/evaluator_test_util.h"

namespace opprobe::hlo {
namespace {

using testing::EvalBroken;
using testing::EvalStr;
using testing::EvalText;
using testing::Module;
using testing::Named;

TEST(EvaluatorShape, Broadcast) {
  EXPECT_EQ(EvalStr(Module("a = s32[2]{0} constant({1, 2})\n"
                           "ROOT r = s32[2,3]{1,0} broadcast(a), dimensions={0}")),
            "{ {1, 1, 1}, {2, 2, 2} }");
  EXPECT_EQ(EvalStr(Module("a = s32[3]{0} constant({1, 2, 3})\n"
                           "ROOT r = s32[2,3]{1,0} broadcast(a), dimensions={1}")),
            "{ {1, 2, 3}, {1, 2, 3} }");
  EXPECT_EQ(EvalStr(Module("a = f32[] constant(7)\n"
                           "ROOT r = f32[2]{0} broadcast(a), dimensions={}")),
            "{7, 7}");
}

TEST(EvaluatorShape, ReshapeTransposeReverse) {
  EXPECT_EQ(EvalStr(Module("a = s32[6]{0} constant({1, 2, 3, 4, 5, 6})\n"
                           "ROOT r = s32[2,3]{1,0} reshape(a)")),
            "{ {1, 2, 3}, {4, 5, 6} }");
  EXPECT_EQ(EvalStr(Module("a = s32[2,3]{1,0} constant({ {1, 2, 3}, {4, 5, 6} })\n"
                           "ROOT r = s32[3,2]{1,0} transpose(a), dimensions={1,0}")),
            "{ {1, 4}, {2, 5}, {3, 6} }");
  EXPECT_EQ(EvalStr(Module("a = s32[2,3]{1,0} constant({ {1, 2, 3}, {4, 5, 6} })\n"
                           "ROOT r = s32[2,3]{1,0} reverse(a), dimensions={0,1}")),
            "{ {6, 5, 4}, {3, 2, 1} }");
  auto bad = EvalBroken(Module("a = s32[6]{0} constant({1, 2, 3, 4, 5, 6})\n"
                               "ROOT r = s32[6]{0} reshape(a)"),
                        [](hlo::Module& m) { Named(m, "r").shape = Shape::Array(PrimitiveType::S32, {4}); });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidInput);
}

TEST(EvaluatorShape, SliceWithStride) {
  EXPECT_EQ(EvalStr(Module("a = s32[2,5]{1,0} constant({ {0, 1, 2, 3, 4}, {5, 6, 7, 8, 9} })\n"
                           "ROOT r = s32[1,2]{1,0} slice(a), slice={[1:2], [0:5:3]}")),
            "{ {5, 8} }");
}

TEST(EvaluatorShape, DynamicSliceClampsStartIndices) {
  EXPECT_EQ(EvalStr(Module("a = s32[5]{0} constant({0, 1, 2, 3, 4})\n"
                           "i = s32[] constant(4)\n"
                           "ROOT r = s32[2]{0} dynamic-slice(a, i), dynamic_slice_sizes={2}")),
            "{3, 4}");
  EXPECT_EQ(EvalStr(Module("a = s32[5]{0} constant({0, 1, 2, 3, 4})\n"
                           "i = s32[] constant(-3)\n"
                           "ROOT r = s32[2]{0} dynamic-slice(a, i), dynamic_slice_sizes={2}")),
            "{0, 1}");
  EXPECT_EQ(EvalStr(Module("a = s32[2,3]{1,0} constant({ {0, 1, 2}, {3, 4, 5} })\n"
                           "u = s32[1,2]{1,0} constant({ {8, 9} })\n"
                           "i = s32[] constant(1)\n"
                           "j = s32[] constant(7)\n"
                           "ROOT r = s32[2,3]{1,0} dynamic-update-slice(a, u, i, j)")),
            "{ {0, 1, 2}, {3, 8, 9} }");
}

TEST(EvaluatorShape, PadInteriorAndNegative) {
  EXPECT_EQ(EvalStr(Module("a = s32[3]{0} constant({1, 2, 3})\n"
                           "z = s32[] constant(0)\n"
                           "ROOT r = s32[8]{0} pad(a, z), padding=1_2_1")),
            "{0, 1, 0, 2, 0, 3, 0, 0}");
  EXPECT_EQ(EvalStr(Module("a = s32[4]{0} constant({1, 2, 3, 4})\n"
                           "z = s32[] constant(9)\n"
                           "ROOT r = s32[3]{0} pad(a, z), padding=-2_1")),
            "{3, 4, 9}");
  EXPECT_EQ(EvalStr(Module("a = s32[3]{0} constant({1, 2, 3})\n"
                           "z = s32[] constant(0)\n"
                           "ROOT r = s32[4]{0} pad(a, z), padding=-1_0_1")),
            "{0, 2, 0, 3}");
  EXPECT_EQ(EvalStr(Module("a = s32[2,2]{1,0} constant({ {1, 2}, {3, 4} })\n"
                           "z = s32[] constant(0)\n"
                           "ROOT r = s32[3,1]{1,0} pad(a, z), padding=1_0x0_-1")),
            "{ {0}, {1}, {3} }");
  // Interior padding and cropping on both sides of the last dimension, a row of padding after.
  EXPECT_EQ(EvalStr(Module("a = s32[2,3]{1,0} constant({ {1, 2, 3}, {4, 5, 6} })\n"
                           "z = s32[] constant(9)\n"
                           "ROOT r = s32[3,5]{1,0} pad(a, z), padding=0_1x-1_-1_2")),
            "{ {9, 9, 2, 9, 9}, {9, 9, 5, 9, 9}, {9, 9, 9, 9, 9} }");
  // Cropped to nothing along the last dimension.
  EXPECT_EQ(EvalStr(Module("a = s32[2,2]{1,0} constant({ {1, 2}, {3, 4} })\n"
                           "z = s32[] constant(9)\n"
                           "ROOT r = s32[2,1]{1,0} pad(a, z), padding=0_0x-3_2")),
            "{ {9}, {9} }");
}

TEST(EvaluatorShape, ConcatenateAndEmptyDimensions) {
  EXPECT_EQ(EvalStr(Module("a = s32[2,1]{1,0} constant({ {1}, {2} })\n"
                           "b = s32[2,2]{1,0} constant({ {3, 4}, {5, 6} })\n"
                           "e = s32[2,0]{1,0} constant({ {}, {} })\n"
                           "ROOT r = s32[2,3]{1,0} concatenate(a, e, b), dimensions={1}")),
            "{ {1, 3, 4}, {2, 5, 6} }");
  EXPECT_EQ(EvalStr(Module("a = f32[0,3]{1,0} constant({})\n"
                           "ROOT r = f32[3,0]{1,0} transpose(a), dimensions={1,0}")),
            "{ {}, {}, {} }");
}

TEST(EvaluatorShape, Iota) {
  EXPECT_EQ(EvalStr(Module("ROOT r = s32[2,3]{1,0} iota(), iota_dimension=1")), "{ {0, 1, 2}, {0, 1, 2} }");
  EXPECT_EQ(EvalStr(Module("ROOT r = f32[2,2]{1,0} iota(), iota_dimension=0")), "{ {0, 0}, {1, 1} }");
}

TEST(EvaluatorShape, TupleAndGetTupleElement) {
  EXPECT_EQ(EvalStr(Module("a = s32[] constant(1)\n"
                           "b = f32[2]{0} constant({2, 3})\n"
                           "t = (s32[], f32[2]{0}) tuple(a, b)\n"
                           "ROOT r = f32[2]{0} get-tuple-element(t), index=1")),
            "{2, 3}");
}

TEST(EvaluatorControl, WhileCountsToTen) {
  EXPECT_EQ(EvalStr("HloModule t\n\n"
                    "cond {\n  p = s32[] parameter(0)\n  ten = s32[] constant(10)\n"
                    "  ROOT lt = pred[] compare(p, ten), direction=LT\n}\n\n"
                    "body {\n  p = s32[] parameter(0)\n  one = s32[] constant(1)\n  ROOT n = s32[] add(p, one)\n}\n\n"
                    "ENTRY main {\n  z = s32[] constant(0)\n  ROOT w = s32[] while(z), condition=cond, body=body\n}\n"),
            "10");
}

TEST(EvaluatorControl, InfiniteWhileIsCapped) {
  auto m = ParseModule(
      "HloModule t\n\n"
      "cond {\n  p = s32[] parameter(0)\n  ROOT t = pred[] constant(true)\n}\n\n"
      "body {\n  ROOT p = s32[] parameter(0)\n}\n\n"
      "ENTRY main {\n  z = s32[] constant(0)\n  ROOT w = s32[] while(z), condition=cond, body=body\n}\n",
      "t");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EvaluatorOptions o;
  o.max_while_iterations = 1000;
  auto r = Evaluate(**m, {}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnimplemented);
}

TEST(EvaluatorControl, InstructionLimitCountsCalledComputations) {
  // A sort of 4096 elements calls its 5-instruction comparator (not one the evaluator compiles: it negates both
  // sides) tens of thousands of times: within the default limit, past a limit of 10,000 instruction
  // evaluations, with an error that names the limit.
  auto m = ParseModule(
      "HloModule t\n\n"
      "gt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  na = f32[] negate(a)\n"
      "  nb = f32[] negate(b)\n  ROOT c = pred[] compare(na, nb), direction=LT\n}\n\n"
      "ENTRY main {\n  x = f32[4096] parameter(0)\n"
      "  ROOT s = f32[4096] sort(x), dimensions={0}, to_apply=gt\n}\n",
      "t");
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<Literal> args = RandomArguments(*(*m)->entry(), 7);
  ASSERT_TRUE(Evaluate(**m, args).ok());
  EvaluatorOptions o;
  o.max_instructions = 10'000;
  auto r = Evaluate(**m, args, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("instruction evaluations"), std::string::npos) << r.status().message();
}

TEST(EvaluatorControl, ConditionalAndCall) {
  std::string comps =
      "neg {\n  p = s32[] parameter(0)\n  ROOT n = s32[] negate(p)\n}\n\n"
      "dbl {\n  p = s32[] parameter(0)\n  ROOT n = s32[] add(p, p)\n}\n\n";
  EXPECT_EQ(EvalStr("HloModule t\n\n" + comps +
                    "ENTRY main {\n  c = pred[] constant(false)\n  a = s32[] constant(5)\n"
                    "  ROOT r = s32[] conditional(c, a, a), true_computation=neg, false_computation=dbl\n}\n"),
            "10");
  EXPECT_EQ(EvalStr("HloModule t\n\n" + comps +
                    "ENTRY main {\n  c = s32[] constant(7)\n  a = s32[] constant(5)\n"
                    "  ROOT r = s32[] conditional(c, a, a), branch_computations={neg, dbl}\n}\n"),
            "10");
  EXPECT_EQ(EvalStr("HloModule t\n\n" + comps +
                    "ENTRY main {\n  a = s32[] constant(5)\n  ROOT r = s32[] call(a), to_apply=neg\n}\n"),
            "-5");
}

TEST(EvaluatorControl, CustomCallAndUnknownOpcodeAreUnimplemented) {
  auto r =
      EvalText(Module("a = f32[2]{0} constant({1, 2})\n"
                      "ROOT r = f32[2]{0} custom-call(a), custom_call_target=\"MyKernel\""));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("MyKernel"), std::string::npos);
  auto u =
      EvalText(Module("a = f32[2]{0} constant({1, 2})\n"
                      "ROOT r = f32[2]{0} frobnicate(a)"));
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(u.status().message().find("frobnicate"), std::string::npos);
}

TEST(EvaluatorControl, DeadCustomCallIsNotEvaluated) {
  EXPECT_EQ(EvalStr(Module("a = f32[2]{0} constant({1, 2})\n"
                           "dead = f32[2]{0} custom-call(a), custom_call_target=\"X\"\n"
                           "ROOT r = f32[2]{0} negate(a)")),
            "{-1, -2}");
}

TEST(EvaluatorControl, ArgumentsAreChecked) {
  auto m = ParseModule(Module("p = f32[2]{0} parameter(0)\nROOT r = f32[2]{0} negate(p)"), "t");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(Evaluate(**m, {}).status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(Evaluate(**m, {Literal(Shape::Array(PrimitiveType::F32, {3}))}).status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(Evaluate(**m, {Literal(Shape::Array(PrimitiveType::S32, {2}))}).status().code(), ErrorCode::kInvalidInput);
  auto ok = Evaluate(**m, {testing::R1F32({1, -2})});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->ValueToString(), "{-1, 2}");
}

TEST(EvaluatorControl, HugeShapesAreRefusedNotAllocated) {
  auto r =
      EvalText(Module("a = f32[] constant(1)\n"
                      "ROOT r = f32[100000,100000,100000]{2,1,0} broadcast(a), dimensions={}"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnimplemented);
}

TEST(EvaluatorControl, ElidedConstantsAreDeterministic) {
  std::string text = Module("ROOT c = f32[4]{0} constant({...})");
  auto a = EvalText(text), b = EvalText(text);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->ValueToString(), b->ValueToString());
  EXPECT_NE(a->ValueToString(), "{0, 0, 0, 0}");
}

TEST(EvaluatorControl, DynamicDimensionSizes) {
  EXPECT_EQ(EvalStr(Module("a = s32[4]{0} constant({1, 2, 3, 4})\n"
                           "n = s32[] constant(3)\n"
                           "d = s32[<=4]{0} set-dimension-size(a, n), dimensions={0}\n"
                           "e = s32[<=4]{0} negate(d)\n"
                           "ROOT g = s32[] get-dimension-size(e), dimensions={0}")),
            "3");
  EXPECT_EQ(EvalStr(Module("a = s32[4]{0} constant({1, 2, 3, 4})\n"
                           "ROOT g = s32[] get-dimension-size(a), dimensions={0}")),
            "4");
}

TEST(EvaluatorControl, RandomLiteralRanges) {
  Literal f = RandomLiteral(Shape::Array(PrimitiveType::F32, {1000}), 7);
  Literal i = RandomLiteral(Shape::Array(PrimitiveType::S32, {1000}), 7);
  Literal u = RandomLiteral(Shape::Array(PrimitiveType::U8, {1000}), 7);
  bool saw_neg = false;
  for (int64_t k = 0; k < 1000; ++k) {
    EXPECT_GE(f.Get<float>(k), -1.0f);
    EXPECT_LT(f.Get<float>(k), 1.0f);
    EXPECT_GE(i.Get<int32_t>(k), -8);
    EXPECT_LE(i.Get<int32_t>(k), 8);
    EXPECT_LT(u.Get<uint8_t>(k), 16);
    saw_neg |= f.Get<float>(k) < 0;
  }
  EXPECT_TRUE(saw_neg);
  EXPECT_EQ(RandomLiteral(Shape::Array(PrimitiveType::F32, {8}), 3),
            RandomLiteral(Shape::Array(PrimitiveType::F32, {8}), 3));
  EXPECT_FALSE(RandomLiteral(Shape::Array(PrimitiveType::F32, {8}), 3) ==
               RandomLiteral(Shape::Array(PrimitiveType::F32, {8}), 4));
}

}  // namespace
}  // namespace opprobe::hlo
