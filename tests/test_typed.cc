// The typed view: every key and value type against std::map, and the type
// checks at open.
#include "test_support.h"

#include <bbtree/typed.h>

#include <catch2/catch.hpp>

using namespace bbtree;
using namespace bbtree::test;

TEST_CASE("typed u64 -> u64 index answers like std::map", "[typed]") {
  scratch_directory scratch;
  std::map<std::uint64_t, std::uint64_t> expected;
  std::mt19937_64 random(11);
  while (expected.size() < 20000) expected[random() % 1000000] = random();
  {
    build_options options;
    options.keys = key_kind::u64;
    options.values = value_kind::u64;
    options.sync = false;
    builder writer(scratch / "ids.bbt", options);
    for (const auto& [key, value] : expected) writer.add(u64_key(key), u64_value(value));
    writer.finish();
  }
  const auto index = typed_index<std::uint64_t, std::uint64_t>::open(scratch / "ids.bbt");
  REQUIRE(index.size() == expected.size());
  for (std::uint64_t probe = 0; probe < 1000000; probe += 37) {
    const auto found = expected.find(probe);
    const auto got = index.get(probe);
    REQUIRE(got.has_value() == (found != expected.end()));
    if (got) REQUIRE(*got == found->second);
    const auto lower = expected.lower_bound(probe);
    const auto position = index.lower_bound(probe);
    if (lower == expected.end()) {
      REQUIRE(position == index.end());
    } else {
      REQUIRE(position.key() == lower->first);
      REQUIRE(position.value() == lower->second);
    }
    REQUIRE(index.rank(probe) ==
            static_cast<std::uint64_t>(std::distance(expected.begin(), lower)));
  }
  // Ranges with typed bounds, forwards and backwards.
  std::vector<std::uint64_t> keys_in_range;
  for (auto [key, value] : index.range(from<std::uint64_t>(1000), before<std::uint64_t>(50000))) {
    REQUIRE(expected.at(key) == value);
    keys_in_range.push_back(key);
  }
  std::vector<std::uint64_t> expected_keys;
  for (auto it = expected.lower_bound(1000); it != expected.lower_bound(50000); ++it)
    expected_keys.push_back(it->first);
  REQUIRE(keys_in_range == expected_keys);
  // The same range walked, stopped after 100 entries; then the whole index.
  keys_in_range.clear();
  index.range(from<std::uint64_t>(1000), before<std::uint64_t>(50000))
      .for_each([&](const auto& entry) {
        REQUIRE(expected.at(entry.key()) == entry.value());
        keys_in_range.push_back(entry.key());
        return keys_in_range.size() < 100;
      });
  REQUIRE(keys_in_range ==
          std::vector<std::uint64_t>(expected_keys.begin(), expected_keys.begin() + 100));
  auto next_expected = expected.begin();
  index.for_each([&](const auto& entry) {
    REQUIRE(next_expected != expected.end());
    REQUIRE(entry.value() == next_expected->second);
    REQUIRE(entry.key() == next_expected->first);
    ++next_expected;
  });
  REQUIRE(next_expected == expected.end());
  REQUIRE(index.count(after<std::uint64_t>(1000), to<std::uint64_t>(50000)) ==
          static_cast<std::uint64_t>(
              std::distance(expected.upper_bound(1000), expected.upper_bound(50000))));
  REQUIRE(index.count(unbounded, unbounded) == expected.size());
  // Bounds of another integer type, as `from(1000)` deduces (int), give the
  // same range; a value outside u64's range is refused, not wrapped.
  REQUIRE(index.count(from(1000), before(50000)) == expected_keys.size());
  REQUIRE(index.range(from(1000), before(50000)).begin().key() == expected_keys.front());
  REQUIRE(index.count(after(std::int64_t{1000}), to(50000u)) ==
          index.count(after<std::uint64_t>(1000), to<std::uint64_t>(50000)));
  REQUIRE_THROWS_MATCHES(index.count(from(-1), unbounded), error,
                         Catch::Matchers::Predicate<error>([](const error& e) {
                           return e.code() == errc::invalid_argument &&
                                  std::string_view(e.what()).find("-1") != std::string_view::npos;
                         }));
  REQUIRE(index.last().key() == expected.rbegin()->first);
  REQUIRE(index.at(5).key() == std::next(expected.begin(), 5)->first);

  std::vector<std::uint64_t> batch = {expected.begin()->first, 1000001, expected.rbegin()->first};
  std::vector<std::optional<std::uint64_t>> answers(batch.size());
  REQUIRE(index.get_many(batch, answers) == 2);
  REQUIRE(answers[0] == expected.begin()->second);
  REQUIRE_FALSE(answers[1].has_value());
  REQUIRE(answers[2] == expected.rbegin()->second);
}

TEST_CASE("typed i64, fixed and string keys", "[typed]") {
  scratch_directory scratch;
  SECTION("i64 keys order negatives first") {
    build_options options;
    options.keys = key_kind::i64;
    options.values = value_kind::none;
    options.sync = false;
    builder writer(scratch / "signed.bbt", options);
    for (std::int64_t key :
         {std::numeric_limits<std::int64_t>::min(), std::int64_t{-5}, std::int64_t{0},
          std::int64_t{7}, std::numeric_limits<std::int64_t>::max()}) {
      writer.add(i64_key(key));
    }
    writer.finish();
    const auto index = typed_index<std::int64_t, no_value>::open(scratch / "signed.bbt");
    std::vector<std::int64_t> keys;
    for (auto [key, value] : index.range(unbounded, unbounded)) keys.push_back(key);
    REQUIRE(keys == std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min(), -5, 0, 7,
                                              std::numeric_limits<std::int64_t>::max()});
    REQUIRE(index.contains(-5));
    REQUIRE_FALSE(index.contains(-4));
    REQUIRE(index.lower_bound(-4).key() == 0);
  }
  SECTION("fixed 16-byte keys with fixed 4-byte values") {
    using uuid = std::array<unsigned char, 16>;
    using tag = std::array<unsigned char, 4>;
    build_options options;
    options.keys = key_kind::fixed;
    options.key_size = 16;
    options.values = value_kind::fixed;
    options.value_size = 4;
    options.sync = false;
    std::map<std::string, std::string> entries;
    std::mt19937_64 random(3);
    while (entries.size() < 3000) {
      std::string key(16, '\0');
      for (auto& byte : key) byte = static_cast<char>(random());
      entries[key] = key.substr(0, 4);
    }
    builder writer(scratch / "uuids.bbt", options);
    for (const auto& [key, value] : entries) writer.add(key, value);
    writer.finish();
    const auto index = typed_index<uuid, tag>::open(scratch / "uuids.bbt");
    for (const auto& [key, value] : entries) {
      uuid id;
      std::memcpy(id.data(), key.data(), 16);
      const auto got = index.get(id);
      REQUIRE(got.has_value());
      REQUIRE(std::memcmp(got->data(), value.data(), 4) == 0);
    }
  }
  SECTION("string keys and prefixes") {
    build_options options;
    options.sync = false;
    builder writer(scratch / "paths.bbt", options);
    for (const char* key : {"/etc/hosts", "/etc/passwd", "/usr/bin/env", "/usr/lib/x"})
      writer.add(key, key);
    writer.finish();
    const auto index = typed_index<std::string_view>::open(scratch / "paths.bbt");
    std::vector<std::string> found;
    for (auto [key, value] : index.prefix("/etc/")) {
      REQUIRE(key == value);
      found.emplace_back(key);
    }
    REQUIRE(found == std::vector<std::string>{"/etc/hosts", "/etc/passwd"});
    // Bounds from C strings, deduced as const char*.
    REQUIRE(index.count(from("/etc/passwd"), before("/usr/lib/x")) == 2);
    REQUIRE(index.range(after("/etc/hosts"), unbounded).begin().key() == "/etc/passwd");
    REQUIRE(index.get("/usr/bin/env") == std::optional<std::string_view>("/usr/bin/env"));
  }
}

TEST_CASE("a typed view of the wrong types is refused", "[typed]") {
  scratch_directory scratch;
  build_options options;
  options.keys = key_kind::u64;
  options.values = value_kind::u64;
  options.sync = false;
  builder writer(scratch / "ids.bbt", options);
  writer.add(u64_key(1), u64_value(2));
  writer.finish();
  auto refused = [&](auto open) {
    try {
      open();
    } catch (const error& failure) {
      return failure.code() == errc::type_mismatch;
    }
    return false;
  };
  REQUIRE(refused([&] { typed_index<std::int64_t, std::uint64_t>::open(scratch / "ids.bbt"); }));
  REQUIRE(refused([&] { typed_index<std::uint64_t, no_value>::open(scratch / "ids.bbt"); }));
  REQUIRE(refused([&] { typed_index<std::string_view>::open(scratch / "ids.bbt"); }));
  REQUIRE_NOTHROW(typed_index<std::uint64_t, std::uint64_t>::open(scratch / "ids.bbt"));
}
