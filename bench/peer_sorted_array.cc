// A sorted array in a file, mapped and searched by binary search.
//
//   u64:   n records of {u64 key, u64 value}, native byte order
//   fix16: n records of {16 key bytes, u64 value}
//   str:   u64 n, u64 offsets[n + 1], then per entry {u32 key length,
//          u32 value length, key, value}; offsets[i] locates entry i
//
// The search is a branch-free lower bound (the strongest plain binary
// search); "huge" reads a copy in 2 MiB-aligned anonymous memory advised
// MADV_HUGEPAGE, as bbtree's copy_huge_pages does.
#include "mapped_file.h"

#include <algorithm>
#include <numeric>

namespace bbtree::bench {
namespace {

template <data_kind K>
class sorted_array_peer {
 public:
  static constexpr bool supported = true;
  static constexpr const char* name = "sorted-array";
  static constexpr peer_caps caps() { return peer_caps{.huge = true, .scans = true}; }
  static std::string config(bool huge) {
    return huge ? "copy in 2 MiB-aligned anonymous memory, MADV_HUGEPAGE"
                : "mmap MAP_SHARED read-only";
  }

  void build(const dataset& d, bool sorted_input, const std::string& file) {
    // From unsorted input the array must be sorted first: sort an index.
    std::vector<std::uint32_t> order;
    if (!sorted_input) {
      order.assign(d.unsorted.begin(), d.unsorted.end());
      std::sort(order.begin(), order.end(),
                [&](std::uint32_t a, std::uint32_t b) { return d.keys[a] < d.keys[b]; });
    }
    const auto index = [&](std::size_t i) -> std::size_t { return sorted_input ? i : order[i]; };
    file_writer out(file);
    const std::size_t n = d.size();
    if constexpr (K == data_kind::str) {
      const std::uint64_t count = n;
      out.write(&count, 8);
      std::uint64_t at = 8 + 8 * (n + 1);
      for (std::size_t i = 0; i <= n; ++i) {
        out.write(&at, 8);
        if (i < n) at += 8 + d.keys[index(i)].size() + d.values[index(i)].size();
      }
      for (std::size_t i = 0; i < n; ++i) {
        const std::string_view key = d.keys[index(i)], value = d.values[index(i)];
        const std::uint32_t lengths[2] = {static_cast<std::uint32_t>(key.size()),
                                          static_cast<std::uint32_t>(value.size())};
        out.write(lengths, 8);
        out.write(key.data(), key.size());
        out.write(value.data(), value.size());
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        const std::string_view key = d.keys[index(i)];
        if constexpr (K == data_kind::u64) {
          const std::uint64_t k = load_be64(key.data());
          out.write(&k, 8);
        } else {
          out.write(key.data(), 16);
        }
        out.write(d.values[index(i)].data(), 8);
      }
    }
    out.finish();
  }

  std::uint64_t footprint(const std::string& file) { return file_size(file); }

  void open(const std::string& file, bool huge) {
    file_.open(file, huge);
    if constexpr (K == data_kind::str) {
      count_ = load_le64(file_.data());
    } else {
      count_ = file_.size() / record_size;
    }
  }
  void close() { file_.close(); }
  smaps_usage memory_usage(const std::string&) { return file_.usage(); }

  bool get(std::string_view key, std::uint64_t& digest) const {
    const std::size_t i = lower_bound(key);
    if (i == count_ || !equal(i, key)) return false;
    digest = value_digest_at(i);
    return true;
  }

  template <class F>
  void scan(std::string_view from, std::size_t n, F&& each) const {
    for (std::size_t i = lower_bound(from); n > 0 && i < count_; --n, ++i) each(value_digest_at(i));
  }

  template <class F>
  void scan_all(F&& each) const {
    for (std::size_t i = 0; i < count_; ++i) each(value_digest_at(i));
  }

 private:
  static constexpr std::size_t record_size = K == data_kind::fix16 ? 24 : 16;

  // Entry i's key compared with `key`: < 0, 0, > 0.
  int compare(std::size_t i, std::string_view key) const {
    if constexpr (K == data_kind::u64) {
      const std::uint64_t a = load_le64(file_.data() + i * 16), b = load_be64(key.data());
      return (a > b) - (a < b);
    } else if constexpr (K == data_kind::fix16) {
      return std::memcmp(file_.data() + i * 24, key.data(), 16);
    } else {
      const std::string_view k = key_at(i);
      return k.compare(key);
    }
  }
  bool equal(std::size_t i, std::string_view key) const { return compare(i, key) == 0; }

  std::size_t lower_bound(std::string_view key) const {
    if constexpr (K == data_kind::u64) {
      // Branch-free on the integer key.
      const std::uint64_t target = load_be64(key.data());
      const unsigned char* base = file_.data();
      std::size_t first = 0, length = count_;
      while (length > 0) {
        const std::size_t half = length / 2;
        const bool less = load_le64(base + (first + half) * 16) < target;
        first = less ? first + half + 1 : first;
        length = less ? length - half - 1 : half;
      }
      return first;
    } else {
      std::size_t first = 0, length = count_;
      while (length > 0) {
        const std::size_t half = length / 2;
        if (compare(first + half, key) < 0) {
          first += half + 1;
          length -= half + 1;
        } else {
          length = half;
        }
      }
      return first;
    }
  }

  std::string_view key_at(std::size_t i) const {
    const unsigned char* entry = file_.data() + load_le64(file_.data() + 8 + 8 * i);
    std::uint32_t key_length;
    std::memcpy(&key_length, entry, 4);
    return {reinterpret_cast<const char*>(entry + 8), key_length};
  }

  std::uint64_t value_digest_at(std::size_t i) const {
    if constexpr (K == data_kind::str) {
      const unsigned char* entry = file_.data() + load_le64(file_.data() + 8 + 8 * i);
      std::uint32_t lengths[2];
      std::memcpy(lengths, entry, 8);
      return value_digest<K>(entry + 8 + lengths[0], lengths[1]);
    } else {
      return load_le64(file_.data() + i * record_size + record_size - 8);
    }
  }

  mapped_file file_;
  std::size_t count_ = 0;
};

}  // namespace

std::unique_ptr<peer_runner> make_sorted_array(data_kind kind) {
  return make_runner<sorted_array_peer>(kind);
}

}  // namespace bbtree::bench
