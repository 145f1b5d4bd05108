// A typed view of an index: keys and values as C++ types instead of their
// encoded bytes.
//
//   Key                                  file key kind
//   std::uint64_t                        u64
//   std::int64_t                         i64
//   std::array<unsigned char, N>         fixed:N
//   std::string_view                     bytes
//
//   Value                                file value kind
//   bbtree::no_value                     none
//   std::uint64_t                        u64
//   std::array<unsigned char, N>         fixed:N
//   std::string_view                     bytes, or fixed of any size
//
// Opening a view whose types differ from the file's throws
// error(type_mismatch).  Lookups throw what reader's throw.  A string_view
// key from an iterator is valid until that iterator moves; a string_view
// value is valid while the index is open.
//
//   auto index = bbtree::typed_index<std::uint64_t, std::uint64_t>::open("ids.bbt");
//   if (auto value = index.get(42)) use(*value);
//   for (auto [key, value] : index.range(bbtree::from(10), bbtree::before(20))) ...
//
// (A bound's key converts to the view's key type: see typed_bound.)
//
// The third parameter is the index read: reader by default, or
// sharded_reader for a shard set (shards.h: typed_shard_set).
//
// Thread safety: as reader; an iterator is used by one thread at a time.
#pragma once

#include <bbtree/key_codec.h>
#include <bbtree/reader.h>

#include <array>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace bbtree {

struct no_value {
  friend bool operator==(no_value, no_value) { return true; }
};

namespace detail {

template <typename T>
struct is_byte_array : std::false_type {};
template <std::size_t N>
struct is_byte_array<std::array<unsigned char, N>> : std::true_type {};

// Encoded key bytes held by value, so that a temporary key can be passed on.
template <typename Key>
struct encoded_key {
  std::conditional_t<std::is_same_v<Key, std::string_view>, std::string_view, encoded_word> storage;
  std::string_view view() const {
    if constexpr (std::is_same_v<Key, std::string_view>) {
      return storage;
    } else {
      return storage.view();
    }
  }
};

template <std::size_t N>
struct encoded_key<std::array<unsigned char, N>> {
  std::array<unsigned char, N> storage;
  std::string_view view() const { return {reinterpret_cast<const char*>(storage.data()), N}; }
};

template <typename Key>
struct key_traits {
  static_assert(
      sizeof(Key) == 0,
      "keys are std::uint64_t, std::int64_t, std::array<unsigned char, N> or std::string_view");
};

template <>
struct key_traits<std::uint64_t> {
  static bool matches(const file_info& info) { return info.keys == key_kind::u64; }
  static encoded_key<std::uint64_t> encode(std::uint64_t key) { return {u64_key(key)}; }
  static std::uint64_t decode(std::string_view bytes) { return decode_u64_key(bytes); }
};

template <>
struct key_traits<std::int64_t> {
  static bool matches(const file_info& info) { return info.keys == key_kind::i64; }
  static encoded_key<std::int64_t> encode(std::int64_t key) { return {i64_key(key)}; }
  static std::int64_t decode(std::string_view bytes) { return decode_i64_key(bytes); }
};

template <std::size_t N>
struct key_traits<std::array<unsigned char, N>> {
  static bool matches(const file_info& info) {
    return info.keys == key_kind::fixed && info.key_size == N;
  }
  static encoded_key<std::array<unsigned char, N>> encode(const std::array<unsigned char, N>& key) {
    return {key};
  }
  static std::array<unsigned char, N> decode(std::string_view bytes) {
    std::array<unsigned char, N> key{};
    std::memcpy(key.data(), bytes.data(), N);
    return key;
  }
};

template <>
struct key_traits<std::string_view> {
  static bool matches(const file_info& info) { return info.keys == key_kind::bytes; }
  static encoded_key<std::string_view> encode(std::string_view key) { return {key}; }
  static std::string_view decode(std::string_view bytes) { return bytes; }
};

template <typename Value>
struct value_traits {
  static_assert(sizeof(Value) == 0,
                "values are bbtree::no_value, std::uint64_t, std::array<unsigned char, N> or "
                "std::string_view");
};

template <>
struct value_traits<no_value> {
  static bool matches(const file_info& info) { return info.values == value_kind::none; }
  static no_value decode(std::string_view) { return {}; }
};

template <>
struct value_traits<std::uint64_t> {
  static bool matches(const file_info& info) { return info.values == value_kind::u64; }
  static std::uint64_t decode(std::string_view bytes) { return decode_u64_value(bytes); }
};

template <std::size_t N>
struct value_traits<std::array<unsigned char, N>> {
  static bool matches(const file_info& info) {
    return info.values == value_kind::fixed && info.value_size == N;
  }
  static std::array<unsigned char, N> decode(std::string_view bytes) {
    std::array<unsigned char, N> value{};
    std::memcpy(value.data(), bytes.data(), N);
    return value;
  }
};

template <>
struct value_traits<std::string_view> {
  static bool matches(const file_info& info) {
    return info.values == value_kind::bytes || info.values == value_kind::fixed;
  }
  static std::string_view decode(std::string_view bytes) { return bytes; }
};

}  // namespace detail

// A typed range bound: bbtree::from(k) and bbtree::to(k) are inclusive,
// bbtree::after(k) and bbtree::before(k) exclusive, bbtree::unbounded open.
//
// A bound's type is deduced from its key, so `from(10)` is a bound of int
// and `from("a")` one of const char*.  They convert to the view's key type:
// an integer to another integer type when its value is in that type's range
// (else error(invalid_argument): -1 is no u64 key, and wrapping it to
// 2^64 - 1 would give another range), and a C string to std::string_view.
template <typename Key>
struct typed_bound {
  bound::kind type = bound::kind::unbounded;
  Key key{};

  template <typename Other>
  requires(std::integral<Key>&& std::integral<Other> && !std::same_as<Key, Other> &&
           !std::same_as<Key, bool> && !std::same_as<Other, bool>)
  operator typed_bound<Other>() const {
    if (!std::in_range<Other>(key))
      throw error(errc::invalid_argument, "range bound " + std::to_string(key) +
                                              " is outside the range of the index's key type");
    return {type, static_cast<Other>(key)};
  }

  template <typename Other>
  requires(std::same_as<Key, const char*>&& std::same_as<Other, std::string_view>)
  operator typed_bound<Other>() const {
    return {type, std::string_view(key)};
  }
};

struct unbounded_t {
  template <typename Key>
  operator typed_bound<Key>() const {
    return {};
  }
};
inline constexpr unbounded_t unbounded{};

template <typename Key>
typed_bound<Key> from(Key key) {
  return {bound::kind::inclusive, key};
}
template <typename Key>
typed_bound<Key> to(Key key) {
  return {bound::kind::inclusive, key};
}
template <typename Key>
typed_bound<Key> after(Key key) {
  return {bound::kind::exclusive, key};
}
template <typename Key>
typed_bound<Key> before(Key key) {
  return {bound::kind::exclusive, key};
}

template <typename Key, typename Value = std::string_view, typename Index = reader>
class typed_index {
  using key_traits = detail::key_traits<Key>;
  using value_traits = detail::value_traits<Value>;

 public:
  class iterator {
   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = std::pair<Key, Value>;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = value_type;

    iterator() = default;
    explicit iterator(cursor position) : position_(std::move(position)) {}

    Key key() const { return key_traits::decode(position_.key()); }
    Value value() const { return value_traits::decode(position_.value()); }
    value_type operator*() const { return {key(), value()}; }
    std::uint64_t rank() const { return position_.rank(); }
    bool is_end() const { return position_.is_end(); }
    const cursor& raw() const { return position_; }

    iterator& operator++() {
      ++position_;
      return *this;
    }
    iterator operator++(int) {
      iterator before = *this;
      ++position_;
      return before;
    }
    iterator& operator--() {
      --position_;
      return *this;
    }
    iterator operator--(int) {
      iterator before = *this;
      --position_;
      return before;
    }
    friend bool operator==(const iterator& a, const iterator& b) {
      return a.position_ == b.position_;
    }

   private:
    cursor position_;
  };

  // An entry as a walk passes it (entry_ref): key() and value() decode
  // only when asked for.
  class walk_entry {
   public:
    explicit walk_entry(const entry_ref& raw) : raw_(raw) {}
    Key key() const { return key_traits::decode(raw_.key()); }
    Value value() const { return value_traits::decode(raw_.value()); }
    const entry_ref& raw() const { return raw_; }

   private:
    const entry_ref& raw_;
  };

  class range_view {
   public:
    range_view(iterator first, iterator last) : first_(std::move(first)), last_(std::move(last)) {}
    iterator begin() const { return first_; }
    iterator end() const { return last_; }
    bool empty() const { return first_ == last_; }
    // Calls each(const walk_entry&) at every entry of the range, in order; a
    // bool that `each` returns stops the walk when false
    // (cursor::for_each_until).
    template <class F>
    [[gnu::always_inline]] void for_each(F&& each) const {
      entry_range(first_.raw(), last_.raw()).for_each(typed_walk(each));
    }

   private:
    iterator first_;
    iterator last_;
  };

  explicit typed_index(Index index) : index_(std::move(index)) {
    if (!key_traits::matches(index_.info()) || !value_traits::matches(index_.info())) {
      throw error(errc::type_mismatch,
                  index_.name() + ": the file's key or value kind differs from the view's types");
    }
  }

  // Any path Index::open takes: a std::filesystem::path, or a string, which
  // reader::open takes as it is.
  template <class Path>
  requires std::constructible_from<std::filesystem::path, const Path&>
  static typed_index open(const Path& path, const open_options& options = {}) {
    return typed_index(Index::open(path, options));
  }

  const Index& raw() const noexcept { return index_; }
  std::uint64_t size() const noexcept { return index_.size(); }
  bool empty() const noexcept { return index_.empty(); }

  std::optional<Value> get(const Key& key) const {
    const auto value = index_.get(key_traits::encode(key).view());
    if (!value) return std::nullopt;
    return value_traits::decode(*value);
  }
  bool contains(const Key& key) const { return index_.contains(key_traits::encode(key).view()); }
  iterator find(const Key& key) const {
    return iterator(index_.find(key_traits::encode(key).view()));
  }
  iterator lower_bound(const Key& key) const {
    return iterator(index_.lower_bound(key_traits::encode(key).view()));
  }
  iterator upper_bound(const Key& key) const {
    return iterator(index_.upper_bound(key_traits::encode(key).view()));
  }
  range_view equal_range(const Key& key) const {
    const entry_range equal = index_.equal_range(key_traits::encode(key).view());
    return {iterator(equal.begin()), iterator(equal.end())};
  }
  iterator begin() const { return iterator(index_.begin()); }
  iterator end() const { return iterator(index_.end()); }
  // Calls each(const walk_entry&) at every entry, in key order; a bool
  // that `each` returns stops the walk when false (cursor::for_each_until).
  template <class F>
  [[gnu::always_inline]] void for_each(F&& each) const {
    index_.for_each(typed_walk(each));
  }
  // The first and last entries; end() when the index is empty.
  iterator first() const { return begin(); }
  iterator last() const {
    cursor last = index_.end();
    --last;
    return iterator(std::move(last));
  }

  range_view range(typed_bound<Key> from, typed_bound<Key> to) const {
    const auto from_key = key_traits::encode(from.key);
    const auto to_key = key_traits::encode(to.key);
    const entry_range found =
        index_.range(bound{from.type, from_key.view()}, bound{to.type, to_key.view()});
    return {iterator(found.begin()), iterator(found.end())};
  }

  range_view prefix(std::string_view prefix) const requires std::is_same_v<Key, std::string_view> {
    const entry_range found = index_.prefix(prefix);
    return {iterator(found.begin()), iterator(found.end())};
  }

  std::uint64_t count(typed_bound<Key> from, typed_bound<Key> to) const {
    const auto from_key = key_traits::encode(from.key);
    const auto to_key = key_traits::encode(to.key);
    return index_.count(bound{from.type, from_key.view()}, bound{to.type, to_key.view()});
  }
  std::uint64_t rank(const Key& key) const { return index_.rank(key_traits::encode(key).view()); }
  iterator at(std::uint64_t rank) const { return iterator(index_.at(rank)); }

  // The batched lookup; out.size() must equal keys.size().
  std::size_t get_many(std::span<const Key> keys, std::span<std::optional<Value>> out) const {
    if (out.size() != keys.size())
      throw error(errc::invalid_argument, "get_many: keys and out differ in size");
    std::vector<detail::encoded_key<Key>> encoded;
    encoded.reserve(keys.size());
    std::vector<std::string_view> views;
    views.reserve(keys.size());
    for (const Key& key : keys) encoded.push_back(key_traits::encode(key));
    for (const auto& key : encoded) views.push_back(key.view());
    std::vector<std::optional<std::string_view>> raw(keys.size());
    const std::size_t found = index_.get_many(views, raw);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      out[i] = raw[i] ? std::optional<Value>(value_traits::decode(*raw[i])) : std::nullopt;
    }
    return found;
  }

 private:
  // A callback for a raw walk that hands each entry to `each` as a
  // walk_entry, and returns what `each` returns (a bool stops the walk).
  template <class F>
  static auto typed_walk(F& each) {
    return [&each](const entry_ref& raw) -> decltype(auto) { return each(walk_entry(raw)); };
  }

  Index index_;
};

}  // namespace bbtree
