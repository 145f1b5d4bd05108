// bbtree-build: builds an index file from entries in tsv, csv, jsonl or bin.
#include "common.h"

#include <bbtree/import.h>

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
  bbtree-build --format jsonl --key-type i64 -o events.bbt events.jsonl
  bbtree-dump a.bbt | bbtree-build --sorted --key-type u64 --value-type bytes -o b.bbt
)";

constexpr std::string_view exit_statuses = R"(  0  the index was written
  1  bad input data: a malformed line, a key over the limits, a duplicate key
     under --duplicates error, an out-of-order key under --sorted (the message
     names FILE:LINE); nothing is written at OUT
  2  usage error, or OUT exists and --force is not given
  3  an input that cannot be read, an output that cannot be written

Unsorted input is sorted in memory (--memory and --tmp-dir are checked but
not used yet).  Spelling of keys and values: spec/TEXT-FORMATS.md.
)";

std::string human_bytes(double bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(units)) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, units[unit]);
}

std::string human_count(double count) {
  if (count >= 1e9) return fmt::format("{:.2f}G", count / 1e9);
  if (count >= 1e6) return fmt::format("{:.2f}M", count / 1e6);
  if (count >= 1e4) return fmt::format("{:.1f}K", count / 1e3);
  return fmt::format("{:.0f}", count);
}

// The progress line: redrawn in place on a terminal, a line every few
// seconds otherwise (--progress into a log).
class progress_display {
 public:
  using clock = std::chrono::steady_clock;

  explicit progress_display(bool terminal)
      : terminal_(terminal), start_(clock::now()), last_(start_) {}

  void show(const import_progress& progress) {
    const auto now = clock::now();
    const auto interval = terminal_ ? std::chrono::milliseconds(250) : std::chrono::seconds(5);
    if (!progress.reading_done && now - last_ < interval) return;
    last_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double entry_rate = seconds > 0 ? static_cast<double>(progress.entries) / seconds : 0;
    const double byte_rate = seconds > 0 ? static_cast<double>(progress.bytes_read) / seconds : 0;
    std::string text = fmt::format("{} entries, {} read, {} entries/s, {}/s",
                                   human_count(static_cast<double>(progress.entries)),
                                   human_bytes(static_cast<double>(progress.bytes_read)),
                                   human_count(entry_rate), human_bytes(byte_rate));
    if (progress.reading_done) {
      text += "; writing the index";
    } else if (progress.total_bytes > 0 && byte_rate > 0) {
      const double left = static_cast<double>(progress.total_bytes -
                                              std::min(progress.total_bytes, progress.bytes_read));
      const auto eta = static_cast<long long>(left / byte_rate);
      text += fmt::format(", {:.0f}%, ETA {}:{:02}",
                          100.0 * static_cast<double>(progress.bytes_read) /
                              static_cast<double>(progress.total_bytes),
                          eta / 60, eta % 60);
    }
    if (terminal_) {
      fmt::print(stderr, "\r{}\x1b[K", text);
      drawn_ = true;
    } else {
      fmt::print(stderr, "bbtree-build: {}\n", text);
    }
    std::fflush(stderr);
  }

  // Clears the line drawn on the terminal.
  void clear() {
    if (drawn_) fmt::print(stderr, "\r\x1b[K");
    drawn_ = false;
  }

  double elapsed_seconds() const {
    return std::chrono::duration<double>(clock::now() - start_).count();
  }

 private:
  bool terminal_;
  clock::time_point start_;
  clock::time_point last_;
  bool drawn_ = false;
};

std::pair<std::string, std::string> parse_metadata(const std::string& item) {
  const std::size_t equals = item.find('=');
  if (equals == std::string::npos) {
    throw usage_error(fmt::format("--metadata \"{}\": expected KEY=VALUE", item));
  }
  try {
    return {unescape(std::string_view(item).substr(0, equals)),
            unescape(std::string_view(item).substr(equals + 1))};
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
  set_up(app, "bbtree-build", true);
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
  app.add_option("--page-size", page_size, "Page size in bytes: a power of two, 512 to 65536")
      ->capture_default_str();
  app.add_option("--metadata", metadata,
                 "KEY=VALUE stored in the file (escapes as in tsv); may be repeated");
  app.add_option("--memory", memory, "Memory for sorting, e.g. 256M, 2G (not used yet)");
  app.add_option("--tmp-dir", tmp_dir, "Directory for sort runs (not used yet)");
  auto* progress_flag =
      app.add_flag("--progress", progress, "Show progress even when stderr is not a terminal");
  app.add_flag("-q,--quiet", quiet, "No progress and no summary")->excludes(progress_flag);
  app.add_flag("--force", force, "Replace OUT if it exists");

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
    options.duplicates = duplicates == "first"  ? duplicate_policy::keep_first
                         : duplicates == "last" ? duplicate_policy::keep_last
                                                : duplicate_policy::error;
    options.overwrite = force;
    for (const std::string& item : metadata) options.metadata.push_back(parse_metadata(item));
    if (!memory.empty()) parse_size(memory, "--memory");
    if (!tmp_dir.empty() && !std::filesystem::is_directory(tmp_dir)) {
      throw usage_error(fmt::format("--tmp-dir {}: not a directory", tmp_dir));
    }
    try {
      validate(options);
    } catch (const error& e) {
      throw usage_error(e.what());
    }
    import.sorted = sorted;

    const bool show_progress = !quiet && (progress || ::isatty(STDERR_FILENO));
    progress_display display(::isatty(STDERR_FILENO));
    if (show_progress) {
      import.progress = [&display](const import_progress& p) { display.show(p);
    };
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
