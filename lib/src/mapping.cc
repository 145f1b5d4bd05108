// Where a reader's bytes live: see mapping.h.
//
// The background copy relies on the format holding no pointers: the same
// bytes answer at any address, so a copy can take the mapping's place while
// lookups run.  It takes the same address, too (mremap), so that nothing
// that points into the bytes, such as a cursor's leaf, has to change.
#include "mapping.h"

#include "code_layout.h"
#include "file_io.h"

#include <fmt/format.h>
#include <boost/interprocess/file_mapping.hpp>
#include <boost/interprocess/mapped_region.hpp>

#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace bbtree::detail {

namespace fs = std::filesystem;
namespace bip = boost::interprocess;

namespace {

constexpr std::size_t huge_page_size = std::size_t{2} << 20;

std::size_t round_up_to_huge_pages(std::uint64_t size) {
  return static_cast<std::size_t>((size + huge_page_size - 1) / huge_page_size * huge_page_size);
}

// `length` bytes of inaccessible address space starting at a 2 MiB
// boundary, so that transparent huge pages can back whatever replaces it.
// Returns nullptr when the address space is exhausted.
unsigned char* reserve_aligned(std::size_t length, int protection) {
  const std::size_t reserved = length + huge_page_size;
  void* mapping = ::mmap(nullptr, reserved, protection, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) return nullptr;
  auto* start = static_cast<unsigned char*>(mapping);
  auto* aligned = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<std::uintptr_t>(start) + huge_page_size - 1) & ~(huge_page_size - 1));
  // Trim the slack now: a hole left for later could be reused by another
  // thread's mapping before it was unmapped.
  if (aligned > start) ::munmap(start, static_cast<std::size_t>(aligned - start));
  unsigned char* tail = aligned + length;
  if (start + reserved > tail) ::munmap(tail, static_cast<std::size_t>(start + reserved - tail));
  return aligned;
}

BBTREE_FIRST_ANSWER void apply_advice(void* address, std::size_t length,
                                      const open_options& options, bool file_backed) {
  if (length == 0) return;
  if (options.memory == memory_mode::map_huge_pages && file_backed) {
    ::madvise(address, length, MADV_HUGEPAGE);  // advisory: failure leaves normal pages
  }
  if (options.advice == access_advice::random) ::madvise(address, length, MADV_RANDOM);
  if (options.advice == access_advice::sequential) ::madvise(address, length, MADV_SEQUENTIAL);
  if (options.populate) {
    ::madvise(address, length, MADV_WILLNEED);
    // Touch every page so that the first queries find them mapped.
    const auto* bytes = static_cast<const volatile unsigned char*>(address);
    unsigned char sink = 0;
    for (std::size_t offset = 0; offset < length; offset += 4096) sink ^= bytes[offset];
    (void)sink;
  }
}

// Reads the file into fresh 2 MiB-aligned anonymous memory advised for huge
// pages, `rounded` bytes long, and makes it read-only.  Returns nullptr
// when it gives up: no memory, a read error, or `stop` set between chunks.
unsigned char* read_into_huge_pages(int fd, const fs::path& path, std::uint64_t size,
                                    std::size_t rounded, const std::atomic<bool>* stop) {
  unsigned char* copy = reserve_aligned(rounded, PROT_READ | PROT_WRITE);
  if (copy == nullptr) return nullptr;
  ::madvise(copy, rounded, MADV_HUGEPAGE);
  try {
    // One huge page a read: each read faults in one page, and a stop
    // request waits for at most one of them.
    for (std::uint64_t offset = 0; offset < size; offset += huge_page_size) {
      if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
        ::munmap(copy, rounded);
        return nullptr;
      }
      const std::uint64_t length = std::min<std::uint64_t>(huge_page_size, size - offset);
      pread_all(fd, copy + offset, static_cast<std::size_t>(length), offset, path);
    }
  } catch (const error&) {
    ::munmap(copy, rounded);
    if (stop == nullptr) throw;
    return nullptr;
  }
  ::mprotect(copy, rounded, PROT_READ);
  return copy;
}

}  // namespace

// A file mapping at a 2 MiB boundary, and the thread that copies the file
// into huge pages and moves the copy over the mapping.  Destroying it stops
// the thread (within one huge page's read) and unmaps whichever is there.
class background_copy {
 public:
  background_copy(fs::path path, std::uint64_t size, file_descriptor fd, unsigned char* base,
                  std::size_t rounded)
      : path_(std::move(path)), size_(size), fd_(std::move(fd)), base_(base), rounded_(rounded) {}
  ~background_copy() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
    ::munmap(base_, rounded_);
  }
  background_copy(const background_copy&) = delete;
  background_copy& operator=(const background_copy&) = delete;

  void start() {
    try {
      thread_ = std::thread([this] { run(); });
    } catch (const std::system_error&) {
      finish(false);  // no thread: the file mapping goes on serving
    }
  }

  bool wait() {
    std::unique_lock lock(mutex_);
    finished_changed_.wait(lock, [this] { return finished_; });
    return in_place_;
  }

 private:
  void run() noexcept {
    unsigned char* copy = read_into_huge_pages(fd_.get(), path_, size_, rounded_, &stop_);
    fd_.reset();
    if (copy == nullptr) return finish(false);
    if (stop_.load(std::memory_order_relaxed)) {
      ::munmap(copy, rounded_);
      return finish(false);
    }
    // Atomic for the readers: the kernel replaces the mapping under the
    // mmap lock, so a concurrent access finds either the file's page or the
    // copy's, and the bytes are the same.  Both ends are 2 MiB-aligned, so
    // the huge pages move whole.
    void* moved = ::mremap(copy, rounded_, rounded_, MREMAP_MAYMOVE | MREMAP_FIXED, base_);
    if (moved == MAP_FAILED) {
      ::munmap(copy, rounded_);
      return finish(false);
    }
    finish(true);
  }

  void finish(bool in_place) {
    {
      std::lock_guard lock(mutex_);
      finished_ = true;
      in_place_ = in_place;
    }
    finished_changed_.notify_all();
  }

  const fs::path path_;
  const std::uint64_t size_;
  file_descriptor fd_;
  unsigned char* const base_;
  const std::size_t rounded_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable finished_changed_;
  bool finished_ = false;
  bool in_place_ = false;
  std::thread thread_;
};

void start_background_copy(background_copy& copy) { copy.start(); }
bool wait_for_background_copy(background_copy& copy) { return copy.wait(); }

namespace {

// Reads the header through `fd` into result.header; on a short read the
// reader checks the header in the mapping instead.
BBTREE_FIRST_ANSWER void read_header(int fd, std::uint64_t size, mapped_bytes& result) {
  const std::size_t wanted =
      static_cast<std::size_t>(std::min<std::uint64_t>(size, format::header_size));
  result.header_read = ::pread(fd, result.header.data(), wanted, 0) == static_cast<ssize_t>(wanted);
}

// Boost's mapped_region constructor is a template that the compiler keeps
// out of line, among the library's other instantiations: flattened into
// this hot function, it joins the open path's code (code_layout.h).
BBTREE_FIRST_ANSWER [[gnu::flatten]] std::shared_ptr<bip::mapped_region> map_region(
    const char* path, std::uint64_t size, mapped_bytes& result) {
  bip::file_mapping mapping(path, bip::read_only);
  auto region = std::make_shared<bip::mapped_region>(mapping, bip::read_only, 0, size);
  read_header(mapping.get_mapping_handle().handle, size, result);
  return region;
}

}  // namespace

BBTREE_FIRST_ANSWER mapped_bytes map_file(const char* file, std::uint64_t size,
                                          const open_options& options) {
  mapped_bytes result;
  result.size = size;
  if (options.memory == memory_mode::copy_huge_pages) {
    const fs::path path(file);  // the copying modes read the whole file anyway
    const std::size_t rounded = round_up_to_huge_pages(size);
    file_descriptor fd = open_for_reading(path);
    unsigned char* copy = read_into_huge_pages(fd.get(), path, size, rounded, nullptr);
    if (copy == nullptr) throw_errno("cannot allocate memory for", path);
    result.base = copy;
    result.holder =
        std::shared_ptr<void>(copy, [rounded](void* address) { ::munmap(address, rounded); });
    apply_advice(copy, size, options, false);
    return result;
  }
  if (options.memory == memory_mode::map_then_copy_huge_pages) {
    const fs::path path(file);
    const std::size_t rounded = round_up_to_huge_pages(size);
    file_descriptor fd = open_for_reading(path);
    unsigned char* base = reserve_aligned(rounded, PROT_NONE);
    if (base == nullptr) throw_errno("cannot reserve address space for", path);
    // Within the reservation, so that the copy can later replace exactly
    // this range and the unmapping of one range releases either.
    if (::mmap(base, static_cast<std::size_t>(size), PROT_READ, MAP_SHARED | MAP_FIXED, fd.get(),
               0) == MAP_FAILED) {
      const int saved = errno;
      ::munmap(base, rounded);
      errno = saved;
      throw_errno("cannot map", path);
    }
    read_header(fd.get(), size, result);
    auto copy = std::make_shared<background_copy>(path, size, std::move(fd), base, rounded);
    apply_advice(base, size, options, true);
    result.base = base;
    result.copy = copy.get();
    result.holder = std::move(copy);
    return result;
  }
  std::shared_ptr<bip::mapped_region> region;
  try {
    region = map_region(file, size, result);
  } catch (const bip::interprocess_exception& failure) {
    throw error(errc::io_error, fmt::format("cannot map {}: {}", file, failure.what()));
  }
  apply_advice(region->get_address(), region->get_size(), options, true);
  result.base = static_cast<const unsigned char*>(region->get_address());
  result.holder = std::move(region);
  return result;
}

}  // namespace bbtree::detail
