// The bbtree file layout, format version 1: every constant, field offset and
// section rule that defines bytes in a file.  spec/FORMAT.md is the contract
// this header implements; the writer, the reader, the verifier, the tools
// and the fuzzers all take the layout from here and from nowhere else.
//
// A file is a sequence of pages of `page_size` bytes, then two optional
// byte regions:
//
//   page 0                          file header (header_size bytes, then zeros)
//   pages 1 .. leaf_count           leaves, level 0, in key order
//   pages leaf_count+1 .. root      inner levels, level 1 first; each level's
//                                   pages are contiguous and in key order, and
//                                   the root is the last page
//   [blob_offset, +blob_length)     out-of-page items (long values and keys)
//   [metadata_offset, +length)      user metadata
//
// An inner page's children are contiguous: child i of an inner page at level
// L is page level_first_page[L - 1] + first_child + i.
//
// Nothing in a file is an absolute pointer: pages are named by number and
// out-of-page items by file offset, so the bytes work at any address.
#pragma once

#include <bbtree/format/crc32c.h>
#include <bbtree/format/endian.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

// Thread safety: constants and pure functions only.
namespace bbtree::format {

// ---------------------------------------------------------------------------
// Versions and limits

inline constexpr std::uint16_t format_major = 1;
// Minor 1 changed only the builder policy of section 15.2 (leaf inline
// widths); the layout is that of 1.0.  Minor 2 added the directory region
// (required feature bit 0, below); a file without one has the layout of 1.0.
inline constexpr std::uint16_t format_minor = 2;

inline constexpr std::uint32_t min_page_size = 512;
inline constexpr std::uint32_t max_page_size = 65536;
// Chosen by measurement (bench/RESULTS.md): small leaves let one lookup fetch
// a whole leaf with parallel cache misses.
inline constexpr std::uint32_t default_page_size = 1024;

inline constexpr std::uint32_t max_key_length = 65536;
inline constexpr std::uint64_t max_value_length = 0xFFFFFFFFu;  // slot lengths are u32
inline constexpr std::uint32_t max_fixed_size = 4096;

constexpr bool is_valid_page_size(std::uint64_t page_size) noexcept {
  return page_size >= min_page_size && page_size <= max_page_size &&
         (page_size & (page_size - 1)) == 0;
}

// ---------------------------------------------------------------------------
// Key and value kinds

enum class key_kind : std::uint8_t { u64 = 1, i64 = 2, fixed = 3, bytes = 4 };
enum class value_kind : std::uint8_t { none = 0, u64 = 1, fixed = 2, bytes = 3 };

constexpr bool is_valid_key_kind(std::uint8_t kind) noexcept { return kind >= 1 && kind <= 4; }
constexpr bool is_valid_value_kind(std::uint8_t kind) noexcept { return kind <= 3; }

// Encoded size of every key of a kind, or 0 for variable-length byte strings.
constexpr std::uint32_t encoded_key_size(key_kind kind, std::uint32_t fixed_size) noexcept {
  switch (kind) {
    case key_kind::u64:
    case key_kind::i64:
      return 8;
    case key_kind::fixed:
      return fixed_size;
    case key_kind::bytes:
      return 0;
  }
  return 0;
}

// Encoded size of every value of a kind (u64 values are 8 little-endian
// bytes), or 0 for no values and for variable-length byte strings: the
// header's value_size field (spec/FORMAT.md, section 5).
constexpr std::uint32_t encoded_value_size(value_kind kind, std::uint32_t fixed_size) noexcept {
  switch (kind) {
    case value_kind::u64:
      return 8;
    case value_kind::fixed:
      return fixed_size;
    case value_kind::none:
    case value_kind::bytes:
      return 0;
  }
  return 0;
}

// Integer keys are stored big-endian so that bytewise order is numeric
// order; i64 additionally flips the sign bit.
inline void encode_u64_key(std::uint64_t key, unsigned char out[8]) noexcept { store_be(out, key); }
inline std::uint64_t decode_u64_key(const unsigned char* in) noexcept {
  return load_be<std::uint64_t>(in);
}
inline void encode_i64_key(std::int64_t key, unsigned char out[8]) noexcept {
  store_be(out, static_cast<std::uint64_t>(key) ^ 0x8000000000000000ull);
}
inline std::int64_t decode_i64_key(const unsigned char* in) noexcept {
  return static_cast<std::int64_t>(load_be<std::uint64_t>(in) ^ 0x8000000000000000ull);
}

// ---------------------------------------------------------------------------
// File header (page 0).  All fields little-endian.

inline constexpr unsigned char magic[8] = {0x89, 'B', 'B', 'T', 'R', 'E', 'E', 0x0A};
inline constexpr std::uint32_t header_size = 512;
// Levels are numbered from 0 (the leaves) to height - 1 (the root).
inline constexpr std::uint32_t max_height = 32;

namespace header {
inline constexpr std::size_t magic_offset = 0;                // 8 bytes
inline constexpr std::size_t major_offset = 8;                // u16
inline constexpr std::size_t minor_offset = 10;               // u16
inline constexpr std::size_t header_size_offset = 12;         // u32, = header_size
inline constexpr std::size_t required_features_offset = 16;   // u64
inline constexpr std::size_t optional_features_offset = 24;   // u64
inline constexpr std::size_t page_size_offset = 32;           // u32
inline constexpr std::size_t key_kind_offset = 36;            // u8
inline constexpr std::size_t value_kind_offset = 37;          // u8
inline constexpr std::size_t key_size_offset = 40;            // u32 (0 for bytes)
inline constexpr std::size_t value_size_offset = 44;          // u32 (0 for none, bytes)
inline constexpr std::size_t entry_count_offset = 48;         // u64
inline constexpr std::size_t height_offset = 56;              // u32, levels incl. leaves
inline constexpr std::size_t root_page_offset = 60;           // u32
inline constexpr std::size_t first_leaf_page_offset = 64;     // u32, = 1
inline constexpr std::size_t leaf_count_offset = 68;          // u32
inline constexpr std::size_t page_count_offset = 72;          // u32, incl. page 0
inline constexpr std::size_t blob_offset_offset = 80;         // u64
inline constexpr std::size_t blob_length_offset = 88;         // u64
inline constexpr std::size_t metadata_offset_offset = 96;     // u64
inline constexpr std::size_t metadata_length_offset = 104;    // u64
inline constexpr std::size_t metadata_checksum_offset = 112;  // u32
inline constexpr std::size_t build_flags_offset = 116;        // u32
inline constexpr std::size_t inline_limit_offset = 120;       // u32
inline constexpr std::size_t prefix_cap_offset = 124;         // u32
inline constexpr std::size_t file_size_offset = 128;          // u64
inline constexpr std::size_t max_key_length_offset = 136;     // u32
inline constexpr std::size_t max_value_length_offset = 140;   // u32
// Since 1.2; 0 when the file has no directory region (required bit 0 clear).
inline constexpr std::size_t directory_offset_offset = 144;         // u64
inline constexpr std::size_t directory_length_offset = 152;         // u64
inline constexpr std::size_t directory_checksum_offset = 160;       // u32
inline constexpr std::size_t directory_head_size_offset = 164;      // u32
inline constexpr std::size_t directory_prefix_length_offset = 168;  // u32
inline constexpr std::size_t directory_fields_end = 172;
// u32 level_first_page[max_height]: the first page of each level; zero past the root.
inline constexpr std::size_t level_table_offset = 256;
inline constexpr std::size_t checksum_offset = 508;  // u32, CRC32C of [0, 508)
}  // namespace header

// A reader refuses a file that sets a required bit it does not know, and
// ignores optional bits it does not know.  Bit 0 (since 1.2): the file has a
// directory region.  It is required rather than optional because a 1.1
// reader's file_size check has no room for the region: with the bit it
// refuses the file naming the feature, instead of calling it corrupt.
namespace feature {
inline constexpr std::uint64_t directory = 1u << 0;
}  // namespace feature
inline constexpr std::uint64_t known_required_features = feature::directory;
inline constexpr std::uint64_t known_optional_features = 0;

// ---------------------------------------------------------------------------
// The directory region (spec/FORMAT.md, section 12.3): the separators of the
// inner levels above level 1, in key order, as fixed-size heads beside
// locators of the full separators.  In a valid file they are exactly the
// boundaries between consecutive level-1 pages, so one binary search over
// the heads finds the level-1 page a descent from the root would reach.
//
// With n = level-1 pages - 1, head_size and prefix_length p from the header:
//
//   offset 0                  heads: n * head_size bytes, each the bytes of
//                             a separator after the prefix, zero-padded
//   n * head_size             locators: n * 8 bytes, each u32 page, u16
//                             index of the separator in that page, u16 0
//   n * (head_size + 8)       prefix: p bytes every separator starts with
//
// Heads follow a common prefix so that separators sharing a long one (URLs
// of one site) still differ within their heads.  The region starts at the
// end of the other regions rounded up to a multiple of 64, after zero
// padding: in a mapping aligned to 64 bytes, a head of 8, 16, 32 or 64
// bytes lies in one cache line, and a step of the search reads one line.
namespace directory {
inline constexpr std::size_t locator_size = 8;
inline constexpr std::size_t locator_page_offset = 0;      // u32
inline constexpr std::size_t locator_index_offset = 4;     // u16
inline constexpr std::size_t locator_reserved_offset = 6;  // u16, 0
inline constexpr std::uint32_t alignment = 64;
inline constexpr std::uint32_t max_head_size = 64;
inline constexpr std::uint32_t max_prefix_length = max_key_length;
// The builder's choice (spec/FORMAT.md, 15.7).  Path-like separators
// differ within 32 bytes after their common prefix, so a tie that reads a
// full separator is rare, and two heads share a cache line.  A key of at
// most eight bytes (word_keys) fits one 8-byte head whole after any
// prefix, so its heads never tie, and eight of them fill a cache line.
inline constexpr std::uint32_t builder_head_size = 32;
inline constexpr std::uint32_t builder_word_head_size = 8;

constexpr bool is_valid_head_size(std::uint64_t head_size) noexcept {
  return head_size >= 8 && head_size <= max_head_size && head_size % 8 == 0;
}
constexpr std::uint64_t locators_offset(std::uint64_t entry_count,
                                        std::uint64_t head_size) noexcept {
  return entry_count * head_size;
}
constexpr std::uint64_t prefix_offset(std::uint64_t entry_count, std::uint64_t head_size) noexcept {
  return entry_count * (head_size + locator_size);
}
constexpr std::uint64_t region_length(std::uint64_t entry_count, std::uint64_t head_size,
                                      std::uint64_t prefix_length) noexcept {
  return prefix_offset(entry_count, head_size) + prefix_length;
}
// Where the region starts after the other regions end at `end`.
constexpr std::uint64_t region_offset(std::uint64_t end) noexcept {
  return (end + alignment - 1) / alignment * alignment;
}

// The head of a separator, or of a probe: the first head_size bytes of what
// follows the prefix, zero-padded.
inline void store_head(unsigned char* head, std::string_view after_prefix,
                       std::size_t head_size) noexcept {
  const std::size_t length = after_prefix.size() < head_size ? after_prefix.size() : head_size;
  // An empty view may hold no pointer at all, which memcpy may not take.
  if (length != 0) std::memcpy(head, after_prefix.data(), length);
  std::memset(head + length, 0, head_size - length);
}

// Where an entry's full separator is: separator `index` of page `page`.
struct locator {
  std::uint32_t page = 0;
  std::uint32_t index = 0;  // stored as a u16
};
inline void store_locator(unsigned char* at, locator where) noexcept {
  store_le<std::uint32_t>(at + locator_page_offset, where.page);
  store_le<std::uint16_t>(at + locator_index_offset, static_cast<std::uint16_t>(where.index));
}

// The parts of a region whose length open checked against its entry count,
// head size and prefix length.
struct region_view {
  const unsigned char* heads = nullptr;
  const unsigned char* locators = nullptr;
  std::string_view prefix;
  std::uint32_t entries = 0;
  std::uint32_t head_size = 0;

  region_view() = default;
  region_view(const unsigned char* region, std::uint32_t entry_count, std::uint32_t head_bytes,
              std::uint32_t prefix_length) noexcept
      : heads(region),
        locators(region + locators_offset(entry_count, head_bytes)),
        prefix(reinterpret_cast<const char*>(region + prefix_offset(entry_count, head_bytes)),
               prefix_length),
        entries(entry_count),
        head_size(head_bytes) {}

  const unsigned char* head(std::size_t entry) const noexcept { return heads + entry * head_size; }
  const unsigned char* locator_bytes(std::size_t entry) const noexcept {
    return locators + entry * locator_size;
  }
  locator locator_of(std::size_t entry) const noexcept {
    const unsigned char* at = locator_bytes(entry);
    return {load_le<std::uint32_t>(at + locator_page_offset),
            load_le<std::uint16_t>(at + locator_index_offset)};
  }
};
}  // namespace directory

// build_flags: how the file was built, recorded so that dumps can show it.
namespace build_flag {
inline constexpr std::uint32_t input_unsorted = 1u << 0;  // entries were sorted by the builder
inline constexpr std::uint32_t duplicates_shift = 1;      // bits 1-2: duplicate policy
inline constexpr std::uint32_t duplicates_mask = 3u << duplicates_shift;
}  // namespace build_flag

enum class duplicate_policy : std::uint8_t { error = 0, keep_first = 1, keep_last = 2 };

// ---------------------------------------------------------------------------
// Pages.  Every page, leaf or inner, starts with this 32-byte header.

inline constexpr std::uint32_t page_header_size = 32;

namespace page {
inline constexpr std::size_t checksum_offset = 0;        // u32, CRC32C of [4, page_size)
inline constexpr std::size_t page_number_offset = 4;     // u32, the page's own number
inline constexpr std::size_t kind_offset = 8;            // u8, page_kind
inline constexpr std::size_t level_offset = 9;           // u8, 0 for leaves
inline constexpr std::size_t inline_width_offset = 10;   // u8, 2, 4 or 8
inline constexpr std::size_t count_offset = 12;          // u16, keys in the page
inline constexpr std::size_t prefix_length_offset = 14;  // u16
inline constexpr std::size_t first_rank_offset = 16;     // u64, leaves: entries before this leaf
inline constexpr std::size_t first_child_offset = 16;    // u32, inner: child 0's index in its level
inline constexpr std::size_t heap_end_offset = 24;       // u32, end of the page's used bytes
}  // namespace page

enum class page_kind : std::uint8_t { leaf = 1, inner = 2 };

constexpr bool is_valid_inline_width(std::uint32_t width) noexcept {
  return width == 2 || width == 4 || width == 8;
}

constexpr std::uint32_t align8(std::uint32_t offset) noexcept { return (offset + 7u) & ~7u; }

// A variable-length item (a byte-string key's remainder or a bytes value) is
// described by an 8-byte slot: u32 length, u32 reference.  If the reference
// has external_flag set, its low 31 bits are the in-page offset of a 16-byte
// external record {u64 offset from the start of the blob region, u32 CRC32C
// of the item, u32 zero}; else
// they are the in-page offset of the item's bytes.  An empty item has
// reference 0.
inline constexpr std::uint32_t slot_size = 8;
inline constexpr std::uint32_t external_flag = 0x80000000u;
inline constexpr std::uint32_t external_record_size = 16;

// Builder policy (readers follow the slot flags, not this rule): an item of
// more than inline_limit bytes is stored out of the page, and a node's
// prefix is capped at prefix_cap bytes.
constexpr std::uint32_t default_inline_limit(std::uint32_t page_size) noexcept {
  return page_size / 8;
}
constexpr std::uint32_t default_prefix_cap(std::uint32_t page_size) noexcept {
  return page_size / 8;
}

// Builder policy (spec/FORMAT.md, section 15.2; readers follow each page's
// fields): the inline width of a page whose keys have `prefix_length`
// bytes in common, and the prefix stored for keys that share
// `common_prefix` bytes (already capped at prefix_cap).  `minor_version` is
// the file's: a verifier checks files of minor version 0 against the
// policy they were built with.
//
// Leaves of keys of at most eight bytes whose suffix is 5 to 7 bytes long
// (since minor version 1) keep the first 4 bytes inline and the rest as a
// tail: a byte-exact layout (random u64 keys: 69 entries a 1 KiB leaf
// instead of 62), whose inline keys a batched lookup reads in 5 cache
// lines instead of 8.  Inner pages keep whole suffixes inline: a tail
// there costs lone lookups time at every level (bench/RESULTS.md, "Leaf
// tails").
// Whether keys are of one size of at most eight bytes: big-endian words,
// which readers can search as integers.
constexpr bool word_keys(key_kind keys, std::uint32_t key_size) noexcept {
  return keys != key_kind::bytes && key_size <= 8;
}

// The head size of the directory region that the reference builder writes
// for such keys and for the others (spec/FORMAT.md, 15.7).
constexpr std::uint32_t builder_head_size_for(key_kind keys, std::uint32_t key_size) noexcept {
  return word_keys(keys, key_size) ? directory::builder_word_head_size
                                   : directory::builder_head_size;
}

constexpr std::uint32_t policy_inline_width(page_kind kind, key_kind keys, std::uint32_t key_size,
                                            std::uint32_t prefix_length,
                                            std::uint16_t minor_version = format_minor) noexcept {
  if (keys == key_kind::bytes) return 8;
  const std::uint32_t suffix = key_size - prefix_length;
  if (minor_version >= 1 && kind == page_kind::leaf && key_size <= 8 && suffix > 4 && suffix < 8)
    return 4;
  return suffix <= 2 ? 2 : suffix <= 4 ? 4 : 8;
}
// Keys of at most eight bytes keep a prefix only when it narrows the inline
// width: otherwise it costs its aligned section and saves nothing, since
// the inline keys hold the whole suffix either way.
constexpr std::uint32_t policy_prefix_length(page_kind kind, key_kind keys, std::uint32_t key_size,
                                             std::uint32_t common_prefix,
                                             std::uint16_t minor_version = format_minor) noexcept {
  if (!word_keys(keys, key_size)) return common_prefix;
  return policy_inline_width(kind, keys, key_size, common_prefix, minor_version) <
                 policy_inline_width(kind, keys, key_size, 0, minor_version)
             ? common_prefix
             : 0;
}

// Where each section of a page starts, derived from the page header and the
// file's kinds.  Sections follow each other in this order, each aligned to 8
// bytes, with zero padding:
//
//   header     32 bytes
//   prefix     prefix_length bytes: the bytes every key of the page starts with
//   inline     count * inline_width: big-endian inline keys, ascending
//   key data   fixed keys: count * tail_width key tails;
//              byte-string keys: count * 8-byte slots
//   values     leaves only: none: nothing; u64: count * 8 (LE);
//              fixed N: count * N; bytes: count * 8-byte slots
//   heap       variable-length items and external records, up to heap_end
//   zeros      up to page_size
struct page_sections {
  std::uint32_t prefix = 0;
  std::uint32_t inline_keys = 0;
  std::uint32_t key_data = 0;
  std::uint32_t values = 0;
  std::uint32_t heap = 0;
  std::uint32_t tail_width = 0;  // fixed keys: bytes of each key after prefix and inline key
};

// The parts of compute_sections that a search reads on its own: where the
// inline keys start, where the section after an array of `count` items of
// `item_size` bytes from `start` begins, and how many bytes of a suffix of
// a fixed-size key are left for its tail.
constexpr std::uint32_t inline_keys_offset(std::uint32_t prefix_length) noexcept {
  return align8(page_header_size + prefix_length);
}
constexpr std::uint32_t section_after(std::uint32_t start, std::uint32_t count,
                                      std::uint32_t item_size) noexcept {
  return align8(start + count * item_size);
}
constexpr std::uint32_t tail_width(std::uint32_t suffix_length,
                                   std::uint32_t inline_width) noexcept {
  return suffix_length > inline_width ? suffix_length - inline_width : 0;
}

// Computes section offsets; the caller checks that `heap` (and heap_end) lie
// within the page.  Widened arithmetic: no input can overflow it.
constexpr page_sections compute_sections(page_kind kind, std::uint32_t count,
                                         std::uint32_t prefix_length, std::uint32_t inline_width,
                                         key_kind keys, std::uint32_t key_size, value_kind values,
                                         std::uint32_t value_size) noexcept {
  page_sections sections;
  sections.prefix = page_header_size;
  sections.inline_keys = inline_keys_offset(prefix_length);
  sections.key_data = section_after(sections.inline_keys, count, inline_width);
  if (keys == key_kind::bytes) {
    sections.values = section_after(sections.key_data, count, slot_size);
  } else {
    const std::uint32_t suffix = key_size > prefix_length ? key_size - prefix_length : 0;
    sections.tail_width = tail_width(suffix, inline_width);
    sections.values = section_after(sections.key_data, count, sections.tail_width);
  }
  std::uint32_t value_data_size = 0;
  if (kind == page_kind::leaf) {
    switch (values) {
      case value_kind::none:
        break;
      case value_kind::u64:
        value_data_size = count * 8;
        break;
      case value_kind::fixed:
        value_data_size = count * value_size;
        break;
      case value_kind::bytes:
        value_data_size = count * slot_size;
        break;
    }
  }
  sections.heap = align8(sections.values + value_data_size);
  return sections;
}

inline std::uint64_t load_inline_key(const unsigned char* array, std::size_t index,
                                     std::uint32_t width) noexcept {
  switch (width) {
    case 2:
      return load_be<std::uint16_t>(array + index * 2);
    case 4:
      return load_be<std::uint32_t>(array + index * 4);
    default:
      return load_be<std::uint64_t>(array + index * 8);
  }
}

// Tail `index` of a page whose key tails, `width` bytes each (1 to 7),
// start at page offset `offset` (spec/FORMAT.md, 8.3), as a big-endian
// integer.  Reads the eight bytes that end where the tail ends: they lie in
// the page, since the key data starts past the 32-byte header.  The caller
// has checked that the tail lies in the page.
inline std::uint64_t load_tail(const unsigned char* page_bytes, std::uint32_t offset,
                               std::uint32_t width, std::uint32_t index) noexcept {
  const unsigned char* end = page_bytes + offset + std::size_t{index + 1} * width;
  return load_be<std::uint64_t>(end - 8) & (~std::uint64_t{0} >> (64 - 8 * width));
}

// The inline key of a key suffix: its first `width` bytes, zero-padded,
// read big-endian.  Equal inline keys are a tie that only the full keys
// resolve.
inline std::uint64_t inline_key_of(const unsigned char* suffix, std::size_t suffix_length,
                                   std::uint32_t width) noexcept {
  if (suffix_length >= width) return load_inline_key(suffix, 0, width);
  unsigned char padded[8] = {};
  if (suffix_length > 0) std::memcpy(padded, suffix, suffix_length);
  return load_inline_key(padded, 0, width);
}

inline void store_inline_key(unsigned char* array, std::size_t index, std::uint32_t width,
                             std::uint64_t value) noexcept {
  switch (width) {
    case 2:
      store_be(array + index * 2, static_cast<std::uint16_t>(value));
      break;
    case 4:
      store_be(array + index * 4, static_cast<std::uint32_t>(value));
      break;
    default:
      store_be(array + index * 8, value);
      break;
  }
}

// Page checksums cover everything after the checksum field; the page number
// stored inside makes a page copied to the wrong place detectable.
inline std::uint32_t page_checksum(const unsigned char* page_bytes,
                                   std::uint32_t page_size) noexcept {
  return crc32c(page_bytes + 4, page_size - 4);
}

inline std::uint32_t header_checksum(const unsigned char* header_bytes) noexcept {
  return crc32c(header_bytes, header::checksum_offset);
}

// Metadata block: u32 entry count, then per entry u32 key length, key bytes,
// u32 value length, value bytes; keys unique and in ascending byte order.

}  // namespace bbtree::format
