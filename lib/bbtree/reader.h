// Reading index files.
//
// reader::open maps a file read-only (Boost.Interprocess) or copies it into
// 2 MiB-aligned anonymous memory; reader::from_memory reads a caller's
// bytes in place, at any address.  Opening checks the header; queries check
// every offset they follow, so that no file, however corrupt, makes a
// reader crash, read outside its bytes or loop: a damaged page gives
// error(corrupt) or a wrong but safe answer until bbtree::verify finds it.
//
// Keys and values are in their encoded form (key_codec.h); typed.h wraps
// this interface for each key and value type.
//
// Thread safety: a reader is immutable after open; any number of threads may
// query one reader at once.  A cursor is used by one thread at a time.
#pragma once

#include <bbtree/detail/page_view.h>
#include <bbtree/error.h>
#include <bbtree/format/layout.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace bbtree {

using format::key_kind;
using format::value_kind;

enum class memory_mode {
  // A read-only file mapping.  Where the page cache holds the file in 2 MiB
  // folios (ext4 since Linux 6.16 keeps a file that the builder wrote so),
  // the kernel maps them with 2 MiB entries on its own.
  map,
  // The same, advised with MADV_HUGEPAGE, so that pages read into the cache
  // through the mapping come in 2 MiB folios too.
  map_huge_pages,
  copy_huge_pages,  // a copy in 2 MiB-aligned anonymous memory advised for huge pages
  // A file mapping at once, so that the first lookup needs no copy; a
  // background thread copies the file as copy_huge_pages does and then
  // moves the copy over the mapping, at the same address, while lookups
  // go on.  reader::wait_for_huge_page_copy() waits for it.  The copy is a
  // thread: a child forked while it runs must not close the reader (the
  // close joins a thread that the child does not have); wait first.
  map_then_copy_huge_pages,
};

enum class access_advice { normal, random, sequential };

struct open_options {
  memory_mode memory = memory_mode::map;
  bool populate = false;  // fault every page in at open
  access_advice advice = access_advice::normal;
};

struct file_info {
  std::uint16_t major_version = 0;
  std::uint16_t minor_version = 0;
  std::uint64_t required_features = 0;
  std::uint64_t optional_features = 0;
  std::uint32_t page_size = 0;
  key_kind keys = key_kind::bytes;
  std::uint32_t key_size = 0;
  value_kind values = value_kind::none;
  std::uint32_t value_size = 0;
  std::uint64_t entries = 0;
  std::uint32_t height = 0;
  std::uint32_t root_page = 0;
  std::uint32_t leaf_count = 0;
  std::uint32_t page_count = 0;
  std::uint64_t blob_offset = 0;
  std::uint64_t blob_length = 0;
  std::uint64_t metadata_offset = 0;
  std::uint64_t metadata_length = 0;
  std::uint32_t build_flags = 0;
  std::uint32_t inline_limit = 0;
  std::uint32_t prefix_cap = 0;
  std::uint64_t file_size = 0;
  std::uint32_t max_key_length = 0;
  std::uint32_t max_value_length = 0;
  // The directory region (format 1.2); all 0 when the file has none.
  std::uint64_t directory_offset = 0;
  std::uint64_t directory_length = 0;
  std::uint32_t directory_checksum = 0;
  std::uint32_t directory_head_size = 0;
  std::uint32_t directory_prefix_length = 0;
};

// One end of a key range.
struct bound {
  enum class kind : std::uint8_t { unbounded, inclusive, exclusive };
  kind type = kind::unbounded;
  std::string_view key;

  static bound none() noexcept { return {}; }
  static bound inclusive(std::string_view key) noexcept { return {kind::inclusive, key}; }
  static bound exclusive(std::string_view key) noexcept { return {kind::exclusive, key}; }
};

namespace detail {
class reader_core;
class shard_set;
}  // namespace detail

struct entry_view {
  std::string_view key;
  std::string_view value;
};

// An entry whose key is owned: keys are assembled from a page's prefix and
// suffix, so a key outlives the cursor that read it only as a copy.
struct entry {
  std::string key;
  std::string_view value;  // valid while the reader is open
};

class cursor;

// An entry as a walk (cursor::for_each_until) passes it: its key and value
// are read only when asked for.
class entry_ref {
 public:
  // Valid until the next key() of the same walk, and not after the walk.
  std::string_view key() const;
  // Valid while the reader is open.
  std::string_view value() const;

 private:
  friend class cursor;
  entry_ref(const cursor* walker, std::uint32_t index, const unsigned char* fixed_value,
            std::uint32_t value_size) noexcept
      : walker_(walker), index_(index), fixed_value_(fixed_value), value_size_(value_size) {}

  const cursor* walker_;  // the walking cursor, at the entry's leaf
  std::uint32_t index_;   // the entry in that leaf
  // The value when values have a fixed size (u64, fixed or none), else null.
  const unsigned char* fixed_value_;
  std::uint32_t value_size_;
};

// A position in the index: an entry, or the end.  Bidirectional; moving
// past either end is undefined only in the sense of the standard iterator
// rules: it is checked and leaves the cursor at end().
//
// A cursor of a shard set (shards.h) is the same type: it moves from the
// last entry of one shard to the first of the next and back, and its rank
// counts the entries of the shards before its own.  Crossing costs one
// branch when a cursor reaches the end of its file, nothing before.
class cursor {
 public:
  using iterator_category = std::bidirectional_iterator_tag;
  using value_type = entry_view;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = entry_view;

  cursor() = default;

  bool is_end() const noexcept { return leaf_page_.bytes == nullptr; }
  // The encoded key; valid until this cursor moves or is destroyed.
  std::string_view key() const;
  // The encoded value; valid while the reader is open.
  std::string_view value() const {
    // Fixed-size values (and none) are an array in the leaf, which page()
    // checked lies inside it: no decoding and no further check.
    if (fixed_values_ != nullptr) {
      return {reinterpret_cast<const char*>(fixed_values_ + std::size_t{index_} * value_size_),
              value_size_};
    }
    return variable_value();
  }
  // The number of entries before this one (size() at the end).
  std::uint64_t rank() const noexcept;

  entry_view operator*() const { return {key(), value()}; }
  // Within a leaf, a step is an increment: the leaf's header was decoded
  // and checked when the cursor arrived at it.  A step into a damaged leaf
  // throws error(corrupt) and leaves the cursor where it was.
  cursor& operator++() {
    if (index_ + 1 < leaf_page_.count) {  // count is 0 at the end
      ++index_;
      return *this;
    }
    return step_to_next_leaf();
  }
  cursor operator++(int) {
    cursor before = *this;
    ++*this;
    return before;
  }
  cursor& operator--() {
    if (leaf_page_.bytes != nullptr && index_ > 0) {
      --index_;
      return *this;
    }
    return step_to_previous_leaf();
  }
  cursor operator--(int) {
    cursor before = *this;
    --*this;
    return before;
  }
  friend bool operator==(const cursor& a, const cursor& b) noexcept {
    return a.core_ == b.core_ && a.leaf_ == b.leaf_ && a.index_ == b.index_;
  }

  // Calls each(const entry_ref&) at every entry from this one up to
  // `last`, in order, and leaves this cursor at `last`.  When `each`
  // returns a bool, false stops the walk, with this cursor at the entry it
  // was called at; an exception from `each` leaves it at an entry of the
  // walk at or before that one.  `last` is this cursor's end or an entry at
  // or after this one, as the ends of an entry_range are.
  //
  // The same as `for (; *this != last; ++*this) each(*this);`, and faster
  // on long walks: a cursor that steps itself keeps its place in memory,
  // and its value() recomputes the address from it; a walk keeps both in
  // registers and steps the value's address (bench/RESULTS.md, "Walks").
  template <class F>
  [[gnu::always_inline]] void for_each_until(const cursor& last, F&& each);

 private:
  friend class detail::reader_core;
  friend class detail::shard_set;
  // At entry `index` of leaf `leaf`.  `decoded`, when its bytes are set, is
  // that leaf as the caller has just decoded it (index < decoded.count),
  // so that the cursor need not decode it again.
  cursor(const detail::reader_core* core, std::uint32_t leaf, std::uint32_t index,
         const detail::page_view& decoded = {})
      : core_(core), leaf_(leaf), index_(index) {
    start_at(decoded);
  }
  cursor(const detail::reader_core* core, std::uint32_t leaf, std::uint32_t index,
         const detail::shard_set* set, std::uint32_t shard, const detail::page_view& decoded = {})
      : core_(core), leaf_(leaf), index_(index), set_(set), shard_(shard) {
    start_at(decoded);
  }
  void start_at(const detail::page_view& decoded) {
    if (decoded.bytes != nullptr) {
      adopt_leaf(decoded);
    } else {
      load_leaf();
    }
  }

  // Decodes leaf_ into leaf_page_, or leaves it (leave_leaf) at the end:
  // called whenever core_ or leaf_ changes.
  void load_leaf();
  // At the end: leaf_page_'s bytes null and its count 0, fixed_values_ null.
  void leave_leaf() noexcept;
  // Makes `leaf`, page leaf_ decoded and checked, the current leaf.
  void adopt_leaf(const detail::page_view& leaf);
  cursor& step_to_next_leaf();
  cursor& step_to_previous_leaf();
  // Runs `cross`, which moves the cursor to another leaf; if it throws,
  // puts the cursor back where it was (lib/src/reader.cc only).
  template <class Cross>
  void cross_or_stay(Cross&& cross);
  std::string_view variable_value() const;
  // key() and value() of entry `index` of the current leaf.
  std::string_view key_at(std::uint32_t index) const;
  std::string_view variable_value_at(std::uint32_t index) const;
  friend class entry_ref;
  // At the end of a shard that is not the set's last: moves to the next
  // shard's first entry (lib/src/shards.cc).
  void enter_next_shard();
  // Moved before the first entry of its shard: moves to the previous
  // shard's last entry, or to the set's end from the first shard.
  void enter_previous_shard();
  // The entries in the shards before this cursor's.
  std::uint64_t entries_before_shard() const noexcept;

  const detail::reader_core* core_ = nullptr;  // the file; in a set, the shard's
  std::uint32_t leaf_ = 0;   // leaf page number; one past the last leaf at the end
  std::uint32_t index_ = 0;  // entry within the leaf; 0 at the end
  // The shard set the cursor moves through, or null for a single file.
  // The set's end is the end of its last shard; a cursor never rests at the
  // end of another shard.
  const detail::shard_set* set_ = nullptr;
  std::uint32_t shard_ = 0;
  // Invariant: leaf_page_ is page leaf_ of core_, decoded and checked,
  // whenever the cursor is at an entry; at the end its bytes are null and
  // its count 0, and its other fields mean nothing.
  detail::page_view leaf_page_{};
  // The leaf's value array when values have a fixed size (u64, fixed or
  // none), else null; null at the end.
  const unsigned char* fixed_values_ = nullptr;
  std::uint32_t value_size_ = 0;
  mutable std::string key_buffer_;
  mutable char integer_key_[8] = {};  // key() of keys of at most eight bytes
};

inline std::string_view entry_ref::key() const { return walker_->key_at(index_); }

inline std::string_view entry_ref::value() const {
  if (fixed_value_ != nullptr) return {reinterpret_cast<const char*>(fixed_value_), value_size_};
  return walker_->variable_value_at(index_);
}

template <class F>
[[gnu::always_inline]] inline void cursor::for_each_until(const cursor& last, F&& each) {
  // One entry; false when `each` stops the walk.
  const auto visit = [&each](const entry_ref& entry) {
    if constexpr (std::is_convertible_v<std::invoke_result_t<F&, const entry_ref&>, bool>) {
      return static_cast<bool>(each(entry));
    } else {
      each(entry);
      return true;
    }
  };
  while (!is_end()) {
    const bool last_in_leaf = last.core_ == core_ && last.leaf_ == leaf_;
    const std::uint32_t stop = last_in_leaf ? last.index_ : leaf_page_.count;
    std::uint32_t index = index_;
    if (fixed_values_ != nullptr) {
      const std::uint32_t size = value_size_;
      const unsigned char* value = fixed_values_ + std::size_t{index} * size;
#pragma GCC unroll 4
      for (; index < stop; ++index, value += size) {
        if (!visit(entry_ref(this, index, value, size))) break;
      }
    } else {
      for (; index < stop; ++index) {
        if (!visit(entry_ref(this, index, nullptr, 0))) break;
      }
    }
    if (index < stop || last_in_leaf) {
      index_ = index;
      return;
    }
    // After the leaf's last entry: the next leaf's first.
    index_ = leaf_page_.count - 1;
    step_to_next_leaf();
  }
}

class entry_range {
 public:
  entry_range(cursor first, cursor last) : first_(std::move(first)), last_(std::move(last)) {}
  const cursor& begin() const noexcept { return first_; }
  const cursor& end() const noexcept { return last_; }
  bool empty() const noexcept { return first_ == last_; }
  // Calls each(const entry_ref&) at every entry of the range, in order; a
  // bool that `each` returns stops the walk when false
  // (cursor::for_each_until).
  template <class F>
  [[gnu::always_inline]] void for_each(F&& each) const {
    cursor at = first_;
    at.for_each_until(last_, std::forward<F>(each));
  }

 private:
  cursor first_;
  cursor last_;
};

class reader {
 public:
  // Maps `path` (or copies it, as options.memory says).  Throws
  // error(not_bbtree | newer_version | unsupported_feature | truncated |
  // trailing_data | corrupt_header | io_error), each naming the file.
  //
  // A mapped file must be replaced by rename, as the builder does, never
  // rewritten in place: `cp new.bbt live.bbt` truncates the file that
  // readers have mapped, and a reader that then touches a page past the
  // new end dies of SIGBUS (one within it reads the new bytes against the
  // old header).  The checks above cannot help: the kernel raises the
  // signal on the load.  A rename leaves open readers on the old file.
  // copy_huge_pages reads the file only at open, and
  // map_then_copy_huge_pages only until its copy is in place
  // (wait_for_huge_page_copy), so neither is exposed after that.
  static reader open(const std::filesystem::path& path, const open_options& options = {});
  // The same for a path held in a string: no std::filesystem::path is
  // built, whose parse of the path runs library code that a fresh process
  // pays a page fault for, a tenth of the time to its first answer
  // (bench/RESULTS.md, "The first answer without a path parse").
  static reader open(const std::string& path, const open_options& options = {});
  static reader open(const char* path, const open_options& options = {});
  // Reads `bytes` in place; the caller keeps them alive and unchanged while
  // the reader and its cursors are in use.  `name` appears in errors.
  static reader from_memory(std::span<const std::byte> bytes, std::string name = "<memory>");

  reader(reader&&) noexcept;
  reader& operator=(reader&&) noexcept;
  ~reader();

  const file_info& info() const noexcept;
  const std::string& name() const noexcept;
  std::uint64_t size() const noexcept;
  bool empty() const noexcept { return size() == 0; }
  // The user metadata recorded by the builder, in key order.
  std::vector<std::pair<std::string, std::string>> metadata() const;
  // The bytes being read: the mapping or the copy.
  std::span<const std::byte> bytes() const noexcept;
  // Whether the bytes are an anonymous copy (copy_huge_pages at once,
  // map_then_copy_huge_pages once the copy is in place).  For
  // map_then_copy_huge_pages this first waits for the background copy; it
  // returns false if the copy gave up (no memory, a read error), and the
  // file mapping then goes on serving.  Never waits in the other modes.
  bool wait_for_huge_page_copy() const;

  cursor begin() const;
  cursor end() const;
  // Calls each(const entry_ref&) at every entry, in key order; a bool
  // that `each` returns stops the walk when false (cursor::for_each_until).
  template <class F>
  [[gnu::always_inline]] void for_each(F&& each) const {
    begin().for_each_until(end(), std::forward<F>(each));
  }
  std::optional<entry> first() const;
  std::optional<entry> last() const;

  std::optional<std::string_view> get(std::string_view key) const;
  bool contains(std::string_view key) const { return get(key).has_value(); }
  cursor find(std::string_view key) const;
  cursor lower_bound(std::string_view key) const;  // first entry >= key
  cursor upper_bound(std::string_view key) const;  // first entry > key
  entry_range equal_range(std::string_view key) const;
  entry_range range(bound from, bound to) const;
  // Byte-string keys that start with `prefix` (any key kind: bytewise).
  entry_range prefix(std::string_view prefix) const;

  // Entries before `key` (lower_bound's rank); O(height).
  std::uint64_t rank(std::string_view key) const;
  // Entries within the bounds; O(height).
  std::uint64_t count(bound from, bound to) const;
  // The entry of rank `rank` (end() when rank >= size()); O(log n).
  cursor at(std::uint64_t rank) const;

  // Looks up every key, descending the tree for all of them one level at a
  // time and prefetching each key's next page, so that cache misses overlap.
  // out[i] receives the value of keys[i], or nullopt.  Returns how many were
  // found.  out.size() must equal keys.size().
  std::size_t get_many(std::span<const std::string_view> keys,
                       std::span<std::optional<std::string_view>> out) const;

  // The internals, for tests, the verifier and the dump tool.
  const detail::reader_core& core() const noexcept { return *core_; }

 private:
  explicit reader(std::unique_ptr<detail::reader_core> core);
  // Every open: `path` as the system calls take it, `name` as errors give it.
  static reader open_file(const char* path, std::string name, const open_options& options);
  std::unique_ptr<detail::reader_core> core_;
};

}  // namespace bbtree
