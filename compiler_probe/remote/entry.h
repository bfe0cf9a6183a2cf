// The bytes of one verdict in a shared (remote) probe cache. An entry is
//   opprobe-cache-entry <format> <payload bytes> <fnv1a64 of the payload>\n<payload JSON>
// and the payload echoes its whole key (backend id, backend version, fingerprint), so a corrupt,
// truncated or foreign entry (another key, another format, hand-edited) decodes to nothing and the
// caller probes again and overwrites it. The checksum guards against damage, not against an attacker:
// whoever can write to the server can write verdicts.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "compiler_probe/backend.h"

namespace opprobe::compiler_probe {

struct CacheKey {
  std::string backend_id;
  std::string backend_version;
  std::string fingerprint;
};

inline constexpr int kCacheEntryFormat = 1;

std::string EncodeCacheEntry(const CacheKey& key, const Verdict& verdict);
// nullopt for anything but a well-formed entry of this format for exactly `key` (error verdicts
// included: they are never shared).
std::optional<Verdict> DecodeCacheEntry(std::string_view bytes, const CacheKey& key);

// A short, path- and key-safe name for (backend id, backend version) under this build's fingerprint scheme
// (hlo::kFingerprintScheme); the disk cache uses the same. Verdicts stored under another scheme (an older
// opprobe's fingerprints) sit under another name and are never read.
std::string BackendKeyHash(const std::string& backend_id, const std::string& backend_version);
// The fingerprint when it is a safe name, else a hash of it.
std::string SafeFingerprint(const std::string& fingerprint);

}  // namespace opprobe::compiler_probe
