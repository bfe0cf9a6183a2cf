// support::HeapOptional: std::optional's behaviour (deep copies, equality, reset, assignment from a value or an
// std::optional) in one pointer, as hlo::Instruction's large attribute structs use it.
#include "support/heap_optional.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "hlo/instruction.h"

namespace opprobe::hlo {
namespace {

TEST(HeapOptional, UnsetCostsOnePointer) {
  EXPECT_EQ(sizeof(support::HeapOptional<Sharding>), sizeof(void*));
  support::HeapOptional<std::vector<int>> v;
  EXPECT_FALSE(v.has_value());
  EXPECT_FALSE(v);
  EXPECT_TRUE(v == std::nullopt);
  EXPECT_EQ(v.value_or(std::vector<int>{7}), std::vector<int>{7});
  EXPECT_THROW(v.value(), std::bad_optional_access);
}

TEST(HeapOptional, CopiesAreDeepAndCompareByValue) {
  support::HeapOptional<std::vector<int>> a = std::vector<int>{1, 2};
  support::HeapOptional<std::vector<int>> b = a;
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(a, b);
  b->push_back(3);
  EXPECT_EQ(a->size(), 2u);  // the copy has its own value
  EXPECT_FALSE(a == b);
  a = b;
  EXPECT_EQ(*a, (std::vector<int>{1, 2, 3}));
  support::HeapOptional<std::vector<int>> moved = std::move(b);
  EXPECT_EQ(moved->size(), 3u);
  moved.reset();
  EXPECT_FALSE(moved.has_value());
  EXPECT_FALSE(moved == a);
  EXPECT_TRUE(moved == support::HeapOptional<std::vector<int>>());
}

TEST(HeapOptional, AssignsFromValuesAndStdOptionals) {
  support::HeapOptional<std::string> s;
  s.emplace(3, 'x');
  EXPECT_EQ(*s, "xxx");
  s = std::string("y");
  EXPECT_EQ(s.value(), "y");
  std::optional<std::string> none;
  s = none;
  EXPECT_FALSE(s.has_value());
  s = std::optional<std::string>("z");
  EXPECT_EQ(*s, "z");
  EXPECT_EQ(s.ToOptional(), std::optional<std::string>("z"));
  s = std::nullopt;
  EXPECT_EQ(s.ToOptional(), std::nullopt);
}

TEST(HeapOptional, InstructionCopiesKeepTheirAttributes) {
  Instruction a;
  a.window.emplace();
  a.window->dimensions.resize(2);
  a.window->dimensions[1].size = 3;
  Instruction b = a;
  b.window->dimensions[1].size = 5;
  EXPECT_EQ(a.window->dimensions[1].size, 3);
  EXPECT_FALSE(b.sharding.has_value());
}

}  // namespace
}  // namespace opprobe::hlo
