// bbtree: built with bbtree::builder from sorted input and with
// bbtree::sorting_builder from unsorted input (sync off, as for every
// peer); read with reader::open, memory_mode::map ("off") or
// memory_mode::map_huge_pages ("on": the page cache holds a built file in
// 2 MiB folios, which the mapping maps with 2 MiB entries, without a copy).
// Batched lookups use get_many.
#include "peer.h"

#include <bbtree/builder.h>
#include <bbtree/reader.h>
#include <bbtree/verify.h>

#include <optional>
#include <stdexcept>

namespace bbtree::bench {
namespace {

template <data_kind K>
class bbtree_peer {
 public:
  static constexpr bool supported = true;
  static constexpr const char* name = "bbtree";
  static constexpr peer_caps caps() {
    return peer_caps{.huge = true, .scans = true, .batched = true, .verify = true};
  }
  static std::string config(bool huge) {
    const std::uint32_t page_size =
        bbtree_page_size != 0 ? bbtree_page_size : format::default_page_size;
    return std::to_string(page_size) + "-byte pages" + (bbtree_page_size == 0 ? " (default)" : "") +
           ", memory_mode::" + (huge ? "map_huge_pages" : "map");
  }

  void build(const dataset& d, bool sorted_input, const std::string& file) {
    build_options options;
    if constexpr (K == data_kind::u64) {
      options.keys = key_kind::u64;
    } else if constexpr (K == data_kind::fix16) {
      options.keys = key_kind::fixed;
      options.key_size = 16;
    } else {
      options.keys = key_kind::bytes;
    }
    options.values = K == data_kind::str ? value_kind::bytes : value_kind::u64;
    options.overwrite = true;
    options.sync = false;
    if (bbtree_page_size != 0) options.page_size = bbtree_page_size;
    if (sorted_input) {
      builder b(file, options);
      for (std::size_t i = 0; i < d.size(); ++i) b.add(d.keys[i], d.values[i]);
      b.finish();
    } else {
      sorting_builder b(file, options);
      for (const std::uint32_t i : d.unsorted) b.add(d.keys[i], d.values[i]);
      b.finish();
    }
  }

  std::uint64_t footprint(const std::string& file) { return file_size(file); }

  void open(const std::string& file, bool huge) {
    open_options options;
    options.memory = huge ? memory_mode::map_huge_pages : memory_mode::map;
    reader_.emplace(reader::open(file, options));
  }
  void close() { reader_.reset(); }

  smaps_usage memory_usage(const std::string&) {
    const auto bytes = reader_->bytes();
    return smaps_for_range(bytes.data(), bytes.size());
  }

  bool get(std::string_view key, std::uint64_t& digest) const {
    const std::optional<std::string_view> value = reader_->get(key);
    if (!value) return false;
    digest = value_digest<K>(value->data(), value->size());
    return true;
  }

  std::size_t get_many(std::span<const std::string_view> keys, std::uint64_t& digest) {
    out_.resize(keys.size());
    const std::size_t found = reader_->get_many(keys, out_);
    for (const auto& value : out_) {
      if (value) digest += value_digest<K>(value->data(), value->size());
    }
    return found;
  }

  // A walk from the bound (cursor::for_each_until), stopped after n
  // entries: the library's way through a range, as scan_all's is.  Before
  // 2026-12-04 this stepped a cursor, whose index makes a round trip
  // through memory at every step (bench/RESULTS.md, "100-entry scans walk").
  template <class F>
  void scan(std::string_view from, std::size_t n, F&& each) const {
    if (n == 0) return;
    reader_->lower_bound(from).for_each_until(reader_->end(), [&](const entry_ref& entry) {
      const std::string_view value = entry.value();
      each(value_digest<K>(value.data(), value.size()));
      return --n > 0;
    });
  }

  // A walk (reader::for_each), the library's way through many entries;
  // before 2026-12-01 this stepped a cursor (bench/RESULTS.md, "Walks").
  template <class F>
  void scan_all(F&& each) const {
    reader_->for_each([&each](const entry_ref& entry) {
      const std::string_view value = entry.value();
      each(value_digest<K>(value.data(), value.size()));
    });
  }

  // Full verification (bbtree/verify.h), mapping the file afresh; returns
  // the bytes verified.  A file that does not verify is a failed run.
  std::uint64_t verify(const std::string& file) {
    const verify_report report = verify_file(file);
    if (!report.ok()) {
      throw std::runtime_error(format_problem(report, report.problems.front()));
    }
    return report.file_size;
  }

 private:
  std::optional<reader> reader_;
  std::vector<std::optional<std::string_view>> out_;
};

}  // namespace

std::uint32_t bbtree_page_size = 0;

std::unique_ptr<peer_runner> make_bbtree(data_kind kind) { return make_runner<bbtree_peer>(kind); }

}  // namespace bbtree::bench
