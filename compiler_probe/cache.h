// The probe cache interface: verdicts keyed by (backend id, backend version, fingerprint). The analyzer's lowering
// memos have an interface of their own (lowering_memo_store.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler_probe/backend.h"

namespace opprobe::compiler_probe {

class ProbeCache {
 public:
  virtual ~ProbeCache() = default;
  virtual std::optional<Verdict> Lookup(const std::string& backend_id, const std::string& backend_version,
                                        const std::string& fingerprint) = 0;
  virtual void Store(const std::string& backend_id, const std::string& backend_version, const std::string& fingerprint,
                     const Verdict& verdict) = 0;
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
};

}  // namespace opprobe::compiler_probe
