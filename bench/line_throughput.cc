// bbtree-line-throughput: how fast this machine serves cache lines from
// random 1 KiB pages of a 256 MiB buffer, when the next pages' lines are
// prefetched ahead.  It bounds what a batch of lookups (get_many) can do:
// a batch asks for a handful of lines a key, and if the memory system
// serves a line every N ns whatever the prefetch distance, a batch costs
// at least N ns times its lines a key (bench/RESULTS.md, "Leaf tails").
//
//   bbtree-line-throughput LINES DISTANCE [huge]
//
// Reads the first LINES lines (1 to 16) of each of 2,000,000 random pages,
// prefetching those of the page DISTANCE pages ahead; `huge` advises the
// buffer for transparent huge pages (MADV_NOHUGEPAGE otherwise).  Prints ns
// per page and per line.
#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bbtree-line-throughput LINES DISTANCE [huge]\n");
    return 2;
  }
  const int lines_per_page = std::atoi(argv[1]);
  const int distance = std::atoi(argv[2]);
  const bool huge = argc > 3 && std::string_view(argv[3]) == "huge";
  if (lines_per_page < 1 || lines_per_page > 16 || distance < 0) {
    std::fprintf(stderr, "bbtree-line-throughput: LINES is 1 to 16, DISTANCE at least 0\n");
    return 2;
  }
  constexpr std::size_t buffer_bytes = std::size_t{256} << 20;
  constexpr std::size_t page_bytes = 1024;
  constexpr std::size_t pages_read = 2000000;
  void* mapped =
      mmap(nullptr, buffer_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    std::perror("bbtree-line-throughput: mmap");
    return 1;
  }
  auto* buffer = static_cast<unsigned char*>(mapped);
  madvise(buffer, buffer_bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  std::memset(buffer, 1, buffer_bytes);
  std::mt19937_64 random(1);
  std::vector<std::uint32_t> order(pages_read);
  for (auto& page : order)
    page = static_cast<std::uint32_t>(random() % (buffer_bytes / page_bytes));

  std::uint64_t sum = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < pages_read; ++i) {
    if (i + distance < pages_read) {
      const unsigned char* ahead = buffer + std::size_t{order[i + distance]} * page_bytes;
      for (int line = 0; line < lines_per_page; ++line) __builtin_prefetch(ahead + 64 * line);
    }
    const unsigned char* page = buffer + std::size_t{order[i]} * page_bytes;
    for (int line = 0; line < lines_per_page; ++line) sum += page[64 * line];
  }
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
      pages_read;
  std::printf("lines %d distance %d%s: %.1f ns a page, %.2f ns a line (sum %llu)\n", lines_per_page,
              distance, huge ? " huge" : "", ns, ns / lines_per_page,
              static_cast<unsigned long long>(sum));
  return 0;
}
