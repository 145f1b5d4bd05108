#include <bbtree/format/endian.h>
#include <bbtree/import.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bbtree {

namespace fs = std::filesystem;

namespace detail {
namespace {

// How often, in entries, the progress callback runs: rarely enough to cost
// nothing, often enough for a display that updates a few times a second.
constexpr std::uint64_t progress_interval = 8192;

// An input: a file, or standard input for "-".  Files are checked when the
// import starts, so that a missing one fails it at once, but opened only in
// turn: a build from thousands of files must not run out of descriptors.
class input_file {
 public:
  explicit input_file(const std::string& path) : path_(path) {
    struct stat status;
    if (path == "-") {
      name_ = "<stdin>";
      if (::fstat(STDIN_FILENO, &status) != 0) return;
    } else {
      name_ = path;
      if (::stat(path.c_str(), &status) != 0) fail_to_open(errno);
      if (S_ISDIR(status.st_mode)) fail_to_open(EISDIR);
    }
    if (S_ISREG(status.st_mode)) size_ = static_cast<std::uint64_t>(status.st_size);
  }
  ~input_file() { close(); }
  input_file(input_file&& other) noexcept
      : path_(std::move(other.path_)),
        name_(std::move(other.name_)),
        size_(other.size_),
        fd_(std::exchange(other.fd_, -1)) {}
  input_file(const input_file&) = delete;
  input_file& operator=(const input_file&) = delete;
  input_file& operator=(input_file&&) = delete;

  // Opens the file from its start (standard input: where it is).
  int open() {
    if (path_ == "-") return STDIN_FILENO;
    close();
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail_to_open(errno);
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
    return fd_;
  }
  void close() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  const std::string& name() const noexcept { return name_; }
  // The size of a regular file; nullopt for a pipe or a terminal.
  std::optional<std::uint64_t> size() const noexcept { return size_; }
  // A regular file named on the command line can be read a second time.
  bool rereadable() const noexcept { return path_ != "-" && size_.has_value(); }

 private:
  [[noreturn]] void fail_to_open(int error_number) const {
    throw error(errc::io_error,
                fmt::format("{}: cannot open: {}", path_, std::strerror(error_number)));
  }

  std::string path_;
  std::string name_;
  std::optional<std::uint64_t> size_;
  int fd_ = -1;
};

// The key of the entry before, for order checks and their messages.  Keys
// of the integer kinds (8 bytes) are kept and compared as words: this runs
// for every line of a sorted import, and a string copy and a memcmp call
// cost more than the rest of the check.
class previous_key {
 public:
  bool empty() const noexcept { return !present_; }
  std::string_view view() const noexcept {
    return word_key_ ? std::string_view(reinterpret_cast<const char*>(word_), 8)
                     : std::string_view(bytes_);
  }

  // Orders `key` against the key kept, as memcmp with the shorter first.
  int compare(std::string_view key) const noexcept {
    if (word_key_ && key.size() == 8) {
      const std::uint64_t next = format::load_be<std::uint64_t>(key.data());
      const std::uint64_t previous = format::load_be<std::uint64_t>(word_);
      return (next > previous) - (next < previous);
    }
    return key.compare(view());
  }

  void assign(std::string_view key) {
    present_ = true;
    word_key_ = key.size() == 8;
    if (word_key_) {
      std::memcpy(word_, key.data(), 8);
    } else {
      bytes_.assign(key);
    }
  }

 private:
  bool present_ = false;
  bool word_key_ = false;
  unsigned char word_[8] = {};
  std::string bytes_;
};

std::string quoted_key(std::string_view key, const entry_types& types) {
  constexpr std::size_t shown = 80;
  std::string text = key_text(key, types);
  if (text.size() > shown) text = text.substr(0, shown) + "...";
  return "\"" + text + "\"";
}

// Checks what the builder would only find after all the input is read.
void check_destination(const fs::path& destination, bool overwrite) {
  if (!overwrite && ::access(destination.c_str(), F_OK) == 0) {
    throw error(errc::already_exists,
                fmt::format("{} already exists (use --force to replace it)", destination.string()));
  }
  const fs::path parent = destination.has_parent_path() ? destination.parent_path() : fs::path(".");
  struct stat status;
  if (::stat(parent.c_str(), &status) != 0) {
    throw error(errc::io_error, fmt::format("cannot create {}: {}: {}", destination.string(),
                                            parent.string(), std::strerror(errno)));
  }
  if (!S_ISDIR(status.st_mode)) {
    throw error(errc::io_error, fmt::format("cannot create {}: {} is not a directory",
                                            destination.string(), parent.string()));
  }
}

// Adds an entry, blaming its input line for whatever the builder refuses;
// an external sort is also given the entry's origin, to name it by if it
// finds the key again later (importer::sort).
template <typename Builder, typename... Origin>
void add_entry(Builder& builder, const entry_view& entry, const entry_reader& reader,
               Origin... origin) {
  try {
    builder.add(entry.key, entry.value, origin...);
  } catch (const input_error&) {
    throw;
  } catch (const duplicate_key_error&) {
    throw;  // found by the sort, with some other line: see importer::sort
  } catch (const error& e) {
    if (e.code() == errc::io_error) throw;
    throw input_error(e.code(), reader.position() + ": " + e.what());
  }
}

// Counts the keys handed to it, equal keys (which come together) once.
class distinct_key_counter {
 public:
  void add(std::string_view key, std::string_view) {
    if (count_ == 0 || key != last_) ++count_;
    last_.assign(key);
  }
  std::uint64_t count() const noexcept { return count_; }

 private:
  std::uint64_t count_ = 0;
  std::string last_;
};

class importer {
 public:
  importer(std::span<const std::string> paths, const build_options& options,
           const import_options& import)
      : options_(options), import_(import), types_(entry_types::of(options)) {
    inputs_.reserve(paths.size());
    bool sizes_known = true;
    for (const std::string& path : paths) {
      inputs_.emplace_back(path);
      if (const auto size = inputs_.back().size()) {
        progress_.total_bytes += *size;
      } else {
        sizes_known = false;
      }
    }
    if (!sizes_known) progress_.total_bytes = 0;
  }

  build_summary build_sorted(const fs::path& destination) {
    builder out(destination, options_);
    read_sorted(out);
    return out.finish();
  }
  void build_sorted(sorted_entry_sink& out) { read_sorted(out); }

  // What build_sorted would hand on: entries, equal keys counted once.
  std::uint64_t count_sorted() {
    distinct_key_counter counter;
    read_sorted(counter);
    return counter.count();
  }

  bool rereadable() const noexcept {
    return std::all_of(inputs_.begin(), inputs_.end(),
                       [](const input_file& input) { return input.rereadable(); });
  }

  build_summary build_unsorted(const fs::path& destination) {
    check_destination(destination, options_.overwrite);
    build_summary summary;
    sort(destination, [&](external_sorting_builder& sorted) { summary = sorted.finish(); });
    return summary;
  }
  void build_unsorted(const fs::path& destination, sorted_entry_sink& out) {
    sort(destination, [&](external_sorting_builder& sorted) { sorted.finish_into(out); });
  }

 private:
  // The inputs, in key order, into `out`, checked on the way: the order,
  // and duplicates under duplicate_policy::error, named by their lines.
  template <typename Out>
  void read_sorted(Out& out) {
    previous_key previous;
    std::size_t previous_input = 0;
    std::uint64_t previous_line = 0;
    const auto previous_place = [&] {
      return entry_reader::place(inputs_[previous_input].name(), import_.format, previous_line);
    };
    for (std::size_t input = 0; input < inputs_.size(); ++input) {
      entry_reader reader = open_reader(input);
      while (const auto entry = reader.next()) {
        if (!previous.empty()) {
          const int order = previous.compare(entry->key);
          if (order < 0) {
            throw input_error(errc::out_of_order,
                              fmt::format("{}: key {} is out of order: it comes after {} ({})",
                                          reader.position(), quoted_key(entry->key, types_),
                                          quoted_key(previous.view(), types_), previous_place()));
          }
          if (order == 0 && options_.duplicates == duplicate_policy::error) {
            throw input_error(errc::duplicate_key,
                              fmt::format("{}: duplicate key {} (first at {})", reader.position(),
                                          quoted_key(entry->key, types_), previous_place()));
          }
        }
        add_entry(out, *entry, reader);
        previous.assign(entry->key);
        previous_input = input;
        previous_line = reader.line();
        count(reader);
      }
      finish_input(input, reader);
    }
    report_done();
  }

  // The inputs through an external sort, which `finish` then finishes;
  // runs go beside `destination` unless import_options say otherwise.
  // Each entry's origin is its line counted across the inputs: input i's
  // line n is origin line_bases[i] + n, and the bases ascend.
  template <typename Finish>
  void sort(const fs::path& destination, Finish finish) {
    sort_options sort;
    sort.memory = import_.memory != 0 ? import_.memory : default_sort_memory();
    sort.temporary_directory = import_.temporary_directory;
    sort.progress = [this](const sort_progress& step) { follow_sort(step); };
    external_sorting_builder out(destination, options_, std::move(sort));
    std::vector<std::uint64_t> line_bases;
    try {
      std::uint64_t line_base = 0;
      for (std::size_t input = 0; input < inputs_.size(); ++input) {
        line_bases.push_back(line_base);
        entry_reader reader = open_reader(input);
        while (const auto entry = reader.next()) {
          add_entry(out, *entry, reader, line_base + reader.line());
          count(reader);
        }
        line_base += reader.line();
        finish_input(input, reader);
      }
      report_done();
      finish(out);
    } catch (const duplicate_key_error& found) {
      const auto where = [&](std::uint64_t origin) {
        const std::size_t input = static_cast<std::size_t>(
            std::upper_bound(line_bases.begin(), line_bases.end(), origin - 1) -
            line_bases.begin() - 1);
        return entry_reader::place(inputs_[input].name(), import_.format,
                                   origin - line_bases[input]);
      };
      throw input_error(errc::duplicate_key,
                        fmt::format("{}: duplicate key {} (first at {})", where(found.origin()),
                                    quoted_key(found.key(), types_), where(found.first_origin())));
    }
  }

  entry_reader open_reader(std::size_t input) {
    return entry_reader(inputs_[input].open(), inputs_[input].name(), import_.format, types_);
  }

  void count(const entry_reader& reader) {
    ++progress_.entries;
    if (import_.progress && progress_.entries % progress_interval == 0) {
      progress_.bytes_read = bytes_before_ + reader.bytes_read();
      import_.progress(progress_);
    }
  }

  void finish_input(std::size_t input, const entry_reader& reader) {
    bytes_before_ += reader.bytes_read();
    inputs_[input].close();
  }

  // Reading is reported by count(); the sort adds its runs to that, and
  // reports merging and writing itself.
  void follow_sort(const sort_progress& step) {
    progress_.runs = step.runs;
    if (step.phase == sort_phase::reading) return;
    progress_.phase = step.phase;
    progress_.pass = step.pass;
    progress_.passes = step.passes;
    progress_.done = step.done;
    progress_.total = step.total;
    if (import_.progress) import_.progress(progress_);
  }

  void report_done() {
    progress_.bytes_read = bytes_before_;
    progress_.reading_done = true;
    if (import_.progress) import_.progress(progress_);
  }

  const build_options& options_;
  const import_options& import_;
  entry_types types_;
  std::vector<input_file> inputs_;
  import_progress progress_;
  std::uint64_t bytes_before_ = 0;  // in the inputs already read
};

}  // namespace
}  // namespace detail

namespace detail {
namespace {

// No inputs means standard input.
std::span<const std::string> input_paths(std::span<const std::string> inputs) {
  static const std::string standard_input = "-";
  return inputs.empty() ? std::span<const std::string>(&standard_input, 1) : inputs;
}

}  // namespace
}  // namespace detail

build_summary import_entries(std::span<const std::string> inputs,
                             const std::filesystem::path& destination, const build_options& options,
                             const import_options& import) {
  validate(options);
  detail::importer importer(detail::input_paths(inputs), options, import);
  return import.sorted ? importer.build_sorted(destination) : importer.build_unsorted(destination);
}

std::optional<std::uint64_t> count_sorted_entries(std::span<const std::string> inputs,
                                                  const build_options& options,
                                                  const import_options& import) {
  validate(options);
  detail::importer importer(detail::input_paths(inputs), options, import);
  if (!importer.rereadable()) return std::nullopt;
  return importer.count_sorted();
}

void import_into(std::span<const std::string> inputs, sorted_entry_sink& out,
                 const std::filesystem::path& destination, const build_options& options,
                 const import_options& import) {
  validate(options);
  detail::importer importer(detail::input_paths(inputs), options, import);
  if (import.sorted) {
    importer.build_sorted(out);
  } else {
    importer.build_unsorted(destination, out);
  }
}

}  // namespace bbtree
