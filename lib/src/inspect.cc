// bbtree-dump --stats, --pages and --page N: a file's structure, read
// through reader_core's checked page access.  A damaged page is shown as
// damaged (with the reader's message) and the listing goes on: the dump is
// also a tool for looking at files that do not verify.
#include <bbtree/detail/reader_core.h>
#include <bbtree/inspect.h>
#include <bbtree/text_format.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <ostream>
#include <string>

namespace bbtree {

namespace {

using detail::page_view;
using detail::reader_core;
using format::key_kind;
using format::load_le;
using format::page_kind;
using format::value_kind;
namespace page_field = format::page;

// Bytes shown of a prefix, key or value before "..." cuts it short.
constexpr std::size_t shown_bytes = 48;

std::string hex(std::string_view bytes, std::size_t limit = shown_bytes) {
  std::string text;
  for (std::size_t i = 0; i < bytes.size() && i < limit; ++i) {
    fmt::format_to(std::back_inserter(text), "{:02x}", static_cast<unsigned char>(bytes[i]));
  }
  if (bytes.size() > limit) text += "...";
  return text;
}

// Byte strings escaped as tsv writes them, quoted; other kinds in hex, since
// a prefix or a fragment of an integer key is not a number.
std::string show_bytes(std::string_view bytes, key_kind keys) {
  if (keys != key_kind::bytes) return hex(bytes);
  std::string text = "\"";
  append_escaped(text, bytes.substr(0, std::min(bytes.size(), shown_bytes)));
  text += bytes.size() > shown_bytes ? "\"..." : "\"";
  return text;
}

std::string show_key(std::string_view key, const entry_types& types) {
  if (types.keys == key_kind::bytes && key.size() > shown_bytes) {
    return show_bytes(key, types.keys) + fmt::format(" ({} bytes)", key.size());
  }
  if (types.keys == key_kind::bytes) return show_bytes(key, types.keys);
  if (key.size() != types.key_size) return hex(key);  // not a whole key: damaged
  return key_text(key, types);
}

std::string show_value(std::string_view value, const entry_types& types) {
  if (types.values == value_kind::bytes) {
    std::string text = "\"";
    append_escaped(text, value.substr(0, std::min(value.size(), shown_bytes)));
    text += value.size() > shown_bytes ? fmt::format("\"... ({} bytes)", value.size()) : "\"";
    return text;
  }
  std::string text;
  append_value_text(text, value, types);
  return text;
}

const char* kind_name(page_kind kind) {
  switch (kind) {
    case page_kind::leaf:
      return "leaf";
    case page_kind::inner:
      return "inner";
  }
  return "?";
}

// The level that the level table gives page `number`.
std::uint32_t level_of(const reader_core& core, std::uint32_t number) {
  std::uint32_t level = 0;
  while (level + 1 < core.info().height && number >= core.level_first_page(level + 1)) ++level;
  return level;
}

// The share of `whole` that `part` is, in percent; 0 of nothing.
double percent_of(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// Power-of-two buckets of lengths: 0, 1, 2-3, 4-7, ...
class length_histogram {
 public:
  void add(std::uint64_t length) {
    ++buckets_[length == 0 ? 0 : 64 - __builtin_clzll(length)];
    ++count_;
    total_ += length;
    min_ = std::min(min_, length);
    max_ = std::max(max_, length);
  }

  void write(std::string& text, std::string_view name) const {
    if (count_ == 0) {
      fmt::format_to(std::back_inserter(text), "{}: none\n", name);
      return;
    }
    fmt::format_to(std::back_inserter(text), "{}: min {}, mean {:.1f}, max {}\n", name, min_,
                   static_cast<double>(total_) / static_cast<double>(count_), max_);
    for (std::size_t bucket = 0; bucket < buckets_.size(); ++bucket) {
      if (buckets_[bucket] == 0) continue;
      const std::uint64_t low = bucket == 0 ? 0 : std::uint64_t{1} << (bucket - 1);
      const std::uint64_t high = bucket == 0 ? 0 : (std::uint64_t{1} << (bucket - 1)) * 2 - 1;
      const std::string range =
          low == high ? fmt::format("{}", low) : fmt::format("{}-{}", low, high);
      fmt::format_to(std::back_inserter(text), "{}.{}: {} ({:.1f}%)\n", name, range,
                     buckets_[bucket], percent_of(buckets_[bucket], count_));
    }
  }

 private:
  std::array<std::uint64_t, 65> buckets_{};
  std::uint64_t count_ = 0;
  std::uint64_t total_ = 0;
  std::uint64_t min_ = ~std::uint64_t{0};
  std::uint64_t max_ = 0;
};

struct level_totals {
  std::uint64_t pages = 0;
  std::uint64_t keys = 0;
  std::uint64_t used_bytes = 0;  // up to heap_end
  double min_fill = 1.0;
  double max_fill = 0.0;
  std::uint64_t damaged = 0;
  // Keys whose inline key equals a neighbour's in the same page: a search
  // that lands on one of them reads full keys to settle it (spec 8.4).
  std::uint64_t tied_keys = 0;
  std::uint32_t largest_tie = 0;  // most keys of one page sharing an inline key
};

// Counts the runs of equal inline keys in a page (its inline keys are
// non-decreasing, so equal ones are adjacent).
void count_ties(const page_view& page, level_totals& totals) {
  for (std::uint32_t start = 0, end = 0; start < page.count; start = end) {
    const std::uint64_t inline_key = page.inline_key(start);
    for (end = start + 1; end < page.count && page.inline_key(end) == inline_key;) ++end;
    const std::uint32_t run = end - start;
    if (run > 1) totals.tied_keys += run;
    totals.largest_tie = std::max(totals.largest_tie, run);
  }
}

}  // namespace

void write_stats(const reader& file, std::ostream& out) {
  const reader_core& core = file.core();
  const file_info& info = core.info();
  const entry_types types = entry_types::of(info);
  std::vector<level_totals> levels(info.height);
  std::map<std::uint32_t, std::uint64_t> prefix_lengths;  // pages by prefix length
  std::map<std::uint32_t, std::uint64_t> inline_widths;   // pages by inline width
  length_histogram key_lengths;
  length_histogram value_lengths;
  std::uint64_t external_values = 0;
  std::uint64_t external_value_bytes = 0;
  std::uint64_t external_keys = 0;
  std::uint64_t external_key_bytes = 0;
  std::uint64_t damaged_pages = 0;

  for (std::uint32_t level = 0; level < info.height; ++level) {
    level_totals& totals = levels[level];
    for (std::uint32_t number = core.level_first_page(level); number < core.level_end_page(level);
         ++number) {
      ++totals.pages;
      try {
        const page_view page = core.page(number, static_cast<int>(level));
        totals.keys += page.count;
        totals.used_bytes += page.heap_end;
        const double fill = static_cast<double>(page.heap_end) / info.page_size;
        totals.min_fill = std::min(totals.min_fill, fill);
        totals.max_fill = std::max(totals.max_fill, fill);
        ++prefix_lengths[page.prefix_length];
        ++inline_widths[page.inline_width];
        count_ties(page, totals);
        for (std::uint32_t i = 0; i < page.count; ++i) {
          if (info.keys == key_kind::bytes && core.key_suffix_length(page, i) > page.inline_width) {
            const detail::item_view remainder = core.key_remainder(page, i);
            if (remainder.external) {
              ++external_keys;
              external_key_bytes += remainder.bytes.size();
            }
          }
          if (level != 0) continue;
          key_lengths.add(std::uint64_t{page.prefix_length} + core.key_suffix_length(page, i));
          if (info.values == value_kind::none) continue;
          const detail::item_view value = core.value_item(page, i);
          value_lengths.add(value.bytes.size());
          if (value.external) {
            ++external_values;
            external_value_bytes += value.bytes.size();
          }
        }
      } catch (const error&) {
        ++totals.damaged;
        ++damaged_pages;
      }
    }
  }

  std::string text;
  auto field = [&text](std::string_view name, const auto& value) {
    fmt::format_to(std::back_inserter(text), "{}: {}\n", name, value);
  };
  field("key_type", key_type_name(types));
  field("value_type", value_type_name(types));
  field("entries", info.entries);
  field("file_size", info.file_size);
  field("bytes_per_entry", info.entries == 0
                               ? std::string("-")
                               : fmt::format("{:.2f}", static_cast<double>(info.file_size) /
                                                           static_cast<double>(info.entries)));
  field("page_size", info.page_size);
  field("height", info.height);
  field("pages", fmt::format("{} (header 1, leaves {}, inner {})", info.page_count, info.leaf_count,
                             info.page_count - 1 - info.leaf_count));
  for (std::uint32_t level = 0; level < info.height; ++level) {
    const level_totals& totals = levels[level];
    const std::uint64_t readable = totals.pages - totals.damaged;
    const std::string name = fmt::format("level.{}", level);
    field(name + ".pages",
          fmt::format("{} (first page {})", totals.pages, core.level_first_page(level)));
    field(name + (level == 0 ? ".entries" : ".separators"), totals.keys);
    if (readable > 0) {
      field(name + ".keys_per_page",
            fmt::format("{:.1f}", static_cast<double>(totals.keys) / readable));
      field(name + ".fill", fmt::format("mean {:.1f}%, min {:.1f}%, max {:.1f}%",
                                        percent_of(totals.used_bytes, readable * info.page_size),
                                        100.0 * totals.min_fill, 100.0 * totals.max_fill));
      field(name + ".inline_ties",
            fmt::format("{} keys ({:.1f}%), largest group {}", totals.tied_keys,
                        percent_of(totals.tied_keys, totals.keys), totals.largest_tie));
    }
    if (totals.damaged > 0) field(name + ".damaged_pages", totals.damaged);
  }
  for (const auto& [width, pages] : inline_widths)
    field(fmt::format("inline_width.{}", width), fmt::format("{} pages", pages));
  for (const auto& [length, pages] : prefix_lengths) {
    field(fmt::format("prefix_length.{}", length), fmt::format("{} pages", pages));
  }
  key_lengths.write(text, "key_length");
  if (info.values != value_kind::none) value_lengths.write(text, "value_length");
  field("blob_bytes", info.blob_length);
  field("blob_values", fmt::format("{} ({} bytes)", external_values, external_value_bytes));
  field("blob_key_remainders", fmt::format("{} ({} bytes)", external_keys, external_key_bytes));
  field("metadata_bytes", info.metadata_length);
  if (damaged_pages > 0)
    field("damaged_pages", fmt::format("{} (run bbtree-verify)", damaged_pages));
  out << text;
}

void write_pages(const reader& file, std::ostream& out) {
  const reader_core& core = file.core();
  const file_info& info = core.info();
  std::string text =
      fmt::format("{:>8} {:>12} {:<5} {:>5} {:>5} {:>6} {:>5} {:>8} {:>6} {:>12}  {}\n", "page",
                  "offset", "kind", "level", "count", "prefix", "width", "heap_end", "fill",
                  "rank/child", "prefix bytes");
  fmt::format_to(std::back_inserter(text),
                 "{:>8} {:>12} {:<5}  (the file header: bbtree-dump --header)\n", 0, 0, "head");
  for (std::uint32_t number = 1; number < info.page_count; ++number) {
    const std::uint64_t offset = std::uint64_t{number} * info.page_size;
    const std::uint32_t level = level_of(core, number);
    try {
      const page_view page = core.page(number, static_cast<int>(level));
      const std::uint64_t header_word =
          page.kind == page_kind::leaf
              ? page.header_word
              : load_le<std::uint32_t>(page.bytes + page_field::first_child_offset);
      fmt::format_to(std::back_inserter(text),
                     "{:>8} {:>12} {:<5} {:>5} {:>5} {:>6} {:>5} {:>8} {:>5.1f}% {:>12}  {}\n",
                     number, offset, kind_name(page.kind), page.level, page.count,
                     page.prefix_length, page.inline_width, page.heap_end,
                     100.0 * page.heap_end / info.page_size, header_word,
                     show_bytes(page.prefix(), info.keys));
    } catch (const error& e) {
      fmt::format_to(std::back_inserter(text), "{:>8} {:>12} damaged: {}\n", number, offset,
                     e.what());
    }
  }
  out << text;
}

std::string write_page(const reader& file, std::uint32_t number, std::ostream& out) {
  const reader_core& core = file.core();
  const file_info& info = core.info();
  if (number >= info.page_count) {
    throw error(errc::invalid_argument,
                fmt::format("{}: there is no page {}: the file has pages 0 to {}", core.name(),
                            number, info.page_count - 1));
  }
  if (number == 0) {
    write_header(file, out);
    return {};
  }
  const entry_types types = entry_types::of(info);
  const std::uint64_t offset = std::uint64_t{number} * info.page_size;
  const unsigned char* p = core.base() + offset;
  const std::uint32_t level = level_of(core, number);
  std::string text;
  auto field = [&text](std::string_view name, const auto& value) {
    fmt::format_to(std::back_inserter(text), "{}: {}\n", name, value);
  };
  std::string first_problem;
  auto damaged = [&](std::string_view message) {
    if (first_problem.empty()) first_problem = message;
  };
  // The raw fields first: they are shown even when the page is damaged.
  field("page", number);
  field("offset", offset);
  field("level_table_level", level);
  const std::uint32_t stored_checksum = load_le<std::uint32_t>(p + page_field::checksum_offset);
  const std::uint32_t computed_checksum = format::page_checksum(p, info.page_size);
  field("checksum",
        fmt::format("0x{:08x} (computed 0x{:08x})", stored_checksum, computed_checksum));
  if (stored_checksum != computed_checksum) {
    // Said before the fields that follow, which come from the damaged
    // bytes: a page that decodes is not thereby sound.
    const std::string message =
        fmt::format("{}: page {} (offset {}): checksum mismatch", core.name(), number, offset);
    field("damaged", message);
    damaged(message);
  }
  field("page_number", load_le<std::uint32_t>(p + page_field::page_number_offset));
  field("kind", fmt::format("{} ({})", p[page_field::kind_offset],
                            p[page_field::kind_offset] == 1   ? "leaf"
                            : p[page_field::kind_offset] == 2 ? "inner"
                                                              : "invalid"));
  field("level", p[page_field::level_offset]);
  field("inline_width", p[page_field::inline_width_offset]);
  field("count", load_le<std::uint16_t>(p + page_field::count_offset));
  field("prefix_length", load_le<std::uint16_t>(p + page_field::prefix_length_offset));
  if (level == 0) {
    field("first_rank", load_le<std::uint64_t>(p + page_field::first_rank_offset));
  } else {
    field("first_child", load_le<std::uint32_t>(p + page_field::first_child_offset));
  }
  field("heap_end", load_le<std::uint32_t>(p + page_field::heap_end_offset));

  try {
    const page_view page = core.page(number, static_cast<int>(level));
    const format::page_sections& s = page.sections;
    field("sections",
          fmt::format("prefix {}, inline_keys {}, key_data {}, values {}, heap {}, tail_width {}",
                      s.prefix, s.inline_keys, s.key_data, s.values, s.heap, s.tail_width));
    field("prefix", show_bytes(page.prefix(), info.keys));
    field("fill", fmt::format("{:.1f}%", 100.0 * page.heap_end / info.page_size));
    std::string key;
    const bool leaf = page.kind == page_kind::leaf;
    if (!leaf) {
      const std::uint32_t first_child = load_le<std::uint32_t>(p + page_field::first_child_offset);
      field("child.0",
            fmt::format("page {}", std::uint64_t{core.level_first_page(level - 1)} + first_child));
    }
    for (std::uint32_t i = 0; i < page.count; ++i) {
      key.clear();
      std::string line = fmt::format("{}.{}: inline 0x{:0{}x}", leaf ? "entry" : "separator", i,
                                     page.inline_key(i), 2 * page.inline_width);
      try {
        core.append_key(page, i, key);
        fmt::format_to(std::back_inserter(line), ", key {}", show_key(key, types));
        if (info.keys == key_kind::bytes) {
          const unsigned char* slot = page.bytes + s.key_data + i * format::slot_size;
          fmt::format_to(std::back_inserter(line), ", key slot ({}, 0x{:08x})",
                         load_le<std::uint32_t>(slot), load_le<std::uint32_t>(slot + 4));
          const detail::item_view remainder = core.key_remainder(page, i);
          if (remainder.external) {
            fmt::format_to(std::back_inserter(line), " -> blob offset {}, crc 0x{:08x}",
                           remainder.blob_offset, remainder.stored_checksum);
          }
        }
        if (leaf && info.values != value_kind::none) {
          const detail::item_view value = core.value_item(page, i);
          fmt::format_to(std::back_inserter(line), ", value {}", show_value(value.bytes, types));
          if (info.values == value_kind::bytes) {
            const unsigned char* slot = page.bytes + s.values + i * format::slot_size;
            fmt::format_to(std::back_inserter(line), ", value slot ({}, 0x{:08x})",
                           load_le<std::uint32_t>(slot), load_le<std::uint32_t>(slot + 4));
            if (value.external) {
              fmt::format_to(std::back_inserter(line), " -> blob offset {}, crc 0x{:08x}",
                             value.blob_offset, value.stored_checksum);
            }
          }
        }
        if (!leaf) {
          const std::uint32_t first_child =
              load_le<std::uint32_t>(p + page_field::first_child_offset);
          fmt::format_to(std::back_inserter(line), ", then child.{}: page {}", i + 1,
                         std::uint64_t{core.level_first_page(level - 1)} + first_child + i + 1);
        }
      } catch (const error& e) {
        fmt::format_to(std::back_inserter(line), ", damaged: {}", e.what());
        damaged(e.what());
      }
      text += line;
      text += '\n';
    }
  } catch (const error& e) {
    field("damaged", e.what());
    damaged(e.what());
  }
  out << text;
  return first_problem;
}

}  // namespace bbtree
