// support::Quote / support::OneLine: what every loader uses to echo input text in an error message.
#include "support/quote.h"

#include <gtest/gtest.h>

#include <string>

namespace opprobe::support {
namespace {

TEST(Quote, PlainTextIsQuotedAsIs) { EXPECT_EQ(support::Quote("LT"), "'LT'"); }

TEST(Quote, ControlBytesBecomeEscapes) {
  EXPECT_EQ(support::Quote(std::string("a\nb\rc\td\0e\x1b", 10)), "'a\\nb\\rc\\td\\x00e\\x1b'");
  EXPECT_EQ(support::Quote("it's a\\b"), "'it\\'s a\\\\b'");
}

TEST(Quote, LongTextIsCut) {
  std::string q = support::Quote(std::string(1000, 'x'), 10);
  EXPECT_EQ(q, "'xxxxxxxxxx'...");
}

TEST(Quote, ValidUtf8IsKeptInvalidBytesAreEscaped) {
  EXPECT_EQ(support::Quote("caf\xc3\xa9"), "'caf\xc3\xa9'");
  EXPECT_EQ(support::Quote("a\xff\xc3"), "'a\\xff\\xc3'");
  EXPECT_EQ(support::Quote("\xed\xa0\x80"), "'\\xed\\xa0\\x80'");  // a UTF-16 surrogate is not UTF-8
}

TEST(OneLine, EscapesWithoutQuotingAndBoundsTheLength) {
  EXPECT_EQ(support::OneLine("line 1\nline 2"), "line 1\\nline 2");
  EXPECT_EQ(support::OneLine("it's"), "it's");
  EXPECT_EQ(support::OneLine(std::string(50, 'y'), 5), "yyyyy...");
}

}  // namespace
}  // namespace opprobe::support
