// A remote blob store that holds a shared probe cache: Redis (`redis://HOST:PORT[/DB]`, hiredis) or any
// HTTP server that takes GET/PUT/DELETE of blobs under a path (`http(s)://HOST[:PORT]/PATH`, libcurl),
// e.g. nginx's WebDAV module. Keys are logical paths (`e/<backend hash>/<fingerprint>`); each store maps
// them onto its server (Redis key `opprobe/v1/<key>`, URL `<base>/v1/<key>`).
//
// Every call is bounded by a connect and a read timeout ($OPPROBE_CACHE_TIMEOUT seconds, default 5) and
// reports a fault instead of failing. Secrets come only from the environment: $OPPROBE_CACHE_PASSWORD
// (Redis AUTH, or HTTP basic auth with the user named in the URL) and $OPPROBE_CACHE_TOKEN (HTTP bearer
// token), or the files named by $OPPROBE_CACHE_PASSWORD_FILE / $OPPROBE_CACHE_TOKEN_FILE. A URL that
// carries a password is refused, and no message names a secret. Stores are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/status.h"

namespace opprobe::compiler_probe {

struct StoreReply {
  enum class Code {
    kOk,       // done (Get: found; Claim: claimed)
    kMissing,  // Get: no such key; Claim: another holder has it
    kRefused,  // the server answered but would not do it (a write refused, a read-only replica)
    kFault,    // unreachable, timed out, went away, or answered nonsense
  };
  Code code = Code::kOk;
  std::string value;  // Get's bytes
  std::string error;  // kRefused / kFault: what happened, one line, no secrets
  bool ok() const { return code == Code::kOk; }
};

struct RemoteStats {
  std::string where;   // the URL, without secrets
  bool listed = true;  // false when the server cannot enumerate its entries (then entries are unknown)
  struct Backend {
    std::string id;
    std::string version;
    int64_t entries = 0;
    int64_t bytes = 0;
  };
  int64_t entries = 0;
  int64_t bytes = 0;
  std::vector<Backend> backends;  // sorted by id, then version
  int64_t hits = 0;               // lookups answered by the server, over every run that reported
  int64_t misses = 0;             // lookups the server could not answer
  int64_t stores = 0;             // verdicts written
};

class RemoteStore {
 public:
  virtual ~RemoteStore() = default;
  virtual std::string Where() const = 0;  // the URL without secrets
  virtual StoreReply Get(const std::string& key) = 0;
  // One reply per key, as Get's. Redis sends the GETs in one pipeline (one round trip for a batch instead of one a
  // key); the default asks one at a time. After a fault the remaining keys get that fault without being asked.
  virtual std::vector<StoreReply> GetMany(const std::vector<std::string>& keys);
  virtual StoreReply Put(const std::string& key, const std::string& value) = 0;
  virtual StoreReply Delete(const std::string& key) = 0;
  // Takes a lease on `key` for `ttl_seconds` if nobody holds a live one: kOk claimed, kMissing held by
  // another. Best effort on HTTP (read, write, read back), atomic on Redis (SET NX PX).
  virtual StoreReply Claim(const std::string& key, const std::string& token, double ttl_seconds) = 0;
  // Drops our lease (only ours).
  virtual void Release(const std::string& key, const std::string& token) = 0;
  // Adds one run's counters to the server's totals.
  virtual StoreReply AddCounters(int64_t hits, int64_t misses, int64_t stores) = 0;
  // Entries per backend (from `b/<hash>` records and `e/<hash>/...` keys) and the counters.
  virtual Expected<RemoteStats> Stats() = 0;
  // Removes every key this cache wrote; returns the number of entries removed.
  virtual Expected<int64_t> Clear() = 0;
};

// `redis://`, `http://` or `https://`.
bool IsRemoteCacheUrl(const std::string& spec);

// Parses the URL and reads the secrets; connects lazily (a server that is down is a fault of the first
// call, not an error here). A malformed URL or one that carries a password is a usage error.
Expected<std::unique_ptr<RemoteStore>> OpenRemoteStore(const std::string& url);

// Internal to the stores.
struct RemoteSecrets {
  std::string password;  // $OPPROBE_CACHE_PASSWORD or the file $OPPROBE_CACHE_PASSWORD_FILE names
  std::string token;     // $OPPROBE_CACHE_TOKEN or the file $OPPROBE_CACHE_TOKEN_FILE names
};
Expected<RemoteSecrets> ReadRemoteSecrets();
double RemoteTimeoutSeconds();
Expected<std::unique_ptr<RemoteStore>> OpenRedisStore(const std::string& host, int port, int db,
                                                      const std::string& user, const RemoteSecrets& secrets);
Expected<std::unique_ptr<RemoteStore>> OpenHttpStore(const std::string& base_url, const std::string& user,
                                                     const RemoteSecrets& secrets);

}  // namespace opprobe::compiler_probe
