// The common interface of the benchmarked stores ("peers").
//
// Each peer is a plain class in its own peer_*.cc file, templated on the
// data kind, with non-virtual operations:
//
//   static constexpr const char* name;
//   void build(const dataset&, bool sorted_input, const std::string& file);
//   std::uint64_t footprint(const std::string& file);   // bytes used
//   void open(const std::string& file, bool huge);      // for reading
//   void close();
//   bool get(std::string_view key, std::uint64_t& digest);
//   // optional:
//   template <class F> void scan(std::string_view from, std::size_t n, F&& each);
//   template <class F> void scan_all(F&& each);          // each(digest)
//   std::size_t get_many(std::span<const std::string_view>, std::uint64_t& digest);
//
// runner<P> wraps such a class behind peer_runner, whose virtual functions
// each run a whole timed loop: there is one virtual call per loop, none per
// lookup.
#pragma once

#include "dataset.h"
#include "smaps.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bbtree::bench {

// What a loop saw: the checks the driver compares with the dataset's answers.
struct tally {
  std::uint64_t hits = 0;     // lookups that found their key
  std::uint64_t digest = 0;   // sum of value digests returned
  std::uint64_t entries = 0;  // entries visited by scans
};

struct peer_caps {
  bool file = true;  // builds a file (else: an in-memory structure)
  bool unsorted_build = true;
  bool huge = false;  // has a huge-page reading mode
  bool scans = false;
  bool batched = false;  // get_many
  bool verify = false;
};

class peer_runner {
 public:
  virtual ~peer_runner() = default;
  virtual const char* name() const = 0;
  virtual peer_caps caps() const = 0;
  // How the peer is configured (compression, sync, page size ...), for the report.
  virtual std::string config(bool huge) const = 0;
  // The files a build at `file` creates (for sizes, cache dropping, cleanup).
  virtual std::vector<std::string> files(const std::string& file) const { return {file}; }

  virtual void build(const dataset& d, bool sorted_input, const std::string& file) = 0;
  virtual std::uint64_t footprint(const std::string& file) = 0;
  virtual void open(const std::string& file, bool huge) = 0;
  virtual void close() = 0;
  // Where the data being read lives, for smaps; empty when unknown.
  virtual smaps_usage memory_usage(const std::string& file) = 0;

  virtual tally lookup(std::span<const std::string_view> keys) = 0;
  virtual tally lookup_batched(std::span<const std::string_view> keys, std::size_t batch) = 0;
  virtual tally scan(std::span<const std::string_view> starts, std::size_t length) = 0;
  virtual tally scan_all() = 0;
  // bbtree::verify over the whole file; returns bytes checked (0: not available).
  virtual std::uint64_t verify(const std::string&) { return 0; }
};

template <class P>
class runner final : public peer_runner {
 public:
  const char* name() const override { return P::name; }
  peer_caps caps() const override { return P::caps(); }
  std::string config(bool huge) const override { return P::config(huge); }
  std::vector<std::string> files(const std::string& file) const override {
    if constexpr (requires { P::files(file); }) {
      return P::files(file);
    } else {
      return {file};
    }
  }
  void build(const dataset& d, bool sorted_input, const std::string& file) override {
    peer_.build(d, sorted_input, file);
  }
  std::uint64_t footprint(const std::string& file) override { return peer_.footprint(file); }
  void open(const std::string& file, bool huge) override { peer_.open(file, huge); }
  void close() override { peer_.close(); }
  smaps_usage memory_usage(const std::string& file) override { return peer_.memory_usage(file); }

  // The loops count into locals and fill the tally at the end.  A tally
  // updated in place is the caller's memory, which the value loads (char
  // access, which may alias anything) force the compiler to load and store
  // on every entry: 0.2-0.3 ns of each entry of bbtree's full scans, charged
  // to the peer (bench/RESULTS.md, "The benchmark's loops count into
  // locals").
  tally lookup(std::span<const std::string_view> keys) override {
    std::uint64_t hits = 0;
    std::uint64_t digests = 0;
    for (const std::string_view key : keys) {
      std::uint64_t digest = 0;
      if (peer_.get(key, digest)) {
        ++hits;
        digests += digest;
      }
    }
    return {.hits = hits, .digest = digests};
  }

  tally lookup_batched(std::span<const std::string_view> keys, std::size_t batch) override {
    std::uint64_t hits = 0;
    std::uint64_t digests = 0;
    if constexpr (requires(std::uint64_t & d) { peer_.get_many(keys, d); }) {
      for (std::size_t at = 0; at < keys.size(); at += batch) {
        const auto part = keys.subspan(at, std::min(batch, keys.size() - at));
        hits += peer_.get_many(part, digests);
      }
    } else {
      (void)keys;
      (void)batch;
    }
    return {.hits = hits, .digest = digests};
  }

  // Flattened, so that the peer's scan loop and the tally lambda are inlined
  // here and the tallies stay in registers; a peer whose loop the compiler
  // left out of line otherwise paid a read-modify-write of memory per
  // entry (bench/RESULTS.md, "Walks").
  [[gnu::flatten]] tally scan(std::span<const std::string_view> starts,
                              std::size_t length) override {
    std::uint64_t entries = 0;
    std::uint64_t digests = 0;
    if constexpr (P::caps().scans) {
      for (const std::string_view from : starts) {
        peer_.scan(from, length, [&entries, &digests](std::uint64_t digest) {
          ++entries;
          digests += digest;
        });
      }
    } else {
      (void)starts;
      (void)length;
    }
    return {.digest = digests, .entries = entries};
  }

  [[gnu::flatten]] tally scan_all() override {
    std::uint64_t entries = 0;
    std::uint64_t digests = 0;
    if constexpr (P::caps().scans) {
      peer_.scan_all([&entries, &digests](std::uint64_t digest) {
        ++entries;
        digests += digest;
      });
    }
    return {.digest = digests, .entries = entries};
  }

  std::uint64_t verify(const std::string& file) override {
    if constexpr (requires { peer_.verify(file); }) {
      return peer_.verify(file);
    } else {
      return 0;
    }
  }

 private:
  P peer_;
};

// Makes runner<peer<K>> for the kind of a dataset; nullptr when the peer
// does not take that kind of data.
template <template <data_kind> class Peer>
std::unique_ptr<peer_runner> make_runner(data_kind kind) {
  switch (kind) {
    case data_kind::u64:
      if constexpr (Peer<data_kind::u64>::supported)
        return std::make_unique<runner<Peer<data_kind::u64>>>();
      break;
    case data_kind::fix16:
      if constexpr (Peer<data_kind::fix16>::supported)
        return std::make_unique<runner<Peer<data_kind::fix16>>>();
      break;
    case data_kind::str:
      if constexpr (Peer<data_kind::str>::supported)
        return std::make_unique<runner<Peer<data_kind::str>>>();
      break;
  }
  return nullptr;
}

// One factory per peer file.
std::unique_ptr<peer_runner> make_std_map(data_kind kind);
std::unique_ptr<peer_runner> make_absl_btree(data_kind kind);
std::unique_ptr<peer_runner> make_sorted_array(data_kind kind);
std::unique_ptr<peer_runner> make_lmdb(data_kind kind);
std::unique_ptr<peer_runner> make_mtbl(data_kind kind);
std::unique_ptr<peer_runner> make_sqlite(data_kind kind);
std::unique_ptr<peer_runner> make_marisa(data_kind kind);
std::unique_ptr<peer_runner> make_cdb(data_kind kind);
// bbtree's page size for builds (bbtree-bench --page-size); 0: the
// library's default.
extern std::uint32_t bbtree_page_size;
std::unique_ptr<peer_runner> make_bbtree(data_kind kind);

// Helpers shared by the adapters.
[[noreturn]] void fail(const std::string& message);
std::uint64_t file_size(const std::string& path);
// Heap bytes in use (mallinfo2), for the in-memory peers' footprint.
std::uint64_t heap_in_use();
// 2 MiB-aligned anonymous memory advised MADV_HUGEPAGE holding a copy of a
// file: the peers' "huge" reading mode when they read a plain file.
struct huge_copy {
  void* data = nullptr;
  std::size_t size = 0;
  std::size_t mapped = 0;
  huge_copy() = default;
  huge_copy(const huge_copy&) = delete;
  huge_copy& operator=(const huge_copy&) = delete;
  ~huge_copy() { reset(); }
  void load(const std::string& path);
  void reset() noexcept;
};
// madvise(MADV_HUGEPAGE) every mapping of `path` in this process; returns
// how many mappings were advised.
int advise_huge_mappings(const std::string& path);

}  // namespace bbtree::bench
