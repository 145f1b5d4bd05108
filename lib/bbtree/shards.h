// Shard sets: one index kept in several files that cover disjoint, ordered
// key ranges, listed by a small text manifest (spec/SHARDS.md).
//
//   shard_manifest      the manifest's contents: the key and value types and,
//                       per shard, its path, first and last key, entry count,
//                       file size and header checksum
//   write_shard_set     joins index files built independently into a set
//   shard_set_builder   builds a set from entries in key order, cutting it
//                       into shards of a size, or where the caller says
//   split_index         cuts an index (or a set) into N shards of nearly
//                       equal entry counts, or into shards of a size
//   import_shard_set    bbtree-build --shards / --shard-size
//   sharded_reader      reads a set as one index, with reader's interface
//                       and semantics; a single index file opens as a set of
//                       one shard and is read at no extra cost
//   verify_shard_set    bbtree-verify on a manifest
//
// A set's shard files are named in its manifest by paths relative to the
// manifest's directory, so that a set can be moved as a whole.  Writers
// publish the shard files first and the manifest last, so that no reader
// ever finds a manifest naming a shard that is not there yet.
//
// Thread safety: as reader; a builder is used by one thread at a time.
#pragma once

#include <bbtree/builder.h>
#include <bbtree/import.h>
#include <bbtree/reader.h>
#include <bbtree/text_format.h>
#include <bbtree/typed.h>
#include <bbtree/verify.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bbtree {

// ---------------------------------------------------------------------------
// The manifest

// One shard line of a manifest.
struct shard_record {
  std::string path;       // as written: relative to the manifest's directory
  std::string first_key;  // encoded, as reader returns keys
  std::string last_key;
  std::uint64_t entries = 0;
  std::uint64_t file_size = 0;
  std::uint32_t header_checksum = 0;  // the shard's header_checksum field
  std::uint64_t line = 0;             // the manifest line it came from; 0 if none
};

// The manifest version this library reads and writes (spec/SHARDS.md): the
// number in a manifest's first line, "bbtree-shards 1".
inline constexpr std::string_view shard_manifest_version = "1";

struct shard_manifest {
  entry_types types;
  std::vector<shard_record> shards;

  std::uint64_t entries() const noexcept;
};

// True if the file or the bytes begin as a manifest does ("bbtree-shards "):
// neither an index file (whose magic begins with 0x89) nor anything else.
// False also for a file that cannot be read: opening it as an index file
// then says why, as it always has.
bool is_shard_manifest(const std::filesystem::path& path) noexcept;
bool is_shard_manifest(std::span<const std::byte> bytes) noexcept;

// Parses and checks a manifest: its syntax, checksum and totals, and that
// the shards' ranges are non-empty, disjoint and ascending (it does not open
// the shards).  `name` starts every message, as "NAME:LINE: ".  Throws
// error(not_bbtree) for text that is not a manifest, error(newer_version)
// for a version other than 1, error(truncated) when the end line is
// missing, and error(corrupt) for anything else wrong.
shard_manifest parse_shard_manifest(std::string_view text, const std::string& name);
// Reads `path` and parses it; error(io_error) if it cannot be read.
shard_manifest read_shard_manifest(const std::filesystem::path& path);

// The text of a manifest, exactly as spec/SHARDS.md writes it.  Checks
// nothing: write_shard_set and shard_set_builder check before they call it.
std::string format_shard_manifest(const shard_manifest& manifest);

// The names shard_set_builder gives shard `number` of the set whose manifest
// is `manifest`, beside it, four digits or more: "MANIFEST.shard-0000.bbt"
// (generation a) or "MANIFEST.shard-b-0000.bbt" (generation b).  A set that
// replaces another takes the generation whose names the old one does not
// use, so that the new manifest's rename is the one step that replaces it.
enum class shard_name_generation { a, b };
std::filesystem::path shard_file_name(const std::filesystem::path& manifest, std::size_t number,
                                      shard_name_generation generation = shard_name_generation::a);

struct shard_set_options {
  bool overwrite = false;  // replace an existing manifest (and shard files)
  bool sync = true;        // fsync the files and the directory before publishing
};

// Writes a manifest for index files built independently.  Opens every
// shard, sorts them by first key, and checks that they have the same key
// and value types, that none is empty and that their key ranges do not
// overlap; the error names the two shards concerned:
// error(type_mismatch) for types that differ, error(out_of_order) for
// overlapping ranges, error(invalid_argument) for an empty shard, a
// manifest given as a shard, or the manifest itself given as a shard.
// Errors from opening a shard pass through (not_bbtree, corrupt_header,
// io_error, ...).  The manifest is written atomically; error(already_exists)
// if it exists and overwriting was not asked for.  Returns what was written.
shard_manifest write_shard_set(const std::filesystem::path& manifest,
                               std::span<const std::filesystem::path> shards,
                               const shard_set_options& options = {});

// ---------------------------------------------------------------------------
// Building sets

struct shard_set_summary {
  std::uint64_t entries = 0;
  std::uint64_t file_size = 0;  // of all shard files together
  std::size_t shards = 0;
};

// Builds a shard set from entries in key order.  Shards are written under
// temporary names; finish() gives them their names (shard_file_name) and
// then publishes the manifest, so that a failed build leaves neither a
// manifest nor a shard file behind.  Replacing an existing set
// (options.overwrite) touches none of the files the old manifest names
// until the new manifest has replaced it: the new shards take the other
// generation's names, so that a reader sees the old set or the new one
// whole, and a build that fails or is stopped leaves the old set as it was.
// Once the new manifest is in place, the files the old one named under this
// builder's names (either generation) and the new set does not use are
// removed.
class shard_set_builder {
 public:
  // options.overwrite and options.sync apply to the manifest and the shards
  // alike; every shard records options.metadata.  With `shard_size` > 0, a
  // new shard starts once the current one has reached that many bytes
  // (builder::bytes_written): shards come out at shard_size plus at most a
  // page per tree level and one value, and the last one smaller.
  shard_set_builder(std::filesystem::path manifest, build_options options,
                    std::uint64_t shard_size = 0);
  ~shard_set_builder();  // discards an unfinished build
  shard_set_builder(const shard_set_builder&) = delete;
  shard_set_builder& operator=(const shard_set_builder&) = delete;

  // As builder::add; the key order is checked across shards too.
  void add(std::string_view key, std::string_view value = {});
  // Ends the current shard after the entries added so far: the next entry
  // with a greater key starts a new shard.  (An equal key still joins the
  // current shard, where the duplicate policy applies, so that no key is
  // ever in two shards.)
  void end_shard();
  shard_set_summary finish();
  void abort() noexcept;
  std::uint64_t entries_added() const noexcept;

 private:
  class impl;
  std::unique_ptr<impl> impl_;
};

class sharded_reader;

// How to cut entries into shards: into `shards` shards of entry counts that
// differ by at most one (fewer when there are fewer entries), or into
// shards of `shard_size` bytes (as shard_set_builder).  Exactly one is set.
struct shard_split {
  std::uint32_t shards = 0;
  std::uint64_t shard_size = 0;
};

// Writes the entries of `source` as a shard set.  The key and value types
// come from `source`; the rest of `options` (page size, metadata, overwrite,
// sync, duplicates recorded) from `options`.
shard_set_summary split_index(const sharded_reader& source, const std::filesystem::path& manifest,
                              const build_options& options, const shard_split& split);

// bbtree-build --shards N / --shard-size SIZE.  With a shard size, the
// entries stream into a shard_set_builder as they come (sorted input) or
// as the external sort emits them (import_into, import.h): the set is
// written once.  A number of shards needs the entry count before the first
// shard can end: sorted input from files is read twice, first to count
// (count_sorted_entries), and the set written once; otherwise
// import_entries writes a temporary index beside the manifest, which
// split_index then cuts into the set; the
// temporary file is unlinked as soon as it is open, so that nothing of it
// remains whatever happens, and takes as much disk space as the set while
// the set is written.  Throws what import_entries throws, and
// error(already_exists) before reading any input if the manifest exists
// and options.overwrite is false.
shard_set_summary import_shard_set(std::span<const std::string> inputs,
                                   const std::filesystem::path& manifest,
                                   const build_options& options, const import_options& import,
                                   const shard_split& split);

// ---------------------------------------------------------------------------
// Reading sets

// A shard set read as one index: every query of reader, with the same
// semantics, over all shards.  Ranks are global (the entries of the shards
// before, plus the rank within the shard), and cursors move across shard
// borders in both directions.  Lookups go to the one shard whose range can
// hold the key (a binary search over the first keys); get_many groups its
// keys by shard and runs each shard's batched lookup.
//
// open() also accepts a single index file, which becomes a set of one shard
// with no manifest: every query then goes straight to the file's reader,
// and its cursors are that reader's.
class sharded_reader {
 public:
  // Opens a manifest and every shard it lists, or a single index file.
  // Each shard is checked against its manifest line (key and value types,
  // entry count, file size, header checksum); its first and last keys are
  // not read (verify_shard_set checks them).  Throws the errors of
  // parse_shard_manifest and reader::open, a shard's prefixed with
  // "MANIFEST:LINE: ", and error(corrupt) for a shard that differs from its
  // manifest line (replaced or rebuilt since the manifest was written).
  // The path is opened as an index first, so that opening an index file
  // costs what reader::open does; a path that is neither gives
  // reader::open's error.
  static sharded_reader open(const std::filesystem::path& path, const open_options& options = {});
  // A single index, already open.
  explicit sharded_reader(reader single);

  sharded_reader(sharded_reader&&) noexcept;
  sharded_reader& operator=(sharded_reader&&) noexcept;
  ~sharded_reader();

  // For a single file, its header.  For a set: the key and value types
  // (kinds and sizes), `entries` the total; `file_size`, `page_count`,
  // `leaf_count`, `blob_length` and `metadata_length` summed over the
  // shards (page and leaf counts saturate at 2^32 - 1); `height`,
  // `max_key_length` and `max_value_length` the largest of any shard;
  // `page_size` the shards' page size if they share one, else 0; the
  // versions those of the format; every other field 0.
  const file_info& info() const noexcept;
  // The path it was opened with (the manifest's, for a set).
  const std::string& name() const noexcept;
  std::uint64_t size() const noexcept;
  bool empty() const noexcept { return size() == 0; }

  // Whether it was opened from a manifest (even one of a single shard).
  bool is_shard_set() const noexcept;
  // The manifest; for a single file, one made up from the file.
  const shard_manifest& manifest() const noexcept;
  std::size_t shard_count() const noexcept;
  const reader& shard(std::size_t number) const;
  // The global rank of the first entry of shard `number`.
  std::uint64_t shard_first_rank(std::size_t number) const;

  cursor begin() const;
  cursor end() const;
  // Calls each(const entry_ref&) at every entry, in key order; a bool
  // that `each` returns stops the walk when false (cursor::for_each_until).
  template <class F>
  [[gnu::always_inline]] void for_each(F&& each) const {
    begin().for_each_until(end(), std::forward<F>(each));
  }
  std::optional<entry> first() const;
  std::optional<entry> last() const;

  std::optional<std::string_view> get(std::string_view key) const;
  bool contains(std::string_view key) const { return get(key).has_value(); }
  cursor find(std::string_view key) const;
  cursor lower_bound(std::string_view key) const;
  cursor upper_bound(std::string_view key) const;
  entry_range equal_range(std::string_view key) const;
  entry_range range(bound from, bound to) const;
  entry_range prefix(std::string_view prefix) const;

  std::uint64_t rank(std::string_view key) const;
  std::uint64_t count(bound from, bound to) const;
  cursor at(std::uint64_t rank) const;

  std::size_t get_many(std::span<const std::string_view> keys,
                       std::span<std::optional<std::string_view>> out) const;

 private:
  explicit sharded_reader(std::unique_ptr<detail::shard_set> set);
  std::unique_ptr<detail::shard_set> set_;
  // The one file of a single-file or single-shard set, for the fast path.
  const reader* single_ = nullptr;
};

// A typed view (typed.h) of a shard set or a single file:
//   auto ids = bbtree::typed_shard_set<std::uint64_t, std::uint64_t>::open("ids.manifest");
template <typename Key, typename Value = std::string_view>
using typed_shard_set = typed_index<Key, Value, sharded_reader>;

// Prints the manifest as `name: value` lines, as write_header prints a
// header: the format, the types, the totals, then `shard.N.path`,
// `shard.N.first_key`, `shard.N.last_key`, `shard.N.entries`,
// `shard.N.file_size` and `shard.N.header_checksum` for each shard.
void write_shard_set_header(const sharded_reader& set, std::ostream& out);
// The totals (`shards`, `entries`, `file_size`), then write_stats (inspect.h)
// of each shard with every line prefixed by `shard.N.`.
void write_shard_set_stats(const sharded_reader& set, std::ostream& out);

// ---------------------------------------------------------------------------
// Verifying sets

// A problem of the manifest or of what it says about a shard.
struct shard_set_problem {
  std::uint64_t line = 0;  // in the manifest; 0 for the manifest as a whole
  std::string shard;       // the shard's path as opened; empty if none
  std::string message;
};

struct shard_set_report {
  std::string name;  // the manifest
  // The manifest's own problems and its claims that a shard contradicts.
  std::vector<shard_set_problem> problems;
  // verify_file of each shard that could be read, in manifest order.
  std::vector<verify_report> shards;
  // Shards that could not be read at all: the path and the error.
  std::vector<std::pair<std::string, std::string>> unreadable;
  bool truncated_list = false;  // max_errors stopped the manifest's list
  std::size_t shard_count = 0;
  std::uint64_t entries = 0;    // the manifest's total
  std::uint64_t file_size = 0;  // of the shard files read

  bool ok() const noexcept;
};

// "MANIFEST:LINE: shard PATH: MESSAGE" (without the parts that are unset).
std::string format_problem(const shard_set_report& report, const shard_set_problem& problem);

// Verifies a manifest and every shard it lists: each shard fully (or
// quickly, as options say) with verify_file, and the manifest's claims
// about it: key and value types, entry count, file size, header checksum,
// and first and last keys, read from the shard.  Throws error(io_error)
// only when the manifest itself cannot be read.
shard_set_report verify_shard_set(const std::filesystem::path& manifest,
                                  const verify_options& options = {});

}  // namespace bbtree
