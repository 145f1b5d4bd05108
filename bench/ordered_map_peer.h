// An in-memory ordered map rebuilt from the dataset at start: the shared
// adapter of std::map (peer_std_map.cc) and absl::btree_map
// (peer_absl_btree.cc).  Its "build" is the rebuild; its footprint is the
// heap it takes (mallinfo2 before and after).
#pragma once

#include "peer.h"

#include <array>
#include <string>

namespace bbtree::bench {

template <data_kind K>
struct map_types;
template <>
struct map_types<data_kind::u64> {
  using key = std::uint64_t;
  using value = std::uint64_t;
  static key make_key(std::string_view k) { return load_be64(k.data()); }
  static value make_value(std::string_view v) { return load_le64(v.data()); }
  static std::uint64_t digest(const value& v) { return v; }
};
template <>
struct map_types<data_kind::fix16> {
  using key = std::array<unsigned char, 16>;  // operator< is bytewise
  using value = std::uint64_t;
  static key make_key(std::string_view k) {
    key out;
    std::memcpy(out.data(), k.data(), 16);
    return out;
  }
  static value make_value(std::string_view v) { return load_le64(v.data()); }
  static std::uint64_t digest(const value& v) { return v; }
};
template <>
struct map_types<data_kind::str> {
  using key = std::string;
  using value = std::string;
  static std::string_view make_key(std::string_view k) { return k; }  // transparent lookup
  static value make_value(std::string_view v) { return std::string(v); }
  static std::uint64_t digest(const value& v) {
    return value_digest<data_kind::str>(v.data(), v.size());
  }
};

template <class Map, data_kind K>
class ordered_map_peer {
  using types = map_types<K>;

 public:
  static constexpr peer_caps caps() {
    peer_caps c;
    c.file = false;
    c.scans = true;
    return c;
  }

  void build(const dataset& d, bool sorted_input, const std::string&) {
    map_ = Map();
    const std::uint64_t before = heap_in_use();
    if (sorted_input) {
      for (std::size_t i = 0; i < d.size(); ++i) {
        map_.emplace_hint(map_.end(), typename types::key(types::make_key(d.keys[i])),
                          types::make_value(d.values[i]));
      }
    } else {
      for (const std::uint32_t i : d.unsorted) {
        map_.emplace(typename types::key(types::make_key(d.keys[i])),
                     types::make_value(d.values[i]));
      }
    }
    heap_bytes_ = heap_in_use() - before;
  }
  std::uint64_t footprint(const std::string&) { return heap_bytes_; }
  void open(const std::string&, bool) {}
  void close() {}
  smaps_usage memory_usage(const std::string&) { return {}; }

  bool get(std::string_view key, std::uint64_t& digest) const {
    const auto it = map_.find(types::make_key(key));
    if (it == map_.end()) return false;
    digest = types::digest(it->second);
    return true;
  }

  template <class F>
  void scan(std::string_view from, std::size_t n, F&& each) const {
    auto it = map_.lower_bound(types::make_key(from));
    for (; n > 0 && it != map_.end(); --n, ++it) each(types::digest(it->second));
  }

  template <class F>
  void scan_all(F&& each) const {
    for (const auto& entry : map_) each(types::digest(entry.second));
  }

 private:
  Map map_;
  std::uint64_t heap_bytes_ = 0;
};

}  // namespace bbtree::bench
