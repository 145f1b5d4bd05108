// Measures the page checksum candidates on this machine: CRC32C (the
// crc32 instruction in three streams, and the portable slicing-by-8 table)
// against XXH3 (libxxhash), over what a page's checksum covers (all of it
// but its first 4 bytes), page after page, as the builder and the verifier
// run them.  `--megabytes 1` keeps the data in cache, as the builder's is.
// Prints one CSV line per candidate and page size: GB/s, median of several
// rounds.
//   bbtree-checksum-bench [--megabytes N] [--rounds N]
#include <bbtree/format/crc32c.h>

#include <xxhash.h>

#include "median.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

template <typename Checksum>
double gigabytes_per_second(const std::vector<unsigned char>& data, std::size_t page_size,
                            int rounds, Checksum&& checksum) {
  std::vector<double> rates;
  std::uint64_t sink = 0;
  // A round covers at least 256 MiB, passing over small data repeatedly.
  const std::size_t passes = std::max<std::size_t>(1, (std::size_t{256} << 20) / data.size());
  for (int round = 0; round < rounds; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t pass = 0; pass < passes; ++pass) {
      for (std::size_t offset = 0; offset + page_size <= data.size(); offset += page_size) {
        sink += checksum(data.data() + offset + 4, page_size - 4);
      }
    }
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    rates.push_back(static_cast<double>(passes * data.size()) / elapsed.count() / 1e9);
  }
  if (sink == 42) std::puts("");  // keeps the work
  return bbtree::bench::median(rates);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t megabytes = 256;
  int rounds = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--megabytes") == 0) megabytes = std::stoul(argv[i + 1]);
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::stoi(argv[i + 1]);
  }
  std::vector<unsigned char> data(megabytes << 20);
  std::mt19937_64 random(1);
  for (auto& byte : data) byte = static_cast<unsigned char>(random());
  std::printf("checksum,page_size,gb_per_s\n");
  for (std::size_t page_size : {512u, 1024u, 2048u, 4096u, 65536u}) {
    std::printf(
        "crc32c_hardware,%zu,%.2f\n", page_size,
        gigabytes_per_second(data, page_size, rounds, [](const unsigned char* p, std::size_t n) {
          return bbtree::format::crc32c(p, n);
        }));
    std::printf(
        "crc32c_portable,%zu,%.2f\n", page_size,
        gigabytes_per_second(data, page_size, rounds, [](const unsigned char* p, std::size_t n) {
          return bbtree::format::crc32c_portable(p, n);
        }));
    std::printf(
        "xxh3_64,%zu,%.2f\n", page_size,
        gigabytes_per_second(data, page_size, rounds, [](const unsigned char* p, std::size_t n) {
          return XXH3_64bits(p, n);
        }));
  }
}
