// Shared probe caches against real servers (redis-server, nginx with WebDAV) started on loopback ports
// chosen at run time, and `--shard K/N`. The `cmd` backend runs the fake compiler with --log, which
// appends one line per probe, so the tests count how often each unit was probed across processes.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "compiler_probe/remote/entry.h"
#include "compiler_probe/remote/shared_cache.h"
#include "compiler_probe/remote/store.h"
#include "testing/run_binary.h"
#include "testing/servers.h"
#include "testing/temp_dir_test.h"
#include "tests/reports/json_schema.h"

namespace opprobe::compiler_probe {
namespace {

using nlohmann::json;
using opprobe::testing::ReadWholeFile;
using opprobe::testing::TestServer;

constexpr const char* kModel = "samples/traces/supported.json";

struct Outcome {
  int code = -1;
  std::string out, err;
  json report;
};

class RemoteCacheTest : public opprobe::testing::TempDirTest {
 protected:
  // The same template (and so the same backend id) for every run of a test.
  std::string Backend(double sleep = 0.05) const {
    return "cmd:" OPPROBE_FAKE_COMPILER " --sleep=" + std::to_string(sleep) + " --log=" + Path("probes.log") +
           " --reject-opcode=divide {hlo_txt}";
  }
  std::vector<std::string> Argv(const std::string& name, const std::string& backend, std::vector<std::string> extra) {
    std::vector<std::string> argv{OPPROBE_BIN,     "analyze", kModel, "--backend",         backend,
                                  "--no-progress", "-q",      "-o",   Path(name + ".json")};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
  // Each run gets its own local cache folder (a fresh CI runner) unless `local` names a shared one.
  pid_t Start(const std::string& name, const std::string& backend, std::vector<std::string> extra,
              std::map<std::string, std::string> env = {}) {
    env.emplace("XDG_CACHE_HOME", Path(name + "-local"));
    return opprobe::testing::Spawn(Argv(name, backend, std::move(extra)), env, Path(name + ".out"),
                                   Path(name + ".err"));
  }
  Outcome Finish(const std::string& name, pid_t pid) {
    Outcome o;
    o.code = opprobe::testing::WaitExit(pid);
    o.out = ReadWholeFile(Path(name + ".out"));
    o.err = ReadWholeFile(Path(name + ".err"));
    o.report = json::parse(ReadWholeFile(Path(name + ".json")), nullptr, false);
    return o;
  }
  Outcome Run(const std::string& name, const std::string& backend, std::vector<std::string> extra,
              std::map<std::string, std::string> env = {}) {
    return Finish(name, Start(name, backend, std::move(extra), std::move(env)));
  }
  // Waits (at most 30 s) until the probe log holds `n` more lines than `before`: a run is that far into probing.
  // Event-driven, where a fixed sleep would be too short on a slow machine and too long on a fast one.
  size_t ProbeLines() const {
    const std::string log = ReadWholeFile(Path("probes.log"));
    return static_cast<size_t>(std::count(log.begin(), log.end(), '\n'));
  }
  bool WaitForProbes(size_t before, size_t n) const {
    for (int i = 0; i < 3000; ++i) {
      if (ProbeLines() >= before + n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  // Probe-log lines (one per probe) per unit.
  std::map<std::string, int> ProbeCounts() const {
    std::map<std::string, int> counts;
    std::istringstream in(ReadWholeFile(Path("probes.log")));
    std::string hash, opcode;
    while (in >> hash >> opcode) ++counts[hash];
    return counts;
  }
  int64_t TotalProbes() const {
    int64_t n = 0;
    for (const auto& [h, c] : ProbeCounts()) n += c;
    return n;
  }
  static json Comparable(json report) {
    report.erase("summary");  // times and cache counters differ between runs
    return report;
  }
  static int CountWarnings(const std::string& err) {
    int n = 0;
    for (size_t p = err.find("opprobe: warning:"); p != std::string::npos; p = err.find("opprobe: warning:", p + 1))
      ++n;
    return n;
  }
  std::string Stats(const std::string& url, std::map<std::string, std::string> env = {}) {
    pid_t pid = opprobe::testing::Spawn({OPPROBE_BIN, "cache", "stats", "--cache", url}, env, Path("stats.out"),
                                        Path("stats.err"));
    EXPECT_EQ(opprobe::testing::WaitExit(pid), 0) << ReadWholeFile(Path("stats.err"));
    return ReadWholeFile(Path("stats.out"));
  }
};

// Two runs at once against one server: identical reports, every unit probed once, and a third run on a
// fresh machine probes nothing. Then `cache stats` shows the server's entries and hits.
TEST_F(RemoteCacheTest, RedisTwoRunsAtOnceProbeEachUnitOnce) {
  TestServer redis;
  redis.StartRedis(dir_ / "redis");
  std::string backend = Backend(0.1);
  pid_t a = Start("a", backend, {"--cache", redis.url(), "-j", "2"});
  pid_t b = Start("b", backend, {"--cache", redis.url(), "-j", "2"});
  Outcome ra = Finish("a", a), rb = Finish("b", b);
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  EXPECT_EQ(CountWarnings(ra.err) + CountWarnings(rb.err), 0) << ra.err << rb.err;
  EXPECT_EQ(Comparable(ra.report), Comparable(rb.report));
  int64_t units = ra.report["summary"]["unique_probes"];
  ASSERT_GT(units, 5);
  auto counts = ProbeCounts();
  EXPECT_EQ(static_cast<int64_t>(counts.size()), units);
  for (const auto& [unit, n] : counts) EXPECT_EQ(n, 1) << "unit " << unit << " probed " << n << " times";
  Outcome rc = Run("c", backend, {"--cache", redis.url()});
  ASSERT_EQ(rc.code, 0) << rc.err;
  EXPECT_EQ(rc.report["summary"]["probes_run"], 0);
  EXPECT_EQ(rc.report["summary"]["cache_hits"], units);
  EXPECT_EQ(Comparable(rc.report), Comparable(ra.report));
  EXPECT_EQ(TotalProbes(), units);

  std::string stats = Stats(redis.url());
  EXPECT_NE(stats.find("entries: " + std::to_string(units) + " ("), std::string::npos) << stats;
  EXPECT_NE(stats.find(backend), std::string::npos) << stats;
  EXPECT_NE(stats.find("hits: "), std::string::npos) << stats;
  EXPECT_EQ(stats.find("hits: 0,"), std::string::npos) << stats;

  pid_t clear = opprobe::testing::Spawn({OPPROBE_BIN, "cache", "clear", "--cache", redis.url()}, {}, Path("clear.out"));
  EXPECT_EQ(opprobe::testing::WaitExit(clear), 0);
  EXPECT_NE(ReadWholeFile(Path("clear.out")).find("removed " + std::to_string(units) + " entries"), std::string::npos);
  stats = Stats(redis.url());
  EXPECT_NE(stats.find("entries: 0 (0 B)\nhits: 0,"), std::string::npos) << stats;
}

TEST_F(RemoteCacheTest, HttpTwoRunsAtOnceShareVerdicts) {
  TestServer nginx;
  nginx.StartNginx(dir_ / "nginx");
  std::string backend = Backend(0.1);
  pid_t a = Start("a", backend, {"--cache", nginx.url(), "-j", "2"});
  pid_t b = Start("b", backend, {"--cache", nginx.url(), "-j", "2"});
  Outcome ra = Finish("a", a), rb = Finish("b", b);
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  EXPECT_EQ(CountWarnings(ra.err) + CountWarnings(rb.err), 0) << ra.err << rb.err;
  EXPECT_EQ(Comparable(ra.report), Comparable(rb.report));
  int64_t units = ra.report["summary"]["unique_probes"];
  auto counts = ProbeCounts();
  EXPECT_EQ(static_cast<int64_t>(counts.size()), units);
  // HTTP leases are read-write-read without server atomics: two runs that race for the same unit within
  // a request's time may both probe it. Most units are probed once.
  int64_t twice = 0;
  for (const auto& [unit, n] : counts) {
    EXPECT_LE(n, 2) << unit;
    twice += n > 1;
  }
  EXPECT_LE(twice, std::max<int64_t>(1, units / 5));

  Outcome rc = Run("c", backend, {"--cache", nginx.url()});
  ASSERT_EQ(rc.code, 0) << rc.err;
  EXPECT_EQ(rc.report["summary"]["probes_run"], 0);
  EXPECT_EQ(Comparable(rc.report), Comparable(ra.report));
  std::string stats = Stats(nginx.url());
  EXPECT_NE(stats.find("entries: " + std::to_string(units) + " ("), std::string::npos) << stats;
  EXPECT_EQ(stats.find("hits: 0,"), std::string::npos) << stats;

  pid_t clear = opprobe::testing::Spawn({OPPROBE_BIN, "cache", "clear", "--cache", nginx.url()}, {}, Path("clear.out"));
  EXPECT_EQ(opprobe::testing::WaitExit(clear), 0);
  EXPECT_NE(ReadWholeFile(Path("clear.out")).find("removed " + std::to_string(units) + " entries"), std::string::npos);
  stats = Stats(nginx.url());
  EXPECT_NE(stats.find("entries: 0 (0 B)\nhits: 0,"), std::string::npos) << stats;
}

// The server dies mid-run: one warning, the run completes with the local cache, same report.
TEST_F(RemoteCacheTest, ServerKilledMidRunStillCompletes) {
  std::string backend = Backend(0.15);
  Outcome ref = Run("ref", backend, {"--no-cache", "-j", "1"});
  ASSERT_EQ(ref.code, 0) << ref.err;
  TestServer redis;
  redis.StartRedis(dir_ / "redis");
  size_t before = ProbeLines();
  pid_t p = Start("a", backend, {"--cache", redis.url(), "-j", "1"});
  EXPECT_TRUE(WaitForProbes(before, 3));  // mid-run: three units probed, the others not yet
  redis.Kill();
  Outcome ra = Finish("a", p);
  ASSERT_EQ(ra.code, 0) << ra.err;
  EXPECT_EQ(CountWarnings(ra.err), 1) << ra.err;
  EXPECT_NE(ra.err.find("going on with the local cache"), std::string::npos) << ra.err;
  EXPECT_EQ(Comparable(ra.report), Comparable(ref.report));
  EXPECT_EQ(ra.report["summary"]["probes_run"], ra.report["summary"]["unique_probes"]);

  TestServer nginx;
  nginx.StartNginx(dir_ / "nginx");
  before = ProbeLines();
  p = Start("b", backend, {"--cache", nginx.url(), "-j", "1"});
  EXPECT_TRUE(WaitForProbes(before, 3));
  nginx.Kill();
  Outcome rb = Finish("b", p);
  ASSERT_EQ(rb.code, 0) << rb.err;
  EXPECT_EQ(CountWarnings(rb.err), 1) << rb.err;
  EXPECT_EQ(Comparable(rb.report), Comparable(ref.report));

  // A server that was never there, and one that accepts connections but never answers (bounded wait).
  Outcome rc =
      Run("c", backend, {"--cache", "redis://127.0.0.1:" + std::to_string(opprobe::testing::FreeLoopbackPort())});
  ASSERT_EQ(rc.code, 0) << rc.err;
  EXPECT_EQ(CountWarnings(rc.err), 1) << rc.err;
  EXPECT_EQ(Comparable(rc.report), Comparable(ref.report));
  int silent = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(silent, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(silent, 16), 0);
  socklen_t len = sizeof addr;
  getsockname(silent, reinterpret_cast<sockaddr*>(&addr), &len);
  Outcome rd = Run("d", backend, {"--cache", "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/c"},
                   {{"OPPROBE_CACHE_TIMEOUT", "0.5"}});
  close(silent);
  ASSERT_EQ(rd.code, 0) << rd.err;
  EXPECT_EQ(CountWarnings(rd.err), 1) << rd.err;
  EXPECT_EQ(Comparable(rd.report), Comparable(ref.report));
}

// A batch lookup answers each key as Get does: on Redis in pipelines (more keys than one pipeline holds, present,
// missing and repeated ones), on HTTP one at a time; against a server that is gone, every key is a fault at once.
TEST_F(RemoteCacheTest, GetManyAnswersEachKeyAsGetDoes) {
  auto check = [](RemoteStore& store, size_t n) {
    std::vector<std::string> keys;
    for (size_t i = 0; i < n; ++i) {
      keys.push_back("t/k" + std::to_string(i));
      if (i % 3 != 0) { ASSERT_EQ(store.Put(keys.back(), "value " + std::to_string(i)).code, StoreReply::Code::kOk); }
    }
    keys.push_back("t/k1");  // asked twice
    std::vector<StoreReply> many = store.GetMany(keys);
    ASSERT_EQ(many.size(), keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      StoreReply one = store.Get(keys[i]);
      EXPECT_EQ(many[i].code, one.code) << keys[i];
      EXPECT_EQ(many[i].value, one.value) << keys[i];
    }
    EXPECT_EQ(many[1].value, "value 1");
    EXPECT_EQ(many[3].code, StoreReply::Code::kMissing);
  };
  TestServer redis;
  redis.StartRedis(dir_ / "redis");
  auto rs = OpenRemoteStore(redis.url());
  ASSERT_TRUE(rs.ok()) << rs.status().message();
  check(**rs, 600);
  redis.Kill();
  std::vector<StoreReply> gone = (*rs)->GetMany({"t/k1", "t/k2", "t/k3"});
  ASSERT_EQ(gone.size(), 3u);
  for (const StoreReply& r : gone) EXPECT_EQ(r.code, StoreReply::Code::kFault);

  TestServer nginx;
  nginx.StartNginx(dir_ / "nginx");
  auto hs = OpenRemoteStore(nginx.url());
  ASSERT_TRUE(hs.ok()) << hs.status().message();
  check(**hs, 12);
}

// Corrupt, truncated and foreign entries are misses: probed again, and overwritten with good ones.
TEST_F(RemoteCacheTest, CorruptEntriesAreRejectedAndOverwritten) {
  TestServer redis;
  redis.StartRedis(dir_ / "redis");
  std::string backend = Backend(0.0);
  Outcome first = Run("first", backend, {"--cache", redis.url()});
  ASSERT_EQ(first.code, 0) << first.err;
  int64_t units = first.report["summary"]["unique_probes"];
  ASSERT_GE(units, 4);

  auto store = OpenRemoteStore(redis.url());
  ASSERT_TRUE(store.ok());
  // The entries as the server holds them (keys e/<backend hash>/<fingerprint>).
  std::vector<std::string> fps;
  for (const auto& p : first.report.value("instructions", json::array()))
    fps.push_back(p["fingerprint"].get<std::string>());
  if (fps.empty()) {
    Outcome v0 = Run("v0", backend, {"--cache", redis.url(), "--verbosity", "0"});
    for (const auto& p : v0.report["instructions"]) fps.push_back(p["fingerprint"].get<std::string>());
  }
  ASSERT_GE(fps.size(), 4u);
  const std::string backend_id = first.report["backend"].get<std::string>();
  const std::string backend_version = first.report["backend_version"].get<std::string>();
  const std::string hash = BackendKeyHash(backend_id, backend_version);
  auto key = [&](const std::string& fp) { return "e/" + hash + "/" + SafeFingerprint(fp); };
  auto good = (*store)->Get(key(fps[0]));
  ASSERT_TRUE(good.ok());
  std::string flipped = good.value;
  flipped[flipped.size() - 3] ^= 0x01;  // checksum no longer matches
  ASSERT_TRUE((*store)->Put(key(fps[0]), flipped).ok());
  ASSERT_TRUE((*store)->Put(key(fps[1]), good.value.substr(0, good.value.size() / 2)).ok());  // truncated
  auto other = (*store)->Get(key(fps[3]));
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*store)->Put(key(fps[2]), other.value).ok());  // another unit's entry
  ASSERT_TRUE((*store)->Put(key(fps[3]), "not an entry").ok());

  int64_t before = TotalProbes();
  Outcome second = Run("second", backend, {"--cache", redis.url()});
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(second.report["summary"]["probes_run"], 4);
  EXPECT_EQ(TotalProbes() - before, 4);
  EXPECT_EQ(Comparable(second.report), Comparable(first.report));
  for (int i = 0; i < 4; ++i) {
    auto e = (*store)->Get(key(fps[i]));
    ASSERT_TRUE(e.ok());
    EXPECT_TRUE(DecodeCacheEntry(e.value, {backend_id, backend_version, fps[i]}).has_value())
        << "entry " << i << " was not overwritten";
  }
  Outcome third = Run("third", backend, {"--cache", redis.url()});
  EXPECT_EQ(third.report["summary"]["probes_run"], 0);
}

// requirepass: the password comes from the environment (or a file), never from the command line, and is
// never printed; without it, one warning and the local cache.
TEST_F(RemoteCacheTest, PasswordProtectedRedis) {
  const std::string secret = "s3cret-Pa55-for-test";
  TestServer redis;
  redis.StartRedis(dir_ / "redis", secret);
  std::string backend = Backend(0.0);
  Outcome ok = Run("ok", backend, {"--cache", redis.url()}, {{"OPPROBE_CACHE_PASSWORD", secret}});
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(CountWarnings(ok.err), 0) << ok.err;
  int64_t units = ok.report["summary"]["unique_probes"];
  std::ofstream(Path("pw.txt")) << secret << "\n";
  std::string stats = Stats(redis.url(), {{"OPPROBE_CACHE_PASSWORD_FILE", Path("pw.txt")}});
  EXPECT_NE(stats.find("entries: " + std::to_string(units) + " ("), std::string::npos) << stats;
  Outcome warm = Run("warm", backend, {"--cache", redis.url()}, {{"OPPROBE_CACHE_PASSWORD_FILE", Path("pw.txt")}});
  EXPECT_EQ(warm.report["summary"]["probes_run"], 0) << warm.err;

  Outcome denied = Run("denied", backend, {"--cache", redis.url()}, {{"OPPROBE_CACHE_PASSWORD", "wrong"}});
  ASSERT_EQ(denied.code, 0) << denied.err;
  EXPECT_EQ(CountWarnings(denied.err), 1) << denied.err;
  EXPECT_EQ(Comparable(denied.report), Comparable(ok.report));
  Outcome none = Run("none", backend, {"--cache", redis.url()});
  EXPECT_EQ(CountWarnings(none.err), 1) << none.err;
  for (const auto* o : {&ok, &warm, &denied, &none}) {
    EXPECT_EQ(o->out.find(secret), std::string::npos);
    EXPECT_EQ(o->err.find(secret), std::string::npos);
  }
  // A password in the URL is refused before anything runs.
  Outcome in_url =
      Run("in_url", backend, {"--cache", "redis://user:" + secret + "@127.0.0.1:" + std::to_string(redis.port())});
  EXPECT_EQ(in_url.code, 2);
  EXPECT_EQ(in_url.err.find(secret), std::string::npos) << in_url.err;
  EXPECT_NE(in_url.err.find("OPPROBE_CACHE_PASSWORD"), std::string::npos) << in_url.err;
}

// --shard K/N: each shard probes its own units and writes a partial result (gates fail on it); a final
// run on a fresh machine probes nothing and writes the full report.
TEST_F(RemoteCacheTest, ShardsThenOneFullReport) {
  TestServer redis;
  redis.StartRedis(dir_ / "redis");
  std::string backend = Backend(0.0);
  Outcome ref = Run("ref", backend, {"--no-cache"});
  ASSERT_EQ(ref.code, 0) << ref.err;
  int64_t units = ref.report["summary"]["unique_probes"];
  int64_t before = TotalProbes();
  int64_t skipped = 0;
  for (int k = 1; k <= 3; ++k) {
    std::string name = "shard" + std::to_string(k);
    Outcome s =
        Run(name, backend,
            {"--cache", redis.url(), "--shard", std::to_string(k) + "/3", "--fail-under", "0", "--verbosity", "0"});
    EXPECT_EQ(s.code, 1) << "a gate must not pass on a partial result: " << s.err;
    EXPECT_NE(s.err.find("partial"), std::string::npos) << s.err;
    ASSERT_TRUE(s.report["summary"].contains("shard")) << s.report["summary"].dump();
    EXPECT_EQ(s.report["summary"]["shard"]["index"], k);
    EXPECT_EQ(s.report["summary"]["shard"]["count"], 3);
    EXPECT_EQ(s.report["summary"]["shard"]["partial"], true);
    skipped += s.report["summary"]["shard"]["skipped"].get<int64_t>();
    // The other shards' units are not probed: a state of their own, not the backend's error.
    int64_t not_probed = 0;
    for (const auto& p : s.report["instructions"]) {
      EXPECT_NE(p["verdict"], "error") << p.dump();
      if (p["verdict"] == "not_probed") {
        ++not_probed;
        EXPECT_EQ(p["reason"].get<std::string>().rfind("not probed: shard " + std::to_string(k) + " of 3", 0), 0u)
            << p.dump();
      }
    }
    EXPECT_EQ(not_probed, s.report["summary"]["shard"]["skipped"].get<int64_t>());
    opprobe::testing::JsonSchemaValidator schema(json::parse(ReadWholeFile("schemas/report.schema.json")));
    auto errors = schema.Validate(s.report);
    EXPECT_TRUE(errors.empty()) << errors.front();
  }
  EXPECT_EQ(TotalProbes() - before, units) << "each unit probed by exactly one shard";
  EXPECT_GT(skipped, 0);
  Outcome full = Run("full", backend, {"--cache", redis.url(), "--fail-under", "0"});
  ASSERT_EQ(full.code, 0) << full.err;
  EXPECT_EQ(full.report["summary"]["probes_run"], 0);
  EXPECT_FALSE(full.report["summary"].contains("shard"));
  EXPECT_EQ(Comparable(full.report), Comparable(ref.report));
  EXPECT_EQ(TotalProbes() - before, units);

  Outcome bad = Run("bad", backend, {"--cache", redis.url(), "--shard", "4/3"});
  EXPECT_EQ(bad.code, 2);
}

TEST(CacheEntry, RoundTripAndRejections) {
  CacheKey key{"cmd:x", "1.0", "abc123"};
  Verdict v = Verdict::Unsupported("no divide");
  v.seconds = 0.25;
  v.output_tail = "error: no";
  std::string e = EncodeCacheEntry(key, v);
  auto back = DecodeCacheEntry(e, key);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->kind, Verdict::Kind::kUnsupported);
  EXPECT_EQ(back->reason, "no divide");
  EXPECT_EQ(back->output_tail, "error: no");
  EXPECT_EQ(back->interp, Verdict::Interp::kNone);
  // The comparison with interp travels as a field of its own.
  Verdict differ = v;
  differ.interp = Verdict::Interp::kDiffer;
  EXPECT_EQ(DecodeCacheEntry(EncodeCacheEntry(key, differ), key)->interp, Verdict::Interp::kDiffer);
  Verdict agree = Verdict::Supported();
  agree.interp = Verdict::Interp::kAgree;
  EXPECT_EQ(DecodeCacheEntry(EncodeCacheEntry(key, agree), key)->interp, Verdict::Interp::kAgree);
  EXPECT_FALSE(DecodeCacheEntry(e.substr(0, e.size() - 1), key));
  EXPECT_FALSE(DecodeCacheEntry(e + " ", key));
  EXPECT_FALSE(DecodeCacheEntry(e, {"cmd:x", "1.1", "abc123"}));
  EXPECT_FALSE(DecodeCacheEntry(e, {"cmd:y", "1.0", "abc123"}));
  EXPECT_FALSE(DecodeCacheEntry(e, {"cmd:x", "1.0", "abc124"}));
  EXPECT_FALSE(DecodeCacheEntry("", key));
  std::string other_format = e;
  other_format.replace(other_format.find(" 1 "), 3, " 2 ");
  EXPECT_FALSE(DecodeCacheEntry(other_format, key));
}

TEST(Shard, ParseAndSplit) {
  EXPECT_TRUE(ParseShard("1/1").ok());
  EXPECT_EQ(ParseShard("3/4")->index, 3);
  for (const char* bad : {"0/4", "5/4", "4", "/4", "1/", "a/b", "1/0", "-1/2", "1/99999"})
    EXPECT_FALSE(ParseShard(bad).ok()) << bad;
  std::map<int, int> per;
  for (int i = 0; i < 400; ++i) ++per[ShardOf("fp" + std::to_string(i), 4)];
  EXPECT_EQ(per.size(), 4u);
  for (auto [k, n] : per) EXPECT_GT(n, 50) << k;
}

TEST(RemoteStoreUrl, Validation) {
  EXPECT_TRUE(IsRemoteCacheUrl("redis://h:1"));
  EXPECT_TRUE(IsRemoteCacheUrl("https://h/x"));
  EXPECT_FALSE(IsRemoteCacheUrl("/tmp/cache"));
  EXPECT_TRUE(OpenRemoteStore("redis://127.0.0.1:6379/2").ok());
  EXPECT_FALSE(OpenRemoteStore("redis://127.0.0.1:99999").ok());
  EXPECT_FALSE(OpenRemoteStore("redis://127.0.0.1:6379/x").ok());
  EXPECT_FALSE(OpenRemoteStore("redis://:pw@127.0.0.1:6379").ok());
  EXPECT_FALSE(OpenRemoteStore("http://u:pw@h/x").ok());
  EXPECT_FALSE(OpenRemoteStore("http://h/x y").ok());
  EXPECT_EQ((*OpenRemoteStore("http://u@h:8080/x/"))->Where(), "http://u@h:8080/x");
}

}  // namespace
}  // namespace opprobe::compiler_probe
