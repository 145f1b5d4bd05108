// Builds an index with the installed library and looks a key up.
#include <bbtree/builder.h>
#include <bbtree/typed.h>
#include <bbtree/version.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  bbtree::build_options options;
  options.keys = bbtree::key_kind::u64;
  options.values = bbtree::value_kind::u64;
  options.overwrite = true;
  bbtree::builder writer(argv[1], options);
  for (std::uint64_t key = 0; key < 1000; ++key)
    writer.add(bbtree::u64_key(key), bbtree::u64_value(key * key));
  writer.finish();
  const auto index = bbtree::typed_index<std::uint64_t, std::uint64_t>::open(argv[1]);
  const auto value = index.get(12);
  std::printf("bbtree %s: 12 -> %llu\n", bbtree::version_string,
              static_cast<unsigned long long>(value.value_or(0)));
  return value == 144u ? 0 : 1;
}
