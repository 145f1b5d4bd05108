// Byte-string helpers shared by the builder, the reader and the verifier.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <bbtree/format/endian.h>

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

// Key order: memcmp, then the shorter first.  Keys compared on a lookup's
// path are short remainders and prefixes, where a library call costs more
// than the compare (bench/RESULTS.md, "String compares"): eight bytes at a
// time as big-endian words, whose integer order is byte order, and memcmp
// only past 64 bytes.
inline int compare_keys(std::string_view a, std::string_view b) noexcept {
  const std::size_t limit = std::min(a.size(), b.size());
  const auto* bytes_a = reinterpret_cast<const unsigned char*>(a.data());
  const auto* bytes_b = reinterpret_cast<const unsigned char*>(b.data());
  if (limit > 64) {
    const int order = std::memcmp(bytes_a, bytes_b, limit);
    if (order != 0) return order < 0 ? -1 : 1;
  } else if (limit >= 8) {
    for (std::size_t position = 0; position + 8 < limit; position += 8) {
      const std::uint64_t word_a = format::load_be<std::uint64_t>(bytes_a + position);
      const std::uint64_t word_b = format::load_be<std::uint64_t>(bytes_b + position);
      if (word_a != word_b) return word_a < word_b ? -1 : 1;
    }
    // The last eight bytes: any overlap with the words above is equal.
    const std::uint64_t word_a = format::load_be<std::uint64_t>(bytes_a + limit - 8);
    const std::uint64_t word_b = format::load_be<std::uint64_t>(bytes_b + limit - 8);
    if (word_a != word_b) return word_a < word_b ? -1 : 1;
  } else {
    for (std::size_t position = 0; position < limit; ++position) {
      if (bytes_a[position] != bytes_b[position])
        return bytes_a[position] < bytes_b[position] ? -1 : 1;
    }
  }
  return (a.size() > b.size()) - (a.size() < b.size());
}

// A printable rendering of a key for error messages: printable ASCII as is,
// everything else as \xHH, cut after `limit` bytes.
std::string quote_key(std::string_view key, std::size_t limit = 64);

}  // namespace bbtree::detail
