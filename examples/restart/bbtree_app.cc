// A lookup service that opens a bbtree index at start: u64 keys from stdin,
// "KEY<TAB>VALUE" or "KEY<TAB>-" on stdout.  Opening maps the file and reads
// its header; nothing is loaded, so the first answer costs a handful of page
// faults however large the index.
//   example-restart-bbtree INDEX < keys
#include "serve.h"

#include <bbtree/typed.h>

#include <cstdio>

int main(int argc, char** argv) try {
  const auto started = restart::monotonic_clock::now();
  if (argc != 2) {
    std::fprintf(stderr, "usage: example-restart-bbtree INDEX < keys\n");
    return 2;
  }
  const auto index = bbtree::typed_index<std::uint64_t, std::uint64_t>::open(argv[1]);
  char detail[96];
  std::snprintf(detail, sizeof detail, "index of %llu entries opened after %.3f ms",
                static_cast<unsigned long long>(index.size()),
                restart::milliseconds_since(started));
  return restart::serve_stdin("example-restart-bbtree", started, detail,
                              [&](std::uint64_t key) { return index.get(key); });
} catch (const bbtree::error& failure) {
  std::fprintf(stderr, "example-restart-bbtree: %s\n", failure.what());
  return 1;
}
