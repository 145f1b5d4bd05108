// The directory region of a file whose keys are searched as integers
// (spec/FORMAT.md, sections 12.3 and 15.7), arranged for lookups: a static
// B+-tree over its heads, whose bottom layer is the region's own heads,
// eight to a cache line, and whose few upper layers are built in memory.
// A lookup finds its level-1 page in one line a layer instead of searching
// the root and the pages above level 1, each a header to check and a block
// scan over up to 16 lines.
//
// A node is eight heads (the bottom's: one line of the region).  Node k of
// an upper layer holds, in slot j, the first head under its child j + 1,
// and its children are nodes 9k to 9k + 8 of the layer below; with `span`
// the entries under one such child (8 * 9^(layers below it - 1)), that is
// head (9k + j + 1) * span of the region.  Counting the slots <= the
// probe's head in each node is a descent whose last count, added to its
// node's first entry, is the number of heads <= the probe.  Upper layers
// hold 1/64 of the heads or so: 151 words for the 1,207 of 10M u64 keys.
// (Read in place from the heads instead, at a stride, a lookup touched
// eight lines a layer and ran 75.5 ns a lookup in cache against 60.5:
// bench/RESULTS.md, "Integer keys find their level-1 page through the
// directory".)
//
// The upper layers, the prefix and a padded copy of the last node are
// built by the first lookup, not at open: opening a mapped file maps none
// of its pages (lib/src/mapping.h), and reading the region at open mapped
// the header's page with it where the kernel caches files in large folios;
// a copy read with pread instead cost 10 us of page faults on fresh heap
// (bench/RESULTS.md, "The integer directory landed again").  Built once,
// shared read-only after.
//
// Invariant relied on: any bytes in the region give a count in [0, entries]
// and reads only inside the region and this object.  A region whose heads
// do not ascend (damage behind its checksum, which open does not read)
// gives a wrong count, hence a wrong level-1 page and a wrong answer, never
// a read outside the file; verification reports such a region.
#pragma once

#include <bbtree/format/layout.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>

namespace bbtree::detail {

class integer_directory {
 public:
  // Heads in a node, and children of an upper node.
  static constexpr std::uint32_t node_heads = 8;
  static constexpr std::uint32_t node_children = node_heads + 1;

  // Empty: lookups descend from the root.
  integer_directory() = default;
  ~integer_directory();
  integer_directory(const integer_directory&) = delete;
  integer_directory& operator=(const integer_directory&) = delete;

  // Over `region` in a file of `key_size`-byte keys.  Only heads of
  // format::directory::builder_word_head_size bytes over keys of at most 8
  // bytes make a tree; any other region (another writer's choice, or
  // damage) leaves it empty, and lookups descend from the root.  Reads
  // nothing of the region.
  void reset(const format::directory::region_view& region, std::uint32_t key_size);

  bool empty() const noexcept { return region_.entries == 0; }
  std::uint32_t entries() const noexcept { return region_.entries; }

  // A probe key's word (padded_word) as the heads order it: what follows the
  // directory's prefix, or the verdict that it lies below or above every
  // separator.
  struct probe {
    std::uint64_t head;
    // 0: the key starts with the prefix; -1 / +1: below / above them all.
    int outside;
  };
  probe probe_of(std::uint64_t word) const {
    const arrangement& tree = arranged();
    const std::uint64_t top = word & tree.prefix_mask;
    if (top != tree.prefix_word) return {0, top < tree.prefix_word ? -1 : 1};
    // A key shorter than the prefix, equal to its first bytes, is below it.
    if (tree.key_shorter_than_prefix) return {0, -1};
    return {tree.prefix_bits >= 64 ? 0 : word << tree.prefix_bits, 0};
  }

  // The number of separators <= the probe.
  [[gnu::always_inline]] std::uint32_t count_at_most(const probe& key) const {
    const std::uint32_t entries = region_.entries;
    if (key.outside != 0) return key.outside < 0 ? 0 : entries;
    const arrangement& tree = arranged();
    std::uint32_t node = 0;
    for (std::uint32_t layer = 0; layer < tree.upper_layer_count; ++layer) {
      const upper_layer& upper = tree.upper_layers[layer];
      const std::uint64_t* slots = tree.upper_slots() + upper.first_slot + node * node_heads;
      std::uint32_t child = 0;
#pragma GCC unroll 8
      for (std::uint32_t slot = 0; slot < node_heads; ++slot) child += slots[slot] <= key.head;
      // Slots past the last entry hold ~0, which a probe of ~0 counts: the
      // clamp keeps such a probe, and damage, in the layer below.
      node = std::min(node * node_children + child, upper.last_child);
    }
    // Heads are 8 bytes (reset): a constant stride, not region_.head_size.
    const unsigned char* heads = node < full_bottom_nodes()
                                     ? region_.heads + std::size_t{node} * line_bytes
                                     : tree.last_bottom_node.data();
    std::uint32_t count = 0;
#pragma GCC unroll 8
    for (std::uint32_t slot = 0; slot < node_heads; ++slot)
      count += format::load_be<std::uint64_t>(heads + 8 * slot) <= key.head;
    return std::min(node * node_heads + count, entries);
  }

  // Head `entry` (< entries()) as a word, ordered as probe::head is.
  std::uint64_t head(std::uint64_t entry) const noexcept {
    return format::load_be<std::uint64_t>(region_.heads + entry * 8);
  }

 private:
  static constexpr std::uint32_t line_bytes = node_heads * 8;
  // 2^32 entries need 10 layers above the bottom's 2^29 nodes.
  static constexpr std::uint32_t max_upper_layers = 10;
  struct upper_layer {
    std::uint32_t first_slot;  // in upper_slots()
    std::uint32_t last_child;  // the last node of the layer below
  };
  // What lookups read beside the region's full bottom nodes, in one
  // allocation, the upper layers' slots right after it.
  struct alignas(64) arrangement {
    // The prefix: its first min(prefix length, key size) bytes as a masked
    // word, and its length in bits after which the head starts.
    std::uint64_t prefix_mask = 0;
    std::uint64_t prefix_word = 0;
    std::uint32_t prefix_bits = 0;
    bool key_shorter_than_prefix = false;
    std::uint32_t upper_layer_count = 0;
    // From the top layer down; none when the heads fit one node.
    std::array<upper_layer, max_upper_layers> upper_layers{};
    // The last bottom node, if the heads do not fill it: a copy padded
    // with ~0 heads, so that no count reads past the heads.
    std::array<unsigned char, line_bytes> last_bottom_node{};

    const std::uint64_t* upper_slots() const noexcept {
      return reinterpret_cast<const std::uint64_t*>(this + 1);
    }
  };

  const arrangement& arranged() const {
    const arrangement* tree = arrangement_.load(std::memory_order_acquire);
    if (tree == nullptr) [[unlikely]]
      tree = arrange();
    return *tree;
  }
  // Builds the arrangement and publishes it; of lookups that race to build
  // it, the first to publish wins and the others free theirs.
  const arrangement* arrange() const;
  static void release(const arrangement* tree) noexcept;
  // Bottom nodes that the region holds whole.
  std::uint32_t full_bottom_nodes() const noexcept { return region_.entries / node_heads; }

  // No entries unless the region makes a tree (reset).
  format::directory::region_view region_;
  std::uint32_t key_size_ = 0;
  mutable std::atomic<const arrangement*> arrangement_{nullptr};
};

}  // namespace bbtree::detail
