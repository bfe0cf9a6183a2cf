// The probe cache interface: verdicts keyed by (backend id, backend version, fingerprint), and memos beside them.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "compiler_probe/backend.h"

namespace opprobe::compiler_probe {

class ProbeCache {
 public:
  virtual ~ProbeCache() = default;
  virtual std::optional<Verdict> Lookup(const std::string& backend_id, const std::string& backend_version,
                                        const std::string& fingerprint) = 0;
  virtual void Store(const std::string& backend_id, const std::string& backend_version,
                     const std::string& fingerprint, const Verdict& verdict) = 0;
  // One answer per fingerprint, in order: what Lookup would say for each. A store that answers many at once
  // for less than one round trip each (the disk cache: one read transaction) overrides it.
  virtual std::vector<std::optional<Verdict>> LookupMany(const std::string& backend_id,
                                                         const std::string& backend_version,
                                                         const std::vector<std::string>& fingerprints) {
    std::vector<std::optional<Verdict>> out;
    out.reserve(fingerprints.size());
    for (const auto& fp : fingerprints) out.push_back(Lookup(backend_id, backend_version, fp));
    return out;
  }

  // Memos: values an analysis derives deterministically from its own key (the driver keeps each distinct call's
  // lowering outcome, keyed by a hash of opprobe's build and the call's signature), stored beside the verdicts so
  // that a warm run skips the work. The key says everything the value depends on; a store that has none says
  // nothing (the default: no memos), and a value that does not check out reads as a miss.
  virtual std::vector<std::optional<std::string>> LookupMemos(const std::vector<uint64_t>& keys) {
    return std::vector<std::optional<std::string>>(keys.size());
  }
  virtual void StoreMemos(const std::vector<std::pair<uint64_t, std::string>>& /*entries*/) {}
};

}  // namespace opprobe::compiler_probe
