// fuzz_build_differential: entries decoded from the input (build_input.h)
// are built into a file by the streaming builder, the sorting builder or
// the external sort, read back, verified, and every query is compared with
// a std::map model.  Any difference, and any error the input did not call
// for, aborts.
#include "build_input.h"
#include "fuzz_support.h"

#include <bbtree/reader.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

namespace bbtree::fuzz {

namespace {

namespace fs = std::filesystem;
using model = std::map<std::string, std::string>;

std::string read_whole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// What a build of the case must end in: a model, or one of the errors the
// input asks for.
struct expectation {
  model entries;
  bool key_too_long = false;
  bool duplicate = false;  // equal keys under duplicate_policy::error
};

expectation expect(const build_case& input) {
  expectation out;
  for (const auto& [key, value] : input.entries) {
    if (key.size() > format::max_key_length) out.key_too_long = true;
    const auto [position, inserted] = out.entries.emplace(key, value);
    if (!inserted) {
      if (input.options.duplicates == duplicate_policy::error) out.duplicate = true;
      if (input.options.duplicates == duplicate_policy::keep_last) position->second = value;
    }
  }
  return out;
}

// Builds the case at `path`.
build_summary build(const build_case& input, const fs::path& path) {
  if (input.sort_memory != 0) {
    sort_options sort;
    sort.memory = input.sort_memory;
    external_sorting_builder writer(path, input.options, sort);
    for (const auto& [key, value] : input.entries) writer.add(key, value);
    return writer.finish();
  }
  if (input.sorting) {
    sorting_builder writer(path, input.options);
    for (const auto& [key, value] : input.entries) writer.add(key, value);
    return writer.finish();
  }
  // The streaming builder takes keys in order; a stable sort keeps equal
  // keys in input order, so that keep_first and keep_last match the model.
  std::vector<std::size_t> order(input.entries.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return input.entries[a].first < input.entries[b].first;
  });
  builder writer(path, input.options);
  for (const std::size_t i : order) writer.add(input.entries[i].first, input.entries[i].second);
  return writer.finish();
}

std::string describe(const build_case& input) {
  static const char* key_names[] = {"?", "u64", "i64", "fixed", "bytes"};
  static const char* value_names[] = {"none", "u64", "fixed", "bytes"};
  return fmt::format(
      "{}:{} -> {}:{}, page {}, {}, {} entries", key_names[static_cast<int>(input.options.keys)],
      input.options.key_size, value_names[static_cast<int>(input.options.values)],
      input.options.value_size, input.options.page_size,
      input.sort_memory != 0 ? fmt::format("external sort in {} KiB", input.sort_memory >> 10)
      : input.sorting        ? "sorting builder"
                             : "streaming builder",
      input.entries.size());
}

std::size_t rank_in(const std::vector<const std::string*>& keys, std::string_view probe,
                    bool or_equal) {
  const auto position =
      or_equal ? std::upper_bound(keys.begin(), keys.end(), probe,
                                  [](std::string_view p, const std::string* k) { return p < *k; })
               : std::lower_bound(keys.begin(), keys.end(), probe,
                                  [](const std::string* k, std::string_view p) { return *k < p; });
  return static_cast<std::size_t>(position - keys.begin());
}

// Checks a cursor against the model entry of rank `rank` (the end when
// rank == keys.size()).
struct sorted_model {
  std::vector<const std::string*> keys;    // in key order
  std::vector<const std::string*> values;  // of the same entries
};

void check_position(const cursor& position, const sorted_model& model, std::size_t rank,
                    const std::string& what) {
  const auto& keys = model.keys;
  if (rank == keys.size()) {
    BBTREE_FUZZ_CHECK(position.is_end(),
                      what + ": expected the end, got key " + hex(position.key()));
    return;
  }
  BBTREE_FUZZ_CHECK(!position.is_end(), what + ": got the end, expected key " + hex(*keys[rank]));
  BBTREE_FUZZ_CHECK(position.key() == *keys[rank],
                    what + ": got key " + hex(position.key()) + ", expected " + hex(*keys[rank]));
  BBTREE_FUZZ_CHECK(position.value() == *model.values[rank], what + ": wrong value");
  BBTREE_FUZZ_CHECK(position.rank() == rank,
                    fmt::format("{}: rank {}, expected {}", what, position.rank(), rank));
}

void compare(const reader& index, const model& entries, const build_case& input) {
  BBTREE_FUZZ_CHECK(index.size() == entries.size(),
                    fmt::format("size() {} for {} entries", index.size(), entries.size()));
  const file_info& info = index.info();
  BBTREE_FUZZ_CHECK(info.keys == input.options.keys && info.values == input.options.values &&
                        info.page_size == input.options.page_size,
                    "the header's kinds or page size differ from the options");
  sorted_model sorted;
  for (const auto& entry : entries) {
    sorted.keys.push_back(&entry.first);
    sorted.values.push_back(&entry.second);
  }
  const std::vector<const std::string*>& keys = sorted.keys;

  // The dump, both ways.
  {
    cursor position = index.begin();
    std::size_t rank = 0;
    for (; rank < keys.size(); ++rank) {
      check_position(position, sorted, rank, "forward scan");
      ++position;
    }
    BBTREE_FUZZ_CHECK(position.is_end(), "the forward scan goes on past the last entry");
    cursor backwards = index.end();
    for (std::size_t i = keys.size(); i-- > 0;) {
      --backwards;
      check_position(backwards, sorted, i, "backward scan");
    }
    --backwards;
    BBTREE_FUZZ_CHECK(backwards.is_end(), "the backward scan goes past the first entry");
  }
  const auto first = index.first();
  const auto last = index.last();
  BBTREE_FUZZ_CHECK(first.has_value() == !entries.empty() && last.has_value() == !entries.empty(),
                    "first() or last() of an index that is empty or not");
  if (!entries.empty()) {
    BBTREE_FUZZ_CHECK(
        first->key == entries.begin()->first && first->value == entries.begin()->second,
        "first() differs");
    BBTREE_FUZZ_CHECK(
        last->key == entries.rbegin()->first && last->value == entries.rbegin()->second,
        "last() differs");
  }
  const std::vector<std::pair<std::string, std::string>> metadata = index.metadata();
  std::vector<std::pair<std::string, std::string>> expected_metadata = input.options.metadata;
  std::sort(expected_metadata.begin(), expected_metadata.end());
  BBTREE_FUZZ_CHECK(metadata == expected_metadata, "metadata() differs from the options");

  // Probes: every key (a sample of large models) and its neighbours, and
  // keys of the input that the model does not hold.
  const std::size_t key_size = info.keys == key_kind::bytes ? 0 : info.key_size;
  std::vector<std::string> probes;
  const std::size_t step = entries.size() <= 256 ? 1 : entries.size() / 256;
  for (std::size_t i = 0; i < keys.size(); i += step) {
    const std::string& key = *keys[i];
    probes.push_back(key);
    if (key_size == 0) {
      probes.push_back(key + '\0');
      probes.push_back(key + '\xff');
      if (!key.empty()) probes.push_back(key.substr(0, key.size() - 1));
      if (key.size() > 8) probes.push_back(key.substr(0, 8));
    } else {
      std::string bumped = key;
      bumped.back() = static_cast<char>(static_cast<unsigned char>(bumped.back()) + 1);
      probes.push_back(bumped);
      bumped.back() = static_cast<char>(static_cast<unsigned char>(key.back()) - 1);
      probes.push_back(bumped);
    }
  }
  probes.push_back(key_size == 0 ? std::string() : std::string(key_size, '\0'));
  probes.push_back(key_size == 0 ? std::string(1, '\xff') : std::string(key_size, '\xff'));

  std::vector<std::string_view> batch;
  for (const std::string& probe : probes) {
    const std::string what = "probe " + hex(probe);
    const auto expected = entries.find(probe);
    const auto got = index.get(probe);
    BBTREE_FUZZ_CHECK(got.has_value() == (expected != entries.end()),
                      what + ": get() finds it or not wrongly");
    if (got) BBTREE_FUZZ_CHECK(*got == expected->second, what + ": get() gives a wrong value");
    const std::size_t lower = rank_in(keys, probe, false);
    const std::size_t upper = rank_in(keys, probe, true);
    check_position(index.find(probe), sorted, expected != entries.end() ? lower : keys.size(),
                   what + ": find()");
    check_position(index.lower_bound(probe), sorted, lower, what + ": lower_bound()");
    check_position(index.upper_bound(probe), sorted, upper, what + ": upper_bound()");
    BBTREE_FUZZ_CHECK(index.rank(probe) == lower, what + ": rank()");
    const entry_range equal = index.equal_range(probe);
    check_position(equal.begin(), sorted, lower, what + ": equal_range() begin");
    check_position(equal.end(), sorted, upper, what + ": equal_range() end");
    batch.push_back(probe);
  }

  // Ranges and counts between pairs of probes, with every kind of bound.
  std::mt19937_64 random(entries.size() * 31 + probes.size());
  for (std::size_t i = 0; i < std::min<std::size_t>(probes.size(), 32); ++i) {
    const std::string& a = probes[random() % probes.size()];
    const std::string& b = probes[random() % probes.size()];
    const bound froms[] = {bound::none(), bound::inclusive(a), bound::exclusive(a)};
    const bound tos[] = {bound::none(), bound::inclusive(b), bound::exclusive(b)};
    for (const bound& from : froms) {
      for (const bound& to : tos) {
        const std::size_t begin_rank =
            from.type == bound::kind::unbounded
                ? 0
                : rank_in(keys, from.key, from.type == bound::kind::exclusive);
        const std::size_t end_rank =
            std::max(begin_rank, to.type == bound::kind::unbounded
                                     ? keys.size()
                                     : rank_in(keys, to.key, to.type == bound::kind::inclusive));
        const std::string what =
            fmt::format("range from {} ({}) to {} ({})", hex(from.key), static_cast<int>(from.type),
                        hex(to.key), static_cast<int>(to.type));
        BBTREE_FUZZ_CHECK(index.count(from, to) == end_rank - begin_rank, what + ": count()");
        const entry_range range = index.range(from, to);
        check_position(range.begin(), sorted, begin_rank, what + ": begin");
        check_position(range.end(), sorted, end_rank, what + ": end");
      }
    }
    // prefix(): the keys that start with the first bytes of a probe.
    const std::string prefix = a.substr(0, random() % (a.size() + 1));
    const std::size_t begin_rank = rank_in(keys, prefix, false);
    std::size_t end_rank = begin_rank;
    while (end_rank < keys.size() && keys[end_rank]->starts_with(prefix)) ++end_rank;
    const entry_range matching = index.prefix(prefix);
    check_position(matching.begin(), sorted, begin_rank, "prefix " + hex(prefix) + ": begin");
    check_position(matching.end(), sorted, end_rank, "prefix " + hex(prefix) + ": end");
  }

  // Access by rank.
  for (std::size_t rank = 0; rank < keys.size(); rank += 1 + keys.size() / 257) {
    check_position(index.at(rank), sorted, rank, fmt::format("at({})", rank));
  }
  check_position(index.at(keys.size()), sorted, keys.size(), "at(size())");
  BBTREE_FUZZ_CHECK(index.at(~std::uint64_t{0}).is_end(), "at(2^64 - 1) is not the end");

  // The batched lookup.
  std::vector<std::optional<std::string_view>> values(batch.size());
  std::size_t expected_found = 0;
  const std::size_t found = index.get_many(batch, values);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto expected = entries.find(std::string(batch[i]));
    BBTREE_FUZZ_CHECK(values[i].has_value() == (expected != entries.end()) &&
                          (!values[i] || *values[i] == expected->second),
                      "get_many() differs for probe " + hex(batch[i]));
    expected_found += expected != entries.end();
  }
  BBTREE_FUZZ_CHECK(found == expected_found, "get_many() counts wrongly");
}

// The names in the scratch directory other than `keep`.
std::vector<std::string> leftovers(const fs::path& directory, const std::string& keep) {
  std::vector<std::string> names;
  for (const auto& item : fs::directory_iterator(directory)) {
    const std::string name = item.path().filename().string();
    if (name != keep) names.push_back(name);
  }
  return names;
}

}  // namespace

int run_build_differential(bytes_view input) {
  const build_case test = decode_build_case(input);
  const fs::path directory = scratch_directory() / "build";
  fs::create_directories(directory);
  const fs::path path = directory / "index.bbt";
  std::error_code ignored;
  fs::remove(path, ignored);

  const expectation expected = expect(test);
  const std::string what = describe(test);
  build_summary summary;
  try {
    summary = build(test, path);
  } catch (const error& e) {
    const bool allowed = e.code() == errc::invalid_argument ||  // options the builder refuses
                         (e.code() == errc::key_too_long && expected.key_too_long) ||
                         (e.code() == errc::duplicate_key && expected.duplicate);
    BBTREE_FUZZ_CHECK(allowed, what + ": unexpected build error: " + e.what());
    // The external sort numbers entries in input order, from 1: the two it
    // names must both hold the key, the first before the other.
    if (const auto* found = dynamic_cast<const duplicate_key_error*>(&e)) {
      const std::uint64_t first = found->first_origin();
      const std::uint64_t later = found->origin();
      const auto& entries = test.entries;
      BBTREE_FUZZ_CHECK(0 < first && first < later && later <= entries.size() &&
                            entries[first - 1].first == found->key() &&
                            entries[later - 1].first == found->key(),
                        fmt::format("{}: the duplicate names entries {} and {}: {}", what, first,
                                    later, e.what()));
    }
    BBTREE_FUZZ_CHECK(!fs::exists(path),
                      what + ": a failed build left the destination: " + e.what());
    const auto names = leftovers(directory, "");
    BBTREE_FUZZ_CHECK(names.empty(), what + ": a failed build left " + names.front());
    return 0;
  }
  BBTREE_FUZZ_CHECK(!expected.key_too_long, what + ": a key over the limit was accepted");
  BBTREE_FUZZ_CHECK(!expected.duplicate,
                    what + ": a duplicate key was accepted under duplicate_policy::error");
  BBTREE_FUZZ_CHECK(summary.entries == expected.entries.size(),
                    fmt::format("{}: the summary counts {} entries, the model {}", what,
                                summary.entries, expected.entries.size()));
  const auto names = leftovers(directory, "index.bbt");
  BBTREE_FUZZ_CHECK(names.empty(),
                    what + ": the build left " + (names.empty() ? "" : names.front()));

  const std::string bytes = read_whole(path);
  BBTREE_FUZZ_CHECK(bytes.size() == summary.file_size, what + ": the summary's file size is wrong");
  const bytes_view file(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  try {
    const reader index = reader::open(path);
    BBTREE_FUZZ_CHECK(
        index.info().height == summary.height && index.info().page_count == summary.pages,
        what + ": the summary's height or page count is wrong");
    compare(index, expected.entries, test);
    const std::string problems = verify_problems(file, true);
    BBTREE_FUZZ_CHECK(problems.empty(), what + ": a built file does not verify: " + problems);
  } catch (const error& e) {
    fail(what + ": reading a built file threw: " + e.what());
  }

  // Builds are reproducible: the same entries give the same bytes.
  if (expected.entries.size() <= 64) {
    fs::remove(path, ignored);
    build(test, path);
    BBTREE_FUZZ_CHECK(read_whole(path) == bytes, what + ": a second build gives different bytes");
  }
  return 0;
}

}  // namespace bbtree::fuzz
