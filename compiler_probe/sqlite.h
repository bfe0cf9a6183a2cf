// Small helpers over SQLite's C API (Debian's libsqlite3), for the local probe cache (disk_cache.cpp): a prepared
// statement that is finalized with its owner, binding and reading blobs as bytes, and a connection that opens a file
// with a busy timeout, runs statements, reads one integer and says whether the file it opened is still in its place;
// and a walk over many sorted keys with one scanning statement (KeyWalk).
#pragma once

#include <sqlite3.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opprobe::compiler_probe::sqlite {

// Whether a result code (extended or not) says the file is damaged or not a database.
bool IsDamage(int rc);

// One prepared statement, finalized with its owner (or when prepared again).
class Stmt {
 public:
  Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(s_); }
  sqlite3_stmt*& ref() { return s_; }
  sqlite3_stmt* get() const { return s_; }
  void Finalize() {
    sqlite3_finalize(s_);
    s_ = nullptr;
  }

 private:
  sqlite3_stmt* s_ = nullptr;
};

// Resets a statement at the end of the scope (its bindings stay: every use binds all of a statement's parameters).
struct ResetOnExit {
  sqlite3_stmt* s;
  ~ResetOnExit() { sqlite3_reset(s); }
};

// Binds `v` as a blob (copied; an empty view is an empty blob, not NULL).
void BindBlob(sqlite3_stmt* s, int i, std::string_view v);
// A blob (or text) column's bytes, valid until the statement steps or resets; empty for NULL.
std::string_view ColumnBlob(sqlite3_stmt* s, int i);

// A connection to a database file.
class Connection {
 public:
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { Close(); }

  // Opens `file` read-write, without SQLite's own mutex (the caller serializes), creating it with `create`; a
  // writer waits up to `busy_timeout_ms` for another's lock. nullopt when it opened, else why not.
  std::optional<std::string> Open(const std::string& file, bool create, int busy_timeout_ms);
  void Close();
  sqlite3* get() const { return db_; }
  bool open() const { return db_ != nullptr; }
  // Whether `file` is still the file this connection opened (not renamed away and replaced by another process).
  bool StillAt(const std::string& file) const;

  int Exec(const char* sql) { return sqlite3_exec(db_, sql, nullptr, nullptr, nullptr); }
  // Prepares `sql` into `stmt` (finalizing what it held) as a statement kept for many uses.
  int Prepare(const char* sql, Stmt& stmt);
  // The last error's message.
  std::string Error() const { return db_ ? sqlite3_errmsg(db_) : "not open"; }
  // One integer from a query's first row; the SQLite result code on failure (SQLITE_CORRUPT for no row).
  int QueryInt(const char* sql, int64_t& out);

 private:
  sqlite3* db_ = nullptr;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

// Looks up the keys `order` lists (sorted, ascending) with `scan`, a statement that returns the rows from a bound
// key on in key order: seeks to the first key (`bind` binds key i), then steps row by row, handing each row that
// is a wanted key to `found` (`compare` tells wanted key i against the row's: <0, 0, >0) and passing over wanted
// keys that have no row. Stepping to the next row costs a fraction of a seek, so a run whose rows lie together
// reads them at that cost; after kMaxSkip rows in a row that are not wanted it seeks again, so that rows of other
// runs between the wanted ones cost at most that many steps per key. SQLITE_DONE, or the error that stopped it.
template <class Bind, class Compare, class Found>
int KeyWalk(sqlite3_stmt* scan, const std::vector<uint32_t>& order, Bind bind, Compare compare, Found found) {
  constexpr int kMaxSkip = 8;
  size_t k = 0;
  int rc = SQLITE_DONE;
  while (k < order.size()) {
    sqlite3_reset(scan);
    bind(order[k]);
    int skipped = 0;
    while ((rc = sqlite3_step(scan)) == SQLITE_ROW) {
      int c;
      while ((c = compare(order[k])) < 0)  // no row for this key
        if (++k == order.size()) break;
      if (k == order.size()) break;
      if (c == 0) {
        skipped = 0;
        do {
          found(order[k]);
          ++k;
        } while (k < order.size() && compare(order[k]) == 0);
        if (k == order.size()) break;
      } else if (++skipped > kMaxSkip) {
        break;  // seek to order[k]
      }
    }
    if (rc == SQLITE_DONE) break;  // no more rows: the keys left have none
    if (rc != SQLITE_ROW) break;
    rc = SQLITE_DONE;
  }
  sqlite3_reset(scan);
  return rc;
}

}  // namespace opprobe::compiler_probe::sqlite
