// The verifier: valid files of every kind pass; each header error the reader
// reports at open; truncation, trailing data, moved pages; and damage that
// leaves every checksum valid, so that the structural checks must find it.
#include "verify_test_support.h"

#include <bbtree/detail/reader_core.h>
#include <bbtree/detail/verify_costs.h>
#include <bbtree/shards.h>
#include <bbtree/verify.h>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <cstring>

using namespace bbtree;
using namespace bbtree::test;
namespace header = bbtree::format::header;
namespace page_field = bbtree::format::page;

namespace {

// Keys 0, 3, 6, ...: separators are never the only value between two keys.
model spaced_u64_model(std::size_t count) {
  model entries;
  for (std::uint64_t i = 0; i < count; ++i) {
    entries[std::string(u64_key(i * 3).view())] = std::string(u64_value(i).view());
  }
  return entries;
}

const shape u64_shape{key_kind::u64, 0, value_kind::u64, 0, 512};

// The error code reader::from_memory throws for `file`, if any.
std::optional<errc> open_error(const std::string& file) {
  try {
    (void)reader::from_memory(as_bytes(file), "test.bbt");
  } catch (const error& e) {
    return e.code();
  }
  return std::nullopt;
}

std::string open_message(const std::string& file) {
  try {
    (void)reader::from_memory(as_bytes(file), "test.bbt");
  } catch (const error& e) {
    return e.what();
  }
  return {};
}

// The file must fail to open with `code`, and verification must report
// one problem on page 0.
void require_header_error(const std::string& file, errc code) {
  INFO("reader: " << open_message(file));
  REQUIRE(open_error(file) == code);
  const verify_report report = verify_string(file);
  INFO(describe(report));
  REQUIRE_FALSE(report.problems.empty());
  // With trailing data, the bytes the header describes are verified too.
  if (code != errc::trailing_data) REQUIRE(report.problems.size() == 1);
  for (const verify_problem& problem : report.problems) REQUIRE(problem.page == 0u);
}

}  // namespace

TEST_CASE("valid files of every kind verify", "[verify]") {
  std::vector<shape> shapes = verify_shapes();
  shapes.push_back({key_kind::u64, 0, value_kind::u64, 0, 4096});
  shapes.push_back({key_kind::bytes, 0, value_kind::bytes, 0, 4096});
  shapes.push_back({key_kind::fixed, 16, value_kind::none, 0, 1024});
  shapes.push_back({key_kind::bytes, 0, value_kind::bytes, 0, 65536});
  for (const shape& kinds : shapes) {
    for (std::size_t count : {0, 1, 2, 17, 300, 3000}) {
      DYNAMIC_SECTION(kinds.describe() << ", " << count << " entries") {
        const model entries = random_model_of(kinds, count, count * 7 + kinds.page_size);
        const std::string file =
            build_bytes(kinds, entries,
                        count % 2 == 0 ? std::vector<std::pair<std::string, std::string>>{}
                                       : std::vector<std::pair<std::string, std::string>>{
                                             {"a", "1"}, {"b", std::string(3, '\0')}, {"", ""}});
        for (bool quick : {false, true}) {
          verify_options options;
          options.quick = quick;
          const verify_report report = verify_string(file, options);
          INFO(describe(report));
          REQUIRE(report.ok());
          REQUIRE_FALSE(report.truncated_list);
          REQUIRE(report.entries == entries.size());
          REQUIRE(report.file_size == file.size());
        }
      }
    }
  }
}

TEST_CASE("verify_file reads a file from disk and reports unreadable ones", "[verify]") {
  scratch_directory scratch;
  const auto path = scratch / "index.bbt";
  const build_summary summary = build_file(path, u64_shape, spaced_u64_model(60000));
  const verify_report report = verify_file(path);
  INFO(describe(report));
  REQUIRE(report.ok());
  REQUIRE(report.name == path.string());
  REQUIRE(report.entries == 60000);
  REQUIRE(report.file_size == summary.file_size);
  REQUIRE(report.pages == summary.pages);
  REQUIRE(report.height == summary.height);
  REQUIRE(report.height >= 3);

  write_file(scratch / "empty.bbt", "");
  const verify_report empty = verify_file(scratch / "empty.bbt");
  REQUIRE(empty.problems.size() == 1);
  REQUIRE(empty.problems[0].page == 0u);
  REQUIRE_THAT(format_problem(empty, empty.problems[0]),
               Catch::Contains("empty.bbt: page 0 (offset 0): "));

  // A FIFO would block a plain open(2) until a writer came.
  const auto fifo = scratch / "fifo.bbt";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const auto& unreadable : {scratch / "missing.bbt", scratch.path(), fifo}) {
    try {
      (void)verify_file(unreadable);
      FAIL("no error for " << unreadable);
    } catch (const error& e) {
      REQUIRE(e.code() == errc::io_error);
      REQUIRE_THAT(e.what(), Catch::Contains(unreadable.string()));
      if (unreadable == fifo) REQUIRE_THAT(e.what(), Catch::EndsWith("not a regular file"));
    }
    // The reader refuses the same, without waiting for a writer either.
    try {
      (void)reader::open(unreadable);
      FAIL("the reader opened " << unreadable);
    } catch (const error& e) {
      REQUIRE(e.code() == errc::io_error);
      REQUIRE_THAT(e.what(), Catch::Contains(unreadable.string()));
      if (unreadable == fifo) REQUIRE_THAT(e.what(), Catch::EndsWith("not a regular file"));
    }
    REQUIRE_FALSE(is_shard_manifest(unreadable));
  }
}

TEST_CASE("the reader's errors for a bad header", "[verify][header]") {
  const std::string good = build_bytes(u64_shape, spaced_u64_model(200));
  REQUIRE_FALSE(open_error(good));

  SECTION("not a bbtree file: empty, text, a wrong magic") {
    require_header_error("", errc::not_bbtree);
    require_header_error(std::string(1000, 'x'), errc::not_bbtree);
    std::string bad_magic = good;
    bad_magic[7] = '\r';  // a line-ending conversion
    require_header_error(bad_magic, errc::not_bbtree);
    std::string high_bit = good;
    high_bit[0] = 0x09;  // the eighth bit stripped
    require_header_error(high_bit, errc::not_bbtree);
  }
  SECTION("truncated: a prefix of the magic, part of the header, part of the file") {
    require_header_error(good.substr(0, 5), errc::truncated);
    require_header_error(good.substr(0, 8), errc::truncated);
    require_header_error(good.substr(0, 300), errc::truncated);
    require_header_error(good.substr(0, good.size() - 1), errc::truncated);
  }
  SECTION("trailing data") {
    REQUIRE(open_error(good + "x") == errc::trailing_data);
    const verify_report report = verify_string(good + std::string(4096, '\0'));
    INFO(describe(report));
    // The rest of the file is verified anyway, and is fine.
    REQUIRE(report.problems.size() == 1);
    REQUIRE(report.problems[0].page == 0u);
    REQUIRE(report.problems[0].offset == good.size());
    REQUIRE_THAT(report.problems[0].message, Catch::Contains("trailing data"));
  }
  SECTION("newer and impossible major versions") {
    std::string file = good;
    store_field<std::uint16_t>(file, header::major_offset, 2);
    rechecksum_header(file);
    require_header_error(file, errc::newer_version);
    REQUIRE_THAT(open_message(file), Catch::Contains(fmt::format("format version 2.{} is newer",
                                                                 format::format_minor)));
    store_field<std::uint16_t>(file, header::major_offset, 0);
    rechecksum_header(file);
    require_header_error(file, errc::corrupt_header);
  }
  SECTION("regions out of place, a metadata region shorter than its count") {
    const std::string with_metadata = build_bytes(u64_shape, spaced_u64_model(200), {{"k", "v"}});
    const std::uint64_t metadata_offset =
        format::load_le<std::uint64_t>(with_metadata.data() + header::metadata_offset_offset);
    std::string file = with_metadata;
    store_field<std::uint64_t>(file, header::metadata_offset_offset, metadata_offset + 1);
    store_field<std::uint64_t>(file, header::metadata_length_offset,
                               with_metadata.size() - metadata_offset - 1);
    rechecksum_header(file);
    require_header_error(file, errc::corrupt_header);
    REQUIRE_THAT(open_message(file), Catch::Contains("do not follow the pages"));
    // Three bytes of metadata, the file cut to match.
    file = with_metadata.substr(0, metadata_offset + 3);
    store_field<std::uint64_t>(file, header::metadata_length_offset, 3);
    store_field<std::uint64_t>(file, header::file_size_offset, file.size());
    rechecksum_header(file);
    require_header_error(file, errc::corrupt_header);
    REQUIRE_THAT(open_message(file), Catch::Contains("shorter than its 4-byte count"));
    file = good;
    store_field<std::uint32_t>(file, header::max_key_length_offset, 65537);
    rechecksum_header(file);
    require_header_error(file, errc::corrupt_header);
    REQUIRE_THAT(open_message(file), Catch::Contains("max_key_length 65537"));
  }
  SECTION("a newer minor version opens") {
    std::string file = good;
    store_field<std::uint16_t>(file, header::minor_offset, 7);
    store_field<std::uint64_t>(file, header::optional_features_offset, 0x40);
    file[200] = 1;  // reserved: a later minor version may define it
    rechecksum_header(file);
    REQUIRE_FALSE(open_error(file));
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(report.ok());
  }
  SECTION("unsupported required features, named") {
    std::string file = good;
    store_field<std::uint64_t>(file, header::required_features_offset, 0x8);
    rechecksum_header(file);
    require_header_error(file, errc::unsupported_feature);
    REQUIRE_THAT(open_message(file), Catch::Contains("0x8"));
    store_field<std::uint64_t>(file, header::required_features_offset, 0x8000000000000002ull);
    rechecksum_header(file);
    require_header_error(file, errc::unsupported_feature);
    REQUIRE_THAT(open_message(file), Catch::Contains("0x8000000000000002"));
  }
  SECTION("the header checksum") {
    std::string file = good;
    file[header::entry_count_offset] ^= 1;
    require_header_error(file, errc::corrupt_header);
    REQUIRE(verify_string(file).problems[0].offset == header::checksum_offset);
    file = good;
    file[header::checksum_offset] ^= 0x80;
    require_header_error(file, errc::corrupt_header);
  }
  SECTION("each bad field") {
    struct edit {
      const char* what;
      std::size_t offset;
      std::size_t size;
      std::uint64_t value;
      errc code;
    };
    const std::uint64_t pages_end =
        std::uint64_t{format::load_le<std::uint32_t>(good.data() + header::page_count_offset)} *
        512;
    const std::uint32_t height =
        format::load_le<std::uint32_t>(good.data() + header::height_offset);
    REQUIRE(height >= 2);
    const edit edits[] = {
        {"header_size", header::header_size_offset, 4, 513, errc::corrupt_header},
        {"page_size not a power of two", header::page_size_offset, 4, 1000, errc::corrupt_header},
        {"page_size too small", header::page_size_offset, 4, 256, errc::corrupt_header},
        {"page_size too large", header::page_size_offset, 4, 131072, errc::corrupt_header},
        {"key_kind 0", header::key_kind_offset, 1, 0, errc::corrupt_header},
        {"key_kind 5", header::key_kind_offset, 1, 5, errc::corrupt_header},
        {"value_kind 4", header::value_kind_offset, 1, 4, errc::corrupt_header},
        {"key_size of u64 keys", header::key_size_offset, 4, 7, errc::corrupt_header},
        {"value_size of u64 values", header::value_size_offset, 4, 0, errc::corrupt_header},
        {"file_size larger", header::file_size_offset, 8, good.size() + 512, errc::truncated},
        {"file_size smaller", header::file_size_offset, 8, good.size() - 512, errc::trailing_data},
        {"page_count 1", header::page_count_offset, 4, 1, errc::corrupt_header},
        {"page_count past the file", header::page_count_offset, 4, good.size() / 512 + 1,
         errc::corrupt_header},
        {"blob_offset without a blob", header::blob_offset_offset, 8, pages_end,
         errc::corrupt_header},
        {"blob region past the file", header::blob_length_offset, 8, 4096, errc::corrupt_header},
        {"metadata region past the file", header::metadata_length_offset, 8, 100,
         errc::corrupt_header},
        {"height 0", header::height_offset, 4, 0, errc::corrupt_header},
        {"height 33", header::height_offset, 4, 33, errc::corrupt_header},
        {"height one more", header::height_offset, 4, height + 1, errc::corrupt_header},
        {"root_page", header::root_page_offset, 4, 1, errc::corrupt_header},
        {"first_leaf_page", header::first_leaf_page_offset, 4, 2, errc::corrupt_header},
        {"leaf_count", header::leaf_count_offset, 4, 3, errc::corrupt_header},
        {"level_first_page[0]", header::level_table_offset, 4, 2, errc::corrupt_header},
        {"level_first_page[1]", header::level_table_offset + 4, 4, 5, errc::corrupt_header},
        {"level_first_page[height - 1]", header::level_table_offset + 4 * (height - 1), 4, 1000,
         errc::corrupt_header},
    };
    for (const edit& change : edits) {
      DYNAMIC_SECTION(change.what) {
        std::string file = good;
        for (std::size_t i = 0; i < change.size; ++i)
          file[change.offset + i] = static_cast<char>(change.value >> (8 * i));
        rechecksum_header(file);
        require_header_error(file, change.code);
      }
    }
  }
}

TEST_CASE("header fields that only verification checks", "[verify][header]") {
  const std::string good = build_bytes(u64_shape, spaced_u64_model(200), {{"k", "v"}});
  const std::uint32_t height = format::load_le<std::uint32_t>(good.data() + header::height_offset);
  struct edit {
    const char* what;
    std::size_t offset;
    std::size_t size;
    std::uint64_t value;
  };
  const edit edits[] = {
      {"reserved after the kinds", 38, 1, 1},
      {"reserved after page_count", 76, 4, 9},
      {"reserved after max_value_length", 144, 8, 1},
      {"reserved before the checksum", 500, 1, 0x80},
      {"optional features in a 1.1 file", header::optional_features_offset, 8, 4},
      {"build_flags reserved bits", header::build_flags_offset, 4, 0x100},
      {"build_flags duplicate policy 3", header::build_flags_offset, 4, 6},
      {"level table past the height", header::level_table_offset + 4 * height, 4, 7},
      {"entry_count", header::entry_count_offset, 8, 199},
      {"max_key_length", header::max_key_length_offset, 4, 9},
      {"max_value_length", header::max_value_length_offset, 4, 7},
      {"metadata_checksum", header::metadata_checksum_offset, 4, 1},
  };
  for (const edit& change : edits) {
    DYNAMIC_SECTION(change.what) {
      std::string file = good;
      for (std::size_t i = 0; i < change.size; ++i)
        file[change.offset + i] = static_cast<char>(change.value >> (8 * i));
      rechecksum_header(file);
      REQUIRE_FALSE(open_error(file));
      const verify_report report = verify_string(file);
      INFO(describe(report));
      REQUIRE_FALSE(report.ok());
      if (change.offset == header::metadata_checksum_offset) {
        REQUIRE(has_region_problem(report, verify_region::metadata, "checksum"));
      } else {
        REQUIRE(report.problems[0].page == 0u);
        REQUIRE(report.problems[0].offset >= change.offset);
        REQUIRE(report.problems[0].offset < change.offset + change.size);
      }
    }
  }
  SECTION("page 0 past the header") {
    std::string file =
        build_bytes({key_kind::u64, 0, value_kind::u64, 0, 4096}, spaced_u64_model(10));
    file[700] = 1;
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(report.problems.size() == 1);
    REQUIRE(report.problems[0].page == 0u);
    REQUIRE(report.problems[0].offset == 700);
  }
  SECTION("the builder policy of the file's minor version") {
    // Random keys below 2^48: leaves share two leading bytes and keep 4 of
    // the other 6 inline, with 2-byte tails (since 1.1); 1.0 kept all 6
    // inline, in 8 bytes.
    model entries;
    std::mt19937_64 random(11);
    while (entries.size() < 3000) entries[std::string(u64_key(random() >> 16).view())] = "";
    const std::string current = build_bytes({key_kind::u64, 0, value_kind::none, 0, 512}, entries);
    REQUIRE(verify_string(current).ok());
    std::string older = current;
    store_field<std::uint16_t>(older, header::minor_offset, 0);
    rechecksum_header(older);
    const verify_report report = verify_string(older);
    REQUIRE_FALSE(report.ok());
    REQUIRE_THAT(describe(report), Catch::Contains("inline_width 4 for 6-byte suffixes; the "
                                                   "builder uses 8"));
    verify_options format_only;
    format_only.builder_policy = false;
    REQUIRE(verify_string(older, format_only).ok());
  }
  SECTION("a metadata checksum in a file without metadata") {
    std::string file = build_bytes(u64_shape, spaced_u64_model(200));
    store_field<std::uint32_t>(file, header::metadata_checksum_offset, 1);
    rechecksum_header(file);
    REQUIRE_FALSE(open_error(file));
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(report.problems.size() == 1);
    REQUIRE(report.problems[0].offset == header::metadata_checksum_offset);
    REQUIRE_THAT(report.problems[0].message, Catch::Contains("not 0 in a file without metadata"));
  }
  SECTION("prefix_cap: builder policy only, with the pages whose prefix passes it") {
    model entries;
    for (int i = 0; i < 400; ++i) entries[fmt::format("/srv/data/archive/{:05}", i * 7)] = "";
    std::string file = build_bytes({key_kind::bytes, 0, value_kind::none, 0, 512}, entries);
    REQUIRE(verify_string(file).ok());
    store_field<std::uint32_t>(file, header::prefix_cap_offset, 8);
    rechecksum_header(file);
    REQUIRE_FALSE(open_error(file));
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(has_page_problem(report, 0, "prefix_cap is 8; the builder uses page_size / 8 = 64"));
    REQUIRE(has_page_problem(report, 1, "is over prefix_cap 8 (builder policy"));
    verify_options format_only;
    format_only.builder_policy = false;
    REQUIRE(verify_string(file, format_only).ok());
  }
  SECTION("inline_limit: builder policy only") {
    std::string file = good;
    store_field<std::uint32_t>(file, header::inline_limit_offset, 100);
    rechecksum_header(file);
    REQUIRE(has_page_problem(verify_string(file), 0, "inline_limit"));
    verify_options format_only;
    format_only.builder_policy = false;
    REQUIRE(verify_string(file, format_only).ok());
  }
}

TEST_CASE("truncation at every page boundary and within pages", "[verify][truncation]") {
  scratch_directory scratch;
  for (const shape& kinds : {u64_shape, shape{key_kind::bytes, 0, value_kind::bytes, 0, 512}}) {
    const std::string file = build_bytes(kinds, random_model_of(kinds, 400, 3), {{"meta", "data"}});
    const std::size_t page_size = page_size_of(file);
    std::vector<std::size_t> lengths;
    for (std::size_t length = page_size; length < file.size(); length += page_size) {
      lengths.push_back(length);
      lengths.push_back(length - 1);
      lengths.push_back(length + page_size / 2);
    }
    lengths.push_back(file.size() - 1);
    for (std::size_t length : lengths) {
      if (length >= file.size()) continue;
      INFO(kinds.describe() << ": " << length << " of " << file.size() << " bytes");
      const std::string truncated = file.substr(0, length);
      REQUIRE(open_error(truncated) == errc::truncated);
      const verify_report report = verify_string(truncated);
      REQUIRE(report.problems.size() == 1);
      REQUIRE(report.problems[0].page == 0u);
      REQUIRE_THAT(report.problems[0].message, Catch::Contains("truncated"));
    }
    // reader::open says the same about a file on disk.
    write_file(scratch / "short.bbt", file.substr(0, 3 * page_size));
    try {
      (void)reader::open(scratch / "short.bbt");
      FAIL("a truncated file opened");
    } catch (const error& e) {
      REQUIRE(e.code() == errc::truncated);
    }
    write_file(scratch / "long.bbt", file + "garbage");
    try {
      (void)reader::open(scratch / "long.bbt");
      FAIL("a file with trailing data opened");
    } catch (const error& e) {
      REQUIRE(e.code() == errc::trailing_data);
    }
    const verify_report report = verify_file(scratch / "long.bbt");
    REQUIRE(report.problems.size() == 1);
    REQUIRE_THAT(format_problem(report, report.problems[0]),
                 Catch::Contains(fmt::format("long.bbt: page 0 (offset {}): ", file.size())));
  }
}

TEST_CASE("moved pages are named by their page numbers", "[verify]") {
  const std::string good = build_bytes(u64_shape, spaced_u64_model(60000));
  const std::size_t page_size = page_size_of(good);
  const reader index = reader::from_memory(as_bytes(good));
  const std::uint32_t leaves = index.info().leaf_count;
  const std::uint32_t pages = index.info().page_count;
  REQUIRE(leaves > 10);
  SECTION("two leaves swapped") {
    std::string file = good;
    std::swap_ranges(file.begin() + 3 * page_size, file.begin() + 4 * page_size,
                     file.begin() + 7 * page_size);
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(has_page_problem(report, 3, "page_number field is 7"));
    REQUIRE(has_page_problem(report, 7, "page_number field is 3"));
  }
  SECTION("a leaf swapped with an inner page") {
    std::string file = good;
    std::swap_ranges(file.begin() + 2 * page_size, file.begin() + 3 * page_size,
                     file.begin() + static_cast<std::ptrdiff_t>(leaves + 1) * page_size);
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(has_page_problem(report, 2, "page_number field"));
    REQUIRE(has_page_problem(report, 2, "kind"));
    REQUIRE(has_page_problem(report, leaves + 1, "page_number field"));
    REQUIRE(has_page_problem(report, leaves + 1, "level field"));
  }
  SECTION("a page copied over another") {
    std::string file = good;
    std::copy(file.begin() + 5 * page_size, file.begin() + 6 * page_size,
              file.begin() + 9 * page_size);
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(report.problems[0].page == 9u);
    REQUIRE(has_page_problem(report, 9, "page_number field is 5"));
  }
  SECTION("the root copied over the first inner page") {
    std::string file = good;
    std::copy(file.begin() + static_cast<std::ptrdiff_t>(pages - 1) * page_size, file.end(),
              file.begin() + static_cast<std::ptrdiff_t>(leaves + 1) * page_size);
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(report.problems[0].page == leaves + 1);
  }
  SECTION("quick verification finds them too") {
    std::string file = good;
    std::swap_ranges(file.begin() + 3 * page_size, file.begin() + 4 * page_size,
                     file.begin() + 4 * page_size);
    verify_options quick;
    quick.quick = true;
    const verify_report report = verify_string(file, quick);
    REQUIRE(has_page_problem(report, 3, "page_number"));
    REQUIRE(has_page_problem(report, 4, "page_number"));
  }
}

TEST_CASE("damage behind valid checksums", "[verify]") {
  const std::string good = build_bytes(u64_shape, spaced_u64_model(60000));
  const std::size_t page_size = page_size_of(good);
  const reader index = reader::from_memory(as_bytes(good));
  const detail::reader_core& core = index.core();
  const std::uint32_t leaves = index.info().leaf_count;
  REQUIRE(index.info().height == 3);
  const std::uint32_t level1 = core.level_first_page(1);
  REQUIRE(core.level_end_page(1) - level1 >= 3);

  SECTION("two keys of a leaf out of order") {
    std::string file = good;
    const detail::page_view leaf = core.page(4, 0);
    char* inline_keys = file.data() + 4 * page_size + leaf.sections.inline_keys;
    std::swap_ranges(inline_keys + leaf.inline_width, inline_keys + 2 * leaf.inline_width,
                     inline_keys + 2 * leaf.inline_width);
    rechecksum_page(file, 4);
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(report.problems.size() == 1);
    REQUIRE(has_page_problem(report, 4, "key 2"));
    REQUIRE(report.problems[0].offset ==
            4 * page_size + leaf.sections.inline_keys + 2 * leaf.inline_width);
  }
  SECTION("a duplicate key") {
    std::string file = good;
    const detail::page_view leaf = core.page(4, 0);
    char* inline_keys = file.data() + 4 * page_size + leaf.sections.inline_keys;
    std::memcpy(inline_keys + 6 * leaf.inline_width, inline_keys + 5 * leaf.inline_width,
                leaf.inline_width);
    rechecksum_page(file, 4);
    REQUIRE(has_page_problem(verify_string(file), 4, "not greater than key 5"));
  }
  SECTION("keys out of order from one leaf to the next") {
    // The last key of a leaf made equal to the first key of the next one,
    // in two leaves with the same prefix and inline width.
    std::uint32_t page = 1;
    while (page + 1 < leaves &&
           (core.page(page, 0).prefix() != core.page(page + 1, 0).prefix() ||
            core.page(page, 0).inline_width != core.page(page + 1, 0).inline_width)) {
      ++page;
    }
    REQUIRE(page + 1 < leaves);
    std::string file = good;
    const detail::page_view leaf = core.page(page, 0);
    const detail::page_view next = core.page(page + 1, 0);
    std::memcpy(file.data() + page * page_size + leaf.sections.inline_keys +
                    (leaf.count - 1) * leaf.inline_width,
                next.bytes + next.sections.inline_keys, leaf.inline_width);
    rechecksum_page(file, page);
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(
        has_page_problem(report, page + 1, fmt::format("not greater than the last key {}", "")));
    REQUIRE(has_page_problem(report, page + 1, fmt::format("of page {}", page)));
    REQUIRE(has_region_problem(report, verify_region::page, "does not divide"));
  }
  SECTION("a separator that does not divide its children") {
    std::string file = good;
    const detail::page_view inner = core.page(level1 + 1, 1);
    REQUIRE(inner.count >= 3);
    const std::uint32_t index_in_page = 1;
    const std::uint64_t separator = inner.inline_key(index_in_page);
    // One more in the last byte of the suffix, which may be followed by
    // zero padding in the inline key.
    const std::uint32_t suffix = 8 - inner.prefix_length;
    const std::uint64_t one =
        suffix < inner.inline_width ? std::uint64_t{1} << (8 * (inner.inline_width - suffix)) : 1;
    REQUIRE(((separator / one) & 0xFF) < 0xFE);
    format::store_inline_key(
        raw(file) + std::uint64_t{level1 + 1} * page_size + inner.sections.inline_keys,
        index_in_page, inner.inline_width, separator + one);
    rechecksum_page(file, level1 + 1);
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(report.problems.size() == 1);
    REQUIRE(has_page_problem(report, level1 + 1, "separator 1"));
    REQUIRE(has_page_problem(report, level1 + 1, "does not divide"));
  }
  SECTION("first_rank") {
    std::string file = good;
    store_field<std::uint64_t>(file, 5 * page_size + page_field::first_rank_offset,
                               core.page(5, 0).header_word + 1);
    rechecksum_page(file, 5);
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(report.problems.size() == 1);
    REQUIRE(has_page_problem(report, 5, "first_rank"));
  }
  SECTION("first_child") {
    std::string file = good;
    const std::uint32_t page = level1 + 1;
    store_field<std::uint32_t>(file, page * page_size + page_field::first_child_offset,
                               static_cast<std::uint32_t>(core.page(page, 1).header_word + 1));
    rechecksum_page(file, page);
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(report.problems.size() == 1);
    REQUIRE(has_page_problem(report, page, "first_child"));
  }
  SECTION("count of the last inner page of a level") {
    std::string file = good;
    const std::uint32_t page = core.level_end_page(1) - 1;
    const detail::page_view inner = core.page(page, 1);
    REQUIRE(inner.count >= 1);
    store_field<std::uint16_t>(file, page * page_size + page_field::count_offset,
                               static_cast<std::uint16_t>(inner.count - 1));
    rechecksum_page(file, page);
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(has_page_problem(report, page, "children of level 1 end at index"));
  }
  SECTION("bytes after heap_end") {
    std::uint32_t page = 1;
    while (page < index.info().page_count && core.page(page, -1).heap_end == page_size) ++page;
    REQUIRE(page < index.info().page_count);
    std::string file = good;
    file[page * page_size + page_size - 1] = 1;
    rechecksum_page(file, page);
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(report.problems.size() == 1);
    REQUIRE(has_page_problem(report, page, "after heap_end"));
    REQUIRE(report.problems[0].offset == (page + 1) * page_size - 1);
  }
  SECTION("reserved page header fields") {
    std::string file = good;
    file[2 * page_size + 11] = 1;
    file[(leaves + 1) * page_size + 22] = 1;
    rechecksum_page(file, 2);
    rechecksum_page(file, leaves + 1);
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(report.problems.size() == 2);
    REQUIRE(has_page_problem(report, 2, "reserved"));
    REQUIRE(has_page_problem(report, leaves + 1, "reserved"));
  }
  SECTION("an empty leaf") {
    // Leaf 8 loses its entries: the ranks and the entry count no longer add up.
    std::string file = good;
    unsigned char* page = raw(file) + 8 * page_size;
    std::memset(page + 12, 0, 4);  // count and prefix_length
    const format::page_sections empty = format::compute_sections(
        format::page_kind::leaf, 0, 0, 8, key_kind::u64, 8, value_kind::u64, 8);
    page[page_field::inline_width_offset] = 8;
    store_field<std::uint32_t>(file, 8 * page_size + page_field::heap_end_offset, empty.heap);
    std::memset(page + empty.heap, 0, page_size - empty.heap);
    rechecksum_page(file, 8);
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(has_page_problem(report, 8, "without entries"));
    REQUIRE(has_page_problem(report, 0, "entry_count"));
  }
  SECTION("max_errors stops the report") {
    std::string file = good;
    for (std::uint32_t page = 1; page <= leaves; ++page)
      file[page * page_size + page_field::page_number_offset + 3] = 1;
    verify_options options;
    options.max_errors = 7;
    const verify_report report = verify_string(file, options);
    REQUIRE(report.problems.size() == 7);
    REQUIRE(report.truncated_list);
    options.max_errors = 0;
    const verify_report all = verify_string(file, options);
    REQUIRE(all.problems.size() == 2 * leaves);  // a checksum and a page number each
    REQUIRE_FALSE(all.truncated_list);
  }
}

TEST_CASE("byte strings: heap, blob and metadata damage behind valid checksums", "[verify]") {
  const shape kinds{key_kind::bytes, 0, value_kind::bytes, 0, 512};
  model entries;
  const std::string long_value(300, 'L');
  for (int i = 0; i < 200; ++i) {
    entries[fmt::format("key-{:05}", i * 7)] =
        i % 10 == 3 ? long_value : std::string(static_cast<std::size_t>(i % 9), 'v');
  }
  entries[std::string(200, 'z')] = "a remainder in the blob region";
  const std::string good = build_bytes(kinds, entries, {{"alpha", "1"}, {"beta", "2"}});
  REQUIRE(verify_string(good).ok());
  const std::size_t page_size = page_size_of(good);
  const reader index = reader::from_memory(as_bytes(good));
  const detail::reader_core& core = index.core();
  const file_info& info = index.info();
  REQUIRE(info.blob_length > 0);

  // The external records of long values, as (page, record offset in the page).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> records;
  for (std::uint32_t page = 1; page <= info.leaf_count; ++page) {
    const detail::page_view leaf = core.page(page, 0);
    for (std::uint32_t i = 0; i < leaf.count; ++i) {
      const std::uint32_t reference = format::load_le<std::uint32_t>(
          leaf.bytes + leaf.sections.values + i * format::slot_size + 4);
      if ((reference & format::external_flag) != 0 &&
          core.value_item(leaf, i).bytes == long_value) {
        records.emplace_back(page, reference & ~format::external_flag);
      }
    }
  }
  REQUIRE(records.size() >= 3);

  SECTION("two records of one item: an overlap and an unreferenced gap") {
    std::string file = good;
    const auto [first_page, first_record] = records[0];
    const auto [second_page, second_record] = records[1];
    std::memcpy(file.data() + second_page * page_size + second_record,
                file.data() + first_page * page_size + first_record, 8);
    rechecksum_page(file, second_page);
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(report.problems.size() == 2);
    REQUIRE((has_page_problem(report, first_page, "overlaps") ||
             has_page_problem(report, second_page, "overlaps")));
    REQUIRE(has_region_problem(report, verify_region::blob, "not referenced"));
  }
  SECTION("a blob byte: the page holding the record") {
    std::string file = good;
    const auto [page, record] = records[2];
    const std::uint64_t offset =
        format::load_le<std::uint64_t>(file.data() + page * page_size + record);
    file[info.blob_offset + offset + 17] ^= 4;
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(report.problems.size() == 1);
    REQUIRE(report.problems[0].page == page);
    REQUIRE(report.problems[0].offset == page * page_size + record + 8);
    verify_options quick;
    quick.quick = true;
    REQUIRE(verify_string(file, quick).problems.size() == 1);
  }
  SECTION("an item moved within the heap") {
    // The first two in-page items of a leaf exchanged, slots updated: every
    // item in bounds, but not in entry order.
    std::string file = good;
    bool done = false;
    for (std::uint32_t page = 1; page <= info.leaf_count && !done; ++page) {
      const detail::page_view leaf = core.page(page, 0);
      unsigned char* slot0 = raw(file) + page * page_size + leaf.sections.values;
      for (std::uint32_t i = 0; i + 1 < leaf.count && !done; ++i) {
        unsigned char* a = slot0 + i * 8;
        unsigned char* b = slot0 + (i + 1) * 8;
        const std::uint32_t length_a = format::load_le<std::uint32_t>(a);
        const std::uint32_t length_b = format::load_le<std::uint32_t>(b);
        const std::uint32_t ref_a = format::load_le<std::uint32_t>(a + 4);
        const std::uint32_t ref_b = format::load_le<std::uint32_t>(b + 4);
        if (length_a == 0 || length_b == 0 || length_a == length_b || length_a > 64 ||
            length_b > 64 || ref_b != ref_a + length_a) {
          continue;
        }
        // a's item then b's item, back to back: store b's first.
        std::string items = file.substr(page * page_size + ref_a, length_a + length_b);
        std::string swapped = items.substr(length_a) + items.substr(0, length_a);
        std::memcpy(file.data() + page * page_size + ref_a, swapped.data(), swapped.size());
        format::store_le<std::uint32_t>(a + 4, ref_a + length_b);
        format::store_le<std::uint32_t>(b + 4, ref_a);
        rechecksum_page(file, page);
        const verify_report report = verify_string(file);
        INFO(describe(report));
        REQUIRE(has_page_problem(report, page, "entry order"));
        done = true;
      }
    }
    REQUIRE(done);
  }
  SECTION("metadata keys out of order") {
    std::string file = good;
    const std::size_t at = file.find("alpha", info.metadata_offset);
    REQUIRE(at != std::string::npos);
    file[at] = 'c';  // "clpha" > "beta"
    store_field<std::uint32_t>(
        file, header::metadata_checksum_offset,
        format::crc32c(file.data() + info.metadata_offset, info.metadata_length));
    rechecksum_header(file);
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(report.problems.size() == 1);
    REQUIRE(has_region_problem(report, verify_region::metadata, "not greater"));
    REQUIRE_THAT(format_problem(report, report.problems[0]),
                 Catch::StartsWith("test.bbt: metadata (offset "));
  }
  SECTION("metadata layout faults: the reader and the verifier report the same") {
    // The region holds entry_count, then "alpha" = "1" (14 bytes) and
    // "beta" = "2" (13 bytes).
    REQUIRE(info.metadata_length == 4 + 14 + 13);
    struct layout_fault {
      std::uint32_t count;
      std::string message;
    };
    for (const layout_fault& fault :
         {layout_fault{1, "13 bytes after the last of the 1 entries"},
          layout_fault{3, "entry 2 of 3 runs past the end of the region"}}) {
      INFO(fault.message);
      std::string file = good;
      store_field<std::uint32_t>(file, info.metadata_offset, fault.count);
      store_field<std::uint32_t>(
          file, header::metadata_checksum_offset,
          format::crc32c(file.data() + info.metadata_offset, info.metadata_length));
      rechecksum_header(file);
      const std::string expected =
          fmt::format("test.bbt: metadata (offset {}): {}",
                      info.metadata_offset + 18 + (fault.count == 1 ? 0 : 13), fault.message);
      const verify_report report = verify_string(file);
      REQUIRE(report.problems.size() == 1);
      REQUIRE(format_problem(report, report.problems[0]) == expected);
      const reader damaged = reader::from_memory(as_bytes(file), "test.bbt");
      REQUIRE_THROWS_WITH(damaged.metadata(), expected);
    }
  }
  SECTION("a metadata byte") {
    std::string file = good;
    file[file.size() - 1] ^= 1;
    const verify_report report = verify_string(file);
    REQUIRE(report.problems.size() == 1);
    REQUIRE(report.problems[0].region == verify_region::metadata);
    REQUIRE_FALSE(report.problems[0].page.has_value());
  }
}

TEST_CASE("external records that all point at one blob item", "[verify]") {
  // Every value of 65 bytes goes outside its 512-byte page.  The records are
  // then all pointed at the whole blob region, with a checksum that is
  // right for it: each item is in bounds and checksums well, but the items
  // overlap, and checksumming each in turn would read the region once per
  // record, a time quadratic in the file's size.
  const shape kinds{key_kind::bytes, 0, value_kind::bytes, 0, 512};
  model entries;
  for (int i = 0; i < 2000; ++i) entries[fmt::format("k{:05}", i)] = std::string(65, 'v');
  std::string file = build_bytes(kinds, entries);
  const std::size_t page_size = page_size_of(file);
  const reader index = reader::from_memory(as_bytes(file));
  const file_info& info = index.info();
  REQUIRE(info.blob_length == 2000 * 65);
  const std::uint32_t region_checksum =
      format::crc32c(raw(file) + info.blob_offset, info.blob_length);
  std::size_t records = 0;
  for (std::uint32_t page = 1; page <= info.leaf_count; ++page) {
    const detail::page_view leaf = index.core().page(page, 0);
    unsigned char* page_bytes = raw(file) + page * page_size;
    for (std::uint32_t i = 0; i < leaf.count; ++i) {
      unsigned char* slot = page_bytes + leaf.sections.values + i * format::slot_size;
      const std::uint32_t reference = format::load_le<std::uint32_t>(slot + 4);
      REQUIRE((reference & format::external_flag) != 0);
      unsigned char* record = page_bytes + (reference & ~format::external_flag);
      format::store_le<std::uint32_t>(slot, static_cast<std::uint32_t>(info.blob_length));
      format::store_le<std::uint64_t>(record, 0);
      format::store_le<std::uint32_t>(record + 8, region_checksum);
      ++records;
    }
    rechecksum_page(file, page);
  }
  REQUIRE(records == 2000);
  // The reader follows such a record safely: the value is the region.
  REQUIRE(reader::from_memory(as_bytes(file)).get("k00007")->size() == info.blob_length);

  verify_options quick;
  quick.quick = true;
  const verify_report quick_report = verify_string(file, quick);
  INFO(describe(quick_report));
  REQUIRE(quick_report.problems.size() == 1);
  REQUIRE(quick_report.problems[0].page == 1u);
  REQUIRE_THAT(quick_report.problems[0].message,
               Catch::Contains("add up to more than the 130000-byte blob region"));

  verify_options all;
  all.max_errors = 0;
  const verify_report report = verify_string(file, all);
  INFO(describe(report));
  REQUIRE(has_page_problem(report, 1, "add up to more than"));
  std::size_t overlaps = 0;
  for (const verify_problem& problem : report.problems)
    overlaps += problem.message.find("overlaps an item before it") != std::string::npos;
  REQUIRE(overlaps == records - 1);
}

TEST_CASE("valid files at the limits verify", "[verify]") {
  for (const std::uint32_t page_size : {512u, 4096u, 65536u}) {
    const shape kinds{key_kind::bytes, 0, value_kind::bytes, 0, page_size};
    DYNAMIC_SECTION("page size " << page_size) {
      model entries;
      // Keys of the maximum length, long values, keys that are prefixes of
      // each other, the empty key, and a long shared prefix.
      entries[std::string(format::max_key_length, 'a')] = std::string(100000, 'v');
      entries[std::string(format::max_key_length - 1, 'a') + "b"] = "";
      entries[std::string(format::max_key_length, '\xff')] = std::string(70000, 'w');
      entries[""] = "the empty key";
      std::string key;
      for (int i = 0; i < 200; ++i) {
        key += static_cast<char>(i % 3 == 0 ? '\0' : (i % 3 == 1 ? '\xff' : 'k'));
        entries[key] = std::string(static_cast<std::size_t>(i), 'x');
      }
      const std::string shared(300, 's');
      for (int i = 0; i < 500; ++i) entries[shared + std::to_string(i * 7)] = std::to_string(i);
      const std::string file = build_bytes(kinds, entries);
      const verify_report report = verify_string(file);
      INFO(describe(report));
      REQUIRE(report.ok());
      REQUIRE(report.entries == entries.size());
    }
  }
  SECTION("the largest fixed values that validate() lets 512-byte pages hold") {
    // 192 bytes with u64 keys, 184 with 8-byte fixed keys; a byte more is
    // refused (test_build_failures.cc has the message).
    for (const shape kinds : {shape{key_kind::u64, 0, value_kind::fixed, 192, 512},
                              shape{key_kind::fixed, 8, value_kind::fixed, 184, 512}}) {
      const model entries = random_model_of(kinds, 300, 2);
      const std::string file = build_bytes(kinds, entries);
      const verify_report report = verify_string(file);
      INFO(kinds.describe() << ": " << describe(report));
      REQUIRE(report.ok());
      const reader index = reader::from_memory(as_bytes(file));
      std::mt19937_64 random(3);
      check_against_model(index, entries, probes_for(kinds, entries, random, 50));
      build_options one_more = options_for(kinds);
      ++one_more.value_size;
      REQUIRE_THROWS_AS(validate(one_more), error);
    }
  }
  SECTION("large fixed keys and values") {
    const shape kinds{key_kind::fixed, 200, value_kind::fixed, 100, 1024};
    const std::string file = build_bytes(kinds, random_model_of(kinds, 500, 1));
    const verify_report report = verify_string(file);
    INFO(describe(report));
    REQUIRE(report.ok());
  }
}

namespace {

// Keys of 'c' bytes, of lengths base, base + 1, ...: every key is a prefix
// of the next, so each separator is the whole first key after it (section
// 15.4), and with 512-byte pages every remainder, of a leaf key or of a
// separator, lies in the blob region and is made of 'c' bytes only.
model c_run_model(std::size_t base, std::size_t count) {
  model entries;
  for (std::size_t i = 0; i < count; ++i) entries[std::string(base + i, 'c')] = "";
  return entries;
}

const shape c_run_shape{key_kind::bytes, 0, value_kind::none, 0, 512, false};

// Points every key's external record, in every page, at blob offset 0 and
// cuts the blob region to the longest remainder.  The region holds only
// 'c' bytes, so every key and checksum is as before: the file is valid but
// for items that all overlap, and it is a small fraction of the size it had.
std::string point_remainders_at_one_item(const std::string& built, const model& entries) {
  std::string file = built;
  const reader index = reader::from_memory(as_bytes(built));
  const detail::reader_core& core = index.core();
  const file_info& info = index.info();
  REQUIRE(info.metadata_length == 0);
  REQUIRE(info.directory_length == 0);
  const std::size_t page_size = page_size_of(file);
  std::uint64_t longest = 0;
  std::size_t records = 0;
  for (std::uint32_t level = 0; level < info.height; ++level) {
    for (std::uint32_t number = core.level_first_page(level); number < core.level_end_page(level);
         ++number) {
      const detail::page_view page = core.page(number, static_cast<int>(level));
      unsigned char* bytes = raw(file) + std::uint64_t{number} * page_size;
      for (std::uint32_t i = 0; i < page.count; ++i) {
        const unsigned char* slot = bytes + page.sections.key_data + i * format::slot_size;
        const std::uint32_t reference = format::load_le<std::uint32_t>(slot + 4);
        if ((reference & format::external_flag) == 0) continue;
        const std::uint64_t length = format::load_le<std::uint32_t>(slot) - page.inline_width;
        unsigned char* record = bytes + (reference & ~format::external_flag);
        format::store_le<std::uint64_t>(record, 0);
        longest = std::max(longest, length);
        ++records;
      }
      rechecksum_page(file, number);
    }
  }
  REQUIRE(records > 2 * info.leaf_count);
  file.resize(info.blob_offset + longest);
  store_field<std::uint64_t>(file, header::blob_length_offset, longest);
  store_field<std::uint64_t>(file, header::file_size_offset, file.size());
  rechecksum_header(file);
  // The reader finds the keys where they were.
  const reader patched = reader::from_memory(as_bytes(file));
  std::size_t i = 0;
  for (const auto& entry : entries) {
    if (i++ % 37 == 0) REQUIRE(patched.get(entry.first).has_value());
  }
  return file;
}

verify_report verify_measured(const std::string& file, detail::verify_costs& costs) {
  verify_options all;
  all.max_errors = 0;
  return detail::verify_bytes_measured(as_bytes(file), "test.bbt", all, costs);
}

// Verifies `file`, in which key 3 of leaf 2 was made lower than key 2, and
// requires that order problem on page 2; returns what verification spent.
detail::verify_costs require_key_3_below_key_2(const std::string& file) {
  detail::verify_costs costs;
  const verify_report report = verify_measured(file, costs);
  INFO(describe(report));
  REQUIRE(has_page_problem(report, 2, "key 3 ("));
  REQUIRE(has_page_problem(report, 2, "is not greater than key 2"));
  return costs;
}

// Every problem is one of the overlap's, on a page or in the blob region.
bool only_overlaps(const verify_report& report) {
  for (const verify_problem& problem : report.problems) {
    if (problem.message.find("overlaps an item before it") == std::string::npos &&
        problem.message.find("add up to more than") == std::string::npos) {
      return false;
    }
  }
  return !report.problems.empty();
}

bool has_problem_on_some_page(const verify_report& report, std::string_view text) {
  for (const verify_problem& problem : report.problems) {
    if (problem.region == verify_region::page && problem.page.value_or(0) != 0 &&
        problem.message.find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE("separators are remembered by place, not copied", "[verify][costs]") {
  // 20000-byte separators: copied, one per leaf boundary would take about
  // 20000 bytes per leaf, far more than the 512-byte leaf itself once the
  // remainders all point at one item.
  const model entries = c_run_model(20000, 300);
  const std::string built = build_bytes(c_run_shape, entries);
  const reader index = reader::from_memory(as_bytes(built));
  const std::uint64_t leaves = index.info().leaf_count;
  REQUIRE(leaves >= 20);
  REQUIRE(index.info().height >= 3);

  detail::verify_costs valid_costs;
  const verify_report valid = verify_measured(built, valid_costs);
  INFO(describe(valid));
  REQUIRE(valid.ok());
  REQUIRE(valid_costs.separator_bytes_held > 0);
  REQUIRE(valid_costs.separator_bytes_held <= 64 * leaves);

  const std::string file = point_remainders_at_one_item(built, entries);
  REQUIRE(file.size() < built.size() / 50);
  detail::verify_costs costs;
  const verify_report report = verify_measured(file, costs);
  INFO(describe(report));
  REQUIRE(only_overlaps(report));
  REQUIRE(has_problem_on_some_page(report, "add up to more than"));
  REQUIRE(costs.separator_bytes_held <= 64 * leaves);
  REQUIRE(costs.separator_bytes_held < file.size());
}

TEST_CASE("key remainders that all point at one blob item", "[verify][costs]") {
  // Every key's remainder, about 20000 bytes, is the same blob bytes.  A
  // comparison that read remainders would read them once per key, hundreds
  // of times the file; remainders whose checksums were not checked (those
  // after the overlap) are not read, and the order checks that the page
  // bytes decide are still made.
  const model entries = c_run_model(20000, 300);
  const std::string built = build_bytes(c_run_shape, entries);
  const std::string file = point_remainders_at_one_item(built, entries);
  const std::uint64_t bound = 4 * file.size();

  SECTION("the overlap is reported, and the comparisons read a bounded amount") {
    detail::verify_costs costs;
    const verify_report report = verify_measured(file, costs);
    INFO(describe(report));
    REQUIRE(only_overlaps(report));
    REQUIRE(has_problem_on_some_page(report, "add up to more than"));
    REQUIRE(costs.blob_bytes_compared <= bound);
    REQUIRE(costs.page_rest_bytes_compared <= bound);
  }
  SECTION("keys out of order by their inline keys are still found") {
    // Key 3 of leaf 2 gets inline key "cccccccb": below key 2 whatever the
    // remainders hold.
    std::string damaged = file;
    const reader index = reader::from_memory(as_bytes(file));
    const detail::page_view leaf = index.core().page(2, 0);
    REQUIRE(leaf.count > 4);
    const std::size_t page_size = page_size_of(file);
    damaged[2 * page_size + leaf.sections.inline_keys + 3 * 8 + 7] = 'b';
    rechecksum_page(damaged, 2);
    REQUIRE(require_key_3_below_key_2(damaged).blob_bytes_compared <= bound);
  }
}

TEST_CASE("remainders in the blob region are compared when the items do not overlap",
          "[verify][costs]") {
  // The same keys without the overlap: the order of keys that differ only
  // in their remainders is checked, reading them.
  const std::string built = build_bytes(c_run_shape, c_run_model(2000, 300));
  detail::verify_costs valid_costs;
  REQUIRE(verify_measured(built, valid_costs).ok());
  REQUIRE(valid_costs.blob_bytes_compared > 300 * 1000);

  // Byte 10 of the remainder of key 3 of leaf 2 becomes 'a', and the
  // item's checksum follows it: key 3 is then below key 2.
  std::string file = built;
  const reader index = reader::from_memory(as_bytes(built));
  const file_info& info = index.info();
  const detail::page_view leaf = index.core().page(2, 0);
  REQUIRE(leaf.count > 4);
  const std::size_t page_size = page_size_of(file);
  unsigned char* page = raw(file) + 2 * page_size;
  const unsigned char* slot = page + leaf.sections.key_data + 3 * format::slot_size;
  const std::uint32_t reference = format::load_le<std::uint32_t>(slot + 4);
  REQUIRE((reference & format::external_flag) != 0);
  unsigned char* record = page + (reference & ~format::external_flag);
  const std::uint64_t item = info.blob_offset + format::load_le<std::uint64_t>(record);
  const std::uint32_t length = format::load_le<std::uint32_t>(slot) - leaf.inline_width;
  file[item + 10] = 'a';
  format::store_le<std::uint32_t>(record + 8, format::crc32c(raw(file) + item, length));
  rechecksum_page(file, 2);
  require_key_3_below_key_2(file);
}
