// What the command-line tools share: the exit statuses, the error
// reporting, --version, opening an index (or standard input) and writing to
// standard output.  The tools' logic lives in lib/; this is front-end glue.
#pragma once

#include <bbtree/reader.h>
#include <bbtree/shards.h>
#include <bbtree/text_format.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace bbtree::tools {

// The exit statuses every tool uses; the README and --help document them.
enum exit_status : int {
  exit_success = 0,
  exit_negative = 1,  // bad input data, a key not found, a corrupt file
  exit_usage = 2,     // a bad command line
  exit_system = 3,    // a file that cannot be read or written, a full disk
};

// A command line that parses but asks for something the tool refuses.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Names the tool (for messages) and adds --version.  `writes_files` and
// `writes_manifests` say whether --version lists a file format version and
// a shard manifest version written; every tool reads both.
void set_up(CLI::App& app, std::string tool, bool writes_files, bool writes_manifests);

// The help text's closing part: the examples, then the exit statuses.
std::string help_footer(std::string_view examples, std::string_view exit_statuses);

// Checks a numeric option's text: decimal digits only, from `least` to
// `most`.  CLI11 reads "-2" into an unsigned option as 2^64 - 2 and accepts
// it; with this check a sign is a usage error.
CLI::Validator whole_number(std::uint64_t least = 0,
                            std::uint64_t most = std::numeric_limits<std::uint64_t>::max());

// Checks a page size's text: a whole number that is a power of two from
// format::min_page_size to format::max_page_size (spec/FORMAT.md), so that
// --help states the rule and a bad size is refused as the command line is
// read.
CLI::Validator page_size_number();

// Parses the command line and runs `body`, which returns the exit status.
// Every failure becomes `bbtree-TOOL: error: MESSAGE` on stderr and the
// matching exit status; a closed stdout (EPIPE, as under `| head`) ends the
// tool quietly with status 0.
int run(CLI::App& app, int argc, char** argv, const std::function<int()>& body);

// Writes `bbtree-TOOL: TEXT` to stderr, for outcomes that are not errors
// (not found, a summary line).
void note(std::string_view text);

// Writes `bbtree-TOOL: error: MESSAGE` to stderr, for a failure the tool
// reports and goes on from (one file of several).  Like note(), never
// throws: diagnostics that cannot be written are lost.
void report_error(std::string_view message);

// The exit status for a library error.
int exit_status_for(errc code) noexcept;

// Parses a size such as 4096, 256K, 256M or 2G (binary multiples; an
// optional trailing B or iB).  Throws usage_error naming `option`.
std::uint64_t parse_size(std::string_view text, std::string_view option);

// Sizes and counts for progress and summary lines: "97.1 MiB", "1.20M".
std::string human_bytes(double bytes);
std::string human_count(double count);

// A progress line on stderr: redrawn in place on a terminal, printed as a
// line of its own every few seconds otherwise (--progress into a log).
class status_line {
 public:
  using clock = std::chrono::steady_clock;

  status_line();
  // Whether show() is worth calling now: a quarter of a second since the
  // last line on a terminal, five seconds elsewhere, or a `milestone` (a
  // new phase) at once.
  bool due(bool milestone) const;
  void show(std::string_view text);
  // Clears the line drawn on the terminal.
  void clear();
  double elapsed_seconds() const;

 private:
  bool terminal_;
  clock::time_point start_;
  clock::time_point last_;
  bool drawn_ = false;
};

// An index given as FILE that cannot be mapped, read into memory whole:
// standard input for "-", or the pipe, socket or character device that
// FILE names (a shell's <(...), /dev/stdin).  nullopt for anything else,
// which is opened as an index file or a shard manifest.
struct stream_bytes {
  std::string name;  // "<stdin>" for "-", else FILE
  std::vector<std::byte> bytes;
};
// Throws usage_error for a stream that holds a shard manifest, whose shards
// could not be found relative to it.
std::optional<stream_bytes> read_if_stream(const std::string& path);

// An index opened for reading: an index file or a shard manifest
// (shards.h); a stream (read_if_stream) is read into memory, and must hold
// an index file.
class open_index {
 public:
  open_index(const std::string& path, const open_options& options);
  // The index, whether one file or a shard set: every query.
  const sharded_reader& index() const noexcept { return *index_; }
  // The one index file, for what reads a file's pages and header.  Throws
  // usage_error for a shard manifest.
  const bbtree::reader& reader() const;
  bool is_shard_set() const noexcept { return index_->is_shard_set(); }
  entry_types types() const noexcept { return entry_types::of(index_->info()); }

 private:
  stream_bytes stream_;  // the bytes of a stream, which index_ reads in place
  std::unique_ptr<sharded_reader> index_;
};

// Standard output through an entry_writer.
std::unique_ptr<entry_writer> stdout_writer(text_format format, const entry_types& types);

}  // namespace bbtree::tools
