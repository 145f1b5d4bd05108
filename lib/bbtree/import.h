// Building an index from entry files in the text formats (text_format.h):
// the work of bbtree-build, here so that the tool stays a front end.
#pragma once

#include <bbtree/builder.h>
#include <bbtree/text_format.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>

namespace bbtree {

struct import_progress {
  std::uint64_t entries = 0;
  std::uint64_t bytes_read = 0;
  std::uint64_t total_bytes = 0;  // of all inputs; 0 when unknown (a pipe, stdin)
  bool reading_done = false;      // the rest is sorting and writing
};

struct import_options {
  text_format format = text_format::tsv;
  // Entries come in key order: stream them into a builder, checking the
  // order as they come.  Otherwise sorting_builder sorts them in memory.
  bool sorted = false;
  // Called every few thousand entries and once when reading is done; may
  // be empty.  It decides itself how often to show anything.
  std::function<void(const import_progress&)> progress;
};

// Reads every input in turn, as if concatenated ("-" is standard input),
// and builds `destination`.  A malformed entry, an out-of-order key under
// `sorted` and a duplicate key under duplicate_policy::error throw
// input_error whose message starts with "FILE:LINE: "; nothing is written
// at `destination` then.  Also throws error(already_exists) when the
// destination exists and options.overwrite is false, error(io_error) for an
// input that cannot be read or a destination that cannot be written, and
// error(invalid_argument) for bad options.
build_summary import_entries(std::span<const std::string> inputs,
                             const std::filesystem::path& destination, const build_options& options,
                             const import_options& import);

}  // namespace bbtree
