// memory_mode::map_then_copy_huge_pages: a file mapping answers at once and
// a background copy replaces it at the same address.  Checked here: answers
// and cursors stay right across the swap, the swap really happens (the file
// is no longer mapped), and a reader closed or failing mid-copy leaves no
// thread and no mapping behind.  Whether huge pages back the copy is the
// kernel's decision and is not checked (memory_report.h reports it).
#include "test_support.h"

#include <bbtree/memory_report.h>
#include <bbtree/typed.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace bbtree;
using namespace bbtree::test;

namespace {

std::uint64_t value_of(std::uint64_t key) { return key * 7 + 3; }

// Keys 0, 2, 4, ...: odd probes miss.  Big enough that the copy takes a
// while (about 5 MiB), so that lookups overlap it.
std::filesystem::path build_even_keys(const scratch_directory& scratch, std::uint64_t entries) {
  const std::filesystem::path path = scratch / "copy.bbt";
  builder writer(path, options_for({key_kind::u64, 8, value_kind::u64, 8}));
  for (std::uint64_t i = 0; i < entries; ++i)
    writer.add(u64_key(2 * i), u64_value(value_of(2 * i)));
  writer.finish();
  return path;
}

open_options background_copy_options() {
  open_options options;
  options.memory = memory_mode::map_then_copy_huge_pages;
  return options;
}

std::size_t count_entries(const std::filesystem::path& directory) {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(directory)) ++count;
  return count;
}

std::size_t thread_count() { return count_entries("/proc/self/task"); }

// The process's address space (VmSize), in KiB.
std::uint64_t address_space_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7));
  }
  return 0;
}

}  // namespace

TEST_CASE("lookups and cursors stay right while the copy replaces the mapping",
          "[memory][background_copy]") {
  scratch_directory scratch;
  constexpr std::uint64_t entries = 330'000;
  const std::filesystem::path path = build_even_keys(scratch, entries);

  const reader index = reader::open(path, background_copy_options());
  const std::byte* address = index.bytes().data();
  // Cursors made before the swap hold pointers into the mapping.
  cursor from_start = index.begin();
  cursor from_middle = index.lower_bound(u64_key(entries));  // key `entries` is even or next

  std::atomic<bool> copied{false};
  std::atomic<std::uint64_t> wrong{0};
  std::atomic<std::uint64_t> lookups{0};
  std::vector<std::thread> readers;
  for (unsigned seed = 1; seed <= 2; ++seed) {
    readers.emplace_back([&, seed] {
      std::mt19937_64 random(seed);
      // Until the copy is in place, and as long again after it.
      for (std::uint64_t round = 0, after = 0; after < 20'000; ++round) {
        const std::uint64_t key = random() % (2 * entries);
        const std::optional<std::string_view> value = index.get(u64_key(key));
        const bool right =
            key % 2 == 0 ? value && decode_u64_value(*value) == value_of(key) : !value.has_value();
        if (!right) wrong.fetch_add(1, std::memory_order_relaxed);
        lookups.fetch_add(1, std::memory_order_relaxed);
        if (copied.load(std::memory_order_relaxed)) ++after;
      }
    });
  }
  const bool in_place = index.wait_for_huge_page_copy();
  copied.store(true);
  for (auto& thread : readers) thread.join();

  REQUIRE(in_place);
  REQUIRE(wrong.load() == 0);
  REQUIRE(lookups.load() >= 40'000);
  // Same address, and the file is no longer mapped: the copy took its place.
  REQUIRE(index.bytes().data() == address);
  REQUIRE(mappings_of_file(path).empty());
  // Waiting again returns at once with the same answer.
  REQUIRE(index.wait_for_huge_page_copy());

  std::uint64_t expected_key = 0;
  std::uint64_t seen = 0;
  for (; !from_start.is_end(); ++from_start, ++seen, expected_key += 2) {
    REQUIRE(decode_u64_key(from_start.key()) == expected_key);
    REQUIRE(decode_u64_value(from_start.value()) == value_of(expected_key));
  }
  REQUIRE(seen == entries);
  std::uint64_t middle_key = decode_u64_key(from_middle.key());
  REQUIRE(middle_key == entries + entries % 2);
  for (int step = 0; step < 1000; ++step) {
    --from_middle;
    middle_key -= 2;
    REQUIRE(decode_u64_key(from_middle.key()) == middle_key);
  }
}

TEST_CASE("every query agrees with the model during and after the copy",
          "[memory][background_copy][differential]") {
  scratch_directory scratch;
  const shape kinds{key_kind::bytes, 0, value_kind::bytes, 0};
  std::mt19937_64 random(99);
  model entries;
  while (entries.size() < 40'000)
    entries.emplace(random_key(kinds, random), random_value(kinds, random));
  const std::filesystem::path path = scratch / "strings.bbt";
  build_file(path, kinds, entries);
  const std::vector<std::string> probes = probes_for(kinds, entries, random, 2000);

  const reader index = reader::open(path, background_copy_options());
  check_against_model(index, entries, probes);  // most of it runs while the copy does
  REQUIRE(index.wait_for_huge_page_copy());
  REQUIRE(mappings_of_file(path).empty());
  check_against_model(index, entries, probes);
}

TEST_CASE("a reader closed while its copy runs leaves no thread or mapping",
          "[memory][background_copy]") {
  scratch_directory scratch;
  const std::filesystem::path path = build_even_keys(scratch, 330'000);
  {
    // One copy to the end first: the C library keeps a finished thread's
    // stack and malloc arena for the next thread, and that memory stays.
    const reader first = reader::open(path, background_copy_options());
    REQUIRE(first.wait_for_huge_page_copy());
  }
  const std::size_t threads_before = thread_count();
  const std::uint64_t address_space_before = address_space_kb();
  const std::uint64_t file_kb = std::filesystem::file_size(path) / 1024;
  constexpr int rounds = 30;
  for (int round = 0; round < rounds; ++round) {
    const reader index = reader::open(path, background_copy_options());
    REQUIRE(index.get(u64_key(2 * round)).has_value());
  }
  REQUIRE(thread_count() == threads_before);
  // A leaked mapping or copy would add at least the file's size a round.
  // Allocators (a sanitizer's among them) may grow a little meanwhile.
  REQUIRE(address_space_kb() < address_space_before + 2 * file_kb);
  REQUIRE(address_space_before > 0);
  REQUIRE(mappings_of_file(path).empty());
}

TEST_CASE("a file that fails to open in the copying mode starts no copy",
          "[memory][background_copy]") {
  scratch_directory scratch;
  const std::filesystem::path path = build_even_keys(scratch, 1000);
  std::string bytes = read_file(path);
  bytes[0] ^= 0x01;  // the magic
  write_file(path, bytes);
  const std::size_t threads_before = thread_count();
  try {
    (void)reader::open(path, background_copy_options());
    FAIL("a file with a bad magic opened");
  } catch (const error& failure) {
    REQUIRE(failure.code() == errc::not_bbtree);
    REQUIRE(std::string(failure.what()).find(path.string()) != std::string::npos);
  }
  REQUIRE(thread_count() == threads_before);
  REQUIRE(mappings_of_file(path).empty());
}

TEST_CASE("the other memory modes report without waiting whether they copied",
          "[memory][background_copy]") {
  scratch_directory scratch;
  const std::filesystem::path path = build_even_keys(scratch, 1000);
  for (const memory_mode mode :
       {memory_mode::map, memory_mode::map_huge_pages, memory_mode::copy_huge_pages}) {
    open_options options;
    options.memory = mode;
    const reader index = reader::open(path, options);
    REQUIRE(index.wait_for_huge_page_copy() == (mode == memory_mode::copy_huge_pages));
  }
  const std::string bytes = read_file(path);
  const reader in_memory = reader::from_memory(std::as_bytes(std::span(bytes)));
  REQUIRE_FALSE(in_memory.wait_for_huge_page_copy());
}

TEST_CASE("a path as std::filesystem::path, std::string or C string opens the same file",
          "[memory][open]") {
  scratch_directory scratch;
  const std::filesystem::path path = build_even_keys(scratch, 1000);
  const std::string name = path.string();
  for (const memory_mode mode :
       {memory_mode::map, memory_mode::map_huge_pages, memory_mode::copy_huge_pages,
        memory_mode::map_then_copy_huge_pages}) {
    open_options options;
    options.memory = mode;
    const reader opened[] = {reader::open(path, options), reader::open(name, options),
                             reader::open(name.c_str(), options)};
    for (const reader& index : opened) {
      REQUIRE(index.name() == name);
      REQUIRE(index.size() == 1000);
      REQUIRE(index.get(u64_key(1998)) == u64_value(value_of(1998)));
      REQUIRE_FALSE(index.get(u64_key(1999)));
    }
  }
  // typed_index forwards each form.
  using typed = typed_index<std::uint64_t, std::uint64_t>;
  REQUIRE(typed::open(path).get(4) == value_of(4));
  REQUIRE(typed::open(name).get(4) == value_of(4));
  REQUIRE(typed::open(name.c_str()).get(4) == value_of(4));
}

TEST_CASE("each form of a path names the file when it fails to open", "[memory][open]") {
  scratch_directory scratch;
  const std::filesystem::path missing = scratch / "missing.bbt";
  const std::filesystem::path empty = scratch / "empty.bbt";
  write_file(empty, "");
  const std::filesystem::path directory = scratch.path();
  const auto failure_of = [](const auto& open) -> std::pair<errc, std::string> {
    try {
      (void)open();
    } catch (const error& failure) {
      return {failure.code(), failure.what()};
    }
    FAIL("the file opened");
    return {};
  };
  struct failing_file {
    std::filesystem::path file;
    errc code;
    std::string words;  // in the message besides the name
  };
  for (const failing_file& failing : {failing_file{missing, errc::io_error, "No such file"},
                                      failing_file{empty, errc::not_bbtree, ""},
                                      failing_file{directory, errc::io_error, "Is a directory"}}) {
    const std::filesystem::path& file = failing.file;
    const std::string name = file.string();
    const std::pair<errc, std::string> failures[] = {
        failure_of([&] { return reader::open(file); }),
        failure_of([&] { return reader::open(name); }),
        failure_of([&] { return reader::open(name.c_str()); })};
    for (const auto& [failure_code, message] : failures) {
      INFO(message);
      REQUIRE(failure_code == failing.code);
      REQUIRE(message.find(name) != std::string::npos);
      REQUIRE(message.find(failing.words) != std::string::npos);
    }
  }
}
