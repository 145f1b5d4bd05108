// Building an index from entry files in the text formats (text_format.h):
// the work of bbtree-build, here so that the tool stays a front end.
#pragma once

#include <bbtree/builder.h>
#include <bbtree/external_sort.h>
#include <bbtree/text_format.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>

namespace bbtree {

struct import_progress {
  std::uint64_t entries = 0;
  std::uint64_t bytes_read = 0;
  std::uint64_t total_bytes = 0;  // of all inputs; 0 when unknown (a pipe, stdin)
  bool reading_done = false;      // the rest is sorting and writing
  // Unsorted input: what the sort does (external_sort.h).  While reading,
  // `runs` counts the sorted runs written out (none while the input fits in
  // memory); then come intermediate merge passes, if any, and writing the
  // index, each passing on `done` of `total` entries.
  sort_phase phase = sort_phase::reading;
  std::uint64_t runs = 0;
  std::uint32_t pass = 0;    // merging: this pass, from 1
  std::uint32_t passes = 0;  // merging: passes in all
  std::uint64_t done = 0;
  std::uint64_t total = 0;
};

struct import_options {
  text_format format = text_format::tsv;
  // Entries come in key order: stream them into a builder, checking the
  // order as they come.  Otherwise external_sorting_builder sorts them: in
  // memory while they fit in `memory` bytes, in sorted runs written to
  // `temporary_directory` and merged when they do not.
  bool sorted = false;
  std::uint64_t memory = 0;                   // 0: default_sort_memory()
  std::filesystem::path temporary_directory;  // empty: the destination's directory
  // Called every few thousand entries, once when reading is done, and as
  // the sort merges and writes; may be empty.  It decides itself how often
  // to show anything.
  std::function<void(const import_progress&)> progress;
};

// Reads every input in turn, as if concatenated ("-" is standard input),
// and builds `destination`.  A malformed entry, an out-of-order key under
// `sorted` and a duplicate key under duplicate_policy::error throw
// input_error whose message starts with "FILE:LINE: "; nothing is written
// at `destination` then.  Also throws error(already_exists) when the
// destination exists and options.overwrite is false, error(io_error) for an
// input that cannot be read, a destination or a sorted run (in the
// temporary directory) that cannot be written, and
// error(invalid_argument) for bad options.
build_summary import_entries(std::span<const std::string> inputs,
                             const std::filesystem::path& destination, const build_options& options,
                             const import_options& import);

// As import_entries, but hands the entries in key order to `out` instead of
// building one file (import_shard_set's streaming case): `destination` is
// where the output will be, beside which sorted runs go unless
// import.temporary_directory says otherwise; `options` gives the types and
// the duplicate policy.  The same errors, and what `out` throws.  The
// caller finishes `out`.
void import_into(std::span<const std::string> inputs, sorted_entry_sink& out,
                 const std::filesystem::path& destination, const build_options& options,
                 const import_options& import);

// For sorted input (import.sorted): how many entries an import of `inputs`
// would write, equal keys counted once, from one read of the inputs, which
// are checked as import_entries checks them (the same errors); nullopt,
// reading nothing, when an input cannot be read a second time (standard
// input, a pipe).  import_shard_set's --shards N on sorted input reads
// twice so as to write the set once.
std::optional<std::uint64_t> count_sorted_entries(std::span<const std::string> inputs,
                                                  const build_options& options,
                                                  const import_options& import);

}  // namespace bbtree
