// The streaming bulk builder.
//
// Entries arrive in key order.  The builder keeps one open page per level
// (the root-to-leaf path) and closes a page as soon as the next key does
// not fit in it:
//   - leaves are written straight to the staged output file, at pages
//     1, 2, ... in order;
//   - a closed page hands a separator up to its parent level; inner pages
//     are staged per level in unnamed scratch files, because their page
//     numbers depend on how many leaves there will be;
//   - out-of-page items go to an unnamed blob scratch file.
// finish() appends the inner levels (stamping each page's number and
// checksum as it goes), the blob region, the metadata and the directory,
// all in the same 2 MiB pieces as the leaves, then writes the
// header and publishes the file atomically.
#include <bbtree/builder.h>

#include "directory_builder.h"
#include "entry_limits.h"
#include "file_io.h"
#include "key_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

namespace bbtree {

namespace fs = std::filesystem;
using format::compute_sections;
using format::crc32c;
using format::default_inline_limit;
using format::default_prefix_cap;
using format::duplicate_policy;
using format::encoded_key_size;
using format::external_flag;
using format::external_record_size;
using format::format_major;
using format::format_minor;
using format::header_checksum;
using format::header_size;
using format::inline_key_of;
using format::is_valid_key_kind;
using format::is_valid_page_size;
using format::is_valid_value_kind;
using format::key_kind;
using format::load_be;
using format::load_le;
using format::magic;
using format::max_fixed_size;
using format::max_height;
using format::max_page_size;
using format::min_page_size;
using format::page_checksum;
using format::page_header_size;
using format::page_kind;
using format::page_sections;
using format::slot_size;
using format::store_be;
using format::store_inline_key;
using format::store_le;
using format::value_kind;
namespace header = format::header;
namespace page = format::page;
namespace build_flag = format::build_flag;

void validate(const build_options& options) {
  if (!is_valid_key_kind(static_cast<std::uint8_t>(options.keys))) {
    throw error(errc::invalid_argument, "invalid key kind");
  }
  if (!is_valid_value_kind(static_cast<std::uint8_t>(options.values))) {
    throw error(errc::invalid_argument, "invalid value kind");
  }
  if (options.keys == key_kind::fixed &&
      (options.key_size < 1 || options.key_size > max_fixed_size)) {
    throw error(errc::invalid_argument, fmt::format("fixed key size {} is outside 1..{}",
                                                    options.key_size, max_fixed_size));
  }
  if (options.values == value_kind::fixed &&
      (options.value_size < 1 || options.value_size > max_fixed_size)) {
    throw error(errc::invalid_argument, fmt::format("fixed value size {} is outside 1..{}",
                                                    options.value_size, max_fixed_size));
  }
  if (!is_valid_page_size(options.page_size)) {
    throw error(errc::invalid_argument,
                fmt::format("page size {} is not a power of two in {}..{}", options.page_size,
                            min_page_size, max_page_size));
  }
  // Fixed-size items are never moved out of a page, so two of them must fit.
  // The sum reads the fixed sizes as given, 0 for u64 keys and values: the
  // 16 bytes an entry it adds cover those, and this is the bound that the
  // fuzzing of the builder has held (fuzz/build_input.h: 512-byte pages and
  // fixed sizes around it); the message names the sizes as stored.
  const std::uint32_t fixed_entry = options.key_size + options.value_size + 16;
  if (2 * fixed_entry + page_header_size + 64 > options.page_size) {
    throw error(errc::invalid_argument,
                fmt::format("page size {} is too small for {}-byte keys and {}-byte values",
                            options.page_size, encoded_key_size(options.keys, options.key_size),
                            format::encoded_value_size(options.values, options.value_size)));
  }
  for (std::size_t i = 0; i < options.metadata.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (options.metadata[i].first == options.metadata[j].first) {
        throw error(errc::invalid_argument,
                    fmt::format("metadata key {} is given twice",
                                detail::quote_key(options.metadata[i].first)));
      }
    }
  }
}

namespace detail {

std::string quote_key(std::string_view key, std::size_t limit) {
  std::string quoted = "\"";
  for (std::size_t i = 0; i < key.size() && i < limit; ++i) {
    const auto byte = static_cast<unsigned char>(key[i]);
    if (byte >= 0x20 && byte < 0x7F && byte != '"' && byte != '\\') {
      quoted += static_cast<char>(byte);
    } else {
      quoted += fmt::format("\\x{:02x}", byte);
    }
  }
  if (key.size() > limit) quoted += "...";
  quoted += '"';
  return quoted;
}

namespace {

// The kinds of one file, and the builder's thresholds for it.
struct file_shape {
  key_kind keys;
  std::uint32_t key_size;  // 0 for byte strings
  value_kind values;
  std::uint32_t value_size;  // 0 for none and byte strings
  std::uint32_t page_size;
  std::uint32_t inline_limit;
  std::uint32_t prefix_cap;
};

// Builder policy (format/layout.h, spec section 15.2).
std::uint32_t choose_inline_width(const file_shape& shape, page_kind kind,
                                  std::uint32_t prefix_length) {
  return format::policy_inline_width(kind, shape.keys, shape.key_size, prefix_length);
}
std::uint32_t stored_prefix(const file_shape& shape, page_kind kind, std::uint32_t common_prefix) {
  return format::policy_prefix_length(kind, shape.keys, shape.key_size, common_prefix);
}

// Bytes an item takes in the heap: itself, or its external record.
std::uint32_t heap_bytes_of_item(std::uint64_t length, std::uint32_t inline_limit) {
  if (length == 0) return 0;
  return length > inline_limit ? external_record_size : static_cast<std::uint32_t>(length);
}

// Copies `length` bytes.  Keys and values are mostly a few bytes long, and a
// call to memcpy costs more than copying those: up to 16 bytes are moved as
// two overlapping words.
inline void copy_bytes(unsigned char* to, const void* from, std::size_t length) noexcept {
  const auto* source = static_cast<const unsigned char*>(from);
  if (length > 16) {
    std::memcpy(to, source, length);
  } else if (length >= 8) {
    std::memcpy(to, source, 8);
    std::memcpy(to + length - 8, source + length - 8, 8);
  } else if (length >= 4) {
    std::memcpy(to, source, 4);
    std::memcpy(to + length - 4, source + length - 4, 4);
  } else if (length > 0) {
    to[0] = source[0];
    to[length / 2] = source[length / 2];
    to[length - 1] = source[length - 1];
  }
}

// Copies `count` pieces of `length` bytes, one every `stride` bytes from
// `from`, one after another to `to`: the key tails of a fixed-size-key page.
// The short lengths that integer keys leave get a loop each, with the
// length known to the compiler: copy_bytes's tests of it would cost more
// than the copy.
template <std::size_t Length>
inline void copy_pieces(unsigned char* to, const unsigned char* from, std::size_t stride,
                        std::uint32_t count) noexcept {
  for (std::uint32_t i = 0; i < count; ++i) {
    std::memcpy(to + std::size_t{i} * Length, from + std::size_t{i} * stride, Length);
  }
}

inline void copy_pieces(unsigned char* to, const unsigned char* from, std::size_t stride,
                        std::uint32_t count, std::uint32_t length) noexcept {
  switch (length) {
    case 1:
      return copy_pieces<1>(to, from, stride, count);
    case 2:
      return copy_pieces<2>(to, from, stride, count);
    case 3:
      return copy_pieces<3>(to, from, stride, count);
    case 4:
      return copy_pieces<4>(to, from, stride, count);
    default:
      for (std::uint32_t i = 0; i < count; ++i) {
        copy_bytes(to + std::size_t{i} * length, from + std::size_t{i} * stride, length);
      }
  }
}

// Zeroes the padding between two sections of a page.
inline void zero_gap(unsigned char* page, std::uint32_t from, std::uint32_t to) noexcept {
  if (to > from) std::memset(page + from, 0, to - from);
}

// The length of the common prefix of a and b, looked for in their first
// `limit` bytes only.  Both hold at least `size` bytes; limit <= size.  A
// page's prefix only ever shrinks, so the builder compares a new key with
// the page's first key only as far as the current prefix.
inline std::uint32_t shared_prefix(const unsigned char* a, const unsigned char* b,
                                   std::uint32_t size, std::uint32_t limit) noexcept {
  std::uint32_t position = 0;
  while (position < limit) {
    if (size - position >= 8) {
      const std::uint64_t difference =
          load_le<std::uint64_t>(a + position) ^ load_le<std::uint64_t>(b + position);
      if (difference != 0) {
        return std::min(limit,
                        position + static_cast<std::uint32_t>(std::countr_zero(difference)) / 8);
      }
      position += 8;
    } else {
      if (a[position] != b[position]) return position;
      ++position;
    }
  }
  return limit;
}

// A growable byte array whose append is a bounds check and a copy: every key
// and value passes through one, and std::string::append costs more than the
// copy of an 8-byte item.
class byte_buffer {
 public:
  std::size_t size() const noexcept { return size_; }
  unsigned char* data() noexcept { return data_.get(); }
  const unsigned char* data() const noexcept { return data_.get(); }
  void clear() noexcept { size_ = 0; }
  // Growing keeps every byte, also those past size(): open pages of a fixed
  // layout write their entries at fixed places and never call extend().
  void reserve(std::size_t capacity) {
    if (capacity > capacity_) grow(capacity - size_);
  }
  // Makes room for `length` more bytes at the end and returns where they go.
  unsigned char* extend(std::size_t length) {
    if (length > capacity_ - size_) grow(length);
    unsigned char* end = data_.get() + size_;
    size_ += length;
    return end;
  }
  void append(const void* bytes, std::size_t length) { copy_bytes(extend(length), bytes, length); }

 private:
  void grow(std::size_t length) {
    const std::size_t capacity = std::max({2 * capacity_, size_ + length, std::size_t{256}});
    std::unique_ptr<unsigned char[]> larger(new unsigned char[capacity]);
    if (capacity_ > 0) std::memcpy(larger.get(), data_.get(), capacity_);
    data_ = std::move(larger);
    capacity_ = capacity;
  }

  std::unique_ptr<unsigned char[]> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

// Sizes of fixed-size keys and values known when the builder is compiled, so
// that the common ones (u64 keys and values, 16-byte hashes) are copied and
// compared with a move or two; runtime_size takes them from the file_shape.
inline constexpr std::uint32_t runtime_size = 0xFFFFFFFFu;

// A value as an open page holds it: for byte-string values stored out of the
// page (already in the blob file), `bytes` is the 16-byte external record.
struct stored_value {
  std::string_view bytes;
  std::uint64_t length = 0;      // byte-string values: the value's own length
  std::uint32_t heap_bytes = 0;  // byte-string values: its size in the page's heap
  bool external = false;
};

// One open page: its keys (and, for leaves, values) held until it closes,
// when serialize() lays the page out.  The layout (the prefix, the inline
// width, where each section starts) depends on every key of the page, so
// entries are kept packed (fixed-size keys and values back to back, byte
// strings with their end offsets) and placed once, when the page is full.
class open_page {
 public:
  open_page(const file_shape& shape, page_kind kind, std::uint8_t level)
      : shape_(shape),
        kind_(kind),
        level_(level),
        fixed_layout_(shape.keys != key_kind::bytes &&
                      (kind == page_kind::inner || shape.values != value_kind::bytes)) {}

  std::uint32_t count() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }
  std::string_view key(std::uint32_t index) const noexcept {
    const auto* bytes = reinterpret_cast<const char*>(keys_.data());
    if (shape_.key_size != 0) {
      return {bytes + std::size_t{index} * shape_.key_size, shape_.key_size};
    }
    const std::uint32_t begin = index == 0 ? 0 : key_ends_[index - 1];
    return {bytes + begin, key_ends_[index] - begin};
  }
  std::string_view last_key() const noexcept { return key(count_ - 1); }

  // Orders `key` against the last key of a non-empty page, as compare_keys.
  // KeySize: the file's fixed key size, or runtime_size.
  template <std::uint32_t KeySize>
  int compare_with_last(std::string_view key) const noexcept {
    if constexpr (KeySize == 8) {
      const unsigned char* last = keys_.data() + std::size_t{count_ - 1} * KeySize;
      const std::uint64_t next_word = load_be<std::uint64_t>(key.data());
      const std::uint64_t last_word = load_be<std::uint64_t>(last);
      return (next_word > last_word) - (next_word < last_word);
    } else if constexpr (KeySize == 16) {
      const unsigned char* last = keys_.data() + std::size_t{count_ - 1} * KeySize;
      std::uint64_t next_word = load_be<std::uint64_t>(key.data());
      std::uint64_t last_word = load_be<std::uint64_t>(last);
      if (next_word == last_word) {
        next_word = load_be<std::uint64_t>(key.data() + 8);
        last_word = load_be<std::uint64_t>(last + 8);
      }
      return (next_word > last_word) - (next_word < last_word);
    } else {
      return compare_keys(key, last_key());
    }
  }

  // Whether every entry takes the same bytes in the page (fixed-size keys,
  // and no byte-string values in it): then whether one more fits depends only
  // on the count and the prefix, and try_append_fixed applies.
  bool fixed_layout() const noexcept { return fixed_layout_; }

  // Adds an entry to a fixed-layout page if the page still fits with it (an
  // empty page always takes it), and says whether it did.  `key` has
  // key_size bytes and `value` value_size bytes.  KeySize and ValueSize: the
  // file's sizes, or runtime_size; ValueSize is 0 for inner pages.
  template <std::uint32_t KeySize, std::uint32_t ValueSize>
  [[gnu::always_inline]] bool try_append_fixed(const char* key, const char* value) {
    if (count_ == 0) [[unlikely]] {
      start_fixed_layout();
    } else {
      const std::uint32_t shared = prefix_shared_with<KeySize>(key);
      if (shared != prefix_length_) [[unlikely]] {
        if (!shrink_fixed_prefix(shared)) return false;
      }
      if (count_ >= capacity_) return false;
    }
    append_fixed<KeySize, ValueSize>(key, value);
    return true;
  }

  // try_append_fixed's common case alone: a page that is not empty, whose
  // prefix `key` keeps, with room for one more entry.  Otherwise it says
  // false and changes nothing, and try_append_fixed decides.  Nothing here
  // calls out, so builder::add's path through it saves no registers.
  template <std::uint32_t KeySize, std::uint32_t ValueSize>
  [[gnu::always_inline]] bool try_append_fixed_same_prefix(const char* key, const char* value) {
    if (count_ == 0 || count_ >= capacity_ || prefix_shared_with<KeySize>(key) != prefix_length_)
      return false;
    append_fixed<KeySize, ValueSize>(key, value);
    return true;
  }

  // Adds an entry if the page still fits with it (an empty page always takes
  // it), and says whether it did.
  bool try_append(std::string_view key, const stored_value& value) {
    if (fixed_layout_) {
      if (kind_ == page_kind::inner) return try_append_fixed<runtime_size, 0>(key.data(), nullptr);
      return try_append_fixed<runtime_size, runtime_size>(key.data(), value.bytes.data());
    }
    const auto key_length = static_cast<std::uint32_t>(key.size());
    if (count_ == 0) {
      prefix_length_ = std::min(key_length, shape_.prefix_cap);
      key_heap_bytes_ = key_heap_bytes(key_length, prefix_length_);
    } else {
      // The first key starts keys_; the prefix is no longer than it.
      const std::uint32_t first_length = shape_.key_size != 0 ? shape_.key_size : key_ends_[0];
      const std::uint32_t shared =
          shared_prefix(keys_.data(), reinterpret_cast<const unsigned char*>(key.data()),
                        std::min(first_length, key_length), std::min(prefix_length_, key_length));
      std::uint64_t key_heap = key_heap_bytes_;
      if (shared != prefix_length_) key_heap = recompute_key_heap(shared);
      key_heap += key_heap_bytes(key_length, shared);
      if (!fits(count_ + 1, shared, key_heap + value_heap_bytes_ + value.heap_bytes)) return false;
      prefix_length_ = shared;
      key_heap_bytes_ = key_heap;
    }
    keys_.append(key.data(), key.size());
    if (shape_.keys == key_kind::bytes)
      key_ends_.push_back(static_cast<std::uint32_t>(keys_.size()));
    if (kind_ == page_kind::leaf) {
      values_.append(value.bytes.data(), value.bytes.size());
      if (shape_.values == value_kind::bytes) {
        value_refs_.push_back({static_cast<std::uint32_t>(values_.size()),
                               static_cast<std::uint32_t>(value.length), value.external});
        value_heap_bytes_ += value.heap_bytes;
      }
    }
    ++count_;
    return true;
  }

  void clear() noexcept {
    count_ = 0;
    keys_.clear();
    key_ends_.clear();
    values_.clear();
    value_refs_.clear();
    prefix_length_ = 0;
    capacity_ = 0;
    key_heap_bytes_ = 0;
    value_heap_bytes_ = 0;
  }

  // Lays the page out into `page` (page_size bytes, every one written here).
  // Key remainders too long for the page are appended to the blob file.
  // `header_word` is first_rank for leaves, first_child for inner pages.
  template <typename BlobSink>
  void serialize(unsigned char* page, std::uint32_t page_number, std::uint64_t header_word,
                 BlobSink&& write_blob) const {
    const std::uint32_t count = count_;
    const std::uint32_t prefix = stored_prefix(shape_, kind_, prefix_length_);
    const std::uint32_t width = choose_inline_width(shape_, kind_, prefix);
    const page_sections sections =
        compute_sections(kind_, count, prefix, width, shape_.keys, shape_.key_size, shape_.values,
                         shape_.value_size);
    std::memset(page, 0, page_header_size);
    store_le<std::uint32_t>(page + page::page_number_offset, page_number);
    page[page::kind_offset] = static_cast<unsigned char>(kind_);
    page[page::level_offset] = level_;
    page[page::inline_width_offset] = static_cast<unsigned char>(width);
    store_le<std::uint16_t>(page + page::count_offset, static_cast<std::uint16_t>(count));
    store_le<std::uint16_t>(page + page::prefix_length_offset, static_cast<std::uint16_t>(prefix));
    if (kind_ == page_kind::leaf) {
      store_le<std::uint64_t>(page + page::first_rank_offset, header_word);
    } else {
      store_le<std::uint32_t>(page + page::first_child_offset,
                              static_cast<std::uint32_t>(header_word));
    }
    if (prefix > 0) std::memcpy(page + sections.prefix, keys_.data(), prefix);
    zero_gap(page, sections.prefix + prefix, sections.inline_keys);
    write_inline_keys(page + sections.inline_keys, prefix, width);
    zero_gap(page, sections.inline_keys + count * width, sections.key_data);

    std::uint32_t key_data_end = sections.key_data;
    if (shape_.keys == key_kind::bytes) {
      key_data_end += count * slot_size;                // the slots are written with the heap below
    } else if (sections.tail_width > 0 && count > 0) {  // an empty page may have no key buffer
      const std::uint32_t tail = sections.tail_width;
      copy_pieces(page + sections.key_data, keys_.data() + prefix + width, shape_.key_size, count,
                  tail);
      key_data_end += count * tail;
    }
    zero_gap(page, key_data_end, sections.values);

    std::uint32_t values_end = sections.values;
    if (kind_ == page_kind::leaf) {
      if (shape_.values == value_kind::bytes) {
        values_end += count * slot_size;  // written with the heap below
      } else if (shape_.value_size != 0 && count > 0) {
        std::memcpy(page + sections.values, values_.data(), std::size_t{count} * shape_.value_size);
        values_end += count * shape_.value_size;
      }
    }
    zero_gap(page, values_end, sections.heap);

    std::uint32_t heap = sections.heap;
    if (shape_.keys == key_kind::bytes ||
        (kind_ == page_kind::leaf && shape_.values == value_kind::bytes)) {
      heap = write_heap(page, sections, prefix, std::forward<BlobSink>(write_blob));
    }
    zero_gap(page, heap, shape_.page_size);
    store_le<std::uint32_t>(page + page::heap_end_offset, heap);
    store_le<std::uint32_t>(page + page::checksum_offset, page_checksum(page, shape_.page_size));
  }

 private:
  // How much of the prefix a fixed-size key shares with the page's first
  // key (and so with all of its keys): at most prefix_length_.
  template <std::uint32_t KeySize>
  [[gnu::always_inline]] std::uint32_t prefix_shared_with(const char* key) const noexcept {
    const auto* first = keys_.data();
    const auto* next = reinterpret_cast<const unsigned char*>(key);
    if constexpr (KeySize == 8) {
      const std::uint64_t difference = load_le<std::uint64_t>(first) ^ load_le<std::uint64_t>(next);
      const std::uint32_t shared =
          difference == 0 ? 8 : static_cast<std::uint32_t>(std::countr_zero(difference)) / 8;
      return std::min(shared, prefix_length_);
    } else {
      const std::uint32_t key_size = KeySize != runtime_size ? KeySize : shape_.key_size;
      return shared_prefix(first, next, key_size, prefix_length_);
    }
  }

  template <std::uint32_t KeySize, std::uint32_t ValueSize>
  [[gnu::always_inline]] void append_fixed(const char* key, const char* value) {
    const std::uint32_t key_size = KeySize != runtime_size ? KeySize : shape_.key_size;
    std::memcpy(keys_.data() + std::size_t{count_} * key_size, key, key_size);
    const std::uint32_t value_size = ValueSize != runtime_size ? ValueSize : shape_.value_size;
    if (value_size != 0)
      std::memcpy(values_.data() + std::size_t{count_} * value_size, value, value_size);
    ++count_;
  }

  struct value_ref {
    std::uint32_t end;     // in values_: the value, or its external record
    std::uint32_t length;  // the value's own length
    bool external;
  };

  // The first entry of a fixed-layout page: its prefix is all of the key, up
  // to the cap, and room for as many entries as fit with that prefix.
  [[gnu::noinline]] void start_fixed_layout() {
    prefix_length_ = std::min(shape_.key_size, shape_.prefix_cap);
    capacity_ = capacity_for(prefix_length_);
    reserve_entries(capacity_);
  }

  // A key shares less with the page than its prefix: takes it as the new
  // prefix if the page, with the key, still fits.
  [[gnu::noinline]] bool shrink_fixed_prefix(std::uint32_t shared) {
    const std::uint32_t capacity = capacity_for(shared);
    if (count_ >= capacity) return false;
    prefix_length_ = shared;
    capacity_ = capacity;
    reserve_entries(capacity_);
    return true;
  }

  void reserve_entries(std::uint32_t count) {
    keys_.reserve(std::size_t{count} * shape_.key_size);
    if (kind_ == page_kind::leaf) values_.reserve(std::size_t{count} * shape_.value_size);
  }

  // The inline keys: the first `width` bytes of each key's suffix (after the
  // prefix), zero-padded, big-endian.
  void write_inline_keys(unsigned char* out, std::uint32_t prefix, std::uint32_t width) const {
    const std::uint32_t key_size = shape_.key_size;
    const unsigned char* keys = keys_.data();
    if (key_size == 0) {
      for (std::uint32_t i = 0; i < count_; ++i) {
        const std::string_view key = this->key(i);
        const auto* suffix = reinterpret_cast<const unsigned char*>(key.data()) + prefix;
        const std::size_t suffix_length = key.size() - prefix;
        const std::uint64_t inline_key = suffix_length >= 8
                                             ? load_be<std::uint64_t>(suffix)
                                             : inline_key_of(suffix, suffix_length, 8);
        store_be<std::uint64_t>(out + std::size_t{i} * 8, inline_key);
      }
      return;
    }
    const std::uint32_t suffix_length = key_size - prefix;
    if (suffix_length >= 8) {  // width 8, no padding
      for (std::uint32_t i = 0; i < count_; ++i) {
        store_be<std::uint64_t>(out + std::size_t{i} * 8,
                                load_be<std::uint64_t>(keys + std::size_t{i} * key_size + prefix));
      }
    } else if (suffix_length > 0 && key_size >= 8) {
      // The key's last eight bytes end with the suffix: shifting out what
      // comes before it leaves the suffix followed by zeros.
      const std::uint32_t shift = 8 * (8 - suffix_length);
      const unsigned char* last_words = keys + key_size - 8;
      switch (width) {
        case 2:
          store_shifted<std::uint16_t>(out, last_words, key_size, shift);
          break;
        case 4:
          store_shifted<std::uint32_t>(out, last_words, key_size, shift);
          break;
        default:
          store_shifted<std::uint64_t>(out, last_words, key_size, shift);
          break;
      }
    } else {
      for (std::uint32_t i = 0; i < count_; ++i) {
        store_inline_key(
            out, i, width,
            inline_key_of(keys + std::size_t{i} * key_size + prefix, suffix_length, width));
      }
    }
  }

  // Stores, for each key, the top bytes of the eight at `words` (stepping
  // by `stride`) shifted left by `shift` bits, as an inline key of Word.
  template <typename Word>
  void store_shifted(unsigned char* out, const unsigned char* words, std::uint32_t stride,
                     std::uint32_t shift) const {
    constexpr std::uint32_t drop = 64 - 8 * sizeof(Word);
    for (std::uint32_t i = 0; i < count_; ++i) {
      const std::uint64_t padded = load_be<std::uint64_t>(words + std::size_t{i} * stride) << shift;
      store_be<Word>(out + std::size_t{i} * sizeof(Word), static_cast<Word>(padded >> drop));
    }
  }

  // The slots of byte-string keys and values, and the heap items they refer
  // to, entry by entry (a key's remainder, then its value).  Returns the end
  // of the heap.
  template <typename BlobSink>
  std::uint32_t write_heap(unsigned char* page, const page_sections& sections, std::uint32_t prefix,
                           BlobSink&& write_blob) const {
    std::uint32_t heap = sections.heap;
    auto place = [&](const void* item, std::size_t length) -> std::uint32_t {
      if (length == 0) return 0;
      copy_bytes(page + heap, item, length);
      const std::uint32_t reference = heap;
      heap += static_cast<std::uint32_t>(length);
      return reference;
    };
    const bool leaf_values = kind_ == page_kind::leaf && shape_.values == value_kind::bytes;
    std::uint32_t value_begin = 0;
    for (std::uint32_t i = 0; i < count_; ++i) {
      if (shape_.keys == key_kind::bytes) {
        const std::string_view suffix = key(i).substr(prefix);
        const std::string_view remainder =
            suffix.size() > 8 ? suffix.substr(8) : std::string_view();
        std::uint32_t reference = 0;
        if (remainder.size() > shape_.inline_limit) {
          unsigned char record[external_record_size] = {};
          store_le<std::uint64_t>(record, write_blob(remainder));
          store_le<std::uint32_t>(record + 8, crc32c(remainder.data(), remainder.size()));
          reference = place(record, external_record_size) | external_flag;
        } else {
          reference = place(remainder.data(), remainder.size());
        }
        unsigned char* slot = page + sections.key_data + i * slot_size;
        store_le<std::uint32_t>(slot, static_cast<std::uint32_t>(suffix.size()));
        store_le<std::uint32_t>(slot + 4, reference);
      }
      if (leaf_values) {
        const value_ref& value = value_refs_[i];
        // values_ holds the value itself, or its external record.
        std::uint32_t reference = place(values_.data() + value_begin, value.end - value_begin);
        if (value.external) reference |= external_flag;
        value_begin = value.end;
        unsigned char* slot = page + sections.values + i * slot_size;
        store_le<std::uint32_t>(slot, value.length);
        store_le<std::uint32_t>(slot + 4, reference);
      }
    }
    return heap;
  }

  std::uint32_t key_heap_bytes(std::size_t key_length, std::uint32_t prefix_length) const {
    if (shape_.keys != key_kind::bytes) return 0;
    const std::size_t suffix = key_length - prefix_length;
    return suffix > 8 ? heap_bytes_of_item(suffix - 8, shape_.inline_limit) : 0;
  }

  std::uint64_t recompute_key_heap(std::uint32_t prefix_length) const {
    if (shape_.keys != key_kind::bytes) return 0;
    std::uint64_t total = 0;
    std::uint32_t begin = 0;
    for (std::uint32_t i = 0; i < count_; ++i) {
      total += key_heap_bytes(key_ends_[i] - begin, prefix_length);
      begin = key_ends_[i];
    }
    return total;
  }

  // Whether `count` entries with this prefix and heap fit in a page.
  bool fits(std::uint32_t count, std::uint32_t prefix_length, std::uint64_t heap) const {
    if (count > 0xFFFF) return false;
    return sections_end(count, prefix_length) + heap <= shape_.page_size;
  }

  // Where the heap starts in a page of `count` entries with this prefix.
  std::uint32_t sections_end(std::uint32_t count, std::uint32_t common_prefix) const {
    const std::uint32_t prefix = stored_prefix(shape_, kind_, common_prefix);
    return compute_sections(kind_, count, prefix, choose_inline_width(shape_, kind_, prefix),
                            shape_.keys, shape_.key_size, shape_.values, shape_.value_size)
        .heap;
  }

  // The most entries a fixed-layout page holds with this prefix, computed
  // once per prefix length.
  std::uint32_t capacity_for(std::uint32_t prefix_length) {
    constexpr std::uint32_t unknown = 0xFFFFFFFFu;
    if (capacities_.empty()) capacities_.assign(std::size_t{shape_.key_size} + 1, unknown);
    std::uint32_t& capacity = capacities_[prefix_length];
    if (capacity == unknown) {
      std::uint32_t low = 0;  // fits: an empty page holds its prefix, at most page_size / 8
      std::uint32_t high = 0xFFFF;
      while (low < high) {
        const std::uint32_t middle = low + (high - low + 1) / 2;
        if (sections_end(middle, prefix_length) <= shape_.page_size) {
          low = middle;
        } else {
          high = middle - 1;
        }
      }
      capacity = low;
    }
    return capacity;
  }

  file_shape shape_;
  page_kind kind_;
  std::uint8_t level_;
  bool fixed_layout_;
  std::uint32_t count_ = 0;
  byte_buffer keys_;                       // fixed keys back to back, or byte strings
  std::vector<std::uint32_t> key_ends_;    // byte-string keys: where each ends in keys_
  byte_buffer values_;                     // leaves: values (or external records) back to back
  std::vector<value_ref> value_refs_;      // byte-string values
  std::vector<std::uint32_t> capacities_;  // fixed layout: by prefix length
  std::uint32_t prefix_length_ = 0;
  std::uint32_t capacity_ = 0;  // fixed layout: capacity_for(prefix_length_)
  std::uint64_t key_heap_bytes_ = 0;
  std::uint64_t value_heap_bytes_ = 0;
};

// A scratch file written sequentially: inner pages of one level, or blobs.
struct scratch_file {
  file_descriptor fd;
  std::uint64_t length = 0;
  std::string buffer;

  void append(const fs::path& name, const void* data, std::size_t size) {
    buffer.append(static_cast<const char*>(data), size);
    length += size;
    if (buffer.size() >= (1u << 20)) flush(name);
  }
  void flush(const fs::path& name) {
    if (!buffer.empty()) write_all(fd.get(), buffer.data(), buffer.size(), name);
    buffer.clear();
  }
};

}  // namespace
}  // namespace detail

class builder::impl {
 public:
  impl(fs::path destination, build_options options)
      : options_(std::move(options)),
        shape_{options_.keys,
               encoded_key_size(options_.keys, options_.key_size),
               options_.values,
               format::encoded_value_size(options_.values, options_.value_size),
               options_.page_size,
               default_inline_limit(options_.page_size),
               default_prefix_cap(options_.page_size)},
        limits_(options_),
        staged_(std::move(destination), options_.overwrite),
        page_buffer_(options_.page_size),
        keep_last_(options_.duplicates == duplicate_policy::keep_last),
        writes_directory_(options_.directory) {
    output_buffer_.reserve(output_flush_size + options_.page_size);
    // Page 0 is written last, over these zeros.  It starts the output, so
    // that every write begins at a multiple of output_flush_size.
    std::memset(output_buffer_.extend(options_.page_size), 0, options_.page_size);
    // Reserved so that references to open pages survive adding levels.
    levels_.reserve(max_height + 1);
    levels_.emplace_back(shape_, page_kind::leaf, 0);
    entry_path_ = choose_entry_path();
  }

  // builder::add's common case, inlined there: an entry of a fixed-layout
  // file that goes into the open leaf without changing its prefix (see
  // open_page::try_append_fixed_same_prefix).  Anything else, a failed
  // build included, it leaves to add(), saying false and changing nothing.
  [[gnu::always_inline]] bool try_add_common(std::string_view key, std::string_view value) {
    return with_entry_sizes(
        [&](auto sizes) {
          return try_add_fixed_common<decltype(sizes)::key_size, decltype(sizes)::value_size>(
              key, value);
        },
        [] { return false; });
  }

  void add(std::string_view key, std::string_view value) {
    if (ended_) {
      throw error(errc::invalid_argument,
                  "add() after finish(), abort() or a failed add(): the build has ended");
    }
    try {
      with_entry_sizes(
          [&](auto sizes) {
            add_fixed<decltype(sizes)::key_size, decltype(sizes)::value_size>(key, value);
          },
          [&] {
            if (entry_path_ == entry_path::fixed) {
              add_fixed<detail::runtime_size, detail::runtime_size>(key, value);
            } else {
              add_checked(key, value);
            }
          });
    } catch (...) {
      abort();
      throw;
    }
  }

  build_summary finish() {
    if (ended_) {
      throw error(errc::invalid_argument,
                  "finish() after finish(), abort() or a failed add(): the build has ended");
    }
    try {
      const build_summary summary = finish_checked();
      end();
      return summary;
    } catch (...) {
      abort();
      throw;
    }
  }

  // After a failed add() or finish() too: whatever was staged goes.
  void abort() noexcept {
    end();
    staged_.discard();
    inner_files_.clear();
    blob_.fd.reset();
  }

  std::uint64_t entries_added() const noexcept { return accepted_ + (has_pending_ ? 1 : 0); }
  // Entries go into the open leaf as they come, but the size reported is as
  // of the entry before the last (see note_size_change).
  std::uint64_t bytes_written() const noexcept {
    if (size_before_entry_number_ == accepted_) return size_before_entry_;
    return current_size();
  }
  const fs::path& destination() const noexcept { return staged_.destination(); }

 private:
  // The pages are written in pieces of 2 MiB at offsets that are multiples
  // of 2 MiB (the last one shorter): the page cache then holds them in
  // 2 MiB folios where the file system allows (ext4 since Linux 6.16), and
  // a reader's mapping gets them as huge pages, 2 MiB entries, without a
  // copy.  Written in 1 MiB pieces, the same file got none (bench/RESULTS.md,
  // "Huge pages for the file mapping").  Page sizes are powers of two up
  // to 64 KiB, so the buffer reaches 2 MiB exactly.
  static constexpr std::size_t output_flush_size = std::size_t{2} << 20;

  std::uint64_t current_size() const noexcept {
    return (1 + closed_pages_) * options_.page_size + blob_.length;  // 1: the header
  }

  // How add() takes entries: fixed-size keys with fixed-size values (or
  // none) go straight into a fixed-layout leaf, with the common sizes known
  // at compile time; the rest (byte strings, keep_last) take add_checked.
  enum class entry_path : std::uint8_t {
    u64_key_u64_value,
    u64_key_no_value,
    key16_u64_value,
    fixed,
    general
  };

  template <std::uint32_t KeySize, std::uint32_t ValueSize>
  struct entry_sizes {
    static constexpr std::uint32_t key_size = KeySize;
    static constexpr std::uint32_t value_size = ValueSize;
  };

  // Calls `fixed` with the entry_sizes of a path whose sizes are known at
  // compile time, and `other` for the rest: the one place that maps paths
  // to sizes, for add() and try_add_common().
  template <typename Fixed, typename Other>
  [[gnu::always_inline]] std::invoke_result_t<Other> with_entry_sizes(Fixed&& fixed,
                                                                      Other&& other) const {
    switch (entry_path_) {
      case entry_path::u64_key_u64_value:
        return fixed(entry_sizes<8, 8>{});
      case entry_path::u64_key_no_value:
        return fixed(entry_sizes<8, 0>{});
      case entry_path::key16_u64_value:
        return fixed(entry_sizes<16, 8>{});
      case entry_path::fixed:
      case entry_path::general:
        break;
    }
    return other();
  }

  entry_path choose_entry_path() const noexcept {
    if (keep_last_ || !levels_[0].fixed_layout()) return entry_path::general;
    if (shape_.key_size == 8 && shape_.value_size == 8) return entry_path::u64_key_u64_value;
    if (shape_.key_size == 8 && shape_.value_size == 0) return entry_path::u64_key_no_value;
    if (shape_.key_size == 16 && shape_.value_size == 8) return entry_path::key16_u64_value;
    return entry_path::fixed;
  }

  template <std::uint32_t KeySize, std::uint32_t ValueSize>
  [[gnu::always_inline]] bool try_add_fixed_common(std::string_view key, std::string_view value) {
    if (key.size() != KeySize || value.size() != ValueSize) [[unlikely]]
      return false;
    detail::open_page& leaf = levels_[0];
    if (leaf.empty() || leaf.compare_with_last<KeySize>(key) <= 0) [[unlikely]]
      return false;
    if (!leaf.try_append_fixed_same_prefix<KeySize, ValueSize>(key.data(), value.data()))
      return false;
    ++position_;
    ++accepted_;
    return true;
  }

  // Kept out of add() so that each path needs only the registers it uses.
  template <std::uint32_t KeySize, std::uint32_t ValueSize>
  [[gnu::noinline]] void add_fixed(std::string_view key, std::string_view value) {
    ++position_;
    const std::uint32_t key_size = KeySize != detail::runtime_size ? KeySize : shape_.key_size;
    const std::uint32_t value_size =
        ValueSize != detail::runtime_size ? ValueSize : shape_.value_size;
    if (key.size() != key_size || value.size() != value_size) [[unlikely]] {
      limits_.throw_if_unfit(position_, key, value);
    }
    detail::open_page& leaf = levels_[0];
    if (!leaf.empty()) [[likely]] {
      const int order = leaf.compare_with_last<KeySize>(key);
      if (order <= 0) [[unlikely]] {
        refuse_or_drop(key, leaf.last_key(), order);
        return;  // a duplicate under keep_first
      }
    }
    if (!leaf.try_append_fixed<KeySize, ValueSize>(key.data(), value.data())) [[unlikely]] {
      start_leaf(key);
      leaf.try_append_fixed<KeySize, ValueSize>(key.data(), value.data());
    }
    ++accepted_;
  }

  [[gnu::noinline]] void add_checked(std::string_view key, std::string_view value) {
    ++position_;
    limits_.check(position_, key, value);
    if (keep_last_) {
      add_keep_last(key, value);
      return;
    }
    const detail::open_page& leaf = levels_[0];
    if (!leaf.empty()) {
      const int order = leaf.compare_with_last<detail::runtime_size>(key);
      if (order <= 0) [[unlikely]] {
        refuse_or_drop(key, leaf.last_key(), order);
        return;  // a duplicate under keep_first
      }
    }
    commit(key, value);
  }

  // A key that does not ascend from the key before it: out of order, or a
  // duplicate that the policy refuses or drops.
  [[gnu::cold]] void refuse_or_drop(std::string_view key, std::string_view previous,
                                    int order) const {
    if (order < 0) {
      throw error(errc::out_of_order,
                  fmt::format("entry {}: key {} is smaller than the key before it, {}", position_,
                              detail::quote_key(key), detail::quote_key(previous)));
    }
    if (options_.duplicates == duplicate_policy::error) {
      throw error(errc::duplicate_key,
                  fmt::format("entry {}: duplicate key {}", position_, detail::quote_key(key)));
    }
  }

  // keep_last: an entry is held back until the next key shows that no
  // duplicate replaces it.
  void add_keep_last(std::string_view key, std::string_view value) {
    if (has_pending_) {
      const int order = detail::compare_keys(key, pending_key_);
      if (order < 0) refuse_or_drop(key, pending_key_, order);
      if (order == 0) {
        pending_value_.assign(value);
        return;
      }
      commit(pending_key_, pending_value_);
    }
    pending_key_.assign(key);
    pending_value_.assign(value);
    has_pending_ = true;
  }

  // Puts an entry into the open leaf, closing the leaf first when the entry
  // does not fit in it.
  void commit(std::string_view key, std::string_view value) {
    detail::open_page& leaf = levels_[0];
    if (leaf.fixed_layout()) {
      if (!leaf.try_append_fixed<detail::runtime_size, detail::runtime_size>(key.data(),
                                                                             value.data())) {
        start_leaf(key);
        leaf.try_append_fixed<detail::runtime_size, detail::runtime_size>(key.data(), value.data());
      }
      ++accepted_;
      return;
    }
    detail::stored_value stored{value, value.size(), 0, false};
    // Long byte-string values go to the blob file at once; the page keeps a
    // record of them, tagged with the length (see open_page::serialize).
    unsigned char external[external_record_size] = {};
    if (shape_.values == value_kind::bytes) {
      stored.heap_bytes = detail::heap_bytes_of_item(value.size(), shape_.inline_limit);
      if (value.size() > shape_.inline_limit) {
        note_size_change();
        store_le<std::uint64_t>(external, write_blob(value));
        store_le<std::uint32_t>(external + 8, crc32c(value.data(), value.size()));
        stored.bytes = std::string_view(reinterpret_cast<const char*>(external), sizeof(external));
        stored.external = true;
      }
      max_value_length_ = std::max<std::uint64_t>(max_value_length_, value.size());
    }
    if (shape_.keys == key_kind::bytes) {
      max_key_length_ = std::max<std::uint64_t>(max_key_length_, key.size());
    }
    if (!leaf.try_append(key, stored)) {
      start_leaf(key);
      leaf.try_append(key, stored);
    }
    ++accepted_;
  }

  // Closes the open leaf, which `key` does not fit in, and hands it to the
  // level above.
  [[gnu::noinline]] void start_leaf(std::string_view key) {
    note_size_change();
    detail::open_page& leaf = levels_[0];
    std::optional<std::string> separator = make_separator(leaf.last_key(), key);
    close_leaf();
    add_child(1, std::exchange(pending_separator_[0], std::move(separator)), 0);
  }

  // bytes_written() leaves out what the last entry added (its value in the
  // blob file, the pages that closed before it), as it did when every entry
  // was held back until the next add(): shard_set_builder cuts files by it,
  // and shard sets keep their boundaries.  Under keep_last entries are held
  // back, and the current size is that already.
  void note_size_change() {
    if (keep_last_ || size_before_entry_number_ == accepted_ + 1) return;
    size_before_entry_number_ = accepted_ + 1;
    size_before_entry_ = current_size();
  }

  std::string make_separator(std::string_view left_last, std::string_view right_first) const {
    if (shape_.keys != key_kind::bytes) return std::string(right_first);
    const std::size_t shared = detail::common_prefix_length(left_last, right_first);
    return std::string(right_first.substr(0, shared + 1));
  }

  void close_leaf() {
    detail::open_page& leaf = levels_[0];
    const std::uint32_t page_number = 1 + pages_in_level(0);
    // Laid out where it is written from.
    unsigned char* page = output_buffer_.extend(options_.page_size);
    leaf.serialize(page, page_number, leaf_first_rank_,
                   [this](std::string_view item) { return write_blob(item); });
    leaf_first_rank_ += leaf.count();
    if (output_buffer_.size() >= output_flush_size) flush_output();
    ++level_page_counts_[0];
    ++closed_pages_;
    leaf.clear();
  }

  void flush_output() {
    detail::write_all(staged_.fd(), output_buffer_.data(), output_buffer_.size(),
                      staged_.destination());
    output_buffer_.clear();
  }

  // Bytes after the pages, written in the pages' 2 MiB pieces, so that each
  // write still starts at a multiple of output_flush_size: `fill(to, offset,
  // piece)` puts bytes [offset, offset + piece) of the `length` at `to`.
  template <typename Fill>
  void append_in_pieces(std::uint64_t length, Fill&& fill) {
    for (std::uint64_t offset = 0; offset < length;) {
      const std::size_t piece = static_cast<std::size_t>(
          std::min<std::uint64_t>(length - offset, output_flush_size - output_buffer_.size()));
      fill(output_buffer_.extend(piece), offset, piece);
      if (output_buffer_.size() == output_flush_size) flush_output();
      offset += piece;
    }
  }
  void append_to_output(const void* bytes, std::size_t length) {
    append_in_pieces(length, [bytes](unsigned char* to, std::uint64_t offset, std::size_t piece) {
      std::memcpy(to, static_cast<const unsigned char*>(bytes) + offset, piece);
    });
  }
  void append_scratch_to_output(const detail::scratch_file& file) {
    append_in_pieces(file.length, [&](unsigned char* to, std::uint64_t offset, std::size_t piece) {
      detail::pread_all(file.fd.get(), to, piece, offset, staged_.destination());
    });
  }

  std::uint32_t pages_in_level(std::size_t level) const { return level_page_counts_[level]; }

  // A page at level - 1 was written; it becomes the next child of the open
  // page at `level`, with `separator` (absent for the first page of a level)
  // between it and the previous child.  Above level 1, `level1_right` is the
  // level-1 page the separator begins, for the directory.
  void add_child(std::size_t level, std::optional<std::string> separator,
                 std::uint32_t level1_right) {
    if (level >= max_height) {
      throw error(errc::invalid_argument,
                  fmt::format("the tree would be over {} levels high", max_height));
    }
    const std::uint32_t child_index = pages_in_level(level - 1) - 1;
    if (levels_.size() <= level) {
      levels_.emplace_back(shape_, page_kind::inner, static_cast<std::uint8_t>(level));
      first_child_[level] = child_index;
      return;  // the first page of the level below: no separator before it
    }
    detail::open_page& node = levels_[level];
    const std::uint32_t index = node.count();
    if (separator && node.try_append(*separator, detail::stored_value{})) {
      if (level >= 2 && writes_directory_) {
        directory_.add(*separator, level1_right, static_cast<std::uint32_t>(level),
                       pages_in_level(level), index);
      }
      return;
    }
    close_inner(level);
    // A separator that closed a level-1 page begins the next one.
    if (level == 1) level1_right = pages_in_level(1);
    add_child(level + 1, std::exchange(pending_separator_[level], std::move(separator)),
              std::exchange(pending_level1_right_[level], level1_right));
    first_child_[level] = child_index;
  }

  void close_inner(std::size_t level) {
    detail::open_page& node = levels_[level];
    if (inner_files_.size() < level) inner_files_.resize(level);
    auto& file = inner_files_[level - 1];
    if (!file.fd.valid()) file.fd = detail::create_anonymous_file(scratch_directory());
    // The page number is stamped when the level is appended to the output.
    node.serialize(page_buffer_.data(), 0, first_child_[level],
                   [this](std::string_view item) { return write_blob(item); });
    file.append(staged_.destination(), page_buffer_.data(), page_buffer_.size());
    ++level_page_counts_[level];
    ++closed_pages_;
    node.clear();
  }

  std::uint64_t write_blob(std::string_view item) {
    if (!blob_.fd.valid()) blob_.fd = detail::create_anonymous_file(scratch_directory());
    const std::uint64_t offset = blob_.length;
    if (item.size() >= (1u << 20)) {
      blob_.flush(staged_.destination());
      detail::write_all(blob_.fd.get(), item.data(), item.size(), staged_.destination());
      blob_.length += item.size();
    } else {
      blob_.append(staged_.destination(), item.data(), item.size());
    }
    return offset;
  }

  fs::path scratch_directory() const {
    const fs::path directory = staged_.destination().parent_path();
    return directory.empty() ? fs::path(".") : directory;
  }

  build_summary finish_checked() {
    if (has_pending_) {
      commit(pending_key_, pending_value_);
      has_pending_ = false;
    }
    // Close the path bottom-up.  A level whose open page is its first page
    // holds the root.
    close_leaf();
    std::size_t root_level = 0;
    if (pages_in_level(0) > 1) {
      add_child(1, std::exchange(pending_separator_[0], std::nullopt), 0);
      for (std::size_t level = 1;; ++level) {
        const bool is_root = pages_in_level(level) == 0;
        close_inner(level);
        if (is_root) {
          root_level = level;
          break;
        }
        add_child(level + 1, std::exchange(pending_separator_[level], std::nullopt),
                  pending_level1_right_[level]);
      }
    }

    // Inner levels, bottom-up, each page stamped with its number.
    std::array<std::uint32_t, max_height> level_first_page{};
    level_first_page[0] = 1;
    std::uint64_t next_page = 1 + std::uint64_t{pages_in_level(0)};
    for (std::size_t level = 1; level <= root_level; ++level) {
      level_first_page[level] = static_cast<std::uint32_t>(next_page);
      auto& file = inner_files_[level - 1];
      file.flush(staged_.destination());
      for (std::uint64_t index = 0; index < pages_in_level(level); ++index) {
        unsigned char* page = output_buffer_.extend(options_.page_size);
        detail::pread_all(file.fd.get(), page, options_.page_size, index * options_.page_size,
                          staged_.destination());
        store_le<std::uint32_t>(page + page::page_number_offset,
                                static_cast<std::uint32_t>(next_page));
        store_le<std::uint32_t>(page + page::checksum_offset,
                                page_checksum(page, options_.page_size));
        if (output_buffer_.size() >= output_flush_size) flush_output();
        ++next_page;
      }
      file.fd.reset();
    }
    if (next_page > 0xFFFFFFFFull) {
      throw error(errc::invalid_argument, "the index would have more than 2^32 - 1 pages");
    }
    const std::uint64_t page_count = next_page;
    std::uint64_t file_size = page_count * options_.page_size;

    // The regions after the pages continue the same 2 MiB pieces, so that
    // the blob region, as large as the pages for long values, is cached in
    // 2 MiB folios too.
    std::uint64_t blob_offset = 0;
    if (blob_.length > 0) {
      blob_.flush(staged_.destination());
      blob_offset = file_size;
      append_scratch_to_output(blob_);
      file_size += blob_.length;
      blob_.fd.reset();
    }

    std::string metadata = encode_metadata();
    std::uint64_t metadata_offset = 0;
    if (!metadata.empty()) {
      metadata_offset = file_size;
      append_to_output(metadata.data(), metadata.size());
      file_size += metadata.size();
    }

    // The directory, when the tree has levels above level 1: after zeros up
    // to a multiple of 64 bytes (format::directory::region_offset).
    detail::directory_builder::region directory;
    std::uint64_t directory_offset = 0;
    if (writes_directory_ && root_level >= 2) {
      directory = directory_.encode(level_first_page, pages_in_level(1),
                                    format::builder_head_size_for(shape_.keys, shape_.key_size));
      directory_offset = format::directory::region_offset(file_size);
      const std::string padding(directory_offset - file_size, '\0');
      append_to_output(padding.data(), padding.size());
      append_to_output(directory.bytes.data(), directory.bytes.size());
      file_size = directory_offset + directory.bytes.size();
    }
    flush_output();

    std::vector<unsigned char> header_page(options_.page_size, 0);
    unsigned char* h = header_page.data();
    std::memcpy(h + header::magic_offset, magic, sizeof(magic));
    store_le<std::uint16_t>(h + header::major_offset, format_major);
    store_le<std::uint16_t>(h + header::minor_offset, format_minor);
    store_le<std::uint32_t>(h + header::header_size_offset, header_size);
    store_le<std::uint32_t>(h + header::page_size_offset, options_.page_size);
    h[header::key_kind_offset] = static_cast<unsigned char>(shape_.keys);
    h[header::value_kind_offset] = static_cast<unsigned char>(shape_.values);
    store_le<std::uint32_t>(h + header::key_size_offset, shape_.key_size);
    store_le<std::uint32_t>(h + header::value_size_offset, shape_.value_size);
    store_le<std::uint64_t>(h + header::entry_count_offset, accepted_);
    store_le<std::uint32_t>(h + header::height_offset, static_cast<std::uint32_t>(root_level + 1));
    store_le<std::uint32_t>(h + header::root_page_offset,
                            static_cast<std::uint32_t>(page_count - 1));
    store_le<std::uint32_t>(h + header::first_leaf_page_offset, 1);
    store_le<std::uint32_t>(h + header::leaf_count_offset, pages_in_level(0));
    store_le<std::uint32_t>(h + header::page_count_offset, static_cast<std::uint32_t>(page_count));
    store_le<std::uint64_t>(h + header::blob_offset_offset, blob_offset);
    store_le<std::uint64_t>(h + header::blob_length_offset, blob_.length);
    store_le<std::uint64_t>(h + header::metadata_offset_offset, metadata_offset);
    store_le<std::uint64_t>(h + header::metadata_length_offset, metadata.size());
    store_le<std::uint32_t>(h + header::metadata_checksum_offset,
                            metadata.empty() ? 0 : crc32c(metadata.data(), metadata.size()));
    std::uint32_t flags = static_cast<std::uint32_t>(options_.duplicates)
                          << build_flag::duplicates_shift;
    if (options_.input_unsorted) flags |= build_flag::input_unsorted;
    store_le<std::uint32_t>(h + header::build_flags_offset, flags);
    store_le<std::uint32_t>(h + header::inline_limit_offset, shape_.inline_limit);
    store_le<std::uint32_t>(h + header::prefix_cap_offset, shape_.prefix_cap);
    store_le<std::uint64_t>(h + header::file_size_offset, file_size);
    if (!directory.bytes.empty()) {
      store_le<std::uint64_t>(h + header::required_features_offset, format::feature::directory);
      store_le<std::uint64_t>(h + header::directory_offset_offset, directory_offset);
      store_le<std::uint64_t>(h + header::directory_length_offset, directory.bytes.size());
      store_le<std::uint32_t>(h + header::directory_checksum_offset,
                              crc32c(directory.bytes.data(), directory.bytes.size()));
      store_le<std::uint32_t>(h + header::directory_head_size_offset, directory.head_size);
      store_le<std::uint32_t>(h + header::directory_prefix_length_offset, directory.prefix_length);
    }
    // Fixed sizes are not tracked entry by entry.
    const std::uint64_t max_key_length =
        shape_.key_size != 0 && accepted_ > 0 ? shape_.key_size : max_key_length_;
    const std::uint64_t max_value_length =
        shape_.value_size != 0 && accepted_ > 0 ? shape_.value_size : max_value_length_;
    store_le<std::uint32_t>(h + header::max_key_length_offset,
                            static_cast<std::uint32_t>(max_key_length));
    store_le<std::uint32_t>(
        h + header::max_value_length_offset,
        static_cast<std::uint32_t>(std::min<std::uint64_t>(max_value_length, 0xFFFFFFFFu)));
    for (std::size_t level = 0; level <= root_level; ++level) {
      store_le<std::uint32_t>(h + header::level_table_offset + 4 * level, level_first_page[level]);
    }
    store_le<std::uint32_t>(h + header::checksum_offset, header_checksum(h));
    detail::pwrite_all(staged_.fd(), h, header_page.size(), 0, staged_.destination());

    staged_.publish(options_.sync);
    return build_summary{accepted_, file_size, static_cast<std::uint32_t>(root_level + 1),
                         static_cast<std::uint32_t>(page_count)};
  }

  void end() noexcept {
    ended_ = true;
    entry_path_ = entry_path::general;  // so that try_add_common leaves every entry to add()
  }

  std::string encode_metadata() const {
    if (options_.metadata.empty()) return {};
    auto sorted = options_.metadata;
    std::sort(sorted.begin(), sorted.end());
    std::string block(4, '\0');
    store_le<std::uint32_t>(block.data(), static_cast<std::uint32_t>(sorted.size()));
    auto append_field = [&block](std::string_view field) {
      char length[4];
      store_le<std::uint32_t>(length, static_cast<std::uint32_t>(field.size()));
      block.append(length, 4);
      block.append(field);
    };
    for (const auto& [key, value] : sorted) {
      append_field(key);
      append_field(value);
    }
    return block;
  }

  build_options options_;
  detail::file_shape shape_;
  detail::entry_limits limits_;
  detail::staged_file staged_;
  std::vector<unsigned char> page_buffer_;  // inner pages, on their way to a scratch file
  detail::byte_buffer output_buffer_;
  std::vector<detail::open_page> levels_;
  std::array<std::uint32_t, max_height + 1> level_page_counts_{};
  std::uint64_t closed_pages_ = 0;  // the sum of level_page_counts_
  std::array<std::uint32_t, max_height + 1> first_child_{};
  std::array<std::optional<std::string>, max_height + 1> pending_separator_{};
  // Above level 1: the level-1 page each pending separator begins.
  std::array<std::uint32_t, max_height + 1> pending_level1_right_{};
  std::vector<detail::scratch_file> inner_files_;
  detail::scratch_file blob_;
  std::uint64_t leaf_first_rank_ = 0;
  std::uint64_t position_ = 0;
  std::uint64_t accepted_ = 0;
  std::uint64_t max_key_length_ = 0;    // byte-string keys only
  std::uint64_t max_value_length_ = 0;  // byte-string values only
  // What bytes_written() reports while the last entry accepted is this one.
  std::uint64_t size_before_entry_number_ = ~std::uint64_t{0};
  std::uint64_t size_before_entry_ = 0;
  bool keep_last_;
  bool writes_directory_;
  detail::directory_builder directory_;
  entry_path entry_path_ = entry_path::general;
  // keep_last: the entry held back.
  std::string pending_key_;
  std::string pending_value_;
  bool has_pending_ = false;
  // Set by finish(), abort() and a failed add(): every later add() and
  // finish() is refused.
  bool ended_ = false;
};

builder::builder(fs::path destination, build_options options) {
  validate(options);
  impl_ = std::make_unique<impl>(std::move(destination), std::move(options));
}
builder::~builder() {
  if (impl_) impl_->abort();
}
builder::builder(builder&&) noexcept = default;
builder& builder::operator=(builder&&) noexcept = default;

void builder::add(std::string_view key, std::string_view value) {
  if (!impl_->try_add_common(key, value)) impl_->add(key, value);
}
build_summary builder::finish() { return impl_->finish(); }
void builder::abort() noexcept {
  if (impl_) impl_->abort();
}
std::uint64_t builder::entries_added() const noexcept { return impl_->entries_added(); }
std::uint64_t builder::bytes_written() const noexcept { return impl_->bytes_written(); }
const fs::path& builder::destination() const noexcept { return impl_->destination(); }

void remove_temporary_files_on_signal() noexcept { detail::remove_named_temporaries(); }

}  // namespace bbtree
