#include <bbtree/detail/integer_directory.h>

#include "code_layout.h"

#include <algorithm>
#include <cstring>

namespace bbtree::detail {

BBTREE_FIRST_ANSWER integer_directory::integer_directory(
    const format::directory::region_view& region, const format::directory::region_view& readable,
    std::uint32_t key_size)
    : heads_(region.heads), entries_(region.entries) {
  // Readers reach this only for heads of 8 bytes over keys of at most 8
  // bytes (reader_core checks both); anything else leaves it empty.
  if (region.head_size != format::directory::builder_word_head_size || key_size > 8 ||
      entries_ == 0) {
    entries_ = 0;
    return;
  }
  const std::size_t prefix_length = readable.prefix.size();
  const std::size_t compared = std::min<std::size_t>(prefix_length, key_size);
  prefix_bits_ = static_cast<std::uint32_t>(8 * std::min<std::size_t>(prefix_length, 8));
  prefix_mask_ = compared == 0 ? 0 : ~std::uint64_t{0} << (64 - 8 * compared);
  unsigned char prefix_bytes[8] = {};
  if (compared != 0) std::memcpy(prefix_bytes, readable.prefix.data(), compared);
  prefix_word_ = format::load_be<std::uint64_t>(prefix_bytes) & prefix_mask_;
  key_shorter_than_prefix_ = key_size < prefix_length;

  // The bottom layer: the region's heads; a partial last node is copied and
  // padded, so that no count reads past the heads.
  full_bottom_nodes_ = entries_ / node_heads;
  const std::uint32_t bottom_nodes = (entries_ + node_heads - 1) / node_heads;
  last_bottom_node_.fill(0xFF);
  std::memcpy(last_bottom_node_.data(),
              readable.heads + std::size_t{full_bottom_nodes_} * line_bytes,
              std::size_t{entries_ - full_bottom_nodes_ * node_heads} * 8);

  // The upper layers, bottom up: while the layer below has more than one
  // node, one node above for every node_children of them.  Each child of
  // a node at this layer spans `span` entries.
  std::uint32_t layer_nodes[max_upper_layers];
  std::uint64_t layer_span[max_upper_layers];
  std::uint32_t below = bottom_nodes;
  std::uint64_t span = node_heads;
  std::size_t slots = 0;
  while (below > 1) {
    const std::uint32_t nodes = (below + node_children - 1) / node_children;
    layer_nodes[upper_layer_count_] = nodes;
    layer_span[upper_layer_count_] = span;
    upper_layers_[upper_layer_count_].last_child = below - 1;
    ++upper_layer_count_;
    slots += std::size_t{nodes} * node_heads;
    below = nodes;
    span *= node_children;
  }
  std::reverse(layer_nodes, layer_nodes + upper_layer_count_);
  std::reverse(layer_span, layer_span + upper_layer_count_);
  std::reverse(upper_layers_.begin(), upper_layers_.begin() + upper_layer_count_);
  upper_slots_ = std::make_unique_for_overwrite<std::uint64_t[]>(slots);
  std::size_t first_slot = 0;
  for (std::uint32_t layer = 0; layer < upper_layer_count_; ++layer) {
    upper_layers_[layer].first_slot = static_cast<std::uint32_t>(first_slot);
    std::uint64_t* slot = upper_slots_.get() + first_slot;
    for (std::uint64_t node = 0; node < layer_nodes[layer]; ++node) {
      for (std::uint64_t child = 1; child < node_children; ++child) {
        const std::uint64_t entry = (node * node_children + child) * layer_span[layer];
        *slot++ = entry < entries_ ? format::load_be<std::uint64_t>(readable.head(entry))
                                   : ~std::uint64_t{0};
      }
    }
    first_slot += std::size_t{layer_nodes[layer]} * node_heads;
  }
}

}  // namespace bbtree::detail
