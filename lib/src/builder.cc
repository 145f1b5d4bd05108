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
// checksum as it goes), the blob region and the metadata, then writes the
// header and publishes the file atomically.
#include <bbtree/builder.h>

#include "file_io.h"
#include "key_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
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
using format::magic;
using format::max_fixed_size;
using format::max_height;
using format::max_key_length;
using format::max_page_size;
using format::max_value_length;
using format::min_page_size;
using format::page_checksum;
using format::page_header_size;
using format::page_kind;
using format::page_sections;
using format::slot_size;
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
  if (options.keys == key_kind::fixed && (options.key_size < 1 || options.key_size > max_fixed_size)) {
    throw error(errc::invalid_argument,
                fmt::format("fixed key size {} is outside 1..{}", options.key_size, max_fixed_size));
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
  const std::uint32_t fixed_entry = options.key_size + options.value_size + 16;
  if (2 * fixed_entry + page_header_size + 64 > options.page_size) {
    throw error(errc::invalid_argument,
                fmt::format("page size {} is too small for {}-byte keys and {}-byte values",
                            options.page_size, options.key_size, options.value_size));
  }
  for (std::size_t i = 0; i < options.metadata.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (options.metadata[i].first == options.metadata[j].first) {
        throw error(errc::invalid_argument,
                    fmt::format("metadata key {} is given twice", detail::quote_key(options.metadata[i].first)));
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
  std::uint32_t value_size;
  std::uint32_t page_size;
  std::uint32_t inline_limit;
  std::uint32_t prefix_cap;
};

// Builder policy: fixed keys get the narrowest inline width that holds their
// suffix, so that most pages never need a tie-break; byte strings get 8.
std::uint32_t choose_inline_width(const file_shape& shape, std::uint32_t prefix_length) {
  if (shape.keys == key_kind::bytes) return 8;
  const std::uint32_t suffix = shape.key_size - prefix_length;
  if (suffix <= 2) return 2;
  if (suffix <= 4) return 4;
  return 8;
}

// Bytes an item takes in the heap: itself, or its external record.
std::uint32_t heap_bytes_of_item(std::uint64_t length, std::uint32_t inline_limit) {
  if (length == 0) return 0;
  return length > inline_limit ? external_record_size : static_cast<std::uint32_t>(length);
}

// One open page: its keys (and, for leaves, values) held until it closes.
// Values of byte-string kind that are stored out of the page are already in
// the blob file; the page keeps their 16-byte external record instead.
class open_page {
 public:
  open_page(const file_shape& shape, page_kind kind, std::uint8_t level)
      : shape_(shape), kind_(kind), level_(level) {}

  std::uint32_t count() const { return static_cast<std::uint32_t>(keys_.size()); }
  bool empty() const { return keys_.empty(); }
  std::string_view key(std::size_t index) const {
    return std::string_view(arena_).substr(keys_[index].offset, keys_[index].length);
  }
  std::string_view last_key() const { return key(keys_.size() - 1); }

  // Whether the page still fits with one more entry (key, and a value whose
  // in-page size is value_heap_bytes for byte-string values).
  bool fits(std::string_view key, std::uint32_t value_heap_bytes) const {
    std::uint32_t prefix_length = prefix_length_;
    if (keys_.empty()) {
      prefix_length = std::min<std::uint32_t>(static_cast<std::uint32_t>(key.size()), shape_.prefix_cap);
    } else {
      prefix_length = std::min<std::uint32_t>(
          prefix_length, static_cast<std::uint32_t>(common_prefix_length(this->key(0), key)));
    }
    std::uint64_t heap = 0;
    if (prefix_length == prefix_length_ && !keys_.empty()) {
      heap = key_heap_bytes_ + value_heap_bytes_;
    } else {
      heap = recompute_key_heap(prefix_length) + value_heap_bytes_;
    }
    heap += key_heap_bytes(key.size(), prefix_length) + value_heap_bytes;
    return size_with(count() + 1, prefix_length, heap) <= shape_.page_size;
  }

  // `value_bytes` is the value, or its external record when value_external.
  void append(std::string_view key, std::string_view value_bytes, std::uint32_t value_heap_bytes,
              bool value_external = false, std::uint64_t value_length = 0) {
    const std::uint32_t new_prefix =
        keys_.empty() ? std::min<std::uint32_t>(static_cast<std::uint32_t>(key.size()), shape_.prefix_cap)
                      : std::min<std::uint32_t>(prefix_length_, static_cast<std::uint32_t>(
                                                                    common_prefix_length(this->key(0), key)));
    keys_.push_back({arena_.size(), static_cast<std::uint32_t>(key.size())});
    arena_.append(key);
    values_.push_back({arena_.size(), static_cast<std::uint32_t>(value_bytes.size()), value_external,
                       value_external ? value_length : value_bytes.size()});
    arena_.append(value_bytes);
    value_heap_bytes_ += value_heap_bytes;
    if (new_prefix != prefix_length_ || keys_.size() == 1) {
      prefix_length_ = new_prefix;
      key_heap_bytes_ = recompute_key_heap(prefix_length_);
    } else {
      key_heap_bytes_ += key_heap_bytes(key.size(), prefix_length_);
    }
  }

  void clear() {
    keys_.clear();
    values_.clear();
    arena_.clear();
    prefix_length_ = 0;
    key_heap_bytes_ = 0;
    value_heap_bytes_ = 0;
  }

  // Lays the page out into `page` (page_size bytes, zeroed here).  Key
  // remainders too long for the page are appended to the blob file.
  // `header_word` is first_rank for leaves, first_child for inner pages.
  template <typename BlobSink>
  void serialize(unsigned char* page, std::uint32_t page_number, std::uint64_t header_word,
                 BlobSink&& write_blob) const {
    std::memset(page, 0, shape_.page_size);
    const std::uint32_t count = this->count();
    const std::uint32_t width = choose_inline_width(shape_, prefix_length_);
    const page_sections sections = compute_sections(kind_, count, prefix_length_, width, shape_.keys,
                                                    shape_.key_size, shape_.values, shape_.value_size);
    store_le<std::uint32_t>(page + page::page_number_offset, page_number);
    page[page::kind_offset] = static_cast<unsigned char>(kind_);
    page[page::level_offset] = level_;
    page[page::inline_width_offset] = static_cast<unsigned char>(width);
    store_le<std::uint16_t>(page + page::count_offset, static_cast<std::uint16_t>(count));
    store_le<std::uint16_t>(page + page::prefix_length_offset, static_cast<std::uint16_t>(prefix_length_));
    if (kind_ == page_kind::leaf) {
      store_le<std::uint64_t>(page + page::first_rank_offset, header_word);
    } else {
      store_le<std::uint32_t>(page + page::first_child_offset, static_cast<std::uint32_t>(header_word));
    }
    if (count > 0) std::memcpy(page + sections.prefix, key(0).data(), prefix_length_);

    std::uint32_t heap = sections.heap;
    auto place_item = [&](std::string_view item, std::uint64_t external_length,
                          const unsigned char* external_record) -> std::uint32_t {
      // Returns the slot reference of an item: in the heap, or external.
      if (external_record != nullptr) {
        std::memcpy(page + heap, external_record, external_record_size);
        const std::uint32_t reference = heap | external_flag;
        heap += external_record_size;
        (void)external_length;
        return reference;
      }
      if (item.empty()) return 0;
      std::memcpy(page + heap, item.data(), item.size());
      const std::uint32_t reference = heap;
      heap += static_cast<std::uint32_t>(item.size());
      return reference;
    };

    for (std::uint32_t i = 0; i < count; ++i) {
      const std::string_view full_key = key(i);
      const std::string_view suffix = full_key.substr(prefix_length_);
      store_inline_key(page + sections.inline_keys, i, width,
                       inline_key_of(reinterpret_cast<const unsigned char*>(suffix.data()),
                                     suffix.size(), width));
      if (shape_.keys == key_kind::bytes) {
        const std::string_view remainder = suffix.size() > width ? suffix.substr(width) : std::string_view();
        std::uint32_t reference = 0;
        if (remainder.size() > shape_.inline_limit) {
          unsigned char record[external_record_size] = {};
          store_le<std::uint64_t>(record, write_blob(remainder));
          store_le<std::uint32_t>(record + 8, crc32c(remainder.data(), remainder.size()));
          reference = place_item({}, remainder.size(), record);
        } else {
          reference = place_item(remainder, 0, nullptr);
        }
        unsigned char* slot = page + sections.key_data + i * slot_size;
        store_le<std::uint32_t>(slot, static_cast<std::uint32_t>(suffix.size()));
        store_le<std::uint32_t>(slot + 4, reference);
      } else if (sections.tail_width > 0) {
        std::memcpy(page + sections.key_data + i * sections.tail_width, suffix.data() + width,
                    sections.tail_width);
      }
      if (kind_ != page_kind::leaf) continue;
      const std::string_view value = std::string_view(arena_).substr(values_[i].offset, values_[i].length);
      switch (shape_.values) {
        case value_kind::none: break;
        case value_kind::u64:
        case value_kind::fixed:
          std::memcpy(page + sections.values + i * value.size(), value.data(), value.size());
          break;
        case value_kind::bytes: {
          // The arena holds the value itself, or its external record.
          std::uint32_t reference = 0;
          const std::uint64_t length = values_[i].item_length;
          if (values_[i].external) {
            reference = place_item({}, length, reinterpret_cast<const unsigned char*>(value.data()));
          } else {
            reference = place_item(value, 0, nullptr);
          }
          unsigned char* slot = page + sections.values + i * slot_size;
          store_le<std::uint32_t>(slot, static_cast<std::uint32_t>(length));
          store_le<std::uint32_t>(slot + 4, reference);
          break;
        }
      }
    }
    store_le<std::uint32_t>(page + page::heap_end_offset, heap);
    store_le<std::uint32_t>(page + page::checksum_offset, page_checksum(page, shape_.page_size));
  }

 private:
  struct span_ref {
    std::size_t offset;
    std::uint32_t length;
    bool external = false;          // values: the arena holds an external record
    std::uint64_t item_length = 0;  // values: the value's own length
  };

  std::uint32_t key_heap_bytes(std::size_t key_length, std::uint32_t prefix_length) const {
    if (shape_.keys != key_kind::bytes) return 0;
    const std::size_t suffix = key_length - prefix_length;
    const std::uint32_t width = choose_inline_width(shape_, prefix_length);
    return suffix > width ? heap_bytes_of_item(suffix - width, shape_.inline_limit) : 0;
  }

  std::uint64_t recompute_key_heap(std::uint32_t prefix_length) const {
    std::uint64_t total = 0;
    for (const auto& ref : keys_) total += key_heap_bytes(ref.length, prefix_length);
    return total;
  }

  std::uint64_t size_with(std::uint32_t count, std::uint32_t prefix_length, std::uint64_t heap) const {
    if (count > 0xFFFF) return std::uint64_t{shape_.page_size} + 1;
    const std::uint32_t width = choose_inline_width(shape_, prefix_length);
    const page_sections sections = compute_sections(kind_, count, prefix_length, width, shape_.keys,
                                                    shape_.key_size, shape_.values, shape_.value_size);
    return sections.heap + heap;
  }

  const file_shape& shape_;
  page_kind kind_;
  std::uint8_t level_;
  std::vector<span_ref> keys_;
  std::vector<span_ref> values_;
  std::string arena_;
  std::uint32_t prefix_length_ = 0;
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
               options_.values == value_kind::u64 ? 8u
                                                  : (options_.values == value_kind::fixed ? options_.value_size : 0u),
               options_.page_size,
               default_inline_limit(options_.page_size),
               default_prefix_cap(options_.page_size)},
        staged_(std::move(destination), options_.overwrite),
        page_buffer_(options_.page_size) {
    // Page 0 is written last; reserve it.
    std::vector<unsigned char> zeros(options_.page_size, 0);
    detail::write_all(staged_.fd(), zeros.data(), zeros.size(), staged_.destination());
    // Reserved so that references to open pages survive adding levels.
    levels_.reserve(max_height + 1);
    levels_.emplace_back(shape_, page_kind::leaf, 0);
  }

  void add(std::string_view key, std::string_view value) {
    if (failed_) throw error(errc::invalid_argument, "add() after a failed add(): the build was abandoned");
    try {
      add_checked(key, value);
    } catch (...) {
      failed_ = true;
      abort();
      throw;
    }
  }

  build_summary finish() {
    if (failed_ || finished_) throw error(errc::invalid_argument, "finish() on an abandoned or finished build");
    try {
      return finish_checked();
    } catch (...) {
      failed_ = true;
      abort();
      throw;
    }
  }

  void abort() noexcept {
    staged_.discard();
    inner_files_.clear();
    blob_.fd.reset();
  }

  std::uint64_t entries_added() const noexcept { return accepted_ + (has_pending_ ? 1 : 0); }
  std::uint64_t bytes_written() const noexcept {
    std::uint64_t pages = 1;  // the header
    for (const std::uint32_t count : level_page_counts_) pages += count;
    return pages * options_.page_size + blob_.length;
  }
  const fs::path& destination() const noexcept { return staged_.destination(); }

 private:
  // A pending entry is held back until the next key shows it is not
  // followed by a duplicate that replaces it (duplicate_policy::keep_last).
  void add_checked(std::string_view key, std::string_view value) {
    ++position_;
    check_lengths(key, value);
    if (has_pending_) {
      const int order = detail::compare_keys(key, pending_key_);
      if (order < 0) {
        throw error(errc::out_of_order,
                    fmt::format("entry {}: key {} is smaller than the key before it, {}", position_,
                                detail::quote_key(key), detail::quote_key(pending_key_)));
      }
      if (order == 0) {
        switch (options_.duplicates) {
          case duplicate_policy::error:
            throw error(errc::duplicate_key, fmt::format("entry {}: duplicate key {}", position_,
                                                         detail::quote_key(key)));
          case duplicate_policy::keep_first: return;
          case duplicate_policy::keep_last: pending_value_.assign(value); return;
        }
      }
      commit_pending();
    }
    pending_key_.assign(key);
    pending_value_.assign(value);
    has_pending_ = true;
  }

  void check_lengths(std::string_view key, std::string_view value) const {
    if (shape_.key_size != 0 && key.size() != shape_.key_size) {
      throw error(errc::key_too_long, fmt::format("entry {}: key is {} bytes; this file's keys are {} bytes",
                                                  position_, key.size(), shape_.key_size));
    }
    if (key.size() > max_key_length) {
      throw error(errc::key_too_long, fmt::format("entry {}: key of {} bytes is over the limit of {}",
                                                  position_, key.size(), max_key_length));
    }
    switch (options_.values) {
      case value_kind::none:
        if (!value.empty()) {
          throw error(errc::value_too_long, fmt::format("entry {}: this file has no values", position_));
        }
        break;
      case value_kind::u64:
      case value_kind::fixed:
        if (value.size() != shape_.value_size) {
          throw error(errc::value_too_long, fmt::format("entry {}: value is {} bytes; this file's values are {} bytes",
                                                        position_, value.size(), shape_.value_size));
        }
        break;
      case value_kind::bytes:
        if (value.size() > max_value_length) {
          throw error(errc::value_too_long, fmt::format("entry {}: value of {} bytes is over the limit of {}",
                                                        position_, value.size(), max_value_length));
        }
        break;
    }
  }

  void commit_pending() {
    const std::string_view key = pending_key_;
    std::string_view value = pending_value_;
    // Long byte-string values go to the blob file at once; the page keeps a
    // record of them, tagged with the length (see open_page::serialize).
    unsigned char external[external_record_size] = {};
    std::uint32_t value_heap = 0;
    bool value_external = false;
    if (options_.values == value_kind::bytes) {
      value_heap = detail::heap_bytes_of_item(value.size(), shape_.inline_limit);
      if (value.size() > shape_.inline_limit) {
        store_le<std::uint64_t>(external, write_blob(value));
        store_le<std::uint32_t>(external + 8, crc32c(value.data(), value.size()));
        value = std::string_view(reinterpret_cast<const char*>(external), sizeof(external));
        value_external = true;
      }
    }
    detail::open_page& leaf = levels_[0];
    if (!leaf.empty() && !leaf.fits(key, value_heap)) {
      const std::string separator = make_separator(leaf.last_key(), key);
      close_leaf();
      add_child(1, std::exchange(pending_separator_[0], separator));
    }
    leaf.append(key, value, value_heap, value_external, pending_value_.size());
    ++accepted_;
    max_key_length_ = std::max<std::uint64_t>(max_key_length_, key.size());
    max_value_length_ = std::max<std::uint64_t>(max_value_length_, pending_value_.size());
    has_pending_ = false;
  }

  std::string make_separator(std::string_view left_last, std::string_view right_first) const {
    if (shape_.keys != key_kind::bytes) return std::string(right_first);
    const std::size_t shared = detail::common_prefix_length(left_last, right_first);
    return std::string(right_first.substr(0, shared + 1));
  }

  void close_leaf() {
    detail::open_page& leaf = levels_[0];
    const std::uint32_t page_number = 1 + pages_in_level(0);
    leaf.serialize(page_buffer_.data(), page_number, leaf_first_rank_,
                   [this](std::string_view item) { return write_blob(item); });
    leaf_first_rank_ += leaf.count();
    output_buffer_.append(reinterpret_cast<const char*>(page_buffer_.data()), page_buffer_.size());
    if (output_buffer_.size() >= (1u << 20)) flush_output();
    ++level_page_counts_[0];
    leaf.clear();
  }

  void flush_output() {
    detail::write_all(staged_.fd(), output_buffer_.data(), output_buffer_.size(), staged_.destination());
    output_buffer_.clear();
  }

  std::uint32_t pages_in_level(std::size_t level) const { return level_page_counts_[level]; }

  // A page at level - 1 was written; it becomes the next child of the open
  // page at `level`, with `separator` (absent for the first page of a level)
  // between it and the previous child.
  void add_child(std::size_t level, std::optional<std::string> separator) {
    if (level >= max_height) {
      throw error(errc::invalid_argument, fmt::format("the tree would be over {} levels high", max_height));
    }
    const std::uint32_t child_index = pages_in_level(level - 1) - 1;
    if (levels_.size() <= level) {
      levels_.emplace_back(shape_, page_kind::inner, static_cast<std::uint8_t>(level));
      first_child_[level] = child_index;
      return;  // the first page of the level below: no separator before it
    }
    detail::open_page& node = levels_[level];
    if (separator && node.fits(*separator, 0)) {
      node.append(*separator, {}, 0);
      return;
    }
    close_inner(level);
    add_child(level + 1, std::exchange(pending_separator_[level], std::move(separator)));
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
    if (has_pending_) commit_pending();
    // Close the path bottom-up.  A level whose open page is its first page
    // holds the root.
    close_leaf();
    std::size_t root_level = 0;
    if (pages_in_level(0) > 1) {
      add_child(1, std::exchange(pending_separator_[0], std::nullopt));
      for (std::size_t level = 1;; ++level) {
        const bool is_root = pages_in_level(level) == 0;
        close_inner(level);
        if (is_root) {
          root_level = level;
          break;
        }
        add_child(level + 1, std::exchange(pending_separator_[level], std::nullopt));
      }
    }
    flush_output();

    // Inner levels, bottom-up, each page stamped with its number.
    std::array<std::uint32_t, max_height> level_first_page{};
    level_first_page[0] = 1;
    std::uint64_t next_page = 1 + std::uint64_t{pages_in_level(0)};
    for (std::size_t level = 1; level <= root_level; ++level) {
      level_first_page[level] = static_cast<std::uint32_t>(next_page);
      auto& file = inner_files_[level - 1];
      file.flush(staged_.destination());
      for (std::uint64_t index = 0; index < pages_in_level(level); ++index) {
        detail::pread_all(file.fd.get(), page_buffer_.data(), page_buffer_.size(),
                          index * options_.page_size, staged_.destination());
        store_le<std::uint32_t>(page_buffer_.data() + page::page_number_offset,
                                static_cast<std::uint32_t>(next_page));
        store_le<std::uint32_t>(page_buffer_.data() + page::checksum_offset,
                                page_checksum(page_buffer_.data(), options_.page_size));
        output_buffer_.append(reinterpret_cast<const char*>(page_buffer_.data()), page_buffer_.size());
        if (output_buffer_.size() >= (1u << 20)) flush_output();
        ++next_page;
      }
      flush_output();
      file.fd.reset();
    }
    if (next_page > 0xFFFFFFFFull) {
      throw error(errc::invalid_argument, "the index would have more than 2^32 - 1 pages");
    }
    const std::uint64_t page_count = next_page;
    std::uint64_t file_size = page_count * options_.page_size;

    std::uint64_t blob_offset = 0;
    if (blob_.length > 0) {
      blob_.flush(staged_.destination());
      blob_offset = file_size;
      detail::append_file(staged_.fd(), staged_.destination(), blob_.fd.get(), blob_.length);
      file_size += blob_.length;
      blob_.fd.reset();
    }

    std::string metadata = encode_metadata();
    std::uint64_t metadata_offset = 0;
    if (!metadata.empty()) {
      metadata_offset = file_size;
      detail::write_all(staged_.fd(), metadata.data(), metadata.size(), staged_.destination());
      file_size += metadata.size();
    }

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
    store_le<std::uint32_t>(h + header::root_page_offset, static_cast<std::uint32_t>(page_count - 1));
    store_le<std::uint32_t>(h + header::first_leaf_page_offset, 1);
    store_le<std::uint32_t>(h + header::leaf_count_offset, pages_in_level(0));
    store_le<std::uint32_t>(h + header::page_count_offset, static_cast<std::uint32_t>(page_count));
    store_le<std::uint64_t>(h + header::blob_offset_offset, blob_offset);
    store_le<std::uint64_t>(h + header::blob_length_offset, blob_.length);
    store_le<std::uint64_t>(h + header::metadata_offset_offset, metadata_offset);
    store_le<std::uint64_t>(h + header::metadata_length_offset, metadata.size());
    store_le<std::uint32_t>(h + header::metadata_checksum_offset,
                            metadata.empty() ? 0 : crc32c(metadata.data(), metadata.size()));
    std::uint32_t flags = static_cast<std::uint32_t>(options_.duplicates) << build_flag::duplicates_shift;
    if (options_.input_unsorted) flags |= build_flag::input_unsorted;
    store_le<std::uint32_t>(h + header::build_flags_offset, flags);
    store_le<std::uint32_t>(h + header::inline_limit_offset, shape_.inline_limit);
    store_le<std::uint32_t>(h + header::prefix_cap_offset, shape_.prefix_cap);
    store_le<std::uint64_t>(h + header::file_size_offset, file_size);
    store_le<std::uint32_t>(h + header::max_key_length_offset, static_cast<std::uint32_t>(max_key_length_));
    store_le<std::uint32_t>(h + header::max_value_length_offset,
                            static_cast<std::uint32_t>(std::min<std::uint64_t>(max_value_length_, 0xFFFFFFFFu)));
    for (std::size_t level = 0; level <= root_level; ++level) {
      store_le<std::uint32_t>(h + header::level_table_offset + 4 * level, level_first_page[level]);
    }
    store_le<std::uint32_t>(h + header::checksum_offset, header_checksum(h));
    detail::pwrite_all(staged_.fd(), h, header_page.size(), 0, staged_.destination());

    staged_.publish(options_.sync);
    finished_ = true;
    return build_summary{accepted_, file_size, static_cast<std::uint32_t>(root_level + 1),
                         static_cast<std::uint32_t>(page_count)};
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
  detail::staged_file staged_;
  std::vector<unsigned char> page_buffer_;
  std::string output_buffer_;
  std::vector<detail::open_page> levels_;
  std::array<std::uint32_t, max_height + 1> level_page_counts_{};
  std::array<std::uint32_t, max_height + 1> first_child_{};
  std::array<std::optional<std::string>, max_height + 1> pending_separator_{};
  std::vector<detail::scratch_file> inner_files_;
  detail::scratch_file blob_;
  std::uint64_t leaf_first_rank_ = 0;
  std::uint64_t position_ = 0;
  std::uint64_t accepted_ = 0;
  std::uint64_t max_key_length_ = 0;
  std::uint64_t max_value_length_ = 0;
  std::string pending_key_;
  std::string pending_value_;
  bool has_pending_ = false;
  bool failed_ = false;
  bool finished_ = false;
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

void builder::add(std::string_view key, std::string_view value) { impl_->add(key, value); }
build_summary builder::finish() { return impl_->finish(); }
void builder::abort() noexcept {
  if (impl_) impl_->abort();
}
std::uint64_t builder::entries_added() const noexcept { return impl_->entries_added(); }
std::uint64_t builder::bytes_written() const noexcept { return impl_->bytes_written(); }
const fs::path& builder::destination() const noexcept { return impl_->destination(); }

}  // namespace bbtree
