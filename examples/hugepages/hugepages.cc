// What each memory mode actually gets from the kernel.  A memory mode is a
// request: map_huge_pages advises a file mapping with MADV_HUGEPAGE, and
// copy_huge_pages copies the file into anonymous memory advised the same
// way, and map_then_copy_huge_pages does so in the background while the
// file mapping answers; whether huge pages back either is the kernel's decision (transparent
// huge pages settings, the file system, free 2 MiB blocks).  This opens one
// index in every mode, with and without populate, and prints what
// /proc/self/smaps says backs the index's bytes, beside the time of one
// batch of random lookups.
//
//   example-hugepages create INDEX [ENTRIES]   write a test index (default
//                                              6,600,000 entries, about 64 MiB)
//   example-hugepages run INDEX [LOOKUPS]      one line per mode (default
//                                              1,000,000 lookups each)
//
// The test index maps key 2i to value i, so a lookup of 2i + 1 misses and
// every answer can be checked: a wrong answer fails the run.
#include <bbtree/builder.h>
#include <bbtree/key_codec.h>
#include <bbtree/memory_report.h>
#include <bbtree/typed.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace {

using monotonic_clock = std::chrono::steady_clock;

double milliseconds_between(monotonic_clock::time_point start, monotonic_clock::time_point end) {
  return std::chrono::duration<double, std::milli>(end - start).count();
}

std::optional<std::uint64_t> parse_count(const char* text) {
  std::uint64_t value = 0;
  const char* end = text + std::strlen(text);
  const auto [stop, failure] = std::from_chars(text, end, value);
  if (failure != std::errc() || stop != end || value == 0) return std::nullopt;
  return value;
}

void create(const std::string& path, std::uint64_t entries) {
  bbtree::build_options options;
  options.keys = bbtree::key_kind::u64;
  options.values = bbtree::value_kind::u64;
  options.overwrite = true;
  bbtree::builder writer(path, options);
  for (std::uint64_t i = 0; i < entries; ++i)
    writer.add(bbtree::u64_key(2 * i), bbtree::u64_value(i));
  const bbtree::build_summary summary = writer.finish();
  std::printf("%s: %llu entries, %llu bytes, %u levels\n", path.c_str(),
              static_cast<unsigned long long>(summary.entries),
              static_cast<unsigned long long>(summary.file_size), summary.height);
}

// splitmix64: the same lookups on every run and machine.
std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string first_line_of(const char* path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return "(not readable)";
  return line;
}

const char* mode_name(bbtree::memory_mode mode) {
  switch (mode) {
    case bbtree::memory_mode::map:
      return "map";
    case bbtree::memory_mode::map_huge_pages:
      return "map_huge_pages";
    case bbtree::memory_mode::copy_huge_pages:
      return "copy_huge_pages";
    case bbtree::memory_mode::map_then_copy_huge_pages:
      return "map_then_copy_huge_pages";
  }
  return "?";
}

const char* thp_eligibility(const bbtree::memory_report& report) {
  if (report.mappings == 0) return "unknown";  // smaps could not be read
  return report.thp_eligible ? "yes" : "no";
}

int run(const std::string& path, std::uint64_t lookups) {
  using index_type = bbtree::typed_index<std::uint64_t, std::uint64_t>;
  const std::uint64_t entries = index_type::open(path).size();
  if (entries == 0) throw std::runtime_error(path + ": empty; make one with `create`");

  // The keys are drawn before any timing: one in four is absent.
  std::vector<std::uint64_t> keys(lookups);
  std::uint64_t state = 42;
  std::uint64_t expected_found = 0;
  for (std::uint64_t& key : keys) {
    const std::uint64_t random = next_random(state);
    const bool present = random % 4 != 0;
    key = 2 * ((random >> 2) % entries) + (present ? 0 : 1);
    expected_found += present;
  }

  std::printf("# %s: %llu entries; %llu random lookups per mode, 3 in 4 present\n", path.c_str(),
              static_cast<unsigned long long>(entries), static_cast<unsigned long long>(lookups));
  std::printf("# transparent_hugepage/enabled: %s\n",
              first_line_of("/sys/kernel/mm/transparent_hugepage/enabled").c_str());
  std::printf("# transparent_hugepage/defrag: %s\n",
              first_line_of("/sys/kernel/mm/transparent_hugepage/defrag").c_str());
  std::printf(
      "# KiB of the mapping(s) holding the index's bytes, from /proc/self/smaps: Rss at open, "
      "then Rss, AnonHugePages and FilePmdMapped after the lookups\n");
  std::printf("%-24s %-8s %9s %11s %9s %9s %9s %13s %13s %11s\n", "mode", "populate", "open_ms",
              "lookups_ms", "ns/lookup", "rss_open", "rss", "anon_huge", "file_pmd",
              "thp_eligible");

  int status = 0;
  for (const bbtree::memory_mode mode :
       {bbtree::memory_mode::map, bbtree::memory_mode::map_huge_pages,
        bbtree::memory_mode::copy_huge_pages, bbtree::memory_mode::map_then_copy_huge_pages}) {
    for (const bool populate : {false, true}) {
      bbtree::open_options options;
      options.memory = mode;
      options.populate = populate;
      const auto opening = monotonic_clock::now();
      const index_type index = index_type::open(path, options);
      const auto opened = monotonic_clock::now();
      const bbtree::memory_report at_open = bbtree::memory_report_for(index.raw());

      std::uint64_t found = 0;
      std::uint64_t wrong = 0;
      const auto looking = monotonic_clock::now();
      for (const std::uint64_t key : keys) {
        const std::optional<std::uint64_t> value = index.get(key);
        found += value.has_value();
        // Checking every answer also keeps the compiler from dropping lookups.
        wrong += value.has_value() != (key % 2 == 0) || (value && *value != key / 2);
      }
      const auto looked = monotonic_clock::now();
      // map_then_copy_huge_pages: the lookups above ran on the file mapping,
      // the copy, or both; report what backs the bytes once it is in place.
      index.raw().wait_for_huge_page_copy();
      const bbtree::memory_report after = bbtree::memory_report_for(index.raw());

      const double lookups_ms = milliseconds_between(looking, looked);
      std::printf("%-24s %-8s %9.3f %11.3f %9.1f %9llu %9llu %13llu %13llu %11s\n", mode_name(mode),
                  populate ? "yes" : "no", milliseconds_between(opening, opened), lookups_ms,
                  lookups_ms * 1e6 / static_cast<double>(lookups),
                  static_cast<unsigned long long>(at_open.rss_kb),
                  static_cast<unsigned long long>(after.rss_kb),
                  static_cast<unsigned long long>(after.anon_huge_kb),
                  static_cast<unsigned long long>(after.file_pmd_mapped_kb),
                  thp_eligibility(after));
      std::fflush(stdout);
      if (wrong != 0 || found != expected_found) {
        std::fprintf(stderr, "example-hugepages: %s: %llu wrong answers, %llu found of %llu\n",
                     mode_name(mode), static_cast<unsigned long long>(wrong),
                     static_cast<unsigned long long>(found),
                     static_cast<unsigned long long>(expected_found));
        status = 1;
      }
    }
  }
  return status;
}

int usage() {
  std::fprintf(stderr,
               "usage: example-hugepages create INDEX [ENTRIES]\n"
               "       example-hugepages run INDEX [LOOKUPS]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 3 || argc > 4) return usage();
  const std::string_view command = argv[1];
  const std::optional<std::uint64_t> count =
      argc == 4 ? parse_count(argv[3])
                : std::optional<std::uint64_t>(command == "create" ? 6'600'000 : 1'000'000);
  if (!count) return usage();
  if (command == "create") {
    create(argv[2], *count);
    return 0;
  }
  if (command == "run") return run(argv[2], *count);
  return usage();
} catch (const std::exception& failure) {
  std::fprintf(stderr, "example-hugepages: %s\n", failure.what());
  return 1;
}
