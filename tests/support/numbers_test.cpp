#include "support/numbers.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace opprobe::support {
namespace {

TEST(ParseIntegerTest, ReadsAWholeDecimalInteger) {
  EXPECT_EQ(ParseInteger("0"), 0);
  EXPECT_EQ(ParseInteger("17179869184"), int64_t{17179869184});
  EXPECT_EQ(ParseInteger("-12"), -12);
  EXPECT_EQ(ParseInteger<int>("2147483647"), 2147483647);
}

TEST(ParseIntegerTest, RefusesWhatAtoiWouldReadAsZeroOrAPrefix) {
  EXPECT_EQ(ParseInteger(""), std::nullopt);
  EXPECT_EQ(ParseInteger("x"), std::nullopt);
  EXPECT_EQ(ParseInteger("12abc"), std::nullopt);
  EXPECT_EQ(ParseInteger(" 12"), std::nullopt);
  EXPECT_EQ(ParseInteger("+12"), std::nullopt);
  EXPECT_EQ(ParseInteger("1.5"), std::nullopt);
}

TEST(ParseIntegerTest, RefusesAValueOutOfTheTypesRange) {
  EXPECT_EQ(ParseInteger<int>("2147483648"), std::nullopt);
  EXPECT_EQ(ParseInteger("99999999999999999999"), std::nullopt);
  EXPECT_EQ(ParseInteger<uint32_t>("-1"), std::nullopt);
}

}  // namespace
}  // namespace opprobe::support
