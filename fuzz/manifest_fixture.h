// The shard files that fuzz_manifest's inputs name, and what it knows about
// them.  A manifest is only worth opening beside real shards, so every
// process builds the same small sets once, in its scratch directory:
//
//   u64 -> bytes       u64-0.bbt, u64-1.bbt, u64-2.bbt (60 entries each,
//                      keys 0, 7, 14, ...), u64-3.bbt (one entry, 2^64 - 1)
//   bytes -> u64       bytes-0.bbt (keys with escapes, the empty key),
//                      sub/tab<TAB>here.bbt (a TAB in the path, non-UTF-8
//                      keys, a long key), sub/bytes-2.bbt
//   fixed:3 -> none    fixed-0.bbt, fixed-1.bbt
//
// The builder writes the same bytes for the same entries and options, so
// the seeds that fuzz_make_corpus writes (manifests of these files, with
// their sizes and header checksums) name the files of every later process.
#pragma once

#include "fuzz_support.h"

#include <bbtree/shards.h>

#include <sys/types.h>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace bbtree::fuzz {

using entry_map = std::map<std::string, std::string>;  // encoded key -> value

struct fixture_shard {
  entry_types types;  // the set's
  entry_map entries;
  shard_record record;  // as write_shard_set writes its line
  dev_t device = 0;
  ino_t inode = 0;
};

struct fixture_set {
  entry_types types;
  std::vector<fixture_shard> shards;  // in key order
};

struct manifest_fixture {
  std::filesystem::path directory;  // holds the shards
  std::filesystem::path manifest;   // where fuzz_manifest writes each input
  std::vector<fixture_set> sets;

  // The shard whose file is `path` (stat: device and inode), or null.
  const fixture_shard* shard_at(const std::filesystem::path& path) const;
  // The set of these types, or null.
  const fixture_set* set_of(const entry_types& types) const;
};

// Built on first use, in scratch_directory() / "manifest".
const manifest_fixture& the_manifest_fixture();

// A manifest's text before its end line, closed with an end line that
// counts its shard lines and their entries and carries its checksum.
std::string close_manifest(std::string body);

}  // namespace bbtree::fuzz
