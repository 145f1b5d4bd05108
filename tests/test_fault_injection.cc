// Fault injection: single-bit flips in valid files.  Every flip must be
// reported by verification, first on the right place:
//   - a byte of page P (page 0 is the header and the rest of its page): page P;
//   - a byte of the blob region: the page holding the item's external record,
//     whose item checksum no longer matches;
//   - a byte of the metadata region: the metadata region (no page);
//   - a byte of the directory region or of the padding before it: the
//     directory region.
// And on every flipped file the reader's queries end, with an answer or
// with bbtree::error, never a crash or an endless loop (run this under
// ASan to see out-of-bounds reads).
#include "verify_test_support.h"

#include <bbtree/detail/reader_core.h>
#include <bbtree/verify.h>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <algorithm>

using namespace bbtree;
using namespace bbtree::test;

namespace {

// Where verification must report a flip of each byte of a valid file.
struct expected_place {
  verify_region region = verify_region::page;
  std::uint32_t page = 0;
};

std::vector<expected_place> expected_places(const std::string& file) {
  const reader index = reader::from_memory(as_bytes(file));
  const detail::reader_core& core = index.core();
  const file_info& info = index.info();
  std::vector<expected_place> places(file.size());
  const std::uint64_t pages_end = std::uint64_t{info.page_count} * info.page_size;
  for (std::uint64_t offset = 0; offset < pages_end; ++offset) {
    places[offset] = {verify_region::page, static_cast<std::uint32_t>(offset / info.page_size)};
  }
  // Blob bytes belong to the page whose external record names them.
  auto claim = [&](const detail::item_view& item, std::uint32_t page) {
    if (!item.external) return;
    for (std::uint64_t i = 0; i < item.bytes.size(); ++i) {
      places[info.blob_offset + item.blob_offset + i] = {verify_region::page, page};
    }
  };
  for (std::uint32_t level = 0; level < info.height; ++level) {
    for (std::uint32_t number = core.level_first_page(level); number < core.level_end_page(level);
         ++number) {
      const detail::page_view page = core.page(number, static_cast<int>(level));
      for (std::uint32_t i = 0; i < page.count; ++i) {
        if (info.keys == key_kind::bytes) claim(core.key_remainder(page, i), number);
        if (level == 0 && info.values == value_kind::bytes) claim(core.value_item(page, i), number);
      }
    }
  }
  for (std::uint64_t offset = info.metadata_offset;
       offset < info.metadata_offset + info.metadata_length; ++offset) {
    places[offset] = {verify_region::metadata, 0};
  }
  // The directory's bytes, and the padding before it: the rest of the file.
  for (std::uint64_t offset = pages_end + info.blob_length + info.metadata_length;
       offset < info.file_size; ++offset) {
    places[offset] = {verify_region::directory, 0};
  }
  return places;
}

std::string place_name(const expected_place& place) {
  switch (place.region) {
    case verify_region::page:
      return fmt::format("page {}", place.page);
    case verify_region::blob:
      return "the blob region";
    case verify_region::metadata:
      return "the metadata region";
    case verify_region::directory:
      return "the directory region";
  }
  return "?";
}

bool matches(const verify_problem& problem, const expected_place& place) {
  if (problem.region != place.region) return false;
  return place.region != verify_region::page || problem.page == place.page;
}

// Runs every kind of query on a possibly damaged file.  Each query may
// throw bbtree::error; none may crash or run without end.  Returns how many
// queries threw (opening counts as one).
std::size_t exercise_reader(const std::string& file, const std::vector<std::string>& probes) {
  std::optional<reader> opened;
  try {
    opened.emplace(reader::from_memory(as_bytes(file), "flipped.bbt"));
  } catch (const error&) {
    return 1;
  }
  const reader& index = *opened;
  // A scan reads at most every entry of every leaf; a leaf's count is
  // bounded by what fits in a page.
  const std::uint64_t step_limit =
      std::uint64_t{index.info().leaf_count} * index.info().page_size + 16;
  std::size_t failed = 0;
  auto attempt = [&](auto&& query) {
    try {
      query();
    } catch (const error&) {
      ++failed;
    }
  };
  std::size_t checksum = 0;  // uses every answer, so that nothing is skipped
  auto use = [&](std::string_view bytes) { checksum += bytes.size(); };

  attempt([&] {
    std::uint64_t steps = 0;
    for (cursor at = index.begin(); !at.is_end(); ++at) {
      use(at.key());
      use(at.value());
      (void)at.rank();
      if (++steps > step_limit) FAIL("a scan did not end after " << step_limit << " steps");
    }
  });
  attempt([&] {
    std::uint64_t steps = 0;
    cursor at = index.end();
    for (--at; !at.is_end(); --at) {
      use(at.key());
      use(at.value());
      if (++steps > step_limit) FAIL("a scan did not end after " << step_limit << " steps");
    }
  });
  for (const std::string& probe : probes) {
    attempt([&] {
      if (auto value = index.get(probe)) use(*value);
    });
    attempt([&] {
      const cursor at = index.lower_bound(probe);
      if (!at.is_end()) use(at.key());
    });
    attempt([&] {
      const cursor at = index.upper_bound(probe);
      if (!at.is_end()) use(at.value());
    });
    attempt([&] { checksum += index.rank(probe); });
    attempt([&] { checksum += index.count(bound::inclusive(probe), bound::none()); });
    attempt([&] {
      std::uint64_t steps = 0;
      for (const entry_view entry : index.range(bound::exclusive(probe), bound::none())) {
        use(entry.key);
        if (++steps == 8) break;
      }
    });
    attempt([&] {
      std::uint64_t steps = 0;
      for (const entry_view entry : index.prefix(probe.substr(0, probe.size() / 2))) {
        use(entry.value);
        if (++steps == 8) break;
      }
    });
  }
  attempt([&] {
    std::vector<std::string_view> keys(probes.begin(), probes.end());
    std::vector<std::optional<std::string_view>> values(keys.size());
    checksum += index.get_many(keys, values);
  });
  attempt([&] {
    for (std::uint64_t rank :
         {std::uint64_t{0}, index.size() / 2, index.size() - 1, index.size()}) {
      const cursor at = index.at(rank);
      if (!at.is_end()) use(at.key());
    }
  });
  attempt([&] {
    if (auto first = index.first()) use(first->key);
    if (auto last = index.last()) use(last->key);
  });
  attempt([&] {
    for (const auto& [key, value] : index.metadata()) use(key), use(value);
  });
  (void)checksum;
  return failed;
}

std::vector<std::string> sample_probes(const shape& kinds, const model& entries, std::size_t count,
                                       std::mt19937_64& random) {
  std::vector<std::string> probes;
  std::vector<std::string> keys;
  for (const auto& entry : entries) keys.push_back(entry.first);
  for (std::size_t i = 0; i < count && !keys.empty(); ++i)
    probes.push_back(keys[random() % keys.size()]);
  for (std::size_t i = 0; i < count / 2; ++i) probes.push_back(random_key(kinds, random));
  return probes;
}

// Flips bit `bit` of byte `offset`, checks verification and the reader,
// and flips it back.
void check_flip(std::string& file, std::uint64_t offset, unsigned bit, const expected_place& place,
                const std::vector<std::string>& probes) {
  file[offset] = static_cast<char>(file[offset] ^ (1u << bit));
  verify_options options;
  options.max_errors = 8;
  const verify_report report = verify_string(file, options);
  if (report.problems.empty() || !matches(report.problems[0], place)) {
    FAIL_CHECK("flip of bit " << bit << " of byte " << offset << ": expected a first problem on "
                              << place_name(place) << ", got:\n"
                              << describe(report));
  }
  if (bit == 0 || offset % 5 == 0) {
    // Checksums alone find every flip too.
    verify_options quick;
    quick.quick = true;
    quick.max_errors = 4;
    const verify_report checksums = verify_string(file, quick);
    if (checksums.problems.empty() || !matches(checksums.problems[0], place)) {
      FAIL_CHECK("quick: flip of bit " << bit << " of byte " << offset
                                       << ": expected a first problem on " << place_name(place)
                                       << ", got:\n"
                                       << describe(checksums));
    }
  }
  exercise_reader(file, probes);
  file[offset] = static_cast<char>(file[offset] ^ (1u << bit));
}

}  // namespace

TEST_CASE("every single-bit flip of a small file is found, on the right page", "[verify][faults]") {
  for (const shape& kinds : verify_shapes()) {
    DYNAMIC_SECTION(kinds.describe()) {
      // Enough entries for a few leaves and an inner page, some long values
      // in the blob region, and metadata.
      const std::size_t count =
          kinds.keys == key_kind::bytes || kinds.values == value_kind::bytes ? 40 : 70;
      const model entries = random_model_of(kinds, count, 11);
      std::string file =
          build_bytes(kinds, entries, {{"created-by", "test_fault_injection"}, {"n", "1"}});
      const reader clean = reader::from_memory(as_bytes(file));
      INFO(kinds.describe() << ": " << file.size() << " bytes, " << clean.info().page_count
                            << " pages, " << clean.info().blob_length << " blob bytes");
      REQUIRE(clean.info().height >= 2);
      REQUIRE(clean.info().page_count <= 12);
      REQUIRE(verify_string(file).ok());
      const std::vector<expected_place> places = expected_places(file);
      std::mt19937_64 random(3);
      const std::vector<std::string> probes = sample_probes(kinds, entries, 4, random);
      for (std::uint64_t offset = 0; offset < file.size(); ++offset) {
        for (unsigned bit = 0; bit < 8; ++bit)
          check_flip(file, offset, bit, places[offset], probes);
      }
      REQUIRE(verify_string(file).ok());
    }
  }
}

TEST_CASE("a sample of single-bit flips of a larger file", "[verify][faults]") {
  const shape kinds{key_kind::bytes, 0, value_kind::bytes, 0, 512};
  const model entries = random_model_of(kinds, 1200, 5);
  std::string file = build_bytes(kinds, entries, {{"big", std::string(300, 'm')}});
  const reader clean = reader::from_memory(as_bytes(file));
  REQUIRE(clean.info().height >= 3);
  REQUIRE(clean.info().blob_length > 0);
  const std::vector<expected_place> places = expected_places(file);
  std::mt19937_64 random(17);
  const std::vector<std::string> probes = sample_probes(kinds, entries, 6, random);
  for (int flip = 0; flip < 10000; ++flip) {
    const std::uint64_t offset = random() % file.size();
    check_flip(file, offset, static_cast<unsigned>(random() % 8), places[offset], probes);
  }
  REQUIRE(verify_string(file).ok());
}

TEST_CASE("every single-bit flip of a directory and its header fields is found",
          "[verify][faults][directory]") {
  // Path-like keys in a tree of three levels, so that the file ends in a
  // directory region.
  const shape kinds{key_kind::bytes, 0, value_kind::bytes, 0, 512};
  model entries;
  for (int i = 0; i < 1500; ++i)
    entries[fmt::format("/srv/www/site/{}/page-{}.html", i % 37, i * 13)] = std::to_string(i);
  std::string file = build_bytes(kinds, entries, {{"m", "v"}});
  const reader clean = reader::from_memory(as_bytes(file));
  const file_info& info = clean.info();
  REQUIRE(info.directory_length > 0);
  const std::uint64_t regions_end =
      std::uint64_t{info.page_count} * info.page_size + info.blob_length + info.metadata_length;
  REQUIRE(regions_end < info.directory_offset);  // some padding, too
  const std::vector<expected_place> places = expected_places(file);
  std::mt19937_64 random(23);
  const std::vector<std::string> probes = sample_probes(kinds, entries, 6, random);
  for (std::uint64_t offset = regions_end; offset < file.size(); ++offset) {
    for (unsigned bit = 0; bit < 8; ++bit) check_flip(file, offset, bit, places[offset], probes);
  }
  for (std::uint64_t offset = format::header::directory_offset_offset;
       offset < format::header::level_table_offset; ++offset) {
    for (unsigned bit = 0; bit < 8; ++bit) check_flip(file, offset, bit, places[offset], probes);
  }
  REQUIRE(verify_string(file).ok());
}

TEST_CASE("random bytes over whole pages: no crash, damage found", "[verify][faults]") {
  // Beyond single bits: a page, a run of bytes or a header field replaced by
  // random bytes, with the page checksum recomputed half of the time so that
  // the structural checks meet arbitrary fields.
  for (const shape& kinds : verify_shapes()) {
    DYNAMIC_SECTION(kinds.describe()) {
      const model entries = random_model_of(kinds, 300, 23);
      const std::string good = build_bytes(kinds, entries, {{"m", "v"}});
      const reader clean = reader::from_memory(as_bytes(good));
      const std::uint32_t page_size = clean.info().page_size;
      const std::uint32_t pages = clean.info().page_count;
      std::mt19937_64 random(kinds.page_size + static_cast<unsigned>(kinds.keys) * 10 +
                             static_cast<unsigned>(kinds.values));
      const std::vector<std::string> probes = sample_probes(kinds, entries, 4, random);
      for (int round = 0; round < 300; ++round) {
        std::string file = good;
        const std::uint32_t page = 1 + static_cast<std::uint32_t>(random() % (pages - 1));
        const std::uint32_t start = static_cast<std::uint32_t>(random() % page_size);
        const std::uint32_t length =
            1 + static_cast<std::uint32_t>(random() % (round % 3 == 0 ? page_size : 16));
        for (std::uint32_t i = start; i < std::min(page_size, start + length); ++i) {
          file[std::uint64_t{page} * page_size + i] = static_cast<char>(random());
        }
        const bool rechecksummed = round % 2 == 0;
        if (rechecksummed) rechecksum_page(file, page);
        if (file == good) continue;
        verify_options options;
        options.max_errors = round % 7 == 0 ? 0 : 10;
        const verify_report report = verify_string(file, options);
        INFO("round " << round << ", page " << page << ", bytes " << start << "+" << length << "\n"
                      << describe(report));
        if (!rechecksummed) {
          REQUIRE_FALSE(report.ok());
          REQUIRE(report.problems[0].page == page);
        }
        for (const verify_problem& problem : report.problems) REQUIRE(problem.offset < file.size());
        const std::size_t failed_queries = exercise_reader(file, probes);
        // Values may take any bytes: such a change verifies, and then every
        // query must work.
        if (report.ok()) REQUIRE(failed_queries == 0);
      }
    }
  }
}

// A damaged leaf is found when a cursor steps into it.  The step throws, and
// the cursor stays at the entry it was at: it still reads that entry, a
// second step fails the same way, and stepping the other way works.
TEST_CASE("a cursor step into a damaged leaf throws and leaves the cursor where it was",
          "[faults]") {
  for (const shape& kinds : verify_shapes()) {
    DYNAMIC_SECTION(kinds.describe()) {
      const model entries = random_model_of(kinds, 300, 29);
      const std::vector<std::pair<std::string, std::string>> ordered(entries.begin(),
                                                                     entries.end());
      std::string file = build_bytes(kinds, entries);
      const reader clean = reader::from_memory(as_bytes(file));
      const std::uint32_t leaves = clean.info().leaf_count;
      REQUIRE(leaves >= 4);
      const std::uint32_t damaged = 1 + leaves / 2;
      // The ranks of the damaged leaf's first entry and of the next leaf's.
      const std::uint64_t first_rank = clean.core().page(damaged, 0).header_word;
      const std::uint64_t next_rank = clean.core().page(damaged + 1, 0).header_word;
      REQUIRE(first_rank > 1);
      // A leaf that claims level 1: page() refuses it.
      raw(file)[std::uint64_t{damaged} * page_size_of(file) + format::page::level_offset] = 1;
      const reader index = reader::from_memory(as_bytes(file), "damaged.bbt");
      auto at_rank = [&](const cursor& at, std::uint64_t rank) {
        REQUIRE_FALSE(at.is_end());
        REQUIRE(at.rank() == rank);
        REQUIRE(at.key() == ordered[rank].first);
        REQUIRE(at.value() == ordered[rank].second);
      };
      auto throws_corrupt = [&](auto&& step) {
        try {
          step();
        } catch (const error& e) {
          REQUIRE(e.code() == errc::corrupt);
          REQUIRE(std::string(e.what()).find(fmt::format("page {}", damaged)) != std::string::npos);
          return;
        }
        FAIL("the step into the damaged leaf did not throw");
      };

      SECTION("forwards") {
        cursor at = index.find(ordered[first_rank - 1].first);
        at_rank(at, first_rank - 1);
        throws_corrupt([&] { ++at; });
        at_rank(at, first_rank - 1);
        throws_corrupt([&] { ++at; });
        at_rank(at, first_rank - 1);
        --at;
        at_rank(at, first_rank - 2);
      }
      SECTION("backwards") {
        cursor at = index.find(ordered[next_rank].first);
        at_rank(at, next_rank);
        throws_corrupt([&] { --at; });
        at_rank(at, next_rank);
        throws_corrupt([&] { --at; });
        ++at;
        if (next_rank + 1 < ordered.size()) {
          at_rank(at, next_rank + 1);
        } else {
          REQUIRE(at == index.end());
        }
      }
      SECTION("a walk") {
        cursor at = index.begin();
        std::uint64_t visited = 0;
        throws_corrupt(
            [&] { at.for_each_until(index.end(), [&](const entry_ref&) { ++visited; }); });
        REQUIRE(visited == first_rank);
        at_rank(at, first_rank - 1);
      }
    }
  }
}

// at(r) finds the last leaf whose first_rank is <= r.  When that leaf does
// not hold rank r, the first_rank chain is broken, and at(r) says so rather
// than answering with an entry of another rank (spec/FORMAT.md, 14.5).
TEST_CASE("at(r) on a broken first_rank chain reports the leaf", "[faults]") {
  const shape kinds{key_kind::u64, 0, value_kind::u64, 0, 512};
  const model entries = random_model_of(kinds, 300, 31);
  const std::string good = build_bytes(kinds, entries);
  const reader clean = reader::from_memory(as_bytes(good));
  REQUIRE(clean.info().leaf_count >= 4);
  const std::uint32_t damaged = 3;
  std::string file = good;
  const std::uint64_t first_rank = clean.core().page(damaged, 0).header_word;
  // Leaf 3 claims to start 5 ranks later: ranks first_rank .. first_rank + 4
  // fall after the end of leaf 2 and before the start of leaf 3.
  const std::uint64_t page_offset = std::uint64_t{damaged} * page_size_of(file);
  format::store_le<std::uint64_t>(raw(file) + page_offset + format::page::first_rank_offset,
                                  first_rank + 5);
  const reader index = reader::from_memory(as_bytes(file), "damaged.bbt");
  for (std::uint64_t rank = first_rank; rank < first_rank + 5; ++rank) {
    INFO("rank " << rank);
    REQUIRE_THROWS_WITH(index.at(rank), Catch::Contains("damaged.bbt: page 2 ") &&
                                            Catch::Contains("is not among the"));
  }
  // Ranks the chain still places are answered.
  REQUIRE(index.at(first_rank - 1).key() == clean.at(first_rank - 1).key());
  REQUIRE(index.at(first_rank + 5).key() == clean.at(first_rank).key());
}
