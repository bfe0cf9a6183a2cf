// compiler_probe/sqlite.h: the SQLite helpers the local probe cache is built on, on a real database file.
#include "compiler_probe/sqlite.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "support/temp_folder.h"

namespace opprobe::compiler_probe::sqlite {
namespace {

struct Db {
  io::TempFolder dir = std::move(io::TempFolder::Create("opprobe-sqlite-test-")).value();
  std::string file = dir.path() + "/t.sqlite3";
  Connection c;
  Db() {
    EXPECT_EQ(c.Open(file, /*create=*/true, 1000), std::nullopt);
    EXPECT_EQ(c.Exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)"), SQLITE_OK);
  }
};

TEST(Sqlite, BlobsGoInAndComeBackAsBytes) {
  Db db;
  Stmt put, get;
  ASSERT_EQ(db.c.Prepare("INSERT INTO t VALUES (?1, ?2)", put), SQLITE_OK);
  ASSERT_EQ(db.c.Prepare("SELECT v FROM t WHERE k = ?1", get), SQLITE_OK);
  const std::string with_nul("a\0b", 3);
  for (auto [k, v] : std::vector<std::pair<int, std::string>>{{1, with_nul}, {2, ""}}) {
    ResetOnExit r{put.get()};  // the statement is used again: a reset at the end of each use
    sqlite3_bind_int(put.get(), 1, k);
    BindBlob(put.get(), 2, v);
    ASSERT_EQ(sqlite3_step(put.get()), SQLITE_DONE);
  }
  auto read = [&](int k) {
    ResetOnExit r{get.get()};
    sqlite3_bind_int(get.get(), 1, k);
    EXPECT_EQ(sqlite3_step(get.get()), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_type(get.get(), 0), SQLITE_BLOB);  // an empty view is an empty blob, not NULL
    return std::string(ColumnBlob(get.get(), 0));
  };
  EXPECT_EQ(read(1), with_nul);
  EXPECT_EQ(read(2), "");
  int64_t n = 0;
  EXPECT_EQ(db.c.QueryInt("SELECT count(*) FROM t", n), SQLITE_OK);
  EXPECT_EQ(n, 2);
  // A query with no row has no integer to give.
  EXPECT_EQ(db.c.QueryInt("SELECT k FROM t WHERE k = 99", n), SQLITE_CORRUPT);
  EXPECT_NE(db.c.QueryInt("SELECT nonsense FROM", n), SQLITE_OK);
  EXPECT_FALSE(db.c.Error().empty());
}

TEST(Sqlite, KeyWalkFindsTheWantedKeysAmongOthers) {
  Db db;
  ASSERT_EQ(db.c.Exec("BEGIN"), SQLITE_OK);
  for (int k = 0; k < 200; k += 2) {  // the even keys have rows
    std::string sql = "INSERT INTO t VALUES (" + std::to_string(k) + ", 'v')";
    ASSERT_EQ(db.c.Exec(sql.c_str()), SQLITE_OK);
  }
  ASSERT_EQ(db.c.Exec("COMMIT"), SQLITE_OK);
  Stmt scan;
  ASSERT_EQ(db.c.Prepare("SELECT k FROM t WHERE k >= ?1 ORDER BY k", scan), SQLITE_OK);
  // Wanted keys, ascending: some next to each other, some far apart (a seek), odd ones without a row, and a repeat.
  const std::vector<int64_t> wanted = {3, 4, 6, 7, 8, 8, 100, 151, 198, 250};
  std::vector<uint32_t> order(wanted.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<int64_t> found;
  int rc = KeyWalk(
      scan.get(), order, [&](uint32_t i) { sqlite3_bind_int64(scan.get(), 1, wanted[i]); },
      [&](uint32_t i) {
        const int64_t row = sqlite3_column_int64(scan.get(), 0);
        return wanted[i] < row ? -1 : wanted[i] > row ? 1 : 0;
      },
      [&](uint32_t i) { found.push_back(wanted[i]); });
  EXPECT_EQ(rc, SQLITE_DONE);
  EXPECT_EQ(found, (std::vector<int64_t>{4, 6, 8, 8, 100, 198}));
}

TEST(Sqlite, AConnectionKnowsWhetherItsFileWasReplaced) {
  Db db;
  EXPECT_TRUE(db.c.StillAt(db.file));
  const std::string aside = db.file + ".aside";
  ASSERT_EQ(std::rename(db.file.c_str(), aside.c_str()), 0);
  EXPECT_FALSE(db.c.StillAt(db.file));  // gone
  Connection other;
  ASSERT_EQ(other.Open(db.file, /*create=*/true, 1000), std::nullopt);
  ASSERT_EQ(other.Exec("CREATE TABLE x(a)"), SQLITE_OK);
  EXPECT_FALSE(db.c.StillAt(db.file));  // another file in its place
  EXPECT_TRUE(other.StillAt(db.file));
  // A file that is not there is not created without `create`, and why is said.
  Connection none;
  auto why = none.Open(db.dir.path() + "/missing.sqlite3", /*create=*/false, 1000);
  ASSERT_TRUE(why.has_value());
  EXPECT_FALSE(why->empty());
  EXPECT_FALSE(none.open());
}

TEST(Sqlite, DamageIsTheCorruptAndNotADatabaseCodes) {
  EXPECT_TRUE(IsDamage(SQLITE_CORRUPT));
  EXPECT_TRUE(IsDamage(SQLITE_NOTADB));
  EXPECT_TRUE(IsDamage(SQLITE_CORRUPT_VTAB));  // an extended code of SQLITE_CORRUPT
  EXPECT_FALSE(IsDamage(SQLITE_BUSY));
  EXPECT_FALSE(IsDamage(SQLITE_IOERR_READ));
  // A file that is not a database, read through a connection.
  Db db;
  std::FILE* f = std::fopen((db.dir.path() + "/junk").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("this is not a SQLite database, and it is long enough to have a header of sorts........", f);
  std::fclose(f);
  Connection junk;
  ASSERT_EQ(junk.Open(db.dir.path() + "/junk", /*create=*/false, 1000), std::nullopt);
  int64_t n = 0;
  EXPECT_TRUE(IsDamage(junk.QueryInt("SELECT count(*) FROM sqlite_master", n)));
}

}  // namespace
}  // namespace opprobe::compiler_probe::sqlite
