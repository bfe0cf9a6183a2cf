// HLO as analyzer input: text files (one or many modules), binary protos, dump directories.
#include "analyzer/loaders/hlo_loader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hlo/parser.h"
#include "hlo/proto_io.h"
#include "opprobe_version.h"

namespace opprobe::analyzer {
namespace {

namespace fs = std::filesystem;

class HloLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("opprobe_hlo_loader_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& contents) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }
  fs::path dir_;
};

const char kOne[] = "HloModule one\n\nENTRY e {\n  p = f32[2]{0} parameter(0)\n  ROOT n = f32[2]{0} negate(p)\n}\n\n";
const char kTwo[] = "HloModule two\n\nENTRY e {\n  ROOT c = s32[] constant(3)\n}\n\n";

TEST_F(HloLoaderTest, TextFileWithOneModule) {
  const std::string path = Write("one.hlo", kOne);
  EXPECT_TRUE(LooksLikeHlo(path));
  auto loaded = LoadHlo(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].name, "one");
  EXPECT_EQ((*loaded)[0].module->entry()->root()->opcode, hlo::Opcode::kNegate);
}

TEST_F(HloLoaderTest, TextFileWithSeveralModulesNamesEach) {
  const std::string path = Write("dump.txt", std::string(kOne) + kTwo + kOne);
  EXPECT_TRUE(LooksLikeHlo(path));
  auto loaded = LoadHlo(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->size(), 3u);
  EXPECT_EQ((*loaded)[0].name, "one#1");
  EXPECT_EQ((*loaded)[1].name, "two#2");
  EXPECT_EQ((*loaded)[2].name, "one#3");
}

TEST_F(HloLoaderTest, BinaryProtoFiles) {
  auto m = hlo::ParseModule(kOne, "one.hlo");
  ASSERT_TRUE(m.ok());
  auto wrapped = hlo::ModuleToHloProtoBytes(**m);
  auto bare = hlo::ModuleToProtoBytes(**m);
  ASSERT_TRUE(wrapped.ok() && bare.ok());
  for (const auto& [name, bytes] : {std::pair<std::string, std::string>{"one.hlo.pb", *wrapped}, {"bare.pb", *bare}}) {
    const std::string path = Write(name, bytes);
    EXPECT_TRUE(LooksLikeHlo(path));
    auto loaded = LoadHlo(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    ASSERT_EQ(loaded->size(), 1u);
    EXPECT_EQ((*loaded)[0].name, "one");
  }
}

TEST_F(HloLoaderTest, DirectoryLoadsHloFilesSortedAndSkipsOthers) {
  auto m = hlo::ParseModule(kTwo, "two.hlo");
  ASSERT_TRUE(m.ok());
  Write("b_module.txt", kOne);
  Write("a_module.hlo.pb", *hlo::ModuleToHloProtoBytes(**m));
  Write("c.stablehlo.mlir", "module @IrToHlo.1 {\n}\n");
  Write("module_0001.hlo_module_config.txt", "debug_options {\n}\n");
  Write("notes.md", "HloModule in prose is not a module line start? it is not at column 0 here\n");
  EXPECT_TRUE(LooksLikeHlo(dir_.string()));
  auto loaded = LoadHlo(dir_.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0].name, "two (a_module.hlo.pb)");
  EXPECT_EQ((*loaded)[1].name, "one (b_module.txt)");
}

TEST_F(HloLoaderTest, BadInputIsAnErrorNamingTheFile) {
  auto missing = LoadHlo((dir_ / "nope.hlo").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(missing.status().message().find("no such file"), std::string::npos);

  const std::string garbage = Write("garbage.hlo.pb", std::string("\x0a\xff\xff\xff\x0f junk", 10));
  auto g = LoadHlo(garbage);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message().rfind(garbage + ": ", 0), 0u) << g.status().message();

  const std::string syntax = Write("bad.hlo", "HloModule m\nENTRY e {\n  p = f32[2] parameter(0\n}\n");
  auto s = LoadHlo(syntax);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message().rfind(syntax + ":3:", 0), 0u) << s.status().message();

  const fs::path empty = dir_ / "empty";
  fs::create_directories(empty);
  Write("empty/readme.md", "nothing\n");
  EXPECT_FALSE(LooksLikeHlo(empty.string()));
  auto e = LoadHlo(empty.string());
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("no HLO files"), std::string::npos);

  const std::string mlir = Write("x.mlir", "module @m {}\n");
  EXPECT_FALSE(LooksLikeHlo(mlir));
  const std::string plain = Write("x.txt", "just some text\n");
  EXPECT_FALSE(LooksLikeHlo(plain));
  EXPECT_FALSE(LooksLikeHlo((dir_ / "missing.hlo").string()));
}

TEST_F(HloLoaderTest, TorchXlaDumpFromTheCorpus) {
  const std::string path =
      std::string(OPPROBE_SOURCE_DIR) + "/../shared/corpus/hlo/torch_xla_fsdp_mnist_bf16.hlo_dump.txt";
  if (!fs::exists(path)) GTEST_SKIP() << path << " is absent";
  EXPECT_TRUE(LooksLikeHlo(path));
  auto loaded = LoadHlo(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->size(), 82u);
  EXPECT_EQ((*loaded)[0].name, "IrToHlo.9#1");
  EXPECT_EQ((*loaded)[81].name.substr((*loaded)[81].name.size() - 3), "#82");
  // The corpus folder itself is a dump directory: the .mlir file is skipped.
  auto all = LoadHlo(fs::path(path).parent_path().string());
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(all->size(), 90u);
}

}  // namespace
}  // namespace opprobe::analyzer
