// Building from unsorted input of any size, in bounded memory.
//
// external_sorting_builder takes entries in any order, like sorting_builder,
// but holds at most a memory budget of them.  While they fit, they stay in
// memory and are sorted there.  Past the budget, they are sorted in runs
// that are written to unnamed temporary files (nothing can be left behind,
// even by a killed process), and finish() merges the runs, k ways at once,
// straight into a builder; when there are more runs than the budget can
// read at once, it first merges them in passes.
//
// Two threads share the work: while add() fills one half of the budget, a
// worker sorts and writes the other; while the merge of the runs feeds the
// builder, the worker reads and merges ahead of it.
//
// Memory: the run buffers, and later the merge's read buffers, its hand-off
// buffers and an allowance for the builder's open pages, together stay
// within the budget.  Beyond it come a fixed few MiB (the builder's write
// buffers, the thread) and any single entry larger than the budget allows.
//
// Duplicates follow build_options::duplicates, and equal keys keep the
// order in which they were added, across runs: keep_first keeps the first
// added, keep_last the last.
#pragma once

#include <bbtree/builder.h>
#include <bbtree/error.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace bbtree {

// The least budget an external sort accepts: a few pages' worth for each
// of a handful of runs.
inline constexpr std::uint64_t min_sort_memory = std::uint64_t{64} << 10;

// The budget sort_options and bbtree-build use when given none: 1 GiB, or a
// quarter of the machine's physical memory when that is less (but at least
// 64 MiB).
std::uint64_t default_sort_memory() noexcept;

// The machine's physical memory in bytes, or 0 when the system does not
// say.  A sort budget above it is refused: the budget is mapped at once
// (though only touched as it fills), which the kernel refuses for a size it
// could never back, and a sort in swap would be slower than runs on disk.
std::uint64_t physical_memory() noexcept;

// What is wrong with a sort budget of `memory` bytes (under min_sort_memory,
// or over physical_memory()), as a phrase such as "the sort needs at least
// 64K", or nothing when it is fine: the one rule the sort and bbtree-build's
// --memory check apply.
std::optional<std::string> sort_memory_problem(std::uint64_t memory);

enum class sort_phase : std::uint8_t {
  reading,  // entries are being added; full buffers become sorted runs
  merging,  // an intermediate pass merges runs into fewer, longer runs
  writing,  // the sorted entries go into the index
};

struct sort_progress {
  sort_phase phase = sort_phase::reading;
  std::uint64_t entries = 0;  // entries added
  std::uint64_t runs = 0;     // sorted runs written to temporary files so far
  std::uint32_t pass = 0;     // merging: this pass, from 1
  std::uint32_t passes = 0;   // merging: intermediate passes in all
  std::uint64_t done = 0;     // merging, writing: entries this phase has passed on
  std::uint64_t total = 0;    // merging, writing: entries this phase will pass on
};

struct sort_options {
  // Bytes the sort may hold: see above.  At least min_sort_memory.
  std::uint64_t memory = default_sort_memory();
  // Where sorted runs are written; empty means the destination's directory.
  std::filesystem::path temporary_directory;
  // Called on the thread that calls add() and finish(): when a run is
  // written, and a few times a second while merging and writing.  May be
  // empty.
  std::function<void(const sort_progress&)> progress;
};

// An equal key under duplicate_policy::error: key() is the key, encoded;
// first_origin() is the origin of the first entry added with it and
// origin() that of a later one (the origins add() was given, or the
// entries' numbers in the order added, from 1).  bbtree-build's origins
// are input lines, which it names.
class duplicate_key_error : public error {
 public:
  duplicate_key_error(std::string key, const std::string& message, std::uint64_t first_origin,
                      std::uint64_t origin)
      : error(errc::duplicate_key, message),
        key_(std::move(key)),
        first_origin_(first_origin),
        origin_(origin) {}
  const std::string& key() const noexcept { return key_; }
  std::uint64_t first_origin() const noexcept { return first_origin_; }
  std::uint64_t origin() const noexcept { return origin_; }

 private:
  std::string key_;
  std::uint64_t first_origin_;
  std::uint64_t origin_;
};

// What receives entries in key order when they do not go into one file:
// external_sorting_builder::finish_into and import_into hand their entries
// to it (bbtree-build --shard-size, to a shard_set_builder).  Equal keys
// arrive together, in the order they were added, for the receiver's
// duplicate policy; a receiver that refuses an equal key throws
// error(duplicate_key).
class sorted_entry_sink {
 public:
  virtual void add(std::string_view key, std::string_view value) = 0;

 protected:
  ~sorted_entry_sink() = default;
};

// A sorted_entry_sink over anything with add(key, value): a builder, a
// shard_set_builder.
template <typename Out>
class sink_into final : public sorted_entry_sink {
 public:
  explicit sink_into(Out& out) : out_(out) {}
  void add(std::string_view key, std::string_view value) override { out_.add(key, value); }

 private:
  Out& out_;
};

namespace detail {
class external_sorter;
}

class external_sorting_builder {
 public:
  // Checks the options; the destination is created only by finish().
  // Throws error(invalid_argument) for a budget under min_sort_memory or
  // over physical_memory(), or a temporary directory that is not one.
  external_sorting_builder(std::filesystem::path destination, build_options options,
                           sort_options sort = {});
  ~external_sorting_builder();  // discards everything, like abort()
  external_sorting_builder(const external_sorting_builder&) = delete;
  external_sorting_builder& operator=(const external_sorting_builder&) = delete;

  // Checks lengths at once.  Throws error(key_too_long | value_too_long),
  // and error(io_error) when a run cannot be written: "cannot write a
  // sorted run in DIR: REASON".  A duplicate under duplicate_policy::error
  // is found when the run holding it is sorted (then the next add() or
  // finish() throws duplicate_key_error) or by the final merge.  After a
  // throw the build is abandoned.
  void add(std::string_view key, std::string_view value = {});
  // The same, with the caller's number for the entry (any, e.g. where it
  // came from) in place of its entry number: a duplicate_key_error for its
  // key gives it back.  Under duplicate_policy::error the sort keeps
  // either with the entry (a varint); under the others, neither.
  void add(std::string_view key, std::string_view value, std::uint64_t origin);

  // Sorts or merges what was added into the destination and publishes it.
  build_summary finish();
  // Sorts or merges what was added and hands it to `out` in key order
  // instead; the destination is only where sorted runs go by default.
  // Throws what `out` throws, and duplicate_key_error for equal keys under
  // duplicate_policy::error (out's error(duplicate_key) included).
  void finish_into(sorted_entry_sink& out);

  // Abandons the build: stops the worker and closes (so removes) every
  // temporary file.  Idempotent.
  void abort() noexcept;

  std::uint64_t entries_added() const noexcept;
  // Sorted runs written so far: 0 while everything fits in memory.
  std::uint64_t runs_written() const noexcept;

 private:
  std::unique_ptr<detail::external_sorter> impl_;
};

}  // namespace bbtree
