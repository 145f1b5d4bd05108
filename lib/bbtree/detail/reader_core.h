// The reader's internals: the validated header, checked access to pages and
// items, and the search within a page.  The verifier, the dump tool and the
// tests use it directly; applications use reader.h.
//
// Invariant relied on everywhere below: every page number, section offset,
// slot reference and blob range taken from the file is checked before it is
// followed, so that any bytes at all give either an answer or
// error(corrupt), never a read outside [base, base + size).
#pragma once

#include <bbtree/detail/integer_directory.h>
#include <bbtree/detail/page_view.h>
#include <bbtree/error.h>
#include <bbtree/format/layout.h>
#include <bbtree/reader.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bbtree::detail {

// The smallest byte string greater than every string that starts with
// `prefix`, or nothing when there is none (prefix empty or all 0xFF): the
// exclusive end of a prefix range, for reader and shard sets alike.
std::optional<std::string> prefix_successor(std::string_view prefix);

class background_copy;  // lib/src/mapping.h

// The cache line that the reader's prefetches step by and that a page's
// two-level search takes as its block of inline keys: x86-64's, and most
// ARM cores'.  Where a machine's differs, searches and prefetches only run
// slower; no answer depends on it.
inline constexpr std::uint32_t cache_line_bytes = 64;

// A variable-length item located in the page or the blob region.
struct item_view {
  std::string_view bytes;
  bool external = false;
  std::uint64_t blob_offset = 0;      // external items only
  std::uint32_t stored_checksum = 0;  // external items only
};

class reader_core {
 public:
  // Releases whatever holds the bytes (a mapping, a copy), if anything.
  using keeper = std::shared_ptr<void>;

  // `header_copy`, when given, holds the file's first header_size bytes
  // (or all of a shorter file's), read apart from `base`; the header is
  // checked there, so that opening touches no page of `base`.
  reader_core(std::string name, const unsigned char* base, std::uint64_t size, keeper holder,
              const unsigned char* header_copy = nullptr);

  const std::string& name() const noexcept { return name_; }
  const unsigned char* base() const noexcept { return base_; }
  std::uint64_t size() const noexcept { return size_; }
  const file_info& info() const noexcept { return info_; }
  // How reader::open holds the bytes (memory_mode::map for any other
  // source), and the background copy of map_then_copy_huge_pages.
  void set_memory(memory_mode memory, background_copy* copy) noexcept {
    memory_ = memory;
    background_copy_ = copy;
  }
  memory_mode memory() const noexcept { return memory_; }
  background_copy* huge_page_copy() const noexcept { return background_copy_; }
  std::uint32_t level_first_page(std::uint32_t level) const noexcept {
    return level_first_page_[level];
  }
  // One past the last page of `level`.
  std::uint32_t level_end_page(std::uint32_t level) const noexcept {
    return level + 1 < info_.height ? level_first_page_[level + 1] : info_.page_count;
  }
  std::uint32_t first_leaf() const noexcept { return 1; }
  std::uint32_t end_leaf() const noexcept { return 1 + info_.leaf_count; }

  // Decodes and checks page `number`, expected at `level` (or any level
  // when expected_level < 0).  Throws error(corrupt) naming the page.
  // Inline, with one branch for all checks: every lookup calls it once a
  // level.
  [[gnu::always_inline]] page_view page(std::uint32_t number, int expected_level) const {
    if (number - 1 >= info_.page_count - 1) [[unlikely]]
      corrupt(number, "page number out of range");
    page_view view;
    view.number = number;
    view.bytes = base_ + std::uint64_t{number} * info_.page_size;
    const unsigned char* p = view.bytes;
    view.level = p[format::page::level_offset];
    view.kind = static_cast<format::page_kind>(p[format::page::kind_offset]);
    view.inline_width = p[format::page::inline_width_offset];
    view.count = format::load_le<std::uint16_t>(p + format::page::count_offset);
    view.prefix_length = format::load_le<std::uint16_t>(p + format::page::prefix_length_offset);
    // first_child is a u32: bytes 20-23 of an inner page are reserved, and
    // a reader ignores reserved fields (spec/FORMAT.md, section 16).
    view.header_word = view.kind == format::page_kind::leaf
                           ? format::load_le<std::uint64_t>(p + format::page::first_rank_offset)
                           : format::load_le<std::uint32_t>(p + format::page::first_child_offset);
    view.heap_end = format::load_le<std::uint32_t>(p + format::page::heap_end_offset);
    view.sections =
        format::compute_sections(view.kind, view.count, view.prefix_length, view.inline_width,
                                 info_.keys, info_.key_size, info_.values, info_.value_size);
    const bool level_ok =
        expected_level < 0 || view.level == static_cast<std::uint32_t>(expected_level);
    const bool kind_ok =
        view.kind == (view.level == 0 ? format::page_kind::leaf : format::page_kind::inner);
    const bool width_ok = format::is_valid_inline_width(view.inline_width);
    const bool fits = view.prefix_length <= prefix_limit_ && view.sections.heap <= view.heap_end &&
                      view.heap_end <= info_.page_size;
    if (!(level_ok & kind_ok & width_ok & fits)) [[unlikely]]
      diagnose_page(view, expected_level);
    return view;
  }

  // How many pages, from the root down, lookups find decoded (0 for a file
  // searched as integers, or when one of those pages is damaged).
  std::uint32_t decoded_upper_pages() const noexcept {
    return static_cast<std::uint32_t>(upper_pages_.size());
  }
  // page(number, level) for a page of an inner level, from the table of
  // upper pages where it holds the page (decode_upper_pages).  `number` is
  // in `level`'s range of pages, as every descent's child check ensures.
  // (Returning a reference into the table, with the decoded page beside it,
  // ran more instructions than this copy.)
  [[gnu::always_inline]] page_view inner_page(std::uint32_t number, std::uint32_t level) const {
    if (number >= upper_first_page_) return upper_pages_[number - upper_first_page_];
    return page(number, static_cast<int>(level));
  }

  // Whether get_many's descents of probes not searched as integers start
  // at level 1, from the directory region (spec/FORMAT.md, section 12.3).
  // Never for files whose keys are searched as integers.
  bool uses_directory() const noexcept { return count_heads_ != nullptr; }
  // Where integer probes find their level-1 page instead: empty unless the
  // file's keys are searched as integers and it has a directory of 8-byte
  // heads.
  const detail::integer_directory& integer_directory() const noexcept { return integer_directory_; }
  // The directory region's parts (no entries when the file has none): open
  // checked that its entries (one per boundary between level-1 pages), head
  // size and prefix fill the region exactly.
  const format::directory::region_view& directory() const noexcept { return directory_; }
  // The level-1 pages that descents from the root reach for keys[0, n),
  // n <= max_directory_batch, found by binary searches over the directory's
  // heads instead of a search of each page above level 1.
  static constexpr std::size_t max_directory_batch = 16;
  void directory_pages(const std::string_view* keys, std::size_t n, std::uint32_t* pages) const;
  page_view directory_separator_page(std::uint32_t entry, std::uint32_t number,
                                     std::uint32_t index) const;
  // The order of key `index` of `page` against `probe`, compared in full
  // (negative, zero, positive as the key is less, equal, greater).
  int compare_entry(const page_view& page, std::uint32_t index, std::string_view probe) const;

  // The key data of entry `index`: its suffix bytes beyond the inline key.
  item_view key_remainder(const page_view& page, std::uint32_t index) const;
  std::uint32_t key_suffix_length(const page_view& page, std::uint32_t index) const;
  // The value of leaf entry `index`.
  std::string_view value(const page_view& leaf, std::uint32_t index) const;
  item_view value_item(const page_view& leaf, std::uint32_t index) const;
  // Appends the full key of entry `index` to `out`.
  void append_key(const page_view& page, std::uint32_t index, std::string& out) const;

  // Number of keys of `page` that are < probe (or <= probe when or_equal).
  std::uint32_t count_below(const page_view& page, std::string_view probe, bool or_equal) const;
  // count_below, and without OrEqual whether the key at that index equals
  // the probe, found by the same compares (lib/src/reader_core.cc only).
  struct page_bound {
    std::uint32_t index;
    bool equal;
  };
  template <bool OrEqual>
  page_bound bound_in_page(const page_view& page, std::string_view probe) const;

  // The leaf position of the first entry >= key (or > key when or_equal),
  // normalized so that index < count, or the end position.
  struct position {
    std::uint32_t leaf;
    std::uint32_t index;
  };
  // When `bound_leaf` is given, it receives the position's leaf, decoded,
  // if the search decoded it (bytes null otherwise), for a cursor to start
  // with; the search then also starts loading the leaves after it into L2
  // (prefetch_scan_ahead).
  position search(std::string_view key, bool or_equal, page_view* bound_leaf = nullptr) const;
  // reader::get: the integer path where it applies, else the general one.
  std::optional<std::string_view> get(std::string_view key) const;
  // The index of `key` in `leaf`, if the leaf holds it; and the value of
  // `key` found in leaf `leaf_number` (the general path of get and get_many).
  std::optional<std::uint32_t> find_in_leaf(const page_view& leaf, std::string_view key) const;
  std::optional<std::string_view> get_in_leaf(std::uint32_t leaf_number,
                                              std::string_view key) const;
  // reader::get_many, once its arguments are checked.
  std::size_t get_many(std::span<const std::string_view> keys,
                       std::span<std::optional<std::string_view>> out) const;
  // The leaf holding `key` if the index has it: the page and the entry.
  std::uint32_t descend(std::string_view key) const;
  // The child of inner page `number` at `level` that leads to `key`
  // (inlined into descend and get_many: lib/src/reader_core.cc only).
  [[gnu::always_inline]] inline std::uint32_t inner_step(std::string_view key, std::uint32_t level,
                                                         std::uint32_t number) const;
  // The lookup of an integer probe (integer_probe() true) on raw page
  // bytes, with only the checks that keep reads inside the page.  Returns
  // false where the general path must take over: at a page that fails a
  // check (the general path then reports it).
  bool integer_get(std::uint64_t word, std::optional<std::string_view>& value) const;
  // Its parts, inlined into integer_get, get_many and descend so that a
  // lookup runs without calls (lib/src/reader_core.cc only).  Batched:
  // searched for the fewest instructions rather than the shortest chain of
  // dependent loads, since a batch's misses overlap anyway.
  struct integer_layout;
  [[gnu::always_inline]] inline bool read_integer_layout(const unsigned char* bytes,
                                                         std::uint32_t level,
                                                         integer_layout& layout) const noexcept;
  // One inner level; a lone lookup's step (Batched false) also prefetches
  // the child, and at level 2 touches the leaf it guesses (below).
  template <bool Batched>
  [[gnu::always_inline]] inline bool integer_step(std::uint64_t word, std::uint32_t level,
                                                  std::uint32_t& number) const;
  [[gnu::always_inline]] inline void touch_guessed_leaf(std::uint64_t low, std::uint64_t high,
                                                        std::uint64_t target,
                                                        std::uint64_t level1_page) const;
  // A lone integer probe's level-1 page from the integer directory,
  // prefetched, with the guessed leaf touched as at level 2 (the directory
  // holds level 2's separators).
  [[gnu::always_inline]] inline std::uint32_t directory_level1_page(std::uint64_t word) const;
  // The level-1 page after `separators` of the directory's (at most its
  // entries, so a page of level 1 whatever the region holds).
  std::uint32_t level1_page_after(std::uint32_t separators) const noexcept {
    return level_first_page_[1] + separators;
  }
  [[gnu::always_inline]] inline bool integer_leaf_get(std::uint64_t word, std::uint32_t leaf,
                                                      std::optional<std::string_view>& value) const;
  // A batch reads a leaf in two passes (get_many): the probe's place among
  // the inline keys, then the answer from that place.  Both return false
  // where the general path must take over.
  struct leaf_place;
  [[gnu::always_inline]] inline bool place_in_leaf(std::uint64_t word, std::uint32_t leaf,
                                                   leaf_place& at) const;
  [[gnu::always_inline]] inline bool answer_in_leaf(std::uint64_t word, std::uint32_t leaf,
                                                    const leaf_place& at,
                                                    std::optional<std::string_view>& value) const;
  // The same two passes for the other probes.
  struct general_place;
  [[gnu::noinline]] void place_in_leaf(std::string_view key, std::uint32_t leaf,
                                       general_place& at) const;
  [[gnu::noinline]] std::optional<std::string_view> answer_in_leaf(std::string_view key,
                                                                   std::uint32_t leaf,
                                                                   const general_place& at) const;
  void prefetch_entry_items(const page_view& leaf, std::uint32_t index) const;
  // Whether this file's keys are of one size, at most eight bytes, and so
  // big-endian words of which prefix, inline key and tail are parts.
  bool integer_keys() const noexcept { return format::word_keys(info_.keys, info_.key_size); }
  // Whether a probe has the size of such keys, so that it can be searched
  // as an integer.
  bool integer_probe(std::string_view key) const noexcept {
    return integer_keys() && key.size() == info_.key_size;
  }
  std::uint64_t integer_word(std::string_view key) const noexcept;
  position end_position() const noexcept { return {end_leaf(), 0}; }
  // Moves a (leaf, index) that may point one past a leaf's last entry to
  // the next entry, skipping empty leaves.
  position normalize(std::uint32_t leaf, std::uint32_t index) const;
  position next(position at) const;
  position previous(position at) const;
  std::uint64_t rank_of(position at) const;
  position at_rank(std::uint64_t rank) const;

  // Starts loading the first prefetch_bytes of a page into the cache: every
  // line of a small page at once, so that its misses overlap instead of
  // following one another through the search.  A constant span unrolls to
  // 16 instructions; for a 512-byte page it also loads the next page, which
  // is harmless (a prefetch never faults, even past the mapping).
  //
  // GCC 12 drops every prefetch from `if (span == constant) { loop to the
  // constant }`, and those of some helpers inlined from this header (see
  // prefetch_for_scan): the ctest codegen.prefetches checks the
  // disassembly of the functions that prefetch.  Why, in part: a function
  // that only prefetches changes nothing that GCC must keep, so where it is
  // not inlined GCC finds it `const` and deletes the calls to it, and its
  // prefetches with them (a two-line program shows it).  So this helper is
  // always_inline: GCC once left it out of line in integer_get and descend
  // when the code around it grew, and they lost every prefetch.
  //
  // Locality 3 (prefetcht0) loads into L1, whose few miss buffers a whole
  // page fills; locality 2 (prefetcht1) loads into L2 only, which leaves
  // them to the page being searched.
  static constexpr std::uint32_t prefetch_bytes = 1024;
  template <std::uint32_t Bytes = prefetch_bytes, int Locality = 3>
  [[gnu::always_inline]] void prefetch_page(std::uint32_t number) const {
    const unsigned char* page_bytes = base_ + std::uint64_t{number} * info_.page_size;
#pragma GCC unroll 16
    for (std::uint32_t offset = 0; offset < Bytes; offset += cache_line_bytes)
      __builtin_prefetch(page_bytes + offset, 0, Locality);
  }

  // prefetch_page for the child page a descent steps to, unless the table
  // of decoded upper pages holds it: every lookup reads those pages, so they
  // stay in cache, and prefetching them only takes load slots (about 5% of
  // a batched path-like key: bench/RESULTS.md, "No prefetch of the pages
  // decoded at open").  always_inline: without it GCC 12 emitted none of
  // the page's prefetches behind the condition (codegen.prefetches counts
  // them).
  template <std::uint32_t Bytes = prefetch_bytes>
  [[gnu::always_inline]] void prefetch_child(std::uint32_t number) const {
    if (number < upper_first_page_) prefetch_page<Bytes>(number);
  }

  // A cursor from a bound most often starts a scan, which soon crosses into
  // the leaf after `leaf`: load it into L1 once the search is done
  // (step_to_next_leaf then keeps one leaf ahead).  For the cursors of
  // reader and of shard sets.
  //
  // This and the next are defined in lib/src/reader_core.cc, not here:
  // inlined from this header into reader.cc and shards.cc, GCC 12 emitted
  // none of their prefetches (objdump: no prefetch instruction in
  // reader::lower_bound), silently.
  void prefetch_for_scan(std::uint32_t leaf) const;
  // Earlier still, as soon as a bound's search knows its leaf, beside the
  // leaf's own prefetch: the two leaves after it, into L2 (prefetcht1),
  // which leaves L1's few miss buffers to the leaf being searched.  A
  // 100-entry scan from a random start crosses into one or two of them, and
  // finds them there instead of waiting for a whole miss (bench/RESULTS.md,
  // "Short scans").
  void prefetch_scan_ahead(std::uint32_t leaf) const;

  // A cursor at `at`; `leaf`, when its bytes are set, is the position's
  // leaf as the caller has decoded it (see search), not decoded again.
  cursor make_cursor(position at, const page_view& leaf = {}) const {
    return cursor(this, at.leaf, at.index, leaf);
  }

  // Throws the specific error for a page that failed page()'s checks.
  [[noreturn, gnu::cold, gnu::noinline]] void diagnose_page(const page_view& view,
                                                            int expected_level) const;
  [[noreturn, gnu::cold, gnu::noinline]] void corrupt(std::uint32_t page_number,
                                                      std::string_view what) const;
  // An inner page whose search led past its level: out of the lookup's
  // code, so that an inner step keeps no formatting inline.
  [[noreturn, gnu::cold, gnu::noinline]] void child_outside_level(std::uint32_t page_number,
                                                                  std::uint64_t child,
                                                                  std::uint32_t level) const;

 private:
  void validate_header(const unsigned char* header_bytes);
  void decode_upper_pages();
  struct directory_count {
    std::uint32_t count = 0;
    bool tied = false;
  };
  template <std::uint32_t HeadWords>
  void count_directory_heads(const std::string_view* rests, std::size_t n,
                             directory_count* counts) const noexcept;
  using head_counter = void (reader_core::*)(const std::string_view* rests, std::size_t n,
                                             directory_count* counts) const noexcept;
  // count_directory_heads for heads of `head_size` bytes, a valid size.
  static head_counter head_counter_for(std::uint32_t head_size) noexcept;
  std::uint32_t count_tied_separators(std::string_view key, std::string_view rest,
                                      std::uint32_t count) const;

  std::string name_;
  const unsigned char* base_;
  std::uint64_t size_;
  keeper holder_;
  memory_mode memory_ = memory_mode::map;
  background_copy* background_copy_ = nullptr;  // owned by holder_
  file_info info_;
  std::array<std::uint32_t, format::max_height> level_first_page_{};
  // A page's prefix is no longer than its keys (fixed sizes) or the page
  // (byte-string keys; the sections are checked against the page anyway).
  std::uint32_t prefix_limit_ = 0;
  // Children of a full level-1 page, rounded up from the average (0 below
  // height 3): touch_guessed_leaf's estimate of where a level-1 page's
  // leaves start.
  std::uint64_t leaves_per_level1_page_ = 0;
  // The pages of the top inner levels, decoded and checked once at open,
  // for the probes that are not searched as integers: a byte-string
  // lookup decodes one page a level, and on 1M path-like keys the root and
  // the two levels below it are 45 pages (bench/RESULTS.md, "Upper pages
  // decoded once").  Pages upper_first_page_ to the root; none when
  // upper_first_page_ is past the root.
  std::vector<page_view> upper_pages_;
  std::uint32_t upper_first_page_ = UINT32_MAX;
  // The directory region's parts, set at open from the header and the
  // level table alone: opening reads nothing of the region.
  format::directory::region_view directory_;
  detail::integer_directory integer_directory_;
  // The search over its heads; null where get_many does not use it.
  head_counter count_heads_ = nullptr;
};

}  // namespace bbtree::detail
