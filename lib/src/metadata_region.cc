// Reading the metadata region's layout: see metadata_region.h.
#include "metadata_region.h"

#include <bbtree/format/endian.h>

#include <fmt/format.h>

#include <algorithm>

namespace bbtree::detail {

metadata_layout read_metadata_layout(const unsigned char* region, std::uint64_t length) {
  metadata_layout layout;
  const std::uint32_t count = format::load_le<std::uint32_t>(region);
  std::uint64_t offset = 4;
  // Each pair takes at least 8 bytes, so no count can make this reserve
  // more than the region allows.
  layout.pairs.reserve(std::min<std::uint64_t>(count, (length - 4) / 8));
  for (std::uint32_t i = 0; i < count; ++i) {
    std::string_view fields[2];
    for (std::string_view& field : fields) {
      if (length - offset < 4) {
        layout.problem = {offset,
                          fmt::format("entry {} of {} runs past the end of the region", i, count)};
        return layout;
      }
      const std::uint32_t field_length = format::load_le<std::uint32_t>(region + offset);
      if (length - offset - 4 < field_length) {
        layout.problem = {offset,
                          fmt::format("entry {} of {}: a {}-byte field runs past the end of the "
                                      "region",
                                      i, count, field_length)};
        return layout;
      }
      field = {reinterpret_cast<const char*>(region + offset + 4), field_length};
      offset += 4 + std::uint64_t{field_length};
    }
    layout.pairs.emplace_back(fields[0], fields[1]);
  }
  if (offset != length) {
    layout.problem = {
        offset, fmt::format("{} bytes after the last of the {} entries", length - offset, count)};
  }
  return layout;
}

}  // namespace bbtree::detail
