// LMDB: built with MDB_APPEND from sorted input (plain puts from unsorted
// input) under MDB_NOSYNC | MDB_WRITEMAP, in one write transaction; read
// through a read-only environment (MDB_RDONLY | MDB_NOLOCK) with one read
// transaction held open.  u64 keys use MDB_INTEGERKEY (native u64 compare).
// The file is cut to its used pages after the build (MDB_WRITEMAP extends
// it to the map size).
#include "peer.h"

#include <lmdb.h>
#include <unistd.h>

#include <cstdio>

namespace bbtree::bench {
namespace {

void check(int rc, const char* what) {
  if (rc != MDB_SUCCESS) fail(std::string("lmdb: ") + what + ": " + mdb_strerror(rc));
}

template <data_kind K>
class lmdb_peer {
 public:
  static constexpr bool supported = true;
  static constexpr const char* name = "lmdb";
  static constexpr peer_caps caps() { return peer_caps{.huge = true, .scans = true}; }
  static std::string config(bool huge) {
    return std::string("MDB_RDONLY|MDB_NOLOCK, one read txn") +
           (K == data_kind::u64 ? ", MDB_INTEGERKEY" : "") +
           (huge ? ", map advised MADV_HUGEPAGE" : "");
  }
  static std::vector<std::string> files(const std::string& file) { return {file, file + "-lock"}; }

  ~lmdb_peer() { close(); }

  void build(const dataset& d, bool sorted_input, const std::string& file) {
    ::unlink(file.c_str());
    ::unlink((file + "-lock").c_str());
    MDB_env* env = nullptr;
    check(mdb_env_create(&env), "env_create");
    // Room for half-full pages after random inserts.
    const std::size_t mapsize = (std::size_t(1) << 30) + 4 * (d.raw_bytes() + 32 * d.size());
    check(mdb_env_set_mapsize(env, mapsize), "set_mapsize");
    check(mdb_env_open(env, file.c_str(), MDB_NOSUBDIR | MDB_NOSYNC | MDB_WRITEMAP, 0644),
          "env_open");
    MDB_txn* txn = nullptr;
    check(mdb_txn_begin(env, nullptr, 0, &txn), "txn_begin");
    MDB_dbi dbi;
    check(mdb_dbi_open(txn, nullptr, db_flags(), &dbi), "dbi_open");
    const unsigned put_flags = sorted_input ? MDB_APPEND : 0;
    for (std::size_t j = 0; j < d.size(); ++j) {
      const std::size_t i = sorted_input ? j : d.unsorted[j];
      std::uint64_t native;
      MDB_val key = make_key(d.keys[i], native);
      MDB_val value{d.values[i].size(), const_cast<char*>(d.values[i].data())};
      check(mdb_put(txn, dbi, &key, &value, put_flags), "put");
    }
    check(mdb_txn_commit(txn), "commit");
    MDB_envinfo info;
    MDB_stat stat;
    check(mdb_env_info(env, &info), "env_info");
    check(mdb_env_stat(env, &stat), "env_stat");
    mdb_env_close(env);
    const off_t used = static_cast<off_t>((info.me_last_pgno + 1) * stat.ms_psize);
    if (::truncate(file.c_str(), used) != 0) fail("truncate " + file);
    ::unlink((file + "-lock").c_str());
  }

  std::uint64_t footprint(const std::string& file) { return file_size(file); }

  void open(const std::string& file, bool huge) {
    close();
    check(mdb_env_create(&env_), "env_create");
    check(mdb_env_open(env_, file.c_str(), MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK, 0644),
          "env_open");
    check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn_), "txn_begin");
    check(mdb_dbi_open(txn_, nullptr, db_flags(), &dbi_), "dbi_open");
    check(mdb_cursor_open(txn_, dbi_, &cursor_), "cursor_open");
    // mdb_env_info's me_mapaddr is only set with MDB_FIXEDMAP: find the
    // mapping by its file.
    if (huge) advise_huge_mappings(file);
  }

  void close() {
    if (cursor_ != nullptr) mdb_cursor_close(cursor_);
    if (txn_ != nullptr) mdb_txn_abort(txn_);
    if (env_ != nullptr) mdb_env_close(env_);
    cursor_ = nullptr;
    txn_ = nullptr;
    env_ = nullptr;
  }

  smaps_usage memory_usage(const std::string& file) { return smaps_for_file(file); }

  bool get(std::string_view k, std::uint64_t& digest) const {
    std::uint64_t native;
    MDB_val key = make_key(k, native);
    MDB_val value;
    const int rc = mdb_get(txn_, dbi_, &key, &value);
    if (rc == MDB_NOTFOUND) return false;
    check(rc, "get");
    digest = value_digest<K>(value.mv_data, value.mv_size);
    return true;
  }

  template <class F>
  void scan(std::string_view from, std::size_t n, F&& each) const {
    std::uint64_t native;
    MDB_val key = make_key(from, native);
    MDB_val value;
    int rc = mdb_cursor_get(cursor_, &key, &value, MDB_SET_RANGE);
    for (; n > 0 && rc == MDB_SUCCESS; --n) {
      each(value_digest<K>(value.mv_data, value.mv_size));
      if (n > 1) rc = mdb_cursor_get(cursor_, &key, &value, MDB_NEXT);
    }
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) check(rc, "cursor_get");
  }

  template <class F>
  void scan_all(F&& each) const {
    MDB_val key, value;
    int rc = mdb_cursor_get(cursor_, &key, &value, MDB_FIRST);
    for (; rc == MDB_SUCCESS; rc = mdb_cursor_get(cursor_, &key, &value, MDB_NEXT)) {
      each(value_digest<K>(value.mv_data, value.mv_size));
    }
    if (rc != MDB_NOTFOUND) check(rc, "cursor_get");
  }

 private:
  static unsigned db_flags() { return K == data_kind::u64 ? MDB_INTEGERKEY : 0; }
  static MDB_val make_key(std::string_view k, std::uint64_t& native) {
    if constexpr (K == data_kind::u64) {
      native = load_be64(k.data());
      return MDB_val{8, &native};
    } else {
      (void)native;
      return MDB_val{k.size(), const_cast<char*>(k.data())};
    }
  }

  MDB_env* env_ = nullptr;
  MDB_txn* txn_ = nullptr;
  MDB_dbi dbi_ = 0;
  MDB_cursor* cursor_ = nullptr;
};

}  // namespace

std::unique_ptr<peer_runner> make_lmdb(data_kind kind) { return make_runner<lmdb_peer>(kind); }

}  // namespace bbtree::bench
