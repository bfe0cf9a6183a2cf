// Every module of the real HLO corpus (../shared/corpus/hlo) without custom-calls evaluates to
// completion on random inputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "hlo/evaluator/evaluator.h"
#include "hlo/parser.h"
#include "opprobe_version.h"

namespace opprobe::hlo {
namespace {

bool HasCustomCall(const Module& m) {
  for (const auto& c : m.computations())
    for (const auto& i : c->instructions())
      if (i->opcode == Opcode::kCustomCall || !i->unknown_opcode.empty()) return true;
  return false;
}

TEST(EvaluatorCorpus, EveryModuleWithoutCustomCallsEvaluates) {
  std::filesystem::path dir = std::filesystem::path(OPPROBE_SOURCE_DIR) / ".." / "shared" / "corpus" / "hlo";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " is absent";
  int evaluated = 0, skipped = 0;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    auto p = e.path();
    if (p.extension() == ".mlir" || p.extension() == ".md") continue;
    files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    auto modules = ParseModules(text, p.filename().string());
    ASSERT_TRUE(modules.ok()) << modules.status().message();
    for (const auto& m : *modules) {
      if (HasCustomCall(*m)) {
        ++skipped;
        continue;
      }
      SCOPED_TRACE(p.filename().string() + ": " + m->name());
      auto args = RandomArguments(*m->entry(), 1);
      auto r = Evaluate(*m, args);
      EXPECT_TRUE(r.ok()) << r.status().message();
      ++evaluated;
    }
  }
  EXPECT_GT(evaluated, 0);
  std::printf("corpus: %d modules evaluated, %d skipped (custom-calls)\n", evaluated, skipped);
}

}  // namespace
}  // namespace opprobe::hlo
