// mtbl: an SSTable (sorted string table) written by mtbl_writer, from
// sorted input directly and from unsorted input through mtbl_sorter; read by
// mtbl_reader (which maps the file).  Compression is set to
// MTBL_COMPRESSION_NONE: mtbl's default is zlib (mtbl_writer(3)), which
// would make every lookup inflate a block.  Block size: the default 8 KiB.
// Lookups use mtbl_source_get (one iterator per lookup, as the API
// provides); each scan seeks a fresh mtbl_source_iter.  (Re-seeking one
// long-lived iterator returned wrong entries with mtbl 1.3.0: the answer
// check caught it.)
#include "peer.h"

#include <mtbl.h>
#include <unistd.h>

namespace bbtree::bench {
namespace {

void check(mtbl_res rc, const char* what) {
  if (rc != mtbl_res_success) fail(std::string("mtbl: ") + what + " failed");
}

void refuse_duplicates(void*, const uint8_t*, size_t, const uint8_t*, size_t, const uint8_t*,
                       size_t, uint8_t**, size_t*) {
  fail("mtbl: duplicate key in the dataset");
}

template <data_kind K>
class mtbl_peer {
 public:
  static constexpr bool supported = true;
  static constexpr const char* name = "mtbl";
  static constexpr peer_caps caps() { return peer_caps{.huge = true, .scans = true}; }
  static std::string config(bool huge) {
    return std::string("MTBL_COMPRESSION_NONE (default is zlib), 8 KiB blocks") +
           (huge ? ", its mapping advised MADV_HUGEPAGE" : "");
  }

  ~mtbl_peer() { close(); }

  void build(const dataset& d, bool sorted_input, const std::string& file) {
    ::unlink(file.c_str());
    mtbl_writer_options* options = mtbl_writer_options_init();
    mtbl_writer_options_set_compression(options, MTBL_COMPRESSION_NONE);
    mtbl_writer* writer = mtbl_writer_init(file.c_str(), options);
    mtbl_writer_options_destroy(&options);
    if (writer == nullptr) fail("mtbl: cannot create " + file);
    if (sorted_input) {
      for (std::size_t i = 0; i < d.size(); ++i) {
        check(mtbl_writer_add(writer, bytes(d.keys[i]), d.keys[i].size(), bytes(d.values[i]),
                              d.values[i].size()),
              "writer_add");
      }
    } else {
      mtbl_sorter_options* sort_options = mtbl_sorter_options_init();
      mtbl_sorter_options_set_merge_func(sort_options, refuse_duplicates, nullptr);
      const std::string directory = file.substr(0, file.rfind('/') + 1);
      mtbl_sorter_options_set_temp_dir(sort_options, directory.empty() ? "." : directory.c_str());
      mtbl_sorter* sorter = mtbl_sorter_init(sort_options);
      mtbl_sorter_options_destroy(&sort_options);
      for (const std::uint32_t i : d.unsorted) {
        check(mtbl_sorter_add(sorter, bytes(d.keys[i]), d.keys[i].size(), bytes(d.values[i]),
                              d.values[i].size()),
              "sorter_add");
      }
      check(mtbl_sorter_write(sorter, writer), "sorter_write");
      mtbl_sorter_destroy(&sorter);
    }
    mtbl_writer_destroy(&writer);
  }

  std::uint64_t footprint(const std::string& file) { return file_size(file); }

  void open(const std::string& file, bool huge) {
    close();
    reader_ = mtbl_reader_init(file.c_str(), nullptr);
    if (reader_ == nullptr) fail("mtbl: cannot open " + file);
    source_ = mtbl_reader_source(reader_);
    if (huge) advise_huge_mappings(file);
  }

  void close() {
    if (reader_ != nullptr) mtbl_reader_destroy(&reader_);
    source_ = nullptr;
  }

  smaps_usage memory_usage(const std::string& file) { return smaps_for_file(file); }

  bool get(std::string_view key, std::uint64_t& digest) const {
    mtbl_iter* it = mtbl_source_get(source_, bytes(key), key.size());
    const uint8_t *k, *v;
    size_t k_size, v_size;
    const bool found =
        it != nullptr && mtbl_iter_next(it, &k, &k_size, &v, &v_size) == mtbl_res_success;
    if (found) digest = value_digest<K>(v, v_size);
    mtbl_iter_destroy(&it);
    return found;
  }

  template <class F>
  void scan(std::string_view from, std::size_t n, F&& each) const {
    mtbl_iter* it = mtbl_source_iter(source_);
    check(mtbl_iter_seek(it, bytes(from), from.size()), "iter_seek");
    const uint8_t *k, *v;
    size_t k_size, v_size;
    for (; n > 0 && mtbl_iter_next(it, &k, &k_size, &v, &v_size) == mtbl_res_success; --n) {
      each(value_digest<K>(v, v_size));
    }
    mtbl_iter_destroy(&it);
  }

  template <class F>
  void scan_all(F&& each) const {
    mtbl_iter* it = mtbl_source_iter(source_);
    const uint8_t *k, *v;
    size_t k_size, v_size;
    while (mtbl_iter_next(it, &k, &k_size, &v, &v_size) == mtbl_res_success)
      each(value_digest<K>(v, v_size));
    mtbl_iter_destroy(&it);
  }

 private:
  static const uint8_t* bytes(std::string_view s) {
    return reinterpret_cast<const uint8_t*>(s.data());
  }

  mtbl_reader* reader_ = nullptr;
  const mtbl_source* source_ = nullptr;
};

}  // namespace

std::unique_ptr<peer_runner> make_mtbl(data_kind kind) { return make_runner<mtbl_peer>(kind); }

}  // namespace bbtree::bench
