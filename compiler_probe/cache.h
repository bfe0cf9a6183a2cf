// The probe cache interface: verdicts keyed by (backend id, backend version, fingerprint).
#pragma once

#include <optional>
#include <string>

#include "compiler_probe/backend.h"

namespace opprobe::compiler_probe {

class ProbeCache {
 public:
  virtual ~ProbeCache() = default;
  virtual std::optional<Verdict> Lookup(const std::string& backend_id, const std::string& backend_version,
                                        const std::string& fingerprint) = 0;
  virtual void Store(const std::string& backend_id, const std::string& backend_version,
                     const std::string& fingerprint, const Verdict& verdict) = 0;
};

}  // namespace opprobe::compiler_probe
