// The benchmark's datasets: generated from a fixed seed, held in memory in
// key order (bytewise order of the encoded keys), with the queries and the
// answers every peer must give.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <xxhash.h>

namespace bbtree::bench {

// The three shapes of data.  Keys are handed to peers in encoded form: u64
// keys as 8 big-endian bytes (so that bytewise order is numeric order, as
// in bbtree), fixed keys as 16 raw bytes, strings as themselves.  Values of
// u64 and fix16 datasets are u64 (8 little-endian bytes); values of str
// datasets are byte strings.
enum class data_kind { u64, fix16, str };

const char* to_string(data_kind kind) noexcept;
bool parse_kind(std::string_view text, data_kind& kind) noexcept;

inline std::uint64_t load_be64(const void* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}
inline void store_be64(void* p, std::uint64_t v) noexcept {
  v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}
inline std::uint64_t load_le64(const void* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// What a peer returns for a found value, summed into a checksum: the value
// itself for u64 values, XXH3 of the bytes otherwise.  Every peer pays the
// same cost for it.
template <data_kind K>
inline std::uint64_t value_digest(const void* data, std::size_t size) noexcept {
  if constexpr (K == data_kind::str) {
    return XXH3_64bits(data, size);
  } else {
    (void)size;
    return load_le64(data);
  }
}

struct dataset_spec {
  std::string name;  // e.g. "u64-1M"
  data_kind kind = data_kind::u64;
  std::size_t entries = 0;
};

struct dataset {
  dataset_spec spec;
  std::string key_arena;
  std::string value_arena;
  std::vector<std::string_view> keys;    // encoded, ascending
  std::vector<std::string_view> values;  // values[i] belongs to keys[i]
  std::vector<std::uint64_t> digests;    // value_digest of values[i]
  std::vector<std::uint64_t> prefix;     // prefix[i] = sum of digests[0, i)
  std::vector<std::uint32_t> unsorted;   // a fixed-seed permutation: the "unsorted input" order

  // Queries.  Hits are existing keys in shuffled order; misses are absent
  // keys (for strings: neighbours of existing keys, sharing their prefix).
  std::string hit_arena;
  std::vector<std::string_view> hits;
  std::uint64_t hits_digest = 0;
  std::string miss_arena;
  std::vector<std::string_view> misses;
  // Scans: start at scan_starts[i] (an existing key), read scan_length entries.
  std::size_t scan_length = 100;
  std::string scan_start_arena;
  std::vector<std::string_view> scan_starts;
  std::uint64_t scan_digest = 0;
  std::uint64_t scan_entries = 0;

  std::size_t size() const noexcept { return keys.size(); }
  std::uint64_t total_digest() const noexcept { return prefix.back(); }
  std::uint64_t raw_bytes() const noexcept { return key_arena.size() + value_arena.size(); }
};

// Generates a dataset and its queries: `lookups` hits, `lookups` misses and
// `scans` scan starts.  Deterministic for a given spec.
dataset generate(const dataset_spec& spec, std::size_t lookups, std::size_t scans);

// A small fast generator (splitmix64), so that datasets do not depend on a
// standard library's distributions.
struct rng {
  std::uint64_t state;
  explicit rng(std::uint64_t seed) : state(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) noexcept {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
};

template <class T>
void shuffle(std::vector<T>& items, rng& random) {
  for (std::size_t i = items.size(); i > 1; --i) {
    std::swap(items[i - 1], items[random.below(i)]);
  }
}

}  // namespace bbtree::bench
