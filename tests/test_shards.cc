// Shard sets: every query of a set against the same entries in one file and
// against std::map, cursors across shard borders, building, joining and
// splitting sets, and every way a manifest or a shard can be wrong.
#include "test_support.h"

#include "../lib/src/shard_support.h"

#include <bbtree/builder.h>
#include <bbtree/format/layout.h>
#include <bbtree/shards.h>

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <sys/stat.h>
#include <algorithm>
#include <sstream>

using namespace bbtree;
using namespace bbtree::test;
namespace fs = std::filesystem;

namespace {

model make_model(const shape& kinds, std::size_t count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  model entries;
  while (entries.size() < count) entries[random_key(kinds, random)] = random_value(kinds, random);
  return entries;
}

// Builds a set from `entries` with shard_set_builder, ending a shard after
// each rank in `ends` (ascending).
fs::path build_set(const fs::path& manifest, const shape& kinds, const model& entries,
                   const std::vector<std::uint64_t>& ends) {
  build_options options = options_for(kinds);
  options.overwrite = true;
  shard_set_builder out(manifest, options);
  std::uint64_t rank = 0;
  auto next_end = ends.begin();
  for (const auto& [key, value] : entries) {
    out.add(key, value);
    ++rank;
    if (next_end != ends.end() && *next_end == rank) {
      out.end_shard();
      ++next_end;
    }
  }
  out.finish();
  return manifest;
}

std::string text_of(std::string_view bytes) {
  std::string text;
  for (const unsigned char byte : bytes) text += fmt::format("{:02x}", byte);
  return text;
}

// Every answer of the set equals the single file's: the differential half
// that does not need the model.
void compare_with_single(const sharded_reader& set, const reader& single,
                         const std::vector<std::string>& probes) {
  REQUIRE(set.size() == single.size());
  auto same_position = [&](const cursor& a, const cursor& b) {
    REQUIRE(a.is_end() == b.is_end());
    REQUIRE(a.rank() == b.rank());
    if (!a.is_end()) {
      REQUIRE(text_of(a.key()) == text_of(b.key()));
      REQUIRE(a.value() == b.value());
    }
  };
  {
    cursor a = set.begin();
    cursor b = single.begin();
    for (; !b.is_end(); ++a, ++b) same_position(a, b);
    REQUIRE(a == set.end());
    for (std::uint64_t left = single.size(); left > 0; --left) {
      --a;
      --b;
      same_position(a, b);
    }
    REQUIRE(a == set.begin());
  }
  for (std::uint64_t rank = 0; rank <= single.size(); ++rank)
    same_position(set.at(rank), single.at(rank));
  std::mt19937_64 random(probes.size());
  for (const std::string& probe : probes) {
    INFO("probe " << text_of(probe));
    REQUIRE(set.get(probe) == single.get(probe));
    same_position(set.find(probe), single.find(probe));
    same_position(set.lower_bound(probe), single.lower_bound(probe));
    same_position(set.upper_bound(probe), single.upper_bound(probe));
    REQUIRE(set.rank(probe) == single.rank(probe));
    const std::string& other = probes[random() % probes.size()];
    for (const bound& from : {bound::none(), bound::inclusive(probe), bound::exclusive(probe)}) {
      for (const bound& to : {bound::none(), bound::inclusive(other), bound::exclusive(other)}) {
        REQUIRE(set.count(from, to) == single.count(from, to));
        const entry_range a = set.range(from, to);
        const entry_range b = single.range(from, to);
        same_position(a.begin(), b.begin());
        same_position(a.end(), b.end());
      }
    }
    const std::string prefix = probe.substr(0, random() % (probe.size() + 1));
    const entry_range a = set.prefix(prefix);
    const entry_range b = single.prefix(prefix);
    same_position(a.begin(), b.begin());
    same_position(a.end(), b.end());
  }
  // The batched lookup, in an order that jumps between shards.
  std::vector<std::string_view> keys(probes.begin(), probes.end());
  std::shuffle(keys.begin(), keys.end(), random);
  std::vector<std::optional<std::string_view>> from_set(keys.size());
  std::vector<std::optional<std::string_view>> from_single(keys.size());
  REQUIRE(set.get_many(keys, from_set) == single.get_many(keys, from_single));
  REQUIRE(from_set == from_single);
}

std::vector<std::uint64_t> every(std::uint64_t step, std::uint64_t count) {
  std::vector<std::uint64_t> ends;
  for (std::uint64_t rank = step; rank < count; rank += step) ends.push_back(rank);
  return ends;
}

std::vector<std::uint64_t> random_ends(std::uint64_t count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<std::uint64_t> ends;
  for (std::uint64_t rank = 1; rank < count; ++rank) {
    if (random() % 97 == 0) ends.push_back(rank);
  }
  return ends;
}

// Manifests that no writer of the library produces come from
// format_shard_manifest, which checks nothing.
void rewrite(const fs::path& path, const std::string& text) { write_file(path, text); }

template <typename Body>
errc code_of(Body body) {
  try {
    body();
  } catch (const error& e) {
    return e.code();
  }
  FAIL("no error was thrown");
  return errc::io_error;
}

template <typename Body>
std::string message_of(Body body) {
  try {
    body();
  } catch (const error& e) {
    return e.what();
  }
  FAIL("no error was thrown");
  return {};
}

}  // namespace

TEST_CASE("a shard set answers every query as one file with its entries does", "[shards]") {
  const std::vector<shape> shapes = {
      {key_kind::u64, 0, value_kind::u64, 0, 512},
      {key_kind::i64, 0, value_kind::none, 0, 512},
      {key_kind::fixed, 3, value_kind::bytes, 0, 512},
      {key_kind::bytes, 0, value_kind::bytes, 0, 512},
      {key_kind::bytes, 0, value_kind::fixed, 5, 1024},
  };
  for (const shape& kinds : shapes) {
    for (const std::size_t count : {1, 2, 17, 200, 1500}) {
      const model entries = make_model(kinds, count, count * 7 + kinds.page_size);
      scratch_directory scratch;
      build_file(scratch / "single.bbt", kinds, entries);
      const reader single = reader::open(scratch / "single.bbt");
      std::mt19937_64 random(count);
      const std::vector<std::string> probes = probes_for(kinds, entries, random, 100);
      // Many small shards for the small sets, where every entry is near a
      // border; fewer for the large one, whose shards span several pages.
      std::vector<std::pair<std::string, std::vector<std::uint64_t>>> layouts = {
          {"one shard", {}},
          {"two shards", {count / 2 == 0 ? 1 : count / 2}},
          {"shards at random", random_ends(count, count + 1)},
      };
      if (count <= 17) layouts.push_back({"a shard per entry", every(1, count)});
      if (count <= 200) layouts.push_back({"shards of 7", every(7, count)});
      if (count > 200) layouts.push_back({"shards of 150", every(150, count)});
      // Plain loops, not sections: each section would run everything
      // before it again.
      for (const auto& [layout, ends] : layouts) {
        INFO(kinds.describe() << ", " << count << " entries, " << layout);
        const fs::path manifest = build_set(scratch / "set.manifest", kinds, entries, ends);
        const sharded_reader set = sharded_reader::open(manifest);
        REQUIRE(set.is_shard_set());
        const auto inner_ends =
            std::count_if(ends.begin(), ends.end(), [&](std::uint64_t end) { return end < count; });
        REQUIRE(set.shard_count() == static_cast<std::size_t>(1 + inner_ends));
        check_against_model(set, entries, probes);
        compare_with_single(set, single, probes);
      }
    }
  }
}

TEST_CASE("a single file opened as a set is that file", "[shards]") {
  const shape kinds{key_kind::u64, 0, value_kind::u64, 0, 512};
  const model entries = make_model(kinds, 2000, 3);
  scratch_directory scratch;
  build_file(scratch / "one.bbt", kinds, entries);
  const sharded_reader set = sharded_reader::open(scratch / "one.bbt");
  const reader single = reader::open(scratch / "one.bbt");
  REQUIRE_FALSE(set.is_shard_set());
  REQUIRE(set.shard_count() == 1);
  REQUIRE(set.shard(0).name() == single.name());
  REQUIRE(set.shard_first_rank(0) == 0);
  REQUIRE_THROWS_WITH(set.shard(1), "shard 1 of a set of 1");
  REQUIRE_THROWS_WITH(set.shard_first_rank(1), "shard 1 of a set of 1");
  // Its header as it is, not a summary.
  REQUIRE(set.info().page_count == single.info().page_count);
  REQUIRE(set.info().root_page == single.info().root_page);
  std::mt19937_64 random(1);
  const auto probes = probes_for(kinds, entries, random, 200);
  check_against_model(set, entries, probes);
  compare_with_single(set, single, probes);
}

TEST_CASE("cursors move across shard borders in both directions", "[shards]") {
  const shape kinds{key_kind::u64, 0, value_kind::u64, 0, 512};
  model entries;
  for (std::uint64_t i = 0; i < 40; ++i) {
    entries[std::string(u64_key(i * 10).view())] = std::string(u64_value(i).view());
  }
  scratch_directory scratch;
  // Shards of 1, 2, 3, ... entries: borders everywhere.
  std::vector<std::uint64_t> ends;
  for (std::uint64_t end = 1, size = 1; end < 40; end += ++size) ends.push_back(end);
  const sharded_reader set =
      sharded_reader::open(build_set(scratch / "set.manifest", kinds, entries, ends));
  REQUIRE(set.shard_count() == ends.size() + 1);

  SECTION("forwards and backwards, rank by rank") {
    cursor at = set.begin();
    for (std::uint64_t rank = 0; rank < 40; ++rank, ++at) {
      REQUIRE(at.rank() == rank);
      REQUIRE(decode_u64_key(at.key()) == rank * 10);
      REQUIRE(at == set.at(rank));
      REQUIRE(at == set.find(std::string(u64_key(rank * 10).view())));
    }
    REQUIRE(at.is_end());
    REQUIRE(at == set.end());
    REQUIRE(at.rank() == 40);
    ++at;  // past the end stays at the end
    REQUIRE(at == set.end());
    for (std::uint64_t rank = 40; rank-- > 0;) {
      --at;
      REQUIRE(at.rank() == rank);
      REQUIRE(decode_u64_key(at.key()) == rank * 10);
    }
    REQUIRE(at == set.begin());
    --at;  // before the first entry: the end, as for one file
    REQUIRE(at == set.end());
    --at;
    REQUIRE(decode_u64_key(at.key()) == 390);
  }
  SECTION("bounds between shards") {
    for (const std::uint64_t end : ends) {
      // The last key of a shard and the first of the next.
      const std::string last = std::string(u64_key((end - 1) * 10).view());
      const std::string between = std::string(u64_key((end - 1) * 10 + 5).view());
      REQUIRE(set.upper_bound(last).rank() == end);
      REQUIRE(set.lower_bound(between).rank() == end);
      REQUIRE(set.rank(between) == end);
      REQUIRE(set.range(bound::exclusive(last), bound::exclusive(between)).empty());
      REQUIRE(set.count(bound::inclusive(last), bound::inclusive(between)) == 1);
      cursor at = set.lower_bound(between);
      --at;
      REQUIRE(at.key() == last);
      REQUIRE_FALSE(set.get(between).has_value());
    }
  }
  SECTION("a range over every shard, backwards") {
    const entry_range all = set.range(bound::inclusive(std::string(u64_key(5).view())),
                                      bound::inclusive(std::string(u64_key(385).view())));
    std::vector<std::uint64_t> keys;
    for (cursor at = all.end(); at != all.begin();) {
      --at;
      keys.push_back(decode_u64_key(at.key()));
    }
    REQUIRE(keys.size() == 38);
    REQUIRE(keys.front() == 380);
    REQUIRE(keys.back() == 10);
  }
}

// A cursor that crosses into a shard whose leaf is damaged: the step throws
// and the cursor stays in the shard it was in, at the entry it was at.
TEST_CASE("a cursor step into a damaged shard leaves the cursor where it was", "[shards][errors]") {
  const shape kinds{key_kind::u64, 0, value_kind::u64, 0, 512};
  model entries;
  for (std::uint64_t i = 0; i < 40; ++i) {
    entries[std::string(u64_key(i).view())] = std::string(u64_value(i * 3).view());
  }
  scratch_directory scratch;
  const fs::path manifest = build_set(scratch / "set.manifest", kinds, entries, every(10, 40));
  std::string damaged_name;
  {
    const sharded_reader set = sharded_reader::open(manifest);
    REQUIRE(set.shard_count() == 4);
    REQUIRE(set.shard(2).info().leaf_count == 1);
    damaged_name = set.shard(2).name();
  }
  // Shard 2's one leaf (page 1) claims level 1: page() refuses it.
  std::string bytes = read_file(damaged_name);
  bytes[kinds.page_size + format::page::level_offset] = 1;
  write_file(damaged_name, bytes);
  const sharded_reader set = sharded_reader::open(manifest);
  auto at_rank = [&](const cursor& at, std::uint64_t rank) {
    REQUIRE_FALSE(at.is_end());
    REQUIRE(at.rank() == rank);
    REQUIRE(decode_u64_key(at.key()) == rank);
    REQUIRE(at.value() == u64_value(rank * 3).view());
  };
  auto throws_corrupt = [&](auto&& step) {
    const std::string message = message_of(step);
    REQUIRE(message.find(damaged_name) != std::string::npos);
    REQUIRE(message.find("page 1") != std::string::npos);
  };
  SECTION("forwards, from the shard before") {
    cursor at = set.find(std::string(u64_key(19).view()));
    throws_corrupt([&] { ++at; });
    at_rank(at, 19);
    throws_corrupt([&] { ++at; });
    --at;
    at_rank(at, 18);
  }
  SECTION("backwards, from the shard after") {
    cursor at = set.find(std::string(u64_key(30).view()));
    throws_corrupt([&] { --at; });
    at_rank(at, 30);
    ++at;
    at_rank(at, 31);
  }
  SECTION("a walk") {
    cursor at = set.begin();
    std::uint64_t visited = 0;
    throws_corrupt([&] { at.for_each_until(set.end(), [&](const entry_ref&) { ++visited; }); });
    REQUIRE(visited == 20);
    at_rank(at, 19);
  }
}

TEST_CASE("prefix ranges that span shards", "[shards]") {
  const shape kinds{key_kind::bytes, 0, value_kind::bytes, 0, 512};
  model entries;
  for (const char* group : {"apple/", "apricot/", "banana/", "blueberry/", "cherry/"}) {
    for (int i = 0; i < 50; ++i) entries[fmt::format("{}{:03}", group, i)] = std::to_string(i);
  }
  entries["\xff\xff"] = "top";
  scratch_directory scratch;
  const sharded_reader set = sharded_reader::open(
      build_set(scratch / "set.manifest", kinds, entries, every(13, entries.size())));
  for (const std::string prefix :
       {"a", "ap", "apple/", "apple/04", "b", "bl", "c", "", "\xff", "z"}) {
    INFO("prefix " << prefix);
    std::size_t expected = 0;
    for (const auto& [key, value] : entries) expected += key.starts_with(prefix) ? 1 : 0;
    const entry_range found = set.prefix(prefix);
    std::size_t got = 0;
    for (cursor at = found.begin(); at != found.end(); ++at, ++got)
      REQUIRE(at.key().starts_with(prefix));
    REQUIRE(got == expected);
  }
}

TEST_CASE("a set without shards is an empty index of its types", "[shards]") {
  scratch_directory scratch;
  const shape kinds{key_kind::fixed, 4, value_kind::u64, 0, 512};
  build_set(scratch / "empty.manifest", kinds, {}, {});
  const sharded_reader set = sharded_reader::open(scratch / "empty.manifest");
  REQUIRE(set.is_shard_set());
  REQUIRE(set.shard_count() == 0);
  REQUIRE(set.size() == 0);
  REQUIRE(set.info().keys == key_kind::fixed);
  REQUIRE(set.info().key_size == 4);
  REQUIRE(set.info().values == value_kind::u64);
  REQUIRE(set.info().value_size == 8);
  check_against_model(set, {}, {std::string("abcd"), std::string()});
  REQUIRE_THROWS_WITH(set.shard(0), "shard 0 of a set of 0");
  REQUIRE(scratch.names() == std::vector<std::string>{"empty.manifest"});
}

TEST_CASE("shard_set_builder: shards by size, equal keys never split, failures leave nothing",
          "[shards]") {
  const shape kinds{key_kind::u64, 0, value_kind::bytes, 0, 512};
  scratch_directory scratch;

  SECTION("shards of a size") {
    build_options options = options_for(kinds);
    shard_set_builder out(scratch / "sized.manifest", options, 4 * 512);
    model entries;
    std::mt19937_64 random(11);
    for (std::uint64_t i = 0; i < 3000; ++i) {
      const std::string key(u64_key(i).view());
      entries[key] = random_value(kinds, random);
      out.add(key, entries[key]);
    }
    const shard_set_summary summary = out.finish();
    REQUIRE(summary.entries == 3000);
    const sharded_reader set = sharded_reader::open(scratch / "sized.manifest");
    REQUIRE(set.shard_count() == summary.shards);
    REQUIRE(summary.shards > 10);
    for (std::size_t number = 0; number + 1 < set.shard_count(); ++number) {
      // At the size, plus the pages still open and one value out of page.
      REQUIRE(set.shard(number).info().file_size >= 4 * 512);
      REQUIRE(set.shard(number).info().file_size <= 4 * 512 + 4 * 512);
      REQUIRE(fs::exists(shard_file_name(scratch / "sized.manifest", number)));
    }
    std::mt19937_64 probes_random(1);
    check_against_model(set, entries, probes_for(kinds, entries, probes_random, 50));
  }
  SECTION("equal keys stay in one shard, where the duplicate policy applies") {
    build_options options = options_for(kinds);
    options.duplicates = duplicate_policy::keep_last;
    shard_set_builder out(scratch / "dups.manifest", options);
    out.add(std::string(u64_key(1).view()), "a");
    out.end_shard();
    out.add(std::string(u64_key(1).view()), "b");
    out.add(std::string(u64_key(2).view()), "c");
    out.end_shard();
    out.add(std::string(u64_key(2).view()), "d");
    out.add(std::string(u64_key(2).view()), "e");
    out.finish();
    const sharded_reader set = sharded_reader::open(scratch / "dups.manifest");
    REQUIRE(set.shard_count() == 2);
    REQUIRE(set.size() == 2);
    REQUIRE(*set.get(std::string(u64_key(1).view())) == "b");
    REQUIRE(*set.get(std::string(u64_key(2).view())) == "e");
  }
  SECTION("a key out of order across a border fails, and nothing remains") {
    build_options options = options_for(kinds);
    shard_set_builder out(scratch / "bad.manifest", options);
    out.add(std::string(u64_key(5).view()), "a");
    out.end_shard();
    out.add(std::string(u64_key(6).view()), "b");
    out.end_shard();
    const std::string message = message_of([&] { out.add(std::string(u64_key(4).view()), "c"); });
    REQUIRE_THAT(message,
                 Catch::Contains("entry 3") && Catch::Contains("smaller than the key before it"));
    REQUIRE(scratch.names().empty());
  }
  SECTION("a duplicate under the error policy fails across a border too") {
    build_options options = options_for(kinds);
    shard_set_builder out(scratch / "bad.manifest", options);
    out.add(std::string(u64_key(5).view()), "a");
    out.end_shard();
    REQUIRE(code_of([&] { out.add(std::string(u64_key(5).view()), "b"); }) == errc::duplicate_key);
    REQUIRE(scratch.names().empty());
  }
  SECTION("an abandoned build leaves nothing") {
    {
      shard_set_builder out(scratch / "gone.manifest", options_for(kinds));
      for (std::uint64_t i = 0; i < 100; ++i) {
        out.add(std::string(u64_key(i).view()), "v");
        if (i % 10 == 9) out.end_shard();
      }
    }
    REQUIRE(scratch.names().empty());
  }
  SECTION("an existing set is kept unless overwriting is asked for") {
    build_set(scratch / "set.manifest", kinds, {{std::string(u64_key(1).view()), "x"}}, {});
    build_options options = options_for(kinds);
    REQUIRE(code_of([&] { shard_set_builder(scratch / "set.manifest", options); }) ==
            errc::already_exists);
    // A shard name taken by another file is found before anything is renamed.
    write_file(shard_file_name(scratch / "other.manifest", 1), "in the way");
    shard_set_builder out(scratch / "other.manifest", options);
    out.add(std::string(u64_key(1).view()), "a");
    out.end_shard();
    out.add(std::string(u64_key(2).view()), "b");
    REQUIRE(code_of([&] { out.finish(); }) == errc::already_exists);
    REQUIRE_FALSE(fs::exists(scratch / "other.manifest"));
    REQUIRE_FALSE(fs::exists(shard_file_name(scratch / "other.manifest", 0)));
    REQUIRE(read_file(shard_file_name(scratch / "other.manifest", 1)) == "in the way");
  }
}

namespace {

// Sets detail::before_manifest_publish for one scope.
class publish_hook {
 public:
  explicit publish_hook(std::function<void()> hook) {
    detail::before_manifest_publish = std::move(hook);
  }
  ~publish_hook() { detail::before_manifest_publish = nullptr; }
  publish_hook(const publish_hook&) = delete;
  publish_hook& operator=(const publish_hook&) = delete;
};

std::vector<std::string> paths_in(const fs::path& manifest) {
  std::vector<std::string> paths;
  for (const shard_record& record : read_shard_manifest(manifest).shards) {
    paths.push_back(record.path);
  }
  return paths;
}

// A progress callback that sets `seen` when, while the input is being read,
// a file whose name contains `needle` is in `scratch`.
std::function<void(const import_progress&)> watch_for_name(const scratch_directory& scratch,
                                                           std::string needle, bool& seen) {
  return [&scratch, needle = std::move(needle), &seen](const import_progress& progress) {
    if (progress.reading_done) return;
    for (const std::string& name : scratch.names()) seen |= name.find(needle) != std::string::npos;
  };
}

}  // namespace

TEST_CASE("replacing a set is one step: the old set stays whole until the new manifest is in place",
          "[shards][errors]") {
  const shape kinds{key_kind::u64, 0, value_kind::bytes, 0, 512};
  scratch_directory scratch;
  const fs::path manifest = scratch / "set.manifest";
  const model old_entries = make_model(kinds, 400, 1);
  const model new_entries = make_model(kinds, 300, 2);
  std::mt19937_64 random(3);
  const std::vector<std::string> old_probes = probes_for(kinds, old_entries, random, 60);
  const std::vector<std::string> new_probes = probes_for(kinds, new_entries, random, 60);
  build_set(manifest, kinds, old_entries, {100, 200, 300});
  REQUIRE(paths_in(manifest) ==
          std::vector<std::string>{"set.manifest.shard-0000.bbt", "set.manifest.shard-0001.bbt",
                                   "set.manifest.shard-0002.bbt", "set.manifest.shard-0003.bbt"});
  const std::vector<std::string> old_names = scratch.names();

  SECTION("the new shards take the other generation's names, and the old ones go after") {
    bool checked = false;
    {
      const publish_hook hook([&] {
        // Every shard of both sets is in place: the old manifest still
        // opens, whole, with its own entries.
        check_against_model(sharded_reader::open(manifest), old_entries, old_probes);
        checked = true;
      });
      build_set(manifest, kinds, new_entries, {150});
    }
    REQUIRE(checked);
    REQUIRE(paths_in(manifest) == std::vector<std::string>{"set.manifest.shard-b-0000.bbt",
                                                           "set.manifest.shard-b-0001.bbt"});
    REQUIRE(scratch.names() == std::vector<std::string>{"set.manifest",
                                                        "set.manifest.shard-b-0000.bbt",
                                                        "set.manifest.shard-b-0001.bbt"});
    check_against_model(sharded_reader::open(manifest), new_entries, new_probes);
    // And back: generation a again, generation b removed.
    build_set(manifest, kinds, old_entries, {100, 200, 300});
    REQUIRE(scratch.names() == old_names);
    check_against_model(sharded_reader::open(manifest), old_entries, old_probes);
  }
  SECTION("a reader that opened the old set keeps reading it after the replacement") {
    const sharded_reader before = sharded_reader::open(manifest);
    build_set(manifest, kinds, new_entries, {150});
    check_against_model(before, old_entries, old_probes);
    check_against_model(sharded_reader::open(manifest), new_entries, new_probes);
  }
  SECTION("a build that fails with its shards in place leaves the old set as it was") {
    const std::string old_manifest = read_file(manifest);
    {
      const publish_hook hook([] { throw error(errc::io_error, "injected before the manifest"); });
      REQUIRE_THAT(message_of([&] { build_set(manifest, kinds, new_entries, {150}); }),
                   Catch::Contains("injected before the manifest"));
    }
    REQUIRE(read_file(manifest) == old_manifest);
    REQUIRE(scratch.names() == old_names);
    check_against_model(sharded_reader::open(manifest), old_entries, old_probes);
  }
  SECTION("names are compared as files: another spelling of an old shard's path counts") {
    // "./NAME", and a hard link under a name of the user's.
    fs::create_hard_link(scratch / "set.manifest.shard-0001.bbt", scratch / "kept.bbt");
    shard_manifest spelled = read_shard_manifest(manifest);
    spelled.shards[0].path = "./" + spelled.shards[0].path;
    spelled.shards[1].path = "kept.bbt";
    rewrite(manifest, format_shard_manifest(spelled));
    {
      const publish_hook hook(
          [&] { check_against_model(sharded_reader::open(manifest), old_entries, old_probes); });
      build_set(manifest, kinds, new_entries, {150});
    }
    REQUIRE(paths_in(manifest) == std::vector<std::string>{"set.manifest.shard-b-0000.bbt",
                                                           "set.manifest.shard-b-0001.bbt"});
    check_against_model(sharded_reader::open(manifest), new_entries, new_probes);
    // "./NAME" is the builder's name spelled otherwise, and goes; a file the
    // old manifest named under a name of the user's stays.
    REQUIRE_FALSE(fs::exists(scratch / "set.manifest.shard-0000.bbt"));
    REQUIRE(fs::exists(scratch / "kept.bbt"));
    REQUIRE_FALSE(fs::exists(scratch / "set.manifest.shard-0002.bbt"));
  }
  SECTION("a new shard that the old manifest names, spelled otherwise, stays") {
    // The old manifest names "./set.manifest.shard-0000.bbt", which is gone:
    // generation a is free, and the new set's first shard has that name.
    fs::remove(scratch / "set.manifest.shard-0000.bbt");
    shard_manifest spelled = read_shard_manifest(manifest);
    spelled.shards[0].path = "./set.manifest.shard-0000.bbt";
    for (shard_record& record : spelled.shards) {
      if (record.path != spelled.shards[0].path) record.path = "gone-" + record.path;
    }
    rewrite(manifest, format_shard_manifest(spelled));
    build_set(manifest, kinds, new_entries, {150});
    REQUIRE(paths_in(manifest) ==
            std::vector<std::string>{"set.manifest.shard-0000.bbt", "set.manifest.shard-0001.bbt"});
    check_against_model(sharded_reader::open(manifest), new_entries, new_probes);
  }
  SECTION("a set that names files of both generations is not replaced") {
    fs::rename(scratch / "set.manifest.shard-0001.bbt", scratch / "set.manifest.shard-b-0000.bbt");
    shard_manifest mixed = read_shard_manifest(manifest);
    mixed.shards[1].path = "set.manifest.shard-b-0000.bbt";
    rewrite(manifest, format_shard_manifest(mixed));
    const std::vector<std::string> names = scratch.names();
    REQUIRE_THAT(message_of([&] { build_set(manifest, kinds, new_entries, {150}); }),
                 Catch::Contains("shard names of both generations"));
    REQUIRE(scratch.names() == names);
    check_against_model(sharded_reader::open(manifest), old_entries, old_probes);
  }
}

TEST_CASE("split_index and import_shard_set", "[shards]") {
  const shape kinds{key_kind::u64, 0, value_kind::u64, 0, 512};
  scratch_directory scratch;
  model entries;
  std::string tsv;
  for (std::uint64_t i = 0; i < 1003; ++i) {
    entries[std::string(u64_key(i * 2).view())] = std::string(u64_value(i).view());
    tsv += fmt::format("{}\t{}\n", i * 2, i);
  }
  build_file(scratch / "whole.bbt", kinds, entries);
  const sharded_reader whole = sharded_reader::open(scratch / "whole.bbt");

  SECTION("N shards of nearly equal counts") {
    for (const std::uint32_t shards : {1u, 4u, 7u}) {
      const fs::path manifest = scratch / fmt::format("split-{}.manifest", shards);
      const shard_set_summary summary =
          split_index(whole, manifest, options_for(kinds), {shards, 0});
      REQUIRE(summary.shards == shards);
      const sharded_reader set = sharded_reader::open(manifest);
      for (std::size_t number = 0; number < set.shard_count(); ++number) {
        REQUIRE((set.shard(number).size() == 1003 / shards ||
                 set.shard(number).size() == 1003 / shards + 1));
      }
      std::mt19937_64 random(shards);
      check_against_model(set, entries, probes_for(kinds, entries, random, 20));
    }
  }
  SECTION("more shards than entries") {
    model few;
    for (std::uint64_t i = 0; i < 3; ++i)
      few[std::string(u64_key(i).view())] = std::string(u64_value(i).view());
    build_file(scratch / "few.bbt", kinds, few);
    split_index(sharded_reader::open(scratch / "few.bbt"), scratch / "few.manifest",
                options_for(kinds), {8, 0});
    REQUIRE(sharded_reader::open(scratch / "few.manifest").shard_count() == 3);
  }
  SECTION("a set split again") {
    split_index(whole, scratch / "a.manifest", options_for(kinds), {5, 0});
    split_index(sharded_reader::open(scratch / "a.manifest"), scratch / "b.manifest",
                options_for(kinds), {0, 3 * 512});
    const sharded_reader set = sharded_reader::open(scratch / "b.manifest");
    REQUIRE(set.shard_count() > 5);
    std::mt19937_64 random(2);
    check_against_model(set, entries, probes_for(kinds, entries, random, 20));
  }
  SECTION("importing text, sorted and unsorted") {
    write_file(scratch / "in.tsv", tsv);
    std::string shuffled_tsv;
    {
      std::vector<std::string> lines;
      std::istringstream in(tsv);
      for (std::string line; std::getline(in, line);) lines.push_back(line + "\n");
      std::mt19937_64 random(4);
      std::shuffle(lines.begin(), lines.end(), random);
      for (const auto& line : lines) shuffled_tsv += line;
    }
    write_file(scratch / "shuffled.tsv", shuffled_tsv);
    for (const bool sorted : {true, false}) {
      import_options import;
      import.sorted = sorted;
      const std::vector<std::string> inputs = {
          (scratch / (sorted ? "in.tsv" : "shuffled.tsv")).string()};
      const fs::path manifest = scratch / (sorted ? "sorted.manifest" : "unsorted.manifest");
      const shard_set_summary summary =
          import_shard_set(inputs, manifest, options_for(kinds), import, {4, 0});
      REQUIRE(summary.entries == 1003);
      REQUIRE(summary.shards == 4);
      const sharded_reader set = sharded_reader::open(manifest);
      std::mt19937_64 random(3);
      check_against_model(set, entries, probes_for(kinds, entries, random, 20));
      REQUIRE(((set.shard(0).info().build_flags & format::build_flag::input_unsorted) != 0) ==
              !sorted);
    }
    // No temporary file remains beside the sets.
    for (const std::string& name : scratch.names())
      REQUIRE(name.find("bbtree-tmp") == std::string::npos);
  }
  SECTION("by shard size, the set streams, and is what cutting the whole index makes") {
    // Byte-string values and equal keys (keep_last), unsorted input larger
    // than the sort's budget: sorted runs merged straight into the set.
    const shape bytes_kinds{key_kind::u64, 0, value_kind::bytes, 0, 512};
    build_options options = options_for(bytes_kinds);
    options.duplicates = duplicate_policy::keep_last;
    std::mt19937_64 random(5);
    model expected;
    std::string text;
    for (std::uint64_t line = 0; line < 6000; ++line) {
      const std::uint64_t key = random() % 5000;
      const std::string value(1 + random() % 40, static_cast<char>('a' + line % 26));
      expected[std::string(u64_key(key).view())] = value;
      text += fmt::format("{}\t{}\n", key, value);
    }
    write_file(scratch / "dups.tsv", text);
    const std::vector<std::string> inputs = {(scratch / "dups.tsv").string()};
    import_options import;
    import.memory = min_sort_memory;
    const shard_set_summary summary =
        import_shard_set(inputs, scratch / "streamed.manifest", options, import, {0, 4 * 512});
    REQUIRE(summary.entries == expected.size());
    REQUIRE(summary.shards > 10);
    const sharded_reader streamed = sharded_reader::open(scratch / "streamed.manifest");
    std::mt19937_64 probes_random(6);
    check_against_model(streamed, expected, probes_for(bytes_kinds, expected, probes_random, 50));
    // The same set, byte for byte, by the way of a whole index.
    import_entries(inputs, scratch / "dups.bbt", options, import);
    build_options cut = options;
    cut.input_unsorted = true;
    split_index(sharded_reader::open(scratch / "dups.bbt"), scratch / "cut.manifest", cut,
                {0, 4 * 512});
    const shard_manifest a = read_shard_manifest(scratch / "streamed.manifest");
    const shard_manifest b = read_shard_manifest(scratch / "cut.manifest");
    REQUIRE(a.shards.size() == b.shards.size());
    for (std::size_t number = 0; number < a.shards.size(); ++number) {
      REQUIRE(a.shards[number].header_checksum == b.shards[number].header_checksum);
      REQUIRE(read_file(detail::shard_path(scratch / "streamed.manifest", a.shards[number])) ==
              read_file(detail::shard_path(scratch / "cut.manifest", b.shards[number])));
    }
    for (const std::string& name : scratch.names())
      REQUIRE(name.find("bbtree-tmp") == std::string::npos);
  }
  SECTION("by shard size, sorted input: shards are written while the input is read") {
    std::string sorted_text;
    for (std::uint64_t i = 0; i < 20000; ++i) sorted_text += fmt::format("{}\t{}\n", i, i);
    write_file(scratch / "long.tsv", sorted_text);
    import_options import;
    import.sorted = true;
    bool shards_while_reading = false;
    import.progress = watch_for_name(scratch, "long.manifest.bbtree-tmp", shards_while_reading);
    const std::vector<std::string> inputs = {(scratch / "long.tsv").string()};
    const shard_set_summary summary = import_shard_set(inputs, scratch / "long.manifest",
                                                       options_for(kinds), import, {0, 8 * 512});
    REQUIRE(shards_while_reading);
    REQUIRE(summary.entries == 20000);
    REQUIRE(sharded_reader::open(scratch / "long.manifest").at(12345).value() ==
            u64_value(12345).view());
  }
  SECTION("N shards of sorted files: read twice, written once, as the cut of the whole index") {
    std::string text;
    std::mt19937_64 random(7);
    model expected;
    for (std::uint64_t key = 0; key < 9000; key += 1 + random() % 3) {
      // Equal keys in a row, the last kept.
      for (std::uint64_t copy = random() % 3; copy > 0; --copy)
        text += fmt::format("{}\t{}\n", key, copy * 1000);
      text += fmt::format("{}\t{}\n", key, key);
      expected[std::string(u64_key(key).view())] = std::string(u64_value(key).view());
    }
    write_file(scratch / "runs.tsv", text);
    const std::vector<std::string> inputs = {(scratch / "runs.tsv").string()};
    build_options options = options_for(kinds);
    options.duplicates = duplicate_policy::keep_last;
    import_options import;
    import.sorted = true;
    REQUIRE(count_sorted_entries(inputs, options, import) == expected.size());
    bool shards_while_reading = false;
    import.progress = watch_for_name(scratch, "twice.manifest.bbtree-tmp", shards_while_reading);
    const shard_set_summary summary =
        import_shard_set(inputs, scratch / "twice.manifest", options, import, {7, 0});
    REQUIRE(shards_while_reading);
    REQUIRE(summary.shards == 7);
    const sharded_reader set = sharded_reader::open(scratch / "twice.manifest");
    for (std::size_t number = 0; number < set.shard_count(); ++number) {
      REQUIRE((set.shard(number).size() == expected.size() / 7 ||
               set.shard(number).size() == expected.size() / 7 + 1));
    }
    std::mt19937_64 probes_random(8);
    check_against_model(set, expected, probes_for(kinds, expected, probes_random, 30));
    import.progress = nullptr;
    import_entries(inputs, scratch / "runs.bbt", options, import);
    split_index(sharded_reader::open(scratch / "runs.bbt"), scratch / "cut.manifest", options,
                {7, 0});
    const shard_manifest a = read_shard_manifest(scratch / "twice.manifest");
    const shard_manifest b = read_shard_manifest(scratch / "cut.manifest");
    REQUIRE(a.shards.size() == b.shards.size());
    for (std::size_t number = 0; number < a.shards.size(); ++number) {
      REQUIRE(read_file(detail::shard_path(scratch / "twice.manifest", a.shards[number])) ==
              read_file(detail::shard_path(scratch / "cut.manifest", b.shards[number])));
    }
  }
  SECTION("by shard size, a duplicate under the error policy names its lines") {
    write_file(scratch / "twice.tsv", "5\t50\n1\t10\n9\t90\n1\t11\n");
    const std::vector<std::string> inputs = {(scratch / "twice.tsv").string()};
    for (const bool sorted : {false, true}) {
      import_options import;
      import.sorted = sorted;
      const std::string message = message_of([&] {
        import_shard_set(inputs, scratch / "twice.manifest", options_for(kinds), import, {0, 512});
      });
      REQUIRE_THAT(message,
                   Catch::Contains(sorted ? "twice.tsv:2: key" : "twice.tsv:4: duplicate"));
      for (const std::string& name : scratch.names()) {
        REQUIRE((name == "whole.bbt" || name == "twice.tsv"));
      }
    }
  }
  SECTION("a bad input line leaves nothing") {
    write_file(scratch / "bad.tsv", "1\t1\n2\t2\nthree\t3\n");
    import_options import;
    import.sorted = true;
    const std::vector<std::string> inputs = {(scratch / "bad.tsv").string()};
    REQUIRE(
        code_of([&] {
          import_shard_set(inputs, scratch / "bad.manifest", options_for(kinds), import, {2, 0});
        }) == errc::invalid_argument);
    for (const std::string& name : scratch.names()) {
      REQUIRE((name == "whole.bbt" || name == "bad.tsv"));
    }
  }
}

TEST_CASE("write_shard_set joins independent files", "[shards]") {
  const shape kinds{key_kind::bytes, 0, value_kind::bytes, 0, 512};
  scratch_directory scratch;
  fs::create_directories(scratch / "data" / "parts");
  model all;
  std::vector<fs::path> parts;
  for (const char* letter : {"c", "a", "b"}) {
    model part;
    for (int i = 0; i < 100; ++i) part[fmt::format("{}{:03}", letter, i)] = std::to_string(i);
    all.insert(part.begin(), part.end());
    parts.push_back(scratch / "data" / "parts" / fmt::format("{}.bbt", letter));
    build_file(parts.back(), kinds, part);
  }
  const shard_manifest written = write_shard_set(scratch / "data" / "set.manifest", parts);
  REQUIRE(written.shards.size() == 3);
  REQUIRE(written.shards[0].path == "parts/a.bbt");
  REQUIRE(written.shards[1].path == "parts/b.bbt");
  REQUIRE(written.shards[2].path == "parts/c.bbt");
  REQUIRE(written.shards[0].first_key == "a000");
  REQUIRE(written.shards[2].last_key == "c099");
  {
    const sharded_reader set = sharded_reader::open(scratch / "data" / "set.manifest");
    std::mt19937_64 random(1);
    check_against_model(set, all, probes_for(kinds, all, random, 50));
  }
  // The set moves as a whole.
  fs::rename(scratch / "data", scratch / "moved");
  {
    const sharded_reader set = sharded_reader::open(scratch / "moved" / "set.manifest");
    REQUIRE(set.size() == 300);
    REQUIRE(*set.get("b042") == "42");
  }
  // A manifest in another directory names its shards from there.
  const shard_manifest elsewhere = write_shard_set(
      scratch / "elsewhere.manifest", std::vector<fs::path>{scratch / "moved" / "parts" / "a.bbt",
                                                            scratch / "moved" / "parts" / "b.bbt"});
  REQUIRE(elsewhere.shards[0].path == "moved/parts/a.bbt");
  REQUIRE(sharded_reader::open(scratch / "elsewhere.manifest").size() == 200);
  // The same shards give the same manifest, byte for byte.
  write_shard_set(scratch / "again.manifest",
                  std::vector<fs::path>{scratch / "moved" / "parts" / "b.bbt",
                                        scratch / "moved" / "parts" / "a.bbt"});
  REQUIRE(read_file(scratch / "again.manifest") == read_file(scratch / "elsewhere.manifest"));
}

TEST_CASE("joining files that cannot form a set", "[shards][errors]") {
  const shape u64_shape{key_kind::u64, 0, value_kind::u64, 0, 512};
  scratch_directory scratch;
  auto numbers = [&](const std::string& name, std::uint64_t from, std::uint64_t to,
                     const shape& kinds) {
    model entries;
    for (std::uint64_t i = from; i <= to; ++i) {
      entries[std::string(kinds.keys == key_kind::i64 ? i64_key(static_cast<std::int64_t>(i)).view()
                                                      : u64_key(i).view())] =
          std::string(u64_value(i).view());
    }
    build_file(scratch / name, kinds, entries);
    return scratch / name;
  };
  const fs::path low = numbers("low.bbt", 1, 100, u64_shape);
  const fs::path high = numbers("high.bbt", 90, 200, u64_shape);
  const fs::path signed_keys =
      numbers("signed.bbt", 300, 400, {key_kind::i64, 0, value_kind::u64, 0, 512});
  build_file(scratch / "empty.bbt", u64_shape, {});

  SECTION("overlapping ranges name both shards and their ranges") {
    const std::vector<fs::path> shards = {high, low};
    const std::string message =
        message_of([&] { write_shard_set(scratch / "set.manifest", shards); });
    REQUIRE_THAT(message, Catch::Contains("low.bbt and") && Catch::Contains("high.bbt overlap") &&
                              Catch::Contains("\"1\" to \"100\"") &&
                              Catch::Contains("\"90\" to \"200\""));
    REQUIRE(code_of([&] { write_shard_set(scratch / "set.manifest", shards); }) ==
            errc::out_of_order);
    REQUIRE_FALSE(fs::exists(scratch / "set.manifest"));
  }
  SECTION("the same shard twice") {
    const std::vector<fs::path> shards = {low, low};
    REQUIRE(code_of([&] { write_shard_set(scratch / "set.manifest", shards); }) ==
            errc::out_of_order);
  }
  SECTION("types that differ name both shards and their types") {
    const std::vector<fs::path> shards = {low, signed_keys};
    const std::string message =
        message_of([&] { write_shard_set(scratch / "set.manifest", shards); });
    REQUIRE_THAT(message, Catch::Contains("low.bbt has u64 keys and u64 values") &&
                              Catch::Contains("signed.bbt has i64 keys and u64 values"));
    REQUIRE(code_of([&] { write_shard_set(scratch / "set.manifest", shards); }) ==
            errc::type_mismatch);
  }
  SECTION("an empty shard, a manifest, a missing file, an existing manifest") {
    REQUIRE(code_of([&] {
              write_shard_set(scratch / "set.manifest",
                              std::vector<fs::path>{low, scratch / "empty.bbt"});
            }) == errc::invalid_argument);
    write_shard_set(scratch / "set.manifest", std::vector<fs::path>{low});
    REQUIRE(code_of([&] {
              write_shard_set(scratch / "x.manifest",
                              std::vector<fs::path>{scratch / "set.manifest"});
            }) == errc::invalid_argument);
    REQUIRE(code_of([&] {
              write_shard_set(scratch / "x.manifest",
                              std::vector<fs::path>{scratch / "nothing.bbt"});
            }) == errc::io_error);
    REQUIRE(code_of([&] {
              write_shard_set(scratch / "set.manifest", std::vector<fs::path>{low});
            }) == errc::already_exists);
    write_shard_set(scratch / "set.manifest", std::vector<fs::path>{low}, {true, false});
  }
}

TEST_CASE("a signal handler removes a shard set's temporary files", "[shards][errors]") {
  // What the tools' SIGINT and SIGTERM handlers call: every file the build
  // has named so far goes, and the build can only fail from then on.
  scratch_directory scratch;
  const fs::path manifest = scratch / "set.manifest";
  build_options options = options_for({key_kind::u64, 0, value_kind::u64, 0, 512});
  auto temporaries = [&] {
    std::vector<std::string> names;
    for (const auto& item : fs::directory_iterator(scratch.path()))
      names.push_back(item.path().filename().string());
    return names;
  };
  shard_set_builder out(manifest, options);
  for (std::uint64_t i = 0; i < 3000; ++i) {
    if (i == 1000 || i == 2000) out.end_shard();
    out.add(u64_key(i).view(), u64_value(i).view());
  }
  const std::vector<std::string> named = temporaries();
  REQUIRE(named.size() == 2);  // the two finished shards; the third is unnamed
  for (const std::string& name : named) REQUIRE_THAT(name, Catch::Contains(".bbtree-tmp-"));
  remove_temporary_files_on_signal();
  REQUIRE(temporaries().empty());
  REQUIRE_THROWS_AS(out.finish(), error);
  REQUIRE(temporaries().empty());
  REQUIRE_FALSE(fs::exists(manifest));
  // A later build's names take the entries the first build released, and
  // go the same way.
  {
    shard_set_builder again(scratch / "again.manifest", options);
    for (std::uint64_t i = 0; i < 3000; ++i) {
      if (i == 1000 || i == 2000) again.end_shard();
      again.add(u64_key(i).view(), u64_value(i).view());
    }
    REQUIRE(temporaries().size() == 2);
    remove_temporary_files_on_signal();
    REQUIRE(temporaries().empty());
  }
  // A build that finished is not touched by a later call.
  const fs::path kept =
      build_set(scratch / "kept.manifest", {key_kind::u64, 0, value_kind::u64, 0, 512},
                {{std::string(u64_key(1).view()), std::string(u64_value(1).view())}}, {});
  const std::vector<std::string> after = temporaries();
  remove_temporary_files_on_signal();
  REQUIRE(temporaries() == after);
  REQUIRE(sharded_reader::open(kept).size() == 1);
}

// sharded_reader::open tries the path as an index first and reads it for
// the manifest magic only when it is not one: every other kind of path
// keeps the error that reader::open gives it.
TEST_CASE("open takes an index or a manifest and reports other paths as reader::open does",
          "[shards][errors]") {
  const shape kinds{key_kind::u64, 0, value_kind::u64, 0, 512};
  const model entries = make_model(kinds, 500, 5);
  scratch_directory scratch;
  const fs::path manifest = build_set(scratch / "set.manifest", kinds, entries, {250});
  build_file(scratch / "one.bbt", kinds, entries);
  REQUIRE(sharded_reader::open(manifest).is_shard_set());
  REQUIRE(sharded_reader::open(manifest).shard_count() == 2);
  REQUIRE_FALSE(sharded_reader::open(scratch / "one.bbt").is_shard_set());

  const auto open_error = [](const fs::path& path) {
    const auto open = [&] { return sharded_reader::open(path); };
    const auto single = [&] { return reader::open(path); };
    REQUIRE(code_of(open) == code_of(single));
    REQUIRE(message_of(open) == message_of(single));
    return code_of(open);
  };
  write_file(scratch / "text", "neither an index nor a manifest\n");
  REQUIRE(open_error(scratch / "text") == errc::not_bbtree);
  write_file(scratch / "empty", "");
  REQUIRE(open_error(scratch / "empty") == errc::not_bbtree);
  // The index magic and then too few bytes: a damaged index, not a
  // manifest to look for.
  write_file(scratch / "short", read_file(scratch / "one.bbt").substr(0, 100));
  REQUIRE(open_error(scratch / "short") == errc::truncated);
  REQUIRE(open_error(scratch / "missing") == errc::io_error);
  REQUIRE(open_error(scratch.path()) == errc::io_error);
  REQUIRE(::mkfifo((scratch / "fifo").c_str(), 0600) == 0);
  REQUIRE(open_error(scratch / "fifo") == errc::io_error);
}

TEST_CASE("manifests and shards that are wrong", "[shards][errors]") {
  const shape kinds{key_kind::u64, 0, value_kind::bytes, 0, 512};
  scratch_directory scratch;
  model entries;
  for (std::uint64_t i = 0; i < 300; ++i)
    entries[std::string(u64_key(i).view())] = fmt::format("v{}", i);
  const fs::path manifest = build_set(scratch / "set.manifest", kinds, entries, {100, 200});
  const std::string good = read_file(manifest);
  const shard_manifest parsed = parse_shard_manifest(good, "set.manifest");
  REQUIRE(format_shard_manifest(parsed) == good);
  auto open = [&] { return sharded_reader::open(manifest); };

  SECTION("a missing shard") {
    fs::remove(shard_file_name(manifest, 1));
    REQUIRE(code_of(open) == errc::io_error);
    REQUIRE_THAT(message_of(open), Catch::StartsWith(manifest.string() + ":4: ") &&
                                       Catch::Contains("set.manifest.shard-0001.bbt"));
    const shard_set_report report = verify_shard_set(manifest);
    REQUIRE_FALSE(report.ok());
    REQUIRE(report.unreadable.size() == 1);
    REQUIRE(report.shards.size() == 2);
  }
  SECTION("a shard that is a FIFO") {
    // Opening it as a file would wait for a writer: refused instead.
    fs::remove(shard_file_name(manifest, 1));
    REQUIRE(::mkfifo(shard_file_name(manifest, 1).c_str(), 0600) == 0);
    const shard_set_report report = verify_shard_set(manifest);
    REQUIRE_FALSE(report.ok());
    REQUIRE(report.unreadable.size() == 1);
    REQUIRE_THAT(report.unreadable[0].second, Catch::Contains("not a regular file"));
    REQUIRE(report.shards.size() == 2);
    REQUIRE(code_of(open) == errc::io_error);
    REQUIRE_THAT(message_of(open),
                 Catch::Contains("set.manifest.shard-0001.bbt: not a regular file"));
  }
  SECTION("one file named by two shard lines") {
    // Disjoint ranges claimed, but the second line names the first's file:
    // reported, and the file verified once, not once a line.
    shard_manifest twice = parsed;
    twice.shards[1].path = twice.shards[0].path;
    rewrite(manifest, format_shard_manifest(twice));
    const shard_set_report report = verify_shard_set(manifest);
    REQUIRE(report.shards.size() == 2);
    REQUIRE(report.problems.size() == 1);
    REQUIRE(report.problems[0].line == 4);
    REQUIRE_THAT(report.problems[0].message,
                 Catch::Contains("is the file of the shard on line 3 again"));
    REQUIRE(code_of(open) == errc::corrupt);
    REQUIRE_THAT(message_of(open), Catch::Contains(":4: "));
  }
  SECTION("a replaced shard") {
    model other;
    for (std::uint64_t i = 100; i < 150; ++i) other[std::string(u64_key(i).view())] = "replaced";
    build_file(shard_file_name(manifest, 1), kinds, other);
    REQUIRE(code_of(open) == errc::corrupt);
    REQUIRE_THAT(message_of(open), Catch::Contains(":4: shard") &&
                                       Catch::Contains("50 entries, the manifest says 100") &&
                                       Catch::Contains("replaced or rebuilt"));
    const shard_set_report report = verify_shard_set(manifest);
    REQUIRE(report.problems.size() == 1);
    REQUIRE(report.problems[0].line == 4);
  }
  SECTION("a shard rebuilt with the same entries under other options") {
    // Only the build flags differ, so only the header checksum tells.
    model same;
    for (std::uint64_t i = 100; i < 200; ++i)
      same[std::string(u64_key(i).view())] = fmt::format("v{}", i);
    build_options options = options_for(kinds);
    options.overwrite = true;
    options.duplicates = duplicate_policy::keep_last;
    builder rebuilt(shard_file_name(manifest, 1), options);
    for (const auto& [key, value] : same) rebuilt.add(key, value);
    rebuilt.finish();
    REQUIRE_THAT(message_of(open), Catch::Contains("header checksum"));
  }
  SECTION("a shard of other types") {
    model other;
    for (std::uint64_t i = 100; i < 200; ++i)
      other[std::string(u64_key(i).view())] = std::string(u64_value(i).view());
    build_file(shard_file_name(manifest, 2), {key_kind::u64, 0, value_kind::u64, 0, 512}, other);
    REQUIRE_THAT(
        message_of(open),
        Catch::Contains("u64 keys and u64 values, the manifest says u64 keys and bytes values"));
  }
  SECTION("a damaged shard page: open works, verification finds it") {
    std::string bytes = read_file(shard_file_name(manifest, 0));
    bytes[512 + 100] ^= 0x01;
    write_file(shard_file_name(manifest, 0), bytes);
    const shard_set_report report = verify_shard_set(manifest);
    REQUIRE_FALSE(report.ok());
    REQUIRE_FALSE(report.shards[0].ok());
    REQUIRE(report.shards[1].ok());
  }
  SECTION("first and last keys that the shards contradict") {
    shard_manifest lying = parsed;
    lying.shards[1].first_key = std::string(u64_key(100).view());
    lying.shards[1].last_key = std::string(u64_key(198).view());
    rewrite(manifest, format_shard_manifest(lying));
    const shard_set_report report = verify_shard_set(manifest);
    REQUIRE(report.problems.size() == 1);
    REQUIRE_THAT(report.problems[0].message,
                 Catch::Contains("last key is \"199\", the manifest says \"198\""));
    REQUIRE_THAT(format_problem(report, report.problems[0]),
                 Catch::StartsWith(manifest.string() + ":4: shard "));
  }
  SECTION("manifests out of order, overlapping, or with an absolute path") {
    shard_manifest swapped = parsed;
    std::swap(swapped.shards[0], swapped.shards[1]);
    rewrite(manifest, format_shard_manifest(swapped));
    REQUIRE(code_of(open) == errc::out_of_order);
    REQUIRE_THAT(message_of(open),
                 Catch::Contains(":4: the shard's range overlaps or comes before"));

    shard_manifest overlapping = parsed;
    overlapping.shards[1].first_key = std::string(u64_key(99).view());
    rewrite(manifest, format_shard_manifest(overlapping));
    REQUIRE(code_of(open) == errc::out_of_order);

    shard_manifest absolute = parsed;
    absolute.shards[0].path = fs::absolute(shard_file_name(manifest, 0)).string();
    rewrite(manifest, format_shard_manifest(absolute));
    REQUIRE_THAT(message_of(open), Catch::Contains(":3: the path is absolute"));
  }
  SECTION("damaged and cut-short manifests") {
    std::string flipped = good;
    flipped[good.find("shard\t") + 30] ^= 0x01;
    rewrite(manifest, flipped);
    REQUIRE(code_of(open) == errc::corrupt);
    REQUIRE_THAT(message_of(open), Catch::Contains("checksum mismatch"));
    const shard_set_report report = verify_shard_set(manifest);
    REQUIRE(report.problems.size() == 1);
    REQUIRE(report.shards.empty());

    rewrite(manifest, good.substr(0, good.rfind("end\t")));
    REQUIRE(code_of(open) == errc::truncated);
    rewrite(manifest, good.substr(0, good.size() - 1));
    REQUIRE(code_of(open) == errc::truncated);
    rewrite(manifest, "bbtree-shards 2\n" + good.substr(good.find('\n') + 1));
    REQUIRE(code_of(open) == errc::newer_version);
    rewrite(manifest, "bbtree-shards x\n" + good.substr(good.find('\n') + 1));
    REQUIRE(code_of(open) == errc::corrupt);
  }
  SECTION("totals that do not add up") {
    std::string text = good;
    const std::size_t end = text.rfind("end\t3\t");
    REQUIRE(end != std::string::npos);
    text.replace(end, 6, "end\t2\t");
    rewrite(manifest, text);
    REQUIRE_THAT(message_of(open),
                 Catch::Contains(":6: the end line counts 2 shards; the manifest lists 3"));
  }
  SECTION("badly spelled fields") {
    const auto with_line = [&](const std::string& line) {
      std::string text = "bbtree-shards 1\ntypes\tu64\tbytes\n" + line + "\n";
      text += fmt::format("end\t1\t{}\t{:08x}\n", 5, format::crc32c(text.data(), text.size()));
      return text;
    };
    const std::string valid = "shard\tx.bbt\t1\t5\t5\t1024\t0000abcd";
    REQUIRE(parse_shard_manifest(with_line(valid), "m").shards.size() == 1);
    for (const std::string line :
         {"shard\tx.bbt\t01\t5\t5\t1024\t0000abcd", "shard\tx.bbt\t1\t5\t5\t1024\t0000ABCD",
          "shard\tx.bbt\t1\t5\t5\t1024", "shard\t\t1\t5\t5\t1024\t0000abcd",
          "shard\tx.bbt\t5\t1\t5\t1024\t0000abcd", "shard\tx.bbt\t1\t1\t5\t1024\t0000abcd",
          "shard\tx.bbt\tone\t5\t5\t1024\t0000abcd", "shard\tx\\q\t1\t5\t5\t1024\t0000abcd",
          "shards\tx.bbt\t1\t5\t5\t1024\t0000abcd", "shard\tx\\x2ebbt\t1\t5\t5\t1024\t0000abcd"}) {
      INFO(line);
      REQUIRE(code_of([&] { parse_shard_manifest(with_line(line), "m"); }) == errc::corrupt);
    }
    REQUIRE(code_of([&] { parse_shard_manifest("not a manifest", "m"); }) == errc::not_bbtree);
  }
  SECTION("is_shard_manifest tells manifests from index files") {
    REQUIRE(is_shard_manifest(manifest));
    REQUIRE_FALSE(is_shard_manifest(shard_file_name(manifest, 0)));
    REQUIRE_FALSE(is_shard_manifest(scratch / "nothing"));
    REQUIRE_FALSE(is_shard_manifest(scratch.path()));
  }
}

TEST_CASE("typed views of a shard set", "[shards]") {
  const shape kinds{key_kind::u64, 0, value_kind::u64, 0, 512};
  model entries;
  for (std::uint64_t i = 0; i < 500; ++i) {
    entries[std::string(u64_key(i * 3).view())] = std::string(u64_value(i).view());
  }
  scratch_directory scratch;
  build_set(scratch / "set.manifest", kinds, entries, {100, 250, 251});
  const auto set = typed_shard_set<std::uint64_t, std::uint64_t>::open(scratch / "set.manifest");
  REQUIRE(set.size() == 500);
  REQUIRE(set.raw().shard_count() == 4);
  REQUIRE(*set.get(300) == 100);
  REQUIRE_FALSE(set.get(301).has_value());
  std::vector<std::uint64_t> keys;
  for (const auto [key, value] : set.range(from<std::uint64_t>(297), before<std::uint64_t>(756))) {
    REQUIRE(value == key / 3);
    keys.push_back(key);
  }
  REQUIRE(keys.size() == 153);
  REQUIRE(set.count(after<std::uint64_t>(297), to<std::uint64_t>(753)) == 152);
  REQUIRE(set.rank(750) == 250);
  REQUIRE(set.at(251).key() == 753);
  REQUIRE((--set.end()).key() == 1497);
  const std::vector<std::uint64_t> probes = {1497, 0, 752, 753, 5000, 300};
  std::vector<std::optional<std::uint64_t>> values(probes.size());
  REQUIRE(set.get_many(probes, values) == 4);
  REQUIRE(values ==
          std::vector<std::optional<std::uint64_t>>{499, 0, std::nullopt, 251, std::nullopt, 100});
  REQUIRE(code_of([&] {
            typed_shard_set<std::int64_t, std::uint64_t>::open(scratch / "set.manifest");
          }) == errc::type_mismatch);
}

TEST_CASE("the manifest parser on altered text: an error or a manifest that round-trips",
          "[shards][errors]") {
  // Every byte before the end line changed to each of a few telling bytes,
  // the end line's checksum then made to match, so that the parser sees
  // the change and not only a checksum mismatch.  Whatever it accepts, it
  // accepts in the one spelling, so the text formats back unchanged.
  shard_manifest manifest;
  manifest.types = {key_kind::bytes, 0, value_kind::u64, 0};
  manifest.shards.push_back({"a.bbt", "apple", "avocado", 10, 4096, 0x12345678, 0});
  manifest.shards.push_back({"sub/b\tc.bbt", "b", "b", 1, 8192, 0xdeadbeef, 0});
  manifest.shards.push_back({"c.bbt", "c\x01", "zz\xff", 2, 1024, 0, 0});
  const std::string text = format_shard_manifest(manifest);
  const std::size_t end_line = text.rfind("end\t");
  const std::string end_fields =
      text.substr(end_line, text.size() - end_line - 9);  // without the CRC
  std::size_t accepted = 0;
  for (std::size_t position = 0; position < end_line; ++position) {
    for (const char replacement : {'\0', '\t', '\n', '0', '9', 'a', 'x', '\\', '-', '\xff'}) {
      std::string altered = text.substr(0, end_line);
      if (altered[position] == replacement) continue;
      altered[position] = replacement;
      altered +=
          end_fields + fmt::format("{:08x}\n", format::crc32c(altered.data(), altered.size()));
      try {
        const shard_manifest parsed = parse_shard_manifest(altered, "m");
        ++accepted;
        REQUIRE(format_shard_manifest(parsed) == altered);
      } catch (const error& e) {
        REQUIRE(std::string(e.what()).starts_with("m:"));
      }
    }
  }
  // Some changes make another valid manifest (another key, size or
  // checksum); most do not.
  REQUIRE(accepted > 0);
  for (std::size_t length = 0; length < text.size(); ++length) {
    REQUIRE_THROWS_AS(parse_shard_manifest(text.substr(0, length), "m"), error);
  }
}
