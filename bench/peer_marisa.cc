// marisa-trie, for byte-string keys: the trie holds the keys only; a value
// is found through the key's id in a separate file (u64 count, u64
// offsets[count + 1], value bytes) indexed by id.  The trie is read with
// Trie::mmap; "huge" advises its mapping MADV_HUGEPAGE and reads the value
// file from a 2 MiB-aligned copy.  Point lookups only: marisa's predictive
// search does not enumerate keys in byte order.
#include "mapped_file.h"

#include <marisa.h>
#include <unistd.h>

namespace bbtree::bench {
namespace {

template <data_kind K>
class marisa_peer {
 public:
  static constexpr bool supported = K == data_kind::str;
  static constexpr const char* name = "marisa";
  static constexpr peer_caps caps() { return peer_caps{.huge = true}; }
  static std::string config(bool huge) {
    return std::string(
               "default config (3 tries, text tail, weight order); values by key id in a side "
               "file") +
           (huge ? "; trie mapping advised MADV_HUGEPAGE, values copied to huge pages" : "");
  }
  static std::vector<std::string> files(const std::string& file) {
    return {file, file + ".values"};
  }

  void build(const dataset& d, bool sorted_input, const std::string& file) {
    marisa::Keyset keyset;
    for (std::size_t j = 0; j < d.size(); ++j) {
      const std::size_t i = sorted_input ? j : d.unsorted[j];
      keyset.push_back(d.keys[i].data(), d.keys[i].size());
    }
    marisa::Trie trie;
    trie.build(keyset);
    // Value of the key with id `id`: keyset[j].id() after build.
    std::vector<std::uint32_t> by_id(d.size());
    for (std::size_t j = 0; j < d.size(); ++j) {
      by_id[keyset[j].id()] = static_cast<std::uint32_t>(sorted_input ? j : d.unsorted[j]);
    }
    trie.save(file.c_str());
    file_writer out(file + ".values");
    const std::uint64_t count = d.size();
    out.write(&count, 8);
    std::uint64_t at = 8 + 8 * (count + 1);
    for (std::size_t id = 0; id <= count; ++id) {
      out.write(&at, 8);
      if (id < count) at += d.values[by_id[id]].size();
    }
    for (std::size_t id = 0; id < count; ++id)
      out.write(d.values[by_id[id]].data(), d.values[by_id[id]].size());
    out.finish();
  }

  std::uint64_t footprint(const std::string& file) {
    return file_size(file) + file_size(file + ".values");
  }

  void open(const std::string& file, bool huge) {
    trie_.clear();
    trie_.mmap(file.c_str());
    values_.open(file + ".values", huge);
    if (huge) advise_huge_mappings(file);
  }
  void close() {
    trie_.clear();
    values_.close();
  }

  smaps_usage memory_usage(const std::string& file) {
    smaps_usage a = smaps_for_file(file);
    const smaps_usage b = values_.usage();
    a.size_kb += b.size_kb;
    a.rss_kb += b.rss_kb;
    a.anon_huge_kb += b.anon_huge_kb;
    a.file_pmd_mapped_kb += b.file_pmd_mapped_kb;
    a.mappings += b.mappings;
    return a;
  }

  bool get(std::string_view key, std::uint64_t& digest) {
    agent_.set_query(key.data(), key.size());
    if (!trie_.lookup(agent_)) return false;
    const std::size_t id = agent_.key().id();
    const unsigned char* offsets = values_.data() + 8;
    const std::uint64_t begin = load_le64(offsets + 8 * id), end = load_le64(offsets + 8 * id + 8);
    digest = value_digest<K>(values_.data() + begin, end - begin);
    return true;
  }

 private:
  marisa::Trie trie_;
  marisa::Agent agent_;
  mapped_file values_;
};

}  // namespace

std::unique_ptr<peer_runner> make_marisa(data_kind kind) { return make_runner<marisa_peer>(kind); }

}  // namespace bbtree::bench
