// The keys and values a file of given kinds can store.  Every writer
// (builder, sorting_builder, the external sort, shard_set_builder) checks an
// entry with this
// one definition, so that each refuses the same entries, at the moment they
// are added, with the same message.
#pragma once

#include <bbtree/builder.h>

#include <cstdint>
#include <string_view>

namespace bbtree::detail {

class entry_limits {
 public:
  explicit entry_limits(const build_options& options) noexcept
      : key_size_(format::encoded_key_size(options.keys, options.key_size)),
        values_(options.values),
        value_size_(format::encoded_value_size(options.values, options.value_size)) {}

  // Fixed-size keys must be exactly this long; byte strings (0) at most
  // format::max_key_length.
  std::uint32_t key_size() const noexcept { return key_size_; }

  bool fit(std::string_view key, std::string_view value) const noexcept {
    const bool key_fits =
        key_size_ != 0 ? key.size() == key_size_ : key.size() <= format::max_key_length;
    const bool value_fits = values_ == value_kind::bytes ? value.size() <= format::max_value_length
                                                         : value.size() == value_size_;
    return key_fits && value_fits;
  }

  // Throws error(key_too_long | value_too_long), naming entry `position`
  // (counted from 1 in the order entries were added), unless the entry fits.
  void check(std::uint64_t position, std::string_view key, std::string_view value) const {
    if (!fit(key, value)) [[unlikely]]
      throw_if_unfit(position, key, value);
  }

  // check() without the inline test, for a caller that has found the entry
  // unfit by a test of its own.  Out of line: the throwing is cold.
  [[gnu::cold, gnu::noinline]] void throw_if_unfit(std::uint64_t position, std::string_view key,
                                                   std::string_view value) const;

 private:
  std::uint32_t key_size_;
  value_kind values_;
  std::uint32_t value_size_;  // 0 for no values and for byte strings
};

}  // namespace bbtree::detail
