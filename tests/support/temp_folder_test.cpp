// io::TempFolder (support/temp_folder.h) and the exit cleanup's async-signal-safe removal (support/exit_cleanup.h).
#include "support/temp_folder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/exit_cleanup.h"
#include "testing/scoped_env.h"
#include "testing/temp_dir_test.h"

namespace opprobe::io {
namespace {

namespace fs = std::filesystem;

class TempFolderTest : public testing::TempDirTest {};

void Fill(const fs::path& dir) {
  fs::create_directories(dir / "a" / "b" / "c");
  std::ofstream(dir / "top.txt") << "x";
  std::ofstream(dir / "a" / "b" / "c" / "deep.hlo") << "y";
  for (int i = 0; i < 300; ++i) std::ofstream(dir / "a" / ("many-" + std::to_string(i))) << i;
}

TEST_F(TempFolderTest, IsAFreshPrivateFolderInTmpdirRemovedWithEverythingInIt) {
  testing::ScopedEnv tmpdir("TMPDIR", dir_.string());
  std::string path;
  {
    auto folder = TempFolder::Create("opprobe-unit-");
    ASSERT_TRUE(folder.ok()) << folder.status().message();
    path = folder->path();
    EXPECT_EQ(fs::path(path).parent_path(), dir_);
    EXPECT_EQ(fs::path(path).filename().string().rfind("opprobe-unit-", 0), 0u) << path;
    EXPECT_EQ(*folder / "trace.json", path + "/trace.json");
    struct stat st;
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    Fill(path);
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(TempFolderTest, AMovedFolderIsRemovedOnceByItsLastOwner) {
  testing::ScopedEnv tmpdir("TMPDIR", dir_.string());
  auto a = TempFolder::Create();
  ASSERT_TRUE(a.ok());
  const std::string path = a->path();
  TempFolder b = std::move(a).value();
  EXPECT_EQ(b.path(), path);
  {
    TempFolder c = std::move(b);
    EXPECT_TRUE(b.path().empty());  // NOLINT(bugprone-use-after-move): a moved-from folder owns nothing
    EXPECT_TRUE(fs::is_directory(path));
  }
  EXPECT_FALSE(fs::exists(path));
  auto d = TempFolder::Create();
  ASSERT_TRUE(d.ok());
  d->Remove();
  d->Remove();
  EXPECT_TRUE(d->path().empty());
}

TEST_F(TempFolderTest, AFolderThatCannotBeMadeIsAnErrorNamingWhere) {
  testing::ScopedEnv tmpdir("TMPDIR", (dir_ / "missing").string());
  auto folder = TempFolder::Create("opprobe-cmd-");
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.status().message().find((dir_ / "missing" / "opprobe-cmd-XXXXXX").string()), std::string::npos)
      << folder.status().message();
  EXPECT_NE(folder.status().message().find("No such file or directory"), std::string::npos);
}

// What a crash handler runs: the registered folders go (with raw system calls, no allocation), a symbolic link in
// one is removed and not followed, and an unregistered folder stays. In a child process: the cleanup ends starts
// for the rest of the process's life.
TEST_F(TempFolderTest, CleanUpNowRemovesTheRegisteredFoldersWithoutFollowingLinks) {
  const fs::path outside = dir_ / "outside", kept = dir_ / "kept";
  fs::create_directories(outside);
  fs::create_directories(kept);
  std::ofstream(outside / "precious") << "z";
  testing::ScopedEnv tmpdir("TMPDIR", dir_.string());
  EXPECT_EXIT(
      {
        auto folder = TempFolder::Create();
        if (!folder.ok()) ::_exit(3);
        Fill(folder->path());
        fs::create_directory_symlink(outside, fs::path(folder->path()) / "a" / "link");
        const std::string path = folder->path();
        exit_cleanup::CleanUpNow();
        ::_exit(fs::exists(path) ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_TRUE(fs::exists(outside / "precious"));
  EXPECT_TRUE(fs::is_directory(kept));
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name == "outside" || name == "kept") << name;
  }
}

}  // namespace
}  // namespace opprobe::io
