#include "file_io.h"
#include "code_layout.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <random>

#include <stdio.h>  // renameat2, RENAME_NOREPLACE

namespace bbtree::detail {

namespace fs = std::filesystem;

void throw_errno(std::string_view what, const fs::path& path) {
  const int saved = errno;
  throw error(errc::io_error, fmt::format("{} {}: {}", what, path.string(), std::strerror(saved)));
}

void file_descriptor::reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

BBTREE_FIRST_ANSWER file_descriptor open_for_reading(const std::filesystem::path& path) {
  file_descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) throw_errno("cannot open", path);
  return fd;
}

BBTREE_FIRST_ANSWER void require_regular_file(const struct stat& status, std::string_view name) {
  if (S_ISREG(status.st_mode)) [[likely]]
    return;
  throw error(errc::io_error,
              fmt::format("cannot open {}: {}", name,
                          S_ISDIR(status.st_mode) ? "Is a directory" : "not a regular file"));
}

file_descriptor open_regular_file(const std::filesystem::path& path, std::uint64_t& size) {
  // Checked before the open as well as after it: even a non-blocking open
  // of a FIFO lets a writer waiting on it start, whose bytes are then lost.
  struct stat status;
  if (::stat(path.c_str(), &status) != 0) throw_errno("cannot open", path);
  require_regular_file(status, path.string());
  file_descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) throw_errno("cannot open", path);
  if (::fstat(fd.get(), &status) != 0) throw_errno("cannot read", path);
  require_regular_file(status, path.string());
  size = static_cast<std::uint64_t>(status.st_size);
  return fd;
}

void write_all(int fd, const void* data, std::size_t length, const fs::path& path) {
  const auto* bytes = static_cast<const char*>(data);
  while (length > 0) {
    const ssize_t written = ::write(fd, bytes, length);
    if (written < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot write", path);
    }
    bytes += written;
    length -= static_cast<std::size_t>(written);
  }
}

void pwrite_all(int fd, const void* data, std::size_t length, std::uint64_t offset,
                const fs::path& path) {
  const auto* bytes = static_cast<const char*>(data);
  while (length > 0) {
    const ssize_t written = ::pwrite(fd, bytes, length, static_cast<off_t>(offset));
    if (written < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot write", path);
    }
    bytes += written;
    offset += static_cast<std::uint64_t>(written);
    length -= static_cast<std::size_t>(written);
  }
}

void pread_all(int fd, void* data, std::size_t length, std::uint64_t offset, const fs::path& path) {
  auto* bytes = static_cast<char*>(data);
  while (length > 0) {
    const ssize_t got = ::pread(fd, bytes, length, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot read", path);
    }
    if (got == 0) {
      throw error(errc::io_error,
                  fmt::format("cannot read {}: unexpected end of file", path.string()));
    }
    bytes += got;
    offset += static_cast<std::uint64_t>(got);
    length -= static_cast<std::size_t>(got);
  }
}

namespace {

std::string random_suffix() {
  std::random_device device;
  return fmt::format("{:08x}", device());
}

fs::path directory_of(const fs::path& destination) {
  fs::path directory = destination.parent_path();
  return directory.empty() ? fs::path(".") : directory;
}

// Temporary names carry the builder's pid, so that a later build can tell a
// stale file (its process is gone) from one still being written.
void remove_stale_temporaries(const fs::path& destination) {
  const std::string prefix = temporary_name_prefix(destination);
  std::error_code ignored;
  for (const auto& item : fs::directory_iterator(directory_of(destination), ignored)) {
    const std::string name = item.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      fs::remove(item.path(), ignored);
    }
  }
}

}  // namespace

std::string temporary_name_prefix(const fs::path& destination) {
  // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on
  // a chain of operator+.
  std::string prefix = ".";
  prefix += destination.filename().string();
  prefix += ".bbtree-tmp-";
  return prefix;
}

namespace {
// The fallback names of create_anonymous_file: the prefix, the pid, "-".
constexpr std::string_view scratch_name_prefix = ".bbtree-scratch-";
}  // namespace

void remove_stale_scratch_files(const fs::path& directory) noexcept {
  std::error_code ignored;
  for (const auto& item : fs::directory_iterator(directory, ignored)) {
    const std::string name = item.path().filename().string();
    if (!name.starts_with(scratch_name_prefix)) continue;
    const long pid = std::strtol(name.c_str() + scratch_name_prefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      fs::remove(item.path(), ignored);
    }
  }
}

file_descriptor create_anonymous_file(const fs::path& directory) {
  int fd = ::open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
  if (fd >= 0) return file_descriptor(fd);
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
    throw_errno("cannot create a temporary file in", directory);
  }
  const fs::path path = directory / (std::string(scratch_name_prefix) + std::to_string(::getpid()) +
                                     "-" + random_suffix());
  fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) throw_errno("cannot create a temporary file in", directory);
  ::unlink(path.c_str());
  return file_descriptor(fd);
}

// The registry of removable_on_signal: a list read by a signal handler,
// which may interrupt any thread at any point, so it takes no lock and
// frees nothing.  Entries are pushed atomically and never unlinked; a
// released entry is reused for a later name that fits its buffer, so the
// list grows only to the most names live at once (a shard set's shards).
// A name is rewritten only between two increments of `version` (a
// seqlock): the handler copies a name and unlinks it only if `version` was
// even and unchanged around the copy, so it never acts on a half-written
// name.
struct removable_on_signal::entry {
  std::atomic<std::uint64_t> version{0};  // odd while `path` is written
  std::atomic<bool> live{false};
  std::atomic<bool> claimed{true};
  char* path = nullptr;  // NUL-terminated; `capacity` bytes, never freed
  std::size_t capacity = 0;
  entry* next = nullptr;
};

namespace {
std::atomic<removable_on_signal::entry*> removable_names{nullptr};
}  // namespace

removable_on_signal::removable_on_signal(const fs::path& path) : entry_(nullptr) {
  const std::string& name = path.native();
  for (entry* at = removable_names.load(std::memory_order_acquire); at != nullptr; at = at->next) {
    bool released = false;
    if (at->capacity > name.size() &&
        at->claimed.compare_exchange_strong(released, true, std::memory_order_acquire)) {
      entry_ = at;
      break;
    }
  }
  if (entry_ == nullptr) {
    entry_ = new entry;
    entry_->capacity = std::max<std::size_t>(name.size() + 1, 128);
    entry_->path = new char[entry_->capacity];
    entry_->next = removable_names.load(std::memory_order_relaxed);
    while (!removable_names.compare_exchange_weak(entry_->next, entry_, std::memory_order_release,
                                                  std::memory_order_relaxed)) {
    }
  }
  entry_->version.fetch_add(1, std::memory_order_acq_rel);
  // Byte by byte as atomics: a handler on another thread may be copying.
  for (std::size_t i = 0; i <= name.size(); ++i) {
    std::atomic_ref<char>(entry_->path[i]).store(name.c_str()[i], std::memory_order_relaxed);
  }
  entry_->version.fetch_add(1, std::memory_order_release);
  entry_->live.store(true, std::memory_order_release);
}

removable_on_signal::~removable_on_signal() {
  if (entry_ == nullptr) return;
  entry_->live.store(false, std::memory_order_release);
  entry_->claimed.store(false, std::memory_order_release);
}

void remove_named_temporaries() noexcept {
  // Only atomic loads, a copy and unlink(2), which are async-signal-safe.
  char name[PATH_MAX];
  for (const removable_on_signal::entry* at = removable_names.load(std::memory_order_acquire);
       at != nullptr; at = at->next) {
    const std::uint64_t before = at->version.load(std::memory_order_acquire);
    if ((before & 1) != 0 || !at->live.load(std::memory_order_acquire)) continue;
    const std::size_t length = std::min<std::size_t>(at->capacity, sizeof(name));
    for (std::size_t i = 0; i < length; ++i) {
      name[i] = std::atomic_ref<char>(at->path[i]).load(std::memory_order_relaxed);
    }
    name[length - 1] = '\0';
    std::atomic_thread_fence(std::memory_order_acquire);
    if (at->version.load(std::memory_order_relaxed) != before) continue;
    ::unlink(name);
  }
}

staged_file::staged_file(fs::path destination, bool overwrite)
    : destination_(std::move(destination)),
      directory_(directory_of(destination_)),
      overwrite_(overwrite) {
  if (destination_.filename().empty()) {
    throw error(errc::invalid_argument,
                fmt::format("output {} names a directory, not a file", destination_.string()));
  }
  if (!overwrite_ && ::access(destination_.c_str(), F_OK) == 0) {
    throw error(errc::already_exists, fmt::format("{} already exists (use --force to replace it)",
                                                  destination_.string()));
  }
  struct stat directory_status;
  if (::stat(directory_.c_str(), &directory_status) != 0) {
    throw_errno("cannot create the output in", directory_);
  }
  if (!S_ISDIR(directory_status.st_mode)) {
    errno = ENOTDIR;
    throw_errno("cannot create the output in", directory_);
  }
  remove_stale_temporaries(destination_);
  int fd = ::open(directory_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
      throw_errno("cannot create a temporary file in", directory_);
    }
    named_path_ = directory_ / (temporary_name_prefix(destination_) + std::to_string(::getpid()) +
                                "-" + random_suffix());
    named_on_signal_.emplace(named_path_);
    fd = ::open(named_path_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0) {
      named_on_signal_.reset();
      named_path_.clear();
      throw_errno("cannot create a temporary file in", directory_);
    }
  }
  fd_ = file_descriptor(fd);
}

staged_file::~staged_file() { discard(); }

void staged_file::discard() noexcept {
  if (published_) return;
  if (!named_path_.empty()) {
    ::unlink(named_path_.c_str());
    named_on_signal_.reset();
    named_path_.clear();
  }
  fd_.reset();
}

void staged_file::publish(bool sync) {
  if (sync && ::fsync(fd_.get()) != 0) throw_errno("cannot sync", destination_);
  if (named_path_.empty()) {
    // Give the unnamed file a temporary name first: linkat cannot replace.
    const fs::path candidate = directory_ / (temporary_name_prefix(destination_) +
                                             std::to_string(::getpid()) + "-" + random_suffix());
    const std::string proc_path = "/proc/self/fd/" + std::to_string(fd_.get());
    named_on_signal_.emplace(candidate);
    if (::linkat(AT_FDCWD, proc_path.c_str(), AT_FDCWD, candidate.c_str(), AT_SYMLINK_FOLLOW) !=
        0) {
      named_on_signal_.reset();
      throw_errno("cannot create", candidate);
    }
    named_path_ = candidate;
  }
  if (overwrite_) {
    if (::rename(named_path_.c_str(), destination_.c_str()) != 0) {
      throw_errno("cannot rename the new index to", destination_);
    }
  } else if (::renameat2(AT_FDCWD, named_path_.c_str(), AT_FDCWD, destination_.c_str(),
                         RENAME_NOREPLACE) != 0) {
    if (errno == EEXIST) {
      throw error(errc::already_exists, fmt::format("{} already exists (use --force to replace it)",
                                                    destination_.string()));
    }
    throw_errno("cannot rename the new index to", destination_);
  }
  named_on_signal_.reset();
  named_path_.clear();
  published_ = true;
  fd_.reset();
  if (sync) {
    file_descriptor directory(::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (directory.valid()) ::fsync(directory.get());
  }
}

}  // namespace bbtree::detail
