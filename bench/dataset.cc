#include "dataset.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>

namespace bbtree::bench {

const char* to_string(data_kind kind) noexcept {
  switch (kind) {
    case data_kind::u64:
      return "u64";
    case data_kind::fix16:
      return "fix16";
    case data_kind::str:
      return "str";
  }
  return "?";
}

bool parse_kind(std::string_view text, data_kind& kind) noexcept {
  if (text == "u64")
    kind = data_kind::u64;
  else if (text == "fix16")
    kind = data_kind::fix16;
  else if (text == "str")
    kind = data_kind::str;
  else
    return false;
  return true;
}

namespace {

constexpr std::uint64_t seed = 0x6262747265650001ull;  // "bbtree" + 1

// Path- and URL-shaped keys: a few thousand hosts and home directories, a
// small vocabulary of path segments, a numbered leaf.  Neighbouring keys
// share long prefixes.
const char* const words[] = {
    "src",     "lib",      "include", "docs",     "assets",  "images",  "static", "api",
    "v1",      "v2",       "users",   "orders",   "catalog", "product", "search", "blog",
    "archive", "2019",     "2020",    "2021",     "2022",    "2023",    "2024",   "en-us",
    "de-de",   "fr-fr",    "public",  "private",  "shared",  "cache",   "build",  "release",
    "debug",   "internal", "tests",   "fixtures", "data",    "reports", "q1",     "q2",
    "q3",      "q4",       "media",   "video",    "audio",   "thumbs",  "config", "modules"};
constexpr std::size_t word_count = sizeof(words) / sizeof(words[0]);
const char* const tlds[] = {"com", "org", "net", "io", "de", "co.uk"};
const char* const exts[] = {".html", ".json", ".png", ".cc", ".h", ".txt", ".md", ""};

std::string make_string_key(rng& random) {
  std::string key;
  key.reserve(128);
  if (random.below(2) == 0) {
    key += "https://";
    if (random.below(3) == 0) key += "www.";
    key += "site-";
    key += std::to_string(random.below(3000));
    key += '.';
    key += tlds[random.below(6)];
  } else {
    key += "/home/user";
    key += std::to_string(random.below(1000));
    key += "/projects/";
    key += words[random.below(word_count)];
  }
  const std::uint64_t depth = 1 + random.below(5);
  for (std::uint64_t i = 0; i < depth; ++i) {
    key += '/';
    key += words[random.below(word_count)];
  }
  key += "/item-";
  key += std::to_string(random.below(100000000));
  key += exts[random.below(8)];
  return key;
}

// Value lengths: mostly short, some medium, a few longer than a bbtree
// page's inline limit (512 bytes at 4 KiB pages).
std::string make_string_value(rng& random) {
  const std::uint64_t r = random.below(100);
  std::size_t length;
  if (r < 70)
    length = 8 + random.below(57);
  else if (r < 95)
    length = 64 + random.below(193);
  else
    length = 256 + random.below(1793);
  std::string value(length, '\0');
  for (auto& c : value) c = static_cast<char>('a' + random.below(26));
  return value;
}

struct raw_entry {
  std::string key;
  std::string value;
};

void fill_sorted(dataset& d, std::vector<raw_entry>& entries) {
  std::size_t key_bytes = 0, value_bytes = 0;
  for (const auto& e : entries) {
    key_bytes += e.key.size();
    value_bytes += e.value.size();
  }
  d.key_arena.reserve(key_bytes);
  d.value_arena.reserve(value_bytes);
  for (const auto& e : entries) {
    d.key_arena += e.key;
    d.value_arena += e.value;
  }
  d.keys.reserve(entries.size());
  d.values.reserve(entries.size());
  std::size_t k = 0, v = 0;
  for (const auto& e : entries) {
    d.keys.emplace_back(d.key_arena.data() + k, e.key.size());
    d.values.emplace_back(d.value_arena.data() + v, e.value.size());
    k += e.key.size();
    v += e.value.size();
  }
}

bool present(const dataset& d, std::string_view key) {
  return std::binary_search(d.keys.begin(), d.keys.end(), key);
}

}  // namespace

dataset generate(const dataset_spec& spec, std::size_t lookups, std::size_t scans) {
  dataset d;
  d.spec = spec;
  rng random(seed ^ (static_cast<std::uint64_t>(spec.kind) << 56) ^ spec.entries);
  const std::size_t n = spec.entries;

  if (spec.kind == data_kind::u64 || spec.kind == data_kind::fix16) {
    const std::size_t key_size = spec.kind == data_kind::u64 ? 8 : 16;
    // Unique random keys: draw, sort, drop duplicates, top up until n.  A
    // key is (hi, lo) stored big-endian, so numeric order is byte order.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> drawn;
    drawn.reserve(n);
    while (drawn.size() < n) {
      while (drawn.size() < n) {
        const std::uint64_t hi = random.next();
        drawn.emplace_back(hi, key_size == 16 ? random.next() : 0);
      }
      std::sort(drawn.begin(), drawn.end());
      drawn.erase(std::unique(drawn.begin(), drawn.end()), drawn.end());
    }
    d.key_arena.resize(n * key_size);
    for (std::size_t i = 0; i < n; ++i) {
      char key[16];
      store_be64(key, drawn[i].first);
      store_be64(key + 8, drawn[i].second);
      std::memcpy(d.key_arena.data() + i * key_size, key, key_size);
    }
    drawn = {};
    d.value_arena.resize(n * 8);
    d.keys.resize(n);
    d.values.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t value = random.next();
      std::memcpy(d.value_arena.data() + i * 8, &value, 8);
      d.keys[i] = std::string_view(d.key_arena.data() + i * key_size, key_size);
      d.values[i] = std::string_view(d.value_arena.data() + i * 8, 8);
    }
    // Misses: random keys that are absent.
    d.miss_arena.reserve(lookups * key_size);
    while (d.miss_arena.size() < lookups * key_size) {
      char key[16];
      store_be64(key, random.next());
      store_be64(key + 8, random.next());
      if (!present(d, std::string_view(key, key_size))) d.miss_arena.append(key, key_size);
    }
    for (std::size_t i = 0; i < lookups; ++i) {
      d.misses.emplace_back(d.miss_arena.data() + i * key_size, key_size);
    }
  } else {
    std::vector<raw_entry> entries;
    entries.reserve(n);
    while (entries.size() < n) {
      while (entries.size() < n) entries.push_back({make_string_key(random), {}});
      std::sort(entries.begin(), entries.end(),
                [](const raw_entry& a, const raw_entry& b) { return a.key < b.key; });
      entries.erase(
          std::unique(entries.begin(), entries.end(),
                      [](const raw_entry& a, const raw_entry& b) { return a.key == b.key; }),
          entries.end());
    }
    for (auto& e : entries) e.value = make_string_value(random);
    fill_sorted(d, entries);
    // Misses: an existing key with a changed or extra last byte, so that a
    // miss shares a long prefix with its neighbours.
    std::vector<std::string> misses;
    misses.reserve(lookups);
    while (misses.size() < lookups) {
      std::string key(d.keys[random.below(n)]);
      if (random.below(2) == 0)
        key += static_cast<char>('0' + random.below(10));
      else
        key.back() = static_cast<char>('!' + random.below(90));
      if (!present(d, key)) misses.push_back(std::move(key));
    }
    std::size_t bytes = 0;
    for (const auto& m : misses) bytes += m.size();
    d.miss_arena.reserve(bytes);
    for (const auto& m : misses) d.miss_arena += m;
    std::size_t at = 0;
    for (const auto& m : misses) {
      d.misses.emplace_back(d.miss_arena.data() + at, m.size());
      at += m.size();
    }
  }

  d.digests.resize(n);
  d.prefix.resize(n + 1);
  d.prefix[0] = 0;
  for (std::size_t i = 0; i < n; ++i) {
    d.digests[i] = spec.kind == data_kind::str
                       ? value_digest<data_kind::str>(d.values[i].data(), d.values[i].size())
                       : value_digest<data_kind::u64>(d.values[i].data(), 8);
    d.prefix[i + 1] = d.prefix[i] + d.digests[i];
  }

  d.unsorted.resize(n);
  std::iota(d.unsorted.begin(), d.unsorted.end(), 0u);
  shuffle(d.unsorted, random);

  // Hits: distinct existing keys in random order (all keys when lookups >= n).
  std::vector<std::uint32_t> order = d.unsorted;
  shuffle(order, random);
  // Copied, in query order, into an arena of their own, as the misses are:
  // a probe's bytes are then read from memory the loop streams through,
  // not from a random place in the 10M keys, which would add a cache and
  // TLB miss to every hit of every peer, and to no miss.
  std::size_t hit_bytes = 0;
  for (std::size_t i = 0; i < lookups; ++i) hit_bytes += d.keys[order[i % n]].size();
  d.hit_arena.reserve(hit_bytes);
  for (std::size_t i = 0; i < lookups; ++i) {
    const std::uint32_t index = order[i % n];
    d.hit_arena += d.keys[index];
    d.hits_digest += d.digests[index];
  }
  std::size_t at = 0;
  for (std::size_t i = 0; i < lookups; ++i) {
    const std::size_t length = d.keys[order[i % n]].size();
    d.hits.emplace_back(d.hit_arena.data() + at, length);
    at += length;
  }

  // Scan starts likewise get an arena of their own.
  std::vector<std::size_t> firsts(scans);
  std::size_t start_bytes = 0;
  for (std::size_t i = 0; i < scans; ++i) {
    firsts[i] = random.below(n);
    start_bytes += d.keys[firsts[i]].size();
  }
  d.scan_start_arena.reserve(start_bytes);
  for (const std::size_t first : firsts) d.scan_start_arena += d.keys[first];
  at = 0;
  for (const std::size_t first : firsts) {
    const std::size_t last = std::min(n, first + d.scan_length);
    d.scan_starts.emplace_back(d.scan_start_arena.data() + at, d.keys[first].size());
    at += d.keys[first].size();
    d.scan_digest += d.prefix[last] - d.prefix[first];
    d.scan_entries += last - first;
  }
  return d;
}

}  // namespace bbtree::bench
