// Writing index files.
//
// builder streams entries given in key order into a new file.  It holds one
// root-to-leaf path of pages in memory and writes every page once.  The file
// is written under a temporary name beside the destination (unnamed where
// the file system allows), synced, and renamed over the destination only by
// finish(): until then, and after any failure, the destination keeps its
// previous content and no temporary file remains.
//
// sorting_builder accepts entries in any order, sorts them in memory and
// feeds a builder.
//
// Keys and values are passed in their encoded form (see key_codec.h for the
// integer helpers): u64 and i64 keys as 8 big-endian bytes, fixed keys and
// values as exactly N bytes, u64 values as 8 little-endian bytes.
//
// Thread safety: a builder is used by one thread at a time.
#pragma once

#include <bbtree/error.h>
#include <bbtree/format/layout.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bbtree {

using format::duplicate_policy;
using format::key_kind;
using format::value_kind;

struct build_options {
  key_kind keys = key_kind::bytes;
  std::uint32_t key_size = 0;  // fixed keys only: N
  value_kind values = value_kind::bytes;
  std::uint32_t value_size = 0;  // fixed values only: N
  // A power of two, 512 to 65536.  512 suits u64 keys in an index far
  // larger than the caches (lookups 5-8% faster at 10M u64 keys; scans,
  // verification and the first lookup slower: bench/RESULTS.md, 12-06).
  std::uint32_t page_size = format::default_page_size;
  duplicate_policy duplicates = duplicate_policy::error;
  bool overwrite = false;  // replace an existing destination
  bool sync = true;        // fsync the file and its directory before publishing
  // Recorded in the header's build flags; sorting_builder sets it.
  bool input_unsorted = false;
  // Write the directory region (spec/FORMAT.md, sections 12.3 and 15.7) in
  // a tree of 3 or more levels, where lookups find their level-1 page
  // through it.  A file with one is format 1.2 and readers of 1.0 and 1.1
  // refuse it (unsupported_feature); turn it off to write files they can
  // read.
  bool directory = true;
  // User metadata, stored in the file; keys must be unique.
  std::vector<std::pair<std::string, std::string>> metadata;
};

struct build_summary {
  std::uint64_t entries = 0;
  std::uint64_t file_size = 0;
  std::uint32_t height = 0;
  std::uint32_t pages = 0;
};

// Checks an options struct; throws error(invalid_argument) naming the field.
void validate(const build_options& options);

class builder {
 public:
  builder(std::filesystem::path destination, build_options options);
  ~builder();  // discards an unfinished build
  builder(const builder&) = delete;
  builder& operator=(const builder&) = delete;
  builder(builder&&) noexcept;
  builder& operator=(builder&&) noexcept;

  // Adds one entry.  Keys must ascend; an equal key follows the duplicate
  // policy.  Throws error(out_of_order | duplicate_key | key_too_long |
  // value_too_long | io_error); after a throw the build is abandoned.
  // After finish(), abort() or a failed add(), add() and finish() throw
  // error(invalid_argument) and change nothing.
  void add(std::string_view key, std::string_view value = {});

  // Writes the upper levels and the header and publishes the file.
  build_summary finish();

  // Abandons the build, removing every temporary file.  Idempotent.
  void abort() noexcept;

  std::uint64_t entries_added() const noexcept;
  // The size the file has reached: the header page, every page closed so
  // far at any level, and the blob region.  finish() adds the open pages
  // (one per level), the metadata and the directory.  For cutting output into files of a
  // given size (shards.h).
  std::uint64_t bytes_written() const noexcept;
  const std::filesystem::path& destination() const noexcept;

  class impl;

 private:
  std::unique_ptr<impl> impl_;
};

class sorting_builder {
 public:
  sorting_builder(std::filesystem::path destination, build_options options);
  ~sorting_builder();
  sorting_builder(const sorting_builder&) = delete;
  sorting_builder& operator=(const sorting_builder&) = delete;

  // Checks lengths at once, as builder::add does; a refused entry is not
  // added, and the build goes on.  Order and duplicates are checked by
  // finish().
  void add(std::string_view key, std::string_view value = {});
  build_summary finish();
  void abort() noexcept;
  std::uint64_t entries_added() const noexcept;

 private:
  std::filesystem::path destination_;
  build_options options_;
  std::string arena_;  // keys and values back to back
  struct entry_ref {
    std::uint64_t key_offset;
    std::uint32_t key_length;
    std::uint64_t value_offset;
    std::uint64_t value_length;
  };
  std::vector<entry_ref> entries_;
  bool done_ = false;
};

// Removes the files that this process's builds in progress have had to
// name before publishing them: a shard set's finished shards, and staging
// files on file systems without unnamed files (a single file's build
// otherwise writes an unnamed one, which nothing outlives).  So that a
// build killed by a signal leaves nothing behind: async-signal-safe, for a
// SIGINT or SIGTERM handler that then ends the process, as the tools
// install.  A build whose files it removed cannot finish.
void remove_temporary_files_on_signal() noexcept;

}  // namespace bbtree
