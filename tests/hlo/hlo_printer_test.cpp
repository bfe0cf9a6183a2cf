// Printer golden tests: every attribute kind in both printer styles (tests/golden/hlo/attributes.*),
// shapes, literals and unknown opcodes. Regenerate the golden files (from the repository root) with
//   OPPROBE_UPDATE_GOLDEN=1 build/tests/hlo_tests --gtest_filter='HloPrinterTest.*'
#include <gtest/gtest.h>

#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/proto_io.h"
#include "hlo_test_files.h"

namespace opprobe::hlo {
namespace {

using testing::ExpectGolden;
using testing::GoldenPath;
using testing::ReadTestFile;

std::unique_ptr<Module> ParseOrDie(const std::string& text) {
  auto m = ParseModule(text, "test.hlo");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(HloPrinterTest, EveryAttributeKindLongStyle) {
  const std::string input = ReadTestFile(GoldenPath("attributes.long.hlo"));
  ASSERT_FALSE(input.empty());
  auto m = ParseOrDie(input);
  ASSERT_TRUE(m);
  ExpectGolden("attributes.long.hlo", ToString(*m, PrintOptions::Long()));
}

TEST(HloPrinterTest, EveryAttributeKindShortStyle) {
  auto m = ParseOrDie(ReadTestFile(GoldenPath("attributes.long.hlo")));
  ASSERT_TRUE(m);
  const std::string short_text = ToString(*m, PrintOptions::Short());
  ExpectGolden("attributes.short.hlo", short_text);
  // The short text parses back to the same module.
  auto again = ParseOrDie(short_text);
  ASSERT_TRUE(again);
  EXPECT_EQ(ToString(*again, PrintOptions::Long()), ToString(*m, PrintOptions::Long()));
  EXPECT_EQ(ToString(*again, PrintOptions::Short()), short_text);
}

TEST(HloPrinterTest, EveryAttributeKindSurvivesTheProto) {
  auto m = ParseOrDie(ReadTestFile(GoldenPath("attributes.long.hlo")));
  ASSERT_TRUE(m);
  auto bytes = ModuleToHloProtoBytes(*m);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto back = ModuleFromProtoBytes(*bytes, "attributes.hlo.pb");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ToString(**back, PrintOptions::Long()), ToString(*m, PrintOptions::Long()));
}

TEST(HloPrinterTest, CanonicalStyleDropsMetadataAndNames) {
  auto m = ParseOrDie(
      "HloModule m\n\nENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0), metadata={op_type=\"x\"}\n"
      "  ROOT %n = f32[2]{0} negate(f32[2]{0} %p), metadata={op_name=\"y\" source_line=3}\n}\n\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(ToString(*m, PrintOptions::Canonical()),
            "HloModule m\n\nENTRY e {\n  p = f32[2]{0} parameter(0)\n  ROOT n = f32[2]{0} negate(p)\n}\n\n");
  EXPECT_EQ(InstructionSignature(*m->entry()->root()), "f32[2]{0} negate(f32[2]{0})");
}

TEST(HloPrinterTest, Shapes) {
  struct Case {
    const char* text;
  } cases[] = {{"f32[]"},
               {"f32[]{:T(128)}"},
               {"bf16[4,3]{1,0}"},
               {"s32[<=8,2]{1,0}"},
               {"f32[8,128]{1,0:T(8,128)}"},
               {"token[]"},
               {"()"},
               {"(f32[2]{0}, (s32[], pred[3]{0}))"},
               {"(f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[], f32[])"},
               {"u8[0,4]{0,1}"},
               {"c64[2]"}};
  for (const auto& c : cases) {
    auto s = ParseShape(c.text);
    ASSERT_TRUE(s.ok()) << c.text << ": " << s.status().message();
    EXPECT_EQ(s->ToString(), c.text);
  }
  EXPECT_EQ(ParseShape("(f32[2]{0}, s32[])")->ToString(false), "(f32[2], s32[])");
}

std::string ConstantText(const std::string& shape, const std::string& value) {
  auto m = ParseModule("HloModule m\n\nENTRY e {\n  ROOT c = " + shape + " constant(" + value + ")\n}\n", "c.hlo");
  if (!m.ok()) return "error: " + m.status().message();
  return LiteralToString(*(*m)->entry()->root()->literal);
}

TEST(HloPrinterTest, LiteralsPrintAsXlaDoes) {
  // XLA's RoundTripFpToString: bf16 4 digits, f16 5, f32 6 then 9, f64 15 then 17.
  EXPECT_EQ(ConstantText("bf16[]", "1.001e-05"), "1.001e-05");
  EXPECT_EQ(ConstantText("f32[]", "1.1920929e-07"), "1.1920929e-07");
  EXPECT_EQ(ConstantText("f32[]", "0.1"), "0.1");
  EXPECT_EQ(ConstantText("f32[]", "16777217"), "16777216");
  EXPECT_EQ(ConstantText("f64[]", "0.1"), "0.1");
  EXPECT_EQ(ConstantText("f16[]", "3.14159"), "3.1406");
  EXPECT_EQ(ConstantText("f32[]", "-inf"), "-inf");
  EXPECT_EQ(ConstantText("f32[]", "nan"), "nan");
  EXPECT_EQ(ConstantText("pred[]", "true"), "true");
  EXPECT_EQ(ConstantText("pred[2]", "{1, 0}"), "{1, 0}");
  EXPECT_EQ(ConstantText("u64[]", "18446744073709551615"), "18446744073709551615");
  EXPECT_EQ(ConstantText("s8[3]", "{-128, 0, 127}"), "{-128, 0, 127}");
  EXPECT_EQ(ConstantText("c64[]", "(1, -2.5)"), "(1, -2.5)");
  EXPECT_EQ(ConstantText("s32[2,2]", "{ { 1, 2 }, { 3, 4 } }"), "{ { 1, 2 }, { 3, 4 } }");
  EXPECT_EQ(ConstantText("s32[2,1]", "{ {1}, {2} }"), "{ {1}, {2} }");
  EXPECT_EQ(ConstantText("s32[1,1,1,2]", "{ { { {1, 2} } } }"), "{ { /*i0=0*/ { /*i1=0*/ { 1, 2 } } } }");
  EXPECT_EQ(ConstantText("s32[0]", "{}"), "{}");
  EXPECT_EQ(ConstantText("(s32[], f32[2])", "(1, {2, 3})"), "( 1, {2, 3} )");
  EXPECT_EQ(ConstantText("f32[100]", "{...}"), "{...}");
}

TEST(HloPrinterTest, UnknownOpcodePrintsUnderItsOwnName) {
  const std::string text =
      "HloModule m\n\nENTRY e {\n  p = f32[2]{0} parameter(0)\n"
      "  ROOT x = f32[2]{0} vendor-op(p), level=3, to_apply=whatever, metadata={op_type=\"aten__foo\"}\n}\n\n";
  auto m = ParseOrDie(text);
  ASSERT_TRUE(m);
  const Instruction* root = m->entry()->root();
  EXPECT_EQ(root->opcode, Opcode::kCustomCall);
  EXPECT_EQ(root->unknown_opcode, "vendor-op");
  EXPECT_EQ(root->metadata->op_type, "aten__foo");
  EXPECT_EQ(ToString(*m, PrintOptions::Short()), text);
  EXPECT_EQ(InstructionSignature(*root), "f32[2]{0} vendor-op(f32[2]{0}), level=3, to_apply=whatever");
}

TEST(HloPrinterTest, EscapesStringsLikeAbsl) {
  EXPECT_EQ(CEscape("a\"b\\c\nd'\x01\xc3\xa9"), "a\\\"b\\\\c\\nd\\'\\001\\303\\251");
  OpMetadata md;
  md.op_type = "aten__add";
  md.source_file = "caf\xc3\xa9.py";
  md.source_line = 4;
  EXPECT_EQ(MetadataToString(md), "{op_type=\"aten__add\" source_file=\"caf\\303\\251.py\" source_line=4}");
  auto m = ParseOrDie(
      "HloModule m\n\nENTRY e {\n  ROOT p = f32[] parameter(0), metadata={source_file=\"caf\\303\\251.py\"}\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->root()->metadata->source_file, "caf\xc3\xa9.py");
}

}  // namespace
}  // namespace opprobe::hlo
