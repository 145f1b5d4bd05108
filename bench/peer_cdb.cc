// tinycdb (libcdb): a constant hash database, point lookups only.  Built
// with cdb_make_add in input order (a hash table: sorted and unsorted input
// cost the same); read with cdb_init, which maps the file, and cdb_find.
// "huge" advises that mapping MADV_HUGEPAGE.  cdb files are limited to 4 GiB.
#include "peer.h"

#include <cdb.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace bbtree::bench {
namespace {

template <data_kind K>
class cdb_peer {
 public:
  static constexpr bool supported = true;
  static constexpr const char* name = "tinycdb";
  static constexpr peer_caps caps() { return peer_caps{.huge = true}; }
  static std::string config(bool huge) {
    return std::string("cdb_find on the mapping made by cdb_init") +
           (huge ? ", advised MADV_HUGEPAGE" : "");
  }

  ~cdb_peer() { close(); }

  void build(const dataset& d, bool sorted_input, const std::string& file) {
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail("create " + file + ": " + std::strerror(errno));
    struct cdb_make maker;
    if (cdb_make_start(&maker, fd) != 0) fail("cdb_make_start");
    for (std::size_t j = 0; j < d.size(); ++j) {
      const std::size_t i = sorted_input ? j : d.unsorted[j];
      if (cdb_make_add(&maker, d.keys[i].data(), static_cast<unsigned>(d.keys[i].size()),
                       d.values[i].data(), static_cast<unsigned>(d.values[i].size())) != 0) {
        fail("cdb_make_add: " + std::string(std::strerror(errno)));
      }
    }
    if (cdb_make_finish(&maker) != 0) fail("cdb_make_finish: " + std::string(std::strerror(errno)));
    ::close(fd);
  }

  std::uint64_t footprint(const std::string& file) { return file_size(file); }

  void open(const std::string& file, bool huge) {
    close();
    fd_ = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail("open " + file + ": " + std::strerror(errno));
    if (cdb_init(&cdb_, fd_) != 0) fail("cdb_init " + file);
    open_ = true;
    if (huge) ::madvise(const_cast<unsigned char*>(cdb_.cdb_mem), cdb_.cdb_fsize, MADV_HUGEPAGE);
  }

  void close() {
    if (open_) cdb_free(&cdb_);
    if (fd_ >= 0) ::close(fd_);
    open_ = false;
    fd_ = -1;
  }

  smaps_usage memory_usage(const std::string&) {
    return smaps_for_range(cdb_.cdb_mem, cdb_.cdb_fsize);
  }

  bool get(std::string_view key, std::uint64_t& digest) {
    const int rc = cdb_find(&cdb_, key.data(), static_cast<unsigned>(key.size()));
    if (rc < 0) fail("cdb_find: corrupt database");
    if (rc == 0) return false;
    digest = value_digest<K>(cdb_getdata(&cdb_), cdb_datalen(&cdb_));
    return true;
  }

 private:
  struct cdb cdb_ {};
  int fd_ = -1;
  bool open_ = false;
};

}  // namespace

std::unique_ptr<peer_runner> make_cdb(data_kind kind) { return make_runner<cdb_peer>(kind); }

}  // namespace bbtree::bench
