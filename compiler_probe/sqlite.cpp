#include "compiler_probe/sqlite.h"

#include <sys/stat.h>

namespace opprobe::compiler_probe::sqlite {

bool IsDamage(int rc) {
  rc &= 0xff;
  return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB;
}

void BindBlob(sqlite3_stmt* s, int i, std::string_view v) {
  sqlite3_bind_blob(s, i, v.empty() ? "" : v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

std::string_view ColumnBlob(sqlite3_stmt* s, int i) {
  const void* p = sqlite3_column_blob(s, i);
  int n = sqlite3_column_bytes(s, i);
  return p ? std::string_view(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string_view();
}

std::optional<std::string> Connection::Open(const std::string& file, bool create, int busy_timeout_ms) {
  Close();
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(file.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    Close();
    return why;
  }
  sqlite3_busy_timeout(db_, busy_timeout_ms);
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0) {
    dev_ = st.st_dev;
    ino_ = st.st_ino;
  }
  return std::nullopt;
}

void Connection::Close() {
  if (db_) sqlite3_close_v2(db_);
  db_ = nullptr;
}

bool Connection::StillAt(const std::string& file) const {
  struct stat st {};
  return ::stat(file.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
}

int Connection::Prepare(const char* sql, Stmt& stmt) {
  stmt.Finalize();
  return sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt.ref(), nullptr);
}

int Connection::QueryInt(const char* sql, int64_t& out) {
  Stmt s;
  int rc = Prepare(sql, s);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(s.get());
  if (rc != SQLITE_ROW) return rc == SQLITE_DONE ? SQLITE_CORRUPT : rc;
  out = sqlite3_column_int64(s.get(), 0);
  return SQLITE_OK;
}

}  // namespace opprobe::compiler_probe::sqlite
