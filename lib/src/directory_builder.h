// The builder's side of the directory region (spec/FORMAT.md, section 12.3):
// the separators of the inner levels above level 1, collected as the
// streaming builder places them, and encoded once the page numbers of those
// levels and the separators' common prefix are known.
//
// It holds every separator above level 1 until finish: one a level-1 page,
// which is about one entry in (entries per leaf) x (children per level-1
// page), some 1/4,000 of the entries with 1 KiB pages.
#pragma once

#include <bbtree/format/layout.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bbtree::detail {

class directory_builder {
 public:
  // Separator `separator` was placed at `index` in the page of `level` (at
  // least 2) that is the `ordinal`-th of its level, and it divides level-1
  // page `right_page` - 1 from level-1 page `right_page`.  Separators reach
  // the upper levels out of key order (one waits at a level until the page
  // after it closes), so each is filed by the boundary it marks: the
  // boundaries between level-1 pages are in key order.
  void add(std::string_view separator, std::uint32_t right_page, std::uint32_t level,
           std::uint32_t ordinal, std::uint32_t index);

  struct region {
    std::string bytes;
    std::uint32_t head_size = 0;
    std::uint32_t prefix_length = 0;
  };
  // The region, once the tree is complete: `level_first_page` gives each
  // level's first page number; `level1_pages` is the number of level-1
  // pages, of which every boundary must have been added; heads of
  // `head_size` bytes (format::directory::is_valid_head_size).
  region encode(const std::array<std::uint32_t, format::max_height>& level_first_page,
                std::uint32_t level1_pages, std::uint32_t head_size) const;

 private:
  struct entry {
    std::string separator;
    std::uint32_t ordinal = 0;
    std::uint16_t index = 0;
    std::uint8_t level = 0;  // 0: not added yet
  };
  std::vector<entry> entries_;  // by boundary: entry i divides level-1 pages i and i + 1
};

}  // namespace bbtree::detail
