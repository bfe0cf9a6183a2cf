// XLA's HLO syntax beyond what its own printer writes, as XLA's tests use it (issue #16 item 3): result
// shapes left out, inline operands and inline computations, `%t#1` tuple elements, scalar constants for array
// shapes, `execution_thread` on computations, a header over several lines or followed by a computation on its
// line, attribute values on the next line, blanks between tokens (`s32 [4]`, `f32[2] {0}`, `tuple (`), buffer
// shapes `b(...)`, unbounded dimensions `?`, and async-update / async-done with several operands.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "hlo/evaluator/evaluator.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/proto_io.h"
#include "testing/parse_module.h"

namespace opprobe::hlo {
namespace {

using ::opprobe::testing::ParseUnit;

TEST(HloXlaSyntaxTest, LeftOutResultShapesAreInferred) {
  auto m = ParseUnit(
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
  auto m = ParseModule(
      "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT b = broadcast(p), dimensions={0}\n}\n", "t.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("t.hlo:4:8: cannot infer the shape of broadcast b"), std::string::npos)
      << m.status().message();
}

TEST(HloXlaSyntaxTest, InlineOperandsAndTupleIndices) {
  auto m = ParseUnit(
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

// An inline operand's synthetic name (`constant.N`) never repeats a name the text gave before it.
TEST(HloXlaSyntaxTest, InlineOperandNamesAvoidGivenNames) {
  auto m = ParseUnit(
      "HloModule m\n"
      "ENTRY e {\n"
      "  constant.1 = f32[] constant(2)\n"
      "  a = f32[] add(constant.1, f32[] constant(1))\n"
      "  b = f32[] add(a, f32[] constant(3))\n"
      "  ROOT r = f32[] add(b, f32[] constant(4))\n"
      "}\n");
  ASSERT_TRUE(m);
  const Computation* e = m->entry();
  std::vector<std::string> names;
  for (const auto& i : e->instructions()) names.push_back(i->name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << ::testing::PrintToString(names);
  EXPECT_EQ(names.size(), 7u);
  EXPECT_NE(e->FindInstruction("a")->operand(1)->name, "constant.1");
  EXPECT_EQ(e->FindInstruction("a")->operand(0)->name, "constant.1");
  EXPECT_EQ(e->root()->operand(1)->opcode, Opcode::kConstant);
}

TEST(HloXlaSyntaxTest, ScalarConstantFillsAnArrayShape) {
  auto m = ParseUnit("HloModule m\nENTRY e {\n  ROOT c = s32[3,3] constant(7)\n}\n");
  ASSERT_TRUE(m);
  const Literal& l = *m->entry()->root()->literal;
  ASSERT_EQ(l.element_count(), 9);
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(l.GetAsInt64(i), 7);
  auto huge = ParseModule("HloModule m\nENTRY e {\n  ROOT c = f32[100000,100000] constant(0)\n}\n", "t.hlo");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("more than 256 MiB"), std::string::npos) << huge.status().message();
}

TEST(HloXlaSyntaxTest, ExecutionThreadHeaderOverLinesAndValuesOnTheNextLine) {
  auto m = ParseUnit(
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
  auto m = ParseUnit(
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
  auto m = ParseUnit(
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

TEST(HloXlaSyntaxTest, InlineComputations) {
  auto m = ParseUnit(
      "HloModule main\n\nENTRY main {\n"
      "  arg.0 = f32[4,4] parameter(0)\n"
      "  call.0 = call(arg.0, arg.0), to_apply={\n"
      "    a = f32[4,4] parameter(0)\n"
      "    b = f32[4,4] parameter(1)\n"
      "    ROOT f = (f32[4,4], f32[4,4]) fusion(a, b), kind=kCustom, calls={\n"
      "      a = f32[4,4] parameter(0)\n"
      "      b = f32[4,4] parameter(1)\n"
      "      ROOT t = tuple(a, b)\n"
      "    }\n"
      "  }\n"
      "  ROOT g = get-tuple-element(call.0), index=1\n"
      "}\n");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->computations().size(), 3u);
  EXPECT_EQ(m->entry()->name(), "main");
  const Instruction* call = m->entry()->FindInstruction("call.0");
  ASSERT_EQ(call->called_computations.size(), 1u);
  EXPECT_EQ(call->to_apply()->name(), "call.0.to_apply");
  EXPECT_EQ(call->shape.ToString(false), "(f32[4,4], f32[4,4])");
  // Printed, the inline computations are named computations, and the text parses again.
  const std::string printed = ToString(*m);
  auto again = ParseModule(printed, "printed.hlo");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(ToString(**again), printed);
}

TEST(HloXlaSyntaxTest, BlanksBetweenTokensAndParametersWithoutColons) {
  auto m = ParseUnit(
      "HloModule m ENTRY %e (input f32[2,2]{1,0}, k s32 [4]) -> f32[2,2]{\n"
      "  %input = f32[2,2] {1,0} parameter(0)\n"
      "  %k = s32 [4] parameter(1)\n"
      "  %t = (f32[2,2], s32[4]) tuple (%input, %k)\n"
      "  ROOT %r = f32[2,2] {0,1} get-tuple-element(%t), index=0\n"
      "}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->root()->shape.ToString(), "f32[2,2]{0,1}");
  EXPECT_EQ(m->entry()->FindInstruction("k")->shape.ToString(), "s32[4]");
}

TEST(HloXlaSyntaxTest, BufferShapesAndUnboundedDimensions) {
  auto m = ParseUnit(
      "HloModule m\nENTRY e {\n"
      "  pa = b(s32[4]) parameter(0)\n"
      "  q = f32[?,2] parameter(1)\n"
      "  r = f32[?,2] negate(q)\n"
      "  ROOT va = b(s32[4]) custom-call(pa), custom_call_target=\"foo\", output_to_operand_aliasing={{}: (0, {})}\n"
      "}\n");
  ASSERT_TRUE(m);
  const Instruction* pa = m->entry()->FindInstruction("pa");
  EXPECT_TRUE(pa->shape.IsBuffer());
  EXPECT_EQ(pa->shape.ToString(), "b(s32[4])");
  const Instruction* q = m->entry()->FindInstruction("q");
  EXPECT_TRUE(q->shape.is_dynamic_dimension(0));
  EXPECT_EQ(q->shape.ToString(), "f32[?,2]");
  EXPECT_FALSE(q->shape.ElementCount().ok());
  // Both survive the proto.
  auto bytes = ModuleToProtoBytes(*m);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto back = ModuleFromProtoBytes(*bytes, "b.pb");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ToString(**back), ToString(*m));
}

TEST(HloXlaSyntaxTest, CustomCallLiteralsAndUnsignedWrapAround) {
  auto m = ParseUnit(
      "HloModule m\nENTRY e {\n"
      "  c = u64[] constant(-1)\n"
      "  ROOT cc = f32[1,2,3]{0,2,1} custom-call(u64[] c), custom_call_target=\"foo\", literal=s32[2]{0} {1, 2}\n"
      "}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->FindInstruction("c")->literal->GetAsUint64(0), 18446744073709551615ull);
  const Instruction* cc = m->entry()->root();
  ASSERT_TRUE(cc->literal);
  EXPECT_EQ(cc->literal->GetAsInt64(1), 2);
  EXPECT_NE(ToString(*m).find("literal=s32[2]{0} {1, 2}"), std::string::npos);
  // A tuple literal names each element's shape; dim_labels may mark dimensions the call does not use with '?'.
  auto t = ParseUnit(
      "HloModule m\nENTRY e {\n  ROOT cc = f32[1] custom-call(), custom_call_target=\"t\", window={size=2x2}, "
      "dim_labels=?b01f_0?1io->b01?f, literal=( s32[4]{0} {4, 128, 128, 3}, pred[4]{0} {1, 0, 0, 0} )\n}\n");
  ASSERT_TRUE(t);
  EXPECT_EQ(ToString(*t->entry()->root(), PrintOptions::Short()),
            "cc = f32[1] custom-call(), window={size=2x2}, dim_labels=?b01f_0?1io->b01?f, custom_call_target=\"t\", "
            "literal=( s32[4]{0} {4, 128, 128, 3}, pred[4]{0} {1, 0, 0, 0} )");
  auto bad = ParseModule("HloModule m\nENTRY e {\n  ROOT c = u32[] constant(-1)\n}\n", "t.hlo");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "t.hlo:3:27: -1 is negative for u32");
}

TEST(HloXlaSyntaxTest, MeshReplicaGroupsAreKeptAsWritten) {
  auto m = ParseUnit(
      "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
      "ENTRY e {\n  p = f32[8] parameter(0)\n"
      "  ROOT r = f32[8] all-reduce(p), replica_groups=mesh['axis_0'=2,'axis_1'=2] {'axis_1'}, to_apply=add\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->root()->rare().replica_groups.mesh, "mesh['axis_0'=2,'axis_1'=2] {'axis_1'}");
  EXPECT_NE(ToString(*m).find("replica_groups=mesh['axis_0'=2,'axis_1'=2] {'axis_1'}, to_apply="), std::string::npos);
}

TEST(HloXlaSyntaxTest, InterpreterRunsCopyDoneAndConvolutionWithoutSpatialDimensions) {
  auto copy = ParseUnit(
      "HloModule m\nENTRY e {\n  p = f32[2,3] parameter(0)\n"
      "  s = (f32[2,3], f32[2,3], u32[]) copy-start(p)\n  ROOT d = f32[2,3] copy-done(s)\n}\n");
  ASSERT_TRUE(copy);
  // The unit a backend gets: copy-done of the (destination, source, context) tuple.
  Literal tuple =
      Literal::Tuple({Literal(Shape::Array(PrimitiveType::F32, {2, 3})),
                      Literal(Shape::Array(PrimitiveType::F32, {2, 3})), Literal(Shape::Scalar(PrimitiveType::U32))});
  tuple.mutable_tuple_elements()[0].Set<float>(4, 7.f);
  auto unit = ParseModule(
      "HloModule u\nENTRY e {\n  p = (f32[2,3], f32[2,3], u32[]) parameter(0)\n"
      "  ROOT d = f32[2,3] copy-done(p)\n}\n",
      "u.hlo");
  ASSERT_TRUE(unit.ok());
  std::vector<Literal> args;
  args.push_back(tuple);
  auto r = Evaluate(**unit, args);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Get<float>(4), 7.f);
  // dim_labels=bf_io->bf: a matrix product; the left-out window is the empty one.
  auto conv = ParseUnit(
      "HloModule m\nENTRY e {\n  a = f32[2,3] parameter(0)\n  b = f32[3,2] parameter(1)\n"
      "  ROOT c = f32[2,2] convolution(a, b), dim_labels=bf_io->bf\n}\n");
  ASSERT_TRUE(conv);
  ASSERT_TRUE(conv->entry()->root()->window.has_value());
  EXPECT_EQ(ToString(*conv->entry()->root(), PrintOptions::Short()),
            "c = f32[2,2] convolution(a, b), dim_labels=bf_io->bf");
  std::vector<Literal> ab;
  ab.emplace_back(Shape::Array(PrimitiveType::F32, {2, 3}));
  ab.emplace_back(Shape::Array(PrimitiveType::F32, {3, 2}));
  for (int i = 0; i < 6; ++i) {
    ab[0].Set<float>(i, static_cast<float>(i + 1));
    ab[1].Set<float>(i, 1.f);
  }
  auto c = Evaluate(*conv, ab);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->Get<float>(0), 6.f);   // 1+2+3
  EXPECT_EQ(c->Get<float>(3), 15.f);  // 4+5+6
}

TEST(HloXlaSyntaxTest, InterpreterStopsAnEndlessLoopBoundedByItsStateBytes) {
  // reduce_scatter_combiner_test's while(true) over 128 MiB of state ran for hours; the evaluator bounds
  // iterations x state bytes and answers "unimplemented" instead.
  auto m = ParseUnit(
      "HloModule m\ncond {\n  p = f32[1024] parameter(0)\n  ROOT t = pred[] constant(true)\n}\n"
      "body {\n  p = f32[1024] parameter(0)\n  ROOT n = f32[1024] negate(p)\n}\n"
      "ENTRY e {\n  a = f32[1024] parameter(0)\n  ROOT w = f32[1024] while(a), condition=cond, body=body\n}\n");
  ASSERT_TRUE(m);
  EvaluatorOptions options;
  options.max_while_state_bytes = int64_t{1} << 20;  // 256 iterations of 4 KiB
  std::vector<Literal> args;
  args.emplace_back(Shape::Array(PrimitiveType::F32, {1024}));
  auto r = Evaluate(*m, args, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnimplemented);
  EXPECT_EQ(
      r.status().message(),
      "w: while loop ran 257 iterations over a 4096-byte state, more than the evaluator's limit of 1048576 bytes");
}

}  // namespace
}  // namespace opprobe::hlo
