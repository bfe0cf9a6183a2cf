// A persistent probe cache on disk: one small JSON file per verdict, under
// <dir>/v1/<hash of backend id and version>/<fingerprint>.json, written atomically (temp file +
// rename), so concurrent runs and threads can share one directory without locks. Corrupt or foreign
// files read as misses. Error verdicts (crash, timeout) are not stored: they may be transient.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler_probe/cache.h"
#include "hlo/status.h"

namespace opprobe::compiler_probe {

// $XDG_CACHE_HOME/opprobe, else $HOME/.cache/opprobe, else /tmp/opprobe-cache-<uid>.
std::string DefaultCacheDir();

// Creates the directory when needed; an unusable directory is a usage error naming it.
Expected<std::unique_ptr<ProbeCache>> OpenDiskCache(const std::string& dir);

struct DiskCacheStats {
  struct Backend {
    std::string id;
    std::string version;
    int64_t entries = 0;
    int64_t bytes = 0;
  };
  std::string dir;
  int64_t entries = 0;
  int64_t bytes = 0;
  std::vector<Backend> backends;  // sorted by id, then version
};

// Counts the entries of a cache directory (a missing directory is an empty cache).
Expected<DiskCacheStats> GetDiskCacheStats(const std::string& dir);
// Removes every entry (only the files this cache writes); returns how many entries were removed.
Expected<int64_t> ClearDiskCache(const std::string& dir);

}  // namespace opprobe::compiler_probe
