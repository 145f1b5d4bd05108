// Checks that spec/FORMAT.md describes the bytes the builder writes.
//
// Every offset, size and constant below is a literal copied from
// spec/FORMAT.md (the section is named beside it), never a constant of
// format/bbtree/format/layout.h: the point is that the document and the code
// agree.  The files are built with bbtree::builder / sorting_builder and read
// back as raw bytes with std::ifstream; a small decoder written from the
// document alone walks every page.
#include <bbtree/builder.h>
#include <bbtree/format/crc32c.h>
#include <bbtree/key_codec.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;

// --- Raw access ------------------------------------------------------------

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// FORMAT.md section 1: every integer is little-endian unless stated otherwise.
std::uint64_t le(const std::string& b, std::uint64_t offset, unsigned size) {
  REQUIRE(offset + size <= b.size());
  std::uint64_t value = 0;
  for (unsigned i = size; i-- > 0;)
    value = (value << 8) | static_cast<unsigned char>(b[offset + i]);
  return value;
}
std::uint32_t u8(const std::string& b, std::uint64_t offset) {
  return static_cast<std::uint32_t>(le(b, offset, 1));
}
std::uint32_t u16(const std::string& b, std::uint64_t offset) {
  return static_cast<std::uint32_t>(le(b, offset, 2));
}
std::uint32_t u32(const std::string& b, std::uint64_t offset) {
  return static_cast<std::uint32_t>(le(b, offset, 4));
}
std::uint64_t u64(const std::string& b, std::uint64_t offset) { return le(b, offset, 8); }

std::uint32_t crc(const std::string& b, std::uint64_t begin, std::uint64_t end) {
  REQUIRE(begin <= end);
  REQUIRE(end <= b.size());
  return bbtree::format::crc32c(b.data() + begin, end - begin);
}

bool all_zero(const std::string& b, std::uint64_t begin, std::uint64_t end) {
  REQUIRE(begin <= end);
  REQUIRE(end <= b.size());
  return std::all_of(b.begin() + static_cast<std::ptrdiff_t>(begin),
                     b.begin() + static_cast<std::ptrdiff_t>(end), [](char c) { return c == 0; });
}

std::uint64_t align8(std::uint64_t x) { return (x + 7) & ~std::uint64_t{7}; }

std::size_t lcp(const std::string& a, const std::string& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

std::string be64(std::uint64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8)
    out[static_cast<std::size_t>(i)] = static_cast<char>(v & 0xFF);
  return out;
}

std::string le64(std::uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i, v >>= 8)
    out[static_cast<std::size_t>(i)] = static_cast<char>(v & 0xFF);
  return out;
}

std::string le32(std::uint32_t v) { return le64(v).substr(0, 4); }

// Builds a byte image from "offset: hex bytes" rows as printed in FORMAT.md
// section 17; everything not listed is zero.
std::string image(std::size_t size, const std::vector<std::pair<std::size_t, std::string>>& rows) {
  std::string out(size, '\0');
  for (const auto& [offset, hex] : rows) {
    std::size_t at = offset;
    for (std::size_t i = 0; i < hex.size();) {
      if (hex[i] == ' ') {
        ++i;
        continue;
      }
      REQUIRE(at < size);
      out[at++] = static_cast<char>(std::stoul(hex.substr(i, 2), nullptr, 16));
      i += 2;
    }
  }
  return out;
}

class temp_file {
 public:
  explicit temp_file(const std::string& name)
      : path_(fs::temp_directory_path() /
              ("bbtree-spec-" + std::to_string(::getpid()) + "-" + name + ".bbt")) {
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
  ~temp_file() {
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
  temp_file(const temp_file&) = delete;
  temp_file& operator=(const temp_file&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

bbtree::build_options options_for(bbtree::key_kind keys, bbtree::value_kind values,
                                  std::uint32_t page_size) {
  bbtree::build_options options;
  options.keys = keys;
  options.values = values;
  options.page_size = page_size;
  options.sync = false;
  options.overwrite = true;
  return options;
}

// --- The file header: FORMAT.md section 5 -----------------------------------

struct header_fields {
  std::uint32_t page_size = 0, key_kind = 0, value_kind = 0, key_size = 0, value_size = 0;
  std::uint64_t entry_count = 0;
  std::uint32_t height = 0, root_page = 0, leaf_count = 0, page_count = 0;
  std::uint64_t blob_offset = 0, blob_length = 0, metadata_offset = 0, metadata_length = 0;
  std::uint32_t metadata_checksum = 0, build_flags = 0, inline_limit = 0, prefix_cap = 0;
  std::uint64_t file_size = 0;
  std::uint32_t max_key_length = 0, max_value_length = 0;
  bool has_directory = false;
  std::uint64_t directory_offset = 0, directory_length = 0;
  std::uint32_t directory_checksum = 0, directory_head_size = 0, directory_prefix_length = 0;
  std::uint32_t level_first_page[32] = {};

  std::uint32_t level_pages(std::uint32_t level) const {
    return level + 1 < height ? level_first_page[level + 1] - level_first_page[level] : 1;
  }
};

// Reads every header field at its documented offset and checks every rule of
// sections 5 and 5.1 to 5.3 that does not depend on the file's content.
header_fields check_header(const std::string& file) {
  REQUIRE(file.size() >= 512);
  const std::string magic(
      "\x89"
      "BBTREE\n",
      8);
  CHECK(file.substr(0, 8) == magic);
  CHECK(u16(file, 8) == 1);     // major_version
  CHECK(u16(file, 10) == 2);    // minor_version
  CHECK(u32(file, 12) == 512);  // header_size
  const std::uint64_t required_features = u64(file, 16);
  CHECK(required_features <= 1);  // bit 0: the directory region (section 12.3)
  CHECK(u64(file, 24) == 0);      // optional_features

  header_fields h;
  h.page_size = u32(file, 32);
  h.key_kind = u8(file, 36);
  h.value_kind = u8(file, 37);
  h.key_size = u32(file, 40);
  h.value_size = u32(file, 44);
  h.entry_count = u64(file, 48);
  h.height = u32(file, 56);
  h.root_page = u32(file, 60);
  const std::uint32_t first_leaf_page = u32(file, 64);
  h.leaf_count = u32(file, 68);
  h.page_count = u32(file, 72);
  h.blob_offset = u64(file, 80);
  h.blob_length = u64(file, 88);
  h.metadata_offset = u64(file, 96);
  h.metadata_length = u64(file, 104);
  h.metadata_checksum = u32(file, 112);
  h.build_flags = u32(file, 116);
  h.inline_limit = u32(file, 120);
  h.prefix_cap = u32(file, 124);
  h.file_size = u64(file, 128);
  h.max_key_length = u32(file, 136);
  h.max_value_length = u32(file, 140);
  h.has_directory = (required_features & 1) != 0;
  h.directory_offset = u64(file, 144);
  h.directory_length = u64(file, 152);
  h.directory_checksum = u32(file, 160);
  h.directory_head_size = u32(file, 164);
  h.directory_prefix_length = u32(file, 168);
  for (std::uint32_t level = 0; level < 32; ++level)
    h.level_first_page[level] = u32(file, 256 + 4 * level);

  // Header checksum: CRC32C of [0, 508) stored at 508.
  CHECK(u32(file, 508) == crc(file, 0, 508));

  // Reserved bytes are zero, and so is the rest of page 0.
  CHECK(all_zero(file, 38, 40));
  CHECK(all_zero(file, 76, 80));
  // Bytes 144 to 171 hold the directory's fields when bit 0 is set.
  CHECK(all_zero(file, required_features & 1 ? 172 : 144, 256));
  CHECK(all_zero(file, 384, 508));

  // page_size: a power of two in 512..65536.
  REQUIRE(h.page_size >= 512);
  REQUIRE(h.page_size <= 65536);
  REQUIRE((h.page_size & (h.page_size - 1)) == 0);
  REQUIRE(file.size() >= h.page_size);
  CHECK(all_zero(file, 512, h.page_size));

  // Kinds and sizes (section 3).
  REQUIRE(h.key_kind >= 1);
  REQUIRE(h.key_kind <= 4);
  REQUIRE(h.value_kind <= 3);
  if (h.key_kind == 1 || h.key_kind == 2) CHECK(h.key_size == 8);
  if (h.key_kind == 3) CHECK((h.key_size >= 1 && h.key_size <= 4096));
  if (h.key_kind == 4) CHECK(h.key_size == 0);
  if (h.value_kind == 0 || h.value_kind == 3) CHECK(h.value_size == 0);
  if (h.value_kind == 1) CHECK(h.value_size == 8);
  if (h.value_kind == 2) CHECK((h.value_size >= 1 && h.value_size <= 4096));

  // Pages and levels (sections 2 and 5.1).
  CHECK(first_leaf_page == 1);
  REQUIRE(h.height >= 1);
  REQUIRE(h.height <= 32);
  REQUIRE(h.leaf_count >= 1);
  REQUIRE(h.page_count >= 2);
  CHECK(h.root_page == h.page_count - 1);
  CHECK(std::uint64_t{1} + h.leaf_count <= h.page_count);
  CHECK(h.level_first_page[0] == 1);
  if (h.height == 1) {
    CHECK(h.leaf_count == 1);
    CHECK(h.page_count == 2);
    CHECK(h.root_page == 1);
  } else {
    CHECK(h.level_first_page[1] == 1 + h.leaf_count);
  }
  for (std::uint32_t level = 1; level < h.height; ++level)
    REQUIRE(h.level_first_page[level] > h.level_first_page[level - 1]);
  CHECK(h.level_first_page[h.height - 1] == h.root_page);
  for (std::uint32_t level = h.height; level < 32; ++level) CHECK(h.level_first_page[level] == 0);

  // Regions (section 5.3).
  const std::uint64_t pages_end = std::uint64_t{h.page_count} * h.page_size;
  if (h.blob_length == 0) {
    CHECK(h.blob_offset == 0);
  } else {
    CHECK(h.blob_offset == pages_end);
  }
  const std::uint64_t blob_end = pages_end + h.blob_length;
  if (h.metadata_length == 0) {
    CHECK(h.metadata_offset == 0);
    CHECK(h.metadata_checksum == 0);
  } else {
    CHECK(h.metadata_offset == blob_end);
    CHECK(h.metadata_length >= 4);
    REQUIRE(h.metadata_offset + h.metadata_length <= file.size());
    CHECK(h.metadata_checksum ==
          crc(file, h.metadata_offset, h.metadata_offset + h.metadata_length));
  }
  const std::uint64_t regions_end = blob_end + h.metadata_length;
  if (h.has_directory) {
    // Section 12.3: after zero padding to a multiple of 64, ending the file,
    // with n = level_pages(1) - 1 entries of a head and an 8-byte locator,
    // then the prefix.
    REQUIRE(h.height >= 3);
    const std::uint64_t entries = h.level_pages(1) - 1;
    CHECK(entries >= 1);
    CHECK(h.directory_offset == (regions_end + 63) / 64 * 64);
    CHECK(all_zero(file, regions_end, h.directory_offset));
    CHECK(h.directory_head_size % 8 == 0);
    CHECK((h.directory_head_size >= 8 && h.directory_head_size <= 64));
    CHECK(h.directory_prefix_length <= 65536);
    CHECK(h.directory_length == entries * (h.directory_head_size + 8) + h.directory_prefix_length);
    REQUIRE(h.directory_offset + h.directory_length <= file.size());
    CHECK(h.directory_checksum ==
          crc(file, h.directory_offset, h.directory_offset + h.directory_length));
    CHECK(h.file_size == h.directory_offset + h.directory_length);
  } else {
    CHECK(h.file_size == regions_end);
  }
  CHECK(h.file_size == file.size());

  // build_flags: bits 3-31 reserved, duplicate policy 0..2.
  CHECK((h.build_flags >> 3) == 0);
  CHECK(((h.build_flags >> 1) & 3) != 3);

  // Builder policy (section 15.1).
  CHECK(h.inline_limit == h.page_size / 8);
  CHECK(h.prefix_cap == h.page_size / 8);
  CHECK(h.max_key_length <= 65536);
  return h;
}

// --- Pages: FORMAT.md sections 6 to 11 ---------------------------------------

struct page_info {
  std::uint32_t number = 0, kind = 0, level = 0, inline_width = 0, count = 0, prefix_length = 0;
  std::uint64_t first_rank = 0;
  std::uint32_t first_child = 0;
  std::uint32_t heap_start = 0, heap_end = 0;
  std::vector<std::string> keys;
  std::vector<std::string> values;
};

struct blob_item {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint32_t page = 0;   // the page whose heap holds the external record
  std::uint32_t entry = 0;  // the key's index in that page
  bool is_key = false;      // a key remainder (else a value)
};

// Section 9: follows a slot.  Also checks the heap order of section 9.1:
// every item or record starts where the previous one ended.
std::string read_item(const std::string& file, const header_fields& h, std::uint64_t base,
                      const page_info& page, std::uint64_t length, std::uint32_t reference,
                      std::uint64_t& heap_cursor, std::vector<blob_item>& blobs,
                      std::uint32_t entry, bool is_key) {
  if (length == 0) {
    CHECK(reference == 0);
    return {};
  }
  if (reference & 0x80000000u) {
    const std::uint64_t record = reference & 0x7FFFFFFFu;
    CHECK(record == heap_cursor);
    REQUIRE(record >= page.heap_start);
    REQUIRE(record + 16 <= page.heap_end);
    // Section 9: the record holds an offset from the start of the blob region.
    const std::uint64_t file_offset = h.blob_offset + u64(file, base + record);
    const std::uint32_t item_checksum = u32(file, base + record + 8);
    CHECK(u32(file, base + record + 12) == 0);
    REQUIRE(h.blob_length > 0);
    REQUIRE(file_offset >= h.blob_offset);
    REQUIRE(file_offset + length <= h.blob_offset + h.blob_length);
    CHECK(crc(file, file_offset, file_offset + length) == item_checksum);
    // Section 15.3: only items longer than inline_limit leave the page.
    CHECK(length > h.inline_limit);
    blobs.push_back({file_offset, length, page.number, entry, is_key});
    heap_cursor = record + 16;
    return file.substr(file_offset, length);
  }
  CHECK(reference == heap_cursor);
  REQUIRE(reference >= page.heap_start);
  REQUIRE(reference + length <= page.heap_end);
  CHECK(length <= h.inline_limit);
  heap_cursor = reference + length;
  return file.substr(base + reference, length);
}

page_info decode_page(const std::string& file, const header_fields& h, std::uint32_t number,
                      std::vector<blob_item>& blobs) {
  const std::uint64_t page_size = h.page_size;
  const std::uint64_t base = std::uint64_t{number} * page_size;
  REQUIRE(base + page_size <= file.size());
  INFO("page " << number);

  // Section 6: the page header.
  page_info page;
  CHECK(u32(file, base + 0) == crc(file, base + 4, base + page_size));
  page.number = u32(file, base + 4);
  CHECK(page.number == number);
  page.kind = u8(file, base + 8);
  page.level = u8(file, base + 9);
  page.inline_width = u8(file, base + 10);
  CHECK(u8(file, base + 11) == 0);
  page.count = u16(file, base + 12);
  page.prefix_length = u16(file, base + 14);
  REQUIRE((page.kind == 1 || page.kind == 2));
  if (page.kind == 1) {
    page.first_rank = u64(file, base + 16);
  } else {
    page.first_child = u32(file, base + 16);
    CHECK(u32(file, base + 20) == 0);
  }
  page.heap_end = u32(file, base + 24);
  CHECK(u32(file, base + 28) == 0);

  const std::uint64_t n = page.count;
  const std::uint64_t p = page.prefix_length;
  const std::uint64_t w = page.inline_width;
  REQUIRE((w == 2 || w == 4 || w == 8));
  const bool byte_keys = h.key_kind == 4;
  if (!byte_keys) REQUIRE(p <= h.key_size);
  if (n == 0) CHECK(p == 0);

  // Section 7: sections.
  const std::uint64_t suffix = byte_keys ? 0 : h.key_size - p;
  const std::uint64_t tail = suffix > w ? suffix - w : 0;
  const std::uint64_t inline_start = align8(32 + p);
  const std::uint64_t key_data = align8(inline_start + n * w);
  const std::uint64_t key_data_length = byte_keys ? n * 8 : n * tail;
  const std::uint64_t values = align8(key_data + key_data_length);
  std::uint64_t value_data_length = 0;
  if (page.kind == 1) {
    if (h.value_kind == 1) value_data_length = n * 8;
    if (h.value_kind == 2) value_data_length = n * h.value_size;
    if (h.value_kind == 3) value_data_length = n * 8;
  }
  const std::uint64_t heap = align8(values + value_data_length);
  REQUIRE(heap <= page.heap_end);
  REQUIRE(page.heap_end <= page_size);
  page.heap_start = static_cast<std::uint32_t>(heap);

  // Zero padding between sections and after heap_end.
  CHECK(all_zero(file, base + 32 + p, base + inline_start));
  CHECK(all_zero(file, base + inline_start + n * w, base + key_data));
  CHECK(all_zero(file, base + key_data + key_data_length, base + values));
  CHECK(all_zero(file, base + values + value_data_length, base + heap));
  CHECK(all_zero(file, base + page.heap_end, base + page_size));

  // Sections 8 to 10: keys and values, heap items in entry order.
  const std::string prefix = file.substr(base + 32, p);
  std::uint64_t heap_cursor = heap;
  std::uint64_t previous_inline = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::string inline_bytes = file.substr(base + inline_start + i * w, w);
    const std::uint64_t inline_key = [&] {
      std::uint64_t v = 0;
      for (char c : inline_bytes) v = (v << 8) | static_cast<unsigned char>(c);
      return v;
    }();
    if (i > 0) CHECK(inline_key >= previous_inline);  // section 8.2: non-decreasing
    previous_inline = inline_key;

    std::string key;
    if (byte_keys) {
      const std::uint64_t length = u32(file, base + key_data + 8 * i);
      const std::uint32_t reference = u32(file, base + key_data + 8 * i + 4);
      CHECK(p + length <= 65536);
      const std::uint64_t head = std::min(w, length);
      CHECK(all_zero(inline_bytes, head, w));
      const std::uint64_t remainder = length > w ? length - w : 0;
      key = prefix + inline_bytes.substr(0, head) +
            read_item(file, h, base, page, remainder, reference, heap_cursor, blobs,
                      static_cast<std::uint32_t>(i), true);
    } else {
      const std::uint64_t head = std::min(w, suffix);
      CHECK(all_zero(inline_bytes, head, w));
      key = prefix + inline_bytes.substr(0, head) + file.substr(base + key_data + i * tail, tail);
      CHECK(key.size() == h.key_size);
    }
    page.keys.push_back(key);

    if (page.kind == 1) {
      switch (h.value_kind) {
        case 0:
          page.values.emplace_back();
          break;
        case 1:
          page.values.push_back(file.substr(base + values + 8 * i, 8));
          break;
        case 2:
          page.values.push_back(file.substr(base + values + h.value_size * i, h.value_size));
          break;
        case 3: {
          const std::uint64_t length = u32(file, base + values + 8 * i);
          const std::uint32_t reference = u32(file, base + values + 8 * i + 4);
          page.values.push_back(read_item(file, h, base, page, length, reference, heap_cursor,
                                          blobs, static_cast<std::uint32_t>(i), false));
          break;
        }
      }
    }
  }
  CHECK(heap_cursor == page.heap_end);  // section 9.1: the heap holds exactly the items

  // Section 15.2: the builder's prefix and inline width.
  if (n > 0) {
    CHECK(p == std::min<std::uint64_t>(lcp(page.keys.front(), page.keys.back()), h.prefix_cap));
  }
  if (byte_keys) {
    CHECK(w == 8);
  } else {
    CHECK(w == (suffix <= 2 ? 2u : suffix <= 4 ? 4u : 8u));
  }
  return page;
}

struct decoded_file {
  header_fields h;
  std::map<std::uint32_t, page_info> pages;
  std::vector<std::pair<std::string, std::string>> entries;
  std::vector<blob_item> blobs;  // sorted by file offset
};

const std::string& first_key_under(const decoded_file& f, std::uint32_t number) {
  const page_info& page = f.pages.at(number);
  if (page.kind == 1) {
    REQUIRE(!page.keys.empty());
    return page.keys.front();
  }
  return first_key_under(f, f.h.level_first_page[page.level - 1] + page.first_child);
}

const std::string& last_key_under(const decoded_file& f, std::uint32_t number) {
  const page_info& page = f.pages.at(number);
  if (page.kind == 1) {
    REQUIRE(!page.keys.empty());
    return page.keys.back();
  }
  return last_key_under(f, f.h.level_first_page[page.level - 1] + page.first_child + page.count);
}

// Walks every page level by level and checks the structural rules of
// sections 5.1, 6, 10, 11, 12.1 and 15.4.
decoded_file decode_file(const std::string& file) {
  decoded_file f;
  f.h = check_header(file);
  const header_fields& h = f.h;
  std::vector<blob_item> blobs;

  for (std::uint32_t level = 0; level < h.height; ++level) {
    std::uint64_t next_rank = 0;
    std::uint64_t next_child = 0;
    const std::uint32_t first = h.level_first_page[level];
    for (std::uint32_t number = first; number < first + h.level_pages(level); ++number) {
      page_info page = decode_page(file, h, number, blobs);
      CHECK(page.level == level);
      CHECK(page.kind == (level == 0 ? 1u : 2u));
      for (std::size_t i = 1; i < page.keys.size(); ++i) CHECK(page.keys[i - 1] < page.keys[i]);
      if (level == 0) {
        CHECK(page.first_rank == next_rank);
        next_rank += page.count;
        if (h.entry_count > 0) CHECK(page.count >= 1);
        for (std::size_t i = 0; i < page.keys.size(); ++i)
          f.entries.emplace_back(page.keys[i], page.values[i]);
      } else {
        CHECK(page.first_child == next_child);
        next_child += std::uint64_t{page.count} + 1;
      }
      f.pages.emplace(number, std::move(page));
    }
    if (level == 0) {
      CHECK(next_rank == h.entry_count);
    } else {
      CHECK(next_child == h.level_pages(level - 1));
    }
  }
  CHECK(f.pages.size() + 1 == h.page_count);

  // Keys ascend across leaves.
  for (std::size_t i = 1; i < f.entries.size(); ++i)
    CHECK(f.entries[i - 1].first < f.entries[i].first);

  // Separators (sections 11 and 15.4).
  for (const auto& [number, page] : f.pages) {
    if (page.kind != 2) continue;
    for (std::uint32_t i = 0; i < page.count; ++i) {
      const std::uint32_t left = h.level_first_page[page.level - 1] + page.first_child + i;
      const std::string& a = last_key_under(f, left);
      const std::string& b = first_key_under(f, left + 1);
      const std::string expected = h.key_kind == 4 ? b.substr(0, lcp(a, b) + 1) : b;
      CHECK(page.keys[i] == expected);
    }
  }

  // Section 12.1: blob items tile the region, each referenced once.
  std::sort(blobs.begin(), blobs.end(),
            [](const blob_item& x, const blob_item& y) { return x.offset < y.offset; });
  std::uint64_t cursor = h.blob_offset;
  for (const blob_item& item : blobs) {
    CHECK(item.offset == cursor);
    cursor = item.offset + item.length;
  }
  CHECK(cursor == h.blob_offset + h.blob_length);
  f.blobs = blobs;

  // max_key_length and max_value_length: the longest key and value.
  std::uint64_t longest_key = 0;
  std::uint64_t longest_value = 0;
  for (const auto& [key, value] : f.entries) {
    longest_key = std::max<std::uint64_t>(longest_key, key.size());
    longest_value = std::max<std::uint64_t>(longest_value, value.size());
  }
  CHECK(h.max_key_length == longest_key);
  CHECK(h.max_value_length == longest_value);
  return f;
}

// Section 15.6: the order of blob items.  Replays the builder's events of
// section 15.5 over the decoded tree (long values when their entry is
// processed, long key remainders when their page is closed, pages closed and
// handed up as described) and checks that the blob offsets follow it.
void check_blob_order(const decoded_file& f) {
  const header_fields& h = f.h;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t>
      value_item;                                                 // (page, entry) -> offset
  std::map<std::uint32_t, std::vector<std::uint64_t>> key_items;  // page -> offsets, key order
  for (const blob_item& item : f.blobs) {
    if (item.is_key) {
      key_items[item.page].push_back(item.offset);
    } else {
      value_item[{item.page, item.entry}] = item.offset;
    }
  }
  // The parent of every page below the root, and the page's index among its children.
  std::map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> parent;
  for (const auto& [number, page] : f.pages) {
    if (page.kind != 2) continue;
    for (std::uint32_t i = 0; i <= page.count; ++i)
      parent[h.level_first_page[page.level - 1] + page.first_child + i] = {number, i};
  }
  std::vector<std::uint64_t> events;
  std::function<void(std::uint32_t, bool)> close = [&](std::uint32_t number, bool hand_up) {
    for (std::uint64_t offset : key_items[number]) events.push_back(offset);
    if (!hand_up) return;
    // Handing page `number` up closes the parent's predecessor when the page
    // is child 0 of a parent that is not the first page of its level.
    const auto [up, index] = parent.at(number);
    if (index == 0 && up != h.level_first_page[f.pages.at(up).level]) close(up - 1, true);
  };
  const std::uint32_t leaves = h.level_pages(0);
  for (std::uint32_t leaf = 1; leaf <= leaves; ++leaf) {
    for (std::uint32_t i = 0; i < f.pages.at(leaf).count; ++i) {
      if (auto it = value_item.find({leaf, i}); it != value_item.end())
        events.push_back(it->second);
      if (i == 0 && leaf > 1) close(leaf - 1, true);
    }
  }
  close(leaves, leaves > 1);
  for (std::uint32_t level = 1; level < h.height; ++level) {
    const std::uint32_t last = h.level_first_page[level] + h.level_pages(level) - 1;
    close(last, last != h.level_first_page[level]);
  }
  REQUIRE(events.size() == f.blobs.size());
  CHECK(std::is_sorted(events.begin(), events.end()));
}

// The root page's header, read directly at the offsets of section 6.
void check_root_page(const std::string& file, const header_fields& h) {
  const std::uint64_t base = std::uint64_t{h.root_page} * h.page_size;
  REQUIRE(base + h.page_size <= file.size());
  CHECK(u32(file, base + 0) == crc(file, base + 4, base + h.page_size));
  CHECK(u32(file, base + 4) == h.root_page);
  CHECK(u8(file, base + 9) == h.height - 1);
  const std::uint32_t width = u8(file, base + 10);
  CHECK((width == 2 || width == 4 || width == 8));
  CHECK(u8(file, base + 11) == 0);
  const std::uint32_t heap_end = u32(file, base + 24);
  CHECK(heap_end >= 32);
  CHECK(heap_end <= h.page_size);
  CHECK(u32(file, base + 28) == 0);
  if (h.height == 1) {
    CHECK(u8(file, base + 8) == 1);                // leaf
    CHECK(u64(file, base + 16) == 0);              // first_rank of the only leaf
    CHECK(u16(file, base + 12) == h.entry_count);  // count
  } else {
    CHECK(u8(file, base + 8) == 2);    // inner
    CHECK(u32(file, base + 16) == 0);  // first_child: the root's children are the whole level
    CHECK(u32(file, base + 20) == 0);
    // count + 1 children = every page of the level below.
    CHECK(u16(file, base + 12) + 1u == h.level_pages(h.height - 2));
  }
}

std::uint32_t smallest_width(std::uint64_t suffix) { return suffix <= 2 ? 2 : suffix <= 4 ? 4 : 8; }

// Section 15.2 and 7 for u64 keys (no heap): whether a page with these keys
// fits.  value_bytes is 8 for a u64 leaf, 0 for an inner page.
bool u64_page_fits(const std::vector<std::string>& keys, std::size_t first, std::size_t last,
                   std::uint64_t value_bytes, std::uint32_t page_size) {
  const std::uint64_t n = last - first + 1;
  const std::uint64_t p = std::min<std::uint64_t>(lcp(keys[first], keys[last]), page_size / 8);
  const std::uint64_t w = smallest_width(8 - p);
  const std::uint64_t t = 8 - p > w ? 8 - p - w : 0;
  const std::uint64_t inline_start = align8(32 + p);
  const std::uint64_t key_data = align8(inline_start + n * w);
  const std::uint64_t values = align8(key_data + n * t);
  return align8(values + n * value_bytes) <= page_size;
}

// Section 15.5 for one level of u64 keys: the number of keys in each page,
// and the keys (separators) passed up to the next level.
std::vector<std::size_t> fill_u64_level(const std::vector<std::string>& keys,
                                        std::uint64_t value_bytes, std::uint32_t page_size,
                                        bool leaves, std::vector<std::string>& passed_up) {
  std::vector<std::size_t> counts;
  std::size_t open_first = 0;
  std::size_t open_count = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (open_count == 0 || u64_page_fits(keys, open_first, i, value_bytes, page_size)) {
      if (open_count == 0) open_first = i;
      ++open_count;
      continue;
    }
    counts.push_back(open_count);
    if (leaves) {
      passed_up.push_back(keys[i]);  // the new leaf's first key separates it
      open_first = i;
      open_count = 1;
    } else {
      passed_up.push_back(keys[i]);  // the separator that did not fit goes up
      open_count = 0;
    }
  }
  counts.push_back(open_count);
  return counts;
}

}  // namespace

// ---------------------------------------------------------------------------

TEST_CASE("spec 17.1: the worked u64 -> u64 example is byte-exact", "[spec]") {
  temp_file file("example-u64");
  {
    bbtree::builder builder(file.path(),
                            options_for(bbtree::key_kind::u64, bbtree::value_kind::u64, 512));
    builder.add(bbtree::u64_key(1700000000), bbtree::u64_value(100));
    builder.add(bbtree::u64_key(1700000100), bbtree::u64_value(200));
    builder.add(bbtree::u64_key(1700003600), bbtree::u64_value(300));
    builder.finish();
  }
  const std::string bytes = read_all(file.path());
  REQUIRE(bytes.size() == 1024);

  const std::string header =
      image(512, {
                     {0x000, "89 42 42 54 52 45 45 0a 01 00 02 00 00 02 00 00"},
                     {0x020, "00 02 00 00 01 01 00 00 08 00 00 00 08 00 00 00"},
                     {0x030, "03 00 00 00 00 00 00 00 01 00 00 00 01 00 00 00"},
                     {0x040, "01 00 00 00 01 00 00 00 02 00 00 00 00 00 00 00"},
                     {0x070, "00 00 00 00 00 00 00 00 40 00 00 00 40 00 00 00"},
                     {0x080, "00 04 00 00 00 00 00 00 08 00 00 00 08 00 00 00"},
                     {0x100, "01 00 00 00"},
                     {0x1f0, "00 00 00 00 00 00 00 00 00 00 00 00 35 80 65 80"},
                 });
  const std::string leaf =
      image(512, {
                     {0x000, "97 94 65 ef 01 00 00 00 01 00 02 00 03 00 06 00"},
                     {0x010, "00 00 00 00 00 00 00 00 48 00 00 00 00 00 00 00"},
                     {0x020, "00 00 00 00 65 53 00 00 f1 00 f1 64 ff 10 00 00"},
                     {0x030, "64 00 00 00 00 00 00 00 c8 00 00 00 00 00 00 00"},
                     {0x040, "2c 01 00 00 00 00 00 00"},
                 });
  // The example's own checksums are consistent with section 4.
  CHECK(bbtree::format::crc32c(header.data(), 508) == 0x80658035u);
  CHECK(bbtree::format::crc32c(leaf.data() + 4, 508) == 0xEF659497u);

  CHECK(bytes.substr(0, 512) == header);
  CHECK(bytes.substr(512, 512) == leaf);

  const decoded_file f = decode_file(bytes);
  REQUIRE(f.entries.size() == 3);
  CHECK(f.entries[0].first == be64(1700000000));
  CHECK(f.entries[2].second == le64(300));
}

TEST_CASE("spec 17.2: the worked byte-string leaf is byte-exact", "[spec]") {
  temp_file file("example-bytes");
  {
    bbtree::builder builder(file.path(),
                            options_for(bbtree::key_kind::bytes, bbtree::value_kind::bytes, 512));
    builder.add("user:alexandra", "red");
    builder.add("user:bob", "");
    builder.add("user:christopher", std::string(100, 'z'));
    builder.finish();
  }
  const std::string bytes = read_all(file.path());
  REQUIRE(bytes.size() == 1124);

  const std::string leaf =
      image(512, {
                     {0x000, "83 30 90 b1 01 00 00 00 01 00 08 00 03 00 05 00"},
                     {0x010, "00 00 00 00 00 00 00 00 87 00 00 00 00 00 00 00"},
                     {0x020, "75 73 65 72 3a 00 00 00 61 6c 65 78 61 6e 64 72"},
                     {0x030, "62 6f 62 00 00 00 00 00 63 68 72 69 73 74 6f 70"},
                     {0x040, "09 00 00 00 70 00 00 00 03 00 00 00 00 00 00 00"},
                     {0x050, "0b 00 00 00 74 00 00 00 03 00 00 00 71 00 00 00"},
                     {0x060, "00 00 00 00 00 00 00 00 64 00 00 00 77 00 00 80"},
                     {0x070, "61 72 65 64 68 65 72 00 00 00 00 00 00 00 00 1c"},
                     {0x080, "1c 16 15 00 00 00 00 00"},
                 });
  CHECK(bytes.substr(512, 512) == leaf);
  CHECK(bytes.substr(1024) == std::string(100, 'z'));
  CHECK(bbtree::format::crc32c(bytes.data() + 1024, 100) == 0x15161C1Cu);

  const header_fields h = check_header(bytes);
  CHECK(h.key_kind == 4);
  CHECK(h.value_kind == 3);
  CHECK(h.blob_offset == 1024);
  CHECK(h.blob_length == 100);
  CHECK(h.max_key_length == 16);
  CHECK(h.max_value_length == 100);
  decode_file(bytes);
}

namespace {

struct upper_separator {
  std::uint32_t page = 0, index = 0;
  std::string key;
};

// inorder(page) of section 12.3: the separators of levels 2 and above in key
// order, each after the subtree on its left.
void inorder(const decoded_file& f, std::uint32_t number, std::vector<upper_separator>& out) {
  const page_info& page = f.pages.at(number);
  if (page.level <= 1) return;
  const std::uint32_t first_child = f.h.level_first_page[page.level - 1] + page.first_child;
  for (std::uint32_t i = 0; i <= page.count; ++i) {
    inorder(f, first_child + i, out);
    if (i < page.count) out.push_back({number, i, page.keys[i]});
  }
}

// The count c of section 12.3, computed as the spec says a reader may:
// from the prefix, the heads, and full separators for the ties only.
std::uint64_t directory_count(const std::string& file, const header_fields& h,
                              const std::vector<upper_separator>& separators,
                              const std::string& q) {
  const std::uint64_t n = h.level_pages(1) - 1;
  const std::uint64_t hs = h.directory_head_size;
  const std::uint64_t p = h.directory_prefix_length;
  const std::string prefix = file.substr(h.directory_offset + n * (hs + 8), p);
  const std::size_t m = std::min<std::size_t>(p, q.size());
  const int order = q.compare(0, m, prefix, 0, m);
  if (order < 0 || (order == 0 && q.size() < p)) return 0;
  if (order > 0) return n;
  std::string probe_head = q.substr(p, hs);
  probe_head.resize(hs, '\0');
  std::uint64_t below = 0, ties_at_most = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::string head = file.substr(h.directory_offset + i * hs, hs);
    if (head < probe_head) {
      ++below;
    } else if (head == probe_head) {
      const std::uint64_t locator = h.directory_offset + n * hs + 8 * i;
      const upper_separator& named = separators.at(i);
      REQUIRE(u32(file, locator) == named.page);
      REQUIRE(u16(file, locator + 4) == named.index);
      if (named.key <= q) ++ties_at_most;
    }
  }
  return below + ties_at_most;
}

// Every rule of section 12.3 and the builder policy of 15.7 on a decoded
// file, and the count against a descent's answer for each probe.  Keys of
// at most eight bytes (`word_keys`) get heads of 8 bytes, which never tie;
// others heads of 32, which the callers' keys make tie.
void check_directory(const std::string& file, const decoded_file& f,
                     const std::vector<std::string>& probes, bool word_keys) {
  const header_fields& h = f.h;
  REQUIRE(h.has_directory);
  const std::uint64_t n = h.level_pages(1) - 1;
  const std::uint64_t hs = h.directory_head_size;
  const std::uint64_t p = h.directory_prefix_length;
  CHECK(hs == (word_keys ? 8 : 32));  // section 15.7
  std::vector<upper_separator> separators;
  inorder(f, h.root_page, separators);
  REQUIRE(separators.size() == n);
  const std::string prefix = file.substr(h.directory_offset + n * (hs + 8), p);
  CHECK(p == lcp(separators.front().key, separators.back().key));  // section 15.7
  for (std::uint64_t i = 0; i < n; ++i) {
    const upper_separator& separator = separators[i];
    if (i > 0) CHECK(separators[i - 1].key < separator.key);
    // Entry i lies between level-1 pages i and i + 1.
    const std::uint32_t left = h.level_first_page[1] + static_cast<std::uint32_t>(i);
    CHECK(last_key_under(f, left) < separator.key);
    CHECK(separator.key <= first_key_under(f, left + 1));
    const std::uint64_t locator = h.directory_offset + n * hs + 8 * i;
    CHECK(u32(file, locator) == separator.page);
    CHECK(u16(file, locator + 4) == separator.index);
    CHECK(u16(file, locator + 6) == 0);
    REQUIRE(separator.key.compare(0, p, prefix) == 0);
    std::string head = separator.key.substr(p, hs);
    head.resize(hs, '\0');
    CHECK(file.substr(h.directory_offset + i * hs, hs) == head);
  }
  std::uint64_t tied_heads = 0;
  for (std::uint64_t i = 1; i < n; ++i) {
    tied_heads += file.compare(h.directory_offset + i * hs, hs, file,
                               h.directory_offset + (i - 1) * hs, hs) == 0;
  }
  if (word_keys) {
    CHECK(tied_heads == 0);  // a head holds all of a key after the prefix
  } else {
    CHECK(tied_heads > 0);  // the callers' keys make some
  }
  // The count gives the level-1 page whose keys the probe falls among.
  for (const std::string& q : probes) {
    const std::uint64_t c = directory_count(file, h, separators, q);
    const auto at_most = std::count_if(separators.begin(), separators.end(),
                                       [&q](const upper_separator& s) { return s.key <= q; });
    CHECK(c == static_cast<std::uint64_t>(at_most));
  }
}

}  // namespace

TEST_CASE("spec 5 and 6: header and root page of a u64 -> u64 file", "[spec]") {
  constexpr std::uint32_t page_size = 512;
  constexpr std::uint64_t entries = 20000;
  temp_file file("u64");
  std::vector<std::string> keys;
  {
    bbtree::builder builder(file.path(),
                            options_for(bbtree::key_kind::u64, bbtree::value_kind::u64, page_size));
    for (std::uint64_t i = 0; i < entries; ++i) {
      const std::uint64_t key = i * 7919 + (i % 3);  // ascending, gaps of varying size
      keys.push_back(be64(key));
      builder.add(bbtree::u64_key(key), bbtree::u64_value(i * 3));
    }
    const bbtree::build_summary summary = builder.finish();
    CHECK(summary.entries == entries);
  }
  const std::string bytes = read_all(file.path());
  const header_fields h = check_header(bytes);

  CHECK(u32(bytes, 32) == page_size);
  CHECK(u8(bytes, 36) == 1);         // key_kind u64
  CHECK(u8(bytes, 37) == 1);         // value_kind u64
  CHECK(u32(bytes, 40) == 8);        // key_size
  CHECK(u32(bytes, 44) == 8);        // value_size
  CHECK(u64(bytes, 48) == entries);  // entry_count
  CHECK(u32(bytes, 116) == 0);       // build_flags: sorted input, duplicates are errors
  CHECK(u32(bytes, 120) == 64);      // inline_limit = page_size / 8
  CHECK(u32(bytes, 124) == 64);      // prefix_cap = page_size / 8
  CHECK(u32(bytes, 136) == 8);       // max_key_length
  CHECK(u32(bytes, 140) == 8);       // max_value_length
  // No blob region and no metadata region.
  CHECK(u64(bytes, 80) == 0);
  CHECK(u64(bytes, 88) == 0);
  CHECK(u64(bytes, 96) == 0);
  CHECK(u64(bytes, 104) == 0);
  CHECK(u32(bytes, 112) == 0);
  REQUIRE(h.height >= 3);  // 20000 entries in 512-byte pages need inner levels
  // Section 15.7: above level 1, a directory of 8-byte heads after the pages.
  CHECK(u64(bytes, 16) == 1);
  CHECK(u64(bytes, 144) == std::uint64_t{h.page_count} * page_size);
  CHECK(u32(bytes, 164) == 8);
  CHECK(u64(bytes, 128) == u64(bytes, 144) + u64(bytes, 152));

  check_root_page(bytes, h);

  const decoded_file f = decode_file(bytes);
  REQUIRE(f.entries.size() == entries);
  for (std::uint64_t i = 0; i < entries; ++i) {
    CHECK(f.entries[i].first == keys[i]);
    CHECK(f.entries[i].second == le64(i * 3));
  }
  std::vector<std::string> probes = {be64(0), be64(~std::uint64_t{0})};
  for (std::uint64_t i = 0; i < entries; i += 97) {
    const std::uint64_t key = i * 7919 + (i % 3);
    probes.insert(probes.end(), {be64(key - 1), be64(key), be64(key + 1)});
  }
  check_directory(bytes, f, probes, true);

  SECTION("section 15.5: the tree shape follows the greedy fill") {
    std::vector<std::vector<std::size_t>> expected_levels;
    std::vector<std::string> level_keys = keys;
    bool leaves = true;
    for (;;) {
      std::vector<std::string> passed_up;
      expected_levels.push_back(
          fill_u64_level(level_keys, leaves ? 8 : 0, page_size, leaves, passed_up));
      if (expected_levels.back().size() == 1) break;
      level_keys = std::move(passed_up);
      leaves = false;
    }
    REQUIRE(expected_levels.size() == h.height);
    for (std::uint32_t level = 0; level < h.height; ++level) {
      const std::vector<std::size_t>& counts = expected_levels[level];
      REQUIRE(counts.size() == h.level_pages(level));
      for (std::size_t j = 0; j < counts.size(); ++j) {
        INFO("level " << level << " page " << j);
        CHECK(f.pages.at(h.level_first_page[level] + static_cast<std::uint32_t>(j)).count ==
              counts[j]);
      }
    }
  }
}

TEST_CASE("spec 5, 9 and 12: a bytes -> bytes file with blobs and metadata", "[spec]") {
  constexpr std::uint32_t page_size = 4096;
  temp_file file("bytes");

  // Entries given in a shuffled order to the sorting builder; one key is
  // given three times and keep_last keeps the value added last.
  std::map<std::string, std::string> expected;
  std::vector<std::pair<std::string, std::string>> input;
  auto add = [&](const std::string& key, const std::string& value) {
    input.emplace_back(key, value);
    expected[key] = value;
  };
  add("", "the empty key");
  add("a", "");
  add(std::string("a\0", 2), "a then NUL");  // ties with "a" on the inline key
  add("ab", "x");
  for (int i = 0; i < 400; ++i) {
    const std::string number = std::to_string(100000 + i);
    add("user/" + number + "/profile/settings", std::string(static_cast<std::size_t>(i % 40), 'v'));
    add("user/" + number + "/profile", i % 97 == 0 ? std::string(1000 + i, 'L') : "short");
  }
  add(std::string(1000, 'k'), "long key");  // its remainder goes to the blob region
  add("zz", std::string(5000, 'Z'));
  std::mt19937 random(12345);
  std::shuffle(input.begin(), input.end(), random);
  input.emplace_back("user/100007/profile", "kept: the last of two equal keys");
  expected["user/100007/profile"] = "kept: the last of two equal keys";
  input.insert(input.begin(), std::pair<std::string, std::string>("user/100007/profile",
                                                                  "dropped: an earlier equal key"));

  bbtree::build_options options =
      options_for(bbtree::key_kind::bytes, bbtree::value_kind::bytes, page_size);
  options.duplicates = bbtree::duplicate_policy::keep_last;
  options.metadata = {{"created-by", "test_spec_header"}, {"schema", "v1"}};
  {
    bbtree::sorting_builder builder(file.path(), options);
    for (const auto& [key, value] : input) builder.add(key, value);
    const bbtree::build_summary summary = builder.finish();
    CHECK(summary.entries == expected.size());
  }
  const std::string bytes = read_all(file.path());
  const header_fields h = check_header(bytes);

  CHECK(u32(bytes, 32) == page_size);
  CHECK(u8(bytes, 36) == 4);                   // key_kind bytes
  CHECK(u8(bytes, 37) == 3);                   // value_kind bytes
  CHECK(u32(bytes, 40) == 0);                  // key_size
  CHECK(u32(bytes, 44) == 0);                  // value_size
  CHECK(u64(bytes, 48) == expected.size());    // entry_count
  CHECK(u32(bytes, 116) == (1u | (2u << 1)));  // build_flags: sorted by the builder, keep last
  CHECK(u32(bytes, 120) == 512);               // inline_limit
  CHECK(u32(bytes, 124) == 512);               // prefix_cap
  CHECK(u32(bytes, 136) == 1000);              // max_key_length
  CHECK(u32(bytes, 140) == 5000);              // max_value_length

  // Blob region right after the last page; metadata right after the blobs.
  const std::uint64_t pages_end = std::uint64_t{h.page_count} * page_size;
  REQUIRE(u64(bytes, 88) > 0);
  CHECK(u64(bytes, 80) == pages_end);
  CHECK(u64(bytes, 96) == pages_end + u64(bytes, 88));

  // Section 12.2: the metadata region, byte for byte.
  const std::string metadata = le32(2) + le32(10) + "created-by" + le32(16) + "test_spec_header" +
                               le32(6) + "schema" + le32(2) + "v1";
  CHECK(u64(bytes, 104) == metadata.size());
  CHECK(bytes.substr(u64(bytes, 96)) == metadata);
  CHECK(u32(bytes, 112) == bbtree::format::crc32c(metadata.data(), metadata.size()));
  CHECK(u64(bytes, 128) == bytes.size());

  check_root_page(bytes, h);

  const decoded_file f = decode_file(bytes);
  REQUIRE(f.entries.size() == expected.size());
  std::size_t i = 0;
  for (const auto& [key, value] : expected) {
    CHECK(f.entries[i].first == key);
    CHECK(f.entries[i].second == value);
    ++i;
  }
  check_blob_order(f);
  // Long items are external (section 15.3): the 1000-byte key's remainder,
  // the 5000-byte value, the 1000+-byte values.
  std::uint64_t long_values = 0;
  for (const auto& [key, value] : expected)
    if (value.size() > 512) long_values += value.size();
  CHECK(h.blob_length > long_values);  // plus the long key's remainder
}

TEST_CASE("spec 2: an empty index has one empty leaf", "[spec]") {
  temp_file file("empty");
  {
    bbtree::builder builder(file.path(),
                            options_for(bbtree::key_kind::u64, bbtree::value_kind::none, 4096));
    builder.finish();
  }
  const std::string bytes = read_all(file.path());
  REQUIRE(bytes.size() == 2 * 4096);
  const header_fields h = check_header(bytes);
  CHECK(u8(bytes, 36) == 1);   // key_kind u64
  CHECK(u8(bytes, 37) == 0);   // value_kind none
  CHECK(u32(bytes, 44) == 0);  // value_size
  CHECK(u64(bytes, 48) == 0);  // entry_count
  CHECK(u32(bytes, 56) == 1);  // height
  CHECK(u32(bytes, 60) == 1);  // root_page
  CHECK(u32(bytes, 68) == 1);  // leaf_count
  CHECK(u32(bytes, 72) == 2);  // page_count
  CHECK(u64(bytes, 128) == 8192);
  CHECK(u32(bytes, 136) == 0);  // max_key_length
  CHECK(u32(bytes, 140) == 0);  // max_value_length
  CHECK(u32(bytes, 256) == 1);  // level_first_page[0]

  check_root_page(bytes, h);
  const std::uint64_t leaf = 4096;
  CHECK(u8(bytes, leaf + 8) == 1);     // kind leaf
  CHECK(u8(bytes, leaf + 10) == 8);    // inline_width: suffix 8 bytes (section 15.2)
  CHECK(u16(bytes, leaf + 12) == 0);   // count
  CHECK(u16(bytes, leaf + 14) == 0);   // prefix_length
  CHECK(u64(bytes, leaf + 16) == 0);   // first_rank
  CHECK(u32(bytes, leaf + 24) == 32);  // heap_end: every section is empty
  CHECK(all_zero(bytes, leaf + 32, leaf + 4096));
  decode_file(bytes);
}

// --- The directory region: FORMAT.md sections 12.3 and 15.7 ------------------

TEST_CASE("spec 12.3 and 15.7: the directory region", "[spec]") {
  temp_file file("directory");
  // Keys of one site, so that every separator shares a long prefix, some
  // differing only past 32 bytes after it, so that heads tie.
  const std::string site = "https://www.example.com/archive/";
  std::vector<std::string> keys;
  for (int i = 0; i < 3000; ++i) {
    const std::string number = std::to_string(1000000 + i * 7);
    keys.push_back(site + number + "/index.html");
    keys.push_back(site + "deep/" + std::string(60, 'y') + number);
  }
  std::sort(keys.begin(), keys.end());
  {
    bbtree::builder builder(file.path(),
                            options_for(bbtree::key_kind::bytes, bbtree::value_kind::u64, 512));
    std::uint64_t value = 0;
    for (const std::string& key : keys) builder.add(key, bbtree::u64_value(value++));
    builder.finish();
  }
  const std::string bytes = read_all(file.path());
  const decoded_file f = decode_file(bytes);
  REQUIRE(f.h.height >= 3);
  CHECK(u16(bytes, 10) == 2);
  CHECK(u64(bytes, 16) == 1);
  CHECK(f.h.directory_prefix_length >= site.size());
  std::vector<std::string> probes = {"", "a", "https://", site, "zzz", site + "~"};
  for (std::size_t i = 0; i < keys.size(); i += 37) {
    probes.push_back(keys[i]);
    probes.push_back(keys[i] + '\0');
    probes.push_back(keys[i].substr(0, keys[i].size() - 1));
  }
  check_directory(bytes, f, probes, false);
}
