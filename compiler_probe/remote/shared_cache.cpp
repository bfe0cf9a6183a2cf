#include "compiler_probe/remote/shared_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "hlo/probe_unit.h"

namespace opprobe::compiler_probe {

namespace {

std::string EntryKey(const CacheKey& k) {
  return "e/" + BackendKeyHash(k.backend_id, k.backend_version) + "/" + SafeFingerprint(k.fingerprint);
}
std::string LeaseKey(const CacheKey& k) {
  return "c/" + BackendKeyHash(k.backend_id, k.backend_version) + "/" + SafeFingerprint(k.fingerprint);
}

std::string NewToken() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}() ^ (static_cast<uint64_t>(::getpid()) << 32)};
  std::lock_guard<std::mutex> lock(mu);
  char host[64] = {};
  ::gethostname(host, sizeof host - 1);
  std::string h;
  for (char* c = host; *c; ++c)
    if (std::isalnum(static_cast<unsigned char>(*c)) || *c == '-' || *c == '.') h.push_back(*c);
  return fmt::format("{}-{}-{:016x}", h.empty() ? "host" : h, ::getpid(), rng());
}

}  // namespace

SharedProbeCache::SharedProbeCache(std::unique_ptr<ProbeCache> local, std::unique_ptr<RemoteStore> remote, WarnFn warn)
    : local_(std::move(local)), remote_(std::move(remote)), warn_(std::move(warn)) {}

SharedProbeCache::~SharedProbeCache() {
  if (!down_ && (hits_ || misses_ || stores_)) remote_->AddCounters(hits_, misses_, stores_);
}

bool SharedProbeCache::Check(const StoreReply& r, const char* what) {
  if (r.code == StoreReply::Code::kOk || r.code == StoreReply::Code::kMissing) return true;
  bool fault = r.code == StoreReply::Code::kFault;
  if (fault) down_ = true;
  else writes_refused_ = true;
  if (!warned_.exchange(true) && warn_) {
    warn_(fault ? fmt::format("remote cache {} is unusable ({}: {}); going on with the local cache", remote_->Where(),
                              what, r.error)
                : fmt::format("remote cache {} refused a write ({}); going on without writing to it", remote_->Where(),
                              r.error));
  }
  return false;
}

std::optional<Verdict> SharedProbeCache::RemoteGet(const CacheKey& key) {
  if (down_) return std::nullopt;
  const std::string ek = EntryKey(key);
  return FromReply(key, ek, remote_->Get(ek));
}

std::optional<Verdict> SharedProbeCache::FromReply(const CacheKey& key, const std::string& entry_key,
                                                   const StoreReply& r) {
  if (!Check(r, "read")) return std::nullopt;
  if (r.code == StoreReply::Code::kMissing) return std::nullopt;
  auto v = DecodeCacheEntry(r.value, key);  // a bad entry is a miss; the fresh verdict overwrites it
  if (v) {
    std::lock_guard<std::mutex> lock(mu_);
    on_server_.insert(entry_key);
  }
  return v;
}

std::optional<Verdict> SharedProbeCache::Counted(const CacheKey& key, std::optional<Verdict> v) {
  if (!v) {
    if (!down_) ++misses_;
    return std::nullopt;
  }
  ++hits_;
  if (local_) local_->Store(key.backend_id, key.backend_version, key.fingerprint, *v);
  return v;
}

void SharedProbeCache::RemotePut(const CacheKey& key, const Verdict& v) {
  if (down_ || writes_refused_ || !v.judged()) return;
  const std::string ek = EntryKey(key);
  const std::string bh = BackendKeyHash(key.backend_id, key.backend_version);
  bool write_backend = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (on_server_.count(ek)) return;
    write_backend = backends_written_.insert(bh).second;
  }
  if (write_backend) {
    nlohmann::json b = {{"backend_id", key.backend_id}, {"backend_version", key.backend_version}};
    if (!Check(remote_->Put("b/" + bh, b.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)), "write"))
      return;
  }
  if (!Check(remote_->Put(ek, EncodeCacheEntry(key, v)), "write")) return;
  ++stores_;
  std::lock_guard<std::mutex> lock(mu_);
  on_server_.insert(ek);
}

std::optional<Verdict> SharedProbeCache::Lookup(const std::string& backend_id, const std::string& backend_version,
                                                const std::string& fingerprint) {
  if (local_) {
    if (auto v = local_->Lookup(backend_id, backend_version, fingerprint)) return v;  // never asks the server
  }
  return LookupRemote(backend_id, backend_version, fingerprint);
}

std::vector<std::optional<Verdict>> SharedProbeCache::LookupMany(const std::string& backend_id,
                                                                 const std::string& backend_version,
                                                                 const std::vector<std::string>& fingerprints) {
  // The local tier answers the whole batch at once; the server is asked only for what it did not have.
  std::vector<std::optional<Verdict>> out = local_ ? local_->LookupMany(backend_id, backend_version, fingerprints)
                                                   : std::vector<std::optional<Verdict>>(fingerprints.size());
  if (down_) return out;
  std::vector<size_t> asked;
  std::vector<std::string> keys;
  for (size_t i = 0; i < fingerprints.size(); ++i)
    if (!out[i]) {
      asked.push_back(i);
      keys.push_back(EntryKey({backend_id, backend_version, fingerprints[i]}));
    }
  if (keys.empty()) return out;
  std::vector<StoreReply> replies = remote_->GetMany(keys);                    // one round trip a batch, not one a unit
  for (size_t j = 0; j < asked.size() && j < replies.size() && !down_; ++j) {  // after a fault: local misses only
    const CacheKey key{backend_id, backend_version, fingerprints[asked[j]]};
    out[asked[j]] = Counted(key, FromReply(key, keys[j], replies[j]));
  }
  return out;
}

std::optional<Verdict> SharedProbeCache::LookupRemote(const std::string& backend_id, const std::string& backend_version,
                                                      const std::string& fingerprint) {
  const CacheKey key{backend_id, backend_version, fingerprint};
  return Counted(key, RemoteGet(key));
}

void SharedProbeCache::Store(const std::string& backend_id, const std::string& backend_version,
                             const std::string& fingerprint, const Verdict& verdict) {
  if (!verdict.judged()) return;
  if (local_) local_->Store(backend_id, backend_version, fingerprint, verdict);
  RemotePut({backend_id, backend_version, fingerprint}, verdict);
}

Verdict SharedProbeCache::ProbeOnce(const CacheKey& key, double lease_seconds, const std::function<Verdict()>& probe) {
  if (down_) return probe();
  using Clock = std::chrono::steady_clock;
  const std::string lease = LeaseKey(key);
  const std::string token = NewToken();
  const auto deadline = Clock::now() + std::chrono::duration<double>(lease_seconds + 5);
  double wait = 0.05;
  for (;;) {
    StoreReply c = remote_->Claim(lease, token, lease_seconds);
    if (!Check(c, "lease")) return probe();
    if (c.ok()) {
      // Another run may have finished the unit between our lookup and the lease.
      if (auto v = RemoteGet(key)) {
        ++hits_;
        remote_->Release(lease, token);
        return *v;
      }
      Verdict v = probe();
      RemotePut(key, v);  // before the lease goes, so that a waiting run finds the verdict
      remote_->Release(lease, token);
      return v;
    }
    // Another run is probing this unit: wait for its verdict (or for its lease to go).
    if (auto v = RemoteGet(key)) {
      ++hits_;
      return *v;
    }
    if (down_ || Clock::now() > deadline) return probe();
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    wait = std::min(wait * 1.5, 1.0);
  }
}

int ShardOf(const std::string& fingerprint, int count) {
  if (count <= 1) return 1;
  uint64_t h = std::stoull(hlo::Fnv1a64Hex("shard:" + fingerprint), nullptr, 16);
  return static_cast<int>(h % static_cast<uint64_t>(count)) + 1;
}

Expected<ShardSpec> ParseShard(const std::string& text) {
  auto bad = [&] { return InvalidInput("expected K/N with 1 <= K <= N <= 4096 (e.g. 2/4)"); };
  size_t slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 >= text.size() || text.size() > 9) return bad();
  std::string k = text.substr(0, slash), n = text.substr(slash + 1);
  auto digits = [](const std::string& s) { return std::all_of(s.begin(), s.end(), ::isdigit); };
  if (!digits(k) || !digits(n)) return bad();
  ShardSpec s{std::stoi(k), std::stoi(n)};
  if (s.count < 1 || s.count > 4096 || s.index < 1 || s.index > s.count) return bad();
  return s;
}

FleetBackend::FleetBackend(Backend& inner, SharedProbeCache* shared, ShardSpec shard, double lease_seconds)
    : inner_(inner),
      shared_(shared),
      shard_(shard),
      lease_seconds_(lease_seconds),
      id_(inner.id()),
      version_(inner.version()) {}

Verdict FleetBackend::probe(const hlo::Module& unit) {
  if (shard_.count > 0 || (shared_ && shared_->remote_usable())) {
    std::string fp = hlo::Fingerprint(unit);
    if (shard_.count > 0) {
      int owner = ShardOf(fp, shard_.count);
      if (owner != shard_.index) {
        ++skipped_;
        return Verdict::NotProbed(
            fmt::format("not probed: shard {} of {} leaves this unit to shard {}", shard_.index, shard_.count, owner));
      }
    }
    // Leases cost a few round trips per unit: worth it for a compiler that takes seconds, not for a
    // backend that answers in microseconds (rules, interp), whose units are probed unleased.
    int64_t n = probes_;
    bool slow = n == 0 || probe_seconds_ / static_cast<double>(n) >= kLeaseWorthSeconds;
    if (shared_ && shared_->remote_usable() && slow)
      return shared_->ProbeOnce({id_, version_, fp}, lease_seconds_, [&] { return Timed(unit); });
  }
  return Timed(unit);
}

size_t FleetBackend::batch_limit() const { return shared_ && shared_->remote_usable() ? 0 : inner_.batch_limit(); }

bool FleetBackend::batchable(const hlo::Module& unit) const {
  if (shard_.count > 0 && ShardOf(hlo::Fingerprint(unit), shard_.count) != shard_.index) return false;
  return inner_.batchable(unit);
}

Verdict FleetBackend::Timed(const hlo::Module& unit) {
  auto start = std::chrono::steady_clock::now();
  Verdict v = inner_.probe(unit);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  probe_seconds_ = probe_seconds_ + s;  // a racy sum is fine for a heuristic
  ++probes_;
  return v;
}

}  // namespace opprobe::compiler_probe
