// What the two restart applications share: the clock started at main(), and
// the loop that answers lookups read from stdin.  They differ only in how
// they get their data ready, so that compare.sh measures exactly that.
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <system_error>

namespace restart {

// Monotonic: wall-clock adjustments must not enter a start-up time.
using monotonic_clock = std::chrono::steady_clock;

inline double milliseconds_since(monotonic_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(monotonic_clock::now() - start).count();
}

// A decimal u64 that is the whole of `text`.
inline std::optional<std::uint64_t> parse_u64(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, failure] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (failure != std::errc() || end != text.data() + text.size() || text.empty())
    return std::nullopt;
  return value;
}

// Answers every line of stdin, a u64 key, with "KEY<TAB>VALUE" or "KEY<TAB>-"
// on stdout.  Each answer is flushed at once, as a service answering one
// request at a time must, so that the first answer leaves the process as
// soon as it exists.  After the first answer, reports on stderr
//   APP: first answer after T ms (DETAIL)
// where T runs from `started` (the first thing main() did) to the return of
// the flush that wrote the first answer.  Returns main's exit status.
template <class Lookup>
int serve_stdin(const char* app, monotonic_clock::time_point started, const char* detail,
                Lookup&& lookup) {
  char* line = nullptr;
  std::size_t capacity = 0;
  std::uint64_t line_number = 0;
  ssize_t length = 0;
  int status = 0;
  while ((length = ::getline(&line, &capacity, stdin)) >= 0) {
    ++line_number;
    std::string_view text(line, static_cast<std::size_t>(length));
    if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    const std::optional<std::uint64_t> key = parse_u64(text);
    if (!key) {
      std::fprintf(stderr, "%s: stdin:%llu: not a u64 key: \"%.*s\"\n", app,
                   static_cast<unsigned long long>(line_number), static_cast<int>(text.size()),
                   text.data());
      status = 1;
      break;
    }
    const std::optional<std::uint64_t> value = lookup(*key);
    if (value) {
      std::printf("%llu\t%llu\n", static_cast<unsigned long long>(*key),
                  static_cast<unsigned long long>(*value));
    } else {
      std::printf("%llu\t-\n", static_cast<unsigned long long>(*key));
    }
    std::fflush(stdout);
    if (line_number == 1) {
      std::fprintf(stderr, "%s: first answer after %.3f ms (%s)\n", app,
                   milliseconds_since(started), detail);
    }
  }
  std::free(line);
  return status;
}

}  // namespace restart
