// HLO text parser: structure, both styles, multi-module files, and bad input (positions in errors,
// unknown opcodes, overflowing dimensions, operand cycles, deep nesting, truncated text).
#include <gtest/gtest.h>

#include <random>

#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo_test_files.h"

namespace opprobe::hlo {
namespace {

std::string ErrorOf(const std::string& text) {
  auto m = ParseModule(text, "t.hlo");
  return m.ok() ? "ok" : m.status().message();
}

TEST(HloParserTest, ParsesShortStyleModule) {
  auto m = ParseModule(
      "HloModule jit_f, entry_computation_layout={(s32[9]{0})->f32[9]{0}}\n\n"
      "ENTRY main.6 {\n"
      "  Arg_0.1 = s32[9]{0} parameter(0), sharding={replicated}\n"
      "  convert.4 = f32[9]{0} convert(Arg_0.1)\n"
      "  constant.2 = f32[] constant(1)\n"
      "  broadcast.3 = f32[9]{0} broadcast(constant.2), dimensions={}\n"
      "  ROOT add.5 = f32[9]{0} add(convert.4, broadcast.3), metadata={op_name=\"jit(f)/add\" source_line=8}\n"
      "}\n",
      "t.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const Module& mod = **m;
  EXPECT_EQ(mod.name(), "jit_f");
  ASSERT_EQ(mod.header_attributes.size(), 1u);
  EXPECT_EQ(mod.header_attributes[0].second, "{(s32[9]{0})->f32[9]{0}}");
  ASSERT_EQ(mod.computations().size(), 1u);
  const Computation* e = mod.entry();
  EXPECT_EQ(e->name(), "main.6");
  ASSERT_EQ(e->instructions().size(), 5u);
  const Instruction* root = e->root();
  EXPECT_EQ(root->opcode, Opcode::kAdd);
  EXPECT_EQ(root->operand(0)->name, "convert.4");
  EXPECT_EQ(root->metadata->op_name, "jit(f)/add");
  EXPECT_EQ(root->metadata->source_line, 8);
  ASSERT_TRUE(e->instructions()[0]->sharding.has_value());  // a modelled attribute, not kept as text
  EXPECT_EQ(e->instructions()[0]->sharding->type, Sharding::Type::kReplicated);
  EXPECT_TRUE(e->instructions()[0]->rare().unknown_attributes.empty());
  EXPECT_FALSE(e->instructions()[2]->shape.has_layout() && e->instructions()[2]->shape.rank() > 0);
  EXPECT_EQ(e->instructions()[2]->literal->GetAsDouble(0), 1.0);
  // Ids are unique across the module.
  EXPECT_EQ(e->instructions()[0]->id, 1);
  EXPECT_EQ(root->id, 5);
}

TEST(HloParserTest, ParsesLongStyleWithCalledComputations) {
  auto m = ParseModule(
      "HloModule m\n\n"
      "%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n  %y = f32[] parameter(1)\n"
      "  ROOT %a = f32[] add(f32[] %x, f32[] %y)\n}\n\n"
      "ENTRY %main (p: f32[4,8]) -> f32[4] {\n  %p = f32[4,8]{1,0} parameter(0)\n  %z = f32[] constant(0)\n"
      "  ROOT %r = f32[4]{0} reduce(f32[4,8]{1,0} %p, f32[] %z), dimensions={1}, to_apply=%add\n}\n\n",
      "t.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const Instruction* r = (*m)->entry()->root();
  ASSERT_EQ(r->called_computations.size(), 1u);
  EXPECT_EQ(r->called_computations[0]->name(), "add");
  EXPECT_EQ(r->dimensions, std::vector<int64_t>({1}));
  EXPECT_EQ((*m)->computations()[0]->parameters().size(), 2u);
}

TEST(HloParserTest, ForwardReferencesAreOrdered) {
  auto m = ParseModule("HloModule m\nENTRY e {\n  ROOT n = f32[] negate(p)\n  p = f32[] parameter(0)\n}\n", "t.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const auto& instrs = (*m)->entry()->instructions();
  EXPECT_EQ(instrs[0]->name, "p");
  EXPECT_EQ((*m)->entry()->root()->name, "n");
}

// Names are indexed and operands looked up while the computation is read; the errors come as if the whole
// computation were read first: a syntax error anywhere in it, then a name given twice (at its second
// definition), then an unknown operand.
TEST(HloParserTest, DuplicateNamesAndUnknownOperandsAreReportedInTextOrder) {
  const std::string head = "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n";
  EXPECT_EQ(ErrorOf(head + "  b = f32[] add(a, zz)\n  a = f32[] negate(b)\n  ROOT c = f32[] constant(1)\n}\n"),
            "t.hlo:5:3: instruction a defined twice in e");
  EXPECT_EQ(ErrorOf(head + "  a = f32[] negate(a)\n  ROOT c = f32[] constant(1\n}\n"),
            "t.hlo:5:28: expected ')' to close the operands of c, got ''");
  EXPECT_EQ(ErrorOf(head + "  ROOT b = f32[] add(a, f32[] negate(a))\n  negate.1 = f32[] parameter(1)\n}\n"),
            "t.hlo:5:3: instruction negate.1 defined twice in e");
  EXPECT_EQ(ErrorOf(head + "  b = f32[] add(a, zz)\n  ROOT c = f32[] add(b, yy)\n}\n"),
            "t.hlo:4:20: instruction b uses unknown operand zz");
  auto m = ParseModule(head + "  ROOT b = f32[] add(a, f32[] negate(q))\n  q = f32[] parameter(1)\n}\n", "t.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->entry()->root()->operand(1)->operand(0)->name, "q");
}

// An operand's shape written as the same text as its instruction's result shape is stepped over (it parsed
// already); any other text is parsed and checked as before, and the operands are the same either way.
TEST(HloParserTest, OperandShapesRepeatingTheResultShapeTextAreSteppedOver) {
  const std::string head = "HloModule m\nENTRY e {\n  a = f32[2,3]{1,0} parameter(0)\n  t = (f32[2]) parameter(1)\n";
  auto m = ParseModule(head +
                           "  b = f32[2,3]{1,0} add(f32[2,3]{1,0} %a, f32[2,3] a)\n"
                           "  ROOT c = f32[2,3]{1,0} add(f32[2,3]{1,0} b, f32[2,3]{1,0} %a)\n}\n",
                       "t.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const Instruction* c = (*m)->entry()->root();
  EXPECT_EQ(c->operand(0)->name, "b");
  EXPECT_EQ(c->operand(1)->name, "a");
  EXPECT_EQ(c->operand(0)->operand(0), c->operand(1));
  EXPECT_EQ(c->operand(0)->operand(1), c->operand(1));
  // A malformed operand shape is an error wherever it is, beside a well-formed repeat or not.
  EXPECT_EQ(ErrorOf(head + "  ROOT b = f32[2,3]{1,0} add(f32[2,3]{1,0} a, f32[2,3]{1,0 a)\n}\n"),
            "t.hlo:5:60: expected ',' or '}' in layout, got 'a)'");
  // The same text before a tuple element or an inline operand is not a repeat of their shape.
  EXPECT_EQ(ErrorOf(head + "  ROOT g = f32[2] negate(f32[2] t#0)\n}\n"), "ok");
  EXPECT_EQ(ErrorOf(head + "  ROOT n = f32[2,3]{1,0} negate(f32[2,3]{1,0} negate(a))\n}\n"), "ok");
}

TEST(HloParserTest, SyntaxErrorsGiveLineAndColumn) {
  EXPECT_EQ(ErrorOf("HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  q f32[2] negate(p)\n}\n"),
            "t.hlo:5:5: expected '=' after instruction name q, got 'f32[2] negate(p)'");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  p = f33[2] parameter(0)\n}\n"), "t.hlo:3:7: unknown element type 'f33'");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(q)\n}\n"),
            "t.hlo:4:26: instruction n uses unknown operand q");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] add(p)\n}\n"),
            "t.hlo:4:19: add takes 2 operand(s), n has 1");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"),
            "t.hlo:4:1: computation e is not closed with '}'");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  ROOT r = f32[2] reduce(p, p), dimensions={0}, to_apply=nowhere\n"
                    "  p = f32[2] parameter(0)\n}\n"),
            "t.hlo:3:58: r calls unknown computation nowhere");
  EXPECT_EQ(
      ErrorOf(
          "HloModule m\nENTRY e {\n  ROOT r = f32[2] reduce(p, p), to_apply=nowhere\n  p = f32[2] parameter(0)\n}\n"),
      "t.hlo:3:8: reduce r needs dimensions=");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  ROOT c = s32[2] constant({1, 2, 3})\n}\n"),
            "t.hlo:3:35: literal has more than 2 elements in dimension 0");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  ROOT c = s8[] constant(300)\n}\n"),
            "t.hlo:3:26: 300 does not fit in s8");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  ROOT p = f32[2]{1} parameter(0)\n}\n"),
            "t.hlo:3:18: layout is not a permutation of the dimensions");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  ROOT c = f32[2] compare(p, p), direction=SIDEWAYS\n  p = f32[2] "
                    "parameter(0)\n}\n"),
            "t.hlo:3:44: unknown comparison direction 'SIDEWAYS'");
  EXPECT_EQ(ErrorOf(""), "t.hlo:1:1: module has no computations");
}

TEST(HloParserTest, UnknownOpcodeParsesAndKeepsItsName) {
  auto m = ParseModule(
      "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT x = f32[2] my-new-op(p, p), mode=fast\n}\n", "t.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const Instruction* x = (*m)->entry()->root();
  EXPECT_EQ(x->opcode, Opcode::kCustomCall);
  EXPECT_EQ(x->unknown_opcode, "my-new-op");
  EXPECT_EQ(x->operand_count(), 2);
  ASSERT_EQ(x->rare().unknown_attributes.size(), 1u);
  EXPECT_EQ(x->rare().unknown_attributes[0], (std::pair<std::string, std::string>("mode", "fast")));
  EXPECT_NE(ToString(**m).find("my-new-op(f32[2] %p, f32[2] %p), mode=fast"), std::string::npos);
}

TEST(HloParserTest, ElementCountOverflowIsAnError) {
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  ROOT p = f32[4294967296,4294967296,4] parameter(0)\n}\n"),
            "t.hlo:3:12: shape f32[4294967296,4294967296,4] has more than 2^63 elements");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  ROOT p = f32[99999999999999999999] parameter(0)\n}\n"),
            "t.hlo:3:16: integer does not fit in 64 bits");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  ROOT p = (f32[2], f32[4611686018427387904,4]) parameter(0)\n}\n"),
            "t.hlo:3:21: shape f32[4611686018427387904,4] has more than 2^63 elements");
}

// Integers reach INT64_MIN and INT64_MAX and no further, in either sign.
TEST(HloParserTest, IntegersAtTheSixtyFourBitLimits) {
  auto param = [](const std::string& n) {
    return ErrorOf("HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(" + n + ")\n}\n");
  };
  EXPECT_EQ(param("9223372036854775808"), "t.hlo:3:28: integer does not fit in 64 bits");
  EXPECT_EQ(param("-9223372036854775809"), "t.hlo:3:28: integer does not fit in 64 bits");
  EXPECT_EQ(param("-9223372036854775808"), "t.hlo:3:28: negative parameter number");
  EXPECT_EQ(param("-0"), "ok");
  EXPECT_EQ(param("+0"), "ok");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  ROOT p = f32[9223372036854775807] parameter(0)\n}\n"), "ok");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  ROOT p = f32[9223372036854775808] parameter(0)\n}\n"),
            "t.hlo:3:16: integer does not fit in 64 bits");
}

// An attribute key given twice is an error wherever it repeats, among few keys or many.
TEST(HloParserTest, AttributeGivenTwiceIsAnError) {
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                    "  ROOT t = f32[2] transpose(p), dimensions={0}, dimensions={0}\n}\n"),
            "t.hlo:4:49: attribute dimensions given twice");
  std::string many;
  for (int k = 1; k <= 10; ++k) many += ", k" + std::to_string(k) + "=" + std::to_string(k);
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT x = f32[2] my-op(p)" + many + "\n}\n"),
            "ok");
  EXPECT_EQ(
      ErrorOf("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT x = f32[2] my-op(p)" + many + ", k9=0\n}\n"),
      "t.hlo:4:" + std::to_string(29 + static_cast<int>(many.size())) + ": attribute k9 given twice");
  EXPECT_EQ(
      ErrorOf("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT x = f32[2] my-op(p)" + many + ", k2=0\n}\n"),
      "t.hlo:4:" + std::to_string(29 + static_cast<int>(many.size())) + ": attribute k2 given twice");
}

TEST(HloParserTest, OperandCycleIsAnError) {
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  a = f32[] add(b, b)\n  ROOT b = f32[] negate(a)\n}\n"),
            "t.hlo:3:3: instruction a is part of an operand cycle in e");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n  ROOT a = f32[] negate(a)\n}\n"),
            "t.hlo:3:8: instruction a is part of an operand cycle in e");
}

TEST(HloParserTest, CallCycleIsAnError) {
  EXPECT_EQ(ErrorOf("HloModule m\nc {\n  p = f32[] parameter(0)\n  ROOT k = f32[] call(p), to_apply=c\n}\n"
                    "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT k = f32[] call(p), to_apply=c\n}\n"),
            "t.hlo: computation c calls itself (directly or through c)");
}

TEST(HloParserTest, DeepNestingIsAnErrorNotACrash) {
  std::string deep_shape = std::string(5000, '(') + "f32[]" + std::string(5000, ')');
  EXPECT_NE(
      ErrorOf("HloModule m\nENTRY e {\n  ROOT p = " + deep_shape + " parameter(0)\n}\n").find("nested too deeply"),
      std::string::npos);
  std::string deep_literal = std::string(5000, '{') + std::string(5000, '}');
  EXPECT_NE(ErrorOf("HloModule m\nENTRY e {\n  ROOT c = f32[1] constant(" + deep_literal + ")\n}\n"), "ok");
  auto s = ParseShape(std::string(100000, '('));
  EXPECT_FALSE(s.ok());
}

TEST(HloParserTest, ManyModulesOneAfterAnother) {
  const std::string one = "HloModule a\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n\n";
  const std::string two = "HloModule b\n\nENTRY e {\n  ROOT c = s32[] constant(2)\n}\n\n";
  auto ms = ParseModules(one + two, "t.hlo");
  ASSERT_TRUE(ms.ok()) << ms.status().message();
  ASSERT_EQ(ms->size(), 2u);
  EXPECT_EQ((*ms)[1]->name(), "b");
  EXPECT_EQ(ErrorOf(one + two), "t.hlo: holds 2 modules where one was expected");
  // An error in the second module names its line in the whole file.
  auto bad = ParseModules(one + "HloModule b\nENTRY e {\n  ROOT c = s32[] constant(x)\n}\n", "t.hlo");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "t.hlo:9:27: 'x' is not an integer");
}

TEST(HloParserTest, TorchXlaSaveTensorsFraming) {
  const std::string text =
      "[ScheduleSyncTensorsGraph]\nTensorsGraphInfo:\n  mark_step (/x/xla_model.py:949)\n\n"
      "Hashes: (968f7a41, 6cc1fa14)\n\n## BEGIN_GRAPH\n"
      "HloModule IrToHlo.9, entry_computation_layout={()->f32[]}\n\n"
      "ENTRY %IrToHlo.9 () -> f32[] {\n  ROOT %c = f32[] constant(0)\n}\n\n\n## END_GRAPH\n\n"
      "[ScheduleSyncTensorsGraph]\nTensorsGraphInfo:\n  f (a.py:1)\n\n## BEGIN_GRAPH\n"
      "HloModule IrToHlo.10\n\nENTRY %IrToHlo.10 () -> s32[] {\n  ROOT %c = s32[] constant(1)\n}\n\n## END_GRAPH\n";
  auto ms = ParseModules(text, "dump.txt");
  ASSERT_TRUE(ms.ok()) << ms.status().message();
  ASSERT_EQ(ms->size(), 2u);
  EXPECT_EQ((*ms)[0]->name(), "IrToHlo.9");
  EXPECT_EQ((*ms)[1]->name(), "IrToHlo.10");
  auto texts = SplitModuleTexts(text);
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_EQ(testing::TrimTrailingNewlines(std::string(texts[1])),
            testing::TrimTrailingNewlines(ToString(*(*ms)[1], DetectPrintStyle(texts[1]))));
}

TEST(HloParserTest, HeaderlessTextAndComments) {
  auto m = ParseModule(
      "// a comment\nENTRY e {\n  /* c */ p = f32[2]{0} parameter(0) // trailing\n"
      "  ROOT t = (f32[2]{0}, /*index=1*/f32[2]{0}) tuple(p, /*index=1*/p)\n}\n",
      "t.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->name(), "module");
  EXPECT_EQ((*m)->entry()->root()->operand_count(), 2);
}

TEST(HloParserTest, ShapesLayoutsAndLiterals) {
  auto m = ParseModule(
      "HloModule m\nENTRY e {\n  d = s32[<=8,2]{1,0} parameter(0)\n  t = f32[8,128]{1,0:T(8,128)S(1)} parameter(1)\n"
      "  big = f32[1000,1000]{1,0} constant({...})\n  ROOT c = f32[2,2]{0,1} constant({ { 1, 2 }, { 3, 4 } })\n}\n",
      "t.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const auto& in = (*m)->entry()->instructions();
  EXPECT_TRUE(in[0]->shape.is_dynamic_dimension(0));
  EXPECT_FALSE(in[0]->shape.is_dynamic_dimension(1));
  EXPECT_EQ(in[1]->shape.layout_suffix(), ":T(8,128)S(1)");
  EXPECT_TRUE(in[2]->literal->elided());
  EXPECT_TRUE(in[2]->literal->data().empty());  // an elided literal allocates nothing
  // Literal text is row-major whatever the layout.
  EXPECT_EQ(in[3]->literal->GetAsDouble(1), 2.0);
  EXPECT_EQ(in[3]->literal->GetAsDouble(2), 3.0);
}

TEST(HloParserTest, TruncatedAndMutatedTextNeverCrashes) {
  const std::string text = testing::ReadTestFile(testing::GoldenPath("attributes.long.hlo"));
  ASSERT_FALSE(text.empty());
  ASSERT_TRUE(ParseModule(text, "a.hlo").ok());
  size_t failures = 0;
  for (size_t n = 0; n < text.size(); n += 7) {
    auto m = ParseModule(text.substr(0, n), "a.hlo");
    if (!m.ok()) {
      ++failures;
      EXPECT_EQ(m.status().message().rfind("a.hlo", 0), 0u) << m.status().message();
    }
  }
  EXPECT_GT(failures, 0u);
  std::mt19937 rng(7);
  const char junk[] = "{}()[],=%\"\\:x0-9 \n/*";
  for (int k = 0; k < 300; ++k) {
    std::string mutated = text;
    for (int j = 0; j < 3; ++j) mutated[rng() % mutated.size()] = junk[rng() % (sizeof(junk) - 1)];
    auto m = ParseModule(mutated, "a.hlo");
    if (m.ok()) (void)ToString(**m);  // whatever parses also prints
  }
}

// Shapes written plainly (`f32[2,3]{1,0}`) take the parser's fast path; with blanks inside they take the general
// one. Both must accept and reject the same shapes and read the same values.
TEST(HloParserTest, PlainAndSpacedShapesParseAlike) {
  const std::vector<std::string> shapes = {"f32[]",
                                           "f32[]{}",
                                           "pred[2,3]{1,0}",
                                           "s32[4]{0}",
                                           "f32[2,3]{0,1}",
                                           "bf16[1,2,3,4]{3,2,1,0}",
                                           "u8[7]",
                                           "f32[0,9223372036854775807]{1,0}",
                                           "f32[2,4611686018427387904]",
                                           "f32[3037000500,3037000500]",
                                           "f32[999999999999999999]",
                                           "f32[1234567890123456789]",
                                           "f32[2,3]{1,1}",
                                           "f32[2,3]{2,0}",
                                           "f32[2,3]{}",
                                           "f32[2,3]{1}",
                                           "f32[2]{0:T(128)}",
                                           "f32[]{0}",
                                           "token[]",
                                           "f32[2,3]{1,0,2}",
                                           "f32[01,2]{1,00}",
                                           "f32[2,]",
                                           "f32[,2]",
                                           "f32[2",
                                           "f32[2]{",
                                           "f32[2]{0",
                                           "f32[]{"};
  for (const std::string& plain : shapes) {
    std::string spaced;
    for (char c : plain) {
      spaced += c;
      if (c == '[' || c == ',' || c == '{') spaced += ' ';
    }
    auto a = ParseShape(plain);
    auto b = ParseShape(spaced);
    ASSERT_EQ(a.ok(), b.ok()) << plain << " | " << spaced << " | "
                              << (a.ok() ? b.status().message() : a.status().message());
    if (a.ok()) {
      EXPECT_EQ(*a, *b) << plain;
      EXPECT_EQ(a->ToString(), b->ToString()) << plain;
    }
  }
}

}  // namespace
}  // namespace opprobe::hlo
