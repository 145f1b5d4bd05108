// What the fuzz targets share: the target bodies, the query workload run on
// every file a target opens, the oracle for files that verify, the
// structure-aware file mutator and the seed generators.
//
// Everything here is plain C++ with no dependency on libFuzzer, so that the
// normal build (g++) links it into fuzz_replay and fuzz_make_corpus; only
// fuzz/libfuzzer_main.cc, built per target with -fsanitize=fuzzer, defines
// the libFuzzer entry points.  See fuzz/README.md.
#pragma once

#include <bbtree/builder.h>
#include <bbtree/reader.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bbtree::fuzz {

using bytes_view = std::span<const std::uint8_t>;

// ---------------------------------------------------------------------------
// The targets.  Each body takes one input, returns 0 (libFuzzer's contract)
// and calls fail() on any finding that is not a crash: a mismatch with a
// model, an answer that breaks an invariant.  Only bbtree::error is caught:
// any other exception escapes and is reported as a crash.

int run_open_query(bytes_view input);
int run_verify(bytes_view input);
int run_mutated_file(bytes_view input);
int run_build_differential(bytes_view input);
int run_text_parsers(bytes_view input);
int run_manifest(bytes_view input);

struct target {
  const char* name;  // "open_query": binary fuzz_open_query, corpus/open_query
  int (*run)(bytes_view input);
};
// Every target, in a fixed order.
std::span<const target> all_targets();
const target* find_target(std::string_view name);

// Reports a finding and aborts, so that libFuzzer saves the input.
[[noreturn]] void fail(std::string_view what);
[[noreturn]] void fail_check(const char* condition, const char* file, int line,
                             std::string_view what);
// Checks an invariant; `what` is evaluated only when it does not hold.
#define BBTREE_FUZZ_CHECK(condition, what)                                              \
  do {                                                                                  \
    if (!(condition)) ::bbtree::fuzz::fail_check(#condition, __FILE__, __LINE__, what); \
  } while (false)

// Reads every byte of a view, so that the sanitizers see a view that
// reaches outside its file.
void touch(std::string_view bytes);

// Hex of bytes, cut after `limit` bytes, for failure messages.
std::string hex(std::string_view bytes, std::size_t limit = 64);

// ---------------------------------------------------------------------------
// The query workload, run on every file a target manages to open: lookups,
// bounds, ranges, prefixes, scans in both directions, rank/count/at,
// get_many, first/last, metadata and a dump of every entry, each bounded in
// steps.  Probes come from the file's own keys (and their neighbours) and
// from `probe_source`.  Each group of queries catches bbtree::error on its
// own, so that a damaged page stops one group, not the workload.
void exercise(const reader& index, bytes_view probe_source);

// Runs full verification (bbtree::verify_bytes) and checks the report's
// shape.  True when the file verifies; `builder_policy` also checks the
// reference builder's choices (verify_options::builder_policy).
bool verifies(bytes_view file, bool builder_policy = false);
// The first problems verification finds, formatted; empty when it passes.
std::string verify_problems(bytes_view file, bool builder_policy = false);
// The verifier's modes agree with the full verdict `full_ok`: checksums only
// passes when full verification does, the builder's policy fails when full
// verification does, and max_errors does not change the verdict.
void check_verifier_modes(bytes_view file, bool full_ok);

// The oracle for a file the verifier accepts: every query must agree with
// the file's own dump (keys strictly ascending, backward scan = forward scan
// reversed, get/find/rank/at/bounds/count/get_many consistent) and no query
// may throw.  Fails on any disagreement.  Bounded to `max_entries`.
void check_consistent(const reader& index, std::size_t max_entries = 4096);

// ---------------------------------------------------------------------------
// Bytes of files

// Recomputes the checksums a damaged file would otherwise be caught by:
// every external item's, every page's, the metadata's and the header's (in
// that order, since each covers the one before).  Leaves bytes it cannot
// place alone.  Returns false when there is no header to fix.
bool fix_checksums(std::span<std::uint8_t> file);

// The structure-aware mutator of fuzz_mutated_file: changes bytes mostly
// inside page bodies (header fields of pages, sections, slots, items), now
// and then header fields, the blob and metadata regions or whole pages, and
// with probability 7/8 fixes the checksums afterwards so that inputs get past
// them.  `base` is libFuzzer's own mutator (LLVMFuzzerMutate), or a simple
// byte mutator outside libFuzzer.  Returns the new size (<= max_size).
using base_mutator = std::size_t (*)(std::uint8_t* data, std::size_t size, std::size_t max_size);
std::size_t mutate_file(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed,
                        base_mutator base);
// Takes pages of `other` into `data` where the page sizes agree.
std::size_t cross_over_files(const std::uint8_t* data, std::size_t size, const std::uint8_t* other,
                             std::size_t other_size, std::uint8_t* out, std::size_t max_out,
                             unsigned seed);
// The mutator of fuzz_manifest: libFuzzer's mutator on the whole text or
// one line, fields replaced by the fixture's paths, keys, sizes and
// checksums or by edge spellings, keys moved to their neighbours, lines
// repeated, dropped, swapped or taken from a real manifest; then, 7 times in
// 8, the end line rewritten with the checksum (and mostly the counts) of
// what precedes it, which no byte mutator gets right.  Cross-over splices
// lines of two manifests and closes the result the same way.
std::size_t mutate_manifest(std::uint8_t* data, std::size_t size, std::size_t max_size,
                            unsigned seed, base_mutator base);
std::size_t cross_over_manifests(const std::uint8_t* data, std::size_t size,
                                 const std::uint8_t* other, std::size_t other_size,
                                 std::uint8_t* out, std::size_t max_out, unsigned seed);
// Flips, sets or inserts a few random bytes: a stand-in for libFuzzer's
// mutator in builds without it.
std::size_t simple_mutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

// ---------------------------------------------------------------------------
// Seeds (fuzz_make_corpus)

// One small valid file of a given shape.
struct seed_shape {
  key_kind keys;
  std::uint32_t key_size;
  value_kind values;
  std::uint32_t value_size;
  std::uint32_t page_size;
  std::size_t entries;
  bool long_items;  // some keys and values past the inline limit
  bool metadata;
  std::string name() const;
};
// Small files of every key kind and value kind, empty to three levels.
std::vector<seed_shape> seed_shapes();
std::string make_seed_file(const seed_shape& shape, const std::filesystem::path& scratch);

// Inputs of fuzz_build_differential that decode to the given shape.
std::vector<std::string> build_differential_seeds();
// Inputs of fuzz_text_parsers: every format with every type, and the
// corner cases of escapes, quotes, line ends and JSON.
std::vector<std::string> text_parser_seeds();
// Inputs of fuzz_manifest: manifests of the shard files it builds
// (manifest_fixture.h), whole and in parts, some that lie about their
// shards, and texts that the parser refuses.
std::vector<std::string> manifest_seeds();

// A directory for the files a target writes, created on first use under
// $TMPDIR (else /dev/shm, else /tmp) and removed at exit.
const std::filesystem::path& scratch_directory();

}  // namespace bbtree::fuzz
