// The StableHLO reader's table of op conversions (hlo/stablehlo/convert.h): one entry per op name, found by the
// name an op has in any of the dialects it is written in, and what happens to an op without one.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "hlo/stablehlo/convert.h"
#include "hlo/stablehlo/stablehlo.h"

namespace opprobe::hlo {
namespace {

TEST(StableHloConvertTable, OneEntryPerOp) {
  std::vector<std::string_view> names = stablehlo::OpConversionNames();
  EXPECT_GT(names.size(), 40u);
  std::set<std::string_view> seen;
  for (std::string_view n : names) EXPECT_TRUE(seen.insert(n).second) << "two entries for " << n;
}

TEST(StableHloConvertTable, FindsOpsByDialectAndName) {
  EXPECT_TRUE(stablehlo::HasOpConversion("stablehlo.pad"));
  EXPECT_TRUE(stablehlo::HasOpConversion("mhlo.pad"));
  EXPECT_TRUE(stablehlo::HasOpConversion("stablehlo.while"));
  EXPECT_TRUE(stablehlo::HasOpConversion("func.call"));
  EXPECT_TRUE(stablehlo::HasOpConversion("chlo.top_k"));
  EXPECT_TRUE(stablehlo::HasOpConversion("chlo.constant"));
  // chlo's ops are found by their full name, stablehlo's by the name after the dialect: no crossing over.
  EXPECT_FALSE(stablehlo::HasOpConversion("chlo.pad"));
  EXPECT_FALSE(stablehlo::HasOpConversion("stablehlo.top_k"));
  EXPECT_FALSE(stablehlo::HasOpConversion("stablehlo.func.call"));
  // Plain one-instruction ops are in the simple-op tables, not this one; an unknown op is in neither.
  EXPECT_FALSE(stablehlo::HasOpConversion("stablehlo.add"));
  EXPECT_FALSE(stablehlo::HasOpConversion("stablehlo.some_future_op"));
}

TEST(StableHloConvertTable, AnEntrysErrorNamesTheOpAndThePlace) {
  auto m = ParseStableHlo(R"(module {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<6xf32> {
    %0 = stablehlo.pad %arg0, low = [1], high = [1], interior = [0] : (tensor<4xf32>) -> tensor<6xf32>
    return %0 : tensor<6xf32>
  }
}
)",
                          "test.mlir");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "test.mlir:3:10: stablehlo.pad: expected 2 operand(s), got 1");
}

TEST(StableHloConvertTable, AnOpOfAnUnknownDialectIsOneLocatedLineNamingIt) {
  auto m = ParseStableHlo(R"(module {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = tosa.frobnicate %arg0 : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)",
                          "test.mlir");
  ASSERT_FALSE(m.ok());
  const std::string e = m.status().message();
  EXPECT_EQ(e.rfind("test.mlir:3:10: operation 'tosa.frobnicate' is from dialect 'tosa'", 0), 0u) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(StableHloConvertTable, AnOpOfAKnownDialectWithoutAnEntryIsAnUnknownInstruction) {
  auto m = ParseStableHlo(R"(module {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.frobnicate %arg0 : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)",
                          "test.mlir");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const Instruction* root = (*m)->entry()->root();
  EXPECT_EQ(root->unknown_opcode, "stablehlo.frobnicate");
  EXPECT_EQ(root->shape.ToString(), "f32[4]{0}");
}

}  // namespace
}  // namespace opprobe::hlo
