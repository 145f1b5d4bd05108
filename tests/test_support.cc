#include "test_support.h"

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <iterator>
#include <optional>
#include <span>
#include <sstream>

namespace bbtree::test {

namespace fs = std::filesystem;

scratch_directory::scratch_directory() {
  std::string pattern = (fs::temp_directory_path() / "bbtree-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

scratch_directory::~scratch_directory() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

std::vector<std::string> scratch_directory::names() const {
  std::vector<std::string> result;
  for (const auto& item : fs::directory_iterator(path_))
    result.push_back(item.path().filename().string());
  std::sort(result.begin(), result.end());
  return result;
}

std::string shape::describe() const {
  static const char* key_names[] = {"?", "u64", "i64", "fixed", "bytes"};
  static const char* value_names[] = {"none", "u64", "fixed", "bytes"};
  return fmt::format("{}{}->{}{} page {}{}", key_names[static_cast<int>(keys)],
                     keys == key_kind::fixed ? fmt::format(":{}", key_size) : "",
                     value_names[static_cast<int>(values)],
                     values == value_kind::fixed ? fmt::format(":{}", value_size) : "", page_size,
                     directory ? "" : " no directory");
}

build_options options_for(const shape& kinds) {
  build_options options;
  options.keys = kinds.keys;
  options.key_size = kinds.key_size;
  options.values = kinds.values;
  options.value_size = kinds.value_size;
  options.page_size = kinds.page_size;
  options.directory = kinds.directory;
  options.sync = false;
  return options;
}

std::string random_key(const shape& kinds, std::mt19937_64& random) {
  switch (kinds.keys) {
    case key_kind::u64:
      return std::string(u64_key(random()).view());
    case key_kind::i64:
      return std::string(i64_key(static_cast<std::int64_t>(random())).view());
    case key_kind::fixed: {
      std::string key(kinds.key_size, '\0');
      for (auto& byte : key) byte = static_cast<char>(random());
      return key;
    }
    case key_kind::bytes: {
      // Short keys over a small alphabet collide in prefixes and inline keys.
      const std::size_t length = random() % 24;
      std::string key(length, '\0');
      static constexpr char alphabet[] = {'\x00', '\x01', 'a', 'b', '\xfe', '\xff'};
      for (auto& byte : key) byte = alphabet[random() % sizeof(alphabet)];
      return key;
    }
  }
  return {};
}

std::string random_value(const shape& kinds, std::mt19937_64& random) {
  switch (kinds.values) {
    case value_kind::none:
      return {};
    case value_kind::u64:
      return std::string(u64_value(random()).view());
    case value_kind::fixed: {
      std::string value(kinds.value_size, '\0');
      for (auto& byte : value) byte = static_cast<char>(random());
      return value;
    }
    case value_kind::bytes: {
      // Mostly small, some past the inline limit so they go out of page.
      const std::size_t length =
          random() % 10 == 0 ? random() % (kinds.page_size / 2) : random() % 20;
      std::string value(length, '\0');
      for (auto& byte : value) byte = static_cast<char>(random());
      return value;
    }
  }
  return {};
}

build_summary build_file(const fs::path& path, const shape& kinds, const model& entries) {
  build_options options = options_for(kinds);
  options.overwrite = true;
  builder writer(path, options);
  for (const auto& [key, value] : entries) writer.add(key, value);
  return writer.finish();
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> probes_for(const shape& kinds, const model& entries,
                                    std::mt19937_64& random, std::size_t random_count) {
  std::vector<std::string> probes;
  probes.push_back({});
  for (const auto& [key, value] : entries) {
    probes.push_back(key);
    if (kinds.keys == key_kind::bytes) {
      probes.push_back(key + '\0');
      probes.push_back(key + '\xff');
      if (!key.empty()) probes.push_back(key.substr(0, key.size() - 1));
    } else if (!key.empty()) {
      std::string bumped = key;
      bumped.back() = static_cast<char>(static_cast<unsigned char>(bumped.back()) + 1);
      probes.push_back(bumped);
      bumped = key;
      bumped.back() = static_cast<char>(static_cast<unsigned char>(bumped.back()) - 1);
      probes.push_back(bumped);
    }
  }
  for (std::size_t i = 0; i < random_count; ++i) probes.push_back(random_key(kinds, random));
  return probes;
}

namespace {

std::string printable(const std::string& bytes) {
  std::string out;
  for (unsigned char byte : bytes) out += fmt::format("{:02x}", byte);
  return out;
}

// Compares a cursor position with a model iterator, entry by entry.
// `ranks` holds the model's keys in order, so that expected ranks cost a
// binary search rather than a walk of the map.
template <typename Index>
void check_position(const Index& index, const model& entries, const std::vector<std::string>& ranks,
                    const cursor& position, model::const_iterator expected) {
  if (expected == entries.end()) {
    REQUIRE(position.is_end());
    REQUIRE(position == index.end());
    return;
  }
  REQUIRE_FALSE(position.is_end());
  REQUIRE(printable(std::string(position.key())) == printable(expected->first));
  REQUIRE(position.value() == expected->second);
  REQUIRE(position.rank() ==
          static_cast<std::uint64_t>(std::lower_bound(ranks.begin(), ranks.end(), expected->first) -
                                     ranks.begin()));
}

// Walks a range against the model from `first`, for at most `limit`
// entries; when the range is no longer than that, its end must follow.
void check_range(const entry_range& range, model::const_iterator first, std::size_t expected_count,
                 std::size_t limit) {
  cursor position = range.begin();
  auto expected = first;
  const std::size_t walked = std::min(expected_count, limit);
  for (std::size_t step = 0; step < walked; ++step) {
    REQUIRE(position != range.end());
    REQUIRE(position.key() == expected->first);
    REQUIRE(position.value() == expected->second);
    ++position;
    ++expected;
  }
  if (expected_count <= limit) REQUIRE(position == range.end());

  // The same entries through a walk, which a false from the callback stops
  // at the limit-th entry, leaving the walking cursor there.
  cursor walker = range.begin();
  cursor stepped = range.begin();
  expected = first;
  std::size_t visited = 0;
  walker.for_each_until(range.end(), [&](const entry_ref& entry) {
    REQUIRE(visited < walked);
    REQUIRE(entry.key() == expected->first);
    REQUIRE(entry.value() == expected->second);
    ++visited;
    ++expected;
    if (visited < limit) ++stepped;
    return visited < limit;
  });
  REQUIRE(visited == walked);
  REQUIRE(walker == stepped);
  if (expected_count < limit) {
    REQUIRE(walker == range.end());
  } else {
    REQUIRE(walker.key() == std::prev(expected)->first);
  }
  // And through entry_range::for_each, which runs to the end.
  visited = 0;
  expected = first;
  range.for_each([&](const entry_ref& entry) {
    if (visited < walked) {
      REQUIRE(entry.value() == expected->second);
      REQUIRE(entry.key() == expected->first);
      ++expected;
    }
    ++visited;
  });
  // Callers count at most limit + 1 entries of a long range.
  if (expected_count <= limit) {
    REQUIRE(visited == expected_count);
  } else {
    REQUIRE(visited >= expected_count);
  }
}

template <typename Index>
void check_index_against_model(const Index& index, const model& entries,
                               const std::vector<std::string>& probes) {
  REQUIRE(index.size() == entries.size());
  std::vector<std::string> sorted_keys;
  sorted_keys.reserve(entries.size());
  for (const auto& entry : entries) sorted_keys.push_back(entry.first);

  // Full scan forwards and backwards.
  {
    cursor position = index.begin();
    for (const auto& [key, value] : entries) {
      REQUIRE_FALSE(position.is_end());
      REQUIRE(position.key() == key);
      REQUIRE(position.value() == value);
      ++position;
    }
    REQUIRE(position.is_end());
    cursor backwards = index.end();
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
      --backwards;
      REQUIRE_FALSE(backwards.is_end());
      REQUIRE(backwards.key() == it->first);
      REQUIRE(backwards.value() == it->second);
    }
    --backwards;
    REQUIRE(backwards.is_end());
  }
  // A walk of the whole index; values read before keys and alone, since an
  // entry_ref reads each only when asked.
  {
    auto expected = entries.begin();
    index.for_each([&](const entry_ref& entry) {
      REQUIRE(expected != entries.end());
      REQUIRE(entry.value() == expected->second);
      REQUIRE(entry.key() == expected->first);
      ++expected;
    });
    REQUIRE(expected == entries.end());
    std::size_t visited = 0;
    expected = entries.begin();
    index.for_each([&](const entry_ref& entry) {
      REQUIRE(entry.value() == expected->second);
      ++expected;
      ++visited;
    });
    REQUIRE(visited == entries.size());
  }
  if (entries.empty()) {
    REQUIRE_FALSE(index.first().has_value());
    REQUIRE_FALSE(index.last().has_value());
  } else {
    REQUIRE(index.first()->key == entries.begin()->first);
    REQUIRE(index.last()->key == entries.rbegin()->first);
  }

  std::vector<std::string_view> batch;
  for (const std::string& probe : probes) {
    INFO("probe " << printable(probe));
    const auto expected = entries.find(probe);
    const auto got = index.get(probe);
    REQUIRE(got.has_value() == (expected != entries.end()));
    if (got) REQUIRE(*got == expected->second);
    REQUIRE(index.contains(probe) == (expected != entries.end()));
    check_position(index, entries, sorted_keys, index.find(probe), expected);
    check_position(index, entries, sorted_keys, index.lower_bound(probe),
                   entries.lower_bound(probe));
    check_position(index, entries, sorted_keys, index.upper_bound(probe),
                   entries.upper_bound(probe));
    const auto [equal_first, equal_last] = entries.equal_range(probe);
    const entry_range equal = index.equal_range(probe);
    check_range(equal, equal_first,
                static_cast<std::size_t>(std::distance(equal_first, equal_last)), 2);
    REQUIRE(
        index.rank(probe) ==
        static_cast<std::uint64_t>(std::lower_bound(sorted_keys.begin(), sorted_keys.end(), probe) -
                                   sorted_keys.begin()));
    batch.push_back(probe);
  }

  // Ranges between pairs of probes, with every kind of bound.  Ranks come
  // from a sorted vector of the model's keys.
  auto rank_of_bound = [&](const bound& edge, bool is_start) -> std::ptrdiff_t {
    const std::string key(edge.key);
    const bool take_equal = (edge.type == bound::kind::inclusive) != is_start;
    if (edge.type == bound::kind::unbounded)
      return is_start ? 0 : static_cast<std::ptrdiff_t>(sorted_keys.size());
    const auto position = take_equal
                              ? std::upper_bound(sorted_keys.begin(), sorted_keys.end(), key)
                              : std::lower_bound(sorted_keys.begin(), sorted_keys.end(), key);
    return position - sorted_keys.begin();
  };
  std::mt19937_64 random(probes.size());
  for (std::size_t i = 0; i < std::min<std::size_t>(probes.size(), 400); ++i) {
    const std::string& a = probes[random() % probes.size()];
    const std::string& b = probes[random() % probes.size()];
    const bound starts[] = {bound::none(), bound::inclusive(a), bound::exclusive(a)};
    const bound ends[] = {bound::none(), bound::inclusive(b), bound::exclusive(b)};
    for (const bound& from : starts) {
      for (const bound& to : ends) {
        const std::ptrdiff_t first_rank = rank_of_bound(from, true);
        const std::ptrdiff_t last_rank = std::max(first_rank, rank_of_bound(to, false));
        REQUIRE(index.count(from, to) == static_cast<std::uint64_t>(last_rank - first_rank));
        auto first = entries.lower_bound(sorted_keys.size() > static_cast<std::size_t>(first_rank)
                                             ? sorted_keys[static_cast<std::size_t>(first_rank)]
                                             : std::string());
        if (static_cast<std::size_t>(first_rank) == sorted_keys.size()) first = entries.end();
        check_range(index.range(from, to), first, static_cast<std::size_t>(last_rank - first_rank),
                    50);
      }
    }
    // Prefix queries: the probe's first bytes.
    const std::string prefix = a.substr(0, random() % (a.size() + 1));
    auto first = entries.lower_bound(prefix);
    std::size_t matching = 0;
    for (auto it = first;
         it != entries.end() && it->first.compare(0, prefix.size(), prefix) == 0 && matching <= 50;
         ++it) {
      ++matching;
    }
    check_range(index.prefix(prefix), first, matching, 50);
  }

  // at() for a sample of ranks, and past the end.
  for (std::uint64_t rank = 0; rank < entries.size(); rank += 1 + entries.size() / 97) {
    const auto expected = entries.find(sorted_keys[rank]);
    check_position(index, entries, sorted_keys, index.at(rank), expected);
  }
  REQUIRE(index.at(entries.size()).is_end());

  // The batched lookup gives the same answers.
  std::vector<std::optional<std::string_view>> answers(batch.size());
  const std::size_t found = index.get_many(batch, answers);
  std::size_t expected_found = 0;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto expected = entries.find(std::string(batch[i]));
    REQUIRE(answers[i].has_value() == (expected != entries.end()));
    if (answers[i]) {
      REQUIRE(*answers[i] == expected->second);
      ++expected_found;
    }
  }
  REQUIRE(found == expected_found);
  // Spans of different sizes are the caller's error, refused before any
  // answer is written.
  std::vector<std::optional<std::string_view>> one_more(batch.size() + 1);
  REQUIRE_THROWS_WITH(index.get_many(batch, one_more), "get_many: keys and out differ in size");
}

}  // namespace

void kill_when_ready(int child, int ready_fd) {
  char byte = 0;
  REQUIRE(::read(ready_fd, &byte, 1) == 1);
  ::close(ready_fd);
  ::kill(child, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
}

void check_against_model(const reader& index, const model& entries,
                         const std::vector<std::string>& probes) {
  check_index_against_model(index, entries, probes);
}

void check_against_model(const sharded_reader& index, const model& entries,
                         const std::vector<std::string>& probes) {
  check_index_against_model(index, entries, probes);
}

}  // namespace bbtree::test
