// bbtree-merge: merges index files (or shard sets) of the same key and value
// types into one.
#include "common.h"

#include <bbtree/merge.h>

#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

namespace bbtree::tools {
namespace {

constexpr std::string_view examples = R"(  bbtree-merge jan.bbt feb.bbt mar.bbt -o q1.bbt
  bbtree-merge --duplicates last base.bbt updates.bbt -o current.bbt
  bbtree-merge --force --page-size 16384 current.bbt more.bbt -o current.bbt
  bbtree-merge data.manifest -o data.bbt    # a shard set into one file
)";

constexpr std::string_view exit_statuses = R"(  0  the index was written
  1  bad data: a key in several inputs under --duplicates error (the message
     names the key and both files); an input that is not a bbtree file, or
     is damaged; nothing is written at OUT
  2  usage error; inputs whose key or value types differ (the message names
     both files and their types); OUT exists and --force is not given
  3  an input that cannot be read, an output that cannot be written

The inputs are read once, in key order, and the output is written as they
are read: memory stays small whatever their sizes.  An input may be a shard
set's manifest (spec/SHARDS.md), merged as one input.  OUT may be one of the
inputs (with --force): it is replaced only when the merge is complete.
)";

// "12.3M of 40.0M entries, 31%, 2.1M entries/s, ETA 0:13"
std::string describe(const merge_progress& progress, double seconds) {
  const double rate = seconds > 0 ? static_cast<double>(progress.entries) / seconds : 0;
  std::string text =
      fmt::format("{} of {} entries", human_count(static_cast<double>(progress.entries)),
                  human_count(static_cast<double>(progress.total)));
  if (progress.total > 0) {
    text += fmt::format(", {:.0f}%", 100.0 * static_cast<double>(progress.entries) /
                                         static_cast<double>(progress.total));
  }
  text += fmt::format(", {} entries/s", human_count(rate));
  if (rate > 0 && progress.entries < progress.total) {
    const auto eta =
        static_cast<long long>(static_cast<double>(progress.total - progress.entries) / rate);
    text += fmt::format(", ETA {}:{:02}", eta / 60, eta % 60);
  }
  return text;
}

}  // namespace
}  // namespace bbtree::tools

int main(int argc, char** argv) {
  using namespace bbtree;
  using namespace bbtree::tools;

  CLI::App app{
      "Merges bbtree index files whose keys and values are of the same types into one index.\n"
      "Equal keys in several inputs fail the merge, or keep one entry (--duplicates)."};
  set_up(app, "bbtree-merge", true, false);
  app.footer(help_footer(examples, exit_statuses));

  std::vector<std::string> inputs;
  std::string output;
  std::string duplicates = "error";
  std::uint32_t page_size = 0;
  bool progress = false;
  bool quiet = false;
  bool force = false;

  app.add_option("IN", inputs, "The index files (or shard sets' manifests) to merge")->required();
  app.add_option("-o,--output", output, "The index file to write")->required();
  app.add_option("--duplicates", duplicates,
                 "A key in several inputs: error fails the merge; first or last keeps the entry of "
                 "the input given first or last")
      ->check(CLI::IsMember({"error", "first", "last"}))
      ->capture_default_str();
  app.add_option("--page-size", page_size, "Page size of OUT in bytes (default: the first input's)")
      ->check(page_size_number());
  auto* progress_flag =
      app.add_flag("--progress", progress, "Show progress even when stderr is not a terminal");
  app.add_flag("-q,--quiet", quiet, "No progress and no summary")->excludes(progress_flag);
  app.add_flag("--force", force, "Replace OUT if it exists");

  return run(app, argc, argv, [&] {
    for (const std::string& input : inputs) {
      if (input == "-") throw usage_error("IN -: the inputs are mapped, so they must be files");
    }
    if (output == "-")
      throw usage_error("-o -: OUT is written beside its name, so it must be a file");
    merge_options options;
    options.duplicates = duplicates == "first"  ? duplicate_policy::keep_first
                         : duplicates == "last" ? duplicate_policy::keep_last
                                                : duplicate_policy::error;
    options.page_size = page_size;
    options.overwrite = force;
    status_line line;
    if (!quiet && (progress || ::isatty(STDERR_FILENO))) {
      options.progress = [&line](const merge_progress& step) {
        if (line.due(step.entries == step.total)) line.show(describe(step, line.elapsed_seconds()));
      };
    }
    const std::vector<std::filesystem::path> paths(inputs.begin(), inputs.end());
    build_summary summary;
    try {
      summary = merge_indexes(paths, output, options);
    } catch (...) {
      line.clear();
      throw;
    }
    line.clear();
    if (!quiet) {
      note(fmt::format("wrote {}: {} entries from {} files, {}, {:.2f} s", output, summary.entries,
                       inputs.size(), human_bytes(static_cast<double>(summary.file_size)),
                       line.elapsed_seconds()));
    }
    return static_cast<int>(exit_success);
  });
}
