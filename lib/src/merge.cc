// Merging index files and shard sets: a loser tree over the leaves of the
// inputs' files, feeding a builder.
//
// Each input is walked leaf by leaf through reader_core rather than through
// cursors, so that the merge can check what a lookup does not (each leaf's
// checksum, each out-of-page item's checksum, that keys ascend) and knows
// which pages it is done with: every 16 MiB of leaves (merge_drop_step), the mapped pages
// behind the merge are dropped, so that resident memory does not grow with
// the inputs.
#include <bbtree/merge.h>

#include <bbtree/detail/reader_core.h>
#include <bbtree/reader.h>
#include <bbtree/shards.h>
#include <bbtree/text_format.h>

#include "key_compare.h"
#include "loser_tree.h"

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

namespace bbtree {

namespace fs = std::filesystem;

namespace detail {
namespace {

// The entries of one index file in key order.  The reader, a shard of one
// of merge_indexes' inputs, outlives it.
class index_source {
 public:
  explicit index_source(const reader& index) : core_(&index.core()) {}

  const std::string& name() const noexcept { return core_->name(); }

  // Moves to the next entry; false (and exhausted()) after the last.
  bool advance() {
    while (!in_leaf_ || position_ >= leaf_.count) {
      const std::uint32_t next = in_leaf_ ? leaf_.number + 1 : core_->first_leaf();
      if (next >= core_->end_leaf()) {
        exhausted_ = true;
        return false;
      }
      enter_leaf(next);
    }
    std::swap(key_, previous_key_);
    key_.clear();
    core_->append_key(leaf_, position_, key_);
    if (core_->info().keys == key_kind::bytes &&
        core_->key_suffix_length(leaf_, position_) > leaf_.inline_width) {
      check_item(core_->key_remainder(leaf_, position_), "key");
    }
    if (has_previous_ && compare_keys(previous_key_, key_) >= 0) {
      core_->corrupt(leaf_.number, fmt::format("entry {}: keys out of order", position_));
    }
    const item_view value = core_->value_item(leaf_, position_);
    check_item(value, "value");
    value_ = value.bytes;
    has_previous_ = true;
    ++position_;
    return true;
  }

  bool exhausted() const noexcept { return exhausted_; }
  // The current entry; the key until the next advance(), the value while
  // the input is open.
  std::string_view key() const noexcept { return key_; }
  std::string_view value() const noexcept { return value_; }

 private:
  void enter_leaf(std::uint32_t number) {
    leaf_ = core_->page(number, 0);
    const std::uint32_t page_size = core_->info().page_size;
    const std::uint32_t stored =
        format::load_le<std::uint32_t>(leaf_.bytes + format::page::checksum_offset);
    if (stored != format::page_checksum(leaf_.bytes, page_size))
      core_->corrupt(number, "checksum mismatch");
    in_leaf_ = true;
    position_ = 0;
    if (std::uint64_t{number - dropped_before_} * page_size >= merge_drop_step) {
      drop_pages_behind(number);
    }
  }

  // The pages before leaf `number`, and the blob region, whose values were
  // already copied into the builder: the next access, if any, maps them
  // again from the page cache.
  void drop_pages_behind(std::uint32_t number) {
    dropped_before_ = number;
    const auto system_page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const auto base = reinterpret_cast<std::uintptr_t>(core_->base());
    if (system_page == 0 || base % system_page != 0) return;
    auto drop = [&](std::uint64_t begin, std::uint64_t end) {
      begin = (begin + system_page - 1) / system_page * system_page;
      end = end / system_page * system_page;
      if (end > begin) ::madvise(reinterpret_cast<void*>(base + begin), end - begin, MADV_DONTNEED);
    };
    drop(0, std::uint64_t{number} * core_->info().page_size);
    const file_info& info = core_->info();
    if (info.blob_length > 0) drop(info.blob_offset, info.blob_offset + info.blob_length);
  }

  void check_item(const item_view& item, const char* what) const {
    if (item.external &&
        format::crc32c(item.bytes.data(), item.bytes.size()) != item.stored_checksum) {
      core_->corrupt(leaf_.number,
                     fmt::format("entry {}: the {} stored out of the page fails its checksum",
                                 position_, what));
    }
  }

  const reader_core* core_;
  page_view leaf_;
  bool in_leaf_ = false;
  std::uint32_t position_ = 0;  // of the next entry in leaf_
  std::uint32_t dropped_before_ = 0;
  std::string key_;
  std::string previous_key_;
  bool has_previous_ = false;
  std::string_view value_;
  bool exhausted_ = false;
};

std::string describe_types(const file_info& info) {
  const entry_types types = entry_types::of(info);
  return fmt::format("{} keys and {} values", key_type_name(types), value_type_name(types));
}

bool same_types(const file_info& a, const file_info& b) {
  return a.keys == b.keys && a.key_size == b.key_size && a.values == b.values &&
         a.value_size == b.value_size;
}

}  // namespace
}  // namespace detail

build_summary merge_indexes(std::span<const fs::path> inputs, const fs::path& destination,
                            const merge_options& options) {
  if (inputs.empty()) throw error(errc::invalid_argument, "no input files to merge");
  // A shard set's shards cover disjoint ranges, so each can be a source of
  // its own at the set's place among the inputs: the duplicate policy's
  // "first" and "last" input still mean what they say.
  std::vector<sharded_reader> sets;
  sets.reserve(inputs.size());
  for (const fs::path& path : inputs)
    sets.push_back(sharded_reader::open(
        path, open_options{memory_mode::map, false, access_advice::sequential}));
  // A set's info() has its types, and its page size if its shards share
  // one (else 0, the builder's default).
  const file_info& first = sets.front().info();
  std::uint64_t total = 0;
  for (const sharded_reader& set : sets) {
    const file_info& info = set.info();
    if (!detail::same_types(first, info)) {
      throw error(
          errc::type_mismatch,
          fmt::format("{} has {}, but {} has {}: only files of the same key and value types merge",
                      sets.front().name(), detail::describe_types(first), set.name(),
                      detail::describe_types(info)));
    }
    total += info.entries;
  }
  std::vector<detail::index_source> sources;
  for (const sharded_reader& set : sets) {
    for (std::size_t number = 0; number < set.shard_count(); ++number)
      sources.emplace_back(set.shard(number));
  }

  build_options build;
  build.keys = first.keys;
  build.key_size = first.key_size;
  build.values = first.values;
  build.value_size = first.value_size;
  build.page_size = options.page_size != 0 ? options.page_size
                    : first.page_size != 0 ? first.page_size
                                           : build.page_size;
  build.duplicates = options.duplicates;
  build.overwrite = options.overwrite;
  build.sync = options.sync;
  build.metadata = options.metadata;
  builder out(destination, build);
  if (sources.empty()) return out.finish();  // only sets without shards

  for (detail::index_source& source : sources) source.advance();
  // Of equal keys, the earlier input's comes first: keep_first and
  // keep_last then mean the input given first and last.
  auto before = [&sources](std::size_t a, std::size_t b) {
    const detail::index_source& x = sources[a];
    const detail::index_source& y = sources[b];
    if (x.exhausted() || y.exhausted()) return !x.exhausted();
    const int order = detail::compare_keys(x.key(), y.key());
    return order != 0 ? order < 0 : a < b;
  };
  detail::loser_tree<decltype(before)> tree(sources.size(), before);

  merge_progress progress{0, total};
  constexpr std::uint64_t report_interval = 1 << 18;
  std::size_t previous_source = 0;
  for (;;) {
    const std::size_t winner = tree.winner();
    detail::index_source& source = sources[winner];
    if (source.exhausted()) break;
    try {
      out.add(source.key(), source.value());
    } catch (const error& failure) {
      if (failure.code() != errc::duplicate_key) throw;
      throw error(errc::duplicate_key, fmt::format("duplicate key \"{}\" in {} and {}",
                                                   key_text(source.key(), entry_types::of(first)),
                                                   sources[previous_source].name(), source.name()));
    }
    previous_source = winner;
    source.advance();
    tree.replay();
    if (++progress.entries % report_interval == 0 && options.progress) options.progress(progress);
  }
  if (options.progress) options.progress(progress);
  return out.finish();
}

}  // namespace bbtree
