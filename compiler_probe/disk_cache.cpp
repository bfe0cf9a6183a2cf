#include "compiler_probe/disk_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string_view>

#include "compiler_probe/remote/entry.h"
#include "compiler_probe/sqlite.h"
#include "hlo/fingerprint.h"
#include "hlo/probe_unit.h"
#include "support/file_io.h"
#include "support/quote.h"

namespace opprobe::compiler_probe {

namespace fs = std::filesystem;

namespace {

using sqlite::BindBlob;
using sqlite::ColumnBlob;
using sqlite::IsDamage;
using sqlite::KeyWalk;
using sqlite::ResetOnExit;
using sqlite::Stmt;

// The database: marked as ours in its header (application_id "oppb") with the schema's format in user_version.
constexpr int32_t kApplicationId = 0x6f707062;
constexpr int kFormat = 1;
constexpr const char* kSchema = R"sql(
CREATE TABLE backends(
  key BLOB PRIMARY KEY NOT NULL,  -- BackendKeyHash(backend_id, backend_version)
  backend_id BLOB NOT NULL,
  backend_version BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE verdicts(
  backend BLOB NOT NULL,          -- backends.key
  fingerprint BLOB NOT NULL,
  kind INTEGER NOT NULL,          -- KindCode: 1 supported, 2 unsupported; with interp's comparison 3 agree, 4 not compared, 5 differ
  reason BLOB NOT NULL,
  seconds REAL NOT NULL,
  output_tail BLOB NOT NULL,
  checksum BLOB NOT NULL,         -- EntryChecksum: the whole key and verdict
  PRIMARY KEY(backend, fingerprint)
) WITHOUT ROWID;
CREATE TABLE memos(
  key INTEGER PRIMARY KEY,        -- LoweringMemoStore::StoreMemos's key (it says what the value depends on)
  value BLOB NOT NULL,
  checksum INTEGER NOT NULL       -- MemoChecksum of value
);
)sql";
// Format 1 caches written before memos existed lack the table: the first open that wants it adds it (older
// opprobes read such a file as before, ignoring the table).
constexpr const char* kMemoTable =
    "CREATE TABLE IF NOT EXISTS memos(key INTEGER PRIMARY KEY, value BLOB NOT NULL, checksum INTEGER NOT NULL)";
// A writer waits this long for another process's write before the store gives up (a lost store is probed again).
constexpr int kBusyTimeoutMs = 60000;
// Taken (flock) only to create the database, migrate the old layout, or set a damaged file aside.
constexpr const char* kLockFile = "verdicts.lock";
constexpr const char* kDamagedSuffix = ".damaged";

// The layout before the database: <dir>/v1/<backend hash>/<fingerprint>.json plus backend.json per folder.
constexpr const char* kOldLayout = "v1";
constexpr const char* kOldBackendFile = "backend.json";
constexpr uint64_t kMaxOldEntryBytes = 16 << 20;

bool IsOldEntryFile(const fs::directory_entry& e) {
  const std::string name = e.path().filename().string();
  std::error_code ec;
  return e.is_regular_file(ec) && name != kOldBackendFile && name.size() > 5 &&
         name.compare(name.size() - 5, 5, ".json") == 0;
}
bool IsOldTempFile(const fs::directory_entry& e) {
  std::error_code ec;
  return e.is_regular_file(ec) && e.path().filename().string().find(".json.tmp.") != std::string::npos;
}

// A judged verdict's kind and its comparison with interp (Verdict::interp) as the row's `kind`: 1 supported, 2
// unsupported; a supported verdict whose outputs agree with interp's 3, one not compared 4; an unsupported one whose
// outputs differ 5. An opprobe from before the comparison was a field reads 3 to 5 as a miss.
int KindCode(const Verdict& v) {
  const bool ok = v.kind == Verdict::Kind::kSupported;
  switch (v.interp) {
    case Verdict::Interp::kAgree:
      if (ok) return 3;
      break;
    case Verdict::Interp::kNotCompared:
      if (ok) return 4;
      break;
    case Verdict::Interp::kDiffer:
      if (!ok) return 5;
      break;
    case Verdict::Interp::kNone: break;
  }
  return ok ? 1 : 2;
}
// The verdict a row's `kind` stands for (kind and interp set), or false for a code KindCode never writes.
bool FromKindCode(int code, Verdict& v) {
  if (code < 1 || code > 5) return false;
  v.kind = code == 2 || code == 5 ? Verdict::Kind::kUnsupported : Verdict::Kind::kSupported;
  v.interp = code == 3   ? Verdict::Interp::kAgree
             : code == 4 ? Verdict::Interp::kNotCompared
             : code == 5 ? Verdict::Interp::kDiffer
                         : Verdict::Interp::kNone;
  return true;
}

// FNV-1a 64 over length-prefixed fields, so that no two entries hash the same text, as 16 hex digits; hashed as it
// goes (every lookup checks one), nothing formatted or copied. The backend's id and version come first, so a batch of
// lookups hashes them once (ChecksumPrefix) and goes on from there for each row (EntryChecksum).
template <class T>
std::string_view ShortestText(char (&num)[32], T v) {  // the shortest text that reads back the same
  return std::string_view(num, static_cast<size_t>(std::to_chars(num, num + sizeof num, v).ptr - num));
}
uint64_t HashField(std::string_view field, uint64_t h) {
  char num[32];
  return hlo::Fnv1a64(field, hlo::Fnv1a64(":", hlo::Fnv1a64(ShortestText(num, field.size()), h)));
}
uint64_t ChecksumPrefix(std::string_view id, std::string_view version) {
  return HashField(version, HashField(id, hlo::kFnv1a64Basis));
}
uint64_t EntryChecksum(uint64_t prefix, std::string_view fingerprint, int kind, std::string_view reason, double seconds,
                       std::string_view tail) {
  uint64_t h = prefix;
  for (std::string_view field : {fingerprint, reason, tail}) h = HashField(field, h);
  const char k = static_cast<char>('0' + kind);
  h = hlo::Fnv1a64(std::string_view(&k, 1), h);
  char num[32];
  return hlo::Fnv1a64(ShortestText(num, seconds), h);
}
// The checksum as the row stores it: 16 lowercase hex digits (hlo::HashHex).
void ChecksumText(uint64_t hash, char (&out)[16]) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int i = 15; i >= 0; --i, hash >>= 4) out[i] = kDigits[hash & 0xf];
}
std::string EntryChecksum(const std::string& id, const std::string& version, std::string_view fingerprint, int kind,
                          std::string_view reason, double seconds, std::string_view tail) {
  char text[16];
  ChecksumText(EntryChecksum(ChecksumPrefix(id, version), fingerprint, kind, reason, seconds, tail), text);
  return std::string(text, sizeof text);
}

// A memo's checksum: hlo::HashBytes, 8 bytes a step (a memo is read back only by the build that wrote it: its key
// holds the build's ID, analyzer::LoweringMemoKey).
int64_t MemoChecksum(std::string_view value) { return static_cast<int64_t>(hlo::HashBytes(value)); }

// A connection to a cache file, and what is in the file.
class Db : public sqlite::Connection {
 public:
  enum class State { kReady, kEmpty, kNewer, kDamaged, kError };

  // Opens the file (creating it with `create`); a file SQLite cannot open is a usage error naming it.
  Status Open(const std::string& file, bool create) {
    if (auto why = Connection::Open(file, create, kBusyTimeoutMs))
      return InvalidInput(fmt::format("{}: cannot open the probe cache: {}", file, *why));
    // In WAL mode a commit is not flushed to disk (a checkpoint is): a crash may lose the last verdicts, which are
    // then probed again, but never leaves a half-written one.
    Exec("PRAGMA synchronous=NORMAL");
    return Status::Ok();
  }

  // Reads the header and the schema: ours and ready, empty (a new file), newer, damaged or not a cache (with why),
  // or not readable at all (an I/O or permission error, with why).
  struct Inspection {
    State state;
    std::string why;
    int newer_format = 0;
  };
  Inspection Inspect() {
    int64_t app = 0, version = 0, tables = 0;
    int rc = QueryInt("PRAGMA application_id", app);
    if (rc == SQLITE_OK) rc = QueryInt("PRAGMA user_version", version);
    if (rc == SQLITE_OK) rc = QueryInt("SELECT count(*) FROM sqlite_master", tables);
    if (rc != SQLITE_OK) return {IsDamage(rc) ? State::kDamaged : State::kError, sqlite3_errstr(rc)};
    if (app == 0 && version == 0 && tables == 0) return {State::kEmpty, ""};
    if (app != kApplicationId) return {State::kDamaged, "another program's SQLite database"};
    if (version > kFormat) return {State::kNewer, "", static_cast<int>(version)};
    if (version != kFormat) return {State::kDamaged, fmt::format("unknown cache format {}", version)};
    return {State::kReady, ""};
  }

  // Makes an empty file a cache. The caller holds the folder's lock.
  Status CreateSchema(const std::string& file) {
    // WAL: readers never wait for the writer. Where the file system cannot share the index in memory the mode
    // stays a rollback journal, which is slower but as correct.
    // No waiting for the disk while creating (a first run would spend more time in fsync than in everything else
    // the cache does): a process that dies here leaves its writes to the system; only a power cut could leave a
    // damaged file, which the next open sets aside (or, for a folder the user named, reports).
    Exec("PRAGMA synchronous=OFF");
    Exec("PRAGMA journal_mode=WAL");
    struct Normal {
      Db* db;
      ~Normal() { db->Exec("PRAGMA synchronous=NORMAL"); }
    } normal{this};
    std::string sql = fmt::format("BEGIN IMMEDIATE; {} PRAGMA application_id={}; PRAGMA user_version={}; COMMIT;",
                                  kSchema, kApplicationId, kFormat);
    if (Exec(sql.c_str()) != SQLITE_OK) {
      std::string why = Error();
      Exec("ROLLBACK");
      return InvalidInput(fmt::format("{}: cannot create the probe cache: {}", file, why));
    }
    return Status::Ok();
  }
};

// An exclusive flock on the folder's lock file for the scope (best effort: without one, SQLite's own locking
// still keeps the database whole; the lock only keeps two processes from setting aside the same file twice).
class FolderLock {
 public:
  explicit FolderLock(const fs::path& dir) {
    fd_ = ::open((dir / kLockFile).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0) {
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {}
    }
  }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  ~FolderLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_ = -1;
};

// The old layout's entry files, up to `stop_at` (0: all).
int64_t CountOldLayout(const fs::path& dir, int64_t stop_at = 0) {
  int64_t n = 0;
  std::error_code ec;
  for (const auto& bdir : fs::directory_iterator(dir / kOldLayout, ec)) {
    if (!bdir.is_directory(ec)) continue;
    for (const auto& e : fs::directory_iterator(bdir.path(), ec))
      if (IsOldEntryFile(e) && ++n == stop_at) return n;
  }
  return n;
}

void RemoveStoreFiles(const std::string& file) {
  std::error_code ec;
  fs::remove(file, ec);
  fs::remove(file + "-wal", ec);
  fs::remove(file + "-shm", ec);
}

// Moves a damaged database out of the way (replacing an earlier one set aside); its log and index go with it.
void SetAside(const std::string& file) {
  std::error_code ec;
  fs::rename(file, file + kDamagedSuffix, ec);
  if (ec) fs::remove(file, ec);
  fs::remove(file + "-wal", ec);
  fs::remove(file + "-shm", ec);
}

class DiskCache : public LocalProbeCache {
 public:
  DiskCache(fs::path dir, DiskCacheOptions options)
      : dir_(std::move(dir)), file_((dir_ / kCacheStoreFile).string()), options_(std::move(options)) {}
  ~DiskCache() override {
    std::lock_guard<std::mutex> lock(mu_);
    FlushLocked();
    Finalize();
  }

  Status Open() {
    OPPROBE_RETURN_IF_ERROR(db_.Open(file_, /*create=*/true));
    Db::Inspection in = db_.Inspect();
    std::error_code ec;
    const bool old_layout = fs::exists(dir_ / kOldLayout, ec) && CountOldLayout(dir_, /*stop_at=*/1) > 0;
    if (in.state == Db::State::kReady && !old_layout && Prepare()) {  // the usual case
      if (!PrepareMemos()) {
        FolderLock lock(dir_);
        AddMemoTable();
      }
      return Status::Ok();
    }
    // Something to set up: under the folder's lock, looking again (another process may have done it meanwhile).
    FolderLock lock(dir_);
    OPPROBE_RETURN_IF_ERROR(Reopen(/*refuse=*/options_.named));
    if (old_layout && db_.open()) {
      Migrate();
      if (!Prepare()) {
        Finalize();
        db_.Close();
      }
    }
    if (db_.open() && !PrepareMemos()) AddMemoTable();
    return Status::Ok();
  }

  // The memos in one read transaction, by a walk in key order (KeyWalk): a run's memos mostly lie next to each other.
  std::vector<std::optional<std::string>> LookupMemos(const std::vector<uint64_t>& keys) override {
    std::vector<std::optional<std::string>> out(keys.size());
    std::lock_guard<std::mutex> lock(mu_);
    if (!db_.open() || !memo_scan_.get() || keys.empty()) return out;
    // As SQLite orders the INTEGER PRIMARY KEY: signed.
    auto key = [&keys](uint32_t i) { return static_cast<int64_t>(keys[i]); };
    std::vector<uint32_t> order = SortedOrder(keys.size(), key);
    sqlite3_stmt* s = memo_scan_.get();
    int rc;
    {
      ReadTransaction txn(*this);
      rc = KeyWalk(
          s, order, [&](uint32_t i) { sqlite3_bind_int64(s, 1, key(i)); },
          [&](uint32_t i) {  // <0, 0, >0: wanted key i against the row's
            const int64_t row = sqlite3_column_int64(s, 0);
            return key(i) < row ? -1 : key(i) == row ? 0 : 1;
          },
          [&](uint32_t i) {
            // A row that does not check out (wrong type, checksum) is a miss; the next StoreMemos replaces it.
            if (sqlite3_column_type(s, 0) != SQLITE_INTEGER) return;
            std::string_view value = ColumnBlob(s, 1);
            if (sqlite3_column_type(s, 2) == SQLITE_INTEGER && sqlite3_column_int64(s, 2) == MemoChecksum(value))
              out[i] = std::string(value);
          });
    }
    if (rc != SQLITE_DONE) Fault(rc, "read");
    return out;
  }

  void StoreMemos(const std::vector<std::pair<uint64_t, std::string>>& entries) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (entries.empty() || !db_.open() || !memo_put_.get()) return;
    WriteLocked([&] {
      int rc = SQLITE_DONE;
      for (const auto& [key, value] : entries) {
        ResetOnExit r{memo_put_.get()};
        sqlite3_bind_int64(memo_put_.get(), 1, static_cast<int64_t>(key));
        BindBlob(memo_put_.get(), 2, value);
        sqlite3_bind_int64(memo_put_.get(), 3, MemoChecksum(value));
        rc = sqlite3_step(memo_put_.get());
        if (rc != SQLITE_DONE) break;
      }
      return rc;
    });
  }

  std::optional<Verdict> Lookup(const std::string& backend_id, const std::string& backend_version,
                                const std::string& fingerprint) override {
    std::lock_guard<std::mutex> lock(mu_);
    return LookupLocked(BackendKeyHash(backend_id, backend_version), backend_id, backend_version, fingerprint);
  }

  // The verdicts in one read transaction, by a walk in fingerprint order (KeyWalk): a run's verdicts mostly lie next
  // to each other.
  std::vector<std::optional<Verdict>> LookupMany(const std::string& backend_id, const std::string& backend_version,
                                                 const std::vector<std::string>& fingerprints) override {
    std::vector<std::optional<Verdict>> out(fingerprints.size());
    std::lock_guard<std::mutex> lock(mu_);
    if (!db_.open() || fingerprints.empty()) return out;
    const std::string key = BackendKeyHash(backend_id, backend_version);
    std::vector<uint32_t> order =
        SortedOrder(fingerprints.size(), [&](uint32_t i) { return std::string_view(fingerprints[i]); });
    if (!pending_.empty()) {  // stored by this handle, not committed yet: found as Lookup finds them
      std::erase_if(order, [&](uint32_t i) {
        out[i] = FindPending(key, backend_id, backend_version, fingerprints[i]);
        return out[i].has_value();
      });
    }
    const uint64_t prefix = ChecksumPrefix(backend_id, backend_version);
    sqlite3_stmt* s = scan_.get();
    int rc;
    {
      ReadTransaction txn(*this);
      rc = KeyWalk(
          s, order,
          [&](uint32_t i) {
            BindBlob(s, 1, key);
            BindBlob(s, 2, fingerprints[i]);
          },
          [&](uint32_t i) { return std::string_view(fingerprints[i]).compare(ColumnBlob(s, 0)); },
          [&](uint32_t i) { out[i] = Decode(s, 1, prefix, fingerprints[i]); });
    }
    if (rc != SQLITE_DONE) Fault(rc, "read");
    return out;
  }

  // Verdicts that come fast (a rules backend answers in microseconds) are written in batches: a verdict is
  // committed at once unless the last commit was less than kBatchWindow ago; then it waits, visible to this
  // handle's lookups, until a later one finds the batch kBatchWindow old or kMaxBatch long, or the cache closes.
  // A killed run loses at most those waiting verdicts, which are probed again next time.
  void Store(const std::string& backend_id, const std::string& backend_version, const std::string& fingerprint,
             const Verdict& verdict) override {
    if (!verdict.judged()) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (!db_.open()) return;
    const auto now = Clock::now();
    if (pending_.empty()) pending_since_ = now;
    pending_.push_back(
        {BackendKeyHash(backend_id, backend_version), backend_id, backend_version, fingerprint, verdict});
    if (now - last_commit_ >= kBatchWindow || now - pending_since_ >= kBatchWindow || pending_.size() >= kMaxBatch)
      FlushLocked();
  }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kBatchWindow = std::chrono::milliseconds(50);
  static constexpr size_t kMaxBatch = 256;

  struct Entry {
    std::string key;  // BackendKeyHash(backend_id, backend_version)
    std::string backend_id, backend_version, fingerprint;
    Verdict verdict;
  };

  // Writes the waiting verdicts in one transaction. A failed write only costs future probes; the cache never
  // fails an analysis.
  void FlushLocked() {
    if (pending_.empty() || !db_.open()) return;
    std::vector<Entry> batch;
    batch.swap(pending_);
    const bool committed = WriteLocked([&] {
      int rc = SQLITE_DONE;
      for (const Entry& e : batch) {
        rc = Insert(put_.get(), e);
        if (rc != SQLITE_DONE) break;
      }
      return rc;
    });
    if (committed) last_commit_ = Clock::now();
  }

  // Runs `write` (the rows of one batch; it returns SQLite's result code of the last, SQLITE_DONE when all went in) in
  // one write transaction. True when committed; else rolled back, with one fault.
  template <class Write>
  bool WriteLocked(Write&& write) {
    int rc = sqlite3_step(begin_write_.get());
    sqlite3_reset(begin_write_.get());
    if (rc != SQLITE_DONE) {
      Fault(rc, "write");
      return false;
    }
    rc = write();
    if (rc == SQLITE_DONE) {
      rc = sqlite3_step(commit_.get());
      sqlite3_reset(commit_.get());
      if (rc == SQLITE_DONE) return true;
    }
    db_.Exec("ROLLBACK");
    Fault(rc, "write");
    return false;
  }

  // One read transaction (one snapshot, one lock of the log's index) for the lookups made while it stands.
  class ReadTransaction {
   public:
    explicit ReadTransaction(DiskCache& c) : c_(c) {
      if (!c_.db_.open()) return;
      open_ = sqlite3_step(c_.begin_.get()) == SQLITE_DONE;
      sqlite3_reset(c_.begin_.get());
    }
    ~ReadTransaction() {
      if (!open_ || !c_.db_.open()) return;
      sqlite3_step(c_.commit_.get());
      sqlite3_reset(c_.commit_.get());
    }
    ReadTransaction(const ReadTransaction&) = delete;
    ReadTransaction& operator=(const ReadTransaction&) = delete;

   private:
    DiskCache& c_;
    bool open_ = false;
  };

  // The two rows of one entry (its backend's name, its verdict), inside the caller's transaction.
  int Insert(sqlite3_stmt* put, const Entry& e) {
    int rc;
    {
      ResetOnExit r{put_backend_.get()};
      BindBlob(put_backend_.get(), 1, e.key);
      BindBlob(put_backend_.get(), 2, e.backend_id);
      BindBlob(put_backend_.get(), 3, e.backend_version);
      rc = sqlite3_step(put_backend_.get());
    }
    if (rc != SQLITE_DONE) return rc;
    const Verdict& v = e.verdict;
    const int kind = KindCode(v);
    ResetOnExit r{put};
    BindBlob(put, 1, e.key);
    BindBlob(put, 2, e.fingerprint);
    sqlite3_bind_int(put, 3, kind);
    BindBlob(put, 4, v.reason);
    sqlite3_bind_double(put, 5, v.seconds);
    BindBlob(put, 6, v.output_tail);
    BindBlob(put, 7,
             EntryChecksum(e.backend_id, e.backend_version, e.fingerprint, kind, v.reason, v.seconds, v.output_tail));
    return sqlite3_step(put);
  }

  // Indices 0..n-1 sorted by key(i), ties by index (so that the order does not depend on the sort).
  template <class Key>
  static std::vector<uint32_t> SortedOrder(size_t n, Key key) {
    std::vector<std::pair<decltype(key(0)), uint32_t>> keyed(n);
    for (uint32_t i = 0; i < n; ++i) keyed[i] = {key(i), i};
    std::sort(keyed.begin(), keyed.end());
    std::vector<uint32_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = keyed[i].second;
    return order;
  }

  // The verdict of a store still waiting for its commit, if any.
  std::optional<Verdict> FindPending(const std::string& key, const std::string& backend_id,
                                     const std::string& backend_version, const std::string& fingerprint) const {
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it)
      if (it->fingerprint == fingerprint && it->key == key && it->backend_id == backend_id &&
          it->backend_version == backend_version)
        return it->verdict;
    return std::nullopt;
  }

  std::optional<Verdict> LookupLocked(const std::string& key, const std::string& backend_id,
                                      const std::string& backend_version, const std::string& fingerprint) {
    if (!db_.open()) return std::nullopt;
    if (auto v = FindPending(key, backend_id, backend_version, fingerprint)) return v;
    sqlite3_stmt* s = get_.get();
    int rc;
    std::optional<Verdict> v;
    {
      ResetOnExit r{s};
      BindBlob(s, 1, key);
      BindBlob(s, 2, fingerprint);
      rc = sqlite3_step(s);
      if (rc == SQLITE_ROW) v = Decode(s, 0, ChecksumPrefix(backend_id, backend_version), fingerprint);
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) Fault(rc, "read");
    return v;
  }

  // The verdict in a row's columns from `col` on (kind, reason, seconds, output_tail, checksum); `prefix` is the
  // ChecksumPrefix of its backend. A row that does not check out (wrong types, unknown kind, checksum) is a miss; the
  // next Store replaces it.
  static std::optional<Verdict> Decode(sqlite3_stmt* s, int col, uint64_t prefix, std::string_view fingerprint) {
    if (sqlite3_column_type(s, col) != SQLITE_INTEGER || sqlite3_column_type(s, col + 2) != SQLITE_FLOAT)
      return std::nullopt;
    const int kind = sqlite3_column_int(s, col);
    Verdict v;
    if (!FromKindCode(kind, v)) return std::nullopt;
    const std::string_view reason = ColumnBlob(s, col + 1);
    const double seconds = sqlite3_column_double(s, col + 2);
    const std::string_view tail = ColumnBlob(s, col + 3);
    char sum[16];
    ChecksumText(EntryChecksum(prefix, fingerprint, kind, reason, seconds, tail), sum);
    if (ColumnBlob(s, col + 4) != std::string_view(sum, sizeof sum)) return std::nullopt;
    v.reason = reason;
    v.seconds = seconds;
    v.output_tail = tail;
    return v;
  }

  bool Prepare() {
    return db_.Prepare(
               "SELECT kind, reason, seconds, output_tail, checksum FROM verdicts "
               "WHERE backend = ?1 AND fingerprint = ?2",
               get_) == SQLITE_OK &&
           db_.Prepare(
               "SELECT fingerprint, kind, reason, seconds, output_tail, checksum FROM verdicts "
               "WHERE backend = ?1 AND fingerprint >= ?2 ORDER BY fingerprint",
               scan_) == SQLITE_OK &&
           db_.Prepare("INSERT OR REPLACE INTO verdicts VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", put_) == SQLITE_OK &&
           db_.Prepare("INSERT OR IGNORE INTO backends VALUES (?1, ?2, ?3)", put_backend_) == SQLITE_OK &&
           db_.Prepare("BEGIN", begin_) == SQLITE_OK && db_.Prepare("BEGIN IMMEDIATE", begin_write_) == SQLITE_OK &&
           db_.Prepare("COMMIT", commit_) == SQLITE_OK;
  }
  // The memo statements; false when the file has no memos table yet (a cache written before memos existed).
  bool PrepareMemos() {
    return db_.Prepare("SELECT key, value, checksum FROM memos WHERE key >= ?1 ORDER BY key", memo_scan_) ==
               SQLITE_OK &&
           db_.Prepare("INSERT OR REPLACE INTO memos VALUES (?1, ?2, ?3)", memo_put_) == SQLITE_OK;
  }
  // Adds the memos table to a cache that lacks it; without it the cache keeps its verdicts and has no memos. The
  // caller holds the folder's lock.
  void AddMemoTable() {
    memo_scan_.Finalize();
    memo_put_.Finalize();
    if (db_.Exec(kMemoTable) != SQLITE_OK || !PrepareMemos()) {
      memo_scan_.Finalize();
      memo_put_.Finalize();
    }
  }
  void Finalize() {
    for (Stmt* s : {&get_, &scan_, &put_, &put_backend_, &begin_, &begin_write_, &commit_, &memo_scan_, &memo_put_})
      s->Finalize();
  }

  // Opens the file again and makes it a usable cache: as it is when ready, created when empty, set aside and
  // started afresh when damaged or not a cache, closed (no local cache) when a newer opprobe wrote it; with
  // `refuse`, a damaged or newer file is an error naming it instead. The caller holds the folder's lock.
  Status Reopen(bool refuse) {
    Finalize();
    OPPROBE_RETURN_IF_ERROR(db_.Open(file_, true));
    Db::Inspection in = db_.Inspect();
    if (in.state == Db::State::kReady && !Prepare()) in = {Db::State::kDamaged, db_.Error(), 0};
    switch (in.state) {
      case Db::State::kReady: return Status::Ok();
      case Db::State::kError:
        db_.Close();
        return InvalidInput(fmt::format("{}: cannot read the probe cache: {}", file_, in.why));
      case Db::State::kEmpty: return Create();
      case Db::State::kNewer: {
        std::string what = fmt::format("{}: written by a newer opprobe (cache format {}; this one reads format {})",
                                       file_, in.newer_format, kFormat);
        db_.Close();
        if (refuse) return InvalidInput(what + ": give another cache folder");
        Warn(what + "; going on without the local cache");
        return Status::Ok();
      }
      case Db::State::kDamaged:
        if (refuse)
          return InvalidInput(
              fmt::format("{}: not a usable probe cache ({}): move it away or clear the cache", file_, in.why));
        Finalize();
        db_.Close();
        SetAside(file_);
        Warn(fmt::format("{}: not a usable probe cache ({}): set it aside as {}{} and started a fresh cache", file_,
                         in.why, kCacheStoreFile, kDamagedSuffix));
        OPPROBE_RETURN_IF_ERROR(db_.Open(file_, true));
        return Create();
    }
    return Status::Ok();
  }

  // A new (empty) file becomes a cache. The caller holds the folder's lock.
  Status Create() {
    Status st = db_.CreateSchema(file_);
    if (st.ok() && !Prepare()) st = InvalidInput(fmt::format("{}: cannot use the probe cache: {}", file_, db_.Error()));
    if (!st.ok()) {
      Finalize();
      db_.Close();
    }
    return st;
  }

  // A read or write that failed. Damage (a bad page found only now) is one warning and a fresh cache, once per
  // run (a second time, the run goes on without a local cache); anything else but a busy database, one warning.
  void Fault(int rc, const char* what) {
    if (!IsDamage(rc)) {
      if ((rc & 0xff) != SQLITE_BUSY && !warned_fault_) {
        warned_fault_ = true;
        Warn(fmt::format("{}: cannot {} the probe cache ({}); going on", file_, what, sqlite3_errstr(rc)));
      }
      return;
    }
    Finalize();
    if (recovered_) {
      db_.Close();
      Warn(fmt::format("{}: damaged again ({}); going on without the local cache", file_, sqlite3_errstr(rc)));
      return;
    }
    recovered_ = true;
    FolderLock lock(dir_);
    if (db_.StillAt(file_)) {  // else another run has set it aside already: use what is there now
      db_.Close();
      SetAside(file_);
      Warn(fmt::format("{}: not a usable probe cache ({}): set it aside as {}{} and started a fresh cache", file_,
                       sqlite3_errstr(rc), kCacheStoreFile, kDamagedSuffix));
    }
    if (!Reopen(/*refuse=*/false).ok()) {
      Finalize();
      db_.Close();
    }
    if (db_.open() && !PrepareMemos()) AddMemoTable();
  }

  // Copies the old layout's entries (checked as its reader checked them) into the database in one transaction,
  // then removes the files it wrote. The caller holds the folder's lock.
  void Migrate() {
    using nlohmann::json;
    fs::path old = dir_ / kOldLayout;
    std::error_code ec;
    Stmt ins;
    if (!db_.open() ||
        db_.Prepare("INSERT OR IGNORE INTO verdicts VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", ins) != SQLITE_OK ||
        db_.Prepare("INSERT OR IGNORE INTO backends VALUES (?1, ?2, ?3)", put_backend_) != SQLITE_OK)
      return;
    if (db_.Exec("BEGIN IMMEDIATE") != SQLITE_OK) return;
    int64_t moved = 0;
    std::vector<fs::path> ours;
    for (const auto& bdir : fs::directory_iterator(old, ec)) {
      if (!bdir.is_directory(ec)) continue;
      for (const auto& e : fs::directory_iterator(bdir.path(), ec)) {
        const bool entry = IsOldEntryFile(e);
        if (entry || IsOldTempFile(e) || e.path().filename() == kOldBackendFile) ours.push_back(e.path());
        if (!entry) continue;
        auto text = io::ReadFile(e.path().string(), kMaxOldEntryBytes);
        if (!text.ok()) continue;
        json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
        if (!j.is_object()) continue;
        auto str = [&](const char* k) -> std::optional<std::string> {
          auto it = j.find(k);
          if (it == j.end() || !it->is_string()) return std::nullopt;
          return it->get<std::string>();
        };
        auto id = str("backend_id"), version = str("backend_version"), fp = str("fingerprint"), kind = str("verdict");
        if (!id || !version || !fp || !kind || (*kind != "supported" && *kind != "unsupported")) continue;
        const std::string key = BackendKeyHash(*id, *version);
        // Where the old cache would have looked for this entry, or it was never one of its answers.
        if (bdir.path().filename() != key || e.path().filename() != SafeFingerprint(*fp) + ".json") continue;
        Entry row{key, *id, *version, *fp, {}};
        Verdict& v = row.verdict;
        v.kind = *kind == "supported" ? Verdict::Kind::kSupported : Verdict::Kind::kUnsupported;
        v.reason = str("reason").value_or("");
        v.output_tail = str("output_tail").value_or("");
        if (auto it = j.find("seconds"); it != j.end() && it->is_number()) v.seconds = it->get<double>();
        if (Insert(ins.get(), row) == SQLITE_DONE) moved += sqlite3_changes(db_.get());  // 0: already there
      }
    }
    if (db_.Exec("COMMIT") != SQLITE_OK) {
      db_.Exec("ROLLBACK");
      return;  // the files stay; the next open tries again
    }
    for (const auto& p : ours) fs::remove(p, ec);
    for (const auto& bdir : fs::directory_iterator(old, ec)) fs::remove(bdir.path(), ec);  // only when empty
    fs::remove(old, ec);
    Warn(fmt::format("{}: moved {} cached verdicts from the one-file-per-verdict layout ({}/) into {}", dir_.string(),
                     moved, kOldLayout, kCacheStoreFile));
  }

  void Warn(const std::string& line) {
    if (options_.on_warning) options_.on_warning(line);
  }

  const fs::path dir_;
  const std::string file_;
  const DiskCacheOptions options_;
  std::mutex mu_;  // one connection, used by one thread at a time
  Db db_;          // closed: no usable cache; every lookup misses and stores are dropped
  Stmt get_, scan_, put_, put_backend_, begin_, begin_write_, commit_;
  Stmt memo_scan_, memo_put_;   // null when the file has no memos table
  std::vector<Entry> pending_;  // stored, not yet committed
  Clock::time_point pending_since_{}, last_commit_{};
  bool recovered_ = false;
  bool warned_fault_ = false;
};

int64_t FileSize(const std::string& path) {
  std::error_code ec;
  auto n = fs::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

}  // namespace

std::string DefaultCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg == '/') return std::string(xdg) + "/opprobe";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.cache/opprobe";
  return fmt::format("/tmp/opprobe-cache-{}", ::getuid());
}

Expected<std::unique_ptr<LocalProbeCache>> OpenDiskCache(const std::string& dir, const DiskCacheOptions& options) {
  if (dir.empty()) return InvalidInput("cache directory is empty");
  std::error_code ec;
  fs::path root(dir);
  fs::create_directories(root, ec);
  if (ec) return InvalidInput(fmt::format("cannot use cache directory '{}': {}", dir, ec.message()));
  if (::access(root.c_str(), W_OK | X_OK) != 0)
    return InvalidInput(fmt::format("cannot use cache directory '{}': not writable", dir));
  auto cache = std::make_unique<DiskCache>(root, options);
  OPPROBE_RETURN_IF_ERROR(cache->Open());
  return std::unique_ptr<LocalProbeCache>(std::move(cache));
}

Expected<DiskCacheStats> GetDiskCacheStats(const std::string& dir) {
  DiskCacheStats stats;
  stats.dir = dir;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    return InvalidInput(fmt::format("{}: not a cache directory (a file)", dir));
  stats.old_layout_entries = CountOldLayout(dir);
  const std::string file = (fs::path(dir) / kCacheStoreFile).string();
  if (!fs::exists(file, ec)) return stats;
  stats.file = file;
  stats.bytes = FileSize(file) + FileSize(file + "-wal");
  Db db;
  OPPROBE_RETURN_IF_ERROR(db.Open(file, /*create=*/false));
  Db::Inspection in = db.Inspect();
  switch (in.state) {
    case Db::State::kEmpty: return stats;
    case Db::State::kError: return InvalidInput(fmt::format("{}: cannot read the probe cache: {}", file, in.why));
    case Db::State::kNewer:
      stats.unusable = fmt::format("written by a newer opprobe (cache format {}; this one reads format {})",
                                   in.newer_format, kFormat);
      return stats;
    case Db::State::kDamaged: stats.unusable = in.why; return stats;
    case Db::State::kReady: break;
  }
  Stmt s;
  int rc = db.Prepare(
      "SELECT v.backend, b.backend_id, b.backend_version, count(*), "
      "sum(length(v.backend) + length(v.fingerprint) + length(v.reason) + length(v.output_tail) + "
      "length(v.checksum) + 16) "
      "FROM verdicts v LEFT JOIN backends b ON b.key = v.backend GROUP BY v.backend",
      s);
  while (rc == SQLITE_OK || rc == SQLITE_ROW) {
    rc = sqlite3_step(s.get());
    if (rc != SQLITE_ROW) break;
    DiskCacheStats::Backend b;
    if (sqlite3_column_type(s.get(), 1) != SQLITE_NULL) {
      b.id = std::string(ColumnBlob(s.get(), 1));
      b.version = std::string(ColumnBlob(s.get(), 2));
    } else {
      b.id = fmt::format("(unknown backend {})", support::OneLine(ColumnBlob(s.get(), 0), 40));
    }
    b.entries = sqlite3_column_int64(s.get(), 3);
    b.bytes = sqlite3_column_int64(s.get(), 4);
    stats.entries += b.entries;
    stats.backends.push_back(std::move(b));
  }
  if (rc != SQLITE_DONE) {
    stats.unusable = sqlite3_errstr(rc);
    stats.entries = 0;
    stats.backends.clear();
    return stats;
  }
  std::sort(stats.backends.begin(), stats.backends.end(),
            [](const auto& a, const auto& b) { return std::tie(a.id, a.version) < std::tie(b.id, b.version); });
  return stats;
}

Expected<DiskCacheClear> ClearDiskCache(const std::string& dir) {
  DiskCacheClear result;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    return InvalidInput(fmt::format("{}: not a cache directory (a file)", dir));
  // The old layout: only the files it wrote.
  fs::path old = fs::path(dir) / kOldLayout;
  for (const auto& bdir : fs::directory_iterator(old, ec)) {
    if (!bdir.is_directory(ec)) continue;
    for (const auto& e : fs::directory_iterator(bdir.path(), ec)) {
      bool entry = IsOldEntryFile(e);
      if (entry || IsOldTempFile(e) || e.path().filename() == kOldBackendFile) {
        if (fs::remove(e.path(), ec) && entry) ++result.removed;
      }
    }
    fs::remove(bdir.path(), ec);  // only when empty
  }
  fs::remove(old, ec);
  const std::string file = (fs::path(dir) / kCacheStoreFile).string();
  if (!fs::exists(file, ec)) return result;
  Db db;
  OPPROBE_RETURN_IF_ERROR(db.Open(file, /*create=*/false));
  Db::Inspection in = db.Inspect();
  switch (in.state) {
    case Db::State::kEmpty: return result;
    case Db::State::kError: return InvalidInput(fmt::format("{}: cannot read the probe cache: {}", file, in.why));
    case Db::State::kNewer:
      return InvalidInput(
          fmt::format("{}: written by a newer opprobe (cache format {}; this one reads format {}): "
                      "clear it with that version",
                      file, in.newer_format, kFormat));
    case Db::State::kDamaged: {
      db.Close();
      FolderLock lock(dir);
      RemoveStoreFiles(file);
      result.removed_file = file;
      result.why = in.why;
      return result;
    }
    case Db::State::kReady: break;
  }
  int64_t n = 0;
  int rc = db.Exec("BEGIN IMMEDIATE");
  if (rc == SQLITE_OK) rc = db.QueryInt("SELECT count(*) FROM verdicts", n);
  if (rc == SQLITE_OK) rc = db.Exec("DELETE FROM verdicts; DELETE FROM backends");
  if (rc == SQLITE_OK) rc = db.Exec(kMemoTable);  // (a cache from before memos: the table is added, then emptied)
  if (rc == SQLITE_OK) rc = db.Exec("DELETE FROM memos; COMMIT");
  if (rc != SQLITE_OK) {
    std::string msg = db.Error();
    db.Exec("ROLLBACK");
    return InvalidInput(fmt::format("{}: cannot clear the probe cache: {}", file, msg));
  }
  result.removed += n;
  // Give the space back when no other run is reading (else it is reused by the next entries).
  db.Exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.Exec("VACUUM");
  return result;
}

}  // namespace opprobe::compiler_probe
