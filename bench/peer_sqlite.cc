// SQLite: one WITHOUT ROWID table (k PRIMARY KEY, v), built in one
// transaction with a prepared INSERT (journal_mode=OFF, synchronous=OFF);
// read through a read-only, immutable=1 connection with a prepared SELECT and
// PRAGMA mmap_size covering the file (reads from the mapping, no copies
// into SQLite's page cache).  u64 keys are INTEGER with the sign bit
// flipped, so that SQLite's signed order is unsigned order; u64 values
// are INTEGER; other keys and values are BLOB.
#include "peer.h"

#include <sqlite3.h>
#include <unistd.h>

namespace bbtree::bench {
namespace {

template <data_kind K>
class sqlite_peer {
 public:
  static constexpr bool supported = true;
  static constexpr const char* name = "sqlite";
  static constexpr peer_caps caps() { return peer_caps{.huge = true, .scans = true}; }
  static std::string config(bool huge) {
    return std::string(
               "WITHOUT ROWID, 4 KiB pages, read-only immutable=1 connection, mmap_size = file "
               "size") +
           (huge ? ", its mapping advised MADV_HUGEPAGE" : "");
  }

  ~sqlite_peer() { close(); }

  void build(const dataset& d, bool sorted_input, const std::string& file) {
    ::unlink(file.c_str());
    sqlite3* db = nullptr;
    check(db,
          sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
          "open");
    exec(db, "PRAGMA journal_mode=OFF");
    exec(db, "PRAGMA synchronous=OFF");
    exec(db, "PRAGMA cache_size=-262144");  // 256 MiB: the build is not starved for cache
    exec(db, K == data_kind::u64 ? "CREATE TABLE t(k INTEGER PRIMARY KEY, v INTEGER) WITHOUT ROWID"
             : K == data_kind::fix16 ? "CREATE TABLE t(k BLOB PRIMARY KEY, v INTEGER) WITHOUT ROWID"
                                     : "CREATE TABLE t(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID");
    exec(db, "BEGIN");
    sqlite3_stmt* insert = prepare(db, "INSERT INTO t(k, v) VALUES(?1, ?2)");
    for (std::size_t j = 0; j < d.size(); ++j) {
      const std::size_t i = sorted_input ? j : d.unsorted[j];
      bind_key(db, insert, d.keys[i]);
      if constexpr (K == data_kind::str) {
        check(db,
              sqlite3_bind_blob(insert, 2, d.values[i].data(), static_cast<int>(d.values[i].size()),
                                SQLITE_STATIC),
              "bind");
      } else {
        check(db,
              sqlite3_bind_int64(insert, 2,
                                 static_cast<sqlite3_int64>(load_le64(d.values[i].data()))),
              "bind");
      }
      if (sqlite3_step(insert) != SQLITE_DONE)
        fail(std::string("sqlite: insert: ") + sqlite3_errmsg(db));
      sqlite3_reset(insert);
    }
    sqlite3_finalize(insert);
    exec(db, "COMMIT");
    sqlite3_close(db);
  }

  std::uint64_t footprint(const std::string& file) { return file_size(file); }

  void open(const std::string& file, bool huge) {
    close();
    // immutable=1: no file locks and no change checks per statement (without
    // it every SELECT takes and drops a shared lock: several system calls).
    const std::string uri = "file:" + file + "?immutable=1";
    check(db_,
          sqlite3_open_v2(uri.c_str(), &db_,
                          SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, nullptr),
          "open");
    exec(db_, ("PRAGMA mmap_size=" + std::to_string(file_size(file))).c_str());
    get_ = prepare(db_, "SELECT v FROM t WHERE k = ?1");
    scan_ = prepare(db_, "SELECT v FROM t WHERE k >= ?1 ORDER BY k LIMIT ?2");
    all_ = prepare(db_, "SELECT v FROM t ORDER BY k");
    if (huge) {
      std::uint64_t ignored;
      const char zero[16] = {};
      get(std::string_view(zero, K == data_kind::fix16 ? 16 : 8), ignored);  // SQLite maps lazily
      advise_huge_mappings(file);
    }
  }

  void close() {
    for (sqlite3_stmt** s : {&get_, &scan_, &all_}) {
      if (*s != nullptr) sqlite3_finalize(*s);
      *s = nullptr;
    }
    if (db_ != nullptr) sqlite3_close(db_);
    db_ = nullptr;
  }

  smaps_usage memory_usage(const std::string& file) { return smaps_for_file(file); }

  bool get(std::string_view key, std::uint64_t& digest) const {
    bind_key(db_, get_, key);
    const int rc = sqlite3_step(get_);
    const bool found = rc == SQLITE_ROW;
    if (found)
      digest = column_digest(get_);
    else if (rc != SQLITE_DONE)
      fail(std::string("sqlite: select: ") + sqlite3_errmsg(db_));
    sqlite3_reset(get_);
    return found;
  }

  template <class F>
  void scan(std::string_view from, std::size_t n, F&& each) const {
    bind_key(db_, scan_, from);
    check(db_, sqlite3_bind_int64(scan_, 2, static_cast<sqlite3_int64>(n)), "bind");
    int rc;
    while ((rc = sqlite3_step(scan_)) == SQLITE_ROW) each(column_digest(scan_));
    if (rc != SQLITE_DONE) fail(std::string("sqlite: scan: ") + sqlite3_errmsg(db_));
    sqlite3_reset(scan_);
  }

  template <class F>
  void scan_all(F&& each) const {
    int rc;
    while ((rc = sqlite3_step(all_)) == SQLITE_ROW) each(column_digest(all_));
    if (rc != SQLITE_DONE) fail(std::string("sqlite: scan: ") + sqlite3_errmsg(db_));
    sqlite3_reset(all_);
  }

 private:
  static void check(sqlite3* db, int rc, const char* what) {
    if (rc != SQLITE_OK)
      fail(std::string("sqlite: ") + what + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
  }
  static void exec(sqlite3* db, const char* sql) {
    char* message = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
      const std::string text = message ? message : "?";
      sqlite3_free(message);
      fail(std::string("sqlite: ") + sql + ": " + text);
    }
  }
  static sqlite3_stmt* prepare(sqlite3* db, const char* sql) {
    sqlite3_stmt* statement = nullptr;
    check(db, sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &statement, nullptr), sql);
    return statement;
  }
  static void bind_key(sqlite3* db, sqlite3_stmt* statement, std::string_view key) {
    if constexpr (K == data_kind::u64) {
      const std::uint64_t flipped = load_be64(key.data()) ^ 0x8000000000000000ull;
      check(db, sqlite3_bind_int64(statement, 1, static_cast<sqlite3_int64>(flipped)), "bind");
    } else {
      check(
          db,
          sqlite3_bind_blob(statement, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC),
          "bind");
    }
  }
  static std::uint64_t column_digest(sqlite3_stmt* statement) {
    if constexpr (K == data_kind::str) {
      const void* data = sqlite3_column_blob(statement, 0);
      return value_digest<K>(data, static_cast<std::size_t>(sqlite3_column_bytes(statement, 0)));
    } else {
      return static_cast<std::uint64_t>(sqlite3_column_int64(statement, 0));
    }
  }

  sqlite3* db_ = nullptr;
  sqlite3_stmt* get_ = nullptr;
  sqlite3_stmt* scan_ = nullptr;
  sqlite3_stmt* all_ = nullptr;
};

}  // namespace

std::unique_ptr<peer_runner> make_sqlite(data_kind kind) { return make_runner<sqlite_peer>(kind); }

}  // namespace bbtree::bench
