// XLA's HLO syntax beyond what its own printer writes, as XLA's tests use it (issue #16 item 3): result
// shapes left out, inline operands, `%t#1` tuple elements, scalar constants for array shapes,
// `execution_thread` on computations, a header over several lines, attribute values on the next line, and
// async-update / async-done with several operands.
#include <gtest/gtest.h>

#include "hlo/evaluator/evaluator.h"
#include "hlo/parser.h"
#include "hlo/printer.h"

namespace opprobe::hlo {
namespace {

std::unique_ptr<Module> Parse(const std::string& text) {
  auto m = ParseModule(text, "t.hlo");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(HloXlaSyntaxTest, LeftOutResultShapesAreInferred) {
  auto m = Parse(
      "HloModule m\n"
      "ENTRY e {\n"
      "  p = (f32[2,3], s32[]) parameter(0)\n"
      "  a = get-tuple-element(p), index=0\n"
      "  n = negate(a)\n"
      "  c = compare(a, n), direction=LT\n"
      "  t = transpose(a), dimensions={1,0}\n"
      "  d = dot(a, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  ROOT r = tuple(c, d, t)\n"
      "}\n");
  ASSERT_TRUE(m);
  const Computation* e = m->entry();
  EXPECT_EQ(e->FindInstruction("a")->shape.ToString(false), "f32[2,3]");
  EXPECT_EQ(e->FindInstruction("n")->shape.ToString(false), "f32[2,3]");
  EXPECT_EQ(e->FindInstruction("c")->shape.ToString(false), "pred[2,3]");
  EXPECT_EQ(e->FindInstruction("t")->shape.ToString(false), "f32[3,2]");
  EXPECT_EQ(e->FindInstruction("d")->shape.ToString(false), "f32[2,2]");
  EXPECT_EQ(e->root()->shape.ToString(false), "(pred[2,3], f32[2,2], f32[3,2])");
}

TEST(HloXlaSyntaxTest, ShapesThatOperandsDoNotDetermineMustBeWritten) {
  auto m = ParseModule("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT b = broadcast(p), dimensions={0}\n}\n",
                       "t.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("t.hlo:4:8: cannot infer the shape of broadcast b"), std::string::npos)
      << m.status().message();
}

TEST(HloXlaSyntaxTest, InlineOperandsAndTupleIndices) {
  auto m = Parse(
      "HloModule m\n"
      "ENTRY e {\n"
      "  p0 = (f32[10], (f32[20], f32[30])) parameter(0)\n"
      "  x = f32[20] add(f32[20] %p0#1#0, f32[20] %p0#1#0)\n"
      "  ROOT r = f32[20] add(x, f32[20] broadcast(f32[] constant(1)), dimensions={})\n"
      "}\n");
  ASSERT_TRUE(m);
  const Instruction* x = m->entry()->FindInstruction("x");
  ASSERT_EQ(x->operand_count(), 2);
  EXPECT_EQ(x->operand(0)->opcode, Opcode::kGetTupleElement);
  EXPECT_EQ(x->operand(0)->tuple_index, 0);
  EXPECT_EQ(x->operand(0)->operand(0)->tuple_index, 1);
  EXPECT_EQ(x->operand(0)->operand(0)->operand(0)->name, "p0");
  const Instruction* r = m->entry()->root();
  ASSERT_EQ(r->operand_count(), 2);
  EXPECT_EQ(r->operand(1)->opcode, Opcode::kBroadcast);
  EXPECT_EQ(r->operand(1)->operand(0)->opcode, Opcode::kConstant);
  // The printed module parses again.
  EXPECT_TRUE(ParseModule(ToString(*m), "printed.hlo").ok());
}

TEST(HloXlaSyntaxTest, ScalarConstantFillsAnArrayShape) {
  auto m = Parse("HloModule m\nENTRY e {\n  ROOT c = s32[3,3] constant(7)\n}\n");
  ASSERT_TRUE(m);
  const Literal& l = *m->entry()->root()->literal;
  ASSERT_EQ(l.element_count(), 9);
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(l.GetAsInt64(i), 7);
  auto huge = ParseModule("HloModule m\nENTRY e {\n  ROOT c = f32[100000,100000] constant(0)\n}\n", "t.hlo");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("more than 64 MiB"), std::string::npos) << huge.status().message();
}

TEST(HloXlaSyntaxTest, ExecutionThreadHeaderOverLinesAndValuesOnTheNextLine) {
  auto m = Parse(
      "HloModule m, entry_computation_layout={\n"
      "    (f32[4]{0})->\n"
      "    f32[4]{0}},\n"
      "  is_scheduled=true\n"
      "\n"
      "worker {\n  x = f32[4] parameter(0)\n  ROOT n = f32[4] negate(x)\n}, execution_thread=\"worker\"\n"
      "ENTRY e {\n"
      "  p = f32[4] parameter(0)\n"
      "  ROOT c = f32[4] call(p), to_apply=\n"
      "    worker\n"
      "}\n");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->header_attributes.size(), 2u);
  EXPECT_EQ(m->header_attributes[1].first, "is_scheduled");
  EXPECT_EQ(m->FindComputation("worker")->execution_thread, "worker");
  EXPECT_EQ(m->entry()->root()->to_apply()->name(), "worker");
  EXPECT_NE(ToString(*m).find("}, execution_thread=\"worker\""), std::string::npos);
}

TEST(HloXlaSyntaxTest, AsyncUpdateAndDoneTakeAnyOperandCount) {
  auto m = Parse(
      "HloModule m\n"
      "comp {\n  a = f32[2] parameter(0)\n  b = f32[2] parameter(1)\n  ROOT s = f32[2] add(a, b)\n}\n"
      "ENTRY e {\n"
      "  x = f32[2] parameter(0)\n"
      "  y = f32[2] parameter(1)\n"
      "  st = ((f32[2], f32[2]), f32[2], s32[]) async-start(x, y), calls=comp\n"
      "  up = ((f32[2], f32[2]), f32[2], s32[]) async-update(st, y), calls=comp\n"
      "  ROOT d = f32[2] async-done(up, x), calls=comp\n"
      "}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->root()->operand_count(), 2);
}

TEST(HloXlaSyntaxTest, GatherFromAnEmptyOperandIsAnErrorNotACrash) {
  auto m = Parse(
      "HloModule m\n"
      "ENTRY e {\n"
      "  operand = f32[0,2] parameter(0)\n"
      "  indices = s32[3] parameter(1)\n"
      "  ROOT g = f32[3,2] gather(operand, indices), offset_dims={1}, collapsed_slice_dims={0},\n"
      "      start_index_map={0}, index_vector_dim=1, slice_sizes={0,2}\n"
      "}\n");
  ASSERT_TRUE(m);
  std::vector<Literal> args;
  args.emplace_back(Shape::Array(PrimitiveType::F32, {0, 2}));
  args.emplace_back(Shape::Array(PrimitiveType::S32, {3}));
  auto r = Evaluate(*m, args);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("from the empty operand"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace opprobe::hlo
