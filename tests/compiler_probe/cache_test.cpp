#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "compiler_probe/disk_cache.h"
#include "compiler_probe/remote/entry.h"

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
  std::string File() const { return (path / kCacheStoreFile).string(); }
};

Verdict Unsupported(const std::string& reason, double seconds = 1.5) {
  Verdict v = Verdict::Unsupported(reason);
  v.seconds = seconds;
  v.output_tail = "tail\n";
  return v;
}

// Collects the warnings a cache gives.
struct Warnings {
  std::vector<std::string> lines;
  DiskCacheOptions Options(bool named = false) {
    return {named, [this](const std::string& w) { lines.push_back(w); }};
  }
};

// Runs SQL on a cache file behind the cache's back (damage, another format, another program's database).
void Sql(const std::string& file, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

void WriteBytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

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
  EXPECT_FALSE(c.Lookup("cmd:a", "2", "00ff").has_value());  // other version
  EXPECT_FALSE(c.Lookup("cmd:b", "1", "00ff").has_value());  // other backend
  EXPECT_FALSE(c.Lookup("cmd:a", "1", "00fe").has_value());  // other fingerprint
  // A second handle on the same directory (another run) sees the entries.
  auto again = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->Lookup("cmd:a", "1", "00ff")->reason, "no c64");
  // The folder holds the database and its lock file, nothing per entry.
  for (const auto& e : fs::directory_iterator(tmp.path))
    EXPECT_EQ(e.path().filename().string().rfind(kCacheStoreFile, 0) == 0 || e.path().filename() == "verdicts.lock",
              true)
        << e.path();
}

TEST(DiskCacheTest, LookupManyAnswersAsLookupDoes) {
  TempDir tmp;
  auto cache = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(cache.ok());
  auto& c = **cache;
  for (int i = 0; i < 300; i += 2) c.Store("b", "1", "f" + std::to_string(i), Unsupported("r" + std::to_string(i)));
  std::vector<std::string> fps;
  for (int i = 0; i < 300; ++i) fps.push_back("f" + std::to_string(i));
  auto many = c.LookupMany("b", "1", fps);
  ASSERT_EQ(many.size(), fps.size());
  for (int i = 0; i < 300; ++i) {
    auto one = c.Lookup("b", "1", fps[i]);
    ASSERT_EQ(many[i].has_value(), i % 2 == 0) << i;
    ASSERT_EQ(one.has_value(), i % 2 == 0) << i;
    if (one) { EXPECT_EQ(many[i]->reason, one->reason); }
  }
  EXPECT_TRUE(c.LookupMany("b", "2", fps)[0] == std::nullopt);  // the backend is part of the key
  EXPECT_TRUE(c.LookupMany("b", "1", {}).empty());
}

// LookupMany and LookupMemos walk the rows in key order (stepping over rows nobody asked for, seeking again past a
// few): every mix of densities, misses, repeats and orders answers as one lookup per key does.
TEST(DiskCacheTest, BatchLookupsWalkCommittedRowsInAnyMix) {
  TempDir tmp;
  {
    auto cache = OpenDiskCache(tmp.path.string());
    ASSERT_TRUE(cache.ok());
    for (int i = 0; i < 600; ++i) {
      (*cache)->Store("b", "1", "f" + std::to_string(1000 + i), Unsupported("r" + std::to_string(i)));
      (*cache)->Store("a", "1", "f" + std::to_string(1000 + i), Unsupported("other backend"));
    }
    std::vector<std::pair<uint64_t, std::string>> memos;
    for (uint64_t k = 0; k < 600; ++k) memos.emplace_back(k * 0x0123456789abcdefULL, "m" + std::to_string(k));
    (*cache)->StoreMemos(memos);
  }
  std::map<uint64_t, std::string> memo_of;  // (the keys wrap around 2^64: half of them read as negative in SQLite)
  for (uint64_t k = 0; k < 600; ++k) memo_of[k * 0x0123456789abcdefULL] = "m" + std::to_string(k);
  auto cache = OpenDiskCache(tmp.path.string());  // everything committed: the lookups read the database
  ASSERT_TRUE(cache.ok());
  auto& c = **cache;
  for (int stride : {1, 3, 25, 200}) {
    std::vector<std::string> fps;
    std::vector<uint64_t> keys;
    for (int i = 599; i >= -50; i -= stride) {  // backwards, with misses below, above and between the rows
      fps.push_back("f" + std::to_string(1000 + i));
      fps.push_back("f" + std::to_string(1000 + i) + "x");
      keys.push_back(static_cast<uint64_t>(i) * 0x0123456789abcdefULL);
      keys.push_back(static_cast<uint64_t>(i) * 0x0123456789abcdefULL + 1);
    }
    fps.push_back(fps.front());  // a repeat
    keys.push_back(keys.front());
    auto many = c.LookupMany("b", "1", fps);
    ASSERT_EQ(many.size(), fps.size());
    for (size_t i = 0; i < fps.size(); ++i) {
      auto one = c.Lookup("b", "1", fps[i]);
      ASSERT_EQ(many[i].has_value(), one.has_value()) << stride << " " << fps[i];
      if (one) { EXPECT_EQ(many[i]->reason, one->reason) << fps[i]; }
    }
    auto got = c.LookupMemos(keys);
    ASSERT_EQ(got.size(), keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      auto stored = memo_of.find(keys[i]);
      ASSERT_EQ(got[i].has_value(), stored != memo_of.end()) << stride << " " << keys[i];
      if (got[i]) { EXPECT_EQ(*got[i], stored->second); }
    }
  }
  EXPECT_EQ(c.LookupMany("b", "1", {"f1599", "f1000"})[1]->reason, "r0");
}

TEST(DiskCacheTest, ErrorVerdictsAreNotStored) {
  TempDir tmp;
  auto cache = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(cache.ok());
  (*cache)->Store("cmd:a", "1", "aa", Verdict::Error("timed out"));
  EXPECT_FALSE((*cache)->Lookup("cmd:a", "1", "aa").has_value());
  // A unit not probed (left to another shard) is no verdict either.
  (*cache)->Store("cmd:a", "1", "ab", Verdict::NotProbed("not probed: shard 1 of 2 leaves this unit to shard 2"));
  EXPECT_FALSE((*cache)->Lookup("cmd:a", "1", "ab").has_value());
  cache->reset();
  EXPECT_EQ(GetDiskCacheStats(tmp.path.string())->entries, 0);
}

// How a unit's outputs compared with interp (Verdict::interp) reads back as stored, whatever the verdict's words.
TEST(DiskCacheTest, TheComparisonWithInterpIsKept) {
  TempDir tmp;
  auto cache = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(cache.ok());
  auto& c = **cache;
  Verdict agree = Verdict::Supported();
  agree.interp = Verdict::Interp::kAgree;
  agree.output_tail = "1 output";
  Verdict not_compared = Verdict::Supported();
  not_compared.interp = Verdict::Interp::kNotCompared;
  Verdict differ = Verdict::Unsupported("outputs differ at [0]");
  differ.interp = Verdict::Interp::kDiffer;
  Verdict words = Verdict::Supported();  // reads like a comparison, but none was made
  words.output_tail = std::string(kInterpAgreePrefix) + "1 output agree";
  c.Store("pjrt:x", "1", "a1", agree);
  c.Store("pjrt:x", "1", "a2", not_compared);
  c.Store("pjrt:x", "1", "a3", differ);
  c.Store("pjrt:x", "1", "a4", words);
  EXPECT_EQ(c.Lookup("pjrt:x", "1", "a1")->interp, Verdict::Interp::kAgree);
  EXPECT_EQ(c.Lookup("pjrt:x", "1", "a1")->output_tail, "1 output");
  EXPECT_EQ(c.Lookup("pjrt:x", "1", "a2")->interp, Verdict::Interp::kNotCompared);
  EXPECT_TRUE(c.Lookup("pjrt:x", "1", "a2")->supported());
  EXPECT_EQ(c.Lookup("pjrt:x", "1", "a3")->interp, Verdict::Interp::kDiffer);
  EXPECT_EQ(c.Lookup("pjrt:x", "1", "a3")->kind, Verdict::Kind::kUnsupported);
  EXPECT_EQ(c.Lookup("pjrt:x", "1", "a4")->interp, Verdict::Interp::kNone);
  auto many = c.LookupMany("pjrt:x", "1", {"a1", "a2", "a3", "a4"});
  ASSERT_EQ(many.size(), 4u);
  EXPECT_EQ(many[0]->interp, Verdict::Interp::kAgree);
  EXPECT_EQ(many[2]->interp, Verdict::Interp::kDiffer);
}

TEST(DiskCacheTest, OddKeysAndTextSurviveByteForByte) {
  TempDir tmp;
  auto cache = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(cache.ok());
  std::string id = "cmd:cc --flag \"x y\" {hlo_pb} /../..";
  std::string fp = "../../etc/passwd";
  std::string nul_fp("a\0b", 3);
  (*cache)->Store(id, "v\n2", fp, Unsupported("bad \xFF byte \"quoted\""));
  (*cache)->Store(id, "v\n2", nul_fp, Verdict::Supported());
  cache->reset();  // through the file, not the batch waiting in memory
  auto reopened = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(reopened.ok());
  auto v = (*reopened)->Lookup(id, "v\n2", fp);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->reason, "bad \xFF byte \"quoted\"");
  EXPECT_TRUE((*reopened)->Lookup(id, "v\n2", nul_fp).has_value());
  EXPECT_FALSE((*reopened)->Lookup(id, "v\n2", "a").has_value());  // the whole key, embedded NUL and all
  for (const auto& e : fs::recursive_directory_iterator(tmp.path))
    EXPECT_EQ(e.path().string().rfind(tmp.path.string(), 0), 0u);
  EXPECT_FALSE(fs::exists(tmp.path / "etc"));
}

TEST(DiskCacheTest, DamagedOrEditedRowsAreMisses) {
  TempDir tmp;
  {
    auto cache = OpenDiskCache(tmp.path.string());
    ASSERT_TRUE(cache.ok());
    (*cache)->Store("b", "1", "abc", Unsupported("why"));
    (*cache)->Store("b", "1", "def", Verdict::Supported());
    (*cache)->Store("b", "1", "ghi", Verdict::Supported());
  }
  Sql(tmp.File(),
      "UPDATE verdicts SET reason = CAST('edited' AS BLOB) WHERE fingerprint = CAST('abc' AS BLOB);"
      "UPDATE verdicts SET kind = 7 WHERE fingerprint = CAST('def' AS BLOB);"
      "UPDATE verdicts SET seconds = 'x' WHERE fingerprint = CAST('ghi' AS BLOB);");
  Warnings w;
  auto cache = OpenDiskCache(tmp.path.string(), w.Options());
  ASSERT_TRUE(cache.ok());
  EXPECT_FALSE((*cache)->Lookup("b", "1", "abc").has_value());  // checksum
  EXPECT_FALSE((*cache)->Lookup("b", "1", "def").has_value());  // unknown kind
  EXPECT_FALSE((*cache)->Lookup("b", "1", "ghi").has_value());  // wrong type
  EXPECT_TRUE(w.lines.empty());                                 // a bad row is a miss, not a damaged cache
  (*cache)->Store("b", "1", "abc", Unsupported("fresh"));
  EXPECT_EQ((*cache)->Lookup("b", "1", "abc")->reason, "fresh");
  cache->reset();
  EXPECT_EQ((*OpenDiskCache(tmp.path.string()))->Lookup("b", "1", "abc")->reason, "fresh");
}

TEST(DiskCacheTest, StatsAndClear) {
  TempDir tmp;
  auto empty = GetDiskCacheStats(tmp.path.string());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->entries, 0);
  EXPECT_FALSE(fs::exists(tmp.path));  // stats only reads
  auto cache = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(cache.ok());
  for (int i = 0; i < 5; ++i) (*cache)->Store("cmd:x", "1", "f" + std::to_string(i), Verdict::Supported());
  for (int i = 0; i < 3; ++i) (*cache)->Store("pjrt:p.so", "0.54", "f" + std::to_string(i), Unsupported("r"));
  cache->reset();
  cache = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(cache.ok());
  auto stats = GetDiskCacheStats(tmp.path.string());
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->entries, 8);
  EXPECT_GT(stats->bytes, 0);
  EXPECT_EQ(stats->file, tmp.File());
  ASSERT_EQ(stats->backends.size(), 2u);
  EXPECT_EQ(stats->backends[0].id, "cmd:x");
  EXPECT_EQ(stats->backends[0].version, "1");
  EXPECT_EQ(stats->backends[0].entries, 5);
  EXPECT_GT(stats->backends[0].bytes, 0);
  EXPECT_EQ(stats->backends[1].id, "pjrt:p.so");
  EXPECT_EQ(stats->backends[1].entries, 3);
  auto removed = ClearDiskCache(tmp.path.string());
  ASSERT_TRUE(removed.ok()) << removed.status().message();
  EXPECT_EQ(removed->removed, 8);
  EXPECT_TRUE(removed->removed_file.empty());
  EXPECT_EQ(GetDiskCacheStats(tmp.path.string())->entries, 0);
  // A handle that was open during the clear (another run) sees it, and stays usable.
  EXPECT_FALSE((*cache)->Lookup("cmd:x", "1", "f0").has_value());
  (*cache)->Store("cmd:x", "1", "f0", Verdict::Supported());
  EXPECT_TRUE((*cache)->Lookup("cmd:x", "1", "f0").has_value());
  cache->reset();
  auto after = GetDiskCacheStats(tmp.path.string());
  ASSERT_EQ(after->backends.size(), 1u);
  EXPECT_EQ(after->backends[0].id, "cmd:x");
}

TEST(DiskCacheTest, MemosAreKeptBesideTheVerdictsAndCheckedOnRead) {
  TempDir tmp;
  {
    auto cache = OpenDiskCache(tmp.path.string());
    ASSERT_TRUE(cache.ok());
    const std::string odd("with\0nul\xff bytes", 18);
    (*cache)->StoreMemos({{1, "one"}, {0xffffffffffffffffULL, odd}, {3, "three"}});
    auto got = (*cache)->LookupMemos({3, 2, 0xffffffffffffffffULL, 1});
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got[0], "three");
    EXPECT_FALSE(got[1].has_value());
    EXPECT_EQ(got[2], odd);  // byte for byte, the whole key range
    EXPECT_EQ(got[3], "one");
    (*cache)->StoreMemos({{3, "three again"}});  // a key stored again is replaced
  }
  Sql(tmp.File(), "UPDATE memos SET value = CAST('edited' AS BLOB) WHERE key = 1");
  auto cache = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(cache.ok());
  auto got = (*cache)->LookupMemos({1, 3});
  EXPECT_FALSE(got[0].has_value());  // the checksum no longer matches: a miss
  EXPECT_EQ(got[1], "three again");
  // Clearing the cache clears its memos too.
  cache->reset();
  ASSERT_TRUE(ClearDiskCache(tmp.path.string()).ok());
  cache = OpenDiskCache(tmp.path.string());
  EXPECT_FALSE((*cache)->LookupMemos({3})[0].has_value());
}

TEST(DiskCacheTest, ACacheFromBeforeMemosGetsTheTableAndKeepsItsVerdicts) {
  TempDir tmp;
  {
    auto cache = OpenDiskCache(tmp.path.string());
    ASSERT_TRUE(cache.ok());
    (*cache)->Store("b", "1", "abc", Unsupported("kept"));
  }
  Sql(tmp.File(), "DROP TABLE memos");  // as a cache written before memos existed
  Warnings w;
  auto cache = OpenDiskCache(tmp.path.string(), w.Options(/*named=*/true));
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  EXPECT_TRUE(w.lines.empty());
  EXPECT_EQ((*cache)->Lookup("b", "1", "abc")->reason, "kept");
  (*cache)->StoreMemos({{7, "seven"}});
  EXPECT_EQ((*cache)->LookupMemos({7})[0], "seven");
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
        auto many = (*cache)->LookupMany("b", "1", {fp, "none"});
        if (!many[0] || many[0]->reason != "reason " + fp || many[1]) ++bad;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  cache->reset();
  EXPECT_EQ(GetDiskCacheStats(tmp.path.string())->entries, 20);
}

// Several opprobe runs on one folder at once: each writes its own verdicts and the shared ones, reads them all
// back, and every verdict of every run is in the file afterwards.
TEST(DiskCacheTest, ConcurrentProcessesShareOneFolder) {
  TempDir tmp;
  constexpr int kProcesses = 6;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int bad = 0;
      {
        auto cache = OpenDiskCache(tmp.path.string());  // all at once: the first creates it, under its lock
        if (!cache.ok()) ::_exit(1);
        for (int i = 0; i < 150; ++i) {
          std::string shared = "shared" + std::to_string(i % 10);
          std::string own = "p" + std::to_string(p) + "-" + std::to_string(i);
          (*cache)->Store("b", "1", shared, Unsupported("r" + shared));
          (*cache)->Store("b", "1", own, Verdict::Supported());
          auto v = (*cache)->Lookup("b", "1", shared);
          if (!v || v->reason != "r" + shared) ++bad;
          if (!(*cache)->Lookup("b", "1", own)) ++bad;
          if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(60));  // a commit of its own
        }
      }  // closing writes what is still waiting
      ::_exit(bad == 0 ? 0 : 2);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  EXPECT_EQ(GetDiskCacheStats(tmp.path.string())->entries, 10 + kProcesses * 150);
  auto cache = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(cache.ok());
  for (int p = 0; p < kProcesses; ++p) EXPECT_TRUE((*cache)->Lookup("b", "1", "p" + std::to_string(p) + "-149"));
}

TEST(DiskCacheTest, AFileThatIsNotACacheStartsAFreshOneWithOneWarning) {
  TempDir tmp;
  fs::create_directories(tmp.path);
  WriteBytes(tmp.File(), "this is not a database, it is a note\n");
  Warnings w;
  auto cache = OpenDiskCache(tmp.path.string(), w.Options());
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  ASSERT_EQ(w.lines.size(), 1u);
  EXPECT_NE(w.lines[0].find(tmp.File()), std::string::npos) << w.lines[0];
  EXPECT_NE(w.lines[0].find("file is not a database"), std::string::npos) << w.lines[0];
  EXPECT_NE(w.lines[0].find("fresh cache"), std::string::npos) << w.lines[0];
  EXPECT_EQ(w.lines[0].find('\n'), std::string::npos);
  // Set aside, not destroyed.
  std::ifstream aside(tmp.File() + ".damaged");
  std::string kept((std::istreambuf_iterator<char>(aside)), {});
  EXPECT_EQ(kept, "this is not a database, it is a note\n");
  EXPECT_FALSE((*cache)->Lookup("b", "1", "x").has_value());
  (*cache)->Store("b", "1", "x", Verdict::Supported());
  cache->reset();
  EXPECT_EQ(GetDiskCacheStats(tmp.path.string())->entries, 1);
  EXPECT_EQ(w.lines.size(), 1u);
}

TEST(DiskCacheTest, AnotherProgramsDatabaseIsNotACache) {
  TempDir tmp;
  fs::create_directories(tmp.path);
  Sql(tmp.File(), "CREATE TABLE notes(text TEXT); INSERT INTO notes VALUES ('keep me');");
  auto stats = GetDiskCacheStats(tmp.path.string());
  ASSERT_TRUE(stats.ok());
  EXPECT_NE(stats->unusable.find("another program's SQLite database"), std::string::npos) << stats->unusable;
  // Named by the user: refused, one line naming the file, nothing touched.
  auto named = OpenDiskCache(tmp.path.string(), {/*named=*/true, nullptr});
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(named.status().message().rfind(tmp.File() + ": not a usable probe cache (another program's", 0), 0u)
      << named.status().message();
  EXPECT_FALSE(fs::exists(tmp.File() + ".damaged"));
  // The default folder: set aside, and a fresh cache.
  Warnings w;
  auto cache = OpenDiskCache(tmp.path.string(), w.Options());
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ(w.lines.size(), 1u);
  EXPECT_TRUE(fs::exists(tmp.File() + ".damaged"));
  (*cache)->Store("b", "1", "x", Verdict::Supported());
  EXPECT_TRUE((*cache)->Lookup("b", "1", "x").has_value());
}

TEST(DiskCacheTest, ANamedFolderWithADamagedFileIsRefusedInOneLine) {
  TempDir tmp;
  fs::create_directories(tmp.path);
  std::string junk = "SQLite format 3";
  junk += std::string("\0\xff\xfe\n\x01", 5);
  junk += std::string(200, 'x');
  WriteBytes(tmp.File(), junk);
  auto named = OpenDiskCache(tmp.path.string(), {/*named=*/true, nullptr});
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.status().code(), ErrorCode::kInvalidInput);
  const std::string& m = named.status().message();
  EXPECT_EQ(m.rfind(tmp.File() + ": not a usable probe cache (", 0), 0u) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_EQ(m.find('\xff'), std::string::npos);       // no bytes of the file in the message
  EXPECT_EQ(fs::file_size(tmp.File()), junk.size());  // left as it was
  // Clearing it removes the file and says why.
  auto cleared = ClearDiskCache(tmp.path.string());
  ASSERT_TRUE(cleared.ok()) << cleared.status().message();
  EXPECT_EQ(cleared->removed_file, tmp.File());
  EXPECT_FALSE(cleared->why.empty());
  EXPECT_FALSE(fs::exists(tmp.File()));
  EXPECT_TRUE(OpenDiskCache(tmp.path.string(), {/*named=*/true, nullptr}).ok());
}

// Damage that the header does not show (a bad page) is found by the first read that reaches it: one warning, the
// file set aside, and the run goes on with a fresh cache.
TEST(DiskCacheTest, ADamagedPageFoundWhileReadingStartsAFreshCache) {
  TempDir tmp;
  std::vector<std::string> fps;
  {
    auto cache = OpenDiskCache(tmp.path.string());
    ASSERT_TRUE(cache.ok());
    for (int i = 0; i < 3000; ++i) {
      fps.push_back("fingerprint-" + std::to_string(i));
      (*cache)->Store("b", "1", fps.back(), Unsupported(std::string(100, 'r')));
    }
  }
  auto size = fs::file_size(tmp.File());
  ASSERT_GT(size, 40u * 4096);
  {
    std::fstream f(tmp.File(), std::ios::in | std::ios::out | std::ios::binary);
    for (uint64_t page = 2; page < size / 4096; ++page) {  // every page but the first two: the tree's nodes
      f.seekp(static_cast<std::streamoff>(page * 4096));
      f << std::string(64, '\x5a');
    }
  }
  Warnings w;
  auto cache = OpenDiskCache(tmp.path.string(), w.Options(/*named=*/true));
  ASSERT_TRUE(cache.ok()) << cache.status().message();  // the header is fine
  auto found = (*cache)->LookupMany("b", "1", fps);
  int hits = 0;
  for (const auto& v : found) hits += v.has_value();
  EXPECT_LT(hits, 3000);
  ASSERT_EQ(w.lines.size(), 1u);
  EXPECT_NE(w.lines[0].find("database disk image is malformed"), std::string::npos) << w.lines[0];
  EXPECT_TRUE(fs::exists(tmp.File() + ".damaged"));
  (*cache)->Store("b", "1", "new", Verdict::Supported());
  EXPECT_TRUE((*cache)->Lookup("b", "1", "new").has_value());
  cache->reset();
  auto stats = GetDiskCacheStats(tmp.path.string());
  EXPECT_TRUE(stats->unusable.empty()) << stats->unusable;
  EXPECT_EQ(stats->entries, 1);
  EXPECT_EQ(w.lines.size(), 1u);
}

TEST(DiskCacheTest, ANewerFormatIsLeftAlone) {
  TempDir tmp;
  {
    auto cache = OpenDiskCache(tmp.path.string());
    ASSERT_TRUE(cache.ok());
    (*cache)->Store("b", "1", "x", Verdict::Supported());
  }
  Sql(tmp.File(), "PRAGMA user_version = 99");
  auto named = OpenDiskCache(tmp.path.string(), {/*named=*/true, nullptr});
  ASSERT_FALSE(named.ok());
  EXPECT_NE(named.status().message().find("newer opprobe (cache format 99"), std::string::npos);
  Warnings w;
  auto cache = OpenDiskCache(tmp.path.string(), w.Options());
  ASSERT_TRUE(cache.ok());
  ASSERT_EQ(w.lines.size(), 1u);
  EXPECT_NE(w.lines[0].find("without the local cache"), std::string::npos) << w.lines[0];
  EXPECT_FALSE((*cache)->Lookup("b", "1", "x").has_value());
  (*cache)->Store("b", "1", "y", Verdict::Supported());
  cache->reset();
  EXPECT_FALSE(fs::exists(tmp.File() + ".damaged"));
  EXPECT_NE(GetDiskCacheStats(tmp.path.string())->unusable.find("newer"), std::string::npos);
  EXPECT_FALSE(ClearDiskCache(tmp.path.string()).ok());
  Sql(tmp.File(), "PRAGMA user_version = 1");
  auto back = OpenDiskCache(tmp.path.string());
  EXPECT_TRUE((*back)->Lookup("b", "1", "x").has_value());
  EXPECT_FALSE((*back)->Lookup("b", "1", "y").has_value());
}

// The layout before the database, written as that version wrote it: <dir>/v1/<backend hash>/<fingerprint>.json.
void WriteOldEntry(const fs::path& dir, const std::string& id, const std::string& version, const std::string& fp,
                   const std::string& kind, const std::string& reason) {
  fs::path bdir = dir / "v1" / BackendKeyHash(id, version);
  fs::create_directories(bdir);
  nlohmann::json b = {{"backend_id", id}, {"backend_version", version}};
  std::ofstream(bdir / "backend.json") << b.dump(1);
  nlohmann::json e = {{"backend_id", id},  {"backend_version", version}, {"fingerprint", fp},
                      {"verdict", kind},   {"reason", reason},           {"seconds", 2.5},
                      {"output_tail", "t"}};
  std::ofstream(bdir / (SafeFingerprint(fp) + ".json")) << e.dump(1);
}

TEST(DiskCacheTest, TheOldLayoutIsMigratedOnce) {
  TempDir tmp;
  WriteOldEntry(tmp.path, "cmd:a", "1", "f1", "unsupported", "no c64");
  WriteOldEntry(tmp.path, "cmd:a", "1", "f2", "supported", "");
  WriteOldEntry(tmp.path, "cmd:a", "1", "../odd", "supported", "");  // stored under a hashed name
  WriteOldEntry(tmp.path, "pjrt:p", "2", "f1", "supported", "");
  WriteOldEntry(tmp.path, "cmd:a", "1", "f3", "error", "timed out");  // never a cached answer
  fs::path bdir = tmp.path / "v1" / BackendKeyHash("cmd:a", "1");
  std::ofstream(bdir / "f4.json") << "{ not json";
  std::ofstream(bdir / "notes.txt") << "someone else's file";
  auto stats = GetDiskCacheStats(tmp.path.string());
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->old_layout_entries, 6);
  EXPECT_EQ(stats->entries, 0);

  Warnings w;
  auto cache = OpenDiskCache(tmp.path.string(), w.Options());
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  ASSERT_EQ(w.lines.size(), 1u);
  EXPECT_NE(w.lines[0].find("moved 4 cached verdicts"), std::string::npos) << w.lines[0];
  auto v = (*cache)->Lookup("cmd:a", "1", "f1");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->reason, "no c64");
  EXPECT_EQ(v->output_tail, "t");
  EXPECT_DOUBLE_EQ(v->seconds, 2.5);
  EXPECT_TRUE((*cache)->Lookup("cmd:a", "1", "f2").has_value());
  EXPECT_TRUE((*cache)->Lookup("cmd:a", "1", "../odd").has_value());
  EXPECT_TRUE((*cache)->Lookup("pjrt:p", "2", "f1").has_value());
  EXPECT_FALSE((*cache)->Lookup("cmd:a", "1", "f3").has_value());
  // The files it wrote are gone; someone else's file stays.
  EXPECT_FALSE(fs::exists(bdir / "f1.json"));
  EXPECT_FALSE(fs::exists(bdir / "f4.json"));
  EXPECT_FALSE(fs::exists(tmp.path / "v1" / BackendKeyHash("pjrt:p", "2")));
  EXPECT_TRUE(fs::exists(bdir / "notes.txt"));
  cache->reset();
  auto after = GetDiskCacheStats(tmp.path.string());
  EXPECT_EQ(after->old_layout_entries, 0);
  EXPECT_EQ(after->entries, 4);
  // Once: the next open has nothing to move and says nothing.
  Warnings again;
  ASSERT_TRUE(OpenDiskCache(tmp.path.string(), again.Options()).ok());
  EXPECT_TRUE(again.lines.empty());
}

TEST(DiskCacheTest, VerdictsThatComeFastAreWrittenWhenTheCacheCloses) {
  TempDir tmp;
  auto writer = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(writer.ok());
  for (int i = 0; i < 100; ++i) (*writer)->Store("b", "1", "f" + std::to_string(i), Verdict::Supported());
  auto reader = OpenDiskCache(tmp.path.string());
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE((*reader)->Lookup("b", "1", "f0").has_value());  // the first is committed at once
  writer->reset();
  for (int i = 0; i < 100; ++i) EXPECT_TRUE((*reader)->Lookup("b", "1", "f" + std::to_string(i))) << i;
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
  if (home && *home) { EXPECT_EQ(DefaultCacheDir(), std::string(home) + "/.cache/opprobe"); }
  if (old_xdg) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

}  // namespace
}  // namespace opprobe::compiler_probe
