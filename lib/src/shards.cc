// Reading a shard set as one index: sharded_reader, and the cursor moves
// that cross from one shard to the next.
//
// Each query is routed to the one shard whose range can hold its key: the
// last shard whose first key is <= the key (the first shard for keys below
// every range).  A position in the set is a shard and a position in it,
// normalized so that only the last shard's end is ever used: the end of any
// other shard is the first entry of the next.  Ranks add the entries of the
// shards before (prefix sums of the entry counts).
#include <bbtree/detail/reader_core.h>
#include <bbtree/shards.h>

#include "key_compare.h"
#include "shard_support.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace bbtree {

namespace fs = std::filesystem;
using detail::reader_core;

namespace detail {

class shard_set {
 public:
  // A position in the set: a shard and a position within it.
  struct position {
    std::uint32_t shard = 0;
    reader_core::position at{0, 0};
  };

  std::string name;
  bool from_manifest = false;
  shard_manifest manifest;
  std::vector<reader> shards;
  std::vector<std::uint64_t> first_ranks;  // shards.size() + 1 prefix sums
  file_info info;

  // Called once the shards are open.
  void complete() {
    first_ranks.assign(1, 0);
    for (const reader& shard : shards) first_ranks.push_back(first_ranks.back() + shard.size());
    info = file_info{};
    info.major_version = format::format_major;
    info.minor_version = format::format_minor;
    const entry_types types = canonical_types(manifest.types);
    info.keys = types.keys;
    info.key_size = format::encoded_key_size(types.keys, types.key_size);
    info.values = types.values;
    info.value_size = format::encoded_value_size(types.values, types.value_size);
    info.entries = first_ranks.back();
    auto saturating_add = [](std::uint32_t a, std::uint32_t b) {
      return a > std::numeric_limits<std::uint32_t>::max() - b
                 ? std::numeric_limits<std::uint32_t>::max()
                 : a + b;
    };
    for (std::size_t number = 0; number < shards.size(); ++number) {
      const file_info& shard = shards[number].info();
      info.page_size = number == 0 || shard.page_size == info.page_size ? shard.page_size : 0;
      info.file_size += shard.file_size;
      info.page_count = saturating_add(info.page_count, shard.page_count);
      info.leaf_count = saturating_add(info.leaf_count, shard.leaf_count);
      info.blob_length += shard.blob_length;
      info.metadata_length += shard.metadata_length;
      info.height = std::max(info.height, shard.height);
      info.max_key_length = std::max(info.max_key_length, shard.max_key_length);
      info.max_value_length = std::max(info.max_value_length, shard.max_value_length);
    }
  }

  std::uint32_t count() const noexcept { return static_cast<std::uint32_t>(shards.size()); }
  const reader_core& core(std::uint32_t shard) const noexcept { return shards[shard].core(); }

  // The last shard whose first key is <= key, or 0.
  std::uint32_t route(std::string_view key) const noexcept {
    const auto& records = manifest.shards;
    const auto after = std::upper_bound(records.begin(), records.end(), key,
                                        [](std::string_view probe, const shard_record& shard) {
                                          return compare_keys(probe, shard.first_key) < 0;
                                        });
    return after == records.begin() ? 0 : static_cast<std::uint32_t>(after - records.begin() - 1);
  }

  // Moves a position at the end of a shard on to the next shard's first
  // entry, skipping shards without entries (only a damaged one is).
  position normalized(std::uint32_t shard, reader_core::position at) const {
    while (at.leaf >= core(shard).end_leaf() && shard + 1 < count()) {
      ++shard;
      at = core(shard).normalize(core(shard).first_leaf(), 0);
    }
    return {shard, at};
  }

  position begin_position() const {
    return normalized(0, core(0).normalize(core(0).first_leaf(), 0));
  }
  position end_position() const { return {count() - 1, core(count() - 1).end_position()}; }
  // `bound_leaf`, when given, receives the position's leaf if the search
  // decoded it (reader_core::search).  Such a position lies inside its
  // leaf, so normalized() keeps it where it is.
  position search(std::string_view key, bool or_equal, page_view* bound_leaf = nullptr) const {
    const std::uint32_t shard = route(key);
    return normalized(shard, core(shard).search(key, or_equal, bound_leaf));
  }

  position start_of(const bound& from, page_view* bound_leaf = nullptr) const {
    switch (from.type) {
      case bound::kind::unbounded:
        return begin_position();
      case bound::kind::inclusive:
        return search(from.key, false, bound_leaf);
      case bound::kind::exclusive:
        return search(from.key, true, bound_leaf);
    }
    return end_position();
  }

  position end_of(const bound& to) const {
    switch (to.type) {
      case bound::kind::unbounded:
        return end_position();
      case bound::kind::inclusive:
        return search(to.key, true);
      case bound::kind::exclusive:
        return search(to.key, false);
    }
    return end_position();
  }

  static bool before(const position& a, const position& b) noexcept {
    if (a.shard != b.shard) return a.shard < b.shard;
    return a.at.leaf < b.at.leaf || (a.at.leaf == b.at.leaf && a.at.index < b.at.index);
  }

  std::uint64_t rank_of(const position& at) const {
    return first_ranks[at.shard] + core(at.shard).rank_of(at.at);
  }

  cursor make_cursor(const position& at, const page_view& leaf = {}) const {
    return cursor(&core(at.shard), at.at.leaf, at.at.index, this, at.shard, leaf);
  }

  // The queries for a set of any number of shards but one (sharded_reader
  // sends a single shard's straight to its reader).
  cursor begin() const { return shards.empty() ? cursor() : make_cursor(begin_position()); }
  cursor end() const { return shards.empty() ? cursor() : make_cursor(end_position()); }

  cursor find(std::string_view key) const {
    if (shards.empty()) return cursor();
    const std::uint32_t shard = route(key);
    const cursor found = shards[shard].find(key);
    if (found.is_end()) return end();
    return make_cursor({shard, {found.leaf_, found.index_}}, found.leaf_page_);
  }

  // A cursor that a scan starts from, as reader's: with the leaf its search
  // decoded, and the next leaf of its shard on its way.
  cursor scan_start(const position& at, const page_view& decoded_leaf) const {
    core(at.shard).prefetch_for_scan(at.at.leaf);
    return make_cursor(at, decoded_leaf);
  }

  cursor bound_cursor(std::string_view key, bool or_equal) const {
    if (shards.empty()) return cursor();
    page_view bound_leaf;
    const position at = search(key, or_equal, &bound_leaf);
    return scan_start(at, bound_leaf);
  }

  entry_range range(const bound& from, const bound& to) const {
    if (shards.empty()) return {cursor(), cursor()};
    page_view bound_leaf;
    const position first = start_of(from, &bound_leaf);
    position last = end_of(to);
    if (before(last, first)) last = first;
    return {scan_start(first, bound_leaf), make_cursor(last)};
  }

  std::uint64_t count_between(const bound& from, const bound& to) const {
    if (shards.empty()) return 0;
    const std::uint64_t first = rank_of(start_of(from));
    const std::uint64_t last = rank_of(end_of(to));
    return last > first ? last - first : 0;
  }

  std::uint64_t rank(std::string_view key) const {
    return shards.empty() ? 0 : rank_of(search(key, false));
  }

  cursor at(std::uint64_t rank) const {
    if (shards.empty()) return cursor();
    if (rank >= first_ranks.back()) return end();
    // The last shard whose first rank is <= rank.
    const auto after = std::upper_bound(first_ranks.begin(), first_ranks.end() - 1, rank);
    const auto shard = static_cast<std::uint32_t>(after - first_ranks.begin() - 1);
    return make_cursor(normalized(shard, core(shard).at_rank(rank - first_ranks[shard])));
  }

  // Keys grouped by shard (a counting sort of their positions), each
  // group through its shard's batched lookup.  A key outside every shard's
  // range is missing without a lookup.
  // Each chunk of keys goes to its shards in groups, one batched lookup a
  // shard.  Chunks live on the stack, so that a batch allocates nothing,
  // and are large enough that the groups of a set of a few shards still
  // fill the reader's own groups of 16.
  std::size_t get_many(std::span<const std::string_view> keys,
                       std::span<std::optional<std::string_view>> out) const {
    constexpr std::size_t chunk = 256;
    std::pair<std::uint32_t, std::uint32_t> routed[chunk];  // (shard, key in chunk)
    std::string_view group_keys[chunk];
    std::optional<std::string_view> group_values[chunk];
    std::size_t found = 0;
    for (std::size_t start = 0; start < keys.size(); start += chunk) {
      const std::size_t n = std::min(chunk, keys.size() - start);
      std::size_t routed_count = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const std::string_view key = keys[start + i];
        const std::uint32_t shard = shards.empty() ? 0 : route(key);
        // A key outside the shard's range is in no shard.
        if (shards.empty() || compare_keys(key, manifest.shards[shard].first_key) < 0 ||
            compare_keys(key, manifest.shards[shard].last_key) > 0) {
          out[start + i] = std::nullopt;
          continue;
        }
        routed[routed_count++] = {shard, static_cast<std::uint32_t>(i)};
      }
      std::sort(routed, routed + routed_count);
      for (std::size_t first = 0; first < routed_count;) {
        const std::uint32_t shard = routed[first].first;
        std::size_t last = first;
        for (; last < routed_count && routed[last].first == shard; ++last)
          group_keys[last - first] = keys[start + routed[last].second];
        const std::size_t size = last - first;
        found += shards[shard].get_many(std::span(group_keys, size), std::span(group_values, size));
        for (std::size_t k = first; k < last; ++k)
          out[start + routed[k].second] = group_values[k - first];
        first = last;
      }
    }
    return found;
  }
};
}  // namespace detail

// ---------------------------------------------------------------------------
// Cursor moves across shards

void cursor::enter_next_shard() {
  const std::vector<reader>& shards = set_->shards;
  while (leaf_ >= core_->end_leaf() && shard_ + 1 < shards.size()) {
    ++shard_;
    core_ = &shards[shard_].core();
    const auto first = core_->normalize(core_->first_leaf(), 0);
    leaf_ = first.leaf;
    index_ = first.index;
  }
}

void cursor::enter_previous_shard() {
  const std::vector<reader>& shards = set_->shards;
  while (leaf_ >= core_->end_leaf()) {
    if (shard_ == 0) {
      // Before the first entry: the end, as for a single file.
      shard_ = static_cast<std::uint32_t>(shards.size() - 1);
      core_ = &shards[shard_].core();
      const auto end = core_->end_position();
      leaf_ = end.leaf;
      index_ = end.index;
      return;
    }
    --shard_;
    core_ = &shards[shard_].core();
    const auto last = core_->previous(core_->end_position());
    leaf_ = last.leaf;
    index_ = last.index;
  }
}

std::uint64_t cursor::entries_before_shard() const noexcept { return set_->first_ranks[shard_]; }

// ---------------------------------------------------------------------------
// sharded_reader

sharded_reader::sharded_reader(std::unique_ptr<detail::shard_set> set) : set_(std::move(set)) {
  if (set_->shards.size() == 1) single_ = &set_->shards.front();
}

sharded_reader::sharded_reader(reader single) {
  auto set = std::make_unique<detail::shard_set>();
  set->name = single.name();
  set->manifest.types = detail::canonical_types(entry_types::of(single.info()));
  shard_record record;
  record.path = fs::path(single.name()).filename().string();
  record.entries = single.size();
  record.file_size = single.info().file_size;
  record.header_checksum = detail::header_checksum_of(single);
  set->manifest.shards.push_back(std::move(record));
  set->shards.push_back(std::move(single));
  set->complete();
  // A single file's header, as it is, not one made up.
  set->info = set->shards.front().info();
  set_ = std::move(set);
  single_ = &set_->shards.front();
}

sharded_reader::sharded_reader(sharded_reader&&) noexcept = default;
sharded_reader& sharded_reader::operator=(sharded_reader&&) noexcept = default;
sharded_reader::~sharded_reader() = default;

sharded_reader sharded_reader::open(const fs::path& path, const open_options& options) {
  if (std::optional<reader> index = detail::open_unless_manifest(path, options))
    return sharded_reader(std::move(*index));
  auto set = std::make_unique<detail::shard_set>();
  set->name = path.string();
  set->from_manifest = true;
  set->manifest = read_shard_manifest(path);
  set->shards.reserve(set->manifest.shards.size());
  for (const shard_record& record : set->manifest.shards) {
    const fs::path file = detail::shard_path(path, record);
    try {
      set->shards.push_back(reader::open(file, options));
    } catch (const error& e) {
      throw error(e.code(), fmt::format("{}:{}: {}", set->name, record.line, e.what()));
    }
    const std::string mismatch =
        detail::header_mismatch(record, set->manifest.types, set->shards.back());
    if (!mismatch.empty()) {
      throw error(errc::corrupt,
                  fmt::format("{}:{}: shard {} does not match the manifest: {} (it was replaced or "
                              "rebuilt after the manifest was written)",
                              set->name, record.line, file.string(), mismatch));
    }
  }
  set->complete();
  return sharded_reader(std::move(set));
}

const file_info& sharded_reader::info() const noexcept { return set_->info; }
const std::string& sharded_reader::name() const noexcept { return set_->name; }
std::uint64_t sharded_reader::size() const noexcept { return set_->first_ranks.back(); }
bool sharded_reader::is_shard_set() const noexcept { return set_->from_manifest; }
const shard_manifest& sharded_reader::manifest() const noexcept { return set_->manifest; }
std::size_t sharded_reader::shard_count() const noexcept { return set_->shards.size(); }

const reader& sharded_reader::shard(std::size_t number) const {
  if (number >= set_->shards.size()) {
    throw error(errc::invalid_argument,
                fmt::format("shard {} of a set of {}", number, set_->shards.size()));
  }
  return set_->shards[number];
}

std::uint64_t sharded_reader::shard_first_rank(std::size_t number) const {
  if (number >= set_->shards.size()) {
    throw error(errc::invalid_argument,
                fmt::format("shard {} of a set of {}", number, set_->shards.size()));
  }
  return set_->first_ranks[number];
}

cursor sharded_reader::begin() const { return single_ ? single_->begin() : set_->begin(); }
cursor sharded_reader::end() const { return single_ ? single_->end() : set_->end(); }

std::optional<entry> sharded_reader::first() const {
  if (single_) return single_->first();
  return set_->shards.empty() ? std::nullopt : set_->shards.front().first();
}

std::optional<entry> sharded_reader::last() const {
  if (single_) return single_->last();
  return set_->shards.empty() ? std::nullopt : set_->shards.back().last();
}

std::optional<std::string_view> sharded_reader::get(std::string_view key) const {
  if (single_) return single_->get(key);
  if (set_->shards.empty()) return std::nullopt;
  return set_->shards[set_->route(key)].get(key);
}

cursor sharded_reader::find(std::string_view key) const {
  return single_ ? single_->find(key) : set_->find(key);
}

cursor sharded_reader::lower_bound(std::string_view key) const {
  return single_ ? single_->lower_bound(key) : set_->bound_cursor(key, false);
}

cursor sharded_reader::upper_bound(std::string_view key) const {
  return single_ ? single_->upper_bound(key) : set_->bound_cursor(key, true);
}

entry_range sharded_reader::equal_range(std::string_view key) const {
  if (single_) return single_->equal_range(key);
  cursor first = lower_bound(key);
  if (first.is_end() || first.key() != key) return {first, first};
  cursor last = first;
  ++last;
  return {std::move(first), std::move(last)};
}

entry_range sharded_reader::range(bound from, bound to) const {
  return single_ ? single_->range(from, to) : set_->range(from, to);
}

entry_range sharded_reader::prefix(std::string_view prefix) const {
  if (single_) return single_->prefix(prefix);
  const std::optional<std::string> successor = detail::prefix_successor(prefix);
  return set_->range(bound::inclusive(prefix),
                     successor ? bound::exclusive(*successor) : bound::none());
}

std::uint64_t sharded_reader::rank(std::string_view key) const {
  return single_ ? single_->rank(key) : set_->rank(key);
}

std::uint64_t sharded_reader::count(bound from, bound to) const {
  return single_ ? single_->count(from, to) : set_->count_between(from, to);
}

cursor sharded_reader::at(std::uint64_t rank) const {
  return single_ ? single_->at(rank) : set_->at(rank);
}

std::size_t sharded_reader::get_many(std::span<const std::string_view> keys,
                                     std::span<std::optional<std::string_view>> out) const {
  if (single_) return single_->get_many(keys, out);
  if (out.size() != keys.size()) {
    throw error(errc::invalid_argument, "get_many: keys and out differ in size");
  }
  return set_->get_many(keys, out);
}

}  // namespace bbtree
