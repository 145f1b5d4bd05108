// Differential tests: every key and value kind, random and adversarial key
// sets, several page sizes; every query is checked against std::map.
#include "test_support.h"
#include "verify_test_support.h"

#include <bbtree/detail/reader_core.h>

#include <fmt/format.h>
#include <catch2/catch.hpp>

using namespace bbtree;
using namespace bbtree::test;

namespace {

const std::vector<shape>& all_shapes() {
  static const std::vector<shape> shapes = {
      {key_kind::u64, 0, value_kind::u64, 0, 4096},
      {key_kind::u64, 0, value_kind::none, 0, 512},
      {key_kind::i64, 0, value_kind::u64, 0, 1024},
      {key_kind::i64, 0, value_kind::bytes, 0, 512},
      {key_kind::fixed, 16, value_kind::u64, 0, 4096},
      {key_kind::fixed, 20, value_kind::fixed, 12, 512},
      {key_kind::fixed, 32, value_kind::none, 0, 1024},
      {key_kind::fixed, 3, value_kind::bytes, 0, 512},
      {key_kind::bytes, 0, value_kind::bytes, 0, 4096},
      {key_kind::bytes, 0, value_kind::bytes, 0, 512},
      {key_kind::bytes, 0, value_kind::none, 0, 1024},
      {key_kind::bytes, 0, value_kind::u64, 0, 65536},
      {key_kind::bytes, 0, value_kind::fixed, 7, 2048},
  };
  return shapes;
}

model random_model(const shape& kinds, std::size_t count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  model entries;
  while (entries.size() < count) entries[random_key(kinds, random)] = random_value(kinds, random);
  return entries;
}

void build_and_check(const shape& kinds, const model& entries, std::size_t random_probes = 200) {
  scratch_directory scratch;
  const auto path = scratch / "index.bbt";
  build_file(path, kinds, entries);
  const reader index = reader::open(path);
  std::mt19937_64 random(entries.size());
  check_against_model(index, entries, probes_for(kinds, entries, random, random_probes));
}

}  // namespace

TEST_CASE("every kind: random entries at many sizes", "[differential]") {
  for (const shape& kinds : all_shapes()) {
    for (std::size_t count : {0, 1, 2, 3, 17, 255, 256, 1000, 5000}) {
      // Small key spaces cannot hold many distinct keys.
      if (kinds.keys == key_kind::fixed && kinds.key_size < 4 && count > 5000) continue;
      DYNAMIC_SECTION(kinds.describe() << ", " << count << " entries") {
        build_and_check(kinds, random_model(kinds, count, count * 31 + kinds.page_size));
      }
    }
  }
}

TEST_CASE("counts at page boundaries", "[differential]") {
  // Fill exactly one leaf, then one entry more and one less, then the same
  // around the first inner split.
  const shape kinds{key_kind::u64, 0, value_kind::u64, 0, 512};
  scratch_directory scratch;
  model probe_model = random_model(kinds, 20000, 7);
  build_file(scratch / "probe.bbt", kinds, probe_model);
  const reader probe = reader::open(scratch / "probe.bbt");
  const std::uint32_t per_leaf = probe.core().page(1, 0).count;
  REQUIRE(per_leaf > 2);
  for (std::size_t count :
       {std::size_t{per_leaf} - 1, std::size_t{per_leaf}, std::size_t{per_leaf} + 1,
        std::size_t{per_leaf} * 2, std::size_t{per_leaf} * 60, std::size_t{per_leaf} * 61 + 1}) {
    DYNAMIC_SECTION(count << " entries") {
      model entries;
      for (std::uint64_t i = 0; i < count; ++i)
        entries[std::string(u64_key(i * 3).view())] = std::string(u64_value(i).view());
      build_and_check(kinds, entries, 50);
    }
  }
}

TEST_CASE("byte-string keys: adversarial sets", "[differential]") {
  const std::uint32_t page_sizes[] = {512, 4096};
  for (std::uint32_t page_size : page_sizes) {
    const shape kinds{key_kind::bytes, 0, value_kind::bytes, 0, page_size};
    SECTION("long shared prefixes, path-like") {
      model entries;
      std::mt19937_64 random(page_size);
      const std::string base = "https://example.com/a/very/long/shared/prefix/of/urls/and/paths/";
      for (int i = 0; i < 3000; ++i) {
        std::string key =
            base + std::to_string(random() % 50) + "/" + std::to_string(random() % 100000);
        entries[key] = "v" + std::to_string(i);
      }
      build_and_check(kinds, entries);
    }
    SECTION("keys that tie in their inline keys and differ later") {
      model entries;
      for (int i = 0; i < 2000; ++i) {
        std::string key =
            "12345678" + std::string(static_cast<std::size_t>(i % 7), 'x') + std::to_string(i);
        entries[key] = std::to_string(i);
      }
      build_and_check(kinds, entries);
    }
    SECTION("keys that are prefixes of other keys, with 0x00 and 0xFF bytes") {
      model entries;
      std::string key;
      for (int i = 0; i < 300; ++i) {
        key += static_cast<char>(i % 3 == 0 ? '\0' : (i % 3 == 1 ? '\xff' : 'k'));
        entries[key] = std::string(1, static_cast<char>(i));
        entries[key + '\0'] = "zero";
      }
      entries[""] = "the empty key";
      build_and_check(kinds, entries);
    }
    SECTION("keys and values of the maximum length") {
      model entries;
      entries[std::string(format::max_key_length, 'a')] = std::string(100000, 'v');
      entries[std::string(format::max_key_length - 1, 'a') + "b"] = "";
      entries[std::string(format::max_key_length, '\xff')] = std::string(3 * 1024 * 1024, 'w');
      entries[std::string(70, 'a')] = std::string(page_size, 'x');
      for (int i = 0; i < 100; ++i)
        entries[std::string(static_cast<std::size_t>(i) * 600, 'a')] = std::to_string(i);
      build_and_check(kinds, entries, 20);
    }
    SECTION("only the empty key") { build_and_check(kinds, model{{"", "v"}}); }
  }
}

TEST_CASE("keys of at most 8 bytes: leaves with tails and runs of tied inline keys",
          "[differential]") {
  // Leaves whose keys share 1 to 3 bytes keep 4 of the rest inline and the
  // others as tails (spec 15.2).  Runs of consecutive keys share those 4
  // bytes too, so lookups, bounds and batches must settle ties by the tails;
  // the runs' starts, spread over the key space, give the leaves prefixes of
  // every length.
  const shape shapes[] = {
      {key_kind::u64, 0, value_kind::u64, 0, 512},
      {key_kind::u64, 0, value_kind::none, 0, 1024},
      {key_kind::i64, 0, value_kind::u64, 0, 512},
      {key_kind::fixed, 5, value_kind::u64, 0, 512},
      {key_kind::fixed, 6, value_kind::bytes, 0, 512},
      {key_kind::fixed, 7, value_kind::u64, 0, 1024},
      {key_kind::fixed, 8, value_kind::fixed, 3, 512},
  };
  for (const shape& kinds : shapes) {
    DYNAMIC_SECTION(kinds.describe()) {
      const std::uint32_t key_size = kinds.key_size == 0 ? 8 : kinds.key_size;
      std::mt19937_64 random(key_size * 7 + kinds.page_size);
      model entries;
      while (entries.size() < 6000) {
        // A run of up to 60 keys counting up in the last byte, from a start
        // whose first bytes come from a small set.
        std::string start = random_key({key_kind::fixed, key_size}, random);
        start[0] = static_cast<char>(random() % 3);
        if (key_size > 5) start[1] = static_cast<char>(random() % 4);
        start.back() = 0;
        const std::size_t run = 1 + random() % 60;
        for (std::size_t i = 0; i < run; ++i) {
          std::string key = start;
          key.back() = static_cast<char>(i * 4);
          entries[key] = random_value(kinds, random);
        }
      }
      scratch_directory scratch;
      build_file(scratch / "index.bbt", kinds, entries);
      const reader index = reader::open(scratch / "index.bbt");
      // The data has the shape meant: leaves with tails, some with ties.
      std::size_t leaves_with_tails = 0;
      std::size_t tied_leaves = 0;
      const auto& core = index.core();
      for (std::uint32_t leaf = core.first_leaf(); leaf < core.end_leaf(); ++leaf) {
        const detail::page_view page = core.page(leaf, 0);
        if (page.sections.tail_width == 0) continue;
        ++leaves_with_tails;
        for (std::uint32_t i = 1; i < page.count; ++i) {
          if (page.inline_key(i) == page.inline_key(i - 1)) {
            ++tied_leaves;
            break;
          }
        }
      }
      CHECK(leaves_with_tails > 10);
      CHECK(tied_leaves > 10);
      std::mt19937_64 probe_random(entries.size());
      check_against_model(index, entries, probes_for(kinds, entries, probe_random, 500));
    }
  }
}

TEST_CASE("a value of 64 MiB round-trips", "[differential][large]") {
  const shape kinds{key_kind::u64, 0, value_kind::bytes, 0, 4096};
  model entries;
  std::string big(64u << 20, '\0');
  for (std::size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>(i >> 12);
  entries[std::string(u64_key(1).view())] = "small";
  entries[std::string(u64_key(2).view())] = big;
  entries[std::string(u64_key(3).view())] = "after";
  build_and_check(kinds, entries, 10);
}

TEST_CASE("millions of entries", "[differential][large]") {
  const shape kinds{key_kind::u64, 0, value_kind::u64, 0, 4096};
  model entries;
  std::mt19937_64 random(2024);
  while (entries.size() < 2'000'000)
    entries[std::string(u64_key(random()).view())] = std::string(u64_value(random()).view());
  scratch_directory scratch;
  build_file(scratch / "big.bbt", kinds, entries);
  const reader index = reader::open(scratch / "big.bbt");
  REQUIRE(index.info().height >= 3);
  std::vector<std::string> probes;
  for (int i = 0; i < 20000; ++i) probes.push_back(random_key(kinds, random));
  auto it = entries.begin();
  for (int i = 0; i < 20000; ++i, std::advance(it, 97)) probes.push_back(it->first);
  check_against_model(index, entries, probes);
}

TEST_CASE("the same input gives byte-identical files", "[roundtrip]") {
  for (const shape& kinds : all_shapes()) {
    DYNAMIC_SECTION(kinds.describe()) {
      const model entries = random_model(kinds, 3000, 99);
      scratch_directory scratch;
      build_file(scratch / "a.bbt", kinds, entries);
      build_file(scratch / "b.bbt", kinds, entries);
      REQUIRE(read_file(scratch / "a.bbt") == read_file(scratch / "b.bbt"));
      // And through the sorting builder, from shuffled input.
      std::vector<std::pair<std::string, std::string>> shuffled(entries.begin(), entries.end());
      std::mt19937_64 random(5);
      std::shuffle(shuffled.begin(), shuffled.end(), random);
      build_options options = options_for(kinds);
      sorting_builder sorter(scratch / "c.bbt", options);
      for (const auto& [key, value] : shuffled) sorter.add(key, value);
      sorter.finish();
      const reader a = reader::open(scratch / "a.bbt");
      const reader c = reader::open(scratch / "c.bbt");
      REQUIRE(c.size() == entries.size());
      // Only the build flags (input unsorted) may differ.
      std::string bytes_a = read_file(scratch / "a.bbt");
      std::string bytes_c = read_file(scratch / "c.bbt");
      REQUIRE(bytes_a.size() == bytes_c.size());
      REQUIRE(bytes_a.substr(kinds.page_size) == bytes_c.substr(kinds.page_size));
      REQUIRE((c.info().build_flags & format::build_flag::input_unsorted) != 0);
      REQUIRE((a.info().build_flags & format::build_flag::input_unsorted) == 0);
    }
  }
}

namespace {

// Path-like keys over 512-byte pages: a tree of four or more levels whose
// top levels fit reader_core's table of decoded pages.
model path_like_model(std::size_t count) {
  std::mt19937_64 random(count);
  model entries;
  while (entries.size() < count) {
    entries["/home/user" + std::to_string(random() % 300) + "/projects/" +
            std::to_string(random() % 1000000)] = std::to_string(random());
  }
  return entries;
}

std::string damaged_root_level(const std::string& good, std::uint32_t root_page) {
  std::string file = good;
  const std::uint64_t level_byte =
      std::uint64_t{root_page} * page_size_of(file) + format::page::level_offset;
  store_field<std::uint8_t>(file, level_byte, static_cast<std::uint8_t>(file[level_byte] + 1));
  rechecksum_page(file, root_page);
  return file;
}

}  // namespace

TEST_CASE("the top levels of a byte-string file are decoded at open", "[differential]") {
  const shape kinds{key_kind::bytes, 0, value_kind::bytes, 0, 512};
  const model entries = path_like_model(20000);
  const std::string good = build_bytes(kinds, entries);
  const reader index = reader::from_memory(as_bytes(good));
  const detail::reader_core& core = index.core();
  REQUIRE(index.info().height >= 4);
  // Whole levels from the root down, and not the leaves' parents.
  const std::uint32_t decoded = core.decoded_upper_pages();
  REQUIRE(decoded > 1);
  const std::uint32_t first_decoded = index.info().page_count - decoded;
  REQUIRE(first_decoded > core.level_first_page(1));
  std::uint32_t level = 2;
  while (core.level_first_page(level) != first_decoded) {
    ++level;
    REQUIRE(level < index.info().height);
  }
  std::mt19937_64 random(5);
  check_against_model(index, entries, probes_for(kinds, entries, random, 500));

  SECTION("a damaged upper page is reported by the lookups that reach it") {
    const std::string file = damaged_root_level(good, index.info().root_page);
    const reader damaged = reader::from_memory(as_bytes(file));
    REQUIRE(damaged.core().decoded_upper_pages() == 0);
    try {
      (void)damaged.get(entries.begin()->first);
      FAIL("a lookup through a damaged root answered");
    } catch (const error& e) {
      REQUIRE(e.code() == errc::corrupt);
      REQUIRE_THAT(e.what(), Catch::Contains(fmt::format("page {} ", index.info().root_page)));
    }
  }
  SECTION("files searched as integers keep no table") {
    const shape u64_kinds{key_kind::u64, 0, value_kind::u64, 0, 512};
    model numbers;
    for (std::uint64_t i = 0; i < 20000; ++i)
      numbers[std::string(u64_key(i * 7).view())] = std::string(u64_value(i).view());
    const std::string file = build_bytes(u64_kinds, numbers);
    const reader u64_index = reader::from_memory(as_bytes(file));
    REQUIRE(u64_index.info().height >= 3);
    REQUIRE(u64_index.core().decoded_upper_pages() == 0);
  }
}
