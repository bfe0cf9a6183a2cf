// The StableHLO reader's lexer (hlo/stablehlo/mlir_lexer.h): the tokens of MLIR text, whitespace and comments
// skipped, and every lexical error one line naming its place.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hlo/stablehlo/mlir_lexer.h"

namespace opprobe::hlo::stablehlo {
namespace {

using K = Token::Kind;

// Every token of `text` as "kind:text" (integers by value), up to the end or the first error.
std::vector<std::string> Tokens(std::string_view text, std::string* error = nullptr) {
  Lexer lexer(text, "test.mlir");
  std::vector<std::string> out;
  while (true) {
    auto t = lexer.Next();
    if (!t.ok()) {
      if (error) *error = t.status().message();
      return out;
    }
    if (t->kind == K::kEnd) return out;
    switch (t->kind) {
      case K::kBareId: out.push_back("id:" + t->text); break;
      case K::kValueId: out.push_back("%" + t->text); break;
      case K::kSymbol: out.push_back("@" + t->text); break;
      case K::kHashId: out.push_back("#" + t->text); break;
      case K::kString: out.push_back("str:" + t->text); break;
      case K::kInteger: out.push_back("int:" + std::to_string(t->value)); break;
      case K::kPunct: out.push_back(t->text); break;
      case K::kArrow: out.push_back("->"); break;
      case K::kEnd: break;
    }
  }
}

std::string LexError(std::string_view text) {
  std::string error;
  Tokens(text, &error);
  EXPECT_FALSE(error.empty()) << "no error for: " << text;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  return error;
}

TEST(MlirLexer, OperationLineBecomesTokens) {
  EXPECT_EQ(
      Tokens("%0:2 = stablehlo.add %arg0, %1#1 : (tensor<f32>) -> tensor<f32> // a comment\n"),
      (std::vector<std::string>{"%0", ":",      "int:2",     "=", "id:stablehlo.add", "%arg0", ",", "%1", "#1",
                                ":",  "(",      "id:tensor", "<", "id:f32",           ">",     ")", "->", "id:tensor",
                                "<",  "id:f32", ">"}));
}

TEST(MlirLexer, SymbolsStringsHashIdsAndIntegers) {
  EXPECT_EQ(Tokens(R"(func.func public @main loc(#loc3) "a\"b\n\41" @"q s" -7 0x1F 9223372036854775807)"),
            (std::vector<std::string>{"id:func.func", "id:public", "@main", "id:loc", "(", "#loc3", ")", "str:a\"b\nA",
                                      "@q s", "int:-7", "int:31", "int:9223372036854775807"}));
}

TEST(MlirLexer, TokensKnowTheirPlaceAndSpelling) {
  Lexer lexer("  // comment\n  %x = \"s\\n\"", "test.mlir");
  auto a = lexer.Next();
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->kind, K::kValueId);
  EXPECT_EQ(a->pos, 15u);
  EXPECT_EQ(a->spelling, "%x");
  ASSERT_TRUE(lexer.Next().ok());  // =
  auto s = lexer.Next();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, K::kString);
  EXPECT_EQ(s->spelling, "\"s\\n\"");
  EXPECT_EQ(s->text, "s\n");
  auto end = lexer.Next();
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->kind, K::kEnd);
  EXPECT_EQ(lexer.pos(), 25u);
}

TEST(MlirLexer, ErrorsNameTheirPlace) {
  EXPECT_EQ(LexError("%a = \"open\n\""), "test.mlir:1:6: unterminated string");
  EXPECT_EQ(LexError("\n  \"bad \\q escape\""), "test.mlir:2:8: unknown escape in string");
  EXPECT_EQ(LexError("x = 99999999999999999999"), "test.mlir:1:5: expected an integer, got '99999999999999999999'");
  EXPECT_EQ(LexError("x = -9223372036854775809"), "test.mlir:1:5: integer out of range");
  EXPECT_EQ(LexError("a\n  b $c"), "test.mlir:2:5: unexpected character '$'");
  EXPECT_EQ(LexError("%a = %"), "test.mlir:1:6: expected a value name after '%'");
  EXPECT_EQ(LexError("@"), "test.mlir:1:2: expected a symbol name after '@'");
  EXPECT_EQ(LexError("x # y"), "test.mlir:1:3: expected a name after '#'");
  // Input bytes in a message are escaped: the message stays one printable line.
  EXPECT_EQ(LexError("a \x01"), "test.mlir:1:3: unexpected character '\\x01'");
}

TEST(MlirLexer, EmptyTextAndOnlyCommentsEndAtOnce) {
  EXPECT_TRUE(Tokens("").empty());
  EXPECT_TRUE(Tokens("// nothing\n   \t\r\n// else").empty());
}

}  // namespace
}  // namespace opprobe::hlo::stablehlo
