#include <bbtree/detail/integer_directory.h>

#include "code_layout.h"

#include <cstring>
#include <new>

namespace bbtree::detail {

integer_directory::~integer_directory() { release(arrangement_.load(std::memory_order_acquire)); }

void integer_directory::release(const arrangement* tree) noexcept {
  if (tree == nullptr) return;
  tree->~arrangement();
  ::operator delete (const_cast<arrangement*>(tree), std::align_val_t{alignof(arrangement)});
}

BBTREE_FIRST_ANSWER void integer_directory::reset(const format::directory::region_view& region,
                                                  std::uint32_t key_size) {
  // Out of line and kept off the way to the first answer (code_layout.h):
  // called only if a lookup came before.
  if (const arrangement* built = arrangement_.exchange(nullptr, std::memory_order_acq_rel))
    release(built);
  const bool word_heads =
      region.head_size == format::directory::builder_word_head_size && key_size <= 8;
  region_ = word_heads ? region : format::directory::region_view{};
  key_size_ = key_size;
}

BBTREE_FIRST_ANSWER const integer_directory::arrangement* integer_directory::arrange() const {
  // The upper layers, bottom up: while the layer below has more than one
  // node, one node above for every node_children of them.  Each child of
  // a node at this layer spans `span` entries.
  std::uint32_t layer_nodes[max_upper_layers];
  std::uint64_t layer_span[max_upper_layers];
  upper_layer layers[max_upper_layers];
  std::uint32_t layer_count = 0;
  const std::uint32_t entries = region_.entries;
  std::uint32_t below = (entries + node_heads - 1) / node_heads;
  std::uint64_t span = node_heads;
  std::size_t slots = 0;
  while (below > 1) {
    const std::uint32_t nodes = (below + node_children - 1) / node_children;
    layer_nodes[layer_count] = nodes;
    layer_span[layer_count] = span;
    layers[layer_count].last_child = below - 1;
    ++layer_count;
    slots += std::size_t{nodes} * node_heads;
    below = nodes;
    span *= node_children;
  }
  std::reverse(layer_nodes, layer_nodes + layer_count);
  std::reverse(layer_span, layer_span + layer_count);
  std::reverse(layers, layers + layer_count);

  void* memory = ::operator new (sizeof(arrangement) + slots * sizeof(std::uint64_t),
                                 std::align_val_t{alignof(arrangement)});
  auto* tree = new (memory) arrangement;
  tree->upper_layer_count = layer_count;
  auto* slot = const_cast<std::uint64_t*>(tree->upper_slots());
  std::size_t first_slot = 0;
  for (std::uint32_t layer = 0; layer < layer_count; ++layer) {
    layers[layer].first_slot = static_cast<std::uint32_t>(first_slot);
    tree->upper_layers[layer] = layers[layer];
    for (std::uint64_t node = 0; node < layer_nodes[layer]; ++node) {
      for (std::uint64_t child = 1; child < node_children; ++child) {
        const std::uint64_t entry = (node * node_children + child) * layer_span[layer];
        *slot++ = entry < entries ? head(entry) : ~std::uint64_t{0};
      }
    }
    first_slot += std::size_t{layer_nodes[layer]} * node_heads;
  }

  tree->last_bottom_node.fill(0xFF);
  const std::uint32_t full_nodes = full_bottom_nodes();
  if (entries != 0)
    std::memcpy(tree->last_bottom_node.data(), region_.heads + std::size_t{full_nodes} * line_bytes,
                std::size_t{entries - full_nodes * node_heads} * 8);

  const std::size_t prefix_length = region_.prefix.size();
  const std::size_t compared = std::min<std::size_t>(prefix_length, key_size_);
  tree->prefix_bits = static_cast<std::uint32_t>(8 * std::min<std::size_t>(prefix_length, 8));
  tree->prefix_mask = compared == 0 ? 0 : ~std::uint64_t{0} << (64 - 8 * compared);
  unsigned char prefix_bytes[8] = {};
  if (compared != 0) std::memcpy(prefix_bytes, region_.prefix.data(), compared);
  tree->prefix_word = format::load_be<std::uint64_t>(prefix_bytes) & tree->prefix_mask;
  tree->key_shorter_than_prefix = key_size_ < prefix_length;

  const arrangement* published = nullptr;
  if (arrangement_.compare_exchange_strong(published, tree, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
    return tree;
  }
  release(tree);
  return published;
}

}  // namespace bbtree::detail
