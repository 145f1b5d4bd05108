// The external sort: sorted runs in unnamed temporary files, merged k ways
// into a builder.
//
// Memory.  The budget is one block, mapped at the first add() and only
// touched as it fills.  At first the whole block is one run buffer, so that
// input that fits in the budget is sorted in memory and never written out.
// When it overflows, that buffer is sorted (by both threads, half each) and
// written as the first run, and the block becomes two half buffers: add()
// fills one while the worker thread sorts and writes the other.  A run
// buffer keeps records from its bottom up and a 16-byte reference for each
// from its top down, so nothing grows past the buffer.  Before the merge,
// the block is freed; the merge's read buffers, its two hand-off batches
// and an allowance for the builder then share the budget.
//
// Order.  A reference holds the key's first eight bytes (big-endian, so
// that comparing them compares keys) and the record's offset in its buffer,
// which grows in the order entries were added.  Sorting by (key, offset)
// with std::sort is therefore stable without a stable sort's scratch
// memory, runs are numbered in input order, and merges break ties by run
// number and merge consecutive runs only: equal keys reach the builder in
// the order they were added, which is what keep_first and keep_last need.
//
// Records, in run buffers, run files and hand-off batches alike:
//   varint(key length) varint(value length) varint(origin) key value
// The origin is the caller's number for the entry (bbtree-build's is the
// input line; add(key, value) numbers entries from 1), kept so that a
// duplicate found in a run or by a merge names both entries that gave its
// key: by then nothing else says where they came from, and standard input
// cannot be read again to find out.  Under keep_first and keep_last, where
// equal keys are no error, every origin is 0, one byte.
// All runs of a pass live back to back in one unnamed file, so that the
// number of runs is limited by disk, not by file descriptors; a run's bytes
// are released (a hole punched) once merged.
#include <bbtree/external_sort.h>

#include "entry_limits.h"
#include "file_io.h"
#include "key_compare.h"
#include "loser_tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bbtree {

namespace fs = std::filesystem;

std::uint64_t physical_memory() noexcept {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

std::optional<std::string> sort_memory_problem(std::uint64_t memory) {
  static_assert(min_sort_memory == 64 << 10, "the message says 64K");
  if (memory < min_sort_memory) return "the sort needs at least 64K";
  if (const std::uint64_t physical = physical_memory(); physical != 0 && memory > physical) {
    return fmt::format("more than this machine's memory ({:.1f} GiB)",
                       static_cast<double>(physical) / static_cast<double>(1 << 30));
  }
  return std::nullopt;
}

std::uint64_t default_sort_memory() noexcept {
  constexpr std::uint64_t one_gib = std::uint64_t{1} << 30;
  constexpr std::uint64_t floor = std::uint64_t{64} << 20;
  const std::uint64_t physical = physical_memory();
  if (physical == 0) return one_gib;
  return std::clamp(physical / 4, floor, one_gib);
}

namespace detail {
namespace {

// ---------------------------------------------------------------------------
// Records

constexpr std::size_t max_varint_size = 10;

std::size_t varint_size(std::uint64_t number) noexcept {
  std::size_t size = 1;
  for (; number >= 0x80; number >>= 7) ++size;
  return size;
}

char* put_varint(char* out, std::uint64_t number) noexcept {
  for (; number >= 0x80; number >>= 7) *out++ = static_cast<char>(number | 0x80);
  *out++ = static_cast<char>(number);
  return out;
}

// The byte after the varint at `in`, or nullptr when [in, end) ends first.
const char* get_varint(const char* in, const char* end, std::uint64_t& number) noexcept {
  number = 0;
  for (unsigned shift = 0; in < end && shift < 64; shift += 7) {
    const auto byte = static_cast<unsigned char>(*in++);
    number |= std::uint64_t{byte & 0x7Fu} << shift;
    if (byte < 0x80) return in;
  }
  return nullptr;
}

struct record_view {
  std::string_view key;
  std::string_view value;
  std::uint64_t origin = 0;
};

std::size_t record_size(const record_view& record) noexcept {
  return varint_size(record.key.size()) + varint_size(record.value.size()) +
         varint_size(record.origin) + record.key.size() + record.value.size();
}

char* put_record_header(char* out, const record_view& record) noexcept {
  return put_varint(put_varint(put_varint(out, record.key.size()), record.value.size()),
                    record.origin);
}

char* put_record(char* out, const record_view& record) noexcept {
  out = put_record_header(out, record);
  if (!record.key.empty()) std::memcpy(out, record.key.data(), record.key.size());
  out += record.key.size();
  if (!record.value.empty()) std::memcpy(out, record.value.data(), record.value.size());
  return out + record.value.size();
}

void append_record(std::string& out, const record_view& record) {
  char header[3 * max_varint_size];
  const char* header_end = put_record_header(header, record);
  out.append(header, static_cast<std::size_t>(header_end - header));
  out.append(record.key);
  out.append(record.value);
}

// Decodes the record at `in`.  Returns the byte after it, or nullptr when
// [in, end) holds only part of it; `needed` is then its whole size, or 0
// while even its lengths are cut off.
const char* get_record(const char* in, const char* end, record_view& record,
                       std::size_t& needed) noexcept {
  std::uint64_t key_length = 0;
  std::uint64_t value_length = 0;
  const char* p = get_varint(in, end, key_length);
  if (p != nullptr) p = get_varint(p, end, value_length);
  if (p != nullptr) p = get_varint(p, end, record.origin);
  if (p == nullptr) {
    needed = 0;
    return nullptr;
  }
  const std::uint64_t size = static_cast<std::uint64_t>(p - in) + key_length + value_length;
  if (size > static_cast<std::uint64_t>(end - in)) {
    needed = static_cast<std::size_t>(size);
    return nullptr;
  }
  record.key = {p, static_cast<std::size_t>(key_length)};
  record.value = {p + key_length, static_cast<std::size_t>(value_length)};
  return in + size;
}

// The first eight bytes of a key as a big-endian number, zero-padded:
// numbers compare as the bytes do.
std::uint64_t key_prefix(std::string_view key) noexcept {
  std::uint64_t word = 0;
  std::memcpy(&word, key.data(), std::min<std::size_t>(8, key.size()));
  if constexpr (std::endian::native == std::endian::little) word = __builtin_bswap64(word);
  return word;
}

// Key comparison with the prefix first.
struct key_order {
  // Keys of one size of at most eight bytes: equal prefixes are equal keys.
  bool prefix_is_key = false;

  int compare(std::uint64_t prefix_a, std::string_view a, std::uint64_t prefix_b,
              std::string_view b) const noexcept {
    if (prefix_a != prefix_b) return prefix_a < prefix_b ? -1 : 1;
    return prefix_is_key ? 0 : compare_keys(a, b);
  }
};

// ---------------------------------------------------------------------------
// Run buffers

// Private anonymous memory, mapped here rather than allocated: the kernel
// backs a page only when it is first touched, as it does for glibc's malloc
// of a block this large, while a sanitizer's allocator sets up the whole
// block (under ASan + UBSan a malloc of 1 GiB touches 137 MB and takes
// about 0.9 s, which every bbtree-build of a few entries paid).
class anonymous_block {
 public:
  anonymous_block() = default;
  // Throws std::bad_alloc when the address space or the commit limit is
  // exhausted.
  explicit anonymous_block(std::size_t size) : size_(size) {
    void* mapping =
        ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<std::byte*>(mapping);
  }
  anonymous_block(anonymous_block&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  anonymous_block& operator=(anonymous_block&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~anonymous_block() { release(); }

  std::byte* data() const noexcept { return data_; }
  bool empty() const noexcept { return data_ == nullptr; }

 private:
  void release() noexcept {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = nullptr;
    size_ = 0;
  }

  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

struct sort_ref {
  std::uint64_t prefix;
  std::uint64_t offset;  // of the record in its buffer
};

class run_buffer {
 public:
  run_buffer() = default;
  run_buffer(std::byte* base, std::size_t capacity)
      : base_(reinterpret_cast<char*>(base)),
        capacity_(capacity / sizeof(sort_ref) * sizeof(sort_ref)) {}

  // The bytes an entry takes in a buffer.
  static std::size_t footprint(const record_view& record) noexcept {
    return record_size(record) + sizeof(sort_ref);
  }

  bool try_add(const record_view& record, std::uint64_t prefix) noexcept {
    if (arena_used_ + footprint(record) + count_ * sizeof(sort_ref) > capacity_) return false;
    ++count_;
    refs_end()[-static_cast<std::ptrdiff_t>(count_)] = sort_ref{prefix, arena_used_};
    arena_used_ = static_cast<std::size_t>(put_record(base_ + arena_used_, record) - base_);
    return true;
  }

  std::span<sort_ref> refs() const noexcept { return {refs_end() - count_, count_}; }
  record_view record(const sort_ref& ref) const noexcept {
    record_view result;
    std::size_t needed = 0;
    get_record(base_ + ref.offset, base_ + arena_used_, result, needed);
    return result;
  }
  std::string_view key(const sort_ref& ref) const noexcept { return record(ref).key; }
  // The record's first bytes on their way into cache.
  void prefetch(const sort_ref& ref) const noexcept { __builtin_prefetch(base_ + ref.offset); }

  bool empty() const noexcept { return count_ == 0; }
  std::size_t count() const noexcept { return count_; }
  void clear() noexcept {
    arena_used_ = 0;
    count_ = 0;
  }

 private:
  sort_ref* refs_end() const noexcept { return reinterpret_cast<sort_ref*>(base_ + capacity_); }

  char* base_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t arena_used_ = 0;
  std::size_t count_ = 0;
};

// (key, offset): offsets grow in input order, so equal keys keep it.
struct ref_before {
  const run_buffer* buffer;
  key_order order;

  bool operator()(const sort_ref& a, const sort_ref& b) const noexcept {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    if (!order.prefix_is_key) {
      const int keys = compare_keys(buffer->key(a), buffer->key(b));
      if (keys != 0) return keys < 0;
    }
    return a.offset < b.offset;
  }
};

// A buffer's references sorted as one or two sorted spans.
struct sorted_refs {
  std::span<sort_ref> first;
  std::span<sort_ref> second;
};

sorted_refs sort_buffer(const run_buffer& buffer, const key_order& order, bool both_threads) {
  const std::span<sort_ref> refs = buffer.refs();
  const ref_before before{&buffer, order};
  constexpr std::size_t worth_a_thread = 1 << 16;
  if (both_threads && refs.size() >= worth_a_thread) {
    const std::size_t middle = refs.size() / 2;
    std::optional<std::thread> helper;
    try {
      helper.emplace([&] { std::sort(refs.begin(), refs.begin() + middle, before); });
    } catch (const std::system_error&) {
      // No thread to be had: sort alone.
    }
    if (helper) {
      std::sort(refs.begin() + middle, refs.end(), before);
      helper->join();
      return {refs.first(middle), refs.subspan(middle)};
    }
  }
  std::sort(refs.begin(), refs.end(), before);
  return {refs, {}};
}

// The first entry added with the key, then a later one.
[[noreturn]] void throw_duplicate(std::string_view key, std::uint64_t first_origin,
                                  std::uint64_t origin, bool numbered_by_caller) {
  throw duplicate_key_error(
      std::string(key),
      fmt::format("duplicate key {} ({} {} and {})", quote_key(key),
                  numbered_by_caller ? "origins" : "entries", first_origin, origin),
      first_origin, origin);
}

// Passes a buffer's entries in order to `sink(record)`, applying the
// duplicate policy among them: of equal keys, the first or the last added,
// or duplicate_key_error.
template <typename Sink>
void emit_sorted(const run_buffer& buffer, const sorted_refs& sorted, const key_order& order,
                 duplicate_policy duplicates, bool numbered_by_caller, Sink&& sink) {
  const ref_before before{&buffer, order};
  auto same_key = [&](const sort_ref& a, const sort_ref& b) {
    return a.prefix == b.prefix && (order.prefix_is_key || buffer.key(a) == buffer.key(b));
  };
  const sort_ref* held = nullptr;
  auto take = [&](const sort_ref& next) {
    if (held != nullptr && same_key(*held, next)) {
      switch (duplicates) {
        case duplicate_policy::error: {
          const record_view first = buffer.record(*held);
          throw_duplicate(first.key, first.origin, buffer.record(next).origin, numbered_by_caller);
        }
        case duplicate_policy::keep_first:
          return;
        case duplicate_policy::keep_last:
          held = &next;
          return;
      }
    }
    if (held != nullptr) sink(buffer.record(*held));
    held = &next;
  };
  // In key order the records lie anywhere in the buffer, a cache miss
  // each: asked for a few records ahead on both sides, they overlap.
  constexpr std::ptrdiff_t ahead = 8;
  const auto prefetch_ahead = [&buffer](std::span<sort_ref>::iterator at,
                                        std::span<sort_ref>::iterator end) {
    if (end - at > ahead) buffer.prefetch(at[ahead]);
  };
  auto a = sorted.first.begin();
  auto b = sorted.second.begin();
  while (a != sorted.first.end() && b != sorted.second.end()) {
    prefetch_ahead(a, sorted.first.end());
    prefetch_ahead(b, sorted.second.end());
    take(before(*b, *a) ? *b++ : *a++);
  }
  for (; a != sorted.first.end(); ++a) {
    prefetch_ahead(a, sorted.first.end());
    take(*a);
  }
  for (; b != sorted.second.end(); ++b) {
    prefetch_ahead(b, sorted.second.end());
    take(*b);
  }
  if (held != nullptr) sink(buffer.record(*held));
}

// ---------------------------------------------------------------------------
// Run files

// Runs back to back in one unnamed file in the temporary directory.
class run_file {
 public:
  run_file(fs::path directory, std::size_t write_buffer_size)
      : directory_(std::move(directory)),
        fd_(create_anonymous_file(directory_)),
        write_buffer_size_(write_buffer_size) {}

  const fs::path& directory() const noexcept { return directory_; }

  // Appends an entry to the run being written.
  void append(const record_view& record) {
    const std::size_t size = record_size(record);
    if (buffer_.size() + size > write_buffer_size_) flush();
    if (size > write_buffer_size_) {
      std::string alone;
      append_record(alone, record);
      write_at_end(alone.data(), alone.size());
    } else {
      if (buffer_.capacity() < write_buffer_size_) buffer_.reserve(write_buffer_size_);
      append_record(buffer_, record);
    }
    ++run_entries_;
  }

  // Appends encoded records (a hand-off batch) to the run being written.
  void append_records(std::string_view records, std::uint64_t entries) {
    flush();
    write_at_end(records.data(), records.size());
    run_entries_ += entries;
  }

  struct extent {
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
    std::uint64_t entries = 0;
  };

  // Ends the run being written.
  extent close_run() {
    flush();
    const extent run{run_start_, end_ - run_start_, run_entries_};
    run_start_ = end_;
    run_entries_ = 0;
    return run;
  }

  void read(char* data, std::size_t length, std::uint64_t offset) const {
    while (length > 0) {
      const ssize_t got = ::pread(fd_.get(), data, length, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        throw error(errc::io_error,
                    fmt::format("cannot read a sorted run in {}: {}", directory_.string(),
                                got < 0 ? std::strerror(errno) : "unexpected end of file"));
      }
      data += got;
      offset += static_cast<std::uint64_t>(got);
      length -= static_cast<std::size_t>(got);
    }
  }

  // Gives the disk space of merged bytes back: the next pass and the
  // index then need less room in all.
  void release(std::uint64_t offset, std::uint64_t length) const noexcept {
    constexpr std::uint64_t block = 4096;
    const std::uint64_t begin = (offset + block - 1) / block * block;
    const std::uint64_t end = (offset + length) / block * block;
    if (end > begin) {
      (void)::fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                        static_cast<off_t>(begin), static_cast<off_t>(end - begin));
    }
  }

 private:
  void flush() {
    if (buffer_.empty()) return;
    write_at_end(buffer_.data(), buffer_.size());
    buffer_.clear();
  }

  void write_at_end(const char* data, std::size_t length) {
    while (length > 0) {
      const ssize_t written = ::pwrite(fd_.get(), data, length, static_cast<off_t>(end_));
      if (written < 0) {
        if (errno == EINTR) continue;
        throw error(errc::io_error, fmt::format("cannot write a sorted run in {}: {}",
                                                directory_.string(), std::strerror(errno)));
      }
      data += written;
      end_ += static_cast<std::uint64_t>(written);
      length -= static_cast<std::size_t>(written);
    }
  }

  fs::path directory_;
  file_descriptor fd_;
  std::size_t write_buffer_size_;
  std::string buffer_;
  std::uint64_t end_ = 0;
  std::uint64_t run_start_ = 0;
  std::uint64_t run_entries_ = 0;
};

struct run {
  std::shared_ptr<const run_file> file;  // shared by the runs of one pass
  run_file::extent extent;
};

// Reads one run's records in order through its own buffer.
class run_reader {
 public:
  run_reader(const run& source, std::size_t buffer_size)
      : file_(source.file.get()),
        next_offset_(source.extent.offset),
        end_offset_(source.extent.offset + source.extent.bytes),
        released_to_(source.extent.offset),
        remaining_(source.extent.entries),
        buffer_(new char[buffer_size]),
        capacity_(buffer_size) {}

  // Moves to the next record; false (and exhausted()) after the last.
  bool advance() {
    if (remaining_ == 0) {
      exhausted_ = true;
      return false;
    }
    record_view record;
    std::size_t needed = 0;
    const char* next = nullptr;
    while ((next = get_record(buffer_.get() + position_, buffer_.get() + filled_, record,
                              needed)) == nullptr) {
      if (next_offset_ == end_offset_) {
        throw error(errc::io_error,
                    fmt::format("cannot read a sorted run in {}: a record is cut short",
                                file_->directory().string()));
      }
      refill(needed);
    }
    position_ = static_cast<std::size_t>(next - buffer_.get());
    --remaining_;
    current = record;
    prefix = key_prefix(record.key);
    return true;
  }

  bool exhausted() const noexcept { return exhausted_; }

  // The current record; valid until the next advance().
  record_view current;
  std::uint64_t prefix = 0;

 private:
  // Keeps the unread bytes, moved to the front, and reads after them; grows
  // the buffer for a record larger than it.
  void refill(std::size_t needed) {
    const std::size_t unread = filled_ - position_;
    if (needed > capacity_) {
      std::unique_ptr<char[]> larger(new char[needed]);
      std::memcpy(larger.get(), buffer_.get() + position_, unread);
      buffer_ = std::move(larger);
      capacity_ = needed;
    } else if (unread > 0) {
      std::memmove(buffer_.get(), buffer_.get() + position_, unread);
    }
    position_ = 0;
    filled_ = unread;
    const std::size_t length = static_cast<std::size_t>(
        std::min<std::uint64_t>(capacity_ - filled_, end_offset_ - next_offset_));
    file_->read(buffer_.get() + filled_, length, next_offset_);
    filled_ += length;
    next_offset_ += length;
    // Bytes before next_offset_ are in the buffer or used: never read again.
    constexpr std::uint64_t release_step = std::uint64_t{16} << 20;
    if (next_offset_ - released_to_ >= release_step) {
      file_->release(released_to_, next_offset_ - released_to_);
      released_to_ = next_offset_;
    }
  }

  const run_file* file_;
  std::uint64_t next_offset_;
  std::uint64_t end_offset_;
  std::uint64_t released_to_;
  std::uint64_t remaining_;
  std::unique_ptr<char[]> buffer_;
  std::size_t capacity_;
  std::size_t position_ = 0;
  std::size_t filled_ = 0;
  bool exhausted_ = false;
};

// ---------------------------------------------------------------------------
// Threads

// One job at a time on a thread of its own: sorting and writing a run while
// add() fills the other buffer.
class spill_worker {
 public:
  spill_worker() = default;
  ~spill_worker() { stop(); }
  spill_worker(const spill_worker&) = delete;
  spill_worker& operator=(const spill_worker&) = delete;

  // Waits for the job in flight (rethrowing its failure), then starts this one.
  void submit(std::function<void()> job) {
    wait();
    std::unique_lock lock(mutex_);
    if (!thread_.joinable()) thread_ = std::thread([this] { serve(); });
    job_ = std::move(job);
    busy_ = true;
    changed_.notify_all();
  }

  // Waits for the job in flight; rethrows its failure.
  void wait() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return !busy_; });
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
  }

  // Lets the job in flight finish, drops its failure, ends the thread.
  void stop() noexcept {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return !busy_; });
      stopping_ = true;
      failure_ = nullptr;
      changed_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void serve() {
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [this] { return busy_ || stopping_; });
      if (!busy_) return;
      std::function<void()> job = std::move(job_);
      lock.unlock();
      std::exception_ptr failure;
      try {
        job();
      } catch (...) {
        failure = std::current_exception();
      }
      job = nullptr;
      lock.lock();
      failure_ = failure;
      busy_ = false;
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::thread thread_;
  std::function<void()> job_;
  std::exception_ptr failure_;
  bool busy_ = false;
  bool stopping_ = false;
};

// Encoded records, handed from the merging thread to the consuming one.
struct batch {
  std::string records;
  std::uint64_t entries = 0;
};

// Two batches in turn: one filled by the producer, one used by the consumer.
class batch_channel {
 public:
  explicit batch_channel(std::size_t batch_bytes) : batch_bytes_(batch_bytes) {}

  // Producer: appends a record, handing the batch over first when the
  // record would not fit.  False when the consumer stopped.
  bool append(const record_view& record) {
    batch& filling = slots_[filling_];
    if (!filling.records.empty() && filling.records.size() + record_size(record) > batch_bytes_) {
      if (!hand_over()) return false;
    }
    batch& current = slots_[filling_];
    if (current.records.capacity() < batch_bytes_) current.records.reserve(batch_bytes_);
    append_record(current.records, record);
    ++current.entries;
    return true;
  }

  // Producer: hands over the last batch and ends the stream.
  void finish() {
    std::lock_guard lock(mutex_);
    if (!slots_[filling_].records.empty()) full_[filling_] = true;
    ended_ = true;
    changed_.notify_all();
  }

  void fail(std::exception_ptr failure) {
    std::lock_guard lock(mutex_);
    failure_ = std::move(failure);
    ended_ = true;
    changed_.notify_all();
  }

  // Consumer: the next batch, or nullptr at the end; rethrows the
  // producer's failure.
  const batch* take() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return full_[taking_] || ended_; });
    if (failure_) std::rethrow_exception(failure_);
    return full_[taking_] ? &slots_[taking_] : nullptr;
  }

  // Consumer: done with the batch take() gave.
  void give_back() {
    std::lock_guard lock(mutex_);
    full_[taking_] = false;
    taking_ ^= 1;
    changed_.notify_all();
  }

  // Consumer: wants no more batches.
  void stop() {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    changed_.notify_all();
  }

 private:
  bool hand_over() {
    std::unique_lock lock(mutex_);
    full_[filling_] = true;
    changed_.notify_all();
    filling_ ^= 1;
    changed_.wait(lock, [this] { return !full_[filling_] || stopped_; });
    if (stopped_) return false;
    slots_[filling_].records.clear();
    slots_[filling_].entries = 0;
    return true;
  }

  std::size_t batch_bytes_;
  std::mutex mutex_;
  std::condition_variable changed_;
  batch slots_[2];
  bool full_[2] = {false, false};
  int filling_ = 0;  // the producer's
  int taking_ = 0;   // the consumer's
  bool ended_ = false;
  bool stopped_ = false;
  std::exception_ptr failure_;
};

// Runs `produce(channel)` on a thread of its own and `consume(batch)` here,
// for each batch in order.  A failure on either side stops both and is
// rethrown here.
template <typename Produce, typename Consume>
void run_pipeline(std::size_t batch_bytes, Produce&& produce, Consume&& consume) {
  batch_channel channel(batch_bytes);
  std::thread producer([&] {
    try {
      produce(channel);
      channel.finish();
    } catch (...) {
      channel.fail(std::current_exception());
    }
  });
  try {
    while (const batch* next = channel.take()) {
      consume(*next);
      channel.give_back();
    }
  } catch (...) {
    channel.stop();
    producer.join();
    throw;
  }
  producer.join();
}

// Merges `runs` (consecutive, in input order) into the channel, each read
// through a buffer of `buffer_size` bytes.
void merge_runs(std::span<const run> runs, std::size_t buffer_size, const key_order& order,
                batch_channel& out) {
  std::vector<run_reader> readers;
  readers.reserve(runs.size());
  for (const run& source : runs) {
    readers.emplace_back(source, buffer_size);
    readers.back().advance();
  }
  auto before = [&readers, &order](std::size_t a, std::size_t b) {
    const run_reader& x = readers[a];
    const run_reader& y = readers[b];
    if (x.exhausted() || y.exhausted()) return !x.exhausted();
    const int keys = order.compare(x.prefix, x.current.key, y.prefix, y.current.key);
    return keys != 0 ? keys < 0 : a < b;
  };
  loser_tree<decltype(before)> tree(readers.size(), before);
  for (;;) {
    run_reader& next = readers[tree.winner()];
    if (next.exhausted()) break;
    if (!out.append(next.current)) return;
    next.advance();
    tree.replay();
  }
  for (const run& source : runs) source.file->release(source.extent.offset, source.extent.bytes);
}

// How the merge's share of the budget is split.
struct merge_plan {
  std::size_t batch_bytes;        // each of the two hand-off batches
  std::size_t builder_allowance;  // the builder's open pages, in the final pass
  std::size_t min_read_buffer;    // the least a run is read through
  std::size_t fan_in_final;       // runs merged at once into the builder
  std::size_t fan_in_pass;        // runs merged at once into a longer run

  explicit merge_plan(std::uint64_t memory) {
    batch_bytes =
        static_cast<std::size_t>(std::clamp<std::uint64_t>(memory / 16, 4 << 10, 4 << 20));
    builder_allowance =
        static_cast<std::size_t>(std::clamp<std::uint64_t>(memory / 8, 8 << 10, 4 << 20));
    const std::uint64_t pass_budget = memory - 2 * batch_bytes;
    const std::uint64_t final_budget = pass_budget - builder_allowance;
    min_read_buffer =
        static_cast<std::size_t>(std::clamp<std::uint64_t>(final_budget / 256, 4 << 10, 256 << 10));
    fan_in_final =
        std::max<std::size_t>(2, static_cast<std::size_t>(final_budget / min_read_buffer));
    fan_in_pass = std::max<std::size_t>(2, static_cast<std::size_t>(pass_budget / min_read_buffer));
    final_read_budget = final_budget;
    pass_read_budget = pass_budget;
  }

  std::uint64_t final_read_budget;
  std::uint64_t pass_read_budget;

  // The groups of consecutive runs one intermediate pass merges: from the
  // front, as many and as large as it takes to leave at most fan_in_final
  // runs (or, when one pass cannot, groups of fan_in_pass throughout).
  std::vector<std::size_t> group_sizes(std::size_t runs) const {
    std::vector<std::size_t> sizes;
    std::size_t excess = runs > fan_in_final ? runs - fan_in_final : 0;
    std::size_t left = runs;
    while (left > 0) {
      std::size_t size = 1;
      if (excess > 0) size = std::min({fan_in_pass, excess + 1, left});
      sizes.push_back(size);
      excess -= size - 1;
      left -= size;
    }
    return sizes;
  }

  std::uint32_t passes(std::size_t runs) const {
    std::uint32_t count = 0;
    while (runs > fan_in_final) {
      runs = group_sizes(runs).size();
      ++count;
    }
    return count;
  }
};

}  // namespace

// ---------------------------------------------------------------------------

class external_sorter {
 public:
  external_sorter(fs::path destination, build_options options, sort_options sort)
      : destination_(std::move(destination)),
        options_(std::move(options)),
        sort_(std::move(sort)),
        limits_(options_) {
    validate(options_);
    options_.input_unsorted = true;
    if (const auto problem = sort_memory_problem(sort_.memory)) {
      throw error(errc::invalid_argument,
                  fmt::format("a sort memory of {} bytes: {}", sort_.memory, *problem));
    }
    if (sort_.temporary_directory.empty()) {
      sort_.temporary_directory =
          destination_.has_parent_path() ? destination_.parent_path() : fs::path(".");
    } else {
      std::error_code status;
      if (!fs::is_directory(sort_.temporary_directory, status)) {
        throw error(errc::invalid_argument,
                    fmt::format("the temporary directory {} is not a directory",
                                sort_.temporary_directory.string()));
      }
    }
    order_.prefix_is_key = limits_.key_size() != 0 && limits_.key_size() <= 8;
    write_buffer_size_ =
        static_cast<std::size_t>(std::clamp<std::uint64_t>(sort_.memory / 16, 4 << 10, 1 << 20));
  }

  ~external_sorter() { abort(); }

  // `origin` is the caller's number for the entry, or nullopt for the
  // entry's own (the count of entries added, this one included).
  void add(std::string_view key, std::string_view value, std::optional<std::uint64_t> origin) {
    if (done_) throw error(errc::invalid_argument, "add() after finish(), abort() or a failure");
    try {
      limits_.check(entries_ + 1, key, value);
      if (block_.empty()) allocate_block();
      if (origin) numbered_by_caller_ = true;
      const std::uint64_t kept =
          options_.duplicates == duplicate_policy::error ? origin.value_or(entries_ + 1) : 0;
      const record_view record{key, value, kept};
      const std::uint64_t prefix = key_prefix(key);
      if (!buffers_[filling_].try_add(record, prefix)) {
        spill();
        if (!buffers_[filling_].try_add(record, prefix)) write_alone(record);
      }
      ++entries_;
    } catch (...) {
      abort();
      throw;
    }
  }

  build_summary finish() {
    // The builder is made only now: until the input is all read, nothing
    // exists at the destination.
    std::optional<builder> out;
    finish_into([&] {
      out.emplace(destination_, options_);
      return sink_into<builder>(*out);
    });
    return out->finish();
  }

  void finish_into(sorted_entry_sink& out) {
    finish_into([&]() -> sorted_entry_sink& { return out; });
  }

  void abort() noexcept {
    done_ = true;
    worker_.stop();
    runs_.clear();
    current_file_.reset();
    buffers_[0] = buffers_[1] = run_buffer();
    block_ = anonymous_block();
  }

  std::uint64_t entries_added() const noexcept { return entries_; }
  std::uint64_t runs_written() const noexcept { return runs_started_; }

 private:
  // The block is the whole budget less the run writer's buffer; at first
  // one run buffer spans it.
  void allocate_block() {
    block_size_ = static_cast<std::size_t>(sort_.memory - write_buffer_size_) / 32 * 32;
    block_ = anonymous_block(block_size_);
    buffers_[0] = run_buffer(block_.data(), block_size_);
    filling_ = 0;
  }

  run_file& current_file() {
    if (!current_file_) {
      remove_stale_scratch_files(sort_.temporary_directory);
      current_file_ = std::make_shared<run_file>(sort_.temporary_directory, write_buffer_size_);
    }
    return *current_file_;
  }

  // Writes the buffer being filled as a sorted run.
  void spill() {
    run_buffer& full = buffers_[filling_];
    if (full.empty()) return;
    run_file& file = current_file();
    if (!halves_) {
      // The first overflow: the whole budget is full and nothing else is
      // under way, so both threads sort, then the block splits in two.
      const sorted_refs sorted = sort_buffer(full, order_, true);
      write_run(file, full, sorted, numbered_by_caller_);
      const std::size_t half = block_size_ / 2;
      buffers_[0] = run_buffer(block_.data(), half);
      buffers_[1] = run_buffer(block_.data() + half, half);
      filling_ = 0;
      halves_ = true;
    } else {
      worker_.submit(
          // The flag by value: add() may set it while the worker runs.
          [this, &file, &full, numbered_by_caller = numbered_by_caller_] {
            write_run(file, full, sort_buffer(full, order_, false), numbered_by_caller);
          });
      filling_ ^= 1;
      buffers_[filling_].clear();
    }
    ++runs_started_;
    spilled_ = true;
    report_reading();
  }

  // An entry larger than a buffer: a run of its own.
  void write_alone(const record_view& record) {
    worker_.wait();
    run_file& file = current_file();
    file.append(record);
    runs_.push_back(run{current_file_, file.close_run()});
    ++runs_started_;
    spilled_ = true;
    report_reading();
  }

  // On the worker thread, or here when the worker is idle: runs_ is only
  // appended to by one of them at a time, in input order.
  void write_run(run_file& file, run_buffer& buffer, const sorted_refs& sorted,
                 bool numbered_by_caller) {
    emit_sorted(buffer, sorted, order_, options_.duplicates, numbered_by_caller,
                [&file](const record_view& record) { file.append(record); });
    runs_.push_back(run{current_file_, file.close_run()});
    buffer.clear();
  }

  // Hands the sorted entries to the sink that `open_output` returns, made
  // when the entries are ready to go out.
  template <typename OpenOutput>
  void finish_into(OpenOutput&& open_output) {
    if (done_) throw error(errc::invalid_argument, "finish() after finish(), abort() or a failure");
    done_ = true;
    try {
      if (spilled_) {
        finish_from_runs(open_output);
      } else {
        finish_in_memory(open_output);
      }
      abort();
    } catch (...) {
      abort();
      throw;
    }
  }

  template <typename OpenOutput>
  void finish_in_memory(OpenOutput& open_output) {
    auto&& out = open_output();
    if (block_.empty()) return;
    const run_buffer& buffer = buffers_[0];
    const sorted_refs sorted = sort_buffer(buffer, order_, true);
    progress_.phase = sort_phase::writing;
    progress_.total = buffer.count();
    progress_.done = 0;
    report();
    constexpr std::uint64_t report_interval = 1 << 18;
    // Equal keys never reach `out` from here: emit_sorted applies the policy.
    emit_sorted(buffer, sorted, order_, options_.duplicates, numbered_by_caller_,
                [&](const record_view& record) {
                  out.add(record.key, record.value);
                  if (++progress_.done % report_interval == 0) report();
                });
    progress_.done = progress_.total;
    report();
    block_ = anonymous_block();
    buffers_[0] = run_buffer();
  }

  template <typename OpenOutput>
  void finish_from_runs(OpenOutput& open_output) {
    spill();
    worker_.wait();
    buffers_[0] = buffers_[1] = run_buffer();
    block_ = anonymous_block();
    current_file_.reset();  // the runs keep it open
    const merge_plan plan(sort_.memory);
    progress_.passes = plan.passes(runs_.size());
    progress_.pass = 0;
    while (runs_.size() > plan.fan_in_final) merge_pass(plan);

    auto&& out = open_output();
    progress_.phase = sort_phase::writing;
    progress_.done = 0;
    progress_.total = entries_in(runs_);
    report();
    const std::size_t buffer_size = read_buffer_size(plan.final_read_budget, runs_.size(), plan);
    std::vector<run> runs = std::move(runs_);
    runs_.clear();
    // A duplicate is refused at the first repeat of its key, and equal keys
    // come together, the first added first: the entry before it is the first.
    std::uint64_t previous_origin = 0;
    run_pipeline(
        plan.batch_bytes,
        [&](batch_channel& channel) { merge_runs(runs, buffer_size, order_, channel); },
        [&](const batch& next) {
          const char* in = next.records.data();
          const char* end = in + next.records.size();
          record_view record;
          std::size_t needed = 0;
          while (in < end) {
            in = get_record(in, end, record, needed);
            add_to(out, record, previous_origin);
            previous_origin = record.origin;
          }
          progress_.done += next.entries;
          report();
        });
    runs.clear();
  }

  // Merges groups of consecutive runs into longer ones, in a new file.
  void merge_pass(const merge_plan& plan) {
    ++progress_.pass;
    progress_.phase = sort_phase::merging;
    progress_.done = 0;
    progress_.total = entries_in(runs_);
    report();
    auto next_file = std::make_shared<run_file>(sort_.temporary_directory, write_buffer_size_);
    std::vector<run> merged;
    std::size_t first = 0;
    for (const std::size_t size : plan.group_sizes(runs_.size())) {
      const std::span<const run> group(runs_.data() + first, size);
      first += size;
      if (size == 1) {
        merged.push_back(group[0]);
        progress_.done += group[0].extent.entries;
        continue;
      }
      const std::size_t buffer_size = read_buffer_size(plan.pass_read_budget, size, plan);
      run_pipeline(
          plan.batch_bytes,
          [&](batch_channel& channel) { merge_runs(group, buffer_size, order_, channel); },
          [&](const batch& next) {
            next_file->append_records(next.records, next.entries);
            progress_.done += next.entries;
            report();
          });
      merged.push_back(run{next_file, next_file->close_run()});
    }
    runs_ = std::move(merged);
    progress_.done = progress_.total;
    report();
  }

  static std::size_t read_buffer_size(std::uint64_t budget, std::size_t runs,
                                      const merge_plan& plan) {
    return std::max<std::size_t>(plan.min_read_buffer,
                                 static_cast<std::size_t>(budget / std::max<std::size_t>(runs, 1)));
  }

  static std::uint64_t entries_in(const std::vector<run>& runs) {
    std::uint64_t total = 0;
    for (const run& source : runs) total += source.extent.entries;
    return total;
  }

  // The builder reports a duplicate under duplicate_policy::error (and a
  // sink may refuse equal keys); say which key, and which entries gave it.
  template <typename Out>
  void add_to(Out& out, const record_view& record, std::uint64_t first_origin) const {
    try {
      out.add(record.key, record.value);
    } catch (const error& failure) {
      if (failure.code() == errc::duplicate_key)
        throw_duplicate(record.key, first_origin, record.origin, numbered_by_caller_);
      throw;
    }
  }

  void report_reading() {
    progress_.phase = sort_phase::reading;
    progress_.entries = entries_;
    progress_.runs = runs_started_;
    report();
  }

  void report() {
    progress_.entries = entries_;
    progress_.runs = runs_started_;
    if (sort_.progress) sort_.progress(progress_);
  }

  fs::path destination_;
  build_options options_;
  sort_options sort_;
  key_order order_;
  detail::entry_limits limits_;
  std::size_t write_buffer_size_ = 0;

  anonymous_block block_;
  std::size_t block_size_ = 0;
  run_buffer buffers_[2];
  int filling_ = 0;
  bool halves_ = false;

  std::shared_ptr<run_file> current_file_;  // the reading phase's runs
  std::vector<run> runs_;                   // in input order
  spill_worker worker_;

  std::uint64_t entries_ = 0;
  std::uint64_t runs_started_ = 0;
  bool numbered_by_caller_ = false;  // some add() gave an origin
  bool spilled_ = false;
  bool done_ = false;
  sort_progress progress_;
};

}  // namespace detail

external_sorting_builder::external_sorting_builder(fs::path destination, build_options options,
                                                   sort_options sort)
    : impl_(std::make_unique<detail::external_sorter>(std::move(destination), std::move(options),
                                                      std::move(sort))) {}

external_sorting_builder::~external_sorting_builder() = default;

void external_sorting_builder::add(std::string_view key, std::string_view value) {
  impl_->add(key, value, std::nullopt);
}
void external_sorting_builder::add(std::string_view key, std::string_view value,
                                   std::uint64_t origin) {
  impl_->add(key, value, origin);
}
build_summary external_sorting_builder::finish() { return impl_->finish(); }
void external_sorting_builder::finish_into(sorted_entry_sink& out) { impl_->finish_into(out); }
void external_sorting_builder::abort() noexcept { impl_->abort(); }
std::uint64_t external_sorting_builder::entries_added() const noexcept {
  return impl_->entries_added();
}
std::uint64_t external_sorting_builder::runs_written() const noexcept {
  return impl_->runs_written();
}

}  // namespace bbtree
