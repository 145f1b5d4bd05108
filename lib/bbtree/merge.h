// Merging index files into one: the work of bbtree-merge.
//
// The inputs' entries are merged k ways, in key order, straight into a
// builder: every page of the output is written once, and memory stays
// bounded whatever the inputs' sizes (the builder's open pages, one key per
// input, and the mapped pages of the inputs, which are dropped behind the
// merge as it goes).
#pragma once

#include <bbtree/builder.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace bbtree {

namespace detail {
// How many bytes of an input's leaves the merge reads between drops of the
// mapped pages behind it.
inline constexpr std::uint64_t merge_drop_step = std::uint64_t{16} << 20;
}  // namespace detail

struct merge_progress {
  std::uint64_t entries = 0;  // entries read from the inputs so far
  std::uint64_t total = 0;    // entries in all inputs
};

struct merge_options {
  // Equal keys in several inputs: error, or keep the entry of the input
  // given first (keep_first) or last (keep_last).
  duplicate_policy duplicates = duplicate_policy::error;
  std::uint32_t page_size = 0;  // 0: the first input's page size
  bool overwrite = false;       // replace an existing destination
  bool sync = true;
  std::vector<std::pair<std::string, std::string>> metadata;  // stored in the output
  // Called every few hundred thousand entries and at the end; may be empty.
  std::function<void(const merge_progress&)> progress;
};

// Merges `inputs` (at least one: index files, or shard sets' manifests,
// whose shards are checked against their lines as sharded_reader::open
// does) into `destination`, whose key and value types are theirs.
// Throws error(type_mismatch) naming two inputs and their types when the
// inputs' types differ; error(duplicate_key) naming the key
// and both inputs under duplicate_policy::error; the reader's errors
// (not_bbtree, truncated, corrupt...) naming an input, including
// error(corrupt) for a leaf page whose checksum does not match or keys out
// of order; error(already_exists), error(io_error) and
// error(invalid_argument) as builder does.  Nothing is written at
// `destination` on failure.  The destination may be one of the inputs
// (with overwrite): the inputs stay mapped until the output replaces it.
build_summary merge_indexes(std::span<const std::filesystem::path> inputs,
                            const std::filesystem::path& destination, const merge_options& options);

}  // namespace bbtree
