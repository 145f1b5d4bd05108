// POSIX file helpers shared by the builder and the reader: an owning file
// descriptor, complete reads and writes that report the file's name, and the
// temporary-file discipline that makes a build atomic.
#pragma once

#include <bbtree/error.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

struct stat;

namespace bbtree::detail {

// Throws error(io_error, "<what> <path>: <strerror(errno)>").
[[noreturn]] void throw_errno(std::string_view what, const std::filesystem::path& path);

class file_descriptor {
 public:
  file_descriptor() = default;
  explicit file_descriptor(int fd) noexcept : fd_(fd) {}
  ~file_descriptor() { reset(); }
  file_descriptor(file_descriptor&& other) noexcept : fd_(other.release()) {}
  file_descriptor& operator=(file_descriptor&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.release();
    }
    return *this;
  }
  file_descriptor(const file_descriptor&) = delete;
  file_descriptor& operator=(const file_descriptor&) = delete;

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  int release() noexcept {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset() noexcept;

 private:
  int fd_ = -1;
};

// Opens `path` read-only (close-on-exec); throws error(io_error, "cannot
// open <path>: ...").
file_descriptor open_for_reading(const std::filesystem::path& path);

// Throws error(io_error, "cannot open <name>: Is a directory" or "...: not
// a regular file") unless `status` (from stat or fstat) is a regular
// file's: an index is mapped, which a pipe or a device cannot be.
void require_regular_file(const struct stat& status, std::string_view name);

// Opens `path`, which must be a regular file, read-only and sets `size` to
// its length; throws error(io_error, ...) naming it otherwise.  A FIFO
// where a file was expected would block open(2) until a writer came: it is
// refused before any open, and the open does not wait (O_NONBLOCK, which
// changes nothing for regular files) if the path changes in between.
file_descriptor open_regular_file(const std::filesystem::path& path, std::uint64_t& size);

// Writes all of `data` at the file's current position (or at `offset`).
void write_all(int fd, const void* data, std::size_t length, const std::filesystem::path& path);
void pwrite_all(int fd, const void* data, std::size_t length, std::uint64_t offset,
                const std::filesystem::path& path);
// Reads exactly `length` bytes at `offset`; short files are an io_error.
void pread_all(int fd, void* data, std::size_t length, std::uint64_t offset,
               const std::filesystem::path& path);
// An unnamed file in `directory` (O_TMPFILE), or where the file system has
// none, a named one that is unlinked at once.  Either way nothing is left
// behind if the process dies.
file_descriptor create_anonymous_file(const std::filesystem::path& directory);

// Removes the named scratch files that create_anonymous_file's fallback
// left in `directory` when its process died between creating and unlinking
// one (whose process is gone).  Never throws.
void remove_stale_scratch_files(const std::filesystem::path& directory) noexcept;

// A file that a build has had to give a name before publishing or
// removing it (a shard set's finished shards, a staging file where the file
// system has no unnamed files): while an object of this class lives, a
// signal handler can remove the file (remove_temporary_files_on_signal,
// builder.h).  Its owner still removes or publishes the file as before.
class removable_on_signal {
 public:
  explicit removable_on_signal(const std::filesystem::path& path);
  ~removable_on_signal();
  removable_on_signal(removable_on_signal&& other) noexcept : entry_(other.entry_) {
    other.entry_ = nullptr;
  }
  removable_on_signal& operator=(removable_on_signal&&) = delete;
  removable_on_signal(const removable_on_signal&) = delete;
  removable_on_signal& operator=(const removable_on_signal&) = delete;

  struct entry;

 private:
  entry* entry_;
};

// Removes every file of a live removable_on_signal; safe in a signal
// handler (remove_temporary_files_on_signal, builder.h).
void remove_named_temporaries() noexcept;

// The file a build writes before publishing it.  It is created unnamed where
// the file system allows; publish() gives it the destination's name
// atomically.  If the object is destroyed unpublished, nothing remains.
class staged_file {
 public:
  // Removes stale temporary files of earlier builds of the same destination
  // whose process is gone, then creates the staging file.
  staged_file(std::filesystem::path destination, bool overwrite);
  ~staged_file();
  staged_file(const staged_file&) = delete;
  staged_file& operator=(const staged_file&) = delete;

  int fd() const noexcept { return fd_.get(); }
  const std::filesystem::path& destination() const noexcept { return destination_; }

  // fsyncs (if `sync`), then renames the file over the destination (or
  // fails with already_exists when overwriting was not allowed), then
  // fsyncs the directory.
  void publish(bool sync);
  // Discards the file.  Idempotent, never throws.
  void discard() noexcept;

 private:
  std::filesystem::path destination_;
  std::filesystem::path directory_;
  std::filesystem::path named_path_;                    // set while the file has a temporary name
  std::optional<removable_on_signal> named_on_signal_;  // with named_path_
  file_descriptor fd_;
  bool overwrite_ = false;
  bool published_ = false;
};

// The prefix of temporary names for `destination`, for tests that check
// nothing is left behind: ".<name>.bbtree-tmp-".
std::string temporary_name_prefix(const std::filesystem::path& destination);

}  // namespace bbtree::detail
