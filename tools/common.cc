#include "common.h"

#include <bbtree/builder.h>
#include <bbtree/format/layout.h>
#include <bbtree/shards.h>
#include <bbtree/version.h>

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <new>
#include <span>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bbtree::tools {

namespace {

std::string tool_name = "bbtree";

// Diagnostics never throw: a stderr that is closed, full or a pipe whose
// reader has gone (`2>&1 | head`) loses them, and the tool goes on to the
// exit status of its work.  (fmt::print throws on a failed write, which in
// an error handler ended the process with std::terminate.)
void write_to_stderr(std::string_view text) noexcept {
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  std::clearerr(stderr);
}

}  // namespace

void report_error(std::string_view message) {
  std::fflush(stdout);
  write_to_stderr(fmt::format("{}: error: {}\n", tool_name, message));
}

namespace {

// CLI11 prints help and --version to std::cout; a closed pipe there is no
// error either.
int flush_standard_output() {
  std::cout.flush();
  if (!std::cout) {
    if (errno == EPIPE) return exit_success;
    report_error("<stdout>: write failed");
    return exit_system;
  }
  return exit_success;
}

// The whole number `text` spells, digits only: from_chars takes no sign
// and no space, and reports overflow.
std::optional<std::uint64_t> parse_whole_number(std::string_view text) {
  std::uint64_t number = 0;
  const char* const end = text.data() + text.size();
  const auto [stop, failure] = std::from_chars(text.data(), end, number);
  if (failure != std::errc{} || stop != end) return std::nullopt;
  return number;
}

}  // namespace

CLI::Validator whole_number(std::uint64_t least, std::uint64_t most) {
  std::string range = most == std::numeric_limits<std::uint64_t>::max()
                          ? fmt::format("a whole number of at least {}", least)
                          : fmt::format("a whole number from {} to {}", least, most);
  return CLI::Validator(
      [least, most, range](std::string& text) -> std::string {
        const std::optional<std::uint64_t> number = parse_whole_number(text);
        if (!number || *number < least || *number > most)
          return fmt::format("{} is not {}", text, range);
        return {};
      },
      range);
}

CLI::Validator page_size_number() {
  const std::string rule =
      fmt::format("a power of two from {} to {}", format::min_page_size, format::max_page_size);
  return CLI::Validator(
      [rule](std::string& text) -> std::string {
        const std::optional<std::uint64_t> number = parse_whole_number(text);
        if (!number || !format::is_valid_page_size(*number))
          return fmt::format("{} is not {}", text, rule);
        return {};
      },
      rule);
}

void set_up(CLI::App& app, std::string tool, bool writes_files, bool writes_manifests) {
  tool_name = std::move(tool);
  app.name(tool_name);
  // A reader accepts every minor version of its major one (spec/FORMAT.md,
  // section 16).
  const std::string writes =
      writes_files ? fmt::format(", writes {}.{}", format::format_major, format::format_minor) : "";
  const std::string manifest =
      fmt::format("shard manifest format (spec/SHARDS.md): reads {}{}", shard_manifest_version,
                  writes_manifests ? fmt::format(", writes {}", shard_manifest_version) : "");
  app.set_version_flag("--version",
                       fmt::format("{} {}\nbbtree file format: reads {}.x (this build knows up "
                                   "to {}.{}){}\n{}",
                                   tool_name, version_string, format::format_major,
                                   format::format_major, format::format_minor, writes, manifest));
}

std::string help_footer(std::string_view examples, std::string_view exit_statuses) {
  return fmt::format("\nExamples:\n{}\nExit status:\n{}", examples, exit_statuses);
}

int exit_status_for(errc code) noexcept {
  switch (code) {
    case errc::not_bbtree:
    case errc::newer_version:
    case errc::unsupported_feature:
    case errc::truncated:
    case errc::corrupt_header:
    case errc::corrupt:
    case errc::trailing_data:
    case errc::out_of_order:
    case errc::duplicate_key:
    case errc::key_too_long:
    case errc::value_too_long:
      return exit_negative;
    case errc::already_exists:
    case errc::invalid_argument:
    case errc::type_mismatch:
      return exit_usage;
    case errc::io_error:
      return exit_system;
  }
  return exit_system;
}

namespace {

// A build interrupted from the terminal, or stopped by a service manager,
// leaves no temporary file behind (tools/README.md): the handler removes
// them, then dies of the same signal, so that the parent sees how it ended.
extern "C" void remove_temporary_files_and_stop(int signal_number) {
  bbtree::remove_temporary_files_on_signal();
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(signal_number, &default_action, nullptr);
  ::raise(signal_number);
}

void install_signal_handlers() {
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction action = {};
    struct sigaction previous = {};
    action.sa_handler = remove_temporary_files_and_stop;
    ::sigemptyset(&action.sa_mask);
    ::sigaction(signal_number, nullptr, &previous);
    // A signal the caller ignores (nohup, a background job) stays ignored.
    if (previous.sa_handler != SIG_IGN) ::sigaction(signal_number, &action, nullptr);
  }
}

}  // namespace

namespace {

// Descriptors 0, 1 and 2 open, on /dev/null where the caller closed them
// (`2>&-`): otherwise the first file the tool opens gets one of them, and
// what the tool writes to stderr, such as progress, goes into that file,
// which may be the index it is about to publish.
void open_standard_descriptors() {
  for (int descriptor = STDIN_FILENO; descriptor <= STDERR_FILENO; ++descriptor) {
    if (::fcntl(descriptor, F_GETFD) != -1 || errno != EBADF) continue;
    const int opened = ::open("/dev/null", descriptor == STDIN_FILENO ? O_RDONLY : O_WRONLY);
    // open() returns the lowest free descriptor, which is `descriptor`; a
    // machine without /dev/null keeps the descriptor closed.
    if (opened != descriptor && opened >= 0) ::close(opened);
  }
}

}  // namespace

int run(CLI::App& app, int argc, char** argv, const std::function<int()>& body) {
  open_standard_descriptors();
  // A write to a closed pipe then fails with EPIPE, which the tools turn
  // into a quiet exit, instead of killing the process with a signal.
  std::signal(SIGPIPE, SIG_IGN);
  // A file over the shell's file size limit (ulimit -f) then fails with
  // EFBIG, an io_error the build reports, removing its temporary file,
  // instead of SIGXFSZ killing the process where it stands.
  std::signal(SIGXFSZ, SIG_IGN);
  install_signal_handlers();
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    app.exit(e);
    return flush_standard_output();
  } catch (const CLI::ParseError& e) {
    report_error(e.what());
    write_to_stderr(fmt::format("Run '{} --help' for the options.\n", tool_name));
    return exit_usage;
  }
  try {
    const int status = body();
    const int flushed = flush_standard_output();
    return flushed != exit_success ? flushed : status;
  } catch (const broken_pipe&) {
    return exit_success;
  } catch (const usage_error& e) {
    report_error(e.what());
    return exit_usage;
  } catch (const input_error& e) {
    report_error(e.what());
    return exit_negative;
  } catch (const error& e) {
    report_error(e.what());
    return exit_status_for(e.code());
  } catch (const std::bad_alloc&) {
    report_error("out of memory");
    return exit_system;
  } catch (const std::exception& e) {
    report_error(e.what());
    return exit_system;
  }
}

void note(std::string_view text) {
  std::fflush(stdout);
  write_to_stderr(fmt::format("{}: {}\n", tool_name, text));
}

std::uint64_t parse_size(std::string_view text, std::string_view option) {
  const auto bad = [&] {
    return usage_error(fmt::format(
        "{}: bad size \"{}\": give a number with an optional K, M, G or T (e.g. 256M, 2G)", option,
        text));
  };
  std::uint64_t number = 0;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (number > (UINT64_MAX - 9) / 10) throw bad();
    number = number * 10 + static_cast<std::uint64_t>(text[i] - '0');
  }
  if (i == 0) throw bad();
  std::string_view unit = text.substr(i);
  int shift = 0;
  if (!unit.empty()) {
    switch (unit[0]) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      case 't':
      case 'T':
        shift = 40;
        break;
      case 'b':
      case 'B':
        break;
      default:
        throw bad();
    }
    if (shift != 0) unit.remove_prefix(1);
    if (unit == "iB" || unit == "ib") unit.remove_prefix(2);
    if (unit == "B" || unit == "b") unit.remove_prefix(1);
    if (!unit.empty()) throw bad();
  }
  if (number == 0 || number > (UINT64_MAX >> shift)) throw bad();
  return number << shift;
}

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

status_line::status_line()
    : terminal_(::isatty(STDERR_FILENO) != 0), start_(clock::now()), last_(start_) {}

bool status_line::due(bool milestone) const {
  const auto interval = terminal_ ? std::chrono::milliseconds(250) : std::chrono::seconds(5);
  return milestone || clock::now() - last_ >= interval;
}

void status_line::show(std::string_view text) {
  last_ = clock::now();
  if (terminal_) {
    write_to_stderr(fmt::format("\r{}\x1b[K", text));
    drawn_ = true;
  } else {
    write_to_stderr(fmt::format("{}: {}\n", tool_name, text));
  }
}

void status_line::clear() {
  if (drawn_) write_to_stderr("\r\x1b[K");
  drawn_ = false;
}

double status_line::elapsed_seconds() const {
  return std::chrono::duration<double>(clock::now() - start_).count();
}

namespace {

std::vector<std::byte> read_all(int fd, const std::string& name) {
  // A pipe cannot be mapped: read it all, then read the bytes in place.
  constexpr std::size_t chunk = std::size_t{1} << 20;
  std::vector<std::byte> bytes;
  for (;;) {
    const std::size_t used = bytes.size();
    bytes.resize(used + chunk);
    const ssize_t count = ::read(fd, bytes.data() + used, chunk);
    if (count < 0 && errno == EINTR) {
      bytes.resize(used);
      continue;
    }
    if (count < 0) {
      throw error(errc::io_error, fmt::format("{}: read failed: {}", name, std::strerror(errno)));
    }
    bytes.resize(used + static_cast<std::size_t>(count));
    if (count == 0) break;
  }
  return bytes;
}

}  // namespace

namespace {

std::optional<stream_bytes> read_stream(const std::string& path) {
  if (path == "-") return stream_bytes{"<stdin>", read_all(STDIN_FILENO, "<stdin>")};
  struct stat status;
  if (::stat(path.c_str(), &status) != 0) return std::nullopt;  // reported by the open
  if (!S_ISFIFO(status.st_mode) && !S_ISCHR(status.st_mode) && !S_ISSOCK(status.st_mode))
    return std::nullopt;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw error(errc::io_error, fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } const close_it{fd};
  return stream_bytes{path, read_all(fd, path)};
}

}  // namespace

std::optional<stream_bytes> read_if_stream(const std::string& path) {
  std::optional<stream_bytes> stream = read_stream(path);
  if (stream && is_shard_manifest(std::span<const std::byte>(stream->bytes))) {
    throw usage_error(fmt::format(
        "{}: a shard manifest cannot be read from a stream: its shards are found relative to "
        "its directory; give its path",
        stream->name));
  }
  return stream;
}

open_index::open_index(const std::string& path, const open_options& options) {
  std::optional<stream_bytes> stream = read_if_stream(path);
  if (!stream) {
    index_ = std::make_unique<sharded_reader>(sharded_reader::open(path, options));
    return;
  }
  stream_ = std::move(*stream);
  index_ = std::make_unique<sharded_reader>(
      bbtree::reader::from_memory(std::span<const std::byte>(stream_.bytes), stream_.name));
}

const bbtree::reader& open_index::reader() const {
  if (index_->is_shard_set()) {
    throw usage_error(
        fmt::format("{} is a shard manifest; this reads one index file: give one of its "
                    "shards (bbtree-dump --header {} lists them)",
                    index_->name(), index_->name()));
  }
  return index_->shard(0);
}

std::unique_ptr<entry_writer> stdout_writer(text_format format, const entry_types& types) {
  return std::make_unique<entry_writer>(STDOUT_FILENO, "<stdout>", format, types);
}

}  // namespace bbtree::tools
