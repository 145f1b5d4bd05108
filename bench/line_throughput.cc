// bbtree-line-throughput: how fast this machine serves cache lines from
// random 1 KiB pages of a 256 MiB buffer, when the next pages' lines are
// prefetched ahead.  It bounds what a batch of lookups (get_many) can do:
// a batch asks for a handful of lines a key, and if the memory system
// serves a line every N ns whatever the prefetch distance, a batch costs
// at least N ns times its lines a key (bench/RESULTS.md, "Leaf tails").
//
//   bbtree-line-throughput LINES DISTANCE [huge]
//   bbtree-line-throughput chase MIB [huge]
//
// Reads the first LINES lines (1 to 16) of each of 2,000,000 random pages,
// prefetching those of the page DISTANCE pages ahead; `huge` advises the
// buffer for transparent huge pages (MADV_NOHUGEPAGE otherwise).  Prints ns
// per page and per line.
//
// `chase` instead follows a pointer from line to line of a MIB-MiB buffer,
// in one random cycle through all its lines, so that each load waits for
// the one before: the latency of one miss at that working-set size, which
// is what a lone lookup pays at each level its pages are not in cache.
#include "timing.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

namespace {

constexpr std::size_t line_bytes = 64;

// An anonymous buffer, advised for huge pages or against them, and
// touched so that its pages exist before the clock starts.
unsigned char* make_buffer(std::size_t bytes, bool huge) {
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    std::perror("bbtree-line-throughput: mmap");
    std::exit(1);
  }
  auto* buffer = static_cast<unsigned char*>(mapped);
  madvise(buffer, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  std::memset(buffer, 1, bytes);
  return buffer;
}

int chase(std::size_t mebibytes, bool huge) {
  const std::size_t bytes = mebibytes << 20;
  const std::size_t lines = bytes / line_bytes;
  unsigned char* buffer = make_buffer(bytes, huge);
  std::vector<std::uint32_t> order(lines);
  for (std::size_t i = 0; i < lines; ++i) order[i] = static_cast<std::uint32_t>(i);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(1));
  // Line order[i] holds the address of line order[i + 1]: one cycle.
  for (std::size_t i = 0; i < lines; ++i) {
    unsigned char* next = buffer + std::size_t{order[(i + 1) % lines]} * line_bytes;
    std::memcpy(buffer + std::size_t{order[i]} * line_bytes, &next, sizeof next);
  }
  constexpr std::size_t loads = 2000000;
  const unsigned char* at = buffer + std::size_t{order[0]} * line_bytes;
  const auto follow = [&at] {
    for (std::size_t i = 0; i < loads; ++i) std::memcpy(&at, at, sizeof(const unsigned char*));
  };
  follow();  // untimed first, so that the timed loads find what fits in cache there
  const auto start = std::chrono::steady_clock::now();
  follow();
  const double ns = bbtree::bench::nanoseconds_since(start) / loads;
  std::printf("chase %zu MiB%s: %.1f ns a dependent load (ended at line %zu)\n", mebibytes,
              huge ? " huge" : "", ns, static_cast<std::size_t>(at - buffer) / line_bytes);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: bbtree-line-throughput LINES DISTANCE [huge]\n"
                 "       bbtree-line-throughput chase MIB [huge]\n");
    return 2;
  }
  const bool huge = argc > 3 && std::string_view(argv[3]) == "huge";
  if (std::string_view(argv[1]) == "chase") {
    const long mebibytes = std::atol(argv[2]);
    if (mebibytes < 1 || mebibytes > 16384) {
      std::fprintf(stderr, "bbtree-line-throughput: chase MIB is 1 to 16384\n");
      return 2;
    }
    return chase(static_cast<std::size_t>(mebibytes), huge);
  }
  const int lines_per_page = std::atoi(argv[1]);
  const int distance = std::atoi(argv[2]);
  if (lines_per_page < 1 || lines_per_page > 16 || distance < 0) {
    std::fprintf(stderr, "bbtree-line-throughput: LINES is 1 to 16, DISTANCE at least 0\n");
    return 2;
  }
  constexpr std::size_t buffer_bytes = std::size_t{256} << 20;
  constexpr std::size_t page_bytes = 1024;
  constexpr std::size_t pages_read = 2000000;
  unsigned char* buffer = make_buffer(buffer_bytes, huge);
  std::mt19937_64 random(1);
  std::vector<std::uint32_t> order(pages_read);
  for (auto& page : order)
    page = static_cast<std::uint32_t>(random() % (buffer_bytes / page_bytes));

  std::uint64_t sum = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < pages_read; ++i) {
    if (i + distance < pages_read) {
      const unsigned char* ahead = buffer + std::size_t{order[i + distance]} * page_bytes;
      for (int line = 0; line < lines_per_page; ++line)
        __builtin_prefetch(ahead + line_bytes * line);
    }
    const unsigned char* page = buffer + std::size_t{order[i]} * page_bytes;
    for (int line = 0; line < lines_per_page; ++line) sum += page[line_bytes * line];
  }
  const double ns = bbtree::bench::nanoseconds_since(start) / pages_read;
  std::printf("lines %d distance %d%s: %.1f ns a page, %.2f ns a line (sum %llu)\n", lines_per_page,
              distance, huge ? " huge" : "", ns, ns / lines_per_page,
              static_cast<unsigned long long>(sum));
  return 0;
}
