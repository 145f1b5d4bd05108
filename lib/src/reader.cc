// The public reader: opening (mapping, huge pages, copies), the query
// interface over reader_core, cursors, and the batched lookup.
#include <bbtree/detail/reader_core.h>
#include <bbtree/reader.h>

#include "code_layout.h"
#include "file_io.h"
#include "mapping.h"
#include "metadata_region.h"

#include <fmt/format.h>

#include <sys/stat.h>
#include <tuple>

namespace bbtree {

namespace fs = std::filesystem;
using detail::page_view;
using detail::reader_core;

BBTREE_FIRST_ANSWER reader::reader(std::unique_ptr<reader_core> core) : core_(std::move(core)) {}
BBTREE_FIRST_ANSWER reader::reader(reader&&) noexcept = default;
reader& reader::operator=(reader&&) noexcept = default;
BBTREE_FIRST_ANSWER reader::~reader() = default;

BBTREE_FIRST_ANSWER reader reader::open(const fs::path& path, const open_options& options) {
  return open_file(path.c_str(), path.string(), options);
}

BBTREE_FIRST_ANSWER reader reader::open(const std::string& path, const open_options& options) {
  return open_file(path.c_str(), path, options);
}

BBTREE_FIRST_ANSWER reader reader::open(const char* path, const open_options& options) {
  return open_file(path, path, options);
}

BBTREE_FIRST_ANSWER reader reader::open_file(const char* path, std::string name,
                                             const open_options& options) {
  struct stat status;
  if (::stat(path, &status) != 0) detail::throw_errno("cannot open", path);
  detail::require_regular_file(status, name);
  const auto size = static_cast<std::uint64_t>(status.st_size);
  if (size == 0) return from_memory({}, std::move(name));  // an empty file: not_bbtree, named
  detail::mapped_bytes bytes = detail::map_file(path, size, options);
  auto core =
      std::make_unique<reader_core>(std::move(name), bytes.base, size, std::move(bytes.holder),
                                    bytes.header_read ? bytes.header.data() : nullptr);
  core->set_memory(options.memory, bytes.copy);
  // Started only now that the header has checked: a file that fails to
  // open costs no copy.
  if (bytes.copy != nullptr) detail::start_background_copy(*bytes.copy);
  return reader(std::move(core));
}

reader reader::from_memory(std::span<const std::byte> bytes, std::string name) {
  static const unsigned char nothing = 0;
  const auto* base =
      bytes.empty() ? &nothing : reinterpret_cast<const unsigned char*>(bytes.data());
  return reader(std::make_unique<reader_core>(std::move(name), base, bytes.size(), nullptr));
}

bool reader::wait_for_huge_page_copy() const {
  if (core_->huge_page_copy() != nullptr) {
    return detail::wait_for_background_copy(*core_->huge_page_copy());
  }
  return core_->memory() == memory_mode::copy_huge_pages;
}

const file_info& reader::info() const noexcept { return core_->info(); }
const std::string& reader::name() const noexcept { return core_->name(); }
std::uint64_t reader::size() const noexcept { return core_->info().entries; }
std::span<const std::byte> reader::bytes() const noexcept {
  return {reinterpret_cast<const std::byte*>(core_->base()),
          static_cast<std::size_t>(core_->size())};
}

std::vector<std::pair<std::string, std::string>> reader::metadata() const {
  const file_info& info = core_->info();
  std::vector<std::pair<std::string, std::string>> entries;
  if (info.metadata_length == 0) return entries;
  const auto* block = core_->base() + info.metadata_offset;
  const std::uint64_t length = info.metadata_length;
  // Named as the verifier names a fault there (verify.h).
  auto bad = [&](std::uint64_t offset, std::string_view what) {
    throw error(errc::corrupt, fmt::format("{}: metadata (offset {}): {}", core_->name(),
                                           info.metadata_offset + offset, what));
  };
  if (format::crc32c(block, length) !=
      format::load_le<std::uint32_t>(core_->base() + format::header::metadata_checksum_offset)) {
    bad(0, "checksum mismatch");
  }
  // Opening checked that a region holds at least its 4-byte count.
  const detail::metadata_layout layout = detail::read_metadata_layout(block, length);
  if (layout.problem) bad(layout.problem->offset, layout.problem->what);
  entries.reserve(layout.pairs.size());
  for (const auto& [key, value] : layout.pairs) entries.emplace_back(key, value);
  return entries;
}

cursor reader::begin() const {
  return core_->make_cursor(core_->normalize(core_->first_leaf(), 0));
}
cursor reader::end() const { return core_->make_cursor(core_->end_position()); }

std::optional<entry> reader::first() const {
  cursor first = begin();
  if (first.is_end()) return std::nullopt;
  return entry{std::string(first.key()), first.value()};
}

std::optional<entry> reader::last() const {
  cursor last = end();
  --last;
  if (last.is_end()) return std::nullopt;
  return entry{std::string(last.key()), last.value()};
}

BBTREE_FIRST_ANSWER std::optional<std::string_view> reader::get(std::string_view key) const {
  return core_->get(key);
}

cursor reader::find(std::string_view key) const {
  const std::uint32_t leaf_number = core_->descend(key);
  const page_view leaf = core_->page(leaf_number, 0);
  const std::optional<std::uint32_t> index = core_->find_in_leaf(leaf, key);
  // The cursor starts with the leaf decoded here, as a bound's does.
  return index ? core_->make_cursor({leaf_number, *index}, leaf) : end();
}

namespace {

// A cursor that a scan starts from (reader_core::prefetch_for_scan).
cursor scan_start(const reader_core& core, reader_core::position at,
                  const page_view& decoded_leaf = {}) {
  core.prefetch_for_scan(at.leaf);
  return core.make_cursor(at, decoded_leaf);
}

// A cursor at the first entry >= key (> key when or_equal), starting with
// the leaf that the search decoded.
cursor bound_cursor(const reader_core& core, std::string_view key, bool or_equal) {
  page_view bound_leaf;
  const reader_core::position at = core.search(key, or_equal, &bound_leaf);
  return scan_start(core, at, bound_leaf);
}

}  // namespace

cursor reader::lower_bound(std::string_view key) const { return bound_cursor(*core_, key, false); }
cursor reader::upper_bound(std::string_view key) const { return bound_cursor(*core_, key, true); }

entry_range reader::equal_range(std::string_view key) const {
  cursor first = lower_bound(key);
  if (first.is_end() || first.key() != key) return {first, first};
  cursor last = first;
  ++last;
  return {std::move(first), std::move(last)};
}

namespace {

// `bound_leaf`, when given, receives the position's leaf if the search
// decoded it (reader_core::search).
reader_core::position start_of(const reader_core& core, const bound& from,
                               page_view* bound_leaf = nullptr) {
  switch (from.type) {
    case bound::kind::unbounded:
      return core.normalize(core.first_leaf(), 0);
    case bound::kind::inclusive:
      return core.search(from.key, false, bound_leaf);
    case bound::kind::exclusive:
      return core.search(from.key, true, bound_leaf);
  }
  return core.end_position();
}

reader_core::position end_of(const reader_core& core, const bound& to) {
  switch (to.type) {
    case bound::kind::unbounded:
      return core.end_position();
    case bound::kind::inclusive:
      return core.search(to.key, true);
    case bound::kind::exclusive:
      return core.search(to.key, false);
  }
  return core.end_position();
}

bool before(reader_core::position a, reader_core::position b) {
  return a.leaf < b.leaf || (a.leaf == b.leaf && a.index < b.index);
}

}  // namespace

std::optional<std::string> detail::prefix_successor(std::string_view prefix) {
  std::string successor(prefix);
  while (!successor.empty() && static_cast<unsigned char>(successor.back()) == 0xFF)
    successor.pop_back();
  if (successor.empty()) return std::nullopt;
  successor.back() = static_cast<char>(static_cast<unsigned char>(successor.back()) + 1);
  return successor;
}

entry_range reader::range(bound from, bound to) const {
  page_view bound_leaf;
  const auto first = start_of(*core_, from, &bound_leaf);
  auto last = end_of(*core_, to);
  if (before(last, first)) last = first;
  return {scan_start(*core_, first, bound_leaf), core_->make_cursor(last)};
}

entry_range reader::prefix(std::string_view prefix) const {
  const std::optional<std::string> successor = detail::prefix_successor(prefix);
  return range(bound::inclusive(prefix), successor ? bound::exclusive(*successor) : bound::none());
}

std::uint64_t reader::rank(std::string_view key) const {
  return core_->rank_of(core_->search(key, false));
}

std::uint64_t reader::count(bound from, bound to) const {
  const std::uint64_t first = core_->rank_of(start_of(*core_, from));
  const std::uint64_t last = core_->rank_of(end_of(*core_, to));
  return last > first ? last - first : 0;
}

cursor reader::at(std::uint64_t rank) const { return core_->make_cursor(core_->at_rank(rank)); }

std::size_t reader::get_many(std::span<const std::string_view> keys,
                             std::span<std::optional<std::string_view>> out) const {
  if (out.size() != keys.size()) {
    throw error(errc::invalid_argument, "get_many: keys and out differ in size");
  }
  return core_->get_many(keys, out);
}

// ---------------------------------------------------------------------------
// cursor

void cursor::load_leaf() {
  if (core_ == nullptr || leaf_ >= core_->end_leaf()) return leave_leaf();
  page_view leaf = core_->page(leaf_, 0);
  if (index_ >= leaf.count) [[unlikely]] {
    // Past an empty leaf, or a position one past a leaf's last entry: the
    // next entry, in this file or, in a set, the next shard.
    const auto next = core_->normalize(leaf_, index_);
    leaf_ = next.leaf;
    index_ = next.index;
    if (set_ != nullptr && leaf_ >= core_->end_leaf()) enter_next_shard();
    if (leaf_ >= core_->end_leaf()) return leave_leaf();
    leaf = core_->page(leaf_, 0);
  }
  adopt_leaf(leaf);
}

// Only the fields that say "no leaf" are reset.  Clearing the whole decoded
// page as well, on every crossing before the new leaf was copied in, made
// a walked 100-entry scan in cache 11% slower (bench/RESULTS.md, 12-05 "A
// leaf crossing no longer clears the cursor's decoded page").
void cursor::leave_leaf() noexcept {
  leaf_page_.bytes = nullptr;
  leaf_page_.count = 0;
  fixed_values_ = nullptr;
}

void cursor::adopt_leaf(const page_view& leaf) {
  const file_info& info = core_->info();
  fixed_values_ = info.values != value_kind::bytes ? leaf.bytes + leaf.sections.values : nullptr;
  value_size_ = info.value_size;
  leaf_page_ = leaf;
}

std::string_view cursor::key() const {
  if (is_end()) throw error(errc::invalid_argument, "key() of the end cursor");
  return key_at(index_);
}

std::string_view cursor::key_at(std::uint32_t index) const {
  const file_info& info = core_->info();
  const std::uint32_t prefix_length = leaf_page_.prefix_length;
  if (core_->integer_keys()) {
    // A key of at most eight bytes is the page's prefix followed by the
    // leading bytes of its inline key, then its tail if it has one: one
    // word, no string building.  page() checked prefix_length <= key_size,
    // and that the tails lie in the page.
    const std::uint32_t suffix_length = info.key_size - prefix_length;
    const std::uint32_t tail_width = leaf_page_.sections.tail_width;
    const std::uint32_t prefix_bits = 8 * prefix_length;
    std::uint64_t word =
        prefix_bits == 0
            ? 0
            : format::load_be<std::uint64_t>(leaf_page_.bytes + format::page_header_size) &
                  (~std::uint64_t{0} << (64 - prefix_bits));
    if (suffix_length > 0) {
      // With a tail the suffix is the whole inline key and then the tail
      // (suffix_length = inline_width + tail_width, each tail under 8 bytes).
      const std::uint64_t suffix =
          tail_width == 0
              ? leaf_page_.inline_key(index) >> (8 * (leaf_page_.inline_width - suffix_length))
              : (leaf_page_.inline_key(index) << (8 * tail_width)) | leaf_page_.tail(index);
      word |= suffix << (64 - prefix_bits - 8 * suffix_length);
    }
    format::store_be(reinterpret_cast<unsigned char*>(integer_key_), word);
    return {integer_key_, info.key_size};
  }
  key_buffer_.clear();
  core_->append_key(leaf_page_, index, key_buffer_);
  return key_buffer_;
}

std::string_view cursor::variable_value() const {
  if (is_end()) throw error(errc::invalid_argument, "value() of the end cursor");
  return variable_value_at(index_);
}

std::string_view cursor::variable_value_at(std::uint32_t index) const {
  return core_->value(leaf_page_, index);
}

std::uint64_t cursor::rank() const noexcept {
  if (core_ == nullptr) return 0;
  const std::uint64_t in_file = is_end() ? core_->info().entries : leaf_page_.header_word + index_;
  return set_ == nullptr ? in_file : entries_before_shard() + in_file;
}

// Without this a crossing that met a damaged leaf left the cursor at the
// new leaf's number with no leaf decoded: it compared unequal to the end
// yet no longer moved, so a caller that caught the error and stepped again
// made no progress; in a shard set it also held one shard's page number
// with another shard's file.  Only the position is saved: the leaf it was
// at decoded once, so decoding it again cannot fail (a reader's bytes do
// not change), and a scan's crossings copy no page_view.
template <class Cross>
void cursor::cross_or_stay(Cross&& cross) {
  const auto saved = std::tuple(core_, leaf_, index_, shard_);
  try {
    cross();
  } catch (...) {
    std::tie(core_, leaf_, index_, shard_) = saved;
    load_leaf();
    throw;
  }
}

cursor& cursor::step_to_next_leaf() {
  // The end stays the end; otherwise the next leaf's first entry, which
  // load_leaf finds past any empty leaves.
  if (is_end()) return *this;
  cross_or_stay([this] {
    ++leaf_;
    index_ = 0;
    if (set_ != nullptr && leaf_ >= core_->end_leaf()) [[unlikely]]
      enter_next_shard();
    load_leaf();
  });
  // A cursor that crossed into this leaf is likely to cross into the next:
  // start loading it now, since the hardware prefetcher stops at the
  // boundaries of 4 KiB memory pages.
  if (!is_end() && leaf_ + 1 < core_->end_leaf()) core_->prefetch_page(leaf_ + 1);
  return *this;
}

cursor& cursor::step_to_previous_leaf() {
  if (core_ == nullptr) return *this;
  cross_or_stay([this] {
    const auto previous = core_->previous({leaf_, index_});
    leaf_ = previous.leaf;
    index_ = previous.index;
    if (set_ != nullptr && leaf_ >= core_->end_leaf()) [[unlikely]]
      enter_previous_shard();
    load_leaf();
  });
  if (!is_end() && leaf_ > core_->first_leaf()) core_->prefetch_page(leaf_ - 1);  // as forward
  return *this;
}

}  // namespace bbtree
