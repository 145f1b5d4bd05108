// bbtree-lookup-probe: one access pattern, one page size, one process; for
// A/B runs of a reader change and for profiling (valgrind --tool=callgrind
// --toggle-collect='run_*' counts the instructions of the timed loop only).
//
//   bbtree-lookup-probe ENTRIES PROBES PAGE_SIZE
//                       [get|many|pair|scan|walk|range|range-walk|array] [LENGTH]
//
// Builds (once, kept in $TMPDIR) an index of ENTRIES random u64 keys with
// u64 values, opens it populated (memory_mode::copy_huge_pages when HUGE is
// set in the environment), and times PROBES random hits with reader::get,
// with get_many in batches of 256 ("many"), with both on alternate slices
// of the probes and their paired ratio reported ("pair"), a full scan stepping a cursor
// ("scan") or walking (reader::for_each, "walk"), LENGTH entries (default
// 100) from lower_bound of each probe, stepped ("range") or walked
// (cursor::for_each_until, "range-walk"), or
// std::lower_bound over the same keys in a 2 MiB-aligned array ("array",
// advised for huge pages when HUGE is set).  Prints ns per operation.
// With KEYS=str in the environment the index holds the benchmark's
// path-like string keys and values instead (bench/dataset.h, generate), and
// the probes are that dataset's hits; "get", "many" and "pair" only.  DISTINCT=K
// repeats the first K probes over and over (a working set that stays in the
// caches).  COUNTERS=1 also prints hardware event counts per operation of
// the timed loop (bench/hardware_counters.h), or why the machine has none;
// bench/profile.sh runs it so, and under callgrind's cache simulation.
#include <bbtree/builder.h>
#include <bbtree/reader.h>

#include "dataset.h"
#include "hardware_counters.h"
#include "median.h"
#include "timing.h"

#include <sys/mman.h>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace bbtree;
using bench::median;
using bench::nanoseconds_since;

std::string big_endian(std::uint64_t value) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[static_cast<std::size_t>(i)] = static_cast<char>(value >> (56 - 8 * i));
  return bytes;
}

std::uint64_t first_byte(std::string_view value) { return static_cast<unsigned char>(value[0]); }

// A scratch index, rebuilt only when missing, so not synced.
build_options probe_build_options(key_kind keys, value_kind values, std::uint32_t page_size) {
  build_options options;
  options.keys = keys;
  options.values = values;
  options.page_size = page_size;
  options.sync = false;
  options.overwrite = true;
  return options;
}

// The index of path-like keys and the probes (hits) for KEYS=str.
std::vector<std::string> string_index(std::size_t entries, std::size_t probe_count,
                                      std::uint32_t page_size, const std::filesystem::path& file) {
  const bench::dataset data =
      bench::generate({"str", bench::data_kind::str, entries}, probe_count, 0);
  if (!std::filesystem::exists(file)) {
    builder writer(file, probe_build_options(key_kind::bytes, value_kind::bytes, page_size));
    for (std::size_t i = 0; i < data.size(); ++i) writer.add(data.keys[i], data.values[i]);
    writer.finish();
  }
  return {data.hits.begin(), data.hits.end()};
}

[[gnu::noinline]] std::uint64_t run_get(const reader& index, std::span<const std::string> probes) {
  std::uint64_t sum = 0;
  for (const auto& probe : probes) {
    if (const auto value = index.get(probe)) sum += first_byte(*value);
  }
  return sum;
}

[[gnu::noinline]] std::uint64_t run_many(const reader& index, std::span<const std::string> probes) {
  constexpr std::size_t batch = 256;
  std::vector<std::string_view> keys(batch);
  std::vector<std::optional<std::string_view>> values(batch);
  std::uint64_t sum = 0;
  for (std::size_t start = 0; start < probes.size(); start += batch) {
    const std::size_t n = std::min(batch, probes.size() - start);
    for (std::size_t i = 0; i < n; ++i) keys[i] = probes[start + i];
    index.get_many(std::span(keys.data(), n), std::span(values.data(), n));
    for (std::size_t i = 0; i < n; ++i) {
      if (values[i]) sum += first_byte(*values[i]);
    }
  }
  return sum;
}

[[gnu::noinline]] std::uint64_t run_scan(const reader& index) {
  std::uint64_t sum = 0;
  for (cursor position = index.begin(); !position.is_end(); ++position) {
    std::uint64_t value;
    std::memcpy(&value, position.value().data(), 8);
    sum += value;
  }
  return sum;
}

[[gnu::noinline]] std::uint64_t run_walk(const reader& index) {
  std::uint64_t sum = 0;
  index.for_each([&sum](const entry_ref& at) {
    std::uint64_t value;
    std::memcpy(&value, at.value().data(), 8);
    sum += value;
  });
  return sum;
}

[[gnu::noinline]] std::uint64_t run_range(const reader& index,
                                          const std::vector<std::string>& probes,
                                          std::size_t length) {
  std::uint64_t sum = 0;
  for (const auto& probe : probes) {
    std::size_t left = length;
    for (cursor position = index.lower_bound(probe); left > 0 && !position.is_end();
         --left, ++position) {
      std::uint64_t value;
      std::memcpy(&value, position.value().data(), 8);
      sum += value;
    }
  }
  return sum;
}

[[gnu::noinline]] std::uint64_t run_range_walk(const reader& index,
                                               const std::vector<std::string>& probes,
                                               std::size_t length) {
  std::uint64_t sum = 0;
  for (const auto& probe : probes) {
    std::size_t left = length;
    index.lower_bound(probe).for_each_until(index.end(), [&](const entry_ref& at) {
      std::uint64_t value;
      std::memcpy(&value, at.value().data(), 8);
      sum += value;
      return --left > 0;
    });
  }
  return sum;
}

[[gnu::noinline]] std::uint64_t run_array(const std::uint64_t* first, const std::uint64_t* last,
                                          const std::vector<std::uint64_t>& probes) {
  std::uint64_t sum = 0;
  for (const std::uint64_t key : probes) {
    const std::uint64_t* found = std::lower_bound(first, last, key);
    if (found != last && *found == key) sum += key >> 56;
  }
  return sum;
}

// get and many on alternate slices of the probes, each slice timed: the
// paired ratio of neighbouring slices cancels the drift of a noisy machine,
// which separate processes minutes apart do not.
constexpr std::size_t pair_slice = 4096;

void run_pair(const reader& index, std::span<const std::string> probes) {
  std::vector<double> get_ns, many_ns, ratios;
  std::uint64_t sum = 0;
  for (std::size_t start = 0; start + 2 * pair_slice <= probes.size(); start += 2 * pair_slice) {
    const auto timed = [&](auto&& run, std::size_t offset) {
      const auto begin = std::chrono::steady_clock::now();
      sum += run(index, probes.subspan(start + offset, pair_slice));
      return nanoseconds_since(begin) / static_cast<double>(pair_slice);
    };
    // Which method runs first, on the first slice of the two, alternates,
    // so that neither always follows the other.
    double get = 0;
    double many = 0;
    if ((start / (2 * pair_slice)) % 2 == 0) {
      get = timed(run_get, 0);
      many = timed(run_many, pair_slice);
    } else {
      many = timed(run_many, 0);
      get = timed(run_get, pair_slice);
    }
    get_ns.push_back(get);
    many_ns.push_back(many);
    ratios.push_back(many / get);
  }
  std::printf(
      "pair: get %.1f ns/op, many %.1f ns/op, many/get %.3f (medians of %zu pairs of "
      "%zu-probe slices; sum %llu)\n",
      median(get_ns), median(many_ns), median(ratios), ratios.size(), pair_slice,
      static_cast<unsigned long long>(sum));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: bbtree-lookup-probe ENTRIES PROBES PAGE_SIZE "
                 "[get|many|pair|scan|walk|range|range-walk|array] [LENGTH]\n");
    return 2;
  }
  const std::size_t entries = std::strtoull(argv[1], nullptr, 10);
  const std::size_t probe_count = std::strtoull(argv[2], nullptr, 10);
  const auto page_size = static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10));
  const std::string mode = argc > 4 ? argv[4] : "get";
  const bool huge = std::getenv("HUGE") != nullptr;

  std::mt19937_64 random(42);
  std::vector<std::uint64_t> keys(entries);
  for (auto& key : keys) key = random();
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::mt19937_64 probe_random(7);
  std::vector<std::uint64_t> probe_keys(probe_count);
  for (auto& key : probe_keys) key = keys[probe_random() % keys.size()];

  std::uint64_t sum = 0;
  std::size_t operations = probe_count;
  if (mode == "array") {
    constexpr std::size_t huge_page = std::size_t{2} << 20;
    const std::size_t bytes = (keys.size() * 8 + huge_page - 1) / huge_page * huge_page;
    auto* array = static_cast<std::uint64_t*>(std::aligned_alloc(huge_page, bytes));
    if (huge) ::madvise(array, bytes, MADV_HUGEPAGE);
    std::copy(keys.begin(), keys.end(), array);
    const auto timed = std::chrono::steady_clock::now();
    sum = run_array(array, array + keys.size(), probe_keys);
    const double ns = nanoseconds_since(timed);
    std::printf("array entries=%zu: %.1f ns/op (sum %llu)\n", keys.size(),
                ns / static_cast<double>(operations), static_cast<unsigned long long>(sum));
    std::free(array);
    return 0;
  }
  const char* directory = std::getenv("TMPDIR");
  const char* key_kind_name = std::getenv("KEYS");
  const bool strings = key_kind_name != nullptr && std::string_view(key_kind_name) == "str";
  const std::filesystem::path file =
      std::filesystem::path(directory ? directory : "/tmp") /
      ("bbtree-probe-" + std::string(strings ? "str-" : "") + std::to_string(entries) + "-" +
       std::to_string(page_size) + ".bbt");
  std::vector<std::string> probes;
  if (strings) {
    probes = string_index(entries, probe_count, page_size, file);
  } else if (!std::filesystem::exists(file)) {
    builder writer(file, probe_build_options(key_kind::u64, value_kind::u64, page_size));
    for (const std::uint64_t key : keys) {
      const std::string bytes = big_endian(key);
      writer.add(bytes, bytes);
    }
    writer.finish();
  }
  open_options open;
  open.memory = huge ? memory_mode::copy_huge_pages : memory_mode::map;
  open.populate = true;
  const reader index = reader::open(file, open);
  if (!strings) {
    probes.reserve(probe_count);
    for (const std::uint64_t key : probe_keys) probes.push_back(big_endian(key));
  }
  // DISTINCT=K repeats the first K probes, so that their pages stay in the
  // caches: what a lookup costs without its misses.
  if (const char* distinct = std::getenv("DISTINCT")) {
    const std::size_t repeat = std::max<std::size_t>(1, std::strtoull(distinct, nullptr, 10));
    for (std::size_t i = repeat; i < probes.size(); ++i) probes[i] = probes[i % repeat];
  }

  if (mode == "pair") {
    if (probes.size() < 2 * pair_slice) {
      std::fprintf(stderr, "bbtree-lookup-probe: pair needs at least %zu probes\n", 2 * pair_slice);
      return 2;
    }
    run_pair(index, probes);
    return 0;
  }
  // COUNTERS=1: hardware event counts of the timed loop (perf_event_open).
  std::optional<bench::hardware_counters> counters;
  if (std::getenv("COUNTERS") != nullptr) counters.emplace().start();
  const auto timed = std::chrono::steady_clock::now();
  if (mode == "get") {
    sum = run_get(index, probes);
  } else if (mode == "many") {
    sum = run_many(index, probes);
  } else if (mode == "scan") {
    sum = run_scan(index);
    operations = index.size();
  } else if (mode == "walk") {
    sum = run_walk(index);
    operations = index.size();
  } else if (mode == "range") {
    sum = run_range(index, probes, argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 100);
  } else if (mode == "range-walk") {
    sum = run_range_walk(index, probes, argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 100);
  } else {
    std::fprintf(stderr, "bbtree-lookup-probe: unknown mode %s\n", mode.c_str());
    return 2;
  }
  const double ns = nanoseconds_since(timed);
  std::array<std::uint64_t, bench::hardware_counters::events.size()> counts{};
  const bool counted = counters && counters->stop(counts);
  std::printf("%s entries=%zu page_size=%u height=%u: %.1f ns/op (sum %llu)\n", mode.c_str(),
              keys.size(), page_size, index.info().height, ns / static_cast<double>(operations),
              static_cast<unsigned long long>(sum));
  if (counted) {
    std::printf("counters per op:");
    for (std::size_t at = 0; at < counts.size(); ++at)
      std::printf(" %s %.2f", bench::hardware_counters::events[at].name,
                  static_cast<double>(counts[at]) / static_cast<double>(operations));
    std::printf("\n");
  } else if (counters) {
    std::printf("counters: not available (%s)\n", counters->unavailable().c_str());
  }
  return 0;
}
