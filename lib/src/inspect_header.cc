// bbtree-dump --header: the header page, field by field.  Fields the reader
// keeps in file_info come from there; the rest (checksums, the level table)
// are read from the header bytes at the offsets layout.h defines.
#include <bbtree/inspect.h>
#include <bbtree/text_format.h>

#include <fmt/format.h>

#include <ostream>
#include <string>

namespace bbtree {

namespace {

const char* duplicates_name(std::uint32_t policy) noexcept {
  switch (policy) {
    case static_cast<std::uint32_t>(format::duplicate_policy::error):
      return "error";
    case static_cast<std::uint32_t>(format::duplicate_policy::keep_first):
      return "first";
    case static_cast<std::uint32_t>(format::duplicate_policy::keep_last):
      return "last";
    default:
      return "unknown";
  }
}

}  // namespace

void write_header(const reader& file, std::ostream& out) {
  const file_info& info = file.info();
  const auto* header = reinterpret_cast<const unsigned char*>(file.bytes().data());
  const entry_types types = entry_types::of(info);
  std::string text;
  auto field = [&text](std::string_view name, const auto& value) {
    fmt::format_to(std::back_inserter(text), "{}: {}\n", name, value);
  };
  auto hex_field = [&text](std::string_view name, std::uint64_t value, int digits) {
    fmt::format_to(std::back_inserter(text), "{}: 0x{:0{}x}\n", name, value, digits);
  };

  std::string magic;
  for (std::size_t i = 0; i < sizeof(format::magic); ++i) {
    fmt::format_to(std::back_inserter(magic), "{}{:02x}", i == 0 ? "" : " ",
                   header[format::header::magic_offset + i]);
  }
  field("magic", magic);
  field("format_version", fmt::format("{}.{}", info.major_version, info.minor_version));
  field("header_size", format::load_le<std::uint32_t>(header + format::header::header_size_offset));
  hex_field("required_features", info.required_features, 16);
  hex_field("optional_features", info.optional_features, 16);
  field("page_size", info.page_size);
  field("key_type", key_type_name(types));
  field("value_type", value_type_name(types));
  field("entries", info.entries);
  field("height", info.height);
  field("root_page", info.root_page);
  field("first_leaf_page",
        format::load_le<std::uint32_t>(header + format::header::first_leaf_page_offset));
  field("leaf_count", info.leaf_count);
  field("page_count", info.page_count);
  field("blob_offset", info.blob_offset);
  field("blob_length", info.blob_length);
  field("metadata_offset", info.metadata_offset);
  field("metadata_length", info.metadata_length);
  hex_field("metadata_checksum",
            format::load_le<std::uint32_t>(header + format::header::metadata_checksum_offset), 8);
  hex_field("build_flags", info.build_flags, 8);
  field("input_sorted", info.build_flags & format::build_flag::input_unsorted ? "no" : "yes");
  field("duplicates", duplicates_name((info.build_flags & format::build_flag::duplicates_mask) >>
                                      format::build_flag::duplicates_shift));
  field("inline_limit", info.inline_limit);
  field("prefix_cap", info.prefix_cap);
  field("file_size", info.file_size);
  field("max_key_length", info.max_key_length);
  field("max_value_length", info.max_value_length);
  field("directory_offset", info.directory_offset);
  field("directory_length", info.directory_length);
  hex_field("directory_checksum", info.directory_checksum, 8);
  field("directory_head_size", info.directory_head_size);
  field("directory_prefix_length", info.directory_prefix_length);
  std::string levels;
  for (std::uint32_t level = 0; level < info.height && level < format::max_height; ++level) {
    fmt::format_to(
        std::back_inserter(levels), "{}{}", level == 0 ? "" : " ",
        format::load_le<std::uint32_t>(header + format::header::level_table_offset + 4 * level));
  }
  field("level_first_page", levels);
  hex_field("header_checksum",
            format::load_le<std::uint32_t>(header + format::header::checksum_offset), 8);

  const auto metadata = file.metadata();
  field("metadata_entries", metadata.size());
  for (const auto& [key, value] : metadata) {
    text += "metadata.";
    append_escaped(text, key);
    text += ": ";
    append_escaped(text, value);
    text += '\n';
  }
  out << text;
}

}  // namespace bbtree
