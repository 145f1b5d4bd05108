// The same lookup service as bbtree_app.cc, as it is often written: at every
// start it rebuilds a std::map from the TSV file the index was built from,
// and answers only once the map is complete.  The loading is written to be
// fast (one read of the whole file, std::from_chars), so that compare.sh
// measures the cost of rebuilding, not of a slow parser.
//   example-restart-map ENTRIES.tsv < keys
#include "serve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <string_view>

namespace {

// The whole file, or an empty optional after reporting why not.
std::optional<std::string> read_file(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  struct stat status;
  if (fd < 0 || ::fstat(fd, &status) != 0) {
    std::fprintf(stderr, "example-restart-map: cannot open %s: %s\n", path, std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return std::nullopt;
  }
  std::string content(static_cast<std::size_t>(status.st_size), '\0');
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t got = ::read(fd, content.data() + done, content.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      std::fprintf(stderr, "example-restart-map: cannot read %s: %s\n", path,
                   got < 0 ? std::strerror(errno) : "shorter than its size");
      ::close(fd);
      return std::nullopt;
    }
    done += static_cast<std::size_t>(got);
  }
  ::close(fd);
  return content;
}

// Lines "KEY<TAB>VALUE" of decimal u64s, as bbtree-build reads them.
bool load_tsv(const char* path, std::map<std::uint64_t, std::uint64_t>& entries) {
  const std::optional<std::string> content = read_file(path);
  if (!content) return false;
  std::string_view rest = *content;
  std::uint64_t line_number = 0;
  while (!rest.empty()) {
    ++line_number;
    const std::size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    const std::size_t tab = line.find('\t');
    const auto key = restart::parse_u64(line.substr(0, tab));
    const auto value =
        tab == std::string_view::npos ? std::nullopt : restart::parse_u64(line.substr(tab + 1));
    if (!key || !value) {
      std::fprintf(stderr, "example-restart-map: %s:%llu: not KEY<TAB>VALUE of u64s\n", path,
                   static_cast<unsigned long long>(line_number));
      return false;
    }
    if (!entries.emplace(*key, *value).second) {
      std::fprintf(stderr, "example-restart-map: %s:%llu: duplicate key %llu\n", path,
                   static_cast<unsigned long long>(line_number),
                   static_cast<unsigned long long>(*key));
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const auto started = restart::monotonic_clock::now();
  if (argc != 2) {
    std::fprintf(stderr, "usage: example-restart-map ENTRIES.tsv < keys\n");
    return 2;
  }
  std::map<std::uint64_t, std::uint64_t> entries;
  if (!load_tsv(argv[1], entries)) return 1;
  char detail[96];
  std::snprintf(detail, sizeof detail, "std::map of %zu entries built after %.3f ms",
                entries.size(), restart::milliseconds_since(started));
  return restart::serve_stdin("example-restart-map", started, detail,
                              [&](std::uint64_t key) -> std::optional<std::uint64_t> {
                                const auto found = entries.find(key);
                                if (found == entries.end()) return std::nullopt;
                                return found->second;
                              });
}
