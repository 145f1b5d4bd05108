// The query workload run on every file a target opens, and the consistency
// oracle for files the verifier accepts.
#include "fuzz_support.h"

#include <bbtree/format/crc32c.h>
#include <bbtree/inspect.h>

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <utility>

namespace bbtree::fuzz {

namespace {

constexpr std::size_t scan_limit = 3000;  // entries per full scan
constexpr std::size_t walk_limit = 24;    // entries per range or bound walk
constexpr std::size_t probe_limit = 48;   // probes per file

template <typename Queries>
void guarded(Queries&& queries) {
  try {
    queries();
  } catch (const error&) {
    // A damaged file may throw bbtree::error from any query; nothing else.
  }
}

// One step of `position`.  A step that throws (a damaged leaf on the way)
// must leave the cursor where it was, still reading the same entry.
void checked_step(cursor& position, bool forwards) {
  const cursor before = position;
  try {
    if (forwards) {
      ++position;
    } else {
      --position;
    }
  } catch (const error&) {
    BBTREE_FUZZ_CHECK(position == before && position.is_end() == before.is_end(),
                      "a cursor step that threw moved the cursor");
    if (!position.is_end()) {
      BBTREE_FUZZ_CHECK(position.rank() == before.rank() && position.key() == before.key() &&
                            position.value() == before.value(),
                        "a cursor step that threw changed the entry the cursor reads");
    }
    throw;
  }
}

// Walks up to `steps` entries from `position`, forwards or backwards,
// reading each key and value.
void walk(cursor position, std::size_t steps, bool forwards, const cursor* end = nullptr) {
  if (forwards && end != nullptr) {
    // The same entries through a walk, stopped after `steps`.
    cursor walker = position;
    std::size_t visited = 0;
    walker.for_each_until(*end, [&](const entry_ref& entry) {
      touch(entry.key());
      touch(entry.value());
      return ++visited < steps;
    });
  }
  for (std::size_t step = 0; step < steps && !position.is_end(); ++step) {
    if (end != nullptr && position == *end) break;
    touch(position.key());
    touch(position.value());
    (void)position.rank();
    checked_step(position, forwards);
  }
}

// A small deterministic generator seeded from the input, for probe choice.
std::uint64_t seed_of(bytes_view source) {
  return format::crc32c(source.data(), std::min<std::size_t>(source.size(), 4096)) *
             0x9E3779B97F4A7C15ull +
         source.size();
}

std::vector<std::string> make_probes(const reader& index, const std::vector<std::string>& seen,
                                     bytes_view source) {
  const file_info& info = index.info();
  const std::size_t key_size = info.keys == key_kind::bytes ? 0 : info.key_size;
  std::vector<std::string> probes;
  probes.emplace_back();
  if (key_size > 0) {
    probes.emplace_back(key_size, '\0');
    probes.emplace_back(key_size, '\xff');
  } else {
    probes.emplace_back(1, '\0');
    probes.emplace_back(3, '\xff');
  }
  for (const std::string& key : seen) {
    if (probes.size() >= probe_limit / 2) break;
    probes.push_back(key);
    if (!key.empty()) {
      std::string neighbour = key;
      neighbour.back() = static_cast<char>(static_cast<unsigned char>(neighbour.back()) + 1);
      probes.push_back(neighbour);
      neighbour.back() = static_cast<char>(static_cast<unsigned char>(key.back()) - 1);
      probes.push_back(neighbour);
      probes.push_back(key.substr(0, key.size() - 1));  // a wrong length for fixed kinds
    }
    if (key_size == 0) probes.push_back(key + '\0');
  }
  std::mt19937_64 random(seed_of(source));
  while (probes.size() < probe_limit && !source.empty()) {
    std::size_t length = key_size;
    if (length == 0 || random() % 16 == 0) length = random() % 24;
    const std::size_t start = random() % source.size();
    length = std::min(length, source.size() - start);
    std::string probe(reinterpret_cast<const char*>(source.data()) + start, length);
    if (key_size > 0 && probe.size() < key_size && random() % 4 != 0) probe.resize(key_size, '\0');
    probes.push_back(std::move(probe));
  }
  return probes;
}

void query_probe(const reader& index, std::string_view probe, std::string_view other) {
  guarded([&] {
    if (const auto value = index.get(probe)) touch(*value);
    (void)index.contains(probe);
  });
  guarded([&] {
    const cursor found = index.find(probe);
    if (!found.is_end()) {
      touch(found.key());
      touch(found.value());
    }
    walk(found, 3, true);
    walk(found, 3, false);
  });
  guarded([&] {
    const cursor lower = index.lower_bound(probe);
    walk(lower, 4, true);
    walk(lower, 4, false);
  });
  guarded([&] {
    const cursor upper = index.upper_bound(probe);
    walk(upper, 4, true);
    walk(upper, 4, false);
  });
  guarded([&] {
    const entry_range equal = index.equal_range(probe);
    walk(equal.begin(), 3, true, &equal.end());
  });
  guarded([&] { (void)index.rank(probe); });
  const bound froms[] = {bound::none(), bound::inclusive(probe), bound::exclusive(probe)};
  const bound tos[] = {bound::none(), bound::inclusive(other), bound::exclusive(other)};
  for (const bound& from : froms) {
    for (const bound& to : tos) {
      guarded([&] { (void)index.count(from, to); });
      guarded([&] {
        const entry_range range = index.range(from, to);
        walk(range.begin(), walk_limit, true, &range.end());
      });
    }
  }
  guarded([&] {
    const entry_range matching = index.prefix(probe.substr(0, probe.size() / 2));
    walk(matching.begin(), walk_limit, true, &matching.end());
  });
}

}  // namespace

void exercise(const reader& index, bytes_view probe_source) {
  const file_info& info = index.info();
  (void)index.name();
  touch({reinterpret_cast<const char*>(index.bytes().data()),
         std::min<std::size_t>(index.bytes().size(), 16)});
  guarded([&] {
    for (const auto& [key, value] : index.metadata()) {
      touch(key);
      touch(value);
    }
  });
  guarded([&] {
    if (auto first = index.first()) touch(first->value);
    if (auto last = index.last()) touch(last->value);
  });

  // The page inspector of bbtree-dump, which shows damaged pages as damaged.
  guarded([&] {
    std::ostringstream out;
    write_header(index, out);
  });
  guarded([&] {
    std::ostringstream out;
    write_stats(index, out);
  });
  guarded([&] {
    std::ostringstream out;
    write_pages(index, out);
  });
  const std::uint32_t pages = info.page_count;
  for (const std::uint32_t page :
       {0u, 1u, pages / 2, pages - 1, pages, ~0u,
        pages > 0 ? static_cast<std::uint32_t>(seed_of(probe_source) % pages) : 0u}) {
    guarded([&] {
      std::ostringstream out;
      write_page(index, page, out);
    });
  }

  // A dump: every entry, forwards, then backwards from the end.
  std::vector<std::string> seen;
  guarded([&] {
    std::size_t steps = 0;
    for (cursor position = index.begin(); !position.is_end() && steps < scan_limit;
         checked_step(position, true), ++steps) {
      const std::string_view key = position.key();
      touch(key);
      touch(position.value());
      (void)position.rank();
      if (seen.size() < 8 || steps % 97 == 0) seen.emplace_back(key);
    }
  });
  guarded([&] {
    std::size_t steps = 0;
    index.for_each([&](const entry_ref& entry) {
      touch(entry.value());
      touch(entry.key());
      return ++steps < scan_limit;
    });
  });
  guarded([&] {
    cursor position = index.end();
    for (std::size_t steps = 0; steps < scan_limit; ++steps) {
      checked_step(position, false);
      if (position.is_end()) break;
      touch(position.key());
      touch(position.value());
      if (steps < 4) seen.emplace_back(position.key());
    }
  });

  const std::vector<std::string> probes = make_probes(index, seen, probe_source);
  for (std::size_t i = 0; i < probes.size(); ++i) {
    query_probe(index, probes[i], probes[(i * 7 + 3) % probes.size()]);
  }
  // A probe with no bytes at all (a null data pointer).
  query_probe(index, std::string_view(), probes.back());

  // Access by rank, at the edges and in between.
  const std::uint64_t size = index.size();
  const std::uint64_t ranks[] = {
      0,    1,        size / 2,          size - 1,
      size, size + 1, ~std::uint64_t{0}, size > 0 ? seed_of(probe_source) % size : 0};
  for (const std::uint64_t rank : ranks) {
    guarded([&] {
      const cursor position = index.at(rank);
      walk(position, 3, true);
      walk(position, 3, false);
    });
  }

  guarded([&] {
    std::vector<std::string_view> keys(probes.begin(), probes.end());
    std::vector<std::optional<std::string_view>> values(keys.size());
    (void)index.get_many(keys, values);
    for (const auto& value : values) {
      if (value) touch(*value);
    }
  });
}

// ---------------------------------------------------------------------------
// The oracle for verified files

namespace {

std::size_t expected_key_size(const file_info& info) {
  return info.keys == key_kind::bytes ? 0 : info.key_size;
}

std::optional<std::size_t> expected_value_size(const file_info& info) {
  switch (info.values) {
    case value_kind::none:
      return 0;
    case value_kind::u64:
      return 8;
    case value_kind::fixed:
      return info.value_size;
    case value_kind::bytes:
      return std::nullopt;
  }
  return std::nullopt;
}

void check_dump(const reader& index, std::size_t max_entries) {
  const file_info& info = index.info();
  const std::uint64_t size = index.size();
  const std::size_t key_size = expected_key_size(info);
  const auto value_size = expected_value_size(info);

  // The dump, forwards.
  std::vector<std::pair<std::string, std::string_view>> entries;
  cursor position = index.begin();
  for (; !position.is_end() && entries.size() < max_entries; ++position) {
    const std::string key(position.key());
    const std::string_view value = position.value();
    BBTREE_FUZZ_CHECK(position.rank() == entries.size(),
                      fmt::format("entry {} has rank {}", entries.size(), position.rank()));
    BBTREE_FUZZ_CHECK(key_size == 0 || key.size() == key_size,
                      fmt::format("key {} is {} bytes in a file of {}-byte keys", hex(key),
                                  key.size(), key_size));
    BBTREE_FUZZ_CHECK(
        !value_size || value.size() == *value_size,
        fmt::format("value of {} bytes where {} are expected", value.size(), *value_size));
    BBTREE_FUZZ_CHECK(entries.empty() || entries.back().first < key,
                      fmt::format("keys out of order in a verified file: {} then {}",
                                  hex(entries.back().first), hex(key)));
    touch(value);
    entries.emplace_back(key, value);
  }
  const bool complete = position.is_end();
  // A walk gives the same entries, and stops where it is told to.
  std::size_t walked = 0;
  if (!entries.empty())
    index.for_each([&](const entry_ref& entry) {
      BBTREE_FUZZ_CHECK(
          entry.value() == entries[walked].second && entry.key() == entries[walked].first,
          fmt::format("the walk differs from the cursor's scan at entry {}", walked));
      return ++walked < entries.size();
    });
  BBTREE_FUZZ_CHECK(walked == entries.size(),
                    fmt::format("a walk visits {} entries of {}", walked, entries.size()));
  if (complete) {
    BBTREE_FUZZ_CHECK(entries.size() == size,
                      fmt::format("a scan finds {} entries, size() says {}", entries.size(), size));
    const auto first = index.first();
    const auto last = index.last();
    BBTREE_FUZZ_CHECK(first.has_value() == !entries.empty(), "first() disagrees with the scan");
    BBTREE_FUZZ_CHECK(last.has_value() == !entries.empty(), "last() disagrees with the scan");
    if (!entries.empty()) {
      BBTREE_FUZZ_CHECK(
          first->key == entries.front().first && first->value == entries.front().second,
          "first() is not the first entry of the scan");
      BBTREE_FUZZ_CHECK(last->key == entries.back().first && last->value == entries.back().second,
                        "last() is not the last entry of the scan");
    }
    // Backwards from the end gives the same entries reversed.
    cursor backwards = index.end();
    for (std::size_t i = entries.size(); i-- > 0;) {
      --backwards;
      BBTREE_FUZZ_CHECK(!backwards.is_end() && backwards.key() == entries[i].first &&
                            backwards.value() == entries[i].second,
                        fmt::format("the backward scan differs at entry {}", i));
    }
    --backwards;
    BBTREE_FUZZ_CHECK(backwards.is_end(), "the backward scan goes past the first entry");
  } else {
    BBTREE_FUZZ_CHECK(size > entries.size(), "size() is smaller than a partial scan");
  }

  // Every key (or a sample of large files) through every query.
  const std::size_t step = entries.size() <= 512 ? 1 : entries.size() / 512;
  std::vector<std::string_view> batch;
  std::vector<std::size_t> batch_index;
  for (std::size_t i = 0; i < entries.size(); i += step) {
    const auto& [key, value] = entries[i];
    const std::string context = fmt::format("entry {} (key {})", i, hex(key));
    const auto got = index.get(key);
    BBTREE_FUZZ_CHECK(got && *got == value, "get() misses " + context);
    const cursor found = index.find(key);
    BBTREE_FUZZ_CHECK(!found.is_end() && found.rank() == i, "find() misses " + context);
    BBTREE_FUZZ_CHECK(index.rank(key) == i,
                      fmt::format("rank() of {} is {}", context, index.rank(key)));
    const cursor lower = index.lower_bound(key);
    BBTREE_FUZZ_CHECK(!lower.is_end() && lower.key() == key, "lower_bound() misses " + context);
    const cursor upper = index.upper_bound(key);
    BBTREE_FUZZ_CHECK(upper.rank() == i + 1,
                      "upper_bound() of " + context + " is not the next entry");
    if (i + 1 < entries.size()) {
      BBTREE_FUZZ_CHECK(!upper.is_end() && upper.key() == entries[i + 1].first,
                        "upper_bound() of " + context + " is not the next key");
    } else if (complete) {
      BBTREE_FUZZ_CHECK(upper.is_end(), "upper_bound() of the last key is not the end");
    }
    const cursor ranked = index.at(i);
    BBTREE_FUZZ_CHECK(!ranked.is_end() && ranked.key() == key && ranked.value() == value,
                      "at() differs for " + context);
    const entry_range equal = index.equal_range(key);
    cursor after = equal.begin();
    BBTREE_FUZZ_CHECK(!after.is_end() && after.key() == key, "equal_range() misses " + context);
    ++after;
    BBTREE_FUZZ_CHECK(after == equal.end(), "equal_range() of " + context + " is not one entry");
    BBTREE_FUZZ_CHECK(index.count(bound::inclusive(key), bound::inclusive(key)) == 1,
                      "count() of " + context + " alone is not 1");
    BBTREE_FUZZ_CHECK(index.count(bound::none(), bound::exclusive(key)) == i,
                      "count() below " + context + " is not its rank");
    BBTREE_FUZZ_CHECK(index.count(bound::exclusive(key), bound::none()) == size - i - 1,
                      "count() above " + context + " is wrong");
    // The smallest key after this one is absent and ranks just after it.
    if (key_size == 0) {
      const std::string next = key + '\0';
      const bool next_known = i + 1 < entries.size() || complete;
      if (next_known && (i + 1 == entries.size() || entries[i + 1].first != next)) {
        BBTREE_FUZZ_CHECK(!index.get(next), "get() finds a key after " + context);
        BBTREE_FUZZ_CHECK(index.rank(next) == i + 1, "rank() of the key after " + context);
      }
    }
    // Every key with this key's first bytes as prefix lies in prefix().
    const std::string_view head = std::string_view(key).substr(0, key.size() / 2);
    const entry_range matching = index.prefix(head);
    BBTREE_FUZZ_CHECK(!matching.begin().is_end() && matching.begin().key().starts_with(head) &&
                          matching.begin().rank() <= i,
                      "prefix() of the first half of " + context + " starts after it");
    batch.push_back(key);
    batch_index.push_back(i);
  }
  std::vector<std::optional<std::string_view>> values(batch.size());
  BBTREE_FUZZ_CHECK(index.get_many(batch, values) == batch.size(), "get_many() misses keys");
  for (std::size_t j = 0; j < batch.size(); ++j) {
    BBTREE_FUZZ_CHECK(values[j] && *values[j] == entries[batch_index[j]].second,
                      fmt::format("get_many() differs for entry {}", batch_index[j]));
  }
  BBTREE_FUZZ_CHECK(index.at(size).is_end(), "at(size()) is not the end");
  BBTREE_FUZZ_CHECK(index.count(bound::none(), bound::none()) == size,
                    "count() of everything is not size()");
  (void)index.metadata();
}

}  // namespace

void check_consistent(const reader& index, std::size_t max_entries) {
  try {
    check_dump(index, max_entries);
  } catch (const error& e) {
    fail(fmt::format("a query on a file that verifies threw: {}", e.what()));
  }
}

}  // namespace bbtree::fuzz
