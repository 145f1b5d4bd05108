// Merging index files against std::map: several inputs with overlapping
// keys under every duplicate policy, byte-string keys with large values,
// inputs larger than the step at which the merge drops the pages behind it,
// empty inputs, inputs of different types, damaged inputs.
#include "test_support.h"
#include "verify_test_support.h"

#include <bbtree/detail/reader_core.h>
#include <bbtree/merge.h>
#include <bbtree/shards.h>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <optional>

using namespace bbtree;
using namespace bbtree::test;

namespace {

build_options options_for_test(const shape& kinds) {
  build_options options = options_for(kinds);
  options.sync = false;
  options.overwrite = true;
  return options;
}

void write_index(const std::filesystem::path& path, const shape& kinds, const model& entries) {
  builder writer(path, options_for_test(kinds));
  for (const auto& [key, value] : entries) writer.add(key, value);
  writer.finish();
}

model read_all(const std::filesystem::path& path) {
  const reader index = reader::open(path);
  model result;
  for (auto it = index.begin(); it != index.end(); ++it)
    result.emplace(std::string(it.key()), std::string(it.value()));
  return result;
}

// What merging `inputs` in this order gives; nullopt if a key repeats
// under the error policy.
std::optional<model> expected_merge(const std::vector<model>& inputs, duplicate_policy policy) {
  model result;
  for (const model& input : inputs) {
    for (const auto& [key, value] : input) {
      const auto [place, added] = result.try_emplace(key, value);
      if (added) continue;
      if (policy == duplicate_policy::error) return std::nullopt;
      if (policy == duplicate_policy::keep_last) place->second = value;
    }
  }
  return result;
}

merge_options merge_options_for(duplicate_policy policy) {
  merge_options options;
  options.duplicates = policy;
  options.sync = false;
  options.overwrite = true;
  return options;
}

std::vector<std::filesystem::path> write_inputs(const scratch_directory& scratch,
                                                const shape& kinds,
                                                const std::vector<model>& inputs) {
  std::vector<std::filesystem::path> paths;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    paths.push_back(scratch / ("in" + std::to_string(i) + ".bbt"));
    write_index(paths.back(), kinds, inputs[i]);
  }
  return paths;
}

// Merges good.bbt in `scratch` with `damaged`, written beside it as bad.bbt,
// and requires that the merge fails with error(corrupt) naming bad.bbt, its
// page `page` and `expected`, and writes no output.
void require_merge_refuses(const scratch_directory& scratch, const std::string& damaged,
                           std::uint32_t page, const std::string& expected) {
  write_file(scratch / "bad.bbt", damaged);
  const std::vector<std::filesystem::path> paths{scratch / "good.bbt", scratch / "bad.bbt"};
  try {
    merge_indexes(paths, scratch / "out.bbt", merge_options_for(duplicate_policy::keep_first));
    FAIL("a damaged input was merged");
  } catch (const error& failure) {
    REQUIRE(failure.code() == errc::corrupt);
    REQUIRE_THAT(
        std::string(failure.what()),
        Catch::Contains(fmt::format("{}: page {}", (scratch / "bad.bbt").string(), page)) &&
            Catch::Contains(expected));
  }
  REQUIRE(!std::filesystem::exists(scratch / "out.bbt"));
}

const shape u64_shape{key_kind::u64, 0, value_kind::u64, 0, 4096};
const shape bytes_shape{key_kind::bytes, 0, value_kind::bytes, 0, 1024};

}  // namespace

TEST_CASE("merge equals std::map: overlapping u64 inputs, every policy", "[merge]") {
  scratch_directory scratch;
  std::mt19937_64 random(17);
  // Four inputs over one key space, each value naming its input, so that
  // first and last are checked; one input is empty.
  std::vector<model> inputs(5);
  for (std::size_t input = 0; input < 4; ++input) {
    for (std::size_t i = 0; i < 30000; ++i) {
      inputs[input][std::string(u64_key(random() % 200000).view())] =
          std::string(u64_value(input * 1000000 + i).view());
    }
  }
  std::swap(inputs[2], inputs[4]);  // the empty one in the middle
  const auto paths = write_inputs(scratch, u64_shape, inputs);
  const auto out = scratch / "out.bbt";
  for (const auto policy : {duplicate_policy::keep_first, duplicate_policy::keep_last}) {
    const build_summary summary = merge_indexes(paths, out, merge_options_for(policy));
    const model expected = *expected_merge(inputs, policy);
    REQUIRE(summary.entries == expected.size());
    REQUIRE(read_all(out) == expected);
    const reader index = reader::open(out);
    std::vector<std::string> probes;
    for (std::size_t i = 0; i < 300; ++i)
      probes.push_back(std::string(u64_key(random() % 200000).view()));
    check_against_model(index, expected, probes);
  }
  std::filesystem::remove(out);
  try {
    merge_indexes(paths, out, merge_options_for(duplicate_policy::error));
    FAIL("a duplicate was accepted");
  } catch (const error& failure) {
    REQUIRE(failure.code() == errc::duplicate_key);
    const std::string message = failure.what();
    REQUIRE(message.rfind("duplicate key \"", 0) == 0);
    REQUIRE(message.find(".bbt and ") != std::string::npos);
  }
  REQUIRE(!std::filesystem::exists(out));

  // Disjoint inputs merge under the error policy.
  std::vector<model> disjoint(3);
  for (std::uint64_t key = 0; key < 30000; ++key) {
    disjoint[key % 3][std::string(u64_key(key).view())] = std::string(u64_value(key).view());
  }
  const auto disjoint_paths = write_inputs(scratch, u64_shape, disjoint);
  merge_indexes(disjoint_paths, out, merge_options_for(duplicate_policy::error));
  REQUIRE(read_all(out) == *expected_merge(disjoint, duplicate_policy::error));
}

TEST_CASE("merge equals std::map: byte keys, large values, other page sizes", "[merge]") {
  scratch_directory scratch;
  std::mt19937_64 random(23);
  std::vector<model> inputs(3);
  for (std::size_t input = 0; input < inputs.size(); ++input) {
    for (std::size_t i = 0; i < 4000; ++i) {
      std::string value = random_value(bytes_shape, random);
      if (i % 500 == 0) value.assign(20000 + i, static_cast<char>('a' + input));
      inputs[input][random_key(bytes_shape, random)] = value;
    }
  }
  const auto paths = write_inputs(scratch, bytes_shape, inputs);
  const auto out = scratch / "out.bbt";
  for (const std::uint32_t page_size : {0u, 512u, 16384u}) {
    for (const auto policy : {duplicate_policy::keep_first, duplicate_policy::keep_last}) {
      merge_options options = merge_options_for(policy);
      options.page_size = page_size;
      merge_indexes(paths, out, options);
      REQUIRE(reader::open(out).info().page_size ==
              (page_size == 0 ? bytes_shape.page_size : page_size));
      REQUIRE(read_all(out) == *expected_merge(inputs, policy));
    }
  }
}

TEST_CASE("merge equals std::map past the step where it drops the pages behind it", "[merge]") {
  // Values of 400 to 499 bytes, in their leaves, and one in eight of 600 to
  // 699 bytes, over the inline limit of 512 bytes at 4 KiB pages: the first
  // input's leaves span two drop steps and more, and its blob region is
  // dropped with them while the merge goes on reading values from it.
  const shape kinds{key_kind::u64, 0, value_kind::bytes, 0, 4096};
  scratch_directory scratch;
  std::mt19937_64 random(31);
  std::vector<model> inputs(2);
  const std::uint64_t count = 5 * detail::merge_drop_step / 2 / 400;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::size_t length = (i % 8 == 0 ? 600 : 400) + random() % 100;
    inputs[i % 16 == 1 ? 1 : 0][std::string(u64_key(i * 3).view())] =
        std::string(length, static_cast<char>('a' + i % 26));
  }
  const auto paths = write_inputs(scratch, kinds, inputs);
  const reader first = reader::open(paths[0]);
  REQUIRE(std::uint64_t{first.info().leaf_count} * kinds.page_size > 2 * detail::merge_drop_step);
  REQUIRE(first.info().blob_length > 0);
  const auto out = scratch / "out.bbt";
  merge_indexes(paths, out, merge_options_for(duplicate_policy::error));
  REQUIRE(read_all(out) == *expected_merge(inputs, duplicate_policy::error));
}

TEST_CASE("merging empty inputs, and one input", "[merge]") {
  scratch_directory scratch;
  const auto paths = write_inputs(scratch, u64_shape, {model{}, model{}});
  const auto out = scratch / "out.bbt";
  REQUIRE(merge_indexes(paths, out, merge_options_for(duplicate_policy::error)).entries == 0);
  REQUIRE(reader::open(out).size() == 0);
  model one;
  for (std::uint64_t key = 0; key < 1000; ++key)
    one[std::string(u64_key(key).view())] = std::string(u64_value(key).view());
  write_index(scratch / "one.bbt", u64_shape, one);
  const std::vector<std::filesystem::path> single{scratch / "one.bbt"};
  merge_indexes(single, out, merge_options_for(duplicate_policy::error));
  REQUIRE(read_all(out) == one);
  REQUIRE_THROWS_AS(merge_indexes(std::vector<std::filesystem::path>{}, out,
                                  merge_options_for(duplicate_policy::error)),
                    error);
}

TEST_CASE("a shard set merges as one input, at its place among the inputs", "[merge][shards]") {
  scratch_directory scratch;
  std::mt19937_64 random(23);
  std::vector<model> inputs(3);
  for (std::size_t input = 0; input < inputs.size(); ++input) {
    for (int i = 0; i < 3000; ++i) {
      inputs[input][std::string(u64_key(random() % 6000).view())] =
          std::string(u64_value(input).view());
    }
  }
  const auto paths = write_inputs(scratch, u64_shape, inputs);
  // The middle input as a set of 5 shards instead of one file.
  split_index(sharded_reader::open(paths[1]), scratch / "middle.manifest",
              options_for_test(u64_shape), {5, 0});
  const std::vector<std::filesystem::path> with_set{paths[0], scratch / "middle.manifest",
                                                    paths[2]};
  for (const duplicate_policy policy :
       {duplicate_policy::keep_first, duplicate_policy::keep_last}) {
    const auto out = scratch / "out.bbt";
    merge_indexes(with_set, out, merge_options_for(policy));
    REQUIRE(read_all(out) == *expected_merge(inputs, policy));
  }
  SECTION("a set alone, and a set without shards") {
    const std::vector<std::filesystem::path> alone{scratch / "middle.manifest"};
    merge_indexes(alone, scratch / "alone.bbt", merge_options_for(duplicate_policy::error));
    REQUIRE(read_all(scratch / "alone.bbt") == inputs[1]);
    shard_manifest empty;
    empty.types = entry_types::of(options_for_test(u64_shape));
    write_file(scratch / "empty.manifest", format_shard_manifest(empty));
    const std::vector<std::filesystem::path> nothing{scratch / "empty.manifest"};
    REQUIRE(
        merge_indexes(nothing, scratch / "nothing.bbt", merge_options_for(duplicate_policy::error))
            .entries == 0);
    REQUIRE(reader::open(scratch / "nothing.bbt").info().keys == key_kind::u64);
  }
  SECTION("a duplicate names the shard, and a missing shard the manifest's line") {
    const std::vector<std::filesystem::path> twice{paths[0], scratch / "middle.manifest"};
    std::string message;
    try {
      merge_indexes(twice, scratch / "twice.bbt", merge_options_for(duplicate_policy::error));
    } catch (const error& e) {
      message = e.what();
    }
    REQUIRE_THAT(message, Catch::Contains("in0.bbt") && Catch::Contains("middle.manifest.shard-"));
    std::filesystem::remove(shard_file_name(scratch / "middle.manifest", 2));
    try {
      merge_indexes(twice, scratch / "twice.bbt", merge_options_for(duplicate_policy::keep_first));
      FAIL("a set with a shard missing merged");
    } catch (const error& e) {
      REQUIRE(e.code() == errc::io_error);
      REQUIRE_THAT(std::string(e.what()), Catch::Contains("middle.manifest:5:"));
    }
    REQUIRE_FALSE(std::filesystem::exists(scratch / "twice.bbt"));
  }
}

TEST_CASE("inputs of different types are refused, naming both", "[merge]") {
  scratch_directory scratch;
  write_index(scratch / "numbers.bbt", u64_shape,
              {{std::string(u64_key(1).view()), std::string(u64_value(1).view())}});
  write_index(scratch / "words.bbt", bytes_shape, {{"a", "b"}});
  const std::vector<std::filesystem::path> paths{scratch / "numbers.bbt", scratch / "words.bbt"};
  try {
    merge_indexes(paths, scratch / "out.bbt", merge_options_for(duplicate_policy::error));
    FAIL("different types were merged");
  } catch (const error& failure) {
    REQUIRE(failure.code() == errc::type_mismatch);
    const std::string message = failure.what();
    REQUIRE(message.find((scratch / "numbers.bbt").string() + " has u64 keys and u64 values") !=
            std::string::npos);
    REQUIRE(message.find((scratch / "words.bbt").string() + " has bytes keys and bytes values") !=
            std::string::npos);
  }
  REQUIRE(!std::filesystem::exists(scratch / "out.bbt"));
}

TEST_CASE("a damaged input fails the merge, naming it", "[merge]") {
  scratch_directory scratch;
  model entries;
  for (std::uint64_t key = 0; key < 5000; ++key)
    entries[std::string(u64_key(key).view())] = std::string(u64_value(key).view());
  write_index(scratch / "good.bbt", u64_shape, entries);
  std::string bytes = read_file(scratch / "good.bbt");
  bytes[3 * 4096 + 100] ^= 0x10;  // inside the third leaf
  require_merge_refuses(scratch, bytes, 3, "checksum mismatch");
}

TEST_CASE("damage behind valid page checksums fails the merge, naming the input and page",
          "[merge]") {
  scratch_directory scratch;
  const shape kinds{key_kind::u64, 0, value_kind::bytes, 0, 512};
  model entries;
  for (std::uint64_t key = 0; key < 5000; ++key) {
    entries[std::string(u64_key(key * 7).view())] = std::string(key % 4 == 0 ? 100 : 10, 'v');
  }
  write_index(scratch / "good.bbt", kinds, entries);
  const std::string good = read_file(scratch / "good.bbt");
  const reader index = reader::from_memory(as_bytes(good));
  const detail::reader_core& core = index.core();
  const std::uint32_t page_size = index.info().page_size;
  const detail::page_view leaf = core.page(4, 0);
  SECTION("two keys of a leaf out of order") {
    std::string file = good;
    char* inline_keys = file.data() + 4 * page_size + leaf.sections.inline_keys;
    std::swap_ranges(inline_keys + leaf.inline_width, inline_keys + 2 * leaf.inline_width,
                     inline_keys + 2 * leaf.inline_width);
    rechecksum_page(file, 4);
    require_merge_refuses(scratch, file, 4, "entry 2: keys out of order");
  }
  SECTION("a value stored out of the page, changed") {
    // The first external value of leaf 4 (its entry whose key is a multiple
    // of 28), one byte changed where the page cannot see it.
    std::uint32_t position = 0;
    while (position < leaf.count && !core.value_item(leaf, position).external) ++position;
    REQUIRE(position < leaf.count);
    const auto value = core.value_item(leaf, position).bytes;
    std::string file = good;
    file[static_cast<std::size_t>(value.data() - good.data()) + 50] ^= 0x01;
    require_merge_refuses(
        scratch, file, 4,
        fmt::format("entry {}: the value stored out of the page fails its checksum", position));
  }
}

TEST_CASE("the output may replace an input", "[merge]") {
  scratch_directory scratch;
  std::vector<model> inputs(2);
  for (std::uint64_t key = 0; key < 20000; ++key) {
    inputs[key % 2][std::string(u64_key(key).view())] = std::string(u64_value(key).view());
  }
  const auto paths = write_inputs(scratch, u64_shape, inputs);
  merge_options options = merge_options_for(duplicate_policy::error);
  merge_indexes(paths, paths[0], options);
  REQUIRE(read_all(paths[0]) == *expected_merge(inputs, duplicate_policy::error));
  options.overwrite = false;
  try {
    merge_indexes(paths, paths[1], options);
    FAIL("an existing output was replaced");
  } catch (const error& failure) {
    REQUIRE(failure.code() == errc::already_exists);
  }
}
