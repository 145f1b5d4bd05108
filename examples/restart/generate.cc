// Test data for the restart comparison, the same for a given seed on every
// machine:
//   example-restart-generate entries N [SEED]        N lines KEY<TAB>VALUE
//   example-restart-generate queries N COUNT [SEED]  COUNT lines KEY<TAB>ANSWER
// Entry i has key mix(base + i) and value mix(key), where mix is the
// splitmix64 finaliser, a bijection on u64: keys are distinct without
// checking, in no particular order, and spread over the whole u64 range.
// Queries alternate between a key of the N entries (ANSWER its value) and a
// key mix(base + i) with i >= N, which no entry has (ANSWER "-"), so a query
// file is also the expected output of a lookup service.
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <system_error>

namespace {

std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::optional<std::uint64_t> parse_u64(const char* text) {
  std::uint64_t value = 0;
  const char* end = text + std::strlen(text);
  const auto [stop, failure] = std::from_chars(text, end, value);
  if (failure != std::errc() || stop != end || stop == text) return std::nullopt;
  return value;
}

int usage() {
  std::fprintf(stderr,
               "usage: example-restart-generate entries N [SEED]\n"
               "       example-restart-generate queries N COUNT [SEED]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string_view command = argv[1];
  const bool queries = command == "queries";
  if (!queries && command != "entries") return usage();
  const int seed_argument = queries ? 4 : 3;
  if (argc > seed_argument + 1 || (queries && argc < 4)) return usage();
  const auto entries = parse_u64(argv[2]);
  const auto count = queries ? parse_u64(argv[3]) : std::optional<std::uint64_t>(0);
  const auto seed =
      argc > seed_argument ? parse_u64(argv[seed_argument]) : std::optional<std::uint64_t>(42);
  if (!entries || !count || !seed || (queries && *entries == 0)) return usage();

  // Distinct seeds give unrelated key sets: the base is itself mixed.
  const std::uint64_t base = mix(*seed);
  // Full buffering: these files are large and go to a pipe or a file.
  static char buffer[1 << 16];
  std::setvbuf(stdout, buffer, _IOFBF, sizeof buffer);
  if (!queries) {
    for (std::uint64_t i = 0; i < *entries; ++i) {
      const std::uint64_t key = mix(base + i);
      std::printf("%llu\t%llu\n", static_cast<unsigned long long>(key),
                  static_cast<unsigned long long>(mix(key)));
    }
  } else {
    // Which entries are asked for comes from its own stream, so that the
    // same seed asks for the same keys whatever COUNT is.
    std::uint64_t state = mix(*seed ^ 0x5ca1ab1eULL);
    for (std::uint64_t q = 0; q < *count; ++q) {
      state += 0x9e3779b97f4a7c15ULL;
      const std::uint64_t i = mix(state) % *entries;
      if (q % 2 == 0) {
        const std::uint64_t key = mix(base + i);
        std::printf("%llu\t%llu\n", static_cast<unsigned long long>(key),
                    static_cast<unsigned long long>(mix(key)));
      } else {
        std::printf("%llu\t-\n", static_cast<unsigned long long>(mix(base + *entries + i)));
      }
    }
  }
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::perror("example-restart-generate: writing stdout");
    return 3;
  }
  return 0;
}
