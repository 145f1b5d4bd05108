// bbtree-shards: joins index files built independently into a shard set, by
// writing the manifest that lists them (bbtree/shards.h, spec/SHARDS.md).
#include "common.h"

#include <bbtree/shards.h>

#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <vector>

namespace bbtree::tools {
namespace {

constexpr std::string_view examples =
    R"(  bbtree-shards events.manifest events-2023.bbt events-2024.bbt events-2025.bbt
  bbtree-shards --force users.manifest parts/users-*.bbt
  bbtree-query users.manifest get alice
  bbtree-verify users.manifest
)";

constexpr std::string_view exit_statuses = R"(  0  the manifest was written
  1  a SHARD is not a bbtree file or is damaged, or the key ranges of two
     SHARDs overlap (the message names the two and their ranges)
  2  usage error: OUT exists and --force is not given, two SHARDs differ in
     their key or value types (the message names them), a SHARD has no
     entries or is itself a manifest
  3  a SHARD cannot be read, or OUT cannot be written

The shards may be given in any order: they are sorted by their first keys.
Their key ranges must not overlap: every key of a shard must be smaller than
every key of the next (bbtree-merge combines files whose ranges overlap).
OUT names each shard by its path relative to OUT's directory, so that the
set moves as a whole; only OUT is written, the shards stay where they are.
The manifest also records each shard's entry count, size and header
checksum, so that a shard replaced later is found when the set is opened.
bbtree-query, bbtree-dump and bbtree-verify take OUT wherever they take an
index file.  The manifest format: spec/SHARDS.md.
)";

}  // namespace
}  // namespace bbtree::tools

int main(int argc, char** argv) {
  using namespace bbtree;
  using namespace bbtree::tools;

  CLI::App app{
      "Joins bbtree index files that cover disjoint key ranges into a shard set: writes the "
      "manifest OUT, which the other tools read as one index."};
  set_up(app, "bbtree-shards", false, true);
  app.footer(help_footer(examples, exit_statuses));

  std::string output;
  std::vector<std::string> shards;
  bool force = false;
  bool quiet = false;
  app.add_option("OUT", output, "The manifest to write")->required();
  app.add_option("SHARD", shards, "The index files of the set, in any order")->required();
  app.add_flag("--force", force, "Replace OUT if it exists");
  app.add_flag("-q,--quiet", quiet, "No summary line");

  return run(app, argc, argv, [&] {
    if (output == "-") {
      throw usage_error(
          "OUT -: a manifest names its shards relative to its own directory, so it must be a "
          "file");
    }
    for (const std::string& shard : shards) {
      if (shard == "-")
        throw usage_error("SHARD -: the shards are read in place, so they must be files");
    }
    const std::vector<std::filesystem::path> paths(shards.begin(), shards.end());
    shard_set_options options;
    options.overwrite = force;
    const shard_manifest manifest = write_shard_set(output, paths, options);
    if (!quiet) {
      std::uint64_t bytes = 0;
      for (const shard_record& shard : manifest.shards) bytes += shard.file_size;
      note(fmt::format("wrote {}: {} shard{}, {} entries, {} in shard files", output,
                       manifest.shards.size(), manifest.shards.size() == 1 ? "" : "s",
                       manifest.entries(), human_bytes(static_cast<double>(bytes))));
    }
    return static_cast<int>(exit_success);
  });
}
