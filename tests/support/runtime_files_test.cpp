// Where a program of the build tree finds opprobe's helpers and the capture shim (support/runtime_files.h): the
// installed place beside it first (PREFIX/libexec/opprobe, PREFIX/share/opprobe), then the build folder and the source
// tree. tests/e2e/installed_test.cpp runs an installed copy, which has the installed places alone.
#include "support/runtime_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "opprobe_version.h"
#include "testing/temp_dir_test.h"

namespace opprobe::io {
namespace {

namespace fs = std::filesystem;

class RuntimeFilesTest : public testing::TempDirTest {};

fs::path Self() { return fs::read_symlink("/proc/self/exe"); }

TEST_F(RuntimeFilesTest, ATestBinaryIsAProgramOfTheBuildTree) {
  EXPECT_TRUE(RunningFromBuildTree());
  const fs::path build = fs::path(OPPROBE_BIN).parent_path();
  const fs::path prefix = Self().parent_path().parent_path();
  auto helpers = HelperPlaces("opprobe-pjrt-worker");
  ASSERT_EQ(helpers.size(), 2u);
  EXPECT_EQ(helpers[0], prefix / "libexec/opprobe/opprobe-pjrt-worker");
  EXPECT_EQ(fs::weakly_canonical(helpers[1]), fs::weakly_canonical(build / "opprobe-pjrt-worker"));
  auto capture = DataPlaces("capture", "capture");
  ASSERT_EQ(capture.size(), 2u);
  EXPECT_EQ(capture[0], prefix / "share/opprobe/capture");
  EXPECT_EQ(capture[1], fs::path(OPPROBE_SOURCE_DIR) / "capture");
}

TEST_F(RuntimeFilesTest, TheFirstPlaceThatHoldsTheFileWins) {
  fs::create_directories(Path("a"));
  fs::create_directories(Path("b"));
  fs::create_directories(Path("c/shim.py"));  // a folder, not a file
  std::ofstream(Path("b/shim.py")) << "";
  std::ofstream(Path("a/other.py")) << "";
  const std::vector<fs::path> places = {Path("c"), Path("a"), Path("b")};
  EXPECT_EQ(FirstFile(places, "shim.py"), Path("b/shim.py"));
  EXPECT_EQ(FirstFile(places, "missing.py"), "");
  EXPECT_EQ(FirstFile({Path("a/other.py")}), Path("a/other.py"));
  EXPECT_EQ(DescribePlaces(places, "shim.py"),
            Path("c/shim.py") + ", " + Path("a/shim.py") + " or " + Path("b/shim.py"));
  EXPECT_EQ(DescribePlaces({Path("a/../b/x")}), Path("b/x"));
}

}  // namespace
}  // namespace opprobe::io
