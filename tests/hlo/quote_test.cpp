// hlo::Quote / hlo::OneLine: what every loader uses to echo input text in an error message.
#include "hlo/quote.h"

#include <gtest/gtest.h>

#include <string>

namespace opprobe::hlo {
namespace {

TEST(Quote, PlainTextIsQuotedAsIs) { EXPECT_EQ(Quote("LT"), "'LT'"); }

TEST(Quote, ControlBytesBecomeEscapes) {
  EXPECT_EQ(Quote(std::string("a\nb\rc\td\0e\x1b", 10)), "'a\\nb\\rc\\td\\x00e\\x1b'");
  EXPECT_EQ(Quote("it's a\\b"), "'it\\'s a\\\\b'");
}

TEST(Quote, LongTextIsCut) {
  std::string q = Quote(std::string(1000, 'x'), 10);
  EXPECT_EQ(q, "'xxxxxxxxxx'...");
}

TEST(Quote, ValidUtf8IsKeptInvalidBytesAreEscaped) {
  EXPECT_EQ(Quote("caf\xc3\xa9"), "'caf\xc3\xa9'");
  EXPECT_EQ(Quote("a\xff\xc3"), "'a\\xff\\xc3'");
  EXPECT_EQ(Quote("\xed\xa0\x80"), "'\\xed\\xa0\\x80'");  // a UTF-16 surrogate is not UTF-8
}

TEST(OneLine, EscapesWithoutQuotingAndBoundsTheLength) {
  EXPECT_EQ(OneLine("line 1\nline 2"), "line 1\\nline 2");
  EXPECT_EQ(OneLine("it's"), "it's");
  EXPECT_EQ(OneLine(std::string(50, 'y'), 5), "yyyyy...");
}

}  // namespace
}  // namespace opprobe::hlo
