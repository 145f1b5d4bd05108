// Byte-string helpers shared by the builder, the reader and the verifier.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace bbtree::detail {

// Length of the longest common prefix of a and b.
inline std::size_t common_prefix_length(std::string_view a, std::string_view b) noexcept {
  const std::size_t limit = std::min(a.size(), b.size());
  std::size_t position = 0;
  while (position + 8 <= limit) {
    std::uint64_t word_a, word_b;
    std::memcpy(&word_a, a.data() + position, 8);
    std::memcpy(&word_b, b.data() + position, 8);
    if (word_a != word_b) {
      return position + static_cast<std::size_t>(__builtin_ctzll(word_a ^ word_b) / 8);
    }
    position += 8;
  }
  while (position < limit && a[position] == b[position]) ++position;
  return position;
}

// Key order: memcmp, then the shorter first.  std::string_view::compare
// compares as unsigned char, which is exactly this.
inline int compare_keys(std::string_view a, std::string_view b) noexcept {
  const int order = a.compare(b);
  return (order > 0) - (order < 0);
}

// A printable rendering of a key for error messages: printable ASCII as is,
// everything else as \xHH, cut after `limit` bytes.
std::string quote_key(std::string_view key, std::size_t limit = 64);

}  // namespace bbtree::detail
