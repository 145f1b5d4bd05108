// Builds N sorted u64 -> u64 entries through builder::add, the library's
// streaming path with no text parsing: the API side of bench/sorted-build.sh
// (which compiles it; CMake does not build it).
//
//   api_build COUNT OUT
#include <bbtree/builder.h>
#include <bbtree/key_codec.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: api_build COUNT OUT\n");
    return 2;
  }
  const std::uint64_t count = std::strtoull(argv[1], nullptr, 10);
  const auto start = std::chrono::steady_clock::now();
  bbtree::build_options options;
  options.keys = bbtree::key_kind::u64;
  options.values = bbtree::value_kind::u64;
  options.overwrite = true;
  bbtree::builder writer(argv[2], options);
  for (std::uint64_t line = 1; line <= count; ++line) {
    writer.add(bbtree::u64_key(line * 1000), bbtree::u64_value(line));
  }
  const bbtree::build_summary summary = writer.finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%llu entries, %llu bytes, %.3f s\n",
              static_cast<unsigned long long>(summary.entries),
              static_cast<unsigned long long>(summary.file_size), seconds);
  return 0;
}
