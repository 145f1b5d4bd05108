// absl::btree_map, rebuilt in memory from the dataset.
#include "ordered_map_peer.h"

#include <absl/container/btree_map.h>

#include <functional>

namespace bbtree::bench {
namespace {

template <data_kind K>
struct absl_btree_peer
    : ordered_map_peer<
          absl::btree_map<typename map_types<K>::key, typename map_types<K>::value, std::less<>>,
          K> {
  static constexpr bool supported = true;
  static constexpr const char* name = "absl::btree_map";
  static std::string config(bool) {
    return "in memory, rebuilt from the dataset; footprint = heap (mallinfo2)";
  }
};

}  // namespace

std::unique_ptr<peer_runner> make_absl_btree(data_kind kind) {
  return make_runner<absl_btree_peer>(kind);
}

}  // namespace bbtree::bench
