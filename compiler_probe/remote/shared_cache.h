// A probe cache for a fleet of runs: the local disk cache in front of a remote store (Redis, HTTP), and
// a Backend wrapper that splits probing across runs (`--shard K/N`) and lets concurrent runs probe each
// unit once per server (a lease per unit: one run probes, the others wait for its verdict).
//
// The remote tier can only make a run faster, never fail it: the first fault (server down, slow past
// the timeout, gone mid-run, answering nonsense) prints one warning and the run goes on with the local
// cache alone; a refused write stops the writes and keeps the reads. A remote entry that does not decode
// (corrupt, truncated, another key or format) is a miss, and the fresh verdict overwrites it. Error
// verdicts are never stored.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "compiler_probe/backend.h"
#include "compiler_probe/cache.h"
#include "compiler_probe/remote/entry.h"
#include "compiler_probe/remote/store.h"

namespace opprobe::compiler_probe {

using WarnFn = std::function<void(const std::string&)>;

class SharedProbeCache : public ProbeCache {
 public:
  // `local` may be null (remote only). `warn` gets at most one line per run.
  SharedProbeCache(std::unique_ptr<ProbeCache> local, std::unique_ptr<RemoteStore> remote, WarnFn warn);
  // Adds this run's hit/miss/store counts to the server's totals.
  ~SharedProbeCache() override;

  std::optional<Verdict> Lookup(const std::string& backend_id, const std::string& backend_version,
                                const std::string& fingerprint) override;
  void Store(const std::string& backend_id, const std::string& backend_version, const std::string& fingerprint,
             const Verdict& verdict) override;
  std::vector<std::optional<Verdict>> LookupMany(const std::string& backend_id, const std::string& backend_version,
                                                 const std::vector<std::string>& fingerprints) override;

  // Probes `key` through `probe` unless another run holds the unit's lease; then waits (up to about
  // `lease_seconds`) for that run's verdict. With the server unusable, just probes.
  Verdict ProbeOnce(const CacheKey& key, double lease_seconds, const std::function<Verdict()>& probe);

  bool remote_usable() const { return !down_; }
  int64_t remote_hits() const { return hits_; }

 private:
  std::optional<Verdict> RemoteGet(const CacheKey& key);
  // The server's reply for `key` (stored under `entry_key`) as a verdict: none for a miss, a bad entry or a fault
  // (which Check reports).
  std::optional<Verdict> FromReply(const CacheKey& key, const std::string& entry_key, const StoreReply& r);
  // A local miss answered by the server or not: counted as a hit (and stored locally) or a miss.
  std::optional<Verdict> Counted(const CacheKey& key, std::optional<Verdict> v);
  // A local miss: the server's verdict (also stored locally), counted as a hit or miss.
  std::optional<Verdict> LookupRemote(const std::string& backend_id, const std::string& backend_version,
                                      const std::string& fingerprint);
  void RemotePut(const CacheKey& key, const Verdict& v);
  // Returns false (and disables the remote tier, warning once) for a fault.
  bool Check(const StoreReply& r, const char* what);

  std::unique_ptr<ProbeCache> local_;
  std::unique_ptr<RemoteStore> remote_;
  WarnFn warn_;
  std::atomic<bool> down_{false};
  std::atomic<bool> writes_refused_{false};
  std::atomic<bool> warned_{false};
  std::atomic<int64_t> hits_{0}, misses_{0}, stores_{0};
  std::mutex mu_;
  std::set<std::string> on_server_;         // entries this run read from or wrote to the server
  std::set<std::string> backends_written_;  // `b/<hash>` records written this run
};

// `--shard K/N`: shard `index` (1-based) of `count`; count 0 is no sharding.
struct ShardSpec {
  int index = 0;
  int count = 0;
};
// Which shard (1-based) of `count` a fingerprint falls in.
int ShardOf(const std::string& fingerprint, int count);
// Parses `K/N` (1 <= K <= N <= 4096).
Expected<ShardSpec> ParseShard(const std::string& text);

// Wraps a backend: units outside `shard` are not probed (a Verdict::NotProbed that says so, never cached),
// and with a usable `shared` cache each unit is probed once per server (when probes are slow enough for
// a lease to pay: see kLeaseWorthSeconds).
class FleetBackend : public Backend {
 public:
  FleetBackend(Backend& inner, SharedProbeCache* shared, ShardSpec shard, double lease_seconds);
  std::string id() const override { return id_; }
  std::string version() const override { return version_; }
  bool thread_safe() const override { return inner_.thread_safe(); }
  Verdict probe(const hlo::Module& unit) override;
  // The inner backend's batches (compiler_probe/batch.h), of the units this shard owns; none with a usable shared
  // cache, where a fleet shares its units one lease at a time.
  size_t batch_limit() const override;
  bool batchable(const hlo::Module& unit) const override;
  std::optional<std::vector<Verdict>> probe_batch(const std::vector<const hlo::Module*>& units) override {
    return inner_.probe_batch(units);
  }
  Verdict compile(const hlo::Module& program) override { return inner_.compile(program); }
  // Probes that took less than this on average are not worth a lease.
  static constexpr double kLeaseWorthSeconds = 0.05;

  int64_t skipped() const { return skipped_; }  // units left to other shards

 private:
  Backend& inner_;
  SharedProbeCache* shared_;
  ShardSpec shard_;
  double lease_seconds_;
  std::string id_, version_;
  std::atomic<int64_t> skipped_{0};
  std::atomic<int64_t> probes_{0};
  std::atomic<double> probe_seconds_{0};

  Verdict Timed(const hlo::Module& unit);
};

}  // namespace opprobe::compiler_probe
