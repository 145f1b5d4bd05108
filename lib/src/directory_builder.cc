#include "directory_builder.h"

#include "key_compare.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace bbtree::detail {

namespace directory = format::directory;

void directory_builder::add(std::string_view separator, std::uint32_t right_page,
                            std::uint32_t level, std::uint32_t ordinal, std::uint32_t index) {
  // right_page >= 1: the first level-1 page has no separator before it.
  const std::size_t boundary = right_page - 1;
  if (entries_.size() <= boundary) entries_.resize(boundary + 1);
  entry& filed = entries_[boundary];
  filed.separator.assign(separator);
  filed.ordinal = ordinal;
  filed.index = static_cast<std::uint16_t>(index);
  filed.level = static_cast<std::uint8_t>(level);
}

directory_builder::region directory_builder::encode(
    const std::array<std::uint32_t, format::max_height>& level_first_page,
    std::uint32_t level1_pages, std::uint32_t head_size) const {
  const std::size_t count = entries_.size();
  const bool complete =
      count != 0 && count + 1 == level1_pages &&
      std::all_of(entries_.begin(), entries_.end(), [](const entry& e) { return e.level >= 2; });
  if (!complete) {
    throw std::logic_error("the directory does not cover the level-1 pages");
  }
  // The separators ascend, so the prefix they all share is the one the
  // first and the last share.
  const std::string_view first = entries_.front().separator;
  const std::size_t prefix_length = common_prefix_length(first, entries_.back().separator);

  region encoded;
  encoded.head_size = head_size;
  encoded.prefix_length = static_cast<std::uint32_t>(prefix_length);
  encoded.bytes.assign(directory::region_length(count, head_size, prefix_length), '\0');
  auto* bytes = reinterpret_cast<unsigned char*>(encoded.bytes.data());
  unsigned char* locators = bytes + directory::locators_offset(count, head_size);
  for (std::size_t i = 0; i < count; ++i) {
    const entry& filed = entries_[i];
    directory::store_head(bytes + i * head_size,
                          std::string_view(filed.separator).substr(prefix_length), head_size);
    directory::store_locator(locators + i * directory::locator_size,
                             {level_first_page[filed.level] + filed.ordinal, filed.index});
  }
  std::memcpy(bytes + directory::prefix_offset(count, head_size), first.data(), prefix_length);
  return encoded;
}

}  // namespace bbtree::detail
