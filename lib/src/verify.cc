// Full verification (spec/FORMAT.md, section 14.6).
//
// The file is read in one pass per region, in this order:
//   1. the header, through reader_core (section 14.1), then the fields and
//      reserved bytes the reader does not need;
//   2. the inner levels, level 1 first (file order): each page on its own,
//      the first_child chain that makes each level tile the one below, and
//      each separator recorded against the leaf boundary it stands for;
//   3. the leaves, in file order: each page on its own, the first_rank
//      chain, key order from leaf to leaf, and the separator of every leaf
//      boundary against the last key before it and the first key after it;
//   4. the blob region (items tile it exactly), the metadata region and
//      the directory region (its entries against the separators of step 2).
//
// Why separators are checked at leaf boundaries: the pages of each level
// tile the level below, so every separator of every level stands between
// two adjacent leaves, and "every key of child i is < sep <= every key of
// child i + 1" reduces, with the leaves in strict order, to
// "last key of the leaf before < sep <= first key of the leaf after".  That
// needs one separator per leaf boundary instead of a walk with fences per
// level, and lets the leaves, most of the file, be read in file order.
//
// Keys are never copied to be compared: they are compared by their parts
// where they lie in the mapping (prefix, inline key, then tail or
// remainder; key_ref), so the separators kept per leaf boundary take a few
// words each whatever their length.  Whole keys are assembled only for
// messages.  Remainders in the blob region are compared only when their
// checksum was checked (check_blob_item_checksum), so comparisons too read
// the region a bounded number of times when records overlap.
#include <bbtree/detail/reader_core.h>
#include <bbtree/detail/verify_costs.h>
#include <bbtree/error.h>
#include <bbtree/text_format.h>
#include <bbtree/verify.h>

#include "file_io.h"
#include "key_compare.h"
#include "metadata_region.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bbtree {

namespace detail {
namespace {

using format::compute_sections;
using format::crc32c;
using format::external_flag;
using format::external_record_size;
using format::format_minor;
using format::header_size;
using format::is_valid_inline_width;
using format::key_kind;
using format::load_be;
using format::load_le;
using format::max_height;
using format::max_key_length;
using format::page_checksum;
using format::page_header_size;
using format::page_kind;
using format::page_sections;
using format::slot_size;
using format::value_kind;
namespace header = format::header;
namespace page_field = format::page;
namespace build_flag = format::build_flag;

constexpr std::uint32_t unknown_index = std::numeric_limits<std::uint32_t>::max();

// Thrown when max_errors problems are reported and another one is found.
struct problem_limit_reached {};

// Index of the first nonzero byte of [bytes, bytes + length), or length.
std::size_t first_nonzero(const unsigned char* bytes, std::size_t length) noexcept {
  std::size_t position = 0;
  while (position + 8 <= length) {
    std::uint64_t word;
    std::memcpy(&word, bytes + position, 8);
    if (word != 0) break;
    position += 8;
  }
  while (position < length && bytes[position] == 0) ++position;
  return position;
}

std::string_view as_chars(const unsigned char* bytes, std::size_t length) noexcept {
  return {reinterpret_cast<const char*>(bytes), length};
}

// First index i in [1, count) whose inline key is not greater than the one
// before it, or count.  For fixed-size keys without tails the inline keys
// are the whole suffixes, so this is the page's whole order check.
template <typename Word>
std::uint32_t first_unordered_inline(const unsigned char* array, std::uint32_t count) noexcept {
  Word previous = load_be<Word>(array);
  for (std::uint32_t i = 1; i < count; ++i) {
    const Word current = load_be<Word>(array + std::size_t{i} * sizeof(Word));
    if (current <= previous) return i;
    previous = current;
  }
  return count;
}

// First index whose inline key has a nonzero bit under `mask` (the bytes
// past a suffix shorter than the inline width), or count.
template <typename Word>
std::uint32_t first_masked_inline(const unsigned char* array, std::uint32_t count,
                                  Word mask) noexcept {
  Word seen = 0;
  for (std::uint32_t i = 0; i < count; ++i)
    seen |= load_be<Word>(array + std::size_t{i} * sizeof(Word));
  if ((seen & mask) == 0) return count;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (load_be<Word>(array + std::size_t{i} * sizeof(Word)) & mask) return i;
  }
  return count;
}

// One page as verification sees it: the fields, and the sections computed
// for the role the level table gives the page (not the kind it claims).
struct checked_page {
  const unsigned char* bytes = nullptr;
  std::uint32_t number = 0;
  std::uint32_t level = 0;
  bool leaf = true;
  std::uint32_t inline_width = 0;
  std::uint32_t count = 0;
  std::uint32_t prefix_length = 0;
  std::uint32_t heap_end = 0;
  std::uint64_t header_word = 0;  // first_rank (leaf) or first_child (inner)
  page_sections sections;
  bool decodable = false;    // sections lie in the page
  bool keys_usable = false;  // every key's parts lie in bounds
};

// A key's bytes past its inline key: a fixed key's tail, or a byte-string
// key's remainder in the page or the blob region.  A remainder in the blob
// region is not readable when its checksum was not checked because the
// items overlap (check_blob_item_checksum): reading it in every comparison
// would let a file of n records pointing at the same bytes cost n times
// those bytes, so comparisons that need it are skipped.
struct key_rest {
  const unsigned char* data = nullptr;
  std::uint32_t length = 0;
  bool readable = true;
};

// A whole key as it lies in the mapping: the page prefix, the inline key
// (the first min(suffix, inline_width) bytes of the suffix) and the rest.
// The file stays mapped for the whole verification and every part was
// bounds-checked when the key was decoded, so a key_ref may be kept and
// read back later instead of copying the key.
struct key_ref {
  using part = key_rest;  // a prefix and an inline key are always readable
  part parts[3];          // prefix, inline key, rest

  std::uint64_t length() const noexcept {
    return std::uint64_t{parts[0].length} + parts[1].length + parts[2].length;
  }
};

// A key held in memory (a string view) as a key_ref, for comparisons with
// keys of the file.
key_ref ref_of(std::string_view key) noexcept {
  key_ref ref;
  ref.parts[0] = {reinterpret_cast<const unsigned char*>(key.data()),
                  static_cast<std::uint32_t>(key.size()), true};
  return ref;
}

// Which item a slot describes, named in messages only: formatting the
// name for every slot would cost more than checking it.
struct item_name {
  bool is_key;
  std::uint32_t index;
};

std::string describe(item_name name) {
  return name.is_key ? fmt::format("the remainder of key {}", name.index)
                     : fmt::format("the value of entry {}", name.index);
}

struct blob_item {
  std::uint64_t offset;  // in the blob region
  std::uint64_t length;
  std::uint32_t page;
  std::uint32_t record;  // offset of the external record in the page
};

// The separator standing between leaf b - 1 and leaf b (0-based leaf
// indices): where it lies in the mapping, not a copy, so that the memory
// per leaf does not depend on the length of its keys.
struct boundary_separator {
  key_ref key;
  std::uint32_t page = 0;   // 0: none recorded
  std::uint32_t index = 0;  // the separator's index in its page
};

// A chain of header fields that each page continues from the one before
// (first_rank of the leaves, first_child of each inner level).  After a
// mismatch, either that page's field or the page before it is damaged, so
// the next page may continue from either: one damaged field is reported
// once, and the chain does not report every page after it.
class header_chain {
 public:
  std::uint64_t expected() const noexcept { return expected_; }
  bool accepts(std::uint64_t stored) const noexcept {
    return stored == expected_ || (has_alternative_ && stored == alternative_);
  }
  // `stored` was checked with accepts(); the page adds `length` to the chain.
  void advance(std::uint64_t stored, std::uint64_t length, bool accepted) noexcept {
    has_alternative_ = !accepted;
    alternative_ = expected_ + length;
    expected_ = stored + length;
  }

 private:
  std::uint64_t expected_ = 0;
  std::uint64_t alternative_ = 0;
  bool has_alternative_ = false;
};

class verifier {
 public:
  verifier(const unsigned char* base, std::uint64_t size, const verify_options& options,
           verify_report& report)
      : base_(base), size_(size), options_(options), report_(report) {}

  const verify_costs& costs() const noexcept { return costs_; }

  void run() {
    try {
      if (!open()) return;
      check_header();
      if (options_.quick) {
        check_pages_quick();
      } else {
        check_inner_levels();
        check_leaves();
        check_totals();
        check_blob_region();
      }
      check_metadata();
      check_directory();
    } catch (const problem_limit_reached&) {
      report_.truncated_list = true;
    }
  }

 private:
  // ---------------------------------------------------------------------
  // Reporting

  void add_problem(verify_region region, std::optional<std::uint32_t> page, std::uint64_t offset,
                   std::string message) {
    if (options_.max_errors != 0 && report_.problems.size() >= options_.max_errors) {
      throw problem_limit_reached{};
    }
    report_.problems.push_back({region, page, offset, std::move(message)});
  }
  void header_problem(std::uint64_t offset, std::string message) {
    add_problem(verify_region::page, 0, offset, std::move(message));
  }
  void page_problem(const checked_page& page, std::uint64_t offset_in_page, std::string message) {
    add_problem(verify_region::page, page.number,
                std::uint64_t{page.number} * page_size_ + offset_in_page, std::move(message));
  }
  void page_problem(std::uint32_t page, std::uint64_t offset_in_page, std::string message) {
    add_problem(verify_region::page, page, std::uint64_t{page} * page_size_ + offset_in_page,
                std::move(message));
  }

  // A key as the tools write it: decimal integers, hex for fixed keys,
  // quoted and escaped byte strings.
  std::string show_key(std::string_view key) const {
    const file_info& info = core_->info();
    if (info.keys == key_kind::bytes || key.size() != info.key_size) return quote_key(key);
    return key_text(key, entry_types::of(info));
  }

  // ---------------------------------------------------------------------
  // 1. The header

  // Opens the header with the reader's own checks, so that verification and
  // reading agree on which files open at all.  Trailing data is reported,
  // and the bytes the header describes are verified anyway.
  bool open() {
    std::uint64_t usable = size_;
    for (int attempt = 0; attempt < 2; ++attempt) {
      try {
        core_ = std::make_unique<reader_core>(std::string(), base_, usable, nullptr);
        break;
      } catch (const error& failure) {
        std::string message = failure.what();
        if (message.rfind(": ", 0) == 0) message.erase(0, 2);  // the empty name
        std::uint64_t offset = 0;
        switch (failure.code()) {
          case errc::truncated:
            offset = size_;
            break;
          case errc::newer_version:
            offset = header::major_offset;
            break;
          case errc::unsupported_feature:
            offset = header::required_features_offset;
            break;
          case errc::trailing_data:
            offset = load_le<std::uint64_t>(base_ + header::file_size_offset);
            break;
          case errc::corrupt_header:
            if (load_le<std::uint32_t>(base_ + header::checksum_offset) !=
                format::header_checksum(base_)) {
              offset = header::checksum_offset;
            }
            break;
          default:
            break;
        }
        header_problem(offset, std::move(message));
        if (failure.code() != errc::trailing_data || attempt > 0) return false;
        usable = offset;
      }
    }
    const file_info& info = core_->info();
    page_size_ = info.page_size;
    report_.entries = info.entries;
    report_.pages = info.page_count;
    report_.height = info.height;
    report_.page_size = info.page_size;
    check_reserved_ = info.minor_version <= format_minor;
    blob_begin_ = base_ + info.blob_offset;
    blob_end_ = blob_begin_ + info.blob_length;
    return true;
  }

  void check_zero(const unsigned char* bytes, std::size_t length, std::uint32_t page,
                  std::uint64_t offset_in_page, std::string_view what) {
    const std::size_t position = first_nonzero(bytes, length);
    if (position < length) {
      page_problem(page, offset_in_page + position,
                   fmt::format("{} not zero: byte {:#04x} at page offset {}", what, bytes[position],
                               offset_in_page + position));
    }
  }

  // What the reader does not check at open (section 14.1 covers the rest).
  void check_header() {
    const file_info& info = core_->info();
    const unsigned char* h = base_;
    if (check_reserved_) {
      check_zero(h + 38, 2, 0, 38, "reserved header bytes");
      check_zero(h + 76, 4, 0, 76, "reserved header bytes");
      // Bytes [144, 172) hold the directory's fields when it has one.
      const std::size_t reserved_from = info.directory_length != 0
                                            ? header::directory_fields_end
                                            : header::directory_offset_offset;
      check_zero(h + reserved_from, format::header::level_table_offset - reserved_from, 0,
                 reserved_from, "reserved header bytes");
      check_zero(h + 384, 124, 0, 384, "reserved header bytes");
      check_zero(h + header_size, page_size_ - header_size, 0, header_size,
                 "page 0 after the header");
      if (info.optional_features != 0) {
        header_problem(header::optional_features_offset,
                       fmt::format("optional feature bits {:#x} set; format {}.{} defines none",
                                   info.optional_features, info.major_version, info.minor_version));
      }
      if (info.build_flags >> 3 != 0) {
        header_problem(header::build_flags_offset,
                       fmt::format("build_flags {:#x} sets reserved bits 3-31", info.build_flags));
      }
    }
    const std::uint32_t duplicates =
        (info.build_flags & build_flag::duplicates_mask) >> build_flag::duplicates_shift;
    if (duplicates == 3) {
      header_problem(header::build_flags_offset,
                     "build_flags names duplicate policy 3, which is not defined");
    }
    for (std::uint32_t level = info.height; level < max_height; ++level) {
      const std::uint32_t entry =
          load_le<std::uint32_t>(h + header::level_table_offset + 4 * level);
      if (entry != 0) {
        header_problem(header::level_table_offset + 4 * level,
                       fmt::format("level_first_page[{}] is {}; entries past the height ({}) are 0",
                                   level, entry, info.height));
      }
    }
    // Opening the file (open() above) has already held the regions to
    // their places, one after the other, and file_size and max_key_length
    // to theirs (reader_core's constructor): a file that breaks those rules
    // is reported as the reader's error.  The metadata checksum of a file
    // without metadata is read by nothing else.
    if (info.metadata_length == 0 &&
        load_le<std::uint32_t>(h + header::metadata_checksum_offset) != 0) {
      header_problem(header::metadata_checksum_offset,
                     "metadata_checksum is not 0 in a file without metadata");
    }
    if (options_.builder_policy) {
      const std::uint32_t expected = format::default_inline_limit(page_size_);
      if (info.inline_limit != expected) {
        header_problem(
            header::inline_limit_offset,
            fmt::format("inline_limit is {}; the builder uses page_size / 8 = {} (builder policy, "
                        "section 15.1)",
                        info.inline_limit, expected));
      }
      if (info.prefix_cap != format::default_prefix_cap(page_size_)) {
        header_problem(
            header::prefix_cap_offset,
            fmt::format("prefix_cap is {}; the builder uses page_size / 8 = {} (builder policy, "
                        "section 15.1)",
                        info.prefix_cap, format::default_prefix_cap(page_size_)));
      }
    }
  }

  // ---------------------------------------------------------------------
  // Pages

  // The fields every page has, its checksum and number, and its sections.
  // Sets decodable when the sections lie in the page.
  checked_page check_page(std::uint32_t number, std::uint32_t level) {
    const file_info& info = core_->info();
    checked_page page;
    page.bytes = base_ + std::uint64_t{number} * page_size_;
    page.number = number;
    page.level = level;
    page.leaf = level == 0;
    const unsigned char* p = page.bytes;
    const std::uint32_t stored_checksum = load_le<std::uint32_t>(p + page_field::checksum_offset);
    const std::uint32_t computed_checksum = page_checksum(p, page_size_);
    if (stored_checksum != computed_checksum) {
      page_problem(page, page_field::checksum_offset,
                   fmt::format("checksum {:08x} does not match the page's bytes ({:08x})",
                               stored_checksum, computed_checksum));
    }
    const std::uint32_t stored_number = load_le<std::uint32_t>(p + page_field::page_number_offset);
    if (stored_number != number) {
      page_problem(page, page_field::page_number_offset,
                   fmt::format("page_number field is {}: the page was written for another place "
                               "(moved or copied here) or is damaged",
                               stored_number));
    }
    const bool quick = options_.quick;
    const std::uint32_t kind = p[page_field::kind_offset];
    const std::uint32_t stored_level = p[page_field::level_offset];
    const page_kind expected_kind = page.leaf ? page_kind::leaf : page_kind::inner;
    if (!quick && kind != static_cast<std::uint32_t>(expected_kind)) {
      page_problem(page, page_field::kind_offset,
                   fmt::format("kind {} in level {}, where every page is {} ({})", kind, level,
                               page.leaf ? "a leaf" : "inner", static_cast<int>(expected_kind)));
    }
    if (!quick && stored_level != level) {
      page_problem(page, page_field::level_offset,
                   fmt::format("level field is {}; the level table puts the page in level {}",
                               stored_level, level));
    }
    page.inline_width = p[page_field::inline_width_offset];
    page.count = load_le<std::uint16_t>(p + page_field::count_offset);
    page.prefix_length = load_le<std::uint16_t>(p + page_field::prefix_length_offset);
    page.heap_end = load_le<std::uint32_t>(p + page_field::heap_end_offset);
    page.header_word = page.leaf ? load_le<std::uint64_t>(p + page_field::first_rank_offset)
                                 : load_le<std::uint32_t>(p + page_field::first_child_offset);
    if (!quick && check_reserved_) {
      check_zero(p + 11, 1, number, 11, "reserved page header byte");
      if (!page.leaf) check_zero(p + 20, 4, number, 20, "reserved page header bytes");
      check_zero(p + 28, 4, number, 28, "reserved page header bytes");
    }
    if (!is_valid_inline_width(page.inline_width)) {
      page_problem(page, page_field::inline_width_offset,
                   fmt::format("inline_width {} is not 2, 4 or 8", page.inline_width));
      return page;
    }
    if (info.keys != key_kind::bytes && page.prefix_length > info.key_size) {
      page_problem(page, page_field::prefix_length_offset,
                   fmt::format("prefix_length {} is longer than the {}-byte keys",
                               page.prefix_length, info.key_size));
      return page;
    }
    page.sections =
        compute_sections(expected_kind, page.count, page.prefix_length, page.inline_width,
                         info.keys, info.key_size, info.values, info.value_size);
    if (page.sections.heap > page_size_) {
      page_problem(
          page, page_field::count_offset,
          fmt::format("{} keys with a {}-byte prefix need {} bytes before the heap, more than the "
                      "page",
                      page.count, page.prefix_length, page.sections.heap));
      return page;
    }
    if (page.heap_end < page.sections.heap || page.heap_end > page_size_) {
      page_problem(page, page_field::heap_end_offset,
                   fmt::format("heap_end {} lies outside the heap [{}, {}]", page.heap_end,
                               page.sections.heap, page_size_));
      return page;
    }
    page.decodable = true;
    if (!quick && check_reserved_) check_padding(page);
    if (!quick && page.count == 0 && page.prefix_length != 0) {
      page_problem(page, page_field::prefix_length_offset,
                   fmt::format("prefix_length {} in a page without keys", page.prefix_length));
    }
    return page;
  }

  void check_padding(const checked_page& page) {
    const file_info& info = core_->info();
    const page_sections& s = page.sections;
    const std::uint64_t n = page.count;
    auto gap = [&](std::uint64_t from, std::uint64_t to, std::string_view what) {
      if (from < to) check_zero(page.bytes + from, to - from, page.number, from, what);
    };
    gap(s.prefix + page.prefix_length, s.inline_keys, "padding after the prefix");
    gap(s.inline_keys + n * page.inline_width, s.key_data, "padding after the inline keys");
    const std::uint64_t key_data = info.keys == key_kind::bytes ? n * slot_size : n * s.tail_width;
    gap(s.key_data + key_data, s.values, "padding after the key data");
    std::uint64_t value_data = 0;
    if (page.leaf) {
      switch (info.values) {
        case value_kind::none:
          break;
        case value_kind::u64:
        case value_kind::fixed:
          value_data = n * info.value_size;
          break;
        case value_kind::bytes:
          value_data = n * slot_size;
          break;
      }
    }
    gap(s.values + value_data, s.heap, "padding after the values");
    gap(page.heap_end, page_size_, "bytes after heap_end");
  }

  // Where check_item found an item.
  enum class item_place : std::uint8_t {
    out_of_bounds,
    empty,
    in_page,
    in_blob,            // its checksum was checked
    in_blob_unchecked,  // after the overlap of check_blob_item_checksum
  };

  // Resolves one slot's item, checking it lies in the heap or the blob
  // region, follows the previous item directly (`cursor`), and matches its
  // checksum.
  item_place check_item(const checked_page& page, std::uint32_t slot_offset, std::uint64_t length,
                        item_name what, std::uint64_t& cursor, const unsigned char*& data) {
    const file_info& info = core_->info();
    const bool quick = options_.quick;
    const std::uint32_t reference = load_le<std::uint32_t>(page.bytes + slot_offset + 4);
    data = nullptr;
    if (length == 0) {
      if (!quick && reference != 0) {
        page_problem(page, slot_offset + 4,
                     fmt::format("{} is empty, but its slot's reference is {:#x}, not 0",
                                 describe(what), reference));
      }
      return item_place::empty;
    }
    const std::uint32_t offset = reference & ~external_flag;
    const bool external = (reference & external_flag) != 0;
    const std::uint64_t in_page = external ? external_record_size : length;
    if (offset < page.sections.heap || offset + in_page > page.heap_end) {
      page_problem(
          page, slot_offset + 4,
          fmt::format("{}: {} of {} bytes at page offset {} lies outside the heap [{}, {})",
                      describe(what), external ? "external record" : "item", in_page, offset,
                      page.sections.heap, page.heap_end));
      return item_place::out_of_bounds;
    }
    if (!quick && offset != cursor) {
      page_problem(
          page, slot_offset + 4,
          fmt::format("{} is at page offset {}; items follow each other in entry order, so it "
                      "belongs at {}",
                      describe(what), offset, cursor));
    }
    cursor = offset + in_page;
    if (!quick && options_.builder_policy && external != (length > info.inline_limit)) {
      page_problem(
          page, slot_offset + 4,
          fmt::format("{} of {} bytes is {}; the builder stores items longer than inline_limit "
                      "({}) outside the page and no others (builder policy, section 15.3)",
                      describe(what), length, external ? "outside the page" : "in the page",
                      info.inline_limit));
    }
    if (!external) {
      data = page.bytes + offset;
      return item_place::in_page;
    }
    const unsigned char* record = page.bytes + offset;
    const std::uint64_t blob_offset = load_le<std::uint64_t>(record);
    const std::uint32_t stored_checksum = load_le<std::uint32_t>(record + 8);
    if (!quick && check_reserved_) {
      check_zero(record + 12, 4, page.number, offset + 12, "reserved bytes of an external record");
    }
    if (blob_offset > info.blob_length || length > info.blob_length - blob_offset) {
      page_problem(page, offset,
                   fmt::format("{}: {} bytes at blob offset {} lie outside the {}-byte blob region",
                               describe(what), length, blob_offset, info.blob_length));
      return item_place::out_of_bounds;
    }
    data = base_ + info.blob_offset + blob_offset;
    if (!quick) blob_items_.push_back({blob_offset, length, page.number, offset});
    return check_blob_item_checksum(page, offset, what, blob_offset, length, stored_checksum)
               ? item_place::in_blob
               : item_place::in_blob_unchecked;
  }

  // The items of a valid file do not overlap, so their checksums read the
  // blob region once in all.  Records that point at the same bytes again
  // and again would read it once each, and a file of n of them would take
  // n times its blob region to verify: quadratic in the file's size.  Once
  // the items checksummed add up to more than the region, some of them
  // overlap; that is reported, and the items after it are not checksummed.
  // (Full verification names the overlapping items: check_blob_region.)
  // Key comparisons read only the remainders checksummed, so they too read
  // the region a bounded number of times.  Returns whether the item was
  // checksummed.
  bool check_blob_item_checksum(const checked_page& page, std::uint32_t record, item_name what,
                                std::uint64_t blob_offset, std::uint64_t length,
                                std::uint32_t stored_checksum) {
    const file_info& info = core_->info();
    if (blob_items_overlap_) return false;
    if (length > info.blob_length - blob_bytes_checksummed_) {
      blob_items_overlap_ = true;
      page_problem(page, record,
                   fmt::format("{}: with its {} bytes at blob offset {}, the external items so "
                               "far add up to more than the {}-byte blob region, so some overlap; "
                               "the checksums of this item and the rest are not checked",
                               describe(what), length, blob_offset, info.blob_length));
      return false;
    }
    blob_bytes_checksummed_ += length;
    const std::uint32_t computed_checksum = crc32c(base_ + info.blob_offset + blob_offset, length);
    if (stored_checksum != computed_checksum) {
      page_problem(
          page, record + 8,
          fmt::format("{}: checksum {:08x} of the {}-byte item at blob offset {} (file offset {}) "
                      "does not match its bytes ({:08x})",
                      describe(what), stored_checksum, length, blob_offset,
                      info.blob_offset + blob_offset, computed_checksum));
    }
    return true;
  }

  // Walks the slots and the heap of a decodable page: every item in bounds,
  // back to back in entry order, ending at heap_end.  Fills rests_ and
  // suffix_lengths_ for byte-string keys and sets keys_usable.
  // Remainders in the blob region are readable when their checksum was
  // checked (check_blob_item_checksum): see there.
  void check_heap(checked_page& page) {
    const file_info& info = core_->info();
    const bool byte_keys = info.keys == key_kind::bytes;
    const bool byte_values = page.leaf && info.values == value_kind::bytes;
    const std::uint32_t heap = page.sections.heap;
    page.keys_usable = true;
    if (!byte_keys && !byte_values) {
      if (!options_.quick && page.heap_end != heap) {
        page_problem(page, page_field::heap_end_offset,
                     fmt::format("heap_end is {}, but the page has no heap items: it is {}",
                                 page.heap_end, heap));
      }
      return;
    }
    if (byte_keys) {
      rests_.resize(page.count);
      suffix_lengths_.resize(page.count);
    }
    std::uint64_t cursor = heap;
    for (std::uint32_t i = 0; i < page.count; ++i) {
      if (byte_keys) {
        const std::uint32_t slot = page.sections.key_data + i * slot_size;
        const std::uint32_t suffix = load_le<std::uint32_t>(page.bytes + slot);
        suffix_lengths_[i] = suffix;
        rests_[i] = {};
        if (std::uint64_t{page.prefix_length} + suffix > max_key_length) {
          page_problem(page, slot,
                       fmt::format("key {} is {} bytes long, over the limit of {}", i,
                                   std::uint64_t{page.prefix_length} + suffix, max_key_length));
          page.keys_usable = false;
        } else {
          const std::uint32_t rest = suffix > page.inline_width ? suffix - page.inline_width : 0;
          const unsigned char* data = nullptr;
          switch (check_item(page, slot, rest, {true, i}, cursor, data)) {
            case item_place::out_of_bounds:
              page.keys_usable = false;
              break;
            case item_place::empty:
            case item_place::in_page:
            case item_place::in_blob:
              rests_[i] = {data, rest, true};
              break;
            case item_place::in_blob_unchecked:
              rests_[i] = {data, rest, false};
              break;
          }
        }
      }
      if (byte_values) {
        const std::uint32_t slot = page.sections.values + i * slot_size;
        const std::uint32_t length = load_le<std::uint32_t>(page.bytes + slot);
        value_length_seen_ = std::max(value_length_seen_, length);
        const unsigned char* data = nullptr;
        check_item(page, slot, length, {false, i}, cursor, data);
      }
    }
    if (!options_.quick && cursor != page.heap_end) {
      page_problem(
          page, page_field::heap_end_offset,
          fmt::format("heap_end is {}, but the page's items end at {}", page.heap_end, cursor));
    }
  }

  std::uint32_t suffix_length(const checked_page& page, std::uint32_t index) const {
    const file_info& info = core_->info();
    if (info.keys == key_kind::bytes) return suffix_lengths_[index];
    return info.key_size - page.prefix_length;
  }

  key_rest rest_of(const checked_page& page, std::uint32_t index) const {
    if (core_->info().keys == key_kind::bytes) return rests_[index];
    return {page.bytes + page.sections.key_data + std::size_t{index} * page.sections.tail_width,
            page.sections.tail_width, true};
  }

  // Key `index` of a page whose keys are usable, where it lies.
  key_ref key_of(const checked_page& page, std::uint32_t index) const {
    key_ref key;
    const std::uint32_t suffix = suffix_length(page, index);
    key.parts[0] = {page.bytes + page.sections.prefix, page.prefix_length, true};
    key.parts[1] = {page.bytes + page.sections.inline_keys + std::size_t{index} * page.inline_width,
                    std::min(suffix, page.inline_width), true};
    if (suffix > page.inline_width) key.parts[2] = rest_of(page, index);
    return key;
  }

  // Counts the bytes of a key's remainder that a comparison reads.
  void count_rest_read(const unsigned char* data, std::uint64_t length) noexcept {
    if (data >= blob_begin_ && data < blob_end_) {
      costs_.blob_bytes_compared += length;
    } else {
      costs_.page_rest_bytes_compared += length;
    }
  }

  // The length of the longest common prefix of a and b, up to `limit`, or
  // nothing when it depends on bytes that are not readable.
  std::optional<std::uint64_t> shared_length(const key_ref& a, const key_ref& b,
                                             std::uint64_t limit) {
    std::size_t part_a = 0, part_b = 0;
    std::uint32_t at_a = 0, at_b = 0;  // offsets in the current parts
    std::uint64_t shared = 0;
    while (shared < limit) {
      while (part_a < 3 && at_a == a.parts[part_a].length) ++part_a, at_a = 0;
      while (part_b < 3 && at_b == b.parts[part_b].length) ++part_b, at_b = 0;
      if (part_a == 3 || part_b == 3) return shared;
      const key_ref::part& piece_a = a.parts[part_a];
      const key_ref::part& piece_b = b.parts[part_b];
      if (!piece_a.readable || !piece_b.readable) return std::nullopt;
      const std::uint64_t length =
          std::min<std::uint64_t>({piece_a.length - at_a, piece_b.length - at_b, limit - shared});
      if (part_a == 2) count_rest_read(piece_a.data + at_a, length);
      if (part_b == 2) count_rest_read(piece_b.data + at_b, length);
      const std::size_t same = common_prefix_length(as_chars(piece_a.data + at_a, length),
                                                    as_chars(piece_b.data + at_b, length));
      shared += same;
      if (same < length) return shared;
      at_a += static_cast<std::uint32_t>(length);
      at_b += static_cast<std::uint32_t>(length);
    }
    return shared;
  }

  // Copies bytes [from, from + count) of a key, as many as it has, to `out`;
  // returns how many, or nothing when they are not readable.
  std::optional<std::size_t> copy_bytes(const key_ref& key, std::uint64_t from, std::size_t count,
                                        unsigned char* out) {
    std::size_t copied = 0;
    for (std::size_t i = 0; i < 3 && copied < count; ++i) {
      const key_ref::part& piece = key.parts[i];
      if (from >= piece.length) {
        from -= piece.length;
        continue;
      }
      if (!piece.readable) return std::nullopt;
      const std::size_t length = std::min<std::uint64_t>(piece.length - from, count - copied);
      if (i == 2) count_rest_read(piece.data + from, length);
      std::memcpy(out + copied, piece.data + from, length);
      copied += length;
      from = 0;
    }
    return copied;
  }

  // Byte `position` of a key, which the caller knows to be readable.
  static unsigned char byte_at(const key_ref& key, std::uint64_t position) noexcept {
    for (const key_ref::part& piece : key.parts) {
      if (position < piece.length) return piece.data[position];
      position -= piece.length;
    }
    return 0;
  }

  // Key order of a and b (-1, 0 or 1), or nothing when it depends on bytes
  // that are not readable.
  std::optional<int> compare_refs(const key_ref& a, const key_ref& b) {
    const std::optional<std::uint64_t> shared =
        shared_length(a, b, std::numeric_limits<std::uint64_t>::max());
    if (!shared) return std::nullopt;
    if (*shared < a.length() && *shared < b.length())
      return byte_at(a, *shared) < byte_at(b, *shared) ? -1 : 1;
    return (a.length() > b.length()) - (a.length() < b.length());
  }

  // Whether a is below b, at most b, ...: false when it cannot be decided.
  bool below(const key_ref& a, const key_ref& b) {
    const std::optional<int> order = compare_refs(a, b);
    return order && *order < 0;
  }
  bool not_below(const key_ref& a, const key_ref& b) {
    const std::optional<int> order = compare_refs(a, b);
    return order && *order >= 0;
  }

  // A key for a message: as show_key, or the bytes that are readable and
  // how many are not.
  std::string show_ref(const key_ref& key) {
    std::string bytes;
    for (const key_ref::part& piece : key.parts) {
      if (!piece.readable) {
        return fmt::format("{} and {} more bytes in overlapping blob items, not read",
                           show_key(bytes), piece.length);
      }
      if (&piece == &key.parts[2]) count_rest_read(piece.data, piece.length);
      bytes.append(as_chars(piece.data, piece.length));
    }
    return show_key(bytes);
  }

  // Orders keys a and b of one page by their parts, as section 8.4 does:
  // the keys share the prefix, and inline keys are big-endian, so their
  // bytes compare as the integers do.  Nothing when the order depends on
  // remainders that are not readable.
  std::optional<int> compare_in_page(const checked_page& page, std::uint32_t a, std::uint32_t b) {
    const std::uint32_t width = page.inline_width;
    const unsigned char* inline_keys = page.bytes + page.sections.inline_keys;
    const int order = std::memcmp(inline_keys + std::size_t{a} * width,
                                  inline_keys + std::size_t{b} * width, width);
    if (order != 0) return order < 0 ? -1 : 1;
    if (core_->info().keys != key_kind::bytes) {
      const std::uint32_t tail = page.sections.tail_width;
      if (tail == 0) return 0;
      const int tails = std::memcmp(rest_of(page, a).data, rest_of(page, b).data, tail);
      return (tails > 0) - (tails < 0);
    }
    const std::uint32_t length_a = suffix_lengths_[a];
    const std::uint32_t length_b = suffix_lengths_[b];
    if (length_a > width && length_b > width) {
      const key_rest rest_a = rests_[a];
      const key_rest rest_b = rests_[b];
      if (!rest_a.readable || !rest_b.readable) return std::nullopt;
      const std::uint32_t compared = std::min(rest_a.length, rest_b.length);
      count_rest_read(rest_a.data, compared);
      count_rest_read(rest_b.data, compared);
      return compare_keys(as_chars(rest_a.data, rest_a.length),
                          as_chars(rest_b.data, rest_b.length));
    }
    return (length_a > length_b) - (length_a < length_b);
  }

  // Inline keys zero past short suffixes, keys strictly ascending, and the
  // builder's prefix and inline width.  The first problem of each kind is
  // reported per page: one damaged page should not fill the report.
  void check_keys(const checked_page& page) {
    const file_info& info = core_->info();
    const std::uint32_t n = page.count;
    const std::uint32_t width = page.inline_width;
    const unsigned char* inline_keys = page.bytes + page.sections.inline_keys;
    const bool byte_keys = info.keys == key_kind::bytes;

    if (options_.builder_policy) check_policy(page);
    if (n == 0) return;

    // Bytes of an inline key past the end of its suffix are zero.
    std::uint32_t bad_padding = n;
    if (!byte_keys) {
      const std::uint32_t suffix = info.key_size - page.prefix_length;
      if (suffix < width) {
        const std::uint32_t padding_bits = 8 * (width - suffix);
        const std::uint64_t mask =
            padding_bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << padding_bits) - 1;
        switch (width) {
          case 2:
            bad_padding = first_masked_inline<std::uint16_t>(inline_keys, n,
                                                             static_cast<std::uint16_t>(mask));
            break;
          case 4:
            bad_padding = first_masked_inline<std::uint32_t>(inline_keys, n,
                                                             static_cast<std::uint32_t>(mask));
            break;
          default:
            bad_padding = first_masked_inline<std::uint64_t>(inline_keys, n, mask);
            break;
        }
      }
    } else {
      for (std::uint32_t i = 0; i < n && bad_padding == n; ++i) {
        const std::uint32_t suffix = suffix_lengths_[i];
        if (suffix < width && first_nonzero(inline_keys + std::size_t{i} * width + suffix,
                                            width - suffix) < width - suffix) {
          bad_padding = i;
        }
      }
    }
    if (bad_padding < n) {
      page_problem(page, page.sections.inline_keys + std::size_t{bad_padding} * width,
                   fmt::format("inline key {} is not zero past the end of its {}-byte suffix",
                               bad_padding, suffix_length(page, bad_padding)));
    }

    // Strictly ascending.  Fixed-size keys without tails are ordered by
    // their inline keys alone.
    std::uint32_t unordered = n;
    if (!byte_keys && page.sections.tail_width == 0) {
      switch (width) {
        case 2:
          unordered = first_unordered_inline<std::uint16_t>(inline_keys, n);
          break;
        case 4:
          unordered = first_unordered_inline<std::uint32_t>(inline_keys, n);
          break;
        default:
          unordered = first_unordered_inline<std::uint64_t>(inline_keys, n);
          break;
      }
    } else {
      for (std::uint32_t i = 1; i < n; ++i) {
        const std::optional<int> order = compare_in_page(page, i - 1, i);
        if (order && *order >= 0) {
          unordered = i;
          break;
        }
      }
    }
    if (unordered < n) {
      page_problem(page, page.sections.inline_keys + std::size_t{unordered} * width,
                   fmt::format("key {} ({}) is not greater than key {} ({})", unordered,
                               show_ref(key_of(page, unordered)), unordered - 1,
                               show_ref(key_of(page, unordered - 1))));
    }
  }

  // Section 15.2, for the prefix_cap the header records.
  void check_policy(const checked_page& page) {
    const file_info& info = core_->info();
    const page_kind kind = page.leaf ? page_kind::leaf : page_kind::inner;
    // The policy of the file's minor version (a later one's is not known).
    const auto minor = static_cast<std::uint16_t>(std::min(info.minor_version, format_minor));
    const std::uint32_t width = page.inline_width;
    if (info.keys == key_kind::bytes) {
      if (width != 8) {
        page_problem(
            page, page_field::inline_width_offset,
            fmt::format("inline_width {}; the builder uses 8 for byte-string keys (builder "
                        "policy, section 15.2)",
                        width));
      }
    } else {
      const std::uint32_t suffix = info.key_size - page.prefix_length;
      const std::uint32_t expected =
          format::policy_inline_width(kind, info.keys, info.key_size, page.prefix_length, minor);
      if (width != expected) {
        page_problem(
            page, page_field::inline_width_offset,
            fmt::format("inline_width {} for {}-byte suffixes; the builder uses {} (builder "
                        "policy, section 15.2)",
                        width, suffix, expected));
      }
    }
    const std::uint32_t n = page.count;
    if (n == 0) return;
    const std::uint32_t prefix = page.prefix_length;
    if (prefix > info.prefix_cap) {
      page_problem(
          page, page_field::prefix_length_offset,
          fmt::format("prefix_length {} is over prefix_cap {} (builder policy, section 15.2)",
                      prefix, info.prefix_cap));
      return;
    }
    // Not known when the first prefix_cap bytes reach into remainders that
    // are not readable (the overlap is reported).
    const std::optional<std::uint64_t> shared =
        shared_length(key_of(page, 0), key_of(page, n - 1), info.prefix_cap);
    if (!shared) return;
    const auto common = static_cast<std::uint32_t>(*shared);
    const std::uint32_t expected =
        format::policy_prefix_length(kind, info.keys, info.key_size, common, minor);
    if (prefix != expected) {
      page_problem(
          page, page_field::prefix_length_offset,
          fmt::format("prefix_length {}; the first and last keys share {} bytes, so the builder "
                      "stores {} (prefix_cap {}; builder policy, section 15.2)",
                      prefix, common, expected, info.prefix_cap));
    }
  }

  // ---------------------------------------------------------------------
  // 2. Inner levels

  void check_inner_levels() {
    const file_info& info = core_->info();
    if (info.height > 1) boundaries_.assign(info.leaf_count, boundary_separator{});
    // start_leaf of each page of the level below (identity for the leaves).
    std::vector<std::uint32_t> below_start;
    std::vector<std::uint32_t> level_start;
    for (std::uint32_t level = 1; level < info.height; ++level) {
      const std::uint32_t first = core_->level_first_page(level);
      const std::uint32_t end = core_->level_end_page(level);
      const std::uint32_t below_pages =
          core_->level_end_page(level - 1) - core_->level_first_page(level - 1);
      auto start_of = [&](std::uint64_t child) -> std::uint32_t {
        if (child >= below_pages) return unknown_index;
        return level == 1 ? static_cast<std::uint32_t>(child) : below_start[child];
      };
      level_start.assign(end - first, unknown_index);
      header_chain children;
      bool have_previous = false;
      std::uint32_t previous_page = 0;
      for (std::uint32_t number = first; number < end; ++number) {
        checked_page page = check_page(number, level);
        const std::uint64_t first_child = page.header_word;
        const bool chained = children.accepts(first_child);
        if (!chained) {
          page_problem(
              page, page_field::first_child_offset,
              fmt::format("first_child is {}; the pages before it in level {} have the children "
                          "before index {}",
                          first_child, level, children.expected()));
          tiling_broken_ = true;
        }
        const std::uint64_t children_end = first_child + page.count + 1;
        if (children_end > below_pages) {
          page_problem(page, page_field::first_child_offset,
                       fmt::format("children {} to {} run past the {} pages of level {}",
                                   first_child, children_end - 1, below_pages, level - 1));
          tiling_broken_ = true;
        }
        children.advance(first_child, page.count + 1, chained);
        level_start[number - first] = start_of(first_child);
        if (!page.decodable) {
          tiling_broken_ = true;
          have_previous = false;
          continue;
        }
        check_heap(page);
        if (!page.keys_usable) {
          have_previous = false;
          continue;
        }
        check_keys(page);
        if (page.count == 0) continue;
        // Separators ascend from page to page of a level too.
        const key_ref first_separator = key_of(page, 0);
        if (have_previous && not_below(level_last_, first_separator)) {
          page_problem(
              page, page.sections.inline_keys,
              fmt::format("first separator {} is not greater than the last separator {} of page {}",
                          show_ref(first_separator), show_ref(level_last_), previous_page));
        }
        level_last_ = key_of(page, page.count - 1);
        have_previous = true;
        previous_page = number;
        // Separator i stands between children i and i + 1.
        for (std::uint32_t i = 0; i < page.count; ++i) {
          const std::uint32_t boundary = start_of(first_child + i + 1);
          if (boundary == unknown_index || boundary == 0 || boundary >= info.leaf_count) {
            tiling_broken_ = true;
            continue;
          }
          boundary_separator& slot = boundaries_[boundary];
          if (slot.page != 0) {
            tiling_broken_ = true;  // the first_child chain has been reported
            continue;
          }
          slot = {key_of(page, i), number, i};
        }
      }
      if (children.expected() != below_pages) {
        page_problem(
            end - 1, page_field::first_child_offset,
            fmt::format("the children of level {} end at index {}, but level {} has {} pages",
                        level, children.expected(), level - 1, below_pages));
        tiling_broken_ = true;
      }
      below_start.swap(level_start);
      if (level == 1) level1_start_leaf_ = below_start;
    }
    costs_.separator_bytes_held = boundaries_.capacity() * sizeof(boundary_separator);
  }

  // ---------------------------------------------------------------------
  // 3. Leaves

  void check_leaves() {
    const file_info& info = core_->info();
    header_chain ranks;
    std::uint64_t entries_seen = 0;
    bool have_previous = false;  // previous_last_ holds the last key of leaf previous_leaf
    std::uint32_t previous_leaf = 0;
    for (std::uint32_t leaf = 0; leaf < info.leaf_count; ++leaf) {
      const std::uint32_t number = 1 + leaf;
      checked_page page = check_page(number, 0);
      const bool chained = ranks.accepts(page.header_word);
      if (!chained) {
        page_problem(page, page_field::first_rank_offset,
                     fmt::format("first_rank is {}; the leaves before it hold {} entries",
                                 page.header_word, ranks.expected()));
      }
      ranks.advance(page.header_word, page.count, chained);
      entries_seen += page.count;
      if (page.count == 0 && !(info.entries == 0 && info.leaf_count == 1)) {
        page_problem(page, page_field::count_offset,
                     "a leaf without entries; only the single leaf of an empty "
                     "index may be empty");
      }
      if (!page.decodable) {
        all_keys_seen_ = false;
        have_previous = false;
        continue;
      }
      check_heap(page);
      if (!page.keys_usable) {
        all_keys_seen_ = false;
        have_previous = false;
        continue;
      }
      check_keys(page);
      if (page.count == 0) continue;
      const std::uint32_t n = page.count;
      if (info.keys == key_kind::bytes) {
        for (std::uint32_t i = 0; i < n; ++i) {
          key_length_seen_ = std::max(key_length_seen_, page.prefix_length + suffix_lengths_[i]);
        }
      } else {
        key_length_seen_ = info.key_size;
      }
      if (info.values == value_kind::u64 || info.values == value_kind::fixed) {
        value_length_seen_ = info.value_size;
      }
      first_ = key_of(page, 0);
      if (have_previous && not_below(previous_last_, first_)) {
        page_problem(page, page.sections.inline_keys,
                     fmt::format("first key {} is not greater than the last key {} of page {}",
                                 show_ref(first_), show_ref(previous_last_), previous_leaf + 1));
      }
      if (have_previous && previous_leaf + 1 == leaf && !tiling_broken_) check_boundary(leaf);
      previous_last_ = key_of(page, n - 1);
      have_previous = true;
      previous_leaf = leaf;
    }
    if (entries_seen != info.entries) {
      header_problem(header::entry_count_offset,
                     fmt::format("entry_count is {}, but the leaves hold {} entries", info.entries,
                                 entries_seen));
    }
  }

  // The separator between leaf - 1 and leaf: last key before < separator <=
  // first key after (previous_last_ and first_).  An order that depends on
  // remainders that are not readable is not checked.
  void check_boundary(std::uint32_t leaf) {
    if (leaf >= boundaries_.size()) return;
    const boundary_separator& boundary = boundaries_[leaf];
    if (boundary.page == 0) return;
    const key_ref& separator = boundary.key;
    const bool not_above_left = not_below(previous_last_, separator);
    const bool above_right = below(first_, separator);
    if (!not_above_left && !above_right) return;
    const checked_page owner = page_header_of(boundary.page);
    page_problem(
        boundary.page,
        owner.sections.inline_keys + std::size_t{boundary.index} * owner.inline_width,
        fmt::format("separator {} ({}) does not divide pages {} and {}: it must be greater than {} "
                    "and at most {}",
                    boundary.index, show_ref(separator), leaf, leaf + 1, show_ref(previous_last_),
                    show_ref(first_)));
  }

  // The section offsets of a page already checked, for placing a message.
  checked_page page_header_of(std::uint32_t number) const {
    const file_info& info = core_->info();
    checked_page page;
    const unsigned char* p = base_ + std::uint64_t{number} * page_size_;
    page.number = number;
    page.inline_width = p[page_field::inline_width_offset];
    page.sections =
        compute_sections(page_kind::inner, load_le<std::uint16_t>(p + page_field::count_offset),
                         load_le<std::uint16_t>(p + page_field::prefix_length_offset),
                         page.inline_width, info.keys, info.key_size, info.values, info.value_size);
    return page;
  }

  // ---------------------------------------------------------------------
  // 4. Totals, the blob region and the metadata region

  void check_totals() {
    const file_info& info = core_->info();
    const std::uint32_t max_value = info.values == value_kind::none ? 0 : value_length_seen_;
    if (info.max_key_length < key_length_seen_ ||
        (all_keys_seen_ && info.max_key_length != key_length_seen_)) {
      header_problem(header::max_key_length_offset,
                     fmt::format("max_key_length is {}, but the longest key is {} bytes",
                                 info.max_key_length, key_length_seen_));
    }
    if (info.max_value_length < max_value ||
        (all_keys_seen_ && info.max_value_length != max_value)) {
      header_problem(header::max_value_length_offset,
                     fmt::format("max_value_length is {}, but the longest value is {} bytes",
                                 info.max_value_length, max_value));
    }
  }

  void check_blob_region() {
    const file_info& info = core_->info();
    std::sort(blob_items_.begin(), blob_items_.end(),
              [](const blob_item& a, const blob_item& b) { return a.offset < b.offset; });
    std::uint64_t covered = 0;  // the items so far cover [0, covered)
    auto gap = [&](std::uint64_t from, std::uint64_t to) {
      // Unreferenced bytes are certain only when every page was read.
      if (!all_keys_seen_ || tiling_broken_) return;
      add_problem(
          verify_region::blob, std::nullopt, info.blob_offset + from,
          fmt::format("{} bytes at blob offset {} are not referenced by any external record",
                      to - from, from));
    };
    for (const blob_item& item : blob_items_) {
      if (item.offset > covered) gap(covered, item.offset);
      if (item.offset < covered) {
        page_problem(
            item.page, item.record,
            fmt::format(
                "external item at blob offset {} ({} bytes) overlaps an item before it, which "
                "ends at {}",
                item.offset, item.length, covered));
      }
      covered = std::max(covered, item.offset + item.length);
    }
    if (covered < info.blob_length) gap(covered, info.blob_length);
  }

  void check_metadata() {
    const file_info& info = core_->info();
    if (info.metadata_length == 0) return;
    const unsigned char* region = base_ + info.metadata_offset;
    const std::uint64_t length = info.metadata_length;
    auto problem = [&](std::uint64_t offset, std::string message) {
      add_problem(verify_region::metadata, std::nullopt, info.metadata_offset + offset,
                  std::move(message));
    };
    const std::uint32_t stored_checksum =
        load_le<std::uint32_t>(base_ + header::metadata_checksum_offset);
    const std::uint32_t computed_checksum = crc32c(region, length);
    if (stored_checksum != computed_checksum) {
      problem(
          0, fmt::format("checksum {:08x} in the header does not match the region's bytes ({:08x})",
                         stored_checksum, computed_checksum));
    }
    if (options_.quick) return;
    if (length < 4) return;  // reported with the header
    const metadata_layout layout = read_metadata_layout(region, length);
    if (load_le<std::uint32_t>(region) == 0)
      problem(0, "metadata region with no entries; a file without metadata has no region");
    for (std::size_t i = 1; i < layout.pairs.size(); ++i) {
      const std::string_view key = layout.pairs[i].first;
      const std::string_view previous_key = layout.pairs[i - 1].first;
      if (compare_keys(previous_key, key) >= 0) {
        problem(static_cast<std::uint64_t>(reinterpret_cast<const unsigned char*>(key.data()) -
                                           region) -
                    4,
                fmt::format("metadata key {} is not greater than the key before it, {}",
                            quote_key(key), quote_key(previous_key)));
      }
    }
    if (layout.problem) problem(layout.problem->offset, layout.problem->what);
  }

  // ---------------------------------------------------------------------
  // 5. The directory region (spec/FORMAT.md, section 12.3)
  //
  // Entry i stands for the boundary between level-1 pages i and i + 1,
  // that is, the leaf boundary where level-1 page i + 1 starts; the inner
  // levels recorded there the one separator above level 1 that divides
  // them.  With the tree's own checks, an entry that names that separator
  // and holds its head makes the directory find the page a descent would.

  void check_directory() {
    const file_info& info = core_->info();
    if (info.directory_length == 0) return;
    namespace directory = format::directory;
    const unsigned char* region = base_ + info.directory_offset;
    const std::uint64_t length = info.directory_length;
    auto problem = [&](std::uint64_t offset, std::string message) {
      add_problem(verify_region::directory, std::nullopt, info.directory_offset + offset,
                  std::move(message));
    };
    const std::uint32_t computed_checksum = crc32c(region, length);
    if (info.directory_checksum != computed_checksum) {
      problem(
          0, fmt::format("checksum {:08x} in the header does not match the region's bytes ({:08x})",
                         info.directory_checksum, computed_checksum));
    }
    // The padding is under no checksum, so even a quick check reads it; a
    // later minor version may use it, as any reserved bytes (section 16).
    const std::uint64_t regions_end =
        std::uint64_t{info.page_count} * info.page_size + info.blob_length + info.metadata_length;
    const std::size_t padding = info.directory_offset - regions_end;
    if (const std::size_t at = first_nonzero(base_ + regions_end, padding);
        check_reserved_ && at < padding) {
      add_problem(verify_region::directory, std::nullopt, regions_end + at,
                  "padding before the directory region not zero");
    }
    if (options_.quick) return;
    // The reader's open checked that these fill the region exactly (14.1).
    const directory::region_view& parts = core_->directory();
    const std::uint32_t entries = parts.entries;
    const std::size_t head_size = parts.head_size;
    const std::string_view prefix = parts.prefix;
    if (check_reserved_) {
      for (std::uint32_t i = 0; i < entries; ++i) {
        const unsigned char* reserved = parts.locator_bytes(i) + directory::locator_reserved_offset;
        if (load_le<std::uint16_t>(reserved) != 0) {
          problem(reserved - region,
                  fmt::format("entry {}: reserved bytes of its locator not zero", i));
        }
      }
    }
    // Matched against the separators only when the inner levels tile the
    // leaves (otherwise that is reported, and boundaries are unknown).
    if (tiling_broken_ || level1_start_leaf_.size() != entries + std::size_t{1}) return;
    unsigned char head[directory::max_head_size];
    unsigned char separator_head[directory::max_head_size];
    key_ref first_separator, last_separator;
    const key_ref prefix_key = ref_of(prefix);
    bool all_matched = true;
    // Separators whose remainders are not readable are matched as far as
    // their readable bytes go (the overlap is reported).
    bool all_known = true;
    for (std::uint32_t i = 0; i < entries; ++i) {
      const auto [page, index] = parts.locator_of(i);
      const std::uint32_t leaf = level1_start_leaf_[i + 1];
      if (leaf == unknown_index || leaf >= boundaries_.size() || boundaries_[leaf].page == 0)
        return;  // a separator the inner levels lack, reported with them
      const boundary_separator& boundary = boundaries_[leaf];
      if (page != boundary.page || index != boundary.index) {
        problem(parts.locator_bytes(i) - region,
                fmt::format("entry {} names separator {} of page {}; the separator between "
                            "level-1 pages {} and {} is separator {} of page {}",
                            i, index, page, core_->level_first_page(1) + i,
                            core_->level_first_page(1) + i + 1, boundary.index, boundary.page));
        all_matched = false;
        continue;
      }
      const key_ref& separator = boundary.key;
      if (i == 0) first_separator = separator;
      last_separator = separator;
      const std::optional<std::uint64_t> with_prefix =
          shared_length(separator, prefix_key, prefix.size());
      if (!with_prefix) {
        all_known = false;
        continue;
      }
      if (*with_prefix < prefix.size()) {
        problem(directory::prefix_offset(entries, head_size),
                fmt::format("entry {}: its separator {} does not start with the directory's "
                            "prefix {}",
                            i, show_ref(separator), show_key(prefix)));
        all_matched = false;
        continue;
      }
      const std::optional<std::size_t> head_length =
          copy_bytes(separator, prefix.size(), head_size, separator_head);
      if (!head_length) {
        all_known = false;
        continue;
      }
      directory::store_head(head, as_chars(separator_head, *head_length), head_size);
      const unsigned char* stored_head = parts.head(i);
      if (std::memcmp(stored_head, head, head_size) != 0) {
        problem(stored_head - region,
                fmt::format("entry {}: the head is not the {} bytes after the prefix of its "
                            "separator {}",
                            i, head_size, show_ref(separator)));
      }
    }
    if (options_.builder_policy && all_matched && all_known) {
      const std::optional<std::uint64_t> shared =
          shared_length(first_separator, last_separator, std::numeric_limits<std::uint64_t>::max());
      if (shared && *shared != prefix.size()) {
        problem(directory::prefix_offset(entries, head_size),
                fmt::format("builder policy: the prefix is {} bytes; the separators share {}",
                            prefix.size(), *shared));
      }
    }
  }

  // ---------------------------------------------------------------------
  // Quick mode: the checksums only

  void check_pages_quick() {
    const file_info& info = core_->info();
    const bool has_items =
        info.blob_length > 0 && (info.keys == key_kind::bytes || info.values == value_kind::bytes);
    for (std::uint32_t level = 0; level < info.height; ++level) {
      const std::uint32_t end = core_->level_end_page(level);
      for (std::uint32_t number = core_->level_first_page(level); number < end; ++number) {
        if (!has_items) {
          const unsigned char* p = base_ + std::uint64_t{number} * page_size_;
          const std::uint32_t stored = load_le<std::uint32_t>(p + page_field::checksum_offset);
          const std::uint32_t computed = page_checksum(p, page_size_);
          if (stored != computed) {
            page_problem(number, page_field::checksum_offset,
                         fmt::format("checksum {:08x} does not match the page's bytes ({:08x})",
                                     stored, computed));
          }
          const std::uint32_t stored_number =
              load_le<std::uint32_t>(p + page_field::page_number_offset);
          if (stored_number != number) {
            page_problem(
                number, page_field::page_number_offset,
                fmt::format("page_number field is {}: the page was written for another place "
                            "(moved or copied here) or is damaged",
                            stored_number));
          }
          continue;
        }
        // External items carry checksums of their own, found through the slots.
        checked_page page = check_page(number, level);
        if (page.decodable) check_heap(page);
      }
    }
  }

  const unsigned char* base_;
  std::uint64_t size_;
  const verify_options& options_;
  verify_report& report_;
  std::unique_ptr<reader_core> core_;
  const unsigned char* blob_begin_ = nullptr;  // the blob region, once the header is read
  const unsigned char* blob_end_ = nullptr;
  verify_costs costs_;
  std::uint32_t page_size_ = 0;
  bool check_reserved_ =
      true;  // reserved bytes and padding are zero (minor versions this code knows)

  // Per page, reused: byte-string keys' suffix lengths and remainders.
  std::vector<std::uint32_t> suffix_lengths_;
  std::vector<key_rest> rests_;
  // Keys kept from page to page, where they lie in the mapping.
  key_ref first_, previous_last_, level_last_;

  std::vector<boundary_separator> boundaries_;    // by leaf index
  std::vector<std::uint32_t> level1_start_leaf_;  // the first leaf under each level-1 page
  bool tiling_broken_ = false;                    // separators cannot be matched to leaf boundaries
  bool all_keys_seen_ = true;                     // every leaf was decoded, so totals are exact
  std::vector<blob_item> blob_items_;
  std::uint64_t blob_bytes_checksummed_ = 0;  // the lengths of the items checksummed so far
  bool blob_items_overlap_ = false;           // they added up to more than the blob region
  std::uint32_t key_length_seen_ = 0;
  std::uint32_t value_length_seen_ = 0;
};

}  // namespace
}  // namespace detail

std::string format_problem(const verify_report& report, const verify_problem& problem) {
  switch (problem.region) {
    case verify_region::page:
      return fmt::format("{}: page {} (offset {}): {}", report.name, problem.page.value_or(0),
                         problem.offset, problem.message);
    case verify_region::blob:
      return fmt::format("{}: blob region (offset {}): {}", report.name, problem.offset,
                         problem.message);
    case verify_region::metadata:
      return fmt::format("{}: metadata (offset {}): {}", report.name, problem.offset,
                         problem.message);
    case verify_region::directory:
      return fmt::format("{}: directory (offset {}): {}", report.name, problem.offset,
                         problem.message);
  }
  return fmt::format("{}: (offset {}): {}", report.name, problem.offset, problem.message);
}

namespace detail {

verify_report verify_bytes_measured(std::span<const std::byte> bytes, std::string name,
                                    const verify_options& options, verify_costs& costs) {
  verify_report report;
  report.name = std::move(name);
  report.file_size = bytes.size();
  report.quick = options.quick;
  static const unsigned char nothing = 0;
  const auto* base =
      bytes.empty() ? &nothing : reinterpret_cast<const unsigned char*>(bytes.data());
  verifier checker(base, bytes.size(), options, report);
  checker.run();
  costs = checker.costs();
  return report;
}

}  // namespace detail

verify_report verify_bytes(std::span<const std::byte> bytes, std::string name,
                           const verify_options& options) {
  detail::verify_costs costs;
  return detail::verify_bytes_measured(bytes, std::move(name), options, costs);
}

verify_report verify_file(const std::filesystem::path& path, const verify_options& options) {
  std::uint64_t size = 0;
  const detail::file_descriptor fd = detail::open_regular_file(path, size);
  if (size == 0) return verify_bytes({}, path.string(), options);
  // Every byte is read once, mostly in file order: sequential read-ahead,
  // and no MAP_POPULATE, which would read a file larger than memory twice.
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (mapping == MAP_FAILED) detail::throw_errno("cannot map", path);
  struct unmapper {
    void* address;
    std::uint64_t length;
    ~unmapper() { ::munmap(address, length); }
  } const unmap{mapping, size};
  ::madvise(mapping, size, MADV_SEQUENTIAL);
  return verify_bytes({static_cast<const std::byte*>(mapping), static_cast<std::size_t>(size)},
                      path.string(), options);
}

}  // namespace bbtree
