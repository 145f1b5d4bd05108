#include "peer.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace bbtree::bench {

void fail(const std::string& message) {
  std::fprintf(stderr, "\nbbtree-bench: FATAL: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

std::uint64_t file_size(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) fail("stat " + path + ": " + std::strerror(errno));
  return static_cast<std::uint64_t>(st.st_size);
}

std::uint64_t heap_in_use() {
  const struct mallinfo2 info = ::mallinfo2();
  return info.uordblks + info.hblkhd;
}

void huge_copy::load(const std::string& path) {
  reset();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("open " + path + ": " + std::strerror(errno));
  size = file_size(path);
  constexpr std::size_t huge = 2u << 20;
  mapped = (size + huge - 1) / huge * huge;
  // Over-allocate by 2 MiB and trim, so the copy starts on a 2 MiB boundary.
  void* raw =
      ::mmap(nullptr, mapped + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) fail("mmap anonymous: " + std::string(std::strerror(errno)));
  const auto base = reinterpret_cast<std::uintptr_t>(raw);
  const auto aligned = (base + huge - 1) / huge * huge;
  if (aligned > base) ::munmap(raw, aligned - base);
  const auto tail = base + mapped + huge - (aligned + mapped);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + mapped), tail);
  data = reinterpret_cast<void*>(aligned);
  ::madvise(data, mapped, MADV_HUGEPAGE);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t got =
        ::pread(fd, static_cast<char*>(data) + done, size - done, static_cast<off_t>(done));
    if (got <= 0) fail("read " + path + ": " + std::strerror(errno));
    done += static_cast<std::size_t>(got);
  }
  ::close(fd);
  ::mprotect(data, mapped, PROT_READ);
}

void huge_copy::reset() noexcept {
  if (data != nullptr) ::munmap(data, mapped);
  data = nullptr;
  size = mapped = 0;
}

int advise_huge_mappings(const std::string& path) {
  int advised = 0;
  for (const address_range& r : mappings_of_file(path)) {
    if (::madvise(reinterpret_cast<void*>(r.begin), r.end - r.begin, MADV_HUGEPAGE) == 0) ++advised;
  }
  return advised;
}

}  // namespace bbtree::bench
