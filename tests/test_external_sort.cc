// The external sort against an in-memory model: budgets from "everything
// fits" down to 64 KiB (hundreds of runs, merged in passes), every
// duplicate policy, u64 and byte-string keys with large values; progress;
// a killed sort and a full temporary directory leave nothing behind.
#include "test_support.h"

#include <bbtree/external_sort.h>

#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <optional>

using namespace bbtree;
using namespace bbtree::test;

namespace {

using entry_list = std::vector<std::pair<std::string, std::string>>;

constexpr std::uint64_t kib = 1024;
constexpr std::uint64_t mib = 1024 * 1024;

// What a build of `entries` in the given order must hold under `policy`;
// nullopt when it must fail with a duplicate.
std::optional<model> expected_of(const entry_list& entries, duplicate_policy policy) {
  model result;
  for (const auto& [key, value] : entries) {
    const auto [place, added] = result.try_emplace(key, value);
    if (added) continue;
    if (policy == duplicate_policy::error) return std::nullopt;
    if (policy == duplicate_policy::keep_last) place->second = value;
  }
  return result;
}

// The same through std::stable_sort, as the reference for first and last:
// of equal keys, the first and the last in input order.
model stable_sorted(entry_list entries, duplicate_policy policy) {
  std::stable_sort(entries.begin(), entries.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  model result;
  for (std::size_t i = 0; i < entries.size();) {
    std::size_t end = i;
    while (end < entries.size() && entries[end].first == entries[i].first) ++end;
    const auto& kept = policy == duplicate_policy::keep_last ? entries[end - 1] : entries[i];
    result.emplace(kept.first, kept.second);
    i = end;
  }
  return result;
}

model read_all(const std::filesystem::path& path) {
  const reader index = reader::open(path);
  model result;
  for (auto it = index.begin(); it != index.end(); ++it)
    result.emplace(std::string(it.key()), std::string(it.value()));
  REQUIRE(result.size() == index.size());
  return result;
}

// u64 keys from a space small enough that most keys repeat; the value
// records the entry's place in the input, so first and last are checked.
entry_list u64_entries(std::size_t count, std::uint64_t key_space, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  entry_list entries;
  entries.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    entries.emplace_back(std::string(u64_key(random() % key_space).view()),
                         std::string(u64_value(i).view()));
  }
  return entries;
}

// Distinct u64 keys in random order.
entry_list unique_u64_entries(std::size_t count, std::uint64_t seed) {
  std::vector<std::uint64_t> keys(count);
  for (std::size_t i = 0; i < count; ++i) keys[i] = i * 7919;
  std::mt19937_64 random(seed);
  std::shuffle(keys.begin(), keys.end(), random);
  entry_list entries;
  for (std::size_t i = 0; i < count; ++i) {
    entries.emplace_back(std::string(u64_key(keys[i]).view()), std::string(u64_value(i).view()));
  }
  return entries;
}

// Byte-string keys over a small alphabet (shared prefixes, repeats) and
// values up to `largest` bytes, some past the inline limit.
entry_list byte_entries(std::size_t count, std::size_t largest, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  entry_list entries;
  for (std::size_t i = 0; i < count; ++i) {
    std::string key(1 + random() % 12, '\0');
    static constexpr char alphabet[] = {'\x00', '\x01', 'a', 'b', '\xfe', '\xff'};
    for (auto& byte : key) byte = alphabet[random() % sizeof(alphabet)];
    const std::size_t length = random() % 8 == 0 ? random() % largest : random() % 24;
    std::string value = std::to_string(i) + ":";
    value.resize(std::max(value.size(), length), static_cast<char>('a' + i % 26));
    entries.emplace_back(std::move(key), std::move(value));
  }
  return entries;
}

build_options options_of(key_kind keys, value_kind values, duplicate_policy policy) {
  build_options options;
  options.keys = keys;
  options.values = values;
  options.duplicates = policy;
  options.sync = false;
  options.overwrite = true;
  return options;
}

struct sort_result {
  build_summary summary;
  std::uint64_t runs = 0;
};

sort_result external_sort(const std::filesystem::path& path, const entry_list& entries,
                          const build_options& options, std::uint64_t memory,
                          const std::filesystem::path& temporary = {}) {
  sort_options sort;
  sort.memory = memory;
  sort.temporary_directory = temporary;
  external_sorting_builder writer(path, options, sort);
  for (const auto& [key, value] : entries) writer.add(key, value);
  REQUIRE(writer.entries_added() == entries.size());
  sort_result result;
  result.summary = writer.finish();
  result.runs = writer.runs_written();
  return result;
}

const char* name_of(duplicate_policy policy) {
  switch (policy) {
    case duplicate_policy::error:
      return "error";
    case duplicate_policy::keep_first:
      return "first";
    case duplicate_policy::keep_last:
      return "last";
  }
  return "?";
}

}  // namespace

TEST_CASE("external sort equals an in-memory sort: u64 keys", "[external_sort]") {
  scratch_directory scratch;
  const auto path = scratch / "index.bbt";
  // Made once: Catch2 runs the test case again for each section.
  static const entry_list repeated = u64_entries(200000, 60000, 7);
  static const entry_list unique = unique_u64_entries(200000, 8);
  static std::map<duplicate_policy, model> expected_by_policy;
  for (const std::uint64_t memory : {64 * kib, 1 * mib, 64 * mib}) {
    for (const auto policy :
         {duplicate_policy::keep_first, duplicate_policy::keep_last, duplicate_policy::error}) {
      DYNAMIC_SECTION("memory " << memory << ", duplicates " << name_of(policy)) {
        const entry_list& entries = policy == duplicate_policy::error ? unique : repeated;
        if (!expected_by_policy.contains(policy)) {
          const auto expected = expected_of(entries, policy);
          REQUIRE(expected);
          if (policy != duplicate_policy::error)
            REQUIRE(*expected == stable_sorted(entries, policy));
          expected_by_policy.emplace(policy, *expected);
        }
        const model* expected = &expected_by_policy.at(policy);
        const sort_result result = external_sort(
            path, entries, options_of(key_kind::u64, value_kind::u64, policy), memory);
        // 64 KiB: hundreds of runs and intermediate passes; 64 MiB: none.
        if (memory == 64 * kib) REQUIRE(result.runs >= 200);
        if (memory == 64 * mib) REQUIRE(result.runs == 0);
        if (memory == 1 * mib) REQUIRE(result.runs >= 4);
        REQUIRE(result.summary.entries == expected->size());
        REQUIRE(read_all(path) == *expected);
        REQUIRE(scratch.names() == std::vector<std::string>{"index.bbt"});
      }
    }
  }
}

TEST_CASE("external sort equals an in-memory sort: byte keys, large values", "[external_sort]") {
  scratch_directory scratch;
  const auto path = scratch / "index.bbt";
  // Some values are larger than a 64 KiB budget's run buffers: they make
  // runs of their own, and the merge's read buffers grow for them.
  static const entry_list entries = [] {
    entry_list made = byte_entries(20000, 6000, 11);
    for (std::size_t i = 0; i < made.size(); i += 4999) made[i].second.assign(70000 + i, 'L');
    return made;
  }();
  for (const std::uint64_t memory : {64 * kib, 512 * kib, 64 * mib}) {
    for (const auto policy : {duplicate_policy::keep_first, duplicate_policy::keep_last}) {
      DYNAMIC_SECTION("memory " << memory << ", duplicates " << name_of(policy)) {
        const sort_result result = external_sort(
            path, entries, options_of(key_kind::bytes, value_kind::bytes, policy), memory);
        if (memory < 64 * mib) REQUIRE(result.runs > 10);
        REQUIRE(read_all(path) == stable_sorted(entries, policy));
      }
    }
  }
}

TEST_CASE("a duplicate under the error policy names its key and both entries, wherever it is",
          "[external_sort]") {
  scratch_directory scratch;
  const auto path = scratch / "index.bbt";
  entry_list entries = unique_u64_entries(100000, 3);
  // Far apart: in different runs, found by the final merge; side by side:
  // in one run, found when it is sorted.
  for (const std::size_t second : {entries.size() - 1, std::size_t{10}}) {
    entry_list copy = entries;
    const std::string key = copy[second].first = copy[5].first;
    for (const std::uint64_t memory : {64 * kib, 64 * mib}) {
      try {
        external_sort(path, copy,
                      options_of(key_kind::u64, value_kind::u64, duplicate_policy::error), memory);
        FAIL("a duplicate was accepted");
      } catch (const duplicate_key_error& failure) {
        REQUIRE(failure.code() == errc::duplicate_key);
        REQUIRE(failure.key() == key);
        // Entry numbers, from 1, in the order added.
        REQUIRE(failure.first_origin() == 6);
        REQUIRE(failure.origin() == second + 1);
        REQUIRE_THAT(failure.what(),
                     Catch::Contains(fmt::format("(entries 6 and {})", second + 1)));
      }
      REQUIRE(scratch.names().empty());
    }
  }
}

TEST_CASE("a duplicate gives back the origins its entries were added with", "[external_sort]") {
  scratch_directory scratch;
  const auto path = scratch / "index.bbt";
  const entry_list entries = unique_u64_entries(50000, 4);
  // Origins far from the entry numbers, and not in order: the sort keeps
  // them as given.
  const auto origin_of = [](std::size_t index) {
    return (std::uint64_t{1} << 60) - 7 * static_cast<std::uint64_t>(index);
  };
  for (const std::uint64_t memory : {64 * kib, 64 * mib}) {
    for (const duplicate_policy policy :
         {duplicate_policy::error, duplicate_policy::keep_first, duplicate_policy::keep_last}) {
      CAPTURE(memory, name_of(policy));
      sort_options sort;
      sort.memory = memory;
      external_sorting_builder writer(path, options_of(key_kind::u64, value_kind::u64, policy),
                                      sort);
      for (std::size_t i = 0; i < entries.size(); ++i)
        writer.add(entries[i].first, entries[i].second, origin_of(i));
      // Entry 123's key again, last.
      writer.add(entries[123].first, "8 bytes!", 99);
      if (policy != duplicate_policy::error) {
        // Origins change nothing else: the file is the one add(key, value) builds.
        writer.finish();
        entry_list expected(entries.begin(), entries.end());
        expected.emplace_back(entries[123].first, "8 bytes!");
        REQUIRE(read_all(path) == *expected_of(expected, policy));
        std::filesystem::remove(path);
        continue;
      }
      try {
        writer.finish();
        FAIL("a duplicate was accepted");
      } catch (const duplicate_key_error& failure) {
        REQUIRE(failure.key() == entries[123].first);
        REQUIRE(failure.first_origin() == origin_of(123));
        REQUIRE(failure.origin() == 99);
        REQUIRE_THAT(failure.what(),
                     Catch::Contains(fmt::format("(origins {} and 99)", origin_of(123))));
      }
      REQUIRE(scratch.names().empty());
    }
  }
}

TEST_CASE("progress reports reading, merging and writing", "[external_sort]") {
  scratch_directory scratch;
  const entry_list entries = u64_entries(100000, 1 << 30, 5);
  std::vector<sort_progress> steps;
  sort_options sort;
  sort.memory = 64 * kib;
  sort.progress = [&steps](const sort_progress& step) { steps.push_back(step); };
  external_sorting_builder writer(
      scratch / "index.bbt",
      options_of(key_kind::u64, value_kind::u64, duplicate_policy::keep_last), sort);
  for (const auto& [key, value] : entries) writer.add(key, value);
  writer.finish();
  REQUIRE(!steps.empty());
  auto saw = [&](sort_phase phase) {
    return std::any_of(steps.begin(), steps.end(),
                       [&](const sort_progress& step) { return step.phase == phase; });
  };
  REQUIRE(saw(sort_phase::reading));
  REQUIRE(saw(sort_phase::merging));
  REQUIRE(saw(sort_phase::writing));
  const sort_progress& last = steps.back();
  REQUIRE(last.phase == sort_phase::writing);
  REQUIRE(last.done == last.total);
  REQUIRE(last.total == entries.size());
  REQUIRE(last.runs == writer.runs_written());
  REQUIRE(last.passes >= 1);
  // Phases come in order, and within a phase the counts only grow.
  for (std::size_t i = 1; i < steps.size(); ++i) {
    REQUIRE(steps[i].phase >= steps[i - 1].phase);
    REQUIRE(steps[i].runs >= steps[i - 1].runs);
    if (steps[i].phase == steps[i - 1].phase && steps[i].pass == steps[i - 1].pass) {
      REQUIRE(steps[i].done >= steps[i - 1].done);
    }
  }
}

TEST_CASE("the external sorting builder's interface", "[external_sort]") {
  scratch_directory scratch;
  const build_options options = options_of(key_kind::u64, value_kind::u64, duplicate_policy::error);
  sort_options small;
  small.memory = 1024;
  REQUIRE_THROWS_AS(external_sorting_builder(scratch / "x.bbt", options, small), error);
  // More than the machine has: refused at once, not by a failed mapping
  // at the first add().
  REQUIRE(physical_memory() > 0);
  sort_options huge;
  huge.memory = physical_memory() + 1;
  REQUIRE_THROWS_WITH(external_sorting_builder(scratch / "x.bbt", options, huge),
                      Catch::Contains("more than this machine's memory"));
  huge.memory = physical_memory() / 4;  // mapped, not touched: fine
  {
    external_sorting_builder writer(scratch / "x.bbt", options, huge);
    writer.add(u64_key(1), u64_value(1));
    writer.finish();
  }
  REQUIRE(reader::open(scratch / "x.bbt").size() == 1);
  std::filesystem::remove(scratch / "x.bbt");
  sort_options elsewhere;
  elsewhere.temporary_directory = scratch / "missing";
  REQUIRE_THROWS_AS(external_sorting_builder(scratch / "x.bbt", options, elsewhere), error);
  {
    external_sorting_builder writer(scratch / "x.bbt", options);
    REQUIRE_THROWS_AS(writer.add("short", std::string(u64_value(1).view())), error);
    // A failed add abandons the build.
    REQUIRE_THROWS_AS(writer.add(u64_key(1), u64_value(1)), error);
    REQUIRE_THROWS_AS(writer.finish(), error);
  }
  {
    external_sorting_builder writer(scratch / "x.bbt", options);
    REQUIRE_THROWS_AS(writer.add(u64_key(1), "not eight"), error);
  }
  {
    external_sorting_builder writer(scratch / "empty.bbt", options);
    REQUIRE(writer.finish().entries == 0);
    REQUIRE_THROWS_AS(writer.add(u64_key(1), u64_value(1)), error);
    writer.abort();
    writer.abort();
  }
  REQUIRE(reader::open(scratch / "empty.bbt").size() == 0);
  {
    sort_options tiny;
    tiny.memory = 64 * kib;
    external_sorting_builder writer(scratch / "abandoned.bbt", options, tiny);
    for (std::uint64_t i = 0; i < 50000; ++i) writer.add(u64_key(i * 31 % 50000), u64_value(i));
    REQUIRE(writer.runs_written() > 10);
    writer.abort();
  }
  REQUIRE(scratch.names() == std::vector<std::string>{"empty.bbt"});
}

TEST_CASE("a killed external sort leaves nothing, and stale scratch files are removed",
          "[external_sort][failure]") {
  scratch_directory scratch;
  const auto temporary = scratch / "tmp";
  std::filesystem::create_directory(temporary);
  const auto path = scratch / "index.bbt";
  const entry_list entries = u64_entries(100000, 1 << 30, 9);
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(ready[0]);
    sort_options sort;
    sort.memory = 64 * kib;
    sort.temporary_directory = temporary;
    // Stops in the middle of the final merge, with every run written and
    // the output half built, and waits there to be killed.
    sort.progress = [&](const sort_progress& step) {
      if (step.phase == sort_phase::writing && step.done > step.total / 2) {
        const char byte = 'm';
        (void)!::write(ready[1], &byte, 1);
        for (;;) ::pause();
      }
    };
    external_sorting_builder writer(
        path, options_of(key_kind::u64, value_kind::u64, duplicate_policy::keep_last), sort);
    for (const auto& [key, value] : entries) writer.add(key, value);
    writer.finish();
    ::_exit(10);  // not reached: the parent kills it first
  }
  ::close(ready[1]);
  kill_when_ready(child, ready[0]);
  REQUIRE(scratch.names() == std::vector<std::string>{"tmp"});
  REQUIRE(std::filesystem::is_empty(temporary));

  // Where the file system has no unnamed files, a scratch file lives under
  // a name for a moment; one left by a dead process goes at the next sort.
  const std::string stale = ".bbtree-scratch-" + std::to_string(child) + "-deadbeef";
  write_file(temporary / stale, "partial run");
  external_sort(path, entries,
                options_of(key_kind::u64, value_kind::u64, duplicate_policy::keep_last), 64 * kib,
                temporary);
  REQUIRE(std::filesystem::is_empty(temporary));
  REQUIRE(scratch.names() == std::vector<std::string>{"index.bbt", "tmp"});
  REQUIRE(read_all(path) == *expected_of(entries, duplicate_policy::keep_last));
}

TEST_CASE("a full temporary directory: an error naming it, the destination untouched",
          "[external_sort][failure]") {
  scratch_directory scratch;
  const auto temporary = scratch / "tmp";
  std::filesystem::create_directory(temporary);
  const auto path = scratch / "index.bbt";
  write_file(path, "the previous index");
  const entry_list entries = u64_entries(100000, 1 << 30, 13);
  int report[2];
  REQUIRE(::pipe(report) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(report[0]);
    // EFBIG instead of a signal once a file passes 256 KiB, as ENOSPC would
    // come from a full disk.
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{256 * kib, 256 * kib};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    std::string message = "no error";
    try {
      external_sort(path, entries,
                    options_of(key_kind::u64, value_kind::u64, duplicate_policy::keep_last),
                    64 * kib, temporary);
    } catch (const error& failure) {
      message = failure.what();
      if (failure.code() != errc::io_error) message = "not an I/O error: " + message;
    }
    (void)!::write(report[1], message.data(), message.size());
    ::_exit(0);
  }
  ::close(report[1]);
  std::string message;
  char buffer[512];
  for (ssize_t got; (got = ::read(report[0], buffer, sizeof(buffer))) > 0;)
    message.append(buffer, got);
  ::close(report[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(message == "cannot write a sorted run in " + temporary.string() + ": File too large");
  REQUIRE(read_file(path) == "the previous index");
  REQUIRE(std::filesystem::is_empty(temporary));
  REQUIRE(scratch.names() == std::vector<std::string>{"index.bbt", "tmp"});
}

// Also run under ThreadSanitizer by CI ([concurrency]): the worker that
// sorts and writes runs while add() fills the other buffer, and the merge
// thread that hands batches to the builder.
TEST_CASE("the sort's threads hand buffers over safely", "[external_sort][concurrency]") {
  scratch_directory scratch;
  const auto path = scratch / "index.bbt";
  const entry_list entries = u64_entries(30000, 20000, 21);
  for (const std::uint64_t memory : {64 * kib, 256 * kib}) {
    const sort_result result = external_sort(
        path, entries, options_of(key_kind::u64, value_kind::u64, duplicate_policy::keep_last),
        memory);
    REQUIRE(result.runs > 4);
    REQUIRE(read_all(path) == *expected_of(entries, duplicate_policy::keep_last));
  }
  // A failure on the worker (a duplicate found while sorting a run) reaches
  // add() or finish(), and the threads stop.
  entry_list repeated = unique_u64_entries(30000, 22);
  repeated[20001].first = repeated[20000].first;
  REQUIRE_THROWS_AS(
      external_sort(path, repeated,
                    options_of(key_kind::u64, value_kind::u64, duplicate_policy::error), 64 * kib),
      duplicate_key_error);
}
