// The local probe cache through the real binary: a warm run probes nothing and reports the same, `cache stats`
// and `cache clear`, a damaged cache file in a folder the user named (one line, exit 2) and in the default folder
// (one warning, a fresh cache), and a folder in the old one-file-per-verdict layout.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "compiler_probe/disk_cache.h"
#include "compiler_probe/remote/entry.h"
#include "testing/run_binary.h"
#include "testing/temp_dir_test.h"

namespace opprobe {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ReadWholeFile;
using testing::RunOpprobe;

constexpr const char* kTrace = "samples/traces/supported.json";

class CacheE2E : public testing::TempDirTest {
 protected:
  std::string Store() const { return Path(std::string("c/") + compiler_probe::kCacheStoreFile); }
  testing::RunResult Analyze(const std::string& report, std::vector<std::string> cache_args) {
    std::vector<std::string> args = {"analyze", kTrace, "--backend", "rules:cpu", "--no-progress", "-o", Path(report)};
    args.insert(args.end(), cache_args.begin(), cache_args.end());
    return RunOpprobe(args);
  }
  static int Lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }
};

TEST_F(CacheE2E, AWarmRunProbesNothingAndReportsTheSame) {
  auto cold = Analyze("cold.json", {"--cache", Path("c")});
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  auto warm = Analyze("warm.json", {"--cache", Path("c")});
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  EXPECT_EQ(warm.err, "");
  json a = json::parse(ReadWholeFile(Path("cold.json"))), b = json::parse(ReadWholeFile(Path("warm.json")));
  const int64_t units = a["summary"]["unique_probes"];
  ASSERT_GT(units, 0);
  EXPECT_EQ(a["summary"]["cache_hits"], 0);
  EXPECT_EQ(b["summary"]["cache_hits"], units);
  EXPECT_EQ(b["summary"]["probes_run"], 0);
  a.erase("summary");
  b.erase("summary");
  EXPECT_EQ(a, b);

  auto stats = RunOpprobe({"cache", "stats", "--cache", Path("c")});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_NE(stats.out.find("entries: " + std::to_string(units) + " ("), std::string::npos) << stats.out;
  EXPECT_NE(stats.out.find(std::to_string(units) + "  rules:cpu  [profile-"), std::string::npos) << stats.out;
  auto clear = RunOpprobe({"cache", "clear", "--cache", Path("c")});
  ASSERT_EQ(clear.exit_code, 0) << clear.err;
  EXPECT_EQ(clear.out, "removed " + std::to_string(units) + " entries from " + Path("c") + "\n");
  auto again = Analyze("again.json", {"--cache", Path("c")});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(json::parse(ReadWholeFile(Path("again.json")))["summary"]["probes_run"], units);
}

TEST_F(CacheE2E, ADamagedCacheInANamedFolderIsOneLineAndExitTwo) {
  fs::create_directories(Path("c"));
  std::ofstream(Store()) << "not a cache\n";
  auto r = Analyze("r.json", {"--cache", Path("c")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(Store() + ": not a usable probe cache (file is not a database)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(Path("r.json")));
  EXPECT_EQ(ReadWholeFile(Store()), "not a cache\n");

  auto stats = RunOpprobe({"cache", "stats", "--cache", Path("c")});
  EXPECT_EQ(stats.exit_code, 2);
  EXPECT_EQ(Lines(stats.err), 1) << stats.err;
  EXPECT_NE(stats.err.find(Store()), std::string::npos) << stats.err;

  auto clear = RunOpprobe({"cache", "clear", "--cache", Path("c")});
  ASSERT_EQ(clear.exit_code, 0) << clear.err;
  EXPECT_NE(clear.out.find("removed " + Store() + ", which was not a usable probe cache (file is not a database)"),
            std::string::npos)
      << clear.out;
  EXPECT_EQ(Analyze("r.json", {"--cache", Path("c")}).exit_code, 0);
}

TEST_F(CacheE2E, ADamagedCacheInTheDefaultFolderIsOneWarningAndAFreshCache) {
  const char* old = std::getenv("XDG_CACHE_HOME");
  std::string saved = old ? old : "";
  ::setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
  const std::string store = Path(std::string("opprobe/") + compiler_probe::kCacheStoreFile);
  fs::create_directories(Path("opprobe"));
  std::ofstream(store) << "not a cache\n";
  auto r = Analyze("r.json", {});
  auto stats = RunOpprobe({"cache", "stats"});
  auto warm = Analyze("warm.json", {});
  if (old) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else ::unsetenv("XDG_CACHE_HOME");

  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("opprobe: warning: " + store +
                            ": not a usable probe cache (file is not a database): set it "
                            "aside as verdicts.sqlite3.damaged and started a fresh cache",
                        0),
            0u)
      << r.err;
  EXPECT_TRUE(fs::exists(Path("r.json")));
  EXPECT_EQ(ReadWholeFile(store + ".damaged"), "not a cache\n");
  EXPECT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_NE(stats.out.find("cache: " + Path("opprobe")), std::string::npos) << stats.out;
  EXPECT_EQ(warm.err, "");
  EXPECT_EQ(json::parse(ReadWholeFile(Path("warm.json")))["summary"]["probes_run"], 0);
}

TEST_F(CacheE2E, TheOldLayoutIsCountedThenMovedByTheNextAnalysis) {
  // One verdict as the one-file-per-verdict cache wrote it, for a unit this trace does not have.
  fs::path bdir = fs::path(Path("c")) / "v1" / compiler_probe::BackendKeyHash("rules:cpu", "x");
  fs::create_directories(bdir);
  json e = {{"backend_id", "rules:cpu"}, {"backend_version", "x"}, {"fingerprint", "00ff"},
            {"verdict", "supported"},    {"reason", ""},           {"seconds", 0.5},
            {"output_tail", ""}};
  std::ofstream(bdir / "00ff.json") << e.dump(1);
  auto before = RunOpprobe({"cache", "stats", "--cache", Path("c")});
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_NE(before.out.find("old layout (v1/, one file per verdict): 1 entries, moved into verdicts.sqlite3 by the "
                            "next analysis"),
            std::string::npos)
      << before.out;
  auto r = Analyze("r.json", {"--cache", Path("c")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("moved 1 cached verdicts from the one-file-per-verdict layout (v1/)"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(Path("c/v1")));
  auto after = RunOpprobe({"cache", "stats", "--cache", Path("c")});
  EXPECT_NE(after.out.find("  1  rules:cpu  [x]"), std::string::npos) << after.out;
  EXPECT_EQ(after.out.find("old layout"), std::string::npos) << after.out;
}

}  // namespace
}  // namespace opprobe
