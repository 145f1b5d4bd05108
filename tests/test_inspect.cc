// The page inspector behind bbtree-dump --stats, --pages and --page N: the
// numbers agree with the file, and damaged pages are shown, not fatal.
#include "verify_test_support.h"

#include <bbtree/detail/reader_core.h>
#include <bbtree/inspect.h>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

using namespace bbtree;
using namespace bbtree::test;

namespace {

std::string stats_of(const reader& index) {
  std::ostringstream out;
  write_stats(index, out);
  return out.str();
}

std::string pages_of(const reader& index) {
  std::ostringstream out;
  write_pages(index, out);
  return out.str();
}

std::string page_of(const reader& index, std::uint32_t page) {
  std::ostringstream out;
  write_page(index, page, out);
  return out.str();
}

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

std::size_t line_count(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("stats count pages, entries and lengths", "[inspect]") {
  const shape kinds{key_kind::bytes, 0, value_kind::bytes, 0, 512};
  model entries;
  for (int i = 0; i < 1000; ++i) {
    entries[fmt::format("key-{:04}", i)] =
        i % 50 == 0 ? std::string(200, 'x') : std::string(4, 'v');
  }
  const std::string file = build_bytes(kinds, entries, {{"m", "1"}});
  const reader index = reader::from_memory(as_bytes(file));
  const file_info& info = index.info();
  const std::string stats = stats_of(index);
  INFO(stats);
  REQUIRE(has_line(stats, "entries: 1000"));
  REQUIRE(has_line(stats, fmt::format("height: {}", info.height)));
  REQUIRE(has_line(stats, fmt::format("level.0.pages: {} (first page 1)", info.leaf_count)));
  REQUIRE(has_line(stats, "level.0.entries: 1000"));
  REQUIRE(has_line(stats, "key_length: min 8, mean 8.0, max 8"));
  REQUIRE(has_line(stats, "value_length.128-255: 20 (2.0%)"));
  REQUIRE(has_line(stats, "blob_values: 20 (4000 bytes)"));
  REQUIRE(has_line(stats, fmt::format("blob_bytes: {}", info.blob_length)));
  REQUIRE(stats.find("damaged") == std::string::npos);
}

TEST_CASE("stats count the keys that tie on their inline key", "[inspect]") {
  // One leaf with no prefix (its first and last keys differ in their first
  // byte), so each inline key is a key's first eight bytes: the three keys
  // that start "aaaaaaaa" tie, the two that start "bbbbbbbb" tie, and "c"
  // ties with nothing.
  const shape kinds{key_kind::bytes, 0, value_kind::bytes, 0, 1024};
  const model entries{{"aaaaaaaa1", "v"}, {"aaaaaaaa2", "v"}, {"aaaaaaaa3", "v"},
                      {"bbbbbbbb1", "v"}, {"bbbbbbbb2", "v"}, {"c", "v"}};
  const std::string file = build_bytes(kinds, entries, {});
  const reader index = reader::from_memory(as_bytes(file));
  REQUIRE(index.info().height == 1);
  const std::string stats = stats_of(index);
  INFO(stats);
  REQUIRE(has_line(stats, "prefix_length.0: 1 pages"));
  REQUIRE(has_line(stats, "level.0.inline_ties: 5 keys (83.3%), largest group 3"));

  // Keys that differ within their first eight bytes tie nowhere.
  model distinct;
  for (int i = 0; i < 300; ++i) distinct[fmt::format("{:08}", i * 7)] = "v";
  const std::string distinct_file = build_bytes(kinds, distinct, {});
  const std::string distinct_stats = stats_of(reader::from_memory(as_bytes(distinct_file)));
  INFO(distinct_stats);
  REQUIRE(has_line(distinct_stats, "level.0.inline_ties: 0 keys (0.0%), largest group 1"));
}

TEST_CASE("the page listing shows every page, and one page its entries", "[inspect]") {
  const shape kinds{key_kind::u64, 0, value_kind::u64, 0, 512};
  model entries;
  for (std::uint64_t i = 0; i < 3000; ++i)
    entries[std::string(u64_key(i * 5).view())] = std::string(u64_value(i).view());
  std::string file = build_bytes(kinds, entries);
  const std::uint32_t page_size = page_size_of(file);
  {
    const reader index = reader::from_memory(as_bytes(file));
    const std::string pages = pages_of(index);
    INFO(pages);
    REQUIRE(line_count(pages) == index.info().page_count + 1);  // a title line, then page 0 on
    REQUIRE(pages.find("damaged") == std::string::npos);

    const std::string leaf = page_of(index, 2);
    INFO(leaf);
    REQUIRE(has_line(leaf, "page: 2"));
    REQUIRE(has_line(leaf, fmt::format("offset: {}", 2 * page_size)));
    REQUIRE(has_line(leaf, "kind: 1 (leaf)"));
    const detail::page_view view = index.core().page(2, 0);
    REQUIRE(has_line(leaf, fmt::format("first_rank: {}", view.header_word)));
    // Entry 0 of leaf 2 is the entry of rank first_rank: key 5 * rank, value rank.
    REQUIRE(leaf.find(fmt::format("entry.0: inline 0x")) != std::string::npos);
    REQUIRE(leaf.find(fmt::format(", key {}, value {}\n", 5 * view.header_word,
                                  view.header_word)) != std::string::npos);

    const std::string root = page_of(index, index.info().root_page);
    INFO(root);
    REQUIRE(has_line(root, "kind: 2 (inner)"));
    REQUIRE(has_line(root, fmt::format("child.0: page {}",
                                       index.core().level_first_page(index.info().height - 2))));

    REQUIRE(page_of(index, 0).find("magic: 89 42 42 54 52 45 45 0a") != std::string::npos);
    try {
      (void)page_of(index, index.info().page_count);
      FAIL("a page past the end");
    } catch (const error& e) {
      REQUIRE(e.code() == errc::invalid_argument);
    }
  }
  SECTION("a damaged page is shown as damaged") {
    file[3 * page_size + format::page::inline_width_offset] = 3;
    const reader index = reader::from_memory(as_bytes(file), "damaged.bbt");
    const std::string pages = pages_of(index);
    REQUIRE(pages.find("       3 ") != std::string::npos);
    REQUIRE(pages.find("damaged: ") != std::string::npos);
    REQUIRE(has_line(page_of(index, 3), "inline_width: 3"));
    REQUIRE(page_of(index, 3).find("damaged: ") != std::string::npos);
    REQUIRE(stats_of(index).find("damaged_pages: 1") != std::string::npos);
    std::ostringstream out;
    const std::string problem = write_page(index, 3, out);
    REQUIRE(problem.starts_with(fmt::format("damaged.bbt: page 3 (offset {}): ", 3 * page_size)));
    REQUIRE(has_line(out.str(), "damaged: " + problem));
  }
  SECTION("a page whose checksum does not match is damaged, though it decodes") {
    // A flipped bit in the checksum field: every other field is sound.
    file[2 * page_size + format::page::checksum_offset] ^= 1;
    const reader index = reader::from_memory(as_bytes(file), "flipped.bbt");
    std::ostringstream out;
    const std::string problem = write_page(index, 2, out);
    const std::string text = out.str();
    INFO(text);
    REQUIRE(problem ==
            fmt::format("flipped.bbt: page 2 (offset {}): checksum mismatch", 2 * page_size));
    REQUIRE(has_line(text, "damaged: " + problem));
    REQUIRE(text.find("entry.0: inline 0x") != std::string::npos);  // still shown whole
    REQUIRE(write_page(index, 3, out).empty());
    REQUIRE(write_page(index, 0, out).empty());
  }
}
