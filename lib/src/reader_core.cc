// Checked access to a file's header, pages and items, and the search within
// one page.  See spec/FORMAT.md, "Reading".
#include <bbtree/detail/reader_core.h>

#include "code_layout.h"
#include "head_compare.h"
#include "key_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

namespace bbtree::detail {

using format::align8;
using format::compute_sections;
using format::external_flag;
using format::external_record_size;
using format::format_major;
using format::format_minor;
using format::header_checksum;
using format::header_size;
using format::inline_key_of;
using format::is_valid_inline_width;
using format::is_valid_key_kind;
using format::is_valid_page_size;
using format::is_valid_value_kind;
using format::key_kind;
using format::known_required_features;
using format::load_be;
using format::load_le;
using format::magic;
using format::max_fixed_size;
using format::max_height;
using format::max_key_length;
using format::max_value_length;
using format::page_header_size;
using format::page_kind;
using format::slot_size;
using format::value_kind;
namespace header = format::header;
namespace page = format::page;
namespace build_flag = format::build_flag;

BBTREE_FIRST_ANSWER reader_core::reader_core(std::string name, const unsigned char* base,
                                             std::uint64_t size, keeper holder,
                                             const unsigned char* header_copy)
    : name_(std::move(name)), base_(base), size_(size), holder_(std::move(holder)) {
  validate_header(header_copy != nullptr ? header_copy : base);
  decode_upper_pages();
}

// At most this many pages are kept decoded: with 1 KiB pages, the top
// 64 KiB of the tree, read at open in one or two page faults.
constexpr std::uint32_t max_upper_pages = 64;

BBTREE_FIRST_ANSWER void reader_core::decode_upper_pages() {
  // Integer probes read raw page bytes (integer_step) and never use it.
  if (integer_keys()) return;
  // The whole levels, from the root down, that fit in the table; levels
  // lie in the file in order, so their pages are one run up to the root.
  std::uint32_t first_level = info_.height;
  while (first_level > 1 &&
         info_.page_count - level_first_page_[first_level - 1] <= max_upper_pages) {
    --first_level;
  }
  if (first_level == info_.height) return;
  const std::uint32_t first = level_first_page_[first_level];
  std::vector<page_view> pages;
  pages.reserve(info_.page_count - first);
  try {
    for (std::uint32_t level = first_level; level < info_.height; ++level) {
      for (std::uint32_t number = level_first_page_[level]; number < level_end_page(level);
           ++number) {
        pages.push_back(page(number, static_cast<int>(level)));
      }
    }
  } catch (const error&) {
    // A damaged upper page: lookups decode it, and report it, as they reach it.
    return;
  }
  upper_pages_ = std::move(pages);
  upper_first_page_ = first;
}

void reader_core::child_outside_level(std::uint32_t page_number, std::uint64_t child,
                                      std::uint32_t level) const {
  corrupt(page_number, fmt::format("child page {} outside level {}", child, level));
}

void reader_core::corrupt(std::uint32_t page_number, std::string_view what) const {
  throw error(errc::corrupt, fmt::format("{}: page {} (offset {}): {}", name_, page_number,
                                         std::uint64_t{page_number} * info_.page_size, what));
}

BBTREE_FIRST_ANSWER void reader_core::validate_header(const unsigned char* header_bytes) {
  auto fail = [this](errc code, std::string_view what) {
    throw error(code, fmt::format("{}: {}", name_, what));
  };
  const std::size_t magic_bytes = std::min<std::uint64_t>(size_, sizeof(magic));
  if (std::memcmp(header_bytes, magic, magic_bytes) != 0 || size_ == 0) {
    fail(errc::not_bbtree,
         size_ == 0 ? "empty file, not a bbtree index" : "not a bbtree index (bad magic)");
  }
  if (size_ < header_size) {
    fail(errc::truncated,
         fmt::format("truncated: {} bytes, shorter than the {}-byte header", size_, header_size));
  }
  const unsigned char* h = header_bytes;
  info_.major_version = load_le<std::uint16_t>(h + header::major_offset);
  info_.minor_version = load_le<std::uint16_t>(h + header::minor_offset);
  if (info_.major_version > format_major) {
    fail(errc::newer_version,
         fmt::format("format version {}.{} is newer than this reader's {}.{}", info_.major_version,
                     info_.minor_version, format_major, format_minor));
  }
  if (info_.major_version != format_major) {
    fail(errc::corrupt_header, fmt::format("corrupt header: format version {}.{}",
                                           info_.major_version, info_.minor_version));
  }
  const std::uint32_t stored_checksum = load_le<std::uint32_t>(h + header::checksum_offset);
  const std::uint32_t computed_checksum = header_checksum(h);
  if (stored_checksum != computed_checksum) {
    fail(errc::corrupt_header, fmt::format("corrupt header: checksum {:08x}, expected {:08x}",
                                           stored_checksum, computed_checksum));
  }
  if (load_le<std::uint32_t>(h + header::header_size_offset) != header_size) {
    fail(errc::corrupt_header, "corrupt header: header size field is not 512");
  }
  info_.required_features = load_le<std::uint64_t>(h + header::required_features_offset);
  info_.optional_features = load_le<std::uint64_t>(h + header::optional_features_offset);
  if (const std::uint64_t unknown = info_.required_features & ~known_required_features) {
    fail(errc::unsupported_feature,
         fmt::format("requires feature bits {:#x} that this reader (format {}.{}) does not know",
                     unknown, format_major, format_minor));
  }
  info_.page_size = load_le<std::uint32_t>(h + header::page_size_offset);
  if (!is_valid_page_size(info_.page_size)) {
    fail(errc::corrupt_header, fmt::format("corrupt header: page size {}", info_.page_size));
  }
  const std::uint8_t keys = h[header::key_kind_offset];
  const std::uint8_t values = h[header::value_kind_offset];
  if (!is_valid_key_kind(keys) || !is_valid_value_kind(values)) {
    fail(errc::corrupt_header,
         fmt::format("corrupt header: key kind {} or value kind {}", keys, values));
  }
  info_.keys = static_cast<key_kind>(keys);
  info_.values = static_cast<value_kind>(values);
  info_.key_size = load_le<std::uint32_t>(h + header::key_size_offset);
  info_.value_size = load_le<std::uint32_t>(h + header::value_size_offset);
  const bool key_size_ok = info_.keys == key_kind::bytes ? info_.key_size == 0
                           : info_.keys == key_kind::fixed
                               ? info_.key_size >= 1 && info_.key_size <= max_fixed_size
                               : info_.key_size == 8;
  const bool value_size_ok = info_.values == value_kind::fixed
                                 ? info_.value_size >= 1 && info_.value_size <= max_fixed_size
                             : info_.values == value_kind::u64 ? info_.value_size == 8
                                                               : info_.value_size == 0;
  if (!key_size_ok || !value_size_ok) {
    fail(errc::corrupt_header, fmt::format("corrupt header: key size {} or value size {}",
                                           info_.key_size, info_.value_size));
  }
  info_.entries = load_le<std::uint64_t>(h + header::entry_count_offset);
  info_.height = load_le<std::uint32_t>(h + header::height_offset);
  info_.root_page = load_le<std::uint32_t>(h + header::root_page_offset);
  info_.leaf_count = load_le<std::uint32_t>(h + header::leaf_count_offset);
  info_.page_count = load_le<std::uint32_t>(h + header::page_count_offset);
  info_.blob_offset = load_le<std::uint64_t>(h + header::blob_offset_offset);
  info_.blob_length = load_le<std::uint64_t>(h + header::blob_length_offset);
  info_.metadata_offset = load_le<std::uint64_t>(h + header::metadata_offset_offset);
  info_.metadata_length = load_le<std::uint64_t>(h + header::metadata_length_offset);
  info_.build_flags = load_le<std::uint32_t>(h + header::build_flags_offset);
  info_.inline_limit = load_le<std::uint32_t>(h + header::inline_limit_offset);
  info_.prefix_cap = load_le<std::uint32_t>(h + header::prefix_cap_offset);
  info_.file_size = load_le<std::uint64_t>(h + header::file_size_offset);
  info_.max_key_length = load_le<std::uint32_t>(h + header::max_key_length_offset);
  info_.max_value_length = load_le<std::uint32_t>(h + header::max_value_length_offset);

  if (size_ < info_.file_size) {
    fail(errc::truncated,
         fmt::format("truncated: {} bytes, the header says {}", size_, info_.file_size));
  }
  if (size_ > info_.file_size) {
    fail(errc::trailing_data,
         fmt::format("{} bytes of trailing data after the {} bytes the header describes",
                     size_ - info_.file_size, info_.file_size));
  }
  const std::uint64_t pages_end = std::uint64_t{info_.page_count} * info_.page_size;
  if (info_.page_count < 2 || pages_end > info_.file_size) {
    fail(errc::corrupt_header,
         fmt::format("corrupt header: {} pages of {} bytes do not fit in {} bytes",
                     info_.page_count, info_.page_size, info_.file_size));
  }
  // The blob region follows the pages, the metadata region follows the
  // blob region, and together they end the file.  Lengths are compared
  // with what is left of file_size, so nothing here overflows.
  // With a directory, it ends the file, and the other regions end at most
  // 63 bytes of padding before it (format::directory::region_offset).
  const bool has_directory = (info_.required_features & format::feature::directory) != 0;
  std::uint64_t regions_end = info_.file_size;
  if (has_directory) {
    info_.directory_offset = load_le<std::uint64_t>(h + header::directory_offset_offset);
    info_.directory_length = load_le<std::uint64_t>(h + header::directory_length_offset);
    info_.directory_checksum = load_le<std::uint32_t>(h + header::directory_checksum_offset);
    info_.directory_head_size = load_le<std::uint32_t>(h + header::directory_head_size_offset);
    info_.directory_prefix_length =
        load_le<std::uint32_t>(h + header::directory_prefix_length_offset);
    const bool placed = info_.directory_length != 0 &&
                        info_.directory_length <= info_.file_size - pages_end &&
                        info_.directory_offset == info_.file_size - info_.directory_length &&
                        info_.directory_offset % format::directory::alignment == 0;
    if (!placed) {
      fail(errc::corrupt_header,
           fmt::format("corrupt header: a directory region of {} bytes at offset {} does not "
                       "end the file",
                       info_.directory_length, info_.directory_offset));
    }
    regions_end = info_.directory_offset;
  }
  const std::uint64_t after_pages = regions_end - pages_end;
  const std::uint64_t padding = has_directory ? format::directory::alignment - 1 : 0;
  const bool regions_ok =
      info_.blob_length <= after_pages &&
      info_.metadata_length <= after_pages - info_.blob_length &&
      after_pages - info_.blob_length - info_.metadata_length <= padding &&
      info_.blob_offset == (info_.blob_length == 0 ? 0 : pages_end) &&
      info_.metadata_offset == (info_.metadata_length == 0 ? 0 : pages_end + info_.blob_length);
  if (!regions_ok) {
    fail(errc::corrupt_header,
         "corrupt header: the blob and metadata regions do not follow the pages to the end of "
         "the file");
  }
  if (info_.metadata_length > 0 && info_.metadata_length < 4) {
    fail(errc::corrupt_header,
         fmt::format("corrupt header: metadata_length {}, shorter than its 4-byte count",
                     info_.metadata_length));
  }
  if (info_.max_key_length > max_key_length) {
    fail(errc::corrupt_header, fmt::format("corrupt header: max_key_length {} is over {}",
                                           info_.max_key_length, max_key_length));
  }
  if (info_.height < 1 || info_.height > max_height || info_.root_page != info_.page_count - 1 ||
      load_le<std::uint32_t>(h + header::first_leaf_page_offset) != 1) {
    fail(errc::corrupt_header, fmt::format("corrupt header: height {}, root page {}, {} pages",
                                           info_.height, info_.root_page, info_.page_count));
  }
  for (std::uint32_t level = 0; level < info_.height; ++level) {
    level_first_page_[level] = load_le<std::uint32_t>(h + header::level_table_offset + 4 * level);
    const std::uint32_t floor = level == 0 ? 1 : level_first_page_[level - 1] + 1;
    if (level_first_page_[level] < floor || level_first_page_[level] >= info_.page_count ||
        (level == 0 && level_first_page_[0] != 1)) {
      fail(errc::corrupt_header, fmt::format("corrupt header: level {} starts at page {}", level,
                                             level_first_page_[level]));
    }
  }
  if (level_first_page_[info_.height - 1] != info_.root_page ||
      level_end_page(0) != 1 + info_.leaf_count) {
    fail(errc::corrupt_header,
         "corrupt header: level table disagrees with the root page or leaf count");
  }
  if (has_directory) {
    // One entry a boundary between level-1 pages, each a head and a
    // locator, then the prefix: nothing else may fill the region.
    namespace directory = format::directory;
    const std::uint64_t entries =
        info_.height >= 3 ? level_end_page(1) - level_first_page_[1] - 1 : 0;
    const bool shaped =
        entries != 0 && directory::is_valid_head_size(info_.directory_head_size) &&
        info_.directory_prefix_length <= directory::max_prefix_length &&
        info_.directory_length == directory::region_length(entries, info_.directory_head_size,
                                                           info_.directory_prefix_length);
    if (!shaped) {
      fail(errc::corrupt_header,
           fmt::format("corrupt header: a directory region of {} bytes with heads of {} bytes and "
                       "a prefix of {} for a tree of height {} with {} boundaries between level-1 "
                       "pages",
                       info_.directory_length, info_.directory_head_size,
                       info_.directory_prefix_length, info_.height, entries));
    }
    directory_ =
        directory::region_view(base_ + info_.directory_offset, static_cast<std::uint32_t>(entries),
                               info_.directory_head_size, info_.directory_prefix_length);
    // Integer probes count the heads as words, through a tree over them.
    if (integer_keys()) {
      integer_directory_.reset(directory_, info_.key_size);
    } else {
      count_heads_ = head_counter_for(info_.directory_head_size);
    }
  }
  prefix_limit_ =
      info_.keys == key_kind::bytes ? info_.page_size : std::min(info_.key_size, info_.page_size);
  if (info_.height >= 3) {
    const std::uint64_t level1_pages = level_end_page(1) - level_first_page_[1];
    leaves_per_level1_page_ = (std::uint64_t{info_.leaf_count} + level1_pages - 1) / level1_pages;
  }
}

void reader_core::diagnose_page(const page_view& view, int expected_level) const {
  const std::uint32_t number = view.number;
  if (expected_level >= 0 && view.level != static_cast<std::uint32_t>(expected_level)) {
    corrupt(number,
            fmt::format("level {} where level {} was expected", view.level, expected_level));
  }
  if (view.kind != (view.level == 0 ? page_kind::leaf : page_kind::inner)) {
    corrupt(number,
            fmt::format("page kind {} at level {}", static_cast<int>(view.kind), view.level));
  }
  if (!is_valid_inline_width(view.inline_width)) {
    corrupt(number, fmt::format("inline key width {}", view.inline_width));
  }
  if (view.prefix_length > prefix_limit_) {
    corrupt(number, fmt::format("prefix of {} bytes is longer than the keys or the page",
                                view.prefix_length));
  }
  corrupt(number,
          fmt::format("{} keys do not fit in the page (heap end {})", view.count, view.heap_end));
}

namespace {

// The bytes of key `index` that its inline key holds: inline keys are
// big-endian integers of inline_width bytes, of which a key uses at most
// its suffix length.
std::string_view inline_bytes(const page_view& page, std::uint32_t index,
                              std::uint32_t suffix_length, unsigned char (&buffer)[8]) {
  format::store_be(buffer, page.inline_key(index) << (8 * (8 - page.inline_width)));
  return {reinterpret_cast<const char*>(buffer), std::min(suffix_length, page.inline_width)};
}

// An item in the blob region, through its external record in the heap.
[[gnu::noinline]] item_view resolve_external(const reader_core& core, const page_view& page,
                                             std::uint32_t offset, std::uint64_t length) {
  if (offset < page.sections.heap || std::uint64_t{offset} + external_record_size > page.heap_end) {
    core.corrupt(page.number, fmt::format("external record at offset {} outside the heap", offset));
  }
  item_view item;
  item.external = true;
  item.blob_offset = load_le<std::uint64_t>(page.bytes + offset);
  item.stored_checksum = load_le<std::uint32_t>(page.bytes + offset + 8);
  const file_info& info = core.info();
  if (item.blob_offset > info.blob_length || length > info.blob_length - item.blob_offset) {
    core.corrupt(page.number,
                 fmt::format("external item of {} bytes at blob offset {} outside the blob region",
                             length, item.blob_offset));
  }
  item.bytes = {reinterpret_cast<const char*>(core.base() + info.blob_offset + item.blob_offset),
                static_cast<std::size_t>(length)};
  return item;
}

// An item in the page's heap, the common case (every tie on path-like keys
// reads one): inline, with the blob's case out of line.
[[gnu::always_inline]] inline item_view resolve_item(const reader_core& core, const page_view& page,
                                                     std::uint32_t reference,
                                                     std::uint64_t length) {
  if (length == 0) return {};
  const std::uint32_t offset = reference & ~external_flag;
  if (reference & external_flag) return resolve_external(core, page, offset, length);
  if (offset < page.sections.heap || offset + length > page.heap_end) [[unlikely]] {
    core.corrupt(page.number,
                 fmt::format("item of {} bytes at offset {} outside the heap", length, offset));
  }
  item_view item;
  item.bytes = {reinterpret_cast<const char*>(page.bytes + offset),
                static_cast<std::size_t>(length)};
  return item;
}

// key_suffix_length, inline for the tie compares of this file's searches.
[[gnu::always_inline]] inline std::uint32_t suffix_length_of(const reader_core& core,
                                                             const page_view& page,
                                                             std::uint32_t index) {
  if (core.info().keys != key_kind::bytes) return core.info().key_size - page.prefix_length;
  return load_le<std::uint32_t>(page.bytes + page.sections.key_data + index * slot_size);
}

[[noreturn, gnu::cold, gnu::noinline]] void key_too_long(const reader_core& core,
                                                         const page_view& page, std::uint32_t index,
                                                         std::uint32_t length) {
  core.corrupt(page.number, fmt::format("key {} is {} bytes long", index, length));
}

// key_remainder, inline for the tie compares of this file's searches.
[[gnu::always_inline]] inline item_view remainder_of(const reader_core& core, const page_view& page,
                                                     std::uint32_t index) {
  if (core.info().keys != key_kind::bytes) {
    item_view item;
    item.bytes = {reinterpret_cast<const char*>(page.bytes + page.sections.key_data +
                                                index * page.sections.tail_width),
                  page.sections.tail_width};
    return item;
  }
  const unsigned char* slot = page.bytes + page.sections.key_data + index * slot_size;
  const std::uint32_t suffix_length = load_le<std::uint32_t>(slot);
  if (suffix_length > max_key_length) [[unlikely]]
    key_too_long(core, page, index, suffix_length);
  const std::uint32_t remainder =
      suffix_length > page.inline_width ? suffix_length - page.inline_width : 0;
  return resolve_item(core, page, load_le<std::uint32_t>(slot + 4), remainder);
}

}  // namespace

std::uint32_t reader_core::key_suffix_length(const page_view& page, std::uint32_t index) const {
  return suffix_length_of(*this, page, index);
}

item_view reader_core::key_remainder(const page_view& page, std::uint32_t index) const {
  return remainder_of(*this, page, index);
}

BBTREE_FIRST_ANSWER item_view reader_core::value_item(const page_view& leaf,
                                                      std::uint32_t index) const {
  const unsigned char* values = leaf.bytes + leaf.sections.values;
  item_view item;
  switch (info_.values) {
    case value_kind::none:
      return item;
    case value_kind::u64:
    case value_kind::fixed:
      item.bytes = {reinterpret_cast<const char*>(values + std::size_t{index} * info_.value_size),
                    info_.value_size};
      return item;
    case value_kind::bytes: {
      const unsigned char* slot = values + index * slot_size;
      return resolve_item(*this, leaf, load_le<std::uint32_t>(slot + 4),
                          load_le<std::uint32_t>(slot));
    }
  }
  return item;
}

BBTREE_FIRST_ANSWER std::string_view reader_core::value(const page_view& leaf,
                                                        std::uint32_t index) const {
  return value_item(leaf, index).bytes;
}

void reader_core::append_key(const page_view& page, std::uint32_t index, std::string& out) const {
  out.append(page.prefix());
  const std::uint32_t suffix_length = key_suffix_length(page, index);
  unsigned char buffer[8];
  out.append(inline_bytes(page, index, suffix_length, buffer));
  if (suffix_length > page.inline_width) out.append(key_remainder(page, index).bytes);
}

namespace {

// Compares key `index` of `page` with a probe known to share the page's
// prefix and whose inline key ties with it.  Inline in bound_in_page:
// path-like keys tie on their inline keys about five times a lookup, and
// the calls cost a third of each tie (bench/RESULTS.md).
[[gnu::always_inline]] inline int compare_tied_key(const reader_core& core, const page_view& page,
                                                   std::uint32_t index,
                                                   std::string_view probe_suffix) {
  const std::uint32_t width = page.inline_width;
  const std::uint64_t stored_length = suffix_length_of(core, page, index);
  if (stored_length > width && probe_suffix.size() > width) {
    return compare_keys(remainder_of(core, page, index).bytes, probe_suffix.substr(width));
  }
  return (stored_length > probe_suffix.size()) - (stored_length < probe_suffix.size());
}

// How to search a page's inline keys.  A lone lookup waits for each level
// before it can load the next, so its search wants the shortest chain of
// dependent loads; in a batch the loads of many probes overlap, and the
// fewest instructions win.  Measured on 10M u64 keys (bench/RESULTS.md,
// "Two-level search"): two_level takes 9% off reader::get, halving 12% off
// get_many.
enum class inline_search {
  // Count the blocks of one cache line's keys whose last key is below the
  // target, then the keys below it within the next block: two dependent
  // steps of independent loads.
  two_level,
  // Branch-free halving: log2(n) dependent loads, fewer instructions.
  halving,
};

// First index in [low, high) whose inline key is >= target (or > target
// when strictly_greater), branch-free either way.
template <std::uint32_t Width, bool StrictlyGreater, inline_search Search>
[[gnu::always_inline]] inline std::uint32_t inline_bound(const unsigned char* array,
                                                         std::uint32_t low, std::uint32_t high,
                                                         std::uint64_t target) {
  using word = std::conditional_t<Width == 2, std::uint16_t,
                                  std::conditional_t<Width == 4, std::uint32_t, std::uint64_t>>;
  const word key = static_cast<word>(target);
  const auto below = [key](const unsigned char* at) -> std::uint32_t {
    const word inline_key = load_be<word>(at);
    return StrictlyGreater ? inline_key <= key : inline_key < key;
  };
  const unsigned char* base = array + std::size_t{low} * Width;
  std::uint32_t length = high - low;
  if constexpr (Search == inline_search::two_level) {
    constexpr std::uint32_t block = cache_line_bytes / Width;
    // Keys are sorted, so the blocks whose last key is below come first.
    std::uint32_t blocks_below = 0;
#pragma GCC unroll 4
    for (std::uint32_t end = block; end <= length; end += block)
      blocks_below += below(base + std::size_t{end - 1} * Width);
    const std::uint32_t start = blocks_below * block;
    std::uint32_t index = low + start;
    if (start + block <= length) {
      // The block holding the bound is whole, the common case: unrolled,
      // its compares are independent of one another.
      const unsigned char* block_keys = base + std::size_t{start} * Width;
#pragma GCC unroll 32
      for (std::uint32_t i = 0; i < block; ++i) index += below(block_keys + std::size_t{i} * Width);
    } else {
      for (std::uint32_t i = start; i < length; ++i) index += below(base + std::size_t{i} * Width);
    }
    return index;
  } else {
    while (length > 1) {
      const std::uint32_t half = length / 2;
      // A mask rather than a conditional: compilers turn `go_right ? a : b`
      // into a branch, which mispredicts half the time on random probes.
      base += (std::size_t{half} * Width) &
              (std::size_t{0} - std::size_t{below(base + std::size_t{half - 1} * Width)});
      length -= half;
    }
    std::uint32_t index = static_cast<std::uint32_t>((base - array) / Width);
    if (length == 1) index += below(base);
    return index;
  }
}

template <bool StrictlyGreater, inline_search Search = inline_search::two_level>
[[gnu::always_inline]] inline std::uint32_t inline_bound_any(const unsigned char* array,
                                                             std::uint32_t width, std::uint32_t low,
                                                             std::uint32_t high,
                                                             std::uint64_t target) {
  switch (width) {
    case 2:
      return inline_bound<2, StrictlyGreater, Search>(array, low, high, target);
    case 4:
      return inline_bound<4, StrictlyGreater, Search>(array, low, high, target);
    default:
      return inline_bound<8, StrictlyGreater, Search>(array, low, high, target);
  }
}

template <bool StrictlyGreater>
[[gnu::always_inline]] inline std::uint32_t inline_bound_any(const page_view& page,
                                                             std::uint32_t low, std::uint32_t high,
                                                             std::uint64_t target) {
  return inline_bound_any<StrictlyGreater>(page.bytes + page.sections.inline_keys,
                                           page.inline_width, low, high, target);
}

// Keys of at most eight bytes whose suffix fits the inline width compare as
// big-endian integers, and so do the page's prefix and inline keys: the
// position of a probe is a masked compare and a branch-free search.  The
// caller has checked that the inline keys lie in the page.
struct integer_position {
  std::uint32_t index;   // keys < word (or <= word when or_equal)
  bool equal;            // the key at index equals word (or_equal false only)
  std::uint64_t target;  // word's inline key in the page; 0 when it sorts outside the page
};

// A probe `word` against a page's prefix: negative or positive when the
// probe sorts before or after every key of the page, else 0, with `target`
// the probe's inline key in the page.
[[gnu::always_inline]] inline int integer_target(const unsigned char* page_bytes,
                                                 std::uint32_t prefix_length, std::uint32_t width,
                                                 std::uint64_t word, std::uint64_t& target) {
  const std::uint32_t prefix_bits = 8 * prefix_length;
  if (prefix_bits > 0) {
    // The eight bytes at the prefix section lie in the page (it starts at
    // 32 and pages are at least 512 bytes); bytes past the prefix are masked.
    const std::uint64_t mask = ~std::uint64_t{0} << (64 - prefix_bits);
    const std::uint64_t prefix = load_be<std::uint64_t>(page_bytes + page_header_size) & mask;
    if ((word & mask) != prefix) return (word & mask) < prefix ? -1 : 1;
  }
  target = prefix_bits >= 64 ? 0 : (word << prefix_bits) >> (64 - 8 * width);
  return 0;
}

// Where a page keeps the tails of keys longer than prefix and inline key
// (spec/FORMAT.md, 8.3): `width` bytes each from page offset `offset`;
// width 0 when the inline keys hold whole suffixes.
struct tail_array {
  std::uint32_t offset;
  std::uint32_t width;
};

// Tail `index` as a big-endian integer (format::load_tail, for the tail
// array a search carries); the caller has checked that the tail lies in
// the page.
[[gnu::always_inline]] inline std::uint64_t load_tail(const unsigned char* page_bytes,
                                                      tail_array tails, std::uint32_t index) {
  return format::load_tail(page_bytes, tails.offset, tails.width, index);
}

// In [low, high), a run of keys with equal inline keys and so ascending
// tails, the first whose tail is >= tail (> tail when StrictlyGreater).
template <bool StrictlyGreater>
[[gnu::always_inline]] inline std::uint32_t tail_bound(const unsigned char* page_bytes,
                                                       tail_array tails, std::uint32_t low,
                                                       std::uint32_t high, std::uint64_t tail) {
  while (low < high) {
    const std::uint32_t middle = low + (high - low) / 2;
    const std::uint64_t stored = load_tail(page_bytes, tails, middle);
    if (StrictlyGreater ? stored <= tail : stored < tail) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

// A probe `word` among a page's inline keys: `target` is its inline key,
// `index` the number of inline keys < target (<= target when OrEqual), and
// `order` nonzero when the prefix alone places it before (< 0) or after
// every key of the page (index is then 0 or count).
struct inline_place {
  int order;
  std::uint32_t index;
  std::uint64_t target;
};

template <bool OrEqual, inline_search Search>
[[gnu::always_inline]] inline inline_place place_among_inline_keys(const unsigned char* page_bytes,
                                                                   std::uint32_t prefix_length,
                                                                   std::uint32_t width,
                                                                   std::uint32_t count,
                                                                   std::uint64_t word) {
  std::uint64_t target = 0;
  if (const int order = integer_target(page_bytes, prefix_length, width, word, target);
      order != 0) {
    return {order, order < 0 ? 0 : count, 0};
  }
  const unsigned char* inline_keys = page_bytes + format::inline_keys_offset(prefix_length);
  return {0, inline_bound_any<OrEqual, Search>(inline_keys, width, 0, count, target), target};
}

// The probe's position among a page's keys, from its place among their
// inline keys: ties settled by the tails, and without OrEqual whether the
// key there equals the probe.
template <bool OrEqual, inline_search Search = inline_search::two_level>
[[gnu::always_inline]] inline integer_position settle_ties(const unsigned char* page_bytes,
                                                           std::uint32_t prefix_length,
                                                           std::uint32_t width, std::uint32_t count,
                                                           std::uint64_t word, tail_array tails,
                                                           inline_place place) {
  if (place.order != 0) return {place.index, false, 0};
  const unsigned char* inline_keys = page_bytes + format::inline_keys_offset(prefix_length);
  const std::uint64_t target = place.target;
  std::uint32_t index = place.index;
  const auto inline_key_at = [&](std::uint32_t at) {
    return format::load_inline_key(inline_keys, at, width);
  };
  if (tails.width == 0) {
    if constexpr (OrEqual) {
      return {index, false, target};
    } else {
      return {index, index < count && inline_key_at(index) == target, target};
    }
  }
  // Keys with tails: among the keys whose inline key equals the probe's
  // (one at most, unless keys are dense), the tails decide.  A tail exists
  // only when prefix and inline key leave part of an 8-byte suffix, so the
  // shifts stay below 64.
  const std::uint64_t tail = (word << (8 * (prefix_length + width))) >> (64 - 8 * tails.width);
  if constexpr (OrEqual) {
    // index counts the inline keys <= target: a run of equal ones ends there.
    if (index == 0 || inline_key_at(index - 1) != target) return {index, false, target};
    std::uint32_t run_start = index - 1;
    if (run_start > 0 && inline_key_at(run_start - 1) == target)
      run_start = inline_bound_any<false, Search>(inline_keys, width, 0, run_start, target);
    return {tail_bound<true>(page_bytes, tails, run_start, index, tail), false, target};
  } else {
    if (index == count || inline_key_at(index) != target) return {index, false, target};
    std::uint32_t run_end = index + 1;
    if (run_end < count && inline_key_at(run_end) == target)
      run_end = inline_bound_any<true, Search>(inline_keys, width, run_end, count, target);
    index = tail_bound<false>(page_bytes, tails, index, run_end, tail);
    return {index, index < run_end && load_tail(page_bytes, tails, index) == tail, target};
  }
}

template <bool OrEqual, inline_search Search = inline_search::two_level>
[[gnu::always_inline]] inline integer_position integer_search(
    const unsigned char* page_bytes, std::uint32_t prefix_length, std::uint32_t width,
    std::uint32_t count, std::uint64_t word, tail_array tails) {
  return settle_ties<OrEqual, Search>(
      page_bytes, prefix_length, width, count, word, tails,
      place_among_inline_keys<OrEqual, Search>(page_bytes, prefix_length, width, count, word));
}

}  // namespace

namespace {

// Keys of at most eight bytes, read big-endian and zero-padded, compare as
// integers; so do a page's prefix and its inline keys.
std::uint64_t padded_word(const void* bytes, std::size_t length) {
  if (length == 8) return load_be<std::uint64_t>(bytes);
  unsigned char padded[8] = {};
  if (length > 0) std::memcpy(padded, bytes, length);
  return load_be<std::uint64_t>(padded);
}

}  // namespace

std::uint32_t reader_core::count_below(const page_view& page, std::string_view probe,
                                       bool or_equal) const {
  return or_equal ? bound_in_page<true>(page, probe).index
                  : bound_in_page<false>(page, probe).index;
}

namespace {

// A probe that is not an integer, placed among a page's inline keys: the
// first half of bound_in_page, which a batch takes one pass ahead of the
// second (get_many).
struct key_place {
  int order;             // nonzero when the prefix alone places the probe
                         // before (< 0) or after (> 0) every key of the page
  std::uint32_t below;   // inline keys < target; 0 or count when order is nonzero
  std::uint64_t target;  // the probe's inline key
};

[[gnu::always_inline]] inline key_place place_among_keys(const page_view& page,
                                                         std::string_view probe) {
  const std::uint32_t prefix_length = page.prefix_length;
  if (prefix_length > 0) {
    const int order = order_against_prefix(probe, page.prefix());
    if (order < 0) return {-1, 0, 0};
    if (order > 0) return {1, page.count, 0};
  }
  // The prefix matched, so the probe is at least prefix_length long.
  const std::uint64_t target =
      inline_key_of(reinterpret_cast<const unsigned char*>(probe.data()) + prefix_length,
                    probe.size() - prefix_length, page.inline_width);
  return {0, inline_bound_any<false>(page, 0, page.count, target), target};
}

// The second half: among the keys whose inline key ties with the probe's,
// the full keys decide.
template <bool OrEqual>
[[gnu::always_inline]] inline reader_core::page_bound settle_tied_keys(const reader_core& core,
                                                                       const page_view& page,
                                                                       std::string_view probe,
                                                                       key_place place) {
  const std::uint32_t below = place.below;
  const std::uint64_t target = place.target;
  if (place.order != 0 || below == page.count || page.inline_key(below) != target)
    return {below, false};
  std::uint32_t tie_end = below + 1;
  if (tie_end < page.count && page.inline_key(tie_end) == target) {
    tie_end = inline_bound_any<true>(page, below, page.count, target);
  }
  const std::string_view suffix(probe.data() + page.prefix_length,
                                probe.size() - page.prefix_length);
  std::uint32_t low = below;
  std::uint32_t high = tie_end;
  bool equal = false;
  while (low < high) {
    const std::uint32_t middle = low + (high - low) / 2;
    const int order = compare_tied_key(core, page, middle, suffix);
    if (order < 0 || (OrEqual && order == 0)) {
      low = middle + 1;
    } else {
      // Keys are unique, so a key equal to the probe is the first key not
      // below it: the bound this search ends at.
      equal |= order == 0;
      high = middle;
    }
  }
  return {low, !OrEqual && equal};
}

}  // namespace

template <bool OrEqual>
[[gnu::always_inline]] inline reader_core::page_bound reader_core::bound_in_page(
    const page_view& page, std::string_view probe) const {
  // Keys of at most eight bytes: prefix, inline key and tail are parts of
  // one big-endian word (page() has checked the prefix against key_size).
  if (integer_probe(probe)) {
    const integer_position found = integer_search<OrEqual>(
        page.bytes, page.prefix_length, page.inline_width, page.count, integer_word(probe),
        {page.sections.key_data, page.sections.tail_width});
    return {found.index, found.equal};
  }
  return settle_tied_keys<OrEqual>(*this, page, probe, place_among_keys(page, probe));
}

std::uint32_t reader_core::inner_step(std::string_view key, std::uint32_t level,
                                      std::uint32_t number) const {
  const page_view inner = inner_page(number, level);
  const std::uint64_t child = std::uint64_t{level_first_page_[level - 1]} + inner.header_word +
                              bound_in_page<true>(inner, key).index;
  // Level `level` lies above level - 1, so it is where level - 1 ends.
  if (child >= level_first_page_[level]) [[unlikely]]
    child_outside_level(number, child, level - 1);
  return static_cast<std::uint32_t>(child);
}

// For each probe, the number of directory heads <= the probe's head, and
// whether the last of them equals it: halving searches whose steps have no
// branch that depends on the keys.  The probes' searches advance together,
// a step at a time, so that the cache misses of one overlap with the others'.
template <std::uint32_t HeadWords>
void reader_core::count_directory_heads(const std::string_view* rests, std::size_t n,
                                        directory_count* counts) const noexcept {
  constexpr std::size_t head_size = 8 * HeadWords;
  head_words<head_size> probes[max_directory_batch];
  const unsigned char* bases[max_directory_batch] = {};
  for (std::size_t i = 0; i < n; ++i) {
    probes[i].assign(rests[i]);
    bases[i] = directory_.heads;
  }
  std::uint32_t length = directory_.entries;  // at least 1
  while (length > 1) {
    const std::uint32_t half = length / 2;
    const std::size_t step = std::size_t{half} * head_size;
    for (std::size_t i = 0; i < n; ++i) {
      const bool at_most = head_at_most<head_size>(bases[i] + step - head_size, probes[i]);
      bases[i] += step & (std::size_t{0} - at_most);
    }
    length -= half;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char* base = bases[i];
    const std::size_t last_at_most = head_at_most<head_size>(base, probes[i]);
    directory_count& result = counts[i];
    result.count = static_cast<std::uint32_t>((base - directory_.heads) / head_size + last_at_most);
    // The last head <= the probe's: `base` if it is, else the one before
    // it, if any (with none, `base` is read, and `tied` is false anyway).
    const unsigned char* last = result.count == 0 ? base : base - (last_at_most ^ 1) * head_size;
    result.tied = result.count > 0 && head_equals<head_size>(last, probes[i]);
  }
}

// The number of separators <= key when head count - 1 is the last <= the
// probe's head and equals it.  Separators ascend, so one binary search over
// entries [0, count) finds it: a head below the probe's head is a separator
// below the key, without reading the separator; an equal head takes the full
// separator, which the entry's locator names.  At most log2(count) + 1 full
// compares, however many heads tie.
std::uint32_t reader_core::count_tied_separators(std::string_view key, std::string_view rest,
                                                 std::uint32_t count) const {
  const std::size_t head_size = directory_.head_size;
  unsigned char probe_head[format::directory::max_head_size];
  format::directory::store_head(probe_head, rest, head_size);
  const auto at_most_key = [&](std::uint32_t entry) {
    if (std::memcmp(directory_.head(entry), probe_head, head_size) < 0) return true;
    const auto [number, index] = directory_.locator_of(entry);
    return compare_entry(directory_separator_page(entry, number, index), index, key) <= 0;
  };
  std::uint32_t low = 0;
  std::uint32_t high = count;
  while (low < high) {
    const std::uint32_t middle = low + (high - low) / 2;
    if (at_most_key(middle)) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

// The page that directory entry `entry` names for its separator `index`,
// checked as spec/FORMAT.md 14.2 asks: a page of level 2 or above, checked
// as a page of the level whose range holds it, with index < count.  Every
// failure is error(corrupt) naming the entry.  (A height of at least 3 was
// checked at open for a file with a directory.)
page_view reader_core::directory_separator_page(std::uint32_t entry, std::uint32_t number,
                                                std::uint32_t index) const {
  const auto fail = [&](std::string_view what) {
    corrupt(number, fmt::format("directory entry {}: {}", entry, what));
  };
  if (number < level_first_page_[2] || number >= info_.page_count) [[unlikely]]
    fail("names a page outside levels 2 and above");
  std::uint32_t level = 2;
  while (level + 1 < info_.height && number >= level_first_page_[level + 1]) ++level;
  std::optional<page_view> checked;
  try {
    checked = inner_page(number, level);
  } catch (const error& e) {
    throw error(errc::corrupt, fmt::format("{} (following directory entry {})", e.what(), entry));
  }
  const page_view& upper = *checked;
  if (index >= upper.count) [[unlikely]]
    fail(fmt::format("names separator {} of this page, at level {} with {} separators", index,
                     upper.level, upper.count));
  return upper;
}

void reader_core::directory_pages(const std::string_view* keys, std::size_t n,
                                  std::uint32_t* pages) const {
  // Every separator starts with the prefix: a key that does not is below
  // or above them all, and is searched for as an empty rest, in step with
  // the others, with its answer set after.
  std::string_view rests[max_directory_batch];
  bool searched[max_directory_batch];
  for (std::size_t i = 0; i < n; ++i) {
    const int order = order_against_prefix(keys[i], directory_.prefix);
    searched[i] = order == 0;
    if (order == 0) rests[i] = keys[i].substr(directory_.prefix.size());
    pages[i] = level1_page_after(order < 0 ? 0 : directory_.entries);
  }
  directory_count counts[max_directory_batch];
  (this->*count_heads_)(rests, n, counts);
  for (std::size_t i = 0; i < n; ++i) {
    if (!searched[i]) continue;
    // A head that equals the probe's may belong to a separator on either
    // side of the key (zero padding, or bytes past the head).
    if (counts[i].tied) [[unlikely]]
      counts[i].count = count_tied_separators(keys[i], rests[i], counts[i].count);
    pages[i] = level1_page_after(counts[i].count);
  }
}

reader_core::head_counter reader_core::head_counter_for(std::uint32_t head_size) noexcept {
  // One search a head size the format allows: 8 to 64 bytes, by 8.
  static constexpr auto counters =
      []<std::uint32_t... Words>(std::integer_sequence<std::uint32_t, Words...>) {
    return std::array<head_counter, sizeof...(Words)>{
        &reader_core::count_directory_heads<Words + 1>...};
  }
  (std::make_integer_sequence<std::uint32_t, format::directory::max_head_size / 8>{});
  return counters[head_size / 8 - 1];
}

int reader_core::compare_entry(const page_view& page, std::uint32_t index,
                               std::string_view probe) const {
  // The key is the page's prefix, its inline bytes and its remainder, in
  // that order: each part is compared with what is left of the probe.
  std::string_view rest = probe;
  const auto compare_part = [&rest](std::string_view part) -> int {
    const std::size_t shared = std::min(part.size(), rest.size());
    if (const int order = shared == 0 ? 0 : std::memcmp(part.data(), rest.data(), shared);
        order != 0)
      return order < 0 ? -1 : 1;
    if (rest.size() < part.size()) return 1;
    rest.remove_prefix(shared);
    return 0;
  };
  if (const int order = order_against_prefix(probe, page.prefix()); order != 0) return -order;
  rest.remove_prefix(page.prefix_length);
  const std::uint32_t suffix_length = key_suffix_length(page, index);
  unsigned char buffer[8];
  if (const int order = compare_part(inline_bytes(page, index, suffix_length, buffer)); order != 0)
    return order;
  if (suffix_length > page.inline_width) {
    if (const int order = compare_part(key_remainder(page, index).bytes); order != 0) return order;
  }
  return rest.empty() ? 0 : -1;
}

// Separators satisfy left < separator <= right, so descending by the number
// of separators <= key reaches the one leaf that can hold key, and the leaf
// from which both bounds of key start.
BBTREE_FIRST_ANSWER std::uint32_t reader_core::descend(std::string_view key) const {
  std::uint32_t number = info_.root_page;
  std::uint32_t level = info_.height - 1;
  // A lone descent does not use the directory's heads: a halving search
  // over them makes a chain of about log2(entries) dependent reads, the
  // last of them in lines that are seldom cached, where the tree's pages
  // read a few lines each (bench/RESULTS.md, "The directory region").
  // Integer probes take the tree over the heads, a line a layer.
  if (integer_probe(key)) {
    const std::uint64_t word = integer_word(key);
    if (!integer_directory_.empty()) {
      number = directory_level1_page(word);
      level = 1;
    }
    while (level > 0 && integer_step<false>(word, level, number)) --level;
  }
  for (; level > 0; --level) {
    number = inner_step(key, level, number);
    prefetch_child(number);
  }
  return number;
}

// The header fields an integer search reads, loaded once per page.
struct reader_core::integer_layout {
  std::uint32_t width;
  std::uint32_t count;
  std::uint32_t prefix_length;
  std::uint32_t inline_keys;  // offset of the inline key array
  tail_array tails;

  // Where a leaf's values start: after the key data, which holds the tails
  // (spec/FORMAT.md, "Page sections").
  std::uint32_t values() const noexcept {
    return format::section_after(tails.offset, count, tails.width);
  }
};

// Reads the layout of page `bytes` and tells whether it can be searched as
// integers at `level`: its inline keys and tails lie in the page.  The
// general path reports whatever fails here, if it is damage.
bool reader_core::read_integer_layout(const unsigned char* bytes, std::uint32_t level,
                                      integer_layout& layout) const noexcept {
  layout.width = bytes[page::inline_width_offset];
  layout.count = load_le<std::uint16_t>(bytes + page::count_offset);
  layout.prefix_length = load_le<std::uint16_t>(bytes + page::prefix_length_offset);
  layout.inline_keys = format::inline_keys_offset(layout.prefix_length);
  const page_kind kind = level == 0 ? page_kind::leaf : page_kind::inner;
  // The kind and level bytes are adjacent: one compare checks both.
  static_assert(page::level_offset == page::kind_offset + 1);
  const std::uint32_t kind_and_level = static_cast<std::uint32_t>(kind) | (level << 8);
  // One branch for every check: a usable page is the rule.  integer_probe
  // holds key_size <= 8, so the suffix fits a 64-bit word unless the prefix
  // is longer than the key, which wraps its length around to a huge one.
  const bool kind_ok = load_le<std::uint16_t>(bytes + page::kind_offset) == kind_and_level;
  const std::uint32_t suffix = info_.key_size - layout.prefix_length;
  layout.tails.offset = format::section_after(layout.inline_keys, layout.count, layout.width);
  layout.tails.width = format::tail_width(suffix, layout.width);
  const bool usable = kind_ok & is_valid_inline_width(layout.width) & (suffix <= 8) &
                      (layout.tails.offset + layout.count * layout.tails.width <= info_.page_size);
  return usable;
}

// One inner level for a probe of at most eight bytes, with only the checks
// that the inline keys read lie in the page.  Returns false, leaving
// `number` alone, at a page the general path must handle.
template <bool Batched>
bool reader_core::integer_step(std::uint64_t word, std::uint32_t level,
                               std::uint32_t& number) const {
  constexpr inline_search search = Batched ? inline_search::halving : inline_search::two_level;
  const unsigned char* p = base_ + std::uint64_t{number} * info_.page_size;
  integer_layout layout;
  if (!read_integer_layout(p, level, layout)) [[unlikely]]
    return false;
  const integer_position found = integer_search<true, search>(p, layout.prefix_length, layout.width,
                                                              layout.count, word, layout.tails);
  const std::uint64_t child = std::uint64_t{level_first_page_[level - 1]} +
                              load_le<std::uint32_t>(p + page::first_child_offset) + found.index;
  if (child >= level_first_page_[level]) [[unlikely]] {
    child_outside_level(number, child, level - 1);
  }
  number = static_cast<std::uint32_t>(child);
  if constexpr (!Batched) {
    prefetch_page(number);
    // With a separator on each side the probe lies within the page's
    // prefix, and `target` is its inline key there.
    if (level == 2 && found.index > 0 && found.index < layout.count) {
      const unsigned char* keys = p + layout.inline_keys;
      touch_guessed_leaf(format::load_inline_key(keys, found.index - 1, layout.width),
                         format::load_inline_key(keys, found.index, layout.width), found.target,
                         child);
    }
  }
  return true;
}

// A lone lookup reads two pages from memory, one after the other: its
// level-1 page, then its leaf.  Level 2, which is in cache, already bounds
// the probe's level-1 page by two separators, and where keys are spread
// evenly the probe's place between them says which of that page's leaves it
// will reach.  Touching one line of that leaf now, while the level-1 page
// is on its way, starts the leaf's address translation and its memory row
// early.  Measured on 10M random u64 keys (bench/RESULTS.md, "A lone
// lookup touches the leaf it guesses"): the guess is the right leaf for
// 56% of probes and within one for 95%, and lookups take about 4% less
// time; prefetching the whole guessed page instead was slower.  Where keys
// are not spread evenly the guess costs one wasted line.  Only a prefetch:
// the answer never depends on it.
//
// `low` and `high` are the separators on either side of the probe, and
// `target` the probe, all three with the same leading bytes left out.
void reader_core::touch_guessed_leaf(std::uint64_t low, std::uint64_t high, std::uint64_t target,
                                     std::uint64_t level1_page) const {
  if (!(low <= target && target < high)) return;  // only in a damaged page
  const double fraction = static_cast<double>(target - low) / static_cast<double>(high - low);
  // The builder fills level-1 pages greedily (spec/FORMAT.md, 15.5): with
  // fixed-size keys those before this one hold about the same number of
  // children each, so its leaves start near ordinal * leaves_per_level1_page_.
  const std::uint64_t ordinal = level1_page - level_first_page_[1];
  const std::uint64_t guess = first_leaf() + ordinal * leaves_per_level1_page_ +
                              static_cast<std::uint64_t>(fraction * leaves_per_level1_page_);
  if (guess < end_leaf()) prefetch_page<cache_line_bytes>(static_cast<std::uint32_t>(guess));
}

// An integer probe's place among the inline keys of its leaf.
struct reader_core::leaf_place {
  integer_layout layout;
  inline_place place;
};

bool reader_core::integer_leaf_get(std::uint64_t word, std::uint32_t number,
                                   std::optional<std::string_view>& value) const {
  const unsigned char* p = base_ + std::uint64_t{number} * info_.page_size;
  leaf_place at;
  if (!read_integer_layout(p, 0, at.layout)) [[unlikely]]
    return false;
  at.place = place_among_inline_keys<false, inline_search::two_level>(
      p, at.layout.prefix_length, at.layout.width, at.layout.count, word);
  return answer_in_leaf(word, number, at, value);
}

// A batched lookup's first pass over its leaf, whose first lines (the
// inline keys of a leaf of u64 keys) were prefetched with it: the probe's
// place among the inline keys, and a prefetch of the two lines that the
// second pass (answer_in_leaf) reads there, the tail and the value.  Their
// misses then overlap across the batch instead of following each search.
bool reader_core::place_in_leaf(std::uint64_t word, std::uint32_t number, leaf_place& at) const {
  const unsigned char* p = base_ + std::uint64_t{number} * info_.page_size;
  if (!read_integer_layout(p, 0, at.layout)) [[unlikely]]
    return false;
  const integer_layout& layout = at.layout;
  at.place = place_among_inline_keys<false, inline_search::halving>(
      p, layout.prefix_length, layout.width, layout.count, word);
  if (at.place.order != 0) return true;
  const std::size_t index = at.place.index;
  if (layout.tails.width > 0)
    __builtin_prefetch(p + layout.tails.offset + index * layout.tails.width);
  const std::size_t value_stride =
      info_.values == value_kind::bytes ? format::slot_size : info_.value_size;
  __builtin_prefetch(p + layout.values() + index * value_stride);
  return true;
}

// The first pass of a batch over the leaf of a probe that is not searched
// as an integer: the probe's place among the inline keys, and a prefetch of
// the key remainder and the value there, which the second pass reads.
// Out of line, so that the integer path of get_many keeps its registers.
struct reader_core::general_place {
  bool placed;  // false: the probe has an integer's size; get_in_leaf answers
  page_view leaf;
  key_place place;
};

void reader_core::place_in_leaf(std::string_view key, std::uint32_t number,
                                general_place& at) const {
  at.placed = !integer_probe(key);
  if (!at.placed) return;
  at.leaf = page(number, 0);
  at.place = place_among_keys(at.leaf, key);
  if (at.place.order == 0) prefetch_entry_items(at.leaf, at.place.below);
}

std::optional<std::string_view> reader_core::answer_in_leaf(std::string_view key,
                                                            std::uint32_t number,
                                                            const general_place& at) const {
  if (!at.placed) return get_in_leaf(number, key);
  const page_bound bound = settle_tied_keys<false>(*this, at.leaf, key, at.place);
  if (!bound.equal) return std::nullopt;
  return value(at.leaf, bound.index);
}

// Starts loading the key remainder and the value of entry `index` of
// `leaf`: only the slots are read here, in the lines that the first pass's
// prefetch of the leaf brought in.
void reader_core::prefetch_entry_items(const page_view& leaf, std::uint32_t index) const {
  if (index >= leaf.count) return;
  // An item's reference is a page offset, of the item or of its external
  // record; a damaged one is not followed (the second pass reports it).
  const auto prefetch_item = [&](const unsigned char* slot) {
    const std::uint32_t offset = load_le<std::uint32_t>(slot + 4) & ~external_flag;
    if (offset < info_.page_size) __builtin_prefetch(leaf.bytes + offset);
  };
  if (info_.keys == key_kind::bytes) {
    const unsigned char* key_slot = leaf.bytes + leaf.sections.key_data + index * slot_size;
    if (load_le<std::uint32_t>(key_slot) > leaf.inline_width) prefetch_item(key_slot);
  }
  const unsigned char* values = leaf.bytes + leaf.sections.values;
  if (info_.values == value_kind::bytes) {
    prefetch_item(values + index * slot_size);
  } else {
    __builtin_prefetch(values + std::size_t{index} * info_.value_size);
  }
}

bool reader_core::answer_in_leaf(std::uint64_t word, std::uint32_t number, const leaf_place& at,
                                 std::optional<std::string_view>& value) const {
  const unsigned char* p = base_ + std::uint64_t{number} * info_.page_size;
  const integer_layout& layout = at.layout;
  const integer_position found = settle_ties<false>(p, layout.prefix_length, layout.width,
                                                    layout.count, word, layout.tails, at.place);
  if (!found.equal) {
    value.reset();
    return true;
  }
  if (info_.values == value_kind::bytes) {
    value = this->value(page(number, 0), found.index);
    return true;
  }
  const std::uint32_t values = layout.values();
  if (values + std::uint64_t{layout.count} * info_.value_size > info_.page_size) [[unlikely]]
    return false;
  value = std::string_view(
      reinterpret_cast<const char*>(p + values + std::size_t{found.index} * info_.value_size),
      info_.value_size);
  return true;
}

std::uint32_t reader_core::directory_level1_page(std::uint64_t word) const {
  const integer_directory::probe key = integer_directory_.probe_of(word);
  const std::uint32_t count = integer_directory_.count_at_most(key);
  const std::uint32_t number = level1_page_after(count);
  prefetch_page(number);
  if (key.outside == 0 && count > 0 && count < integer_directory_.entries()) {
    touch_guessed_leaf(integer_directory_.head(count - 1), integer_directory_.head(count), key.head,
                       number);
  }
  return number;
}

BBTREE_FIRST_ANSWER bool reader_core::integer_get(std::uint64_t word,
                                                  std::optional<std::string_view>& value) const {
  std::uint32_t number = info_.root_page;
  std::uint32_t level = info_.height - 1;
  // The directory holds every separator above level 1 (spec/FORMAT.md,
  // 12.3): counting them finds the level-1 page that the root's descent
  // would, in a few lines of a small tree instead of two or more pages.
  if (!integer_directory_.empty()) {
    number = directory_level1_page(word);
    level = 1;
  }
  for (; level > 0; --level) {
    if (!integer_step<false>(word, level, number)) [[unlikely]]
      return false;
  }
  return integer_leaf_get(word, number, value);
}

BBTREE_FIRST_ANSWER std::uint64_t reader_core::integer_word(std::string_view key) const noexcept {
  return padded_word(key.data(), key.size());
}

void reader_core::prefetch_for_scan(std::uint32_t leaf) const {
  if (leaf + 1 < end_leaf()) prefetch_page(leaf + 1);
}

void reader_core::prefetch_scan_ahead(std::uint32_t leaf) const {
  for (std::uint32_t next = leaf + 1; next <= leaf + 2 && next < end_leaf(); ++next)
    prefetch_page<prefetch_bytes, 2>(next);
}

reader_core::position reader_core::search(std::string_view key, bool or_equal,
                                          page_view* bound_leaf) const {
  const std::uint32_t leaf_number = descend(key);
  if (bound_leaf != nullptr) prefetch_scan_ahead(leaf_number);
  const page_view leaf = page(leaf_number, 0);
  const std::uint32_t index = count_below(leaf, key, or_equal);
  if (index < leaf.count) {
    if (bound_leaf != nullptr) *bound_leaf = leaf;
    return {leaf_number, index};
  }
  // The bound is in this leaf but after its last key: the next entry.
  // (normalize would decode this leaf again to learn so.)
  return normalize(leaf_number + 1, 0);
}

reader_core::position reader_core::normalize(std::uint32_t leaf, std::uint32_t index) const {
  while (leaf < end_leaf()) {
    const page_view view = page(leaf, 0);
    if (index < view.count) return {leaf, index};
    ++leaf;
    index = 0;
  }
  return end_position();
}

reader_core::position reader_core::next(position at) const {
  if (at.leaf >= end_leaf()) return end_position();
  return normalize(at.leaf, at.index + 1);
}

reader_core::position reader_core::previous(position at) const {
  if (at.leaf < end_leaf() && at.index > 0) return {at.leaf, at.index - 1};
  std::uint32_t leaf = std::min(at.leaf, end_leaf());
  while (leaf > first_leaf()) {
    --leaf;
    const page_view view = page(leaf, 0);
    if (view.count > 0) return {leaf, view.count - 1};
  }
  return end_position();
}

std::uint64_t reader_core::rank_of(position at) const {
  if (at.leaf >= end_leaf()) return info_.entries;
  return page(at.leaf, 0).header_word + at.index;
}

reader_core::position reader_core::at_rank(std::uint64_t rank) const {
  if (rank >= info_.entries) return end_position();
  // The last leaf whose first_rank is <= rank.  Leaves of fixed-size
  // entries are all equally full, so the first probe usually lands.
  std::uint32_t low = first_leaf();
  std::uint32_t high = end_leaf();  // invariant: answer in [low, high)
  while (high - low > 1) {
    const std::uint32_t middle = low + (high - low) / 2;
    if (page(middle, 0).header_word <= rank) {
      low = middle;
    } else {
      high = middle;
    }
  }
  const page_view leaf = page(low, 0);
  // Spec 14.5: the leaf found holds the rank, or the first_rank chain is
  // broken.  (Going on would answer with another entry.)
  if (rank < leaf.header_word || rank - leaf.header_word >= leaf.count) [[unlikely]]
    corrupt(low, fmt::format("rank {} is not among the {} entries from first_rank {}", rank,
                             leaf.count, leaf.header_word));
  return {low, static_cast<std::uint32_t>(rank - leaf.header_word)};
}

BBTREE_FIRST_ANSWER std::optional<std::uint32_t> reader_core::find_in_leaf(
    const page_view& leaf, std::string_view key) const {
  const page_bound bound = bound_in_page<false>(leaf, key);
  if (!bound.equal) return std::nullopt;
  return bound.index;
}

BBTREE_FIRST_ANSWER std::optional<std::string_view> reader_core::get_in_leaf(
    std::uint32_t leaf_number, std::string_view key) const {
  const page_view leaf = page(leaf_number, 0);
  const std::optional<std::uint32_t> index = find_in_leaf(leaf, key);
  if (!index) return std::nullopt;
  return value(leaf, *index);
}

BBTREE_FIRST_ANSWER std::optional<std::string_view> reader_core::get(std::string_view key) const {
  if (integer_probe(key)) {
    std::optional<std::string_view> found;
    if (integer_get(integer_word(key), found)) return found;
  }
  return get_in_leaf(descend(key), key);
}

namespace {

// The caller of get_many reads the values next, whole, and the first pass
// prefetched only the first line of each (prefetch_entry_items): every
// further line, and a value in the blob region, would be a miss in the
// caller's loop, one value after another.  Started here, they overlap with
// the rest of the batch.  Up to 256 bytes of a value: measured on 1M
// path-like keys, whose values take 8 to 2,048 bytes, 122 on average
// (bench/RESULTS.md, "Every line of a batch's values prefetched for the
// caller"), get_many over lone lookups 0.479 against 0.507 with the first
// line only.  (Prefetching the lines in the first pass as well, while the
// batch's leaves were still loading, was slower on 12-03.)
constexpr std::size_t value_prefetch_limit = 256;

[[gnu::always_inline]] inline void prefetch_value_lines(std::string_view value) {
  if (value.empty()) return;
  constexpr std::uintptr_t line_bytes = cache_line_bytes;
  const auto start = reinterpret_cast<std::uintptr_t>(value.data());
  const std::uintptr_t end = start + std::min(value.size(), value_prefetch_limit);
  for (std::uintptr_t line = start & ~(line_bytes - 1); line < end; line += line_bytes)
    __builtin_prefetch(reinterpret_cast<const void*>(line));
}

}  // namespace

std::size_t reader_core::get_many(std::span<const std::string_view> keys,
                                  std::span<std::optional<std::string_view>> out) const {
  // Groups small enough that their pages stay in cache between levels, and
  // large enough that a level's misses overlap; and only the first half of
  // each 1 KiB page prefetched, because across a group the misses overlap
  // anyway and whole pages crowd the memory system.  Measured
  // (bench/RESULTS.md, get_many): 16 keys and 512 bytes beat 32 keys and
  // 1024 bytes, 16 and 1024, 16 and 256, 64 and 256, 128 and 128.
  //
  // Except for integer probes' inner pages, prefetched whole: their keys
  // fill the page (124 of 8 bytes in a 1 KiB page of random u64 keys), and
  // the halving search's first step is already in its second half, where
  // the inline keys of byte-string keys take the first half only.  Measured
  // on the Intel Xeon (bench/RESULTS.md, "Integer probes' inner pages
  // prefetched whole"): get_many over get 0.476 against 0.487.
  //
  // A batch is bound by the cache lines it asks for (8 to 14 ns each on
  // this machine, however far ahead they are prefetched: bench/RESULTS.md,
  // "Leaf tails"), so an integer probe's leaf is read in two passes over the
  // group: its first 320 bytes, which hold the header and the 69 inline
  // keys of a 1 KiB leaf of random u64 keys; then the one line of tails and
  // the one of values at the probe's place (place_in_leaf).  Other probes
  // take two passes too: their place among the inline keys, with a
  // prefetch of the key remainder and the value there, which on path-like
  // keys lie anywhere in the page's heap; then the answer.  Measured on 1M
  // path-like keys (bench/RESULTS.md, "Byte-string probes' leaves in two
  // passes"): 9-11% faster batches.
  constexpr std::size_t group = 16;
  constexpr std::uint32_t batch_prefetch_bytes = 512;
  constexpr std::uint32_t batch_leaf_prefetch_bytes = 320;
  std::uint32_t pages[group];
  leaf_place leaf_places[group];  // integer probes
  general_place general[group];   // the others
  std::uint64_t words[group];
  bool integer[group];
  std::size_t found = 0;
  for (std::size_t start = 0; start < keys.size(); start += group) {
    const std::size_t n = std::min(group, keys.size() - start);
    // With a directory, the group's level-1 pages come first, and the
    // descents start there: from its heads for probes that are not searched
    // as integers, or from the tree over them for those that are.
    static_assert(group <= max_directory_batch);
    const bool has_integer_directory = !integer_directory_.empty();
    const std::uint32_t top_level =
        uses_directory() || has_integer_directory ? 1 : info_.height - 1;
    for (std::size_t i = 0; i < n; ++i) {
      integer[i] = integer_probe(keys[start + i]);
      words[i] = integer[i] ? integer_word(keys[start + i]) : 0;
      pages[i] = info_.root_page;
    }
    if (uses_directory()) {
      directory_pages(keys.data() + start, n, pages);
      for (std::size_t i = 0; i < n; ++i) prefetch_child<batch_prefetch_bytes>(pages[i]);
    } else if (has_integer_directory) {
      for (std::size_t i = 0; i < n; ++i) {
        if (integer[i]) {
          pages[i] = level1_page_after(
              integer_directory_.count_at_most(integer_directory_.probe_of(words[i])));
          prefetch_child(pages[i]);
        } else {
          // A probe of another size than the keys: from the root.
          for (std::uint32_t level = info_.height - 1; level > 1; --level)
            pages[i] = inner_step(keys[start + i], level, pages[i]);
          prefetch_child<batch_prefetch_bytes>(pages[i]);
        }
      }
    }
    for (std::uint32_t level = top_level; level > 0; --level) {
      for (std::size_t i = 0; i < n; ++i) {
        if (!integer[i] || !integer_step<true>(words[i], level, pages[i])) {
          integer[i] = false;
          pages[i] = inner_step(keys[start + i], level, pages[i]);
        }
        if (!integer[i]) {
          prefetch_child<batch_prefetch_bytes>(pages[i]);
        } else if (level == 1) {
          prefetch_page<batch_leaf_prefetch_bytes>(pages[i]);
        } else {
          prefetch_child(pages[i]);
        }
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (integer[i]) integer[i] = place_in_leaf(words[i], pages[i], leaf_places[i]);
      if (!integer[i]) place_in_leaf(keys[start + i], pages[i], general[i]);
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::string_view key = keys[start + i];
      std::optional<std::string_view>& value = out[start + i];
      if (!integer[i]) {
        value = answer_in_leaf(key, pages[i], general[i]);
      } else if (!answer_in_leaf(words[i], pages[i], leaf_places[i], value)) {
        value = get_in_leaf(pages[i], key);
      }
      found += value.has_value();
      if (value) prefetch_value_lines(*value);
    }
  }
  return found;
}

}  // namespace bbtree::detail
