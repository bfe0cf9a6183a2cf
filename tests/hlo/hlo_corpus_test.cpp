// Golden round trips over every HLO text file of ../shared/corpus/hlo: each module must print back
// byte for byte (text -> IR -> text), survive the proto (text -> HloProto bytes -> IR -> text), and
// convert between the long and short printer styles without loss.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/proto_io.h"
#include "hlo_test_files.h"

namespace opprobe::hlo {
namespace {

using testing::CorpusDir;
using testing::ReadTestFile;
using testing::TrimTrailingNewlines;

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(CorpusDir(), ec)) {
    const std::string name = e.path().filename().string();
    if (name == "SOURCES.md" || e.path().extension() == ".mlir") continue;  // StableHLO is out of scope
    files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

#define SKIP_WITHOUT_CORPUS()                      \
  if (!std::filesystem::is_directory(CorpusDir())) \
  GTEST_SKIP() << "HLO corpus folder " << CorpusDir() << " is absent; the corpus tests need it"

TEST(HloCorpusTest, EveryTextFileParses) {
  SKIP_WITHOUT_CORPUS();
  auto files = CorpusFiles();
  ASSERT_EQ(files.size(), 9u);
  std::map<std::string, size_t> counts;
  for (const auto& f : files) {
    auto modules = ParseModules(ReadTestFile(f), f);
    ASSERT_TRUE(modules.ok()) << modules.status().message();
    counts[std::filesystem::path(f).filename().string()] = modules->size();
  }
  EXPECT_EQ(counts["torch_xla_fsdp_mnist_bf16.hlo_dump.txt"], 82u);
  EXPECT_EQ(counts["torch_xla_neuron_bert_SyncTensorsGraph.1864.hlo.txt"], 1u);
}

TEST(HloCorpusTest, TextRoundTripsByteForByte) {
  SKIP_WITHOUT_CORPUS();
  size_t modules_checked = 0;
  for (const auto& f : CorpusFiles()) {
    const std::string text = ReadTestFile(f);
    auto texts = SplitModuleTexts(text);
    auto modules = ParseModules(text, f);
    ASSERT_TRUE(modules.ok()) << modules.status().message();
    ASSERT_EQ(texts.size(), modules->size()) << f;
    for (size_t i = 0; i < texts.size(); ++i) {
      const std::string printed = ToString(*(*modules)[i], DetectPrintStyle(texts[i]));
      EXPECT_EQ(TrimTrailingNewlines(std::string(texts[i])), TrimTrailingNewlines(printed)) << f << " module " << i;
      // XLA ends a module with a blank line after its last computation.
      EXPECT_TRUE(printed.size() >= 3 && printed.substr(printed.size() - 3) == "}\n\n") << f;
      ++modules_checked;
    }
  }
  EXPECT_EQ(modules_checked, 90u);
}

TEST(HloCorpusTest, ProtoRoundTripsToTheSameText) {
  SKIP_WITHOUT_CORPUS();
  for (const auto& f : CorpusFiles()) {
    const std::string text = ReadTestFile(f);
    auto texts = SplitModuleTexts(text);
    auto modules = ParseModules(text, f);
    ASSERT_TRUE(modules.ok()) << modules.status().message();
    for (size_t i = 0; i < texts.size(); ++i) {
      auto bytes = ModuleToHloProtoBytes(*(*modules)[i]);
      ASSERT_TRUE(bytes.ok()) << bytes.status().message();
      auto back = ModuleFromProtoBytes(*bytes, f + ".hlo.pb");
      ASSERT_TRUE(back.ok()) << back.status().message();
      EXPECT_EQ(TrimTrailingNewlines(std::string(texts[i])),
                TrimTrailingNewlines(ToString(**back, DetectPrintStyle(texts[i]))))
          << f << " module " << i;
      // The bare HloModuleProto reads back the same way.
      auto module_bytes = ModuleToProtoBytes(*(*modules)[i]);
      ASSERT_TRUE(module_bytes.ok());
      auto back2 = ModuleFromProtoBytes(*module_bytes, f + ".pb");
      ASSERT_TRUE(back2.ok()) << back2.status().message();
      EXPECT_EQ(ToString(**back, PrintOptions::Long()), ToString(**back2, PrintOptions::Long()));
    }
  }
}

TEST(HloCorpusTest, LongAndShortStylesConvertWithoutLoss) {
  SKIP_WITHOUT_CORPUS();
  for (const auto& f : CorpusFiles()) {
    auto modules = ParseModules(ReadTestFile(f), f);
    ASSERT_TRUE(modules.ok());
    for (const auto& m : *modules) {
      const std::string long_text = ToString(*m, PrintOptions::Long());
      const std::string short_text = ToString(*m, PrintOptions::Short());
      auto from_short = ParseModule(short_text, "short");
      ASSERT_TRUE(from_short.ok()) << from_short.status().message();
      EXPECT_EQ(ToString(**from_short, PrintOptions::Long()), long_text) << f;
      auto from_long = ParseModule(long_text, "long");
      ASSERT_TRUE(from_long.ok()) << from_long.status().message();
      EXPECT_EQ(ToString(**from_long, PrintOptions::Short()), short_text) << f;
    }
  }
}

TEST(HloCorpusTest, BertDumpKeepsMetadataForAttribution) {
  SKIP_WITHOUT_CORPUS();
  const std::string f = CorpusDir() + "/torch_xla_neuron_bert_SyncTensorsGraph.1864.hlo.txt";
  auto m = ParseModule(ReadTestFile(f), f);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->name(), "SyncTensorsGraph.1864");
  ASSERT_EQ((*m)->header_attributes.size(), 1u);
  EXPECT_EQ((*m)->header_attributes[0].first, "input_output_alias");
  size_t with_source = 0, gathers = 0;
  for (const auto& c : (*m)->computations())
    for (const auto& i : c->instructions()) {
      if (!i->metadata->source_file.empty() && i->metadata->source_line > 0) ++with_source;
      if (i->opcode == Opcode::kGather) {
        ++gathers;
        ASSERT_TRUE(i->gather_dimension_numbers.has_value());
        EXPECT_EQ(i->metadata->op_type.rfind("aten__", 0), 0u) << i->metadata->op_type;
      }
    }
  EXPECT_GT(with_source, 100u);
  EXPECT_EQ(gathers, 3u);
}

}  // namespace
}  // namespace opprobe::hlo
