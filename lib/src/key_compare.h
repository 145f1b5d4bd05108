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

// Length of the longest common prefix of a and b, eight bytes at a time.
// Words are read big-endian, so that the first differing byte is the
// word's highest differing bit on any host; the last word overlaps the one
// before it rather than falling back to single bytes.
[[gnu::always_inline]] inline std::size_t common_prefix_length(std::string_view a,
                                                               std::string_view b) noexcept {
  const std::size_t limit = std::min(a.size(), b.size());
  const auto* bytes_a = reinterpret_cast<const unsigned char*>(a.data());
  const auto* bytes_b = reinterpret_cast<const unsigned char*>(b.data());
  if (limit < 8) {
    std::size_t position = 0;
    while (position < limit && bytes_a[position] == bytes_b[position]) ++position;
    return position;
  }
  const auto differs_at = [&](std::size_t position) -> std::size_t {
    const std::uint64_t difference = format::load_be<std::uint64_t>(bytes_a + position) ^
                                     format::load_be<std::uint64_t>(bytes_b + position);
    return difference == 0 ? limit
                           : position + static_cast<std::size_t>(__builtin_clzll(difference) / 8);
  };
  for (std::size_t position = 0; position + 8 < limit; position += 8) {
    const std::size_t found = differs_at(position);
    if (found != limit) return found;
  }
  return differs_at(limit - 8);
}

// Key order: memcmp, then the shorter first.  Keys compared on a lookup's
// path are short remainders and prefixes, where a library call costs more
// than the compare (bench/RESULTS.md, "String compares").
[[gnu::always_inline]] inline int compare_keys(std::string_view a, std::string_view b) noexcept {
  const std::size_t shared = common_prefix_length(a, b);
  if (shared < a.size() && shared < b.size()) {
    return static_cast<unsigned char>(a[shared]) < static_cast<unsigned char>(b[shared]) ? -1 : 1;
  }
  return (a.size() > b.size()) - (a.size() < b.size());
}

// Where `key` falls against the keys that start with `prefix`: below them
// all (-1), above them all (1), or among them (0: it starts with `prefix`).
[[gnu::always_inline]] inline int order_against_prefix(std::string_view key,
                                                       std::string_view prefix) noexcept {
  const std::size_t shared = std::min(prefix.size(), key.size());
  if (const int order = compare_keys(key.substr(0, shared), prefix.substr(0, shared)); order != 0)
    return order;
  return key.size() < prefix.size() ? -1 : 0;
}

// A printable rendering of a key for error messages: printable ASCII as is,
// everything else as \xHH, cut after `limit` bytes.
std::string quote_key(std::string_view key, std::size_t limit = 64);

}  // namespace bbtree::detail
