// The structure-aware mutator of fuzz_mutated_file and the checksum fixer.
//
// A byte-level mutator rarely gets past a checksum: a change anywhere in a
// page is caught by the page's CRC32C, and a change to the header by the
// header's, before any of the checks behind them run.  This mutator knows
// where pages, their headers, sections and slots are, changes bytes there,
// and then usually recomputes every checksum, so that the verifier and the
// reader meet damage that only their structural checks can find.
#include "fuzz_support.h"

#include <bbtree/format/crc32c.h>
#include <bbtree/format/layout.h>

#include <algorithm>
#include <cstring>

namespace bbtree::fuzz {

namespace {

namespace header = format::header;
namespace page = format::page;
using format::load_le;
using format::store_le;

// What the header says, taken as it is: nothing here is trusted.
struct layout {
  std::uint32_t page_size = 0;
  std::uint32_t pages = 0;  // pages present in the buffer, page 0 included
  std::uint8_t keys = 0;
  std::uint8_t values = 0;
  std::uint32_t key_size = 0;
  std::uint32_t value_size = 0;
  std::uint64_t blob_offset = 0;
  std::uint64_t blob_length = 0;
  std::uint64_t metadata_offset = 0;
  std::uint64_t metadata_length = 0;
  std::uint64_t directory_offset = 0;
  std::uint64_t directory_length = 0;
  std::uint32_t directory_head_size = 0;
  std::uint32_t directory_prefix_length = 0;
};

bool read_layout(const std::uint8_t* data, std::size_t size, layout& out) {
  if (size < format::header_size) return false;
  out.page_size = load_le<std::uint32_t>(data + header::page_size_offset);
  if (!format::is_valid_page_size(out.page_size)) return false;
  const std::uint64_t declared = load_le<std::uint32_t>(data + header::page_count_offset);
  out.pages = static_cast<std::uint32_t>(std::min<std::uint64_t>(declared, size / out.page_size));
  out.keys = data[header::key_kind_offset];
  out.values = data[header::value_kind_offset];
  out.key_size = load_le<std::uint32_t>(data + header::key_size_offset);
  out.value_size = load_le<std::uint32_t>(data + header::value_size_offset);
  out.blob_offset = load_le<std::uint64_t>(data + header::blob_offset_offset);
  out.blob_length = load_le<std::uint64_t>(data + header::blob_length_offset);
  out.metadata_offset = load_le<std::uint64_t>(data + header::metadata_offset_offset);
  out.metadata_length = load_le<std::uint64_t>(data + header::metadata_length_offset);
  out.directory_offset = load_le<std::uint64_t>(data + header::directory_offset_offset);
  out.directory_length = load_le<std::uint64_t>(data + header::directory_length_offset);
  out.directory_head_size = load_le<std::uint32_t>(data + header::directory_head_size_offset);
  out.directory_prefix_length =
      load_le<std::uint32_t>(data + header::directory_prefix_length_offset);
  return true;
}

bool region_in(std::uint64_t offset, std::uint64_t length, std::size_t size) {
  return offset <= size && length <= size - offset;
}

// Recomputes the item checksum of every external record of page `number`
// that points into the blob region.
void fix_item_checksums(std::uint8_t* data, std::size_t size, const layout& file,
                        std::uint32_t number) {
  if (!format::is_valid_key_kind(file.keys) || !format::is_valid_value_kind(file.values)) return;
  const auto keys = static_cast<format::key_kind>(file.keys);
  const auto values = static_cast<format::value_kind>(file.values);
  if (keys != format::key_kind::bytes && values != format::value_kind::bytes) return;
  if (file.blob_length == 0 || !region_in(file.blob_offset, file.blob_length, size)) return;
  // compute_sections trusts its sizes not to overflow: only valid ones.
  if (file.key_size > format::max_fixed_size || file.value_size > format::max_fixed_size) return;
  std::uint8_t* bytes = data + std::size_t{number} * file.page_size;
  const std::uint8_t kind = bytes[page::kind_offset];
  if (kind != 1 && kind != 2) return;
  const std::uint32_t width = bytes[page::inline_width_offset];
  if (!format::is_valid_inline_width(width)) return;
  const std::uint32_t count = load_le<std::uint16_t>(bytes + page::count_offset);
  const std::uint32_t prefix_length = load_le<std::uint16_t>(bytes + page::prefix_length_offset);
  if (prefix_length > file.page_size) return;
  const auto sections =
      format::compute_sections(static_cast<format::page_kind>(kind), count, prefix_length, width,
                               keys, file.key_size, values, file.value_size);
  if (sections.heap > file.page_size) return;
  auto fix_slot = [&](std::uint32_t slot_offset, bool key_slot) {
    if (std::uint64_t{slot_offset} + format::slot_size > file.page_size) return;
    const std::uint32_t length = load_le<std::uint32_t>(bytes + slot_offset);
    const std::uint32_t reference = load_le<std::uint32_t>(bytes + slot_offset + 4);
    if ((reference & format::external_flag) == 0) return;
    const std::uint32_t record = reference & ~format::external_flag;
    if (std::uint64_t{record} + format::external_record_size > file.page_size) return;
    const std::uint64_t item_length = key_slot ? (length > width ? length - width : 0) : length;
    const std::uint64_t item_offset = load_le<std::uint64_t>(bytes + record);
    if (item_offset > file.blob_length || item_length > file.blob_length - item_offset) return;
    store_le(bytes + record + 8, format::crc32c(data + file.blob_offset + item_offset,
                                                static_cast<std::size_t>(item_length)));
  };
  for (std::uint32_t i = 0; i < count; ++i) {
    if (keys == format::key_kind::bytes) fix_slot(sections.key_data + i * format::slot_size, true);
    if (kind == 1 && values == format::value_kind::bytes) {
      fix_slot(sections.values + i * format::slot_size, false);
    }
  }
}

struct field {
  std::uint32_t offset;
  std::uint32_t size;
};

constexpr field header_fields[] = {
    {header::major_offset, 2},
    {header::minor_offset, 2},
    {header::header_size_offset, 4},
    {header::required_features_offset, 8},
    {header::page_size_offset, 4},
    {header::key_kind_offset, 1},
    {header::value_kind_offset, 1},
    {header::key_size_offset, 4},
    {header::value_size_offset, 4},
    {header::entry_count_offset, 8},
    {header::height_offset, 4},
    {header::root_page_offset, 4},
    {header::first_leaf_page_offset, 4},
    {header::leaf_count_offset, 4},
    {header::page_count_offset, 4},
    {header::blob_offset_offset, 8},
    {header::blob_length_offset, 8},
    {header::metadata_offset_offset, 8},
    {header::metadata_length_offset, 8},
    {header::file_size_offset, 8},
    {header::max_key_length_offset, 4},
    {header::max_value_length_offset, 4},
    {header::build_flags_offset, 4},
    {header::level_table_offset, 4},
    {header::level_table_offset + 4, 4},
    {header::level_table_offset + 8, 4},
    {header::level_table_offset + 12, 4},
    {header::directory_offset_offset, 8},
    {header::directory_length_offset, 8},
    {header::directory_head_size_offset, 4},
    {header::directory_prefix_length_offset, 4},
};

constexpr field page_fields[] = {
    {page::page_number_offset, 4},  {page::kind_offset, 1},        {page::level_offset, 1},
    {page::inline_width_offset, 1}, {page::count_offset, 2},       {page::prefix_length_offset, 2},
    {page::first_rank_offset, 8},   {page::first_child_offset, 4}, {page::heap_end_offset, 4},
};

std::uint64_t load_field(const std::uint8_t* at, std::uint32_t size) {
  switch (size) {
    case 1:
      return *at;
    case 2:
      return load_le<std::uint16_t>(at);
    case 4:
      return load_le<std::uint32_t>(at);
    default:
      return load_le<std::uint64_t>(at);
  }
}

void store_field(std::uint8_t* at, std::uint32_t size, std::uint64_t value) {
  switch (size) {
    case 1:
      *at = static_cast<std::uint8_t>(value);
      break;
    case 2:
      store_le(at, static_cast<std::uint16_t>(value));
      break;
    case 4:
      store_le(at, static_cast<std::uint32_t>(value));
      break;
    default:
      store_le(at, value);
      break;
  }
}

// A value worth trying in an integer field: near the old one, an edge, or
// one that names another part of the file.
std::uint64_t interesting_value(std::mt19937& random, std::uint64_t old, std::uint32_t size,
                                const layout& file, std::size_t file_size) {
  const std::uint64_t max = size >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * size)) - 1;
  switch (random() % 12) {
    case 0:
      return old + 1;
    case 1:
      return old - 1;
    case 2:
      return 0;
    case 3:
      return max;
    case 4:
      return max / 2 + 1;  // the top bit: the external flag of a reference
    case 5:
      return old + 1 + random() % 16;
    case 6:
      return old - 1 - random() % 16;
    case 7:
      return file.page_size;
    case 8:
      return file.pages;
    case 9:
      return file_size;
    case 10:
      return old ^ (std::uint64_t{1} << (random() % (8 * size)));
    default:
      return random();
  }
}

void mutate_bytes_at(std::mt19937& random, std::uint8_t* at, std::size_t room, const layout& file,
                     std::size_t file_size) {
  if (room == 0) return;
  switch (random() % 6) {
    case 0:
      *at ^= static_cast<std::uint8_t>(1u << (random() % 8));
      break;
    case 1:
      *at = static_cast<std::uint8_t>(random());
      break;
    case 2:
      *at = static_cast<std::uint8_t>(*at + (random() % 2 ? 1 : -1));
      break;
    case 3: {
      const std::uint32_t sizes[] = {1, 2, 4, 8};
      std::uint32_t size = sizes[random() % 4];
      while (size > room) size /= 2;
      store_field(at, size, interesting_value(random, load_field(at, size), size, file, file_size));
      break;
    }
    case 4: {  // a short run of random bytes
      const std::size_t length = std::min<std::size_t>(room, 1 + random() % 8);
      for (std::size_t i = 0; i < length; ++i) at[i] = static_cast<std::uint8_t>(random());
      break;
    }
    default: {  // zeros
      const std::size_t length = std::min<std::size_t>(room, 1 + random() % 8);
      std::memset(at, 0, length);
      break;
    }
  }
}

// mutate_bytes_at somewhere in the `length` bytes from `begin` (length > 0).
void mutate_bytes_within(std::mt19937& random, std::uint8_t* begin, std::uint64_t length,
                         const layout& file, std::size_t file_size) {
  const std::uint64_t at = random() % length;
  mutate_bytes_at(random, begin + at, static_cast<std::size_t>(length - at), file, file_size);
}

// Changes bytes of one page, mostly in its header fields and in the part
// its heap_end says is used.
void mutate_page(std::mt19937& random, std::uint8_t* data, std::size_t size, const layout& file,
                 std::uint32_t number) {
  std::uint8_t* bytes = data + std::size_t{number} * file.page_size;
  const std::uint32_t heap_end =
      std::clamp<std::uint32_t>(load_le<std::uint32_t>(bytes + page::heap_end_offset),
                                format::page_header_size + 1, file.page_size);
  const unsigned choice = random() % 20;
  if (choice < 6) {
    const field& f = page_fields[random() % std::size(page_fields)];
    store_field(
        bytes + f.offset, f.size,
        interesting_value(random, load_field(bytes + f.offset, f.size), f.size, file, size));
  } else if (choice < 17) {
    const std::uint32_t offset =
        format::page_header_size + random() % (heap_end - format::page_header_size);
    mutate_bytes_at(random, bytes + offset, file.page_size - offset, file, size);
  } else if (choice < 19) {
    const std::uint32_t offset = 4 + random() % (file.page_size - 4);
    mutate_bytes_at(random, bytes + offset, file.page_size - offset, file, size);
  } else {  // move a run of bytes within the page: swaps keys, slots, items
    const std::uint32_t length = 1 + random() % 16;
    const std::uint32_t from = 32 + random() % (heap_end - 32);
    const std::uint32_t to = 32 + random() % (heap_end - 32);
    if (from + length <= file.page_size && to + length <= file.page_size) {
      std::memmove(bytes + to, bytes + from, length);
    }
  }
}

// Changes the directory region (spec/FORMAT.md, 12.3) where its structure
// is: a head copied over another (a tie, or heads out of order), two heads
// swapped, a locator naming another page or separator, a byte of the
// prefix, or any byte of the region.
void mutate_directory(std::mt19937& random, std::uint8_t* data, std::size_t size,
                      const layout& file) {
  const std::uint64_t offset = file.directory_offset;
  const std::uint64_t length = file.directory_length;
  if (length == 0 || !region_in(offset, length, size)) return;
  std::uint8_t* region = data + offset;
  const std::uint64_t head_size = file.directory_head_size;
  const std::uint64_t per_entry = head_size + format::directory::locator_size;
  const std::uint64_t entries =
      format::directory::is_valid_head_size(head_size) && length >= file.directory_prefix_length
          ? (length - file.directory_prefix_length) / per_entry
          : 0;
  const unsigned choice = random() % 6;
  if (entries >= 2 && choice < 2) {
    std::uint8_t* a = region + (random() % entries) * head_size;
    std::uint8_t* b = region + (random() % entries) * head_size;
    if (choice == 0) {
      std::memmove(b, a, head_size);
    } else {
      std::swap_ranges(a, a + head_size, b);
    }
  } else if (entries >= 1 && choice < 4) {
    std::uint8_t* locator = region + format::directory::locators_offset(entries, head_size) +
                            (random() % entries) * format::directory::locator_size;
    const field f = random() % 2 == 0 ? field{format::directory::locator_page_offset, 4}
                                      : field{format::directory::locator_index_offset, 2};
    store_field(
        locator + f.offset, f.size,
        interesting_value(random, load_field(locator + f.offset, f.size), f.size, file, size));
  } else if (entries >= 1 && choice == 4 && file.directory_prefix_length > 0) {
    const std::uint64_t prefix = format::directory::prefix_offset(entries, head_size);
    mutate_bytes_within(random, region + prefix, length - prefix, file, size);
  } else {
    mutate_bytes_within(random, region, length, file, size);
  }
}

// Stores at `checksum_offset` of the header the CRC32C of a region, if the
// header places it in the file.
void fix_region_checksum(std::uint8_t* data, std::size_t size, std::uint64_t offset,
                         std::uint64_t length, std::size_t checksum_offset) {
  if (length > 0 && region_in(offset, length, size))
    store_le(data + checksum_offset,
             format::crc32c(data + offset, static_cast<std::size_t>(length)));
}

}  // namespace

bool fix_checksums(std::span<std::uint8_t> file) {
  std::uint8_t* data = file.data();
  const std::size_t size = file.size();
  if (size < format::header_size) return false;
  layout shape;
  if (read_layout(data, size, shape)) {
    for (std::uint32_t number = 1; number < shape.pages; ++number)
      fix_item_checksums(data, size, shape, number);
    for (std::uint32_t number = 1; number < shape.pages; ++number) {
      std::uint8_t* bytes = data + std::size_t{number} * shape.page_size;
      store_le(bytes + page::checksum_offset, format::page_checksum(bytes, shape.page_size));
    }
    fix_region_checksum(data, size, shape.metadata_offset, shape.metadata_length,
                        header::metadata_checksum_offset);
    fix_region_checksum(data, size, shape.directory_offset, shape.directory_length,
                        header::directory_checksum_offset);
  }
  store_le(data + header::checksum_offset, format::header_checksum(data));
  return true;
}

std::size_t simple_mutate(std::uint8_t* data, std::size_t size, std::size_t max_size) {
  static std::mt19937 random(12345);
  const unsigned changes = 1 + random() % 4;
  for (unsigned i = 0; i < changes; ++i) {
    const unsigned choice = random() % 8;
    if (choice == 0 && size < max_size) {  // insert a byte
      const std::size_t at = random() % (size + 1);
      std::memmove(data + at + 1, data + at, size - at);
      data[at] = static_cast<std::uint8_t>(random());
      ++size;
    } else if (choice == 1 && size > 0) {  // erase a byte
      const std::size_t at = random() % size;
      std::memmove(data + at, data + at + 1, size - at - 1);
      --size;
    } else if (size > 0) {
      data[random() % size] ^= static_cast<std::uint8_t>(1u << (random() % 8));
    }
  }
  return size;
}

std::size_t mutate_file(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed,
                        base_mutator base) {
  std::mt19937 random(seed);
  layout file;
  if (!read_layout(data, size, file) || random() % 16 == 0) return base(data, size, max_size);
  const unsigned choice = random() % 100;
  if (choice < 50 && file.pages >= 2) {
    // Bytes of one to three pages.
    const unsigned rounds = 1 + random() % 3;
    for (unsigned i = 0; i < rounds; ++i)
      mutate_page(random, data, size, file, 1 + random() % (file.pages - 1));
  } else if (choice < 60 && file.pages >= 2) {
    // libFuzzer's mutator on the used part of one page, its size kept.
    const std::uint32_t number = 1 + random() % (file.pages - 1);
    std::uint8_t* bytes = data + std::size_t{number} * file.page_size;
    const std::uint32_t used = std::clamp<std::uint32_t>(
        load_le<std::uint32_t>(bytes + page::heap_end_offset), 64, file.page_size);
    std::vector<std::uint8_t> body(bytes + 4, bytes + used);
    const std::size_t length = base(body.data(), body.size(), body.size());
    std::memcpy(bytes + 4, body.data(), length);
    if (length < body.size()) std::memset(bytes + 4 + length, 0, body.size() - length);
  } else if (choice < 72) {
    // A header field.
    const field& f = header_fields[random() % std::size(header_fields)];
    store_field(data + f.offset, f.size,
                interesting_value(random, load_field(data + f.offset, f.size), f.size, file, size));
  } else if (choice < 76 && file.directory_length > 0) {
    mutate_directory(random, data, size, file);
  } else if (choice < 80 && (file.blob_length > 0 || file.metadata_length > 0)) {
    // The blob or metadata region.
    const bool blob = file.blob_length > 0 && (file.metadata_length == 0 || random() % 2 == 0);
    const std::uint64_t offset = blob ? file.blob_offset : file.metadata_offset;
    const std::uint64_t length = blob ? file.blob_length : file.metadata_length;
    if (region_in(offset, length, size) && length > 0)
      mutate_bytes_within(random, data + offset, length, file, size);
  } else if (choice < 88 && file.pages >= 3) {
    // Whole pages: one copied over another, or two swapped.
    const std::uint32_t a = 1 + random() % (file.pages - 1);
    const std::uint32_t b = 1 + random() % (file.pages - 1);
    std::uint8_t* pa = data + std::size_t{a} * file.page_size;
    std::uint8_t* pb = data + std::size_t{b} * file.page_size;
    if (random() % 2 == 0) {
      std::memcpy(pb, pa, file.page_size);
      if (random() % 2 == 0) store_le(pb + page::page_number_offset, b);  // a consistent copy
    } else {
      std::vector<std::uint8_t> saved(pa, pa + file.page_size);
      std::memmove(pa, pb, file.page_size);
      std::memcpy(pb, saved.data(), file.page_size);
    }
  } else if (choice < 94) {
    // The file's length, and now and then the header to match.
    std::size_t new_size = size;
    switch (random() % 4) {
      case 0:
        new_size = size > file.page_size ? size - file.page_size : size;
        break;
      case 1:
        new_size = std::min(max_size, size + file.page_size);
        break;
      case 2:
        new_size = size > 1 ? size - 1 - random() % std::min<std::size_t>(size - 1, 16) : size;
        break;
      default:
        new_size = std::min(max_size, size + 1 + random() % 16);
        break;
    }
    if (new_size > size) std::memset(data + size, 0, new_size - size);
    size = new_size;
    if (size >= format::header_size && random() % 2 == 0) {
      store_le(data + header::file_size_offset, std::uint64_t{size});
    }
  } else {
    size = base(data, size, max_size);
  }
  if (random() % 8 != 0) fix_checksums({data, size});
  return size;
}

std::size_t cross_over_files(const std::uint8_t* data, std::size_t size, const std::uint8_t* other,
                             std::size_t other_size, std::uint8_t* out, std::size_t max_out,
                             unsigned seed) {
  std::mt19937 random(seed);
  const std::size_t length = std::min(size, max_out);
  std::memcpy(out, data, length);
  layout mine;
  layout theirs;
  if (!read_layout(out, length, mine) || !read_layout(other, other_size, theirs) ||
      mine.page_size != theirs.page_size || mine.pages < 2 || theirs.pages < 2) {
    return length;
  }
  // Pages of another file with the same page size: a tree of one file with
  // leaves of another, or a header that describes the other.
  const unsigned pages = 1 + random() % 3;
  for (unsigned i = 0; i < pages; ++i) {
    const std::uint32_t to = random() % mine.pages;
    const std::uint32_t from = random() % theirs.pages;
    std::memcpy(out + std::size_t{to} * mine.page_size, other + std::size_t{from} * mine.page_size,
                mine.page_size);
  }
  if (random() % 8 != 0) fix_checksums({out, length});
  return length;
}

}  // namespace bbtree::fuzz
