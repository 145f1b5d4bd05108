// Writes N u64 -> u64 entries to standard output, as bbtree-build reads
// them, fast enough that generating 100M entries takes seconds, not the
// minutes of awk.  For bench/external-sort.sh and bench/sorted-build.sh;
// not built by CMake (the scripts compile it).
//
//   gen_entries COUNT tsv|bin sorted|random [SEED]
//
// sorted: keys 1000, 2000, ...; random: a bijective mix of the line number
// (splitmix64's finalizer), so that every key is distinct and the order is
// random.  Values are the line number.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

namespace {

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

char* put_decimal(char* out, std::uint64_t number) {
  char digits[20];
  int count = 0;
  do {
    digits[count++] = static_cast<char>('0' + number % 10);
    number /= 10;
  } while (number != 0);
  while (count > 0) *out++ = digits[--count];
  return out;
}

char* put_le32(char* out, std::uint32_t number) {
  for (int i = 0; i < 4; ++i) *out++ = static_cast<char>(number >> (8 * i));
  return out;
}

void write_all(const char* data, std::size_t length) {
  while (length > 0) {
    const ssize_t written = ::write(STDOUT_FILENO, data, length);
    if (written <= 0) {
      std::perror("gen_entries: write");
      std::exit(1);
    }
    data += written;
    length -= static_cast<std::size_t>(written);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: gen_entries COUNT tsv|bin sorted|random [SEED]\n");
    return 2;
  }
  const std::uint64_t count = std::strtoull(argv[1], nullptr, 10);
  const bool binary = std::string_view(argv[2]) == "bin";
  const bool sorted = std::string_view(argv[3]) == "sorted";
  const std::uint64_t seed = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 1;
  std::vector<char> buffer(std::size_t{1} << 20);
  char* out = buffer.data();
  char* const flush_at = buffer.data() + buffer.size() - 64;
  for (std::uint64_t line = 1; line <= count; ++line) {
    const std::uint64_t key = sorted ? line * 1000 : mix(line + seed * 0x9e3779b97f4a7c15ull);
    if (binary) {
      out = put_le32(out, 8);
      for (int i = 7; i >= 0; --i) *out++ = static_cast<char>(key >> (8 * i));  // big-endian key
      out = put_le32(out, 8);
      for (int i = 0; i < 8; ++i)
        *out++ = static_cast<char>(line >> (8 * i));  // little-endian value
    } else {
      out = put_decimal(out, key);
      *out++ = '\t';
      out = put_decimal(out, line);
      *out++ = '\n';
    }
    if (out >= flush_at) {
      write_all(buffer.data(), static_cast<std::size_t>(out - buffer.data()));
      out = buffer.data();
    }
  }
  write_all(buffer.data(), static_cast<std::size_t>(out - buffer.data()));
  return 0;
}
