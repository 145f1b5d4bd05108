// fuzz_replay: runs one target's body on every file given, or on every file
// in the directories given, as libFuzzer would run LLVMFuzzerTestOneInput on
// them.  Built by the normal build (no libFuzzer needed), so that ctest
// replays the seed corpora and the committed regressions of every target.
//
//   fuzz_replay TARGET PATH...        replay files and directories
//   fuzz_replay --mutate N TARGET PATH...
//                                     also run N mutations of each file, with
//                                     the target's own mutator where it has one
//   fuzz_replay --list                the target names
//
// Exits 0 when every input ran; a finding aborts, as under libFuzzer.
#include "fuzz_support.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using bbtree::fuzz::target;

namespace {

std::vector<std::uint8_t> read_input(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Files under `path`, sorted; names starting with '.' (.gitkeep) are not
// inputs.
void collect(const fs::path& path, std::vector<fs::path>& out) {
  if (fs::is_directory(path)) {
    std::vector<fs::path> found;
    for (const auto& item : fs::recursive_directory_iterator(path)) {
      if (item.is_regular_file() && item.path().filename().string().front() != '.')
        found.push_back(item.path());
    }
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  } else if (fs::is_regular_file(path)) {
    out.push_back(path);
  } else {
    std::fprintf(stderr, "fuzz_replay: %s: no such file or directory\n", path.c_str());
    std::exit(2);
  }
}

int usage() {
  std::fprintf(stderr,
               "usage: fuzz_replay [--mutate N] TARGET PATH...\n       fuzz_replay --list\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--list") {
    for (const target& t : bbtree::fuzz::all_targets()) std::printf("%s\n", t.name);
    return 0;
  }
  std::size_t mutations = 0;
  if (args.size() >= 2 && args[0] == "--mutate") {
    mutations = std::stoul(args[1]);
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.size() < 2) return usage();
  const target* chosen = bbtree::fuzz::find_target(args[0]);
  if (chosen == nullptr) {
    std::fprintf(stderr, "fuzz_replay: unknown target '%s' (fuzz_replay --list)\n",
                 args[0].c_str());
    return 2;
  }
  std::vector<fs::path> inputs;
  for (std::size_t i = 1; i < args.size(); ++i) collect(args[i], inputs);

  const bool file_mutator = std::strcmp(chosen->name, "mutated_file") == 0;
  const bool manifest_mutator = std::strcmp(chosen->name, "manifest") == 0;
  const auto start = std::chrono::steady_clock::now();
  std::size_t runs = 0;
  for (const fs::path& path : inputs) {
    std::vector<std::uint8_t> data = read_input(path);
    std::fprintf(stderr, "fuzz_replay %s: %s (%zu bytes)\n", chosen->name, path.c_str(),
                 data.size());
    chosen->run({data.data(), data.size()});
    ++runs;
    for (std::size_t m = 0; m < mutations; ++m) {
      std::vector<std::uint8_t> mutated = data;
      const std::size_t max_size = data.size() + 64;
      mutated.resize(max_size);
      const auto seed = static_cast<unsigned>(m);
      std::size_t size = 0;
      if (file_mutator) {
        size = bbtree::fuzz::mutate_file(mutated.data(), data.size(), max_size, seed,
                                         bbtree::fuzz::simple_mutate);
      } else if (manifest_mutator) {
        size = bbtree::fuzz::mutate_manifest(mutated.data(), data.size(), max_size, seed,
                                             bbtree::fuzz::simple_mutate);
      } else {
        size = bbtree::fuzz::simple_mutate(mutated.data(), data.size(), max_size);
      }
      mutated.resize(size);
      chosen->run({mutated.data(), mutated.size()});
      ++runs;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "fuzz_replay %s: %zu inputs from %zu files ran in %.1f s\n", chosen->name,
               runs, inputs.size(), seconds);
  return 0;
}
