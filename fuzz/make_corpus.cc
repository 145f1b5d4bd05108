// fuzz_make_corpus DIR: writes the seed corpus of every target into
// DIR/<target>/ (the build does this into <build>/fuzz/corpus).  Seeds are
// generated, not committed: they follow the format as the builder writes
// it today.  Only fuzz/regressions/ is committed.
#include "fuzz_support.h"

#include <cstdio>
#include <fstream>

namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "fuzz_make_corpus: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

void write_all(const fs::path& directory, const std::vector<std::string>& seeds,
               const char* prefix) {
  fs::create_directories(directory);
  char name[64];
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    std::snprintf(name, sizeof(name), "%s-%03zu", prefix, i);
    write(directory / name, seeds[i]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_corpus DIR\n");
    return 2;
  }
  const fs::path root = argv[1];
  const fs::path scratch = bbtree::fuzz::scratch_directory();
  std::size_t count = 0;

  // Files: the same seeds for the three targets that read files.
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& shape : bbtree::fuzz::seed_shapes()) {
    files.emplace_back(shape.name(), bbtree::fuzz::make_seed_file(shape, scratch));
  }
  // And the first bytes of one, cut where the open checks change.
  const std::string& sample = files.front().second;
  files.emplace_back("cut-empty", "");
  files.emplace_back("cut-magic", sample.substr(0, 8));
  files.emplace_back("cut-header", sample.substr(0, 512));
  files.emplace_back("cut-one-byte-short", sample.substr(0, sample.size() - 1));
  for (const char* target : {"open_query", "verify", "mutated_file"}) {
    const fs::path directory = root / target;
    fs::create_directories(directory);
    for (const auto& [name, bytes] : files) {
      write(directory / name, bytes);
      ++count;
    }
  }
  const auto builds = bbtree::fuzz::build_differential_seeds();
  write_all(root / "build_differential", builds, "case");
  const auto texts = bbtree::fuzz::text_parser_seeds();
  write_all(root / "text_parsers", texts, "text");
  const auto manifests = bbtree::fuzz::manifest_seeds();
  write_all(root / "manifest", manifests, "manifest");
  count += builds.size() + texts.size() + manifests.size();
  std::printf("fuzz_make_corpus: %zu seeds in %s\n", count, root.c_str());
  return 0;
}
