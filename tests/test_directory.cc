// The directory region (spec/FORMAT.md, sections 12.3 and 15.7): lookups
// that start from it answer as the tree does, on keys chosen to stress it
// (a long prefix shared by every separator, heads that tie, probes around
// the prefix); open refuses a directory of the wrong shape; verification
// finds damage behind a valid checksum; and no damage makes a reader crash
// or loop.
#include "../lib/src/head_compare.h"
#include "test_support.h"
#include "verify_test_support.h"

#include <bbtree/detail/reader_core.h>
#include <bbtree/format/crc32c.h>
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

using namespace bbtree;
using namespace bbtree::test;
namespace header = bbtree::format::header;
namespace directory = bbtree::format::directory;

namespace {

// URLs of one site: every separator shares the site, and the "deep" keys
// differ only some 60 bytes past it, so that their heads tie.
model one_site_model(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  model entries;
  const std::string site = "https://www.example.com/archive/";
  while (entries.size() < count) {
    const std::string number = std::to_string(random() % 10000000);
    switch (random() % 3) {
      case 0:
        entries[site + number + ".html"] = number;
        break;
      case 1:
        entries[site + "deep/" + std::string(60, 'y') + number] = number;
        break;
      default:
        entries[site + "deep/" + std::string(60, 'y')] = "the tie's own prefix";
        break;
    }
  }
  return entries;
}

// Probes around the directory's prefix: below it, above it, a proper prefix
// of it, and keys that share it and end at or past the heads.
std::vector<std::string> prefix_probes(const reader& index) {
  const detail::reader_core& core = index.core();
  const file_info& info = index.info();
  std::vector<std::string> probes;
  if (info.directory_length == 0) return probes;
  const std::uint64_t prefix_at =
      info.directory_offset +
      directory::prefix_offset(core.directory().entries, info.directory_head_size);
  const std::string prefix(reinterpret_cast<const char*>(index.core().base() + prefix_at),
                           info.directory_prefix_length);
  probes.push_back(prefix);
  for (std::size_t cut = 0; cut <= prefix.size(); cut += 1 + prefix.size() / 8) {
    std::string below = prefix.substr(0, cut);
    probes.push_back(below);
    if (cut < prefix.size()) {
      below.push_back(static_cast<char>(prefix[cut] - 1));
      probes.push_back(below + "zzz");
      probes.push_back(prefix.substr(0, cut) + static_cast<char>(prefix[cut] + 1));
    }
  }
  for (std::size_t extra = 0; extra < 70; extra += 7)
    probes.push_back(prefix + std::string(extra, '\0'));
  probes.push_back(prefix + std::string(40, '\xff'));
  return probes;
}

// Builds the model with and without a directory, and checks that both
// answer every query as the model does, and descend to the same leaves.
void check_both_ways(shape kinds, const model& entries, bool expect_directory) {
  kinds.directory = false;
  const std::string without = build_bytes(kinds, entries);
  kinds.directory = true;
  const std::string with = build_bytes(kinds, entries);
  const reader fast = reader::from_memory(as_bytes(with));
  const reader plain = reader::from_memory(as_bytes(without));
  INFO(kinds.describe() << ", height " << fast.info().height);
  REQUIRE((fast.info().directory_length != 0) == expect_directory);
  // Integer probes search a tree over the heads; the others the heads.
  const bool integer = format::word_keys(kinds.keys, kinds.key_size);
  REQUIRE(fast.core().uses_directory() == (expect_directory && !integer));
  REQUIRE(fast.core().integer_directory().empty() == !(expect_directory && integer));
  REQUIRE(plain.info().directory_length == 0);
  REQUIRE_FALSE(plain.core().uses_directory());
  REQUIRE(verify_string(with).ok());
  // The directory only follows the other regions: the pages are the same.
  const std::uint64_t pages_end = std::uint64_t{plain.info().page_count} * plain.info().page_size;
  REQUIRE(with.compare(plain.info().page_size, pages_end - plain.info().page_size, without,
                       plain.info().page_size, pages_end - plain.info().page_size) == 0);

  std::mt19937_64 random(entries.size());
  std::vector<std::string> probes = probes_for(kinds, entries, random, 300);
  for (std::string& probe : prefix_probes(fast)) {
    if (kinds.keys == key_kind::bytes || probe.size() == kinds.key_size)
      probes.push_back(std::move(probe));
  }
  check_against_model(fast, entries, probes);
  if (!expect_directory) return;
  if (integer) {
    // Mapped, the first lookup builds the tree from the mapping: the same
    // tree as in memory.
    const scratch_directory scratch;
    write_file(scratch / "with.bbt", with);
    const reader mapped = reader::open(scratch / "with.bbt");
    check_against_model(mapped, entries, probes);
    const detail::integer_directory& from_mapping = mapped.core().integer_directory();
    const detail::integer_directory& in_memory = fast.core().integer_directory();
    REQUIRE(from_mapping.entries() == in_memory.entries());
    for (const std::string& probe : probes) {
      const std::uint64_t word = fast.core().integer_word(probe);
      REQUIRE(from_mapping.count_at_most(from_mapping.probe_of(word)) ==
              in_memory.count_at_most(in_memory.probe_of(word)));
    }
  }
  // The level-1 page the directory names leads to the leaf the tree's
  // descent reaches, in batches of every size up to the largest.
  const detail::reader_core& core = fast.core();
  const std::vector<std::string_view> views(probes.begin(), probes.end());
  std::vector<std::uint32_t> pages(views.size());
  if (integer) {
    const detail::integer_directory& tree = core.integer_directory();
    for (std::size_t i = 0; i < views.size(); ++i) {
      pages[i] =
          core.level_first_page(1) + tree.count_at_most(tree.probe_of(core.integer_word(views[i])));
    }
  }
  for (std::size_t start = 0, size = 1; !integer && start < views.size(); start += size) {
    size = std::min({size % detail::reader_core::max_directory_batch + 1, views.size() - start});
    core.directory_pages(views.data() + start, size, pages.data() + start);
  }
  for (std::size_t i = 0; i < views.size(); ++i) {
    INFO("probe " << i);
    const detail::page_view upper = core.page(pages[i], 1);
    const std::uint32_t leaf =
        core.level_first_page(0) + upper.header_word + core.count_below(upper, views[i], true);
    REQUIRE(leaf == plain.core().descend(views[i]));
  }
}

}  // namespace

// The reader orders heads by a chain of subtract-with-borrow on x86-64;
// the portable version serves other targets.  Both are held to memcmp's
// order, and head_words to the builder's zero padding, at every head size.
TEST_CASE("head order: the borrow chain and the portable one agree with memcmp",
          "[directory][head]") {
  std::mt19937_64 random(12);
  const auto check_size = [&]<std::size_t HeadSize>() {
    INFO("head size " << HeadSize);
    // One byte past an 8-byte boundary, so that no word is aligned.
    alignas(8) std::array<unsigned char, 1 + format::directory::max_head_size> head_storage{};
    alignas(8) std::array<unsigned char, 1 + format::directory::max_head_size> probe_storage{};
    unsigned char* const head = head_storage.data() + 1;
    unsigned char* const probe = probe_storage.data() + 1;
    int below = 0, equal = 0, above = 0;
    for (int round = 0; round < 3000; ++round) {
      for (std::size_t at = 0; at < HeadSize; ++at) head[at] = static_cast<unsigned char>(random());
      std::memcpy(probe, head, HeadSize);
      // One changed byte, anywhere (so each word in turn decides), two,
      // or none; and probes shorter than a head, padded with zeros.
      const std::size_t changes = round % 50 == 49 ? 0 : 1 + round % 2;
      for (std::size_t change = 0; change < changes; ++change) {
        const std::size_t at = random() % HeadSize;
        probe[at] = static_cast<unsigned char>(head[at] ^ (1 + random() % 255));
      }
      std::size_t probe_length = HeadSize + random() % 8;
      if (round % 5 == 3) {
        probe_length = random() % HeadSize;
        std::memset(probe + probe_length, 0, HeadSize - probe_length);
      }
      std::string rest(reinterpret_cast<const char*>(probe), std::min(probe_length, HeadSize));
      rest.resize(probe_length, 'x');  // bytes past the head do not count
      detail::head_words<HeadSize> words;
      words.assign(rest);
      const int order = std::memcmp(head, probe, HeadSize);
      below += order < 0;
      equal += order == 0;
      above += order > 0;
      REQUIRE(detail::head_at_most_portable<HeadSize>(head, words) == (order <= 0));
      REQUIRE(detail::head_at_most<HeadSize>(head, words) == (order <= 0));
#if defined(__x86_64__)
      REQUIRE(detail::head_at_most_borrow<HeadSize>(head, words) == (order <= 0));
#endif
      REQUIRE(detail::head_equals<HeadSize>(head, words) == (order == 0));
    }
    // Each outcome came up often enough to have been tested.
    REQUIRE(below > 500);
    REQUIRE(equal > 50);
    REQUIRE(above > 500);
  };
  [&]<std::size_t... Words>(std::index_sequence<Words...>) {
    (check_size.template operator()<8 * (Words + 1)>(), ...);
  }
  (std::make_index_sequence<format::directory::max_head_size / 8>{});
}

TEST_CASE("lookups through the directory answer as the tree does", "[directory][differential]") {
  SECTION("one site's URLs: a long shared prefix and tied heads") {
    check_both_ways({key_kind::bytes, 0, value_kind::bytes, 0, 512}, one_site_model(6000, 1), true);
  }
  SECTION("random byte strings, 1 KiB pages") {
    const shape kinds{key_kind::bytes, 0, value_kind::u64, 0, 1024};
    check_both_ways(kinds, random_model_of(kinds, 20000, 2), true);
  }
  SECTION("fixed 16-byte keys") {
    const shape kinds{key_kind::fixed, 16, value_kind::fixed, 4, 512};
    check_both_ways(kinds, random_model_of(kinds, 8000, 3), true);
  }
  SECTION("fixed 16-byte keys that share their first 12 bytes") {
    const shape kinds{key_kind::fixed, 16, value_kind::none, 0, 512};
    model entries;
    std::mt19937_64 random(4);
    while (entries.size() < 40000) {
      std::string key(12, '\x42');
      key += random_key({key_kind::fixed, 4, value_kind::none, 0, 512}, random);
      entries[key] = "";
    }
    check_both_ways(kinds, entries, true);
  }
  SECTION("integer keys: a tree over 8-byte heads") {
    const shape u64_kinds{key_kind::u64, 0, value_kind::u64, 0, 512};
    check_both_ways(u64_kinds, random_model_of(u64_kinds, 20000, 5), true);
    const shape fixed8{key_kind::fixed, 8, value_kind::none, 0, 512};
    check_both_ways(fixed8, random_model_of(fixed8, 20000, 6), true);
    const shape i64_kinds{key_kind::i64, 0, value_kind::fixed, 3, 512};
    check_both_ways(i64_kinds, random_model_of(i64_kinds, 20000, 10), true);
  }
  SECTION("integer keys: two upper layers, and a partial last node") {
    const shape u64_kinds{key_kind::u64, 0, value_kind::none, 0, 512};
    const model entries = random_model_of(u64_kinds, 300000, 11);
    check_both_ways(u64_kinds, entries, true);
    const reader index = reader::from_memory(as_bytes(build_bytes(u64_kinds, entries)));
    REQUIRE(index.core().integer_directory().entries() > 8 * 9);
    REQUIRE(index.core().integer_directory().entries() % 8 != 0);
  }
  SECTION("integer keys that share their leading bytes: a prefix before the heads") {
    // Keys 0x4242_4242_xxxx_xxxx (u64) and 0x4242_xxxx_xxxx (6-byte fixed keys).
    const shape u64_kinds{key_kind::u64, 0, value_kind::u64, 0, 512};
    const shape fixed6{key_kind::fixed, 6, value_kind::fixed, 2, 512};
    model wide, narrow;
    std::mt19937_64 random(12);
    while (wide.size() < 30000) {
      const std::uint64_t low = random() & 0xFFFFFFFF;
      std::string key(8, '\x42');
      for (int i = 0; i < 4; ++i) key[7 - i] = static_cast<char>(low >> (8 * i));
      wide[key] = std::string(8, 'v');
      narrow[key.substr(0, 2) + key.substr(4, 4)] = "vv";
    }
    check_both_ways(u64_kinds, wide, true);
    check_both_ways(fixed6, narrow, true);
    const reader index = reader::from_memory(as_bytes(build_bytes(u64_kinds, wide)));
    REQUIRE(index.info().directory_prefix_length >= 4);
  }
  SECTION("integer keys built without: the tree from the root") {
    const shape u64_kinds{key_kind::u64, 0, value_kind::u64, 0, 512, false};
    const reader index = reader::from_memory(
        as_bytes(build_bytes(u64_kinds, random_model_of(u64_kinds, 20000, 13))));
    REQUIRE(index.info().directory_length == 0);
    REQUIRE(index.core().integer_directory().empty());
  }
  SECTION("short trees get none") {
    const shape bytes{key_kind::bytes, 0, value_kind::bytes, 0, 4096};
    check_both_ways(bytes, random_model_of(bytes, 300, 7), false);  // height 2
  }
}

namespace {

// A directory region of 8-byte heads over `heads` (already after the
// prefix), with zero locators and `prefix` after them.
std::string integer_region(const std::vector<std::uint64_t>& heads, const std::string& prefix) {
  std::string region(heads.size() * (8 + directory::locator_size), '\0');
  for (std::size_t i = 0; i < heads.size(); ++i)
    format::store_be(reinterpret_cast<unsigned char*>(region.data()) + 8 * i, heads[i]);
  return region + prefix;
}

std::unique_ptr<detail::integer_directory> integer_tree(const std::string& region,
                                                        std::size_t entries,
                                                        std::size_t prefix_length,
                                                        std::uint32_t key_size) {
  auto tree = std::make_unique<detail::integer_directory>();
  tree->reset(directory::region_view(reinterpret_cast<const unsigned char*>(region.data()),
                                     static_cast<std::uint32_t>(entries), 8,
                                     static_cast<std::uint32_t>(prefix_length)),
              key_size);
  return tree;
}

}  // namespace

// The tree over the heads counts as a search of the sorted heads does, at
// every size from one head to three upper layers, for probes on, between
// and beyond the heads, ~0 included; heads in any order (damage) give a
// count in range.
TEST_CASE("the integer directory counts heads as a sorted search does", "[directory]") {
  std::mt19937_64 random(14);
  for (std::size_t entries :
       {1, 2, 7, 8, 9, 63, 64, 65, 72, 73, 80, 81, 100, 647, 648, 729, 1207, 5000, 6562}) {
    INFO("entries " << entries);
    std::vector<std::uint64_t> heads(entries);
    // Small gaps, so that probes land on heads and next to them.
    std::uint64_t at = random() % 4;
    for (std::uint64_t& head : heads) head = at += 1 + random() % 3;
    if (entries > 3) heads.back() = ~std::uint64_t{0};  // a head that pads its node
    const std::string region = integer_region(heads, "");
    const auto tree = integer_tree(region, entries, 0, 8);
    REQUIRE(tree->entries() == entries);
    std::vector<std::uint64_t> probes = {0, ~std::uint64_t{0}, ~std::uint64_t{0} - 1};
    for (std::size_t i = 0; i < 600; ++i) {
      const std::uint64_t head = heads[random() % entries];
      probes.insert(probes.end(), {head - 1, head, head + 1});
    }
    for (const std::uint64_t probe : probes) {
      const auto expected = std::upper_bound(heads.begin(), heads.end(), probe) - heads.begin();
      REQUIRE(tree->count_at_most({probe, 0}) == expected);
    }
    // Out of order, as in a damaged file: any count, within the heads.
    std::shuffle(heads.begin(), heads.end(), random);
    const std::string scrambled = integer_region(heads, "");
    const auto damaged = integer_tree(scrambled, entries, 0, 8);
    for (const std::uint64_t probe : probes) REQUIRE(damaged->count_at_most({probe, 0}) <= entries);
  }
}

// The tree's upper layers are built by the first lookup (not at open):
// lookups that start together all build one, one is kept, and every one
// of them answers as the model does.
TEST_CASE("first lookups race to arrange the integer directory", "[directory][concurrency]") {
  const shape kinds{key_kind::u64, 0, value_kind::u64, 0, 512};
  const model entries = random_model_of(kinds, 20000, 17);
  const std::string file = build_bytes(kinds, entries);
  std::mt19937_64 random(18);
  const std::vector<std::string> probes = probes_for(kinds, entries, random, 40);
  for (int round = 0; round < 20; ++round) {
    const reader index = reader::from_memory(as_bytes(file));
    REQUIRE_FALSE(index.core().integer_directory().empty());
    constexpr int threads = 4;
    std::vector<std::size_t> wrong(threads, 0);
    std::atomic<int> waiting{threads};
    {
      std::vector<std::jthread> lookups;
      for (int t = 0; t < threads; ++t) {
        lookups.emplace_back([&, t] {
          waiting.fetch_sub(1);
          while (waiting.load() > 0) {
          }
          for (std::size_t i = t; i < probes.size(); i += 1 + t) {
            const auto found = entries.find(probes[i]);
            const std::optional<std::string_view> expected =
                found == entries.end() ? std::nullopt
                                       : std::optional<std::string_view>(found->second);
            wrong[t] += index.get(probes[i]) != expected;
          }
        });
      }
    }
    for (int t = 0; t < threads; ++t) REQUIRE(wrong[t] == 0);
  }
}

TEST_CASE("the integer directory's prefix orders probes as the spec does", "[directory]") {
  // Three separators of 6-byte keys that share "AB": heads "C\0\0\0", "D..",
  // "E..", each padded to 8 bytes.
  const auto word = [](std::string key) {
    key.resize(8, '\0');
    return format::load_be<std::uint64_t>(reinterpret_cast<const unsigned char*>(key.data()));
  };
  const std::vector<std::uint64_t> heads = {word("C\x01"), word("D"), word("E\xff\xff\xff")};
  const std::string region = integer_region(heads, "AB");
  const auto tree = integer_tree(region, 3, 2, 6);
  const auto count = [&](const std::string& key) {
    return tree->count_at_most(tree->probe_of(word(key)));
  };
  CHECK(count(std::string("AA\xff\xff\xff\xff")) == 0);  // below the prefix
  CHECK(count(std::string("AC\0\0\0\0", 6)) == 3);       // above it
  CHECK(count(std::string("ABC\0\0\0", 6)) == 0);
  CHECK(count(std::string("ABC\x01\0\0", 6)) == 1);
  CHECK(count(std::string("ABD\0\0\0", 6)) == 2);
  CHECK(count(std::string("ABE\xff\xff\xfe")) == 2);
  CHECK(count(std::string("ABE\xff\xff\xff")) == 3);
  CHECK(count(std::string("AB\xff\0\0\0", 6)) == 3);
  // A prefix longer than the keys (no builder writes one): a key equal to
  // its first bytes is below it; the others compare at those bytes.
  const std::string long_region = integer_region(heads, "ABCDEFGH");
  const auto long_tree = integer_tree(long_region, 3, 8, 6);
  CHECK(long_tree->count_at_most(long_tree->probe_of(word("ABCDEF"))) == 0);
  CHECK(long_tree->count_at_most(long_tree->probe_of(word("ABCDEG"))) == 3);
  CHECK(long_tree->count_at_most(long_tree->probe_of(word("ABCDEE"))) == 0);
  // Heads of another size, or keys over eight bytes: no tree.
  CHECK(integer_tree(region, 3, 2, 9)->empty());
}

namespace {

struct directory_file {
  std::string good;
  std::uint32_t entries = 0;
  std::uint64_t offset = 0, length = 0;
  std::uint32_t head_size = 0, prefix_length = 0;
};

directory_file sample_directory_file() {
  directory_file sample;
  sample.good =
      build_bytes({key_kind::bytes, 0, value_kind::bytes, 0, 512}, one_site_model(3000, 8));
  const reader index = reader::from_memory(as_bytes(sample.good));
  sample.entries = index.core().directory().entries;
  sample.offset = index.info().directory_offset;
  sample.length = index.info().directory_length;
  sample.head_size = index.info().directory_head_size;
  sample.prefix_length = index.info().directory_prefix_length;
  REQUIRE(sample.entries >= 4);
  REQUIRE(sample.prefix_length > 20);
  return sample;
}

void rechecksum_directory(std::string& file, const directory_file& sample) {
  store_field<std::uint32_t>(
      file, header::directory_checksum_offset,
      format::crc32c(file.data() + sample.offset, file.size() - sample.offset));
  rechecksum_header(file);
}

// Every query of a damaged file ends, with an answer or bbtree::error:
// the file read from memory, or, given `scratch`, written there and
// mapped.
void query_everything(const std::string& file, const std::vector<std::string>& probes,
                      const scratch_directory* scratch = nullptr) {
  std::optional<reader> opened;
  try {
    if (scratch != nullptr) {
      const std::filesystem::path path = *scratch / "damaged.bbt";
      write_file(path, file);
      opened.emplace(reader::open(path));
    } else {
      opened.emplace(reader::from_memory(as_bytes(file), "damaged.bbt"));
    }
  } catch (const error&) {
    return;
  }
  std::size_t answers = 0;
  for (const std::string& probe : probes) {
    try {
      answers += opened->get(probe).has_value();
      answers += opened->lower_bound(probe).is_end();
      answers += opened->rank(probe);
    } catch (const error&) {
    }
  }
  try {
    std::vector<std::string_view> keys(probes.begin(), probes.end());
    std::vector<std::optional<std::string_view>> values(keys.size());
    answers += opened->get_many(keys, values);
  } catch (const error&) {
  }
  (void)answers;
}

}  // namespace

TEST_CASE("open refuses a directory of the wrong shape", "[directory][header]") {
  const directory_file sample = sample_directory_file();
  const auto refused = [&](const std::function<void(std::string&)>& edit, const char* text) {
    std::string file = sample.good;
    edit(file);
    rechecksum_header(file);
    try {
      (void)reader::from_memory(as_bytes(file), "shape.bbt");
      FAIL("opened: " << text);
    } catch (const error& e) {
      REQUIRE(e.code() == errc::corrupt_header);
      REQUIRE_THAT(e.what(), Catch::Contains(text));
    }
  };
  for (std::uint32_t head_size : {0u, 4u, 12u, 72u, 4096u}) {
    refused(
        [&](std::string& file) {
          store_field<std::uint32_t>(file, header::directory_head_size_offset, head_size);
        },
        "heads of");
  }
  refused(
      [&](std::string& file) {
        store_field<std::uint32_t>(file, header::directory_prefix_length_offset,
                                   sample.prefix_length + 1);
      },
      "heads of");
  refused(
      [&](std::string& file) {
        store_field<std::uint32_t>(file, header::directory_prefix_length_offset, 65537);
      },
      "heads of");
  // A region that no longer ends the file, or starts off a multiple of 64.
  refused(
      [&](std::string& file) {
        store_field<std::uint64_t>(file, header::directory_length_offset, sample.length - 1);
      },
      "does not end the file");
  refused(
      [&](std::string& file) {
        store_field<std::uint64_t>(file, header::directory_offset_offset, sample.offset + 1);
        store_field<std::uint64_t>(file, header::directory_length_offset, sample.length - 1);
      },
      "does not end the file");
  refused(
      [&](std::string& file) {
        store_field<std::uint64_t>(file, header::directory_length_offset, 0);
        store_field<std::uint64_t>(file, header::directory_offset_offset, file.size());
      },
      "does not end the file");
  // The bit on a file with no directory.
  const std::string plain =
      build_bytes({key_kind::bytes, 0, value_kind::bytes, 0, 512, false}, one_site_model(3000, 8));
  std::string file = plain;
  store_field<std::uint64_t>(file, header::required_features_offset, format::feature::directory);
  rechecksum_header(file);
  REQUIRE_THROWS_AS(reader::from_memory(as_bytes(file)), error);
  // And the fields without the bit: ignored by readers, reported by verify.
  file = plain;
  store_field<std::uint32_t>(file, header::directory_head_size_offset, 32);
  rechecksum_header(file);
  REQUIRE_NOTHROW(reader::from_memory(as_bytes(file)));
  const verify_report report = verify_string(file);
  INFO(describe(report));
  REQUIRE(has_page_problem(report, 0, "reserved header bytes"));
}

TEST_CASE("a locator to a level-1 page that claims level 2 is corrupt: not a miss", "[directory]") {
  // Heads of 32 bytes that all tie (41 bytes shared after "a" or "b"), so
  // that every batched search follows locators to compare full separators.
  model entries;
  for (const char first : {'a', 'b'}) {
    for (int i = 0; i < 3000; ++i) {
      entries[fmt::format("{}{}{:06}", first, std::string(40, 'x'), i)] = std::to_string(i);
    }
  }
  std::string file = build_bytes({key_kind::bytes, 0, value_kind::bytes, 0, 512}, entries);
  const reader good = reader::from_memory(as_bytes(file));
  REQUIRE(good.core().directory().entries >= 2);
  REQUIRE(good.info().directory_prefix_length == 0);
  const std::uint64_t offset = good.info().directory_offset;
  const std::uint32_t count = good.core().directory().entries;
  const std::uint32_t head_size = good.info().directory_head_size;
  const std::uint32_t level1_page = good.core().level_first_page(1);
  // Every locator names the first level-1 page, whose level byte now says
  // 2: a page that passes the page checks of level 2, in level 1's range.
  for (std::uint32_t entry = 0; entry < count; ++entry) {
    store_field<std::uint32_t>(file,
                               offset + directory::locators_offset(count, head_size) +
                                   std::uint64_t{entry} * directory::locator_size +
                                   directory::locator_page_offset,
                               level1_page);
  }
  raw(file)[std::uint64_t{level1_page} * 512 + format::page::level_offset] = 2;
  rechecksum_page(file, level1_page);
  store_field<std::uint32_t>(file, header::directory_checksum_offset,
                             format::crc32c(file.data() + offset, file.size() - offset));
  rechecksum_header(file);
  const reader damaged = reader::from_memory(as_bytes(file), "damaged.bbt");
  std::vector<std::string_view> keys;
  for (const auto& [key, value] : entries) keys.push_back(key);
  std::vector<std::optional<std::string_view>> values(keys.size());
  try {
    damaged.get_many(keys, values);
    FAIL("get_many answered through locators that name a level-1 page");
  } catch (const error& failure) {
    REQUIRE(failure.code() == errc::corrupt);
    REQUIRE_THAT(failure.what(), Catch::Contains("directory entry"));
  }
}

TEST_CASE("the padding before the directory is checked in the minor versions known",
          "[directory][verify]") {
  // Metadata of 3 bytes after its count: the directory starts at the next
  // multiple of 64, after zero padding.
  const std::string good = build_bytes({key_kind::bytes, 0, value_kind::bytes, 0, 512},
                                       one_site_model(3000, 8), {{"a", "b"}});
  const reader index = reader::from_memory(as_bytes(good));
  const file_info& info = index.info();
  const std::uint64_t regions_end =
      std::uint64_t{info.page_count} * info.page_size + info.blob_length + info.metadata_length;
  REQUIRE(info.directory_offset > regions_end);
  for (const std::uint16_t minor :
       {format::format_minor, std::uint16_t(format::format_minor + 1)}) {
    CAPTURE(minor);
    std::string file = good;
    store_field<std::uint16_t>(file, header::minor_offset, minor);
    file[regions_end] = 1;
    rechecksum_header(file);
    for (const bool quick : {false, true}) {
      verify_options options;
      options.quick = quick;
      const verify_report report = verify_string(file, options);
      INFO(describe(report));
      // A later minor version may use the padding, as any reserved bytes.
      REQUIRE(has_region_problem(report, verify_region::directory, "padding") ==
              (minor == format::format_minor));
    }
  }
}

TEST_CASE("directory damage behind a valid checksum", "[directory][verify]") {
  const directory_file sample = sample_directory_file();
  const std::uint64_t locators =
      sample.offset + directory::locators_offset(sample.entries, sample.head_size);
  const std::uint64_t prefix =
      sample.offset + directory::prefix_offset(sample.entries, sample.head_size);
  const shape kinds{key_kind::bytes, 0, value_kind::bytes, 0, 512};
  const model entries = one_site_model(3000, 8);
  std::mt19937_64 random(9);
  std::vector<std::string> probes = probes_for(kinds, entries, random, 50);
  probes.resize(std::min<std::size_t>(probes.size(), 400));

  struct damage {
    const char* name;
    std::function<void(std::string&)> edit;
    const char* reported;
  };
  const auto locator_field = [&](std::uint32_t entry, std::size_t field) {
    return locators + std::uint64_t{entry} * directory::locator_size + field;
  };
  const std::vector<damage> damages = {
      {"a head byte", [&](std::string& f) { f[sample.offset + sample.head_size + 3] ^= 0x20; },
       "the head is not"},
      {"two heads swapped",
       [&](std::string& f) {
         std::string first = f.substr(sample.offset, sample.head_size);
         f.replace(sample.offset, sample.head_size,
                   f.substr(sample.offset + 2 * sample.head_size, sample.head_size));
         f.replace(sample.offset + 2 * sample.head_size, sample.head_size, first);
       },
       "the head is not"},
      {"a prefix byte", [&](std::string& f) { f[prefix + 5] ^= 1; }, "does not start with"},
      {"a locator's page past the file",
       [&](std::string& f) {
         store_field<std::uint32_t>(f, locator_field(1, directory::locator_page_offset), 1u << 30);
       },
       "names separator"},
      {"a locator naming a leaf",
       [&](std::string& f) {
         store_field<std::uint32_t>(f, locator_field(2, directory::locator_page_offset), 1);
       },
       "names separator"},
      {"a locator's index past its page",
       [&](std::string& f) {
         store_field<std::uint16_t>(f, locator_field(0, directory::locator_index_offset), 0xFFFF);
       },
       "names separator"},
      {"a locator's reserved bytes",
       [&](std::string& f) {
         store_field<std::uint16_t>(f, locator_field(3, directory::locator_reserved_offset), 1);
       },
       "reserved bytes of its locator"},
      {"every head zero",
       [&](std::string& f) {
         std::memset(f.data() + sample.offset, 0, std::size_t{sample.entries} * sample.head_size);
       },
       "the head is not"},
      {"every head 0xff",
       [&](std::string& f) {
         std::memset(f.data() + sample.offset, 0xff,
                     std::size_t{sample.entries} * sample.head_size);
       },
       "the head is not"},
  };
  for (const damage& each : damages) {
    DYNAMIC_SECTION(each.name) {
      std::string file = sample.good;
      each.edit(file);
      rechecksum_directory(file, sample);
      const verify_report report = verify_string(file);
      INFO(describe(report));
      REQUIRE(has_region_problem(report, verify_region::directory, each.reported));
      query_everything(file, probes);
    }
  }
  SECTION("a shorter prefix than the separators share: valid, but not the builder's") {
    // One byte of the prefix moves into every head: shift each head right.
    std::string file = sample.good.substr(0, sample.offset);
    const std::uint32_t shorter = sample.prefix_length - 1;
    const char moved = sample.good[prefix + shorter];
    for (std::uint32_t i = 0; i < sample.entries; ++i) {
      std::string head =
          moved + sample.good.substr(sample.offset + i * sample.head_size, sample.head_size - 1);
      file += head;
    }
    file += sample.good.substr(locators, std::size_t{sample.entries} * directory::locator_size);
    file += sample.good.substr(prefix, shorter);
    store_field<std::uint64_t>(file, header::directory_length_offset, file.size() - sample.offset);
    store_field<std::uint64_t>(file, header::file_size_offset, file.size());
    store_field<std::uint32_t>(file, header::directory_prefix_length_offset, shorter);
    rechecksum_directory(file, sample);
    verify_options policy_off;
    policy_off.builder_policy = false;
    // Heads lose their last byte, which may have told two apart: then the
    // lookups take the ties' full compares, and answer the same.
    const verify_report relaxed = verify_string(file, policy_off);
    INFO(describe(relaxed));
    REQUIRE(relaxed.ok());
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(has_region_problem(report, verify_region::directory, "builder policy"));
    check_against_model(reader::from_memory(as_bytes(file)), entries, probes);
  }
}

TEST_CASE("integer directory damage behind a valid checksum", "[directory][verify]") {
  const shape kinds{key_kind::u64, 0, value_kind::u64, 0, 512};
  const model entries = random_model_of(kinds, 20000, 15);
  directory_file sample;
  sample.good = build_bytes(kinds, entries);
  const reader index = reader::from_memory(as_bytes(sample.good));
  sample.entries = index.core().directory().entries;
  sample.offset = index.info().directory_offset;
  REQUIRE(index.info().directory_head_size == 8);
  REQUIRE(sample.entries >= 4);
  std::mt19937_64 random(16);
  std::vector<std::string> probes = probes_for(kinds, entries, random, 50);
  probes.resize(std::min<std::size_t>(probes.size(), 400));

  const std::size_t heads_length = std::size_t{sample.entries} * 8;
  const std::vector<std::pair<const char*, std::function<void(std::string&)>>> damages = {
      {"a head byte", [&](std::string& f) { f[sample.offset + 8 + 1] ^= 0x20; }},
      {"heads reversed",
       [&](std::string& f) {
         for (std::uint32_t i = 0; i < sample.entries / 2; ++i) {
           std::swap_ranges(f.begin() + static_cast<std::ptrdiff_t>(sample.offset + 8 * i),
                            f.begin() + static_cast<std::ptrdiff_t>(sample.offset + 8 * i + 8),
                            f.begin() + static_cast<std::ptrdiff_t>(sample.offset +
                                                                    8 * (sample.entries - 1 - i)));
         }
       }},
      {"every head zero",
       [&](std::string& f) { std::memset(f.data() + sample.offset, 0, heads_length); }},
      {"every head 0xff",
       [&](std::string& f) { std::memset(f.data() + sample.offset, 0xff, heads_length); }},
  };
  for (const auto& [name, edit] : damages) {
    DYNAMIC_SECTION(name) {
      std::string file = sample.good;
      edit(file);
      rechecksum_directory(file, sample);
      const verify_report report = verify_string(file);
      INFO(describe(report));
      REQUIRE(has_region_problem(report, verify_region::directory, "the head is not"));
      // The heads only choose a level-1 page: answers may be wrong, reads
      // stay in the file, in memory or mapped.
      query_everything(file, probes);
      const scratch_directory scratch;
      query_everything(file, probes, &scratch);
    }
  }
}
