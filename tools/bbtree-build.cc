// bbtree-build: builds an index file from entries in tsv, csv, jsonl or bin.
#include "common.h"

#include <bbtree/import.h>
#include <bbtree/shards.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace bbtree::tools {
namespace {

constexpr std::string_view examples = R"(  bbtree-build words.txt -o words.bbt --value-type none
  bbtree-build --key-type u64 --value-type u64 -o counts.bbt counts.tsv
  sort -k1,1 data.tsv | bbtree-build --sorted -o data.bbt
  bbtree-build --format bin --memory 256M --tmp-dir /scratch -o big.bbt big.bin
  bbtree-build --format jsonl --key-type i64 -o events.bbt events.jsonl
  bbtree-dump a.bbt | bbtree-build --sorted --key-type u64 --value-type bytes -o b.bbt
  bbtree-build --key-type u64 --shards 8 -o counts.manifest counts.tsv
  bbtree-build --sorted --shard-size 1G -o logs.manifest logs.tsv
)";

constexpr std::string_view exit_statuses = R"(  0  the index was written
  1  bad input data: a malformed line, a key over the limits, a duplicate key
     under --duplicates error, an out-of-order key under --sorted (the message
     names FILE:LINE); nothing is written at OUT
  2  usage error, or OUT exists and --force is not given
  3  an input that cannot be read, an output that cannot be written

Without --sorted, input that fits in --memory is sorted in memory; larger
input is sorted in runs written to unnamed files in --tmp-dir (beside OUT by
default), then merged into OUT.  Nothing of them remains afterwards, even if
the build is killed.  Spelling of keys and values: spec/TEXT-FORMATS.md.

--shards N and --shard-size SIZE write a shard set (spec/SHARDS.md): OUT is
its manifest, and the shards OUT.shard-0000.bbt, ... are written beside it.
--shard-size starts a new shard once one reaches SIZE bytes, and writes the
shards as the entries come, once.  --shards N gives N shards whose entry
counts differ by at most one (fewer when there are fewer entries): --sorted
input from files is read twice, first to count; other input is built into
a whole index first, in a temporary file beside OUT (as much disk space
again as the set, while the set is written), and then cut into shards.  A failed build leaves no shard file and no manifest.  With
--force, a new set replaces the old in one step: its shards take the names
the old set does not use (OUT.shard-b-0000.bbt, ... when the old set has
OUT.shard-0000.bbt, ..., and back again), and the old shards are removed
once the new manifest is in place.
)";

// The progress line: reading (with the sorted runs written, if any), then
// the external sort's merge passes and the writing of the index.
class progress_display {
 public:
  void show(const import_progress& progress) {
    const bool milestone = progress.reading_done != reading_done_ || progress.phase != phase_ ||
                           progress.pass != pass_ ||
                           (progress.total > 0 && progress.done == progress.total);
    if (!line_.due(milestone)) return;
    reading_done_ = progress.reading_done;
    phase_ = progress.phase;
    pass_ = progress.pass;
    line_.show(describe(progress));
  }

  void clear() { line_.clear(); }
  double elapsed_seconds() const { return line_.elapsed_seconds(); }

 private:
  std::string describe(const import_progress& progress) const {
    const auto percent = [&] {
      return progress.total == 0
                 ? 100.0
                 : 100.0 * static_cast<double>(progress.done) / static_cast<double>(progress.total);
    };
    switch (progress.phase) {
      case sort_phase::merging:
        return fmt::format("merging {} sorted runs, pass {} of {}: {:.0f}%", progress.runs,
                           progress.pass, progress.passes, percent());
      case sort_phase::writing:
        if (progress.runs == 0) {
          return fmt::format("sorted in memory; writing the index: {:.0f}%", percent());
        }
        return fmt::format("writing the index from {} sorted runs: {:.0f}%", progress.runs,
                           percent());
      case sort_phase::reading:
        break;
    }
    const double seconds = line_.elapsed_seconds();
    const double entry_rate = seconds > 0 ? static_cast<double>(progress.entries) / seconds : 0;
    const double byte_rate = seconds > 0 ? static_cast<double>(progress.bytes_read) / seconds : 0;
    std::string text = fmt::format("{} entries, {} read, {} entries/s, {}/s",
                                   human_count(static_cast<double>(progress.entries)),
                                   human_bytes(static_cast<double>(progress.bytes_read)),
                                   human_count(entry_rate), human_bytes(byte_rate));
    if (progress.runs > 0) text += fmt::format(", {} sorted runs", progress.runs);
    if (progress.reading_done) {
      text += progress.runs > 0 ? "; merging the sorted runs" : "; writing the index";
    } else if (progress.total_bytes > 0 && byte_rate > 0) {
      const double left = static_cast<double>(progress.total_bytes -
                                              std::min(progress.total_bytes, progress.bytes_read));
      const auto eta = static_cast<long long>(left / byte_rate);
      text += fmt::format(", {:.0f}%, ETA {}:{:02}",
                          100.0 * static_cast<double>(progress.bytes_read) /
                              static_cast<double>(progress.total_bytes),
                          eta / 60, eta % 60);
    }
    return text;
  }

  status_line line_;
  bool reading_done_ = false;
  sort_phase phase_ = sort_phase::reading;
  std::uint32_t pass_ = 0;
};

std::pair<std::string, std::string> parse_metadata(const std::string& item) {
  const std::size_t equals = item.find('=');
  if (equals == std::string::npos) {
    throw usage_error(fmt::format("--metadata \"{}\": expected KEY=VALUE", item));
  }
  try {
    return {unescape(std::string_view(item).substr(0, equals), "key"),
            unescape(std::string_view(item).substr(equals + 1), "value")};
  } catch (const error& e) {
    throw usage_error(fmt::format("--metadata \"{}\": {}", item, e.what()));
  }
}

// `-o -`: the builder publishes by renaming, so the index is built in a
// private temporary directory and then copied to standard output.
class staging_directory {
 public:
  explicit staging_directory(const std::string& parent) {
    std::string pattern = (std::filesystem::path(parent) / "bbtree-build-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) {
      throw error(errc::io_error, fmt::format("cannot create a temporary directory in {}: {}",
                                              parent, std::strerror(errno)));
    }
    path_ = pattern;
  }
  ~staging_directory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  staging_directory(const staging_directory&) = delete;
  staging_directory& operator=(const staging_directory&) = delete;

  std::filesystem::path file() const { return path_ / "index.bbt"; }

 private:
  std::filesystem::path path_;
};

void copy_to_stdout(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw error(errc::io_error,
                fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
  }
  entry_writer out(STDOUT_FILENO, "<stdout>", text_format::bin, entry_types{});
  std::vector<char> buffer(std::size_t{1} << 20);
  for (;;) {
    const ssize_t count = ::read(fd, buffer.data(), buffer.size());
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) {
      const int read_errno = errno;
      ::close(fd);
      if (count < 0) {
        throw error(errc::io_error,
                    fmt::format("cannot read {}: {}", path.string(), std::strerror(read_errno)));
      }
      break;
    }
    out.write_text(std::string_view(buffer.data(), static_cast<std::size_t>(count)));
  }
  out.flush();
}

}  // namespace
}  // namespace bbtree::tools

int main(int argc, char** argv) {
  using namespace bbtree;
  using namespace bbtree::tools;

  CLI::App app{
      "Builds a bbtree index file from entries in text (tsv, csv, jsonl) or binary (bin) form.\n"
      "With no INPUT, or with -, reads standard input; several inputs are read as if "
      "concatenated."};
  set_up(app, "bbtree-build", true, true);
  app.footer(help_footer(examples, exit_statuses));

  std::vector<std::string> inputs;
  std::string output;
  std::string key_type = "bytes";
  std::string value_type = "bytes";
  std::string format_name = "tsv";
  bool sorted = false;
  std::string duplicates = "error";
  std::uint32_t page_size = format::default_page_size;
  std::vector<std::string> metadata;
  std::string memory;
  std::string tmp_dir;
  bool progress = false;
  bool quiet = false;
  bool force = false;

  app.add_option("INPUT", inputs, "Input files; - is standard input (the default)");
  app.add_option("-o,--output", output, "The index file to write; - is standard output")
      ->required();
  app.add_option("--key-type", key_type, "u64, i64, bytes or fixed:N")->capture_default_str();
  app.add_option("--value-type", value_type, "none, u64, bytes or fixed:N")->capture_default_str();
  app.add_option("--format", format_name, "Input format: tsv, csv, jsonl or bin")
      ->capture_default_str();
  app.add_flag("--sorted", sorted,
               "The input is in key order: stream it, checking the order (an out-of-order line "
               "fails the build)");
  app.add_option("--duplicates", duplicates,
                 "Equal keys: error fails the build, first or last keeps that entry")
      ->check(CLI::IsMember({"error", "first", "last"}))
      ->capture_default_str();
  app.add_option("--page-size", page_size, "Page size in bytes")
      ->check(page_size_number())
      ->capture_default_str();
  bool no_directory = false;
  app.add_flag("--no-directory", no_directory,
               "Write no directory region (spec/FORMAT.md, section 12.3): a file that readers of "
               "format 1.0 and 1.1 can open, with slower lookups");
  app.add_option("--metadata", metadata,
                 "KEY=VALUE stored in the file (escapes as in tsv); may be repeated")
      // One pair each time, so that INPUTs after it stay INPUTs.
      ->allow_extra_args(false);
  app.add_option("--memory", memory,
                 fmt::format("Memory for sorting unsorted input, e.g. 256M, 2G; at least 64K "
                             "(default: 1G, or a quarter of the RAM if less: {} here)",
                             human_bytes(static_cast<double>(default_sort_memory()))));
  app.add_option("--tmp-dir", tmp_dir,
                 "Directory for the sorted runs of input larger than --memory (default: OUT's "
                 "directory)");
  auto* progress_flag =
      app.add_flag("--progress", progress, "Show progress even when stderr is not a terminal");
  app.add_flag("-q,--quiet", quiet, "No progress and no summary")->excludes(progress_flag);
  app.add_flag("--force", force, "Replace OUT if it exists");
  std::uint32_t shard_count = 0;
  std::string shard_size;
  auto* shards_option =
      app.add_option("--shards", shard_count,
                     "Write a shard set of N shards of equal entry counts: OUT is its manifest")
          ->check(whole_number(1, std::numeric_limits<std::uint32_t>::max()));
  app.add_option("--shard-size", shard_size,
                 "Write a shard set, starting a new shard when one reaches SIZE bytes (e.g. 1G)")
      ->excludes(shards_option);

  return run(app, argc, argv, [&] {
    build_options options;
    entry_types types;
    import_options import;
    try {
      parse_key_type(key_type, types);
      parse_value_type(value_type, types);
      import.format = parse_text_format(format_name);
    } catch (const error& e) {
      throw usage_error(e.what());
    }
    options.keys = types.keys;
    options.key_size = types.key_size;
    options.values = types.values;
    options.value_size = types.value_size;
    options.page_size = page_size;
    options.directory = !no_directory;
    options.duplicates = duplicates == "first"  ? duplicate_policy::keep_first
                         : duplicates == "last" ? duplicate_policy::keep_last
                                                : duplicate_policy::error;
    options.overwrite = force;
    for (const std::string& item : metadata) options.metadata.push_back(parse_metadata(item));
    if (!memory.empty()) {
      import.memory = parse_size(memory, "--memory");
      if (const auto problem = sort_memory_problem(import.memory)) {
        throw usage_error(fmt::format("--memory {}: {}", memory, *problem));
      }
    }
    import.temporary_directory = tmp_dir;
    // A directory that does not exist is an I/O error (status 3), as for -o.
    if (!tmp_dir.empty() && !std::filesystem::is_directory(tmp_dir)) {
      throw error(
          errc::io_error,
          fmt::format("--tmp-dir {}: {}", tmp_dir,
                      std::filesystem::exists(tmp_dir) ? "not a directory" : "No such directory"));
    }
    try {
      validate(options);
    } catch (const error& e) {
      throw usage_error(e.what());
    }
    import.sorted = sorted;

    const bool show_progress = !quiet && (progress || ::isatty(STDERR_FILENO));
    progress_display display;
    if (show_progress) {
      import.progress = [&display](const import_progress& p) { display.show(p);
    };
    }
    if (shard_count > 0 || !shard_size.empty()) {
    if (output == "-") {
      throw usage_error("a shard set is a manifest and files beside it: give -o a path, not -");
    }
    shard_split split;
    split.shards = shard_count;
    if (!shard_size.empty()) split.shard_size = parse_size(shard_size, "--shard-size");
    shard_set_summary set;
    try {
      set = import_shard_set(inputs, output, options, import, split);
    } catch (...) {
      display.clear();
      throw;
    }
    display.clear();
    if (!quiet) {
      note(fmt::format("wrote {}: {} entries in {} shard{}, {}, {:.2f} s", output, set.entries,
                       set.shards, set.shards == 1 ? "" : "s",
                       human_bytes(static_cast<double>(set.file_size)), display.elapsed_seconds()));
    }
    return static_cast<int>(exit_success);
    }
    std::optional<staging_directory> staging;
    if (output == "-") {
    const char* temporary = std::getenv("TMPDIR");
    staging.emplace(!tmp_dir.empty() ? tmp_dir : temporary && *temporary ? temporary : "/tmp");
    }
    build_summary summary;
    try {
    const std::filesystem::path destination =
        staging ? staging->file() : std::filesystem::path(output);
    summary = import_entries(inputs, destination, options, import);
    } catch (...) {
    display.clear();
    throw;
    }
    display.clear();
    if (staging) copy_to_stdout(staging->file());
    if (!quiet) {
    const double seconds = display.elapsed_seconds();
    std::string line =
        fmt::format("wrote {}: {} entries, {}", staging ? "<stdout>" : output, summary.entries,
                    human_bytes(static_cast<double>(summary.file_size)));
    if (summary.entries > 0) {
      line += fmt::format(", {:.1f} bytes/entry", static_cast<double>(summary.file_size) /
                                                      static_cast<double>(summary.entries));
    }
    line += fmt::format(", {:.2f} s", seconds);
    note(line);
    }
    return static_cast<int>(exit_success);
});
}
