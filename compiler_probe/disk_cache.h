// The persistent local probe cache: one SQLite database per cache folder, <dir>/verdicts.sqlite3 (Debian's
// libsqlite3), in WAL mode with a busy timeout, so that the threads of one run and any number of opprobe processes
// on this machine share one folder: readers never wait for a writer, writers take turns. A verdict is one row keyed
// by (hash of backend id and version and the fingerprint scheme, fingerprint; remote/entry.h: BackendKeyHash, so rows
// an opprobe with other fingerprints stored are never read) that also holds a checksum of its whole key and contents: a
// damaged or hand-edited row reads as a miss and the next verdict overwrites it. Error verdicts (crash, timeout) are
// not stored: they may be transient. Verdicts that come fast (a rules backend) are committed in batches, so a killed
// run may lose the few still waiting for theirs; a verdict that comes alone is committed at once. The folder must be on
// a local file system (WAL shares memory between the processes; a fleet shares verdicts through compiler_probe/remote/
// instead).
//
// A file at that place that is not an opprobe cache or is damaged: for the default folder, one warning, the file is
// set aside as verdicts.sqlite3.damaged and a fresh cache starts; for a folder the caller named (`--cache DIR`),
// OpenDiskCache refuses with kInvalidInput naming the file (ClearDiskCache removes it). A file written by a newer
// opprobe is never touched: the default folder runs without a local cache (one warning), a named one is refused.
// Damage that only shows while reading (a bad page) is one warning and a fresh cache either way: the analysis is
// already under way.
//
// The layout before this one, <dir>/v1/<backend hash>/<fingerprint>.json (one file per verdict), is migrated: the
// first open that finds such files copies the valid ones into the database in one transaction, removes the files
// that layout wrote (leaving anything else) and says so in one line. GetDiskCacheStats counts the files that are
// still there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler_probe/cache.h"
#include "compiler_probe/lowering_memo_store.h"
#include "support/status.h"

namespace opprobe::compiler_probe {

// $XDG_CACHE_HOME/opprobe, else $HOME/.cache/opprobe, else /tmp/opprobe-cache-<uid>.
std::string DefaultCacheDir();

// The database's file name inside a cache folder.
inline constexpr const char* kCacheStoreFile = "verdicts.sqlite3";

struct DiskCacheOptions {
  // The caller named the folder: a cache file that cannot be used is an error naming it, not a fresh cache.
  bool named = false;
  // At most one line per problem: a damaged file set aside, a migrated old layout, a write that failed.
  std::function<void(const std::string&)> on_warning;
};

// The local cache: verdicts (ProbeCache) and the analyzer's lowering memos (LoweringMemoStore, a table beside the
// verdicts), one database.
class LocalProbeCache : public ProbeCache, public LoweringMemoStore {};

// Creates the folder and the database when needed; an unusable folder is a usage error naming it.
Expected<std::unique_ptr<LocalProbeCache>> OpenDiskCache(const std::string& dir, const DiskCacheOptions& options = {});

struct DiskCacheStats {
  struct Backend {
    std::string id;
    std::string version;
    int64_t entries = 0;
    int64_t bytes = 0;  // the rows' key and verdict bytes
  };
  std::string dir;
  std::string file;  // the database (empty when the folder has none yet)
  int64_t entries = 0;
  int64_t bytes = 0;               // the database's files on disk (with its write-ahead log)
  std::vector<Backend> backends;   // sorted by id, then version
  int64_t old_layout_entries = 0;  // v1/ files not yet migrated (the next analysis with this folder moves them)
  std::string unusable;  // why the database cannot be read (damaged, not a cache, newer format); empty if fine
};

// Counts the entries of a cache folder (a missing folder is an empty cache). Only reads.
Expected<DiskCacheStats> GetDiskCacheStats(const std::string& dir);

struct DiskCacheClear {
  int64_t removed = 0;       // verdicts removed (database rows and old-layout files)
  std::string removed_file;  // the database file, when it was removed because it was unusable
  std::string why;           // why it was unusable
};
// Removes every entry (only what this cache writes). A database that is damaged or not a cache is removed
// whole; one written by a newer opprobe is left alone (kInvalidInput).
Expected<DiskCacheClear> ClearDiskCache(const std::string& dir);

}  // namespace opprobe::compiler_probe
