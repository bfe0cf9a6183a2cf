#include "compiler_probe/disk_cache.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace opprobe::compiler_probe {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("opprobe-cache-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

Verdict Unsupported(const std::string& reason, double seconds = 1.5) {
  Verdict v = Verdict::Unsupported(reason);
  v.seconds = seconds;
  v.output_tail = "tail\n";
  return v;
}

TEST(DiskCacheTest, StoresAndLooksUpByAllThreeKeys) {
  TempDir tmp;
  auto cache = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  auto& c = **cache;
  EXPECT_FALSE(c.Lookup("cmd:a", "1", "00ff").has_value());
  c.Store("cmd:a", "1", "00ff", Unsupported("no c64"));
  c.Store("cmd:a", "1", "0100", Verdict::Supported());
  auto v = c.Lookup("cmd:a", "1", "00ff");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->kind, Verdict::Kind::kUnsupported);
  EXPECT_EQ(v->reason, "no c64");
  EXPECT_EQ(v->output_tail, "tail\n");
  EXPECT_DOUBLE_EQ(v->seconds, 1.5);
  EXPECT_TRUE(c.Lookup("cmd:a", "1", "0100")->supported());
  EXPECT_FALSE(c.Lookup("cmd:a", "2", "00ff").has_value());   // other version
  EXPECT_FALSE(c.Lookup("cmd:b", "1", "00ff").has_value());   // other backend
  EXPECT_FALSE(c.Lookup("cmd:a", "1", "00fe").has_value());   // other fingerprint
  // A second handle on the same directory (another run) sees the entries.
  auto again = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->Lookup("cmd:a", "1", "00ff")->reason, "no c64");
}

TEST(DiskCacheTest, ErrorVerdictsAreNotStored) {
  TempDir tmp;
  auto cache = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(cache.ok());
  (*cache)->Store("cmd:a", "1", "aa", Verdict::Error("timed out"));
  EXPECT_FALSE((*cache)->Lookup("cmd:a", "1", "aa").has_value());
}

TEST(DiskCacheTest, OddKeysAndTextSurvive) {
  TempDir tmp;
  auto cache = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(cache.ok());
  std::string id = "cmd:cc --flag \"x y\" {hlo_pb} /../..";
  std::string fp = "../../etc/passwd";
  (*cache)->Store(id, "v\n2", fp, Unsupported("bad \xFF byte \"quoted\""));
  auto v = (*cache)->Lookup(id, "v\n2", fp);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->reason, "bad \xEF\xBF\xBD byte \"quoted\"");
  for (const auto& e : fs::recursive_directory_iterator(tmp.path))
    EXPECT_EQ(e.path().string().rfind(tmp.path.string(), 0), 0u);
  EXPECT_FALSE(fs::exists(tmp.path / "etc"));
}

TEST(DiskCacheTest, CorruptEntriesAreMisses) {
  TempDir tmp;
  auto cache = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(cache.ok());
  (*cache)->Store("b", "1", "abc", Verdict::Supported());
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(tmp.path)) {
    if (e.path().filename() == "abc.json") {
      std::ofstream(e.path()) << "{ not json";
      ++files;
    }
  }
  ASSERT_EQ(files, 1);
  EXPECT_FALSE((*cache)->Lookup("b", "1", "abc").has_value());
  (*cache)->Store("b", "1", "abc", Verdict::Supported());
  EXPECT_TRUE((*cache)->Lookup("b", "1", "abc").has_value());
}

TEST(DiskCacheTest, StatsAndClear) {
  TempDir tmp;
  auto empty = GetDiskCacheStats(tmp.path.string());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->entries, 0);
  auto cache = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(cache.ok());
  for (int i = 0; i < 5; ++i) (*cache)->Store("cmd:x", "1", "f" + std::to_string(i), Verdict::Supported());
  for (int i = 0; i < 3; ++i) (*cache)->Store("pjrt:p.so", "0.54", "f" + std::to_string(i), Unsupported("r"));
  auto stats = GetDiskCacheStats(tmp.path.string());
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->entries, 8);
  EXPECT_GT(stats->bytes, 0);
  ASSERT_EQ(stats->backends.size(), 2u);
  EXPECT_EQ(stats->backends[0].id, "cmd:x");
  EXPECT_EQ(stats->backends[0].version, "1");
  EXPECT_EQ(stats->backends[0].entries, 5);
  EXPECT_EQ(stats->backends[1].id, "pjrt:p.so");
  EXPECT_EQ(stats->backends[1].entries, 3);
  auto removed = ClearDiskCache(tmp.path.string());
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 8);
  EXPECT_EQ(GetDiskCacheStats(tmp.path.string())->entries, 0);
  EXPECT_FALSE((*cache)->Lookup("cmd:x", "1", "f0").has_value());
  // Still usable after a clear.
  (*cache)->Store("cmd:x", "1", "f0", Verdict::Supported());
  EXPECT_TRUE((*cache)->Lookup("cmd:x", "1", "f0").has_value());
}

TEST(DiskCacheTest, ConcurrentThreadsShareOneCache) {
  TempDir tmp;
  auto cache = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(cache.ok());
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 60; ++i) {
        std::string fp = "fp" + std::to_string(i % 20);
        (*cache)->Store("b", "1", fp, Unsupported("reason " + fp, t));
        auto v = (*cache)->Lookup("b", "1", fp);
        if (!v || v->reason != "reason " + fp) ++bad;  // never a torn or missing entry once written
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(GetDiskCacheStats(tmp.path.string())->entries, 20);
  for (const auto& e : fs::recursive_directory_iterator(tmp.path))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
}

TEST(DiskCacheTest, ConcurrentProcessesShareOneDirectory) {
  TempDir tmp;
  std::vector<pid_t> pids;
  for (int p = 0; p < 4; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto cache = OpenDiskCache(tmp.path.string());
      if (!cache.ok()) ::_exit(1);
      int bad = 0;
      for (int i = 0; i < 100; ++i) {
        std::string fp = "fp" + std::to_string(i % 10);
        (*cache)->Store("b", "1", fp, Unsupported("r" + fp));
        auto v = (*cache)->Lookup("b", "1", fp);
        if (!v || v->reason != "r" + fp) ++bad;
      }
      ::_exit(bad == 0 ? 0 : 2);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(GetDiskCacheStats(tmp.path.string())->entries, 10);
}

TEST(DiskCacheTest, UnusableDirectoryIsAUsageError) {
  auto c = OpenDiskCache("/proc/opprobe-cannot-create-here");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(c.status().message().find("/proc/opprobe-cannot-create-here"), std::string::npos);
}

TEST(DiskCacheTest, DefaultDirFollowsXdg) {
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  std::string saved = old_xdg ? old_xdg : "";
  ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
  EXPECT_EQ(DefaultCacheDir(), "/x/cache/opprobe");
  ::unsetenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (home && *home) {
    EXPECT_EQ(DefaultCacheDir(), std::string(home) + "/.cache/opprobe");
  }
  if (old_xdg) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

}  // namespace
}  // namespace opprobe::compiler_probe
