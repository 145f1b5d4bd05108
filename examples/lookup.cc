// The README's example: open an index and look keys up.
//   example-lookup INDEX KEY...
#include <bbtree/typed.h>

#include <cstdio>

int main(int argc, char** argv) try {
  if (argc < 3) {
    std::fprintf(stderr, "usage: example-lookup INDEX KEY...\n");
    return 2;
  }
  auto index = bbtree::typed_index<std::string_view, std::uint64_t>::open(argv[1]);
  int missing = 0;
  for (int i = 2; i < argc; ++i) {
    if (auto value = index.get(argv[i])) {
      std::printf("%s\t%llu\n", argv[i], static_cast<unsigned long long>(*value));
    } else {
      std::printf("%s\tnot found\n", argv[i]);
      ++missing;
    }
  }
  return missing == 0 ? 0 : 1;
} catch (const bbtree::error& failure) {
  std::fprintf(stderr, "example-lookup: %s\n", failure.what());
  return 1;
}
