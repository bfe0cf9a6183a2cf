// The C++ top-level splitter (analyzer/loaders/split_top_level.h) on the cases its Python twin
// (capture/opprobe_capture/top_level.py, tests/analyzer/split_top_level_test.py) is held to:
// tests/fixtures/split_top_level_cases.json.
#include "analyzer/loaders/split_top_level.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/loaders/pt2_program.h"
#include "opprobe_version.h"

namespace opprobe::analyzer {
namespace {

nlohmann::json Cases() {
  std::ifstream in(std::string(OPPROBE_SOURCE_DIR) + "/tests/fixtures/split_top_level_cases.json");
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

TEST(SplitTopLevel, SharedCases) {
  nlohmann::json doc = Cases();
  ASSERT_GE(doc["cases"].size(), 20u);
  for (const auto& c : doc["cases"]) {
    const std::string text = c["text"].get<std::string>();
    const std::string sep = c["sep"].get<std::string>();
    ASSERT_EQ(sep.size(), 1u) << c["why"];
    std::vector<std::string> got;
    for (std::string_view piece : SplitTopLevel(text, sep[0])) got.emplace_back(piece);
    EXPECT_EQ(got, c["pieces"].get<std::vector<std::string>>()) << c["why"] << ": " << text;
  }
}

TEST(SplitTopLevel, PiecesAreViewsIntoTheText) {
  const std::string text = "a, (b,c)";
  auto pieces = SplitTopLevel(text, ',');
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[1].data(), text.data() + 3);
  EXPECT_EQ(pieces[1], "(b,c)");
}

// The pt2 loader's nn_module_stack reading goes through the splitter: a class name with a brace or a quoted
// separator does not split an entry.
TEST(SplitTopLevel, ModulePathUsesIt) {
  EXPECT_EQ(ModulePathFromNnModuleStack("a,L['self'].blocks['x,y'],M;b,L['self'].head,{H,I}"), "head");
  EXPECT_EQ(ModulePathFromNnModuleStack("a,L['self'].blocks['x;y'],M"), "blocks.x;y");
}

}  // namespace
}  // namespace opprobe::analyzer
