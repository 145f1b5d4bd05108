// std::map, rebuilt in memory from the dataset.
#include "ordered_map_peer.h"

#include <functional>
#include <map>

namespace bbtree::bench {
namespace {

template <data_kind K>
struct std_map_peer
    : ordered_map_peer<
          std::map<typename map_types<K>::key, typename map_types<K>::value, std::less<>>, K> {
  static constexpr bool supported = true;
  static constexpr const char* name = "std::map";
  static std::string config(bool) {
    return "in memory, rebuilt from the dataset; footprint = heap (mallinfo2)";
  }
};

}  // namespace

std::unique_ptr<peer_runner> make_std_map(data_kind kind) {
  return make_runner<std_map_peer>(kind);
}

}  // namespace bbtree::bench
