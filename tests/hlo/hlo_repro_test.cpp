// Repro files: <opcode>_<fingerprint>.hlo and .hlo.pb, written atomically into a created directory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/probe_unit.h"
#include "hlo/proto_io.h"
#include "hlo/repro.h"
#include "hlo_test_files.h"

namespace opprobe::hlo {
namespace {

TEST(HloReproTest, WritesTextAndProtoThatReadBack) {
  auto m = ParseModule(
      "HloModule m\n\n%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
      "  ROOT %s = f32[] add(f32[] %a, f32[] %b)\n}\n\n"
      "ENTRY %e (p: f32[4,8]) -> f32[4] {\n  %p = f32[4,8]{1,0} parameter(0)\n  %z = f32[] constant(0)\n"
      "  ROOT %r = f32[4]{0} reduce(f32[4,8]{1,0} %p, f32[] %z), dimensions={1}, to_apply=%add, "
      "metadata={op_type=\"aten__sum\"}\n}\n\n",
      "m.hlo");
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto unit = MakeProbeModule(*(*m)->entry()->root(), "reduce_unit");
  const std::string fp = Fingerprint(*unit);
  const auto dir =
      std::filesystem::temp_directory_path() / ("opprobe_repro_" + std::to_string(::getpid())) / "nested" / "dir";
  auto path = WriteRepro(*unit, dir.string(), "reduce", fp);
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(*path, (dir / ("reduce_" + fp + ".hlo")).string());
  const std::string text = testing::ReadTestFile(*path);
  EXPECT_EQ(text, ToString(*unit, PrintOptions::Long()));
  auto reparsed = ParseModule(text, *path);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status().message();
  EXPECT_EQ(Fingerprint(**reparsed), fp);
  auto decoded = ModuleFromProtoBytes(testing::ReadTestFile(*path + ".pb"), *path + ".pb");
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(ToString(**decoded, PrintOptions::Long()), text);
  // Only the two files: no temporaries left behind.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 2u);
  // Writing again replaces the files.
  ASSERT_TRUE(WriteRepro(*unit, dir.string(), "reduce", fp).ok());
  std::filesystem::remove_all(dir.parent_path().parent_path());
}

TEST(HloReproTest, UnsafeNameCharactersAreReplacedAndBadDirsAreErrors) {
  auto m = ParseModule("HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n", "m.hlo");
  ASSERT_TRUE(m.ok());
  const auto dir = std::filesystem::temp_directory_path() / ("opprobe_repro2_" + std::to_string(::getpid()));
  auto path = WriteRepro(**m, dir.string(), "../custom call", "ab/cd");
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(std::filesystem::path(*path).filename().string(), ".._custom_call_ab_cd.hlo");
  EXPECT_EQ(std::filesystem::path(*path).parent_path(), dir);
  auto bad = WriteRepro(**m, (dir / ".._custom_call_ab_cd.hlo" / "sub").string(), "x", "y");
  EXPECT_FALSE(bad.ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace opprobe::hlo
