// A decoded page header: what reader_core::page() returns after checking
// it, and what a cursor keeps of its current leaf so that moving within the
// leaf and reading its values decode nothing.
#pragma once

#include <bbtree/format/layout.h>

#include <cstdint>
#include <string_view>

namespace bbtree::detail {

// A page's header fields and section offsets, checked against the page size.
struct page_view {
  const unsigned char* bytes = nullptr;
  std::uint32_t number = 0;
  format::page_kind kind = format::page_kind::leaf;
  std::uint32_t level = 0;
  std::uint32_t inline_width = 8;
  std::uint32_t count = 0;
  std::uint32_t prefix_length = 0;
  std::uint64_t header_word = 0;  // first_rank (leaf) or first_child (inner)
  std::uint32_t heap_end = 0;
  format::page_sections sections;

  std::string_view prefix() const {
    return {reinterpret_cast<const char*>(bytes + sections.prefix), prefix_length};
  }
  std::uint64_t inline_key(std::uint32_t index) const {
    return format::load_inline_key(bytes + sections.inline_keys, index, inline_width);
  }
  // The tail of key `index` (fixed keys with sections.tail_width > 0).
  std::uint64_t tail(std::uint32_t index) const {
    return format::load_tail(bytes, sections.key_data, sections.tail_width, index);
  }
};

}  // namespace bbtree::detail
