// What the shard-set sources share: comparing and naming types, quoting
// keys in messages, and finding a shard's file from its manifest line.
#pragma once

#include <bbtree/reader.h>
#include <bbtree/shards.h>
#include <bbtree/text_format.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace bbtree::detail {

// What parse_shard_manifest throws: the line and the problem apart, for the
// verifier's report, as well as the whole message.
class manifest_error : public error {
 public:
  manifest_error(errc code, const std::string& name, std::uint64_t line, std::string problem);
  std::uint64_t line() const noexcept { return line_; }  // 0: the manifest as a whole
  const std::string& problem() const noexcept { return problem_; }

 private:
  std::uint64_t line_;
  std::string problem_;
};

// Types with the sizes that only fixed kinds have (a u64 file's header says
// key_size 8; the manifest's "u64" says nothing), so that types compare
// and print the same whichever they came from.
entry_types canonical_types(const entry_types& types) noexcept;
bool same_types(const entry_types& a, const entry_types& b) noexcept;
// "u64 keys and bytes values".
std::string describe_types(const entry_types& types);

// A key as the manifest spells it, quoted and cut for a message.
std::string quoted_key_text(std::string_view key, const entry_types& types);

// The header_checksum field of an open index (the CRC32C of its header
// bytes [0, 508), checked when it was opened).
std::uint32_t header_checksum_of(const reader& file) noexcept;

// The file a manifest line names: the path taken relative to the
// manifest's directory.
std::filesystem::path shard_path(const std::filesystem::path& manifest, const shard_record& record);

// What the manifest line says and the file's header disagree on, as
// "its ... is X, the manifest's Y", or empty when they agree.  First and
// last keys are not compared: they need reads beyond the header.
std::string header_mismatch(const shard_record& record, const entry_types& types,
                            const reader& file);

// `path` opened as an index file, or nothing when it is a shard manifest
// instead.  The index is tried first, so that an index file is opened
// once; only a file that is not an index (errc::not_bbtree) is read again
// for the manifest magic.  Any other path throws reader::open's error.
std::optional<reader> open_unless_manifest(const std::filesystem::path& path,
                                           const open_options& options = {});

// True if `path`, as a manifest line writes it, is one of the names
// shard_set_builder gives the shards of `manifest` (either generation),
// in the manifest's directory ("./NAME" included).
bool is_builder_shard_name(std::string_view path, const std::filesystem::path& manifest);

// Fault injection for tests: shard_set_builder::finish() calls it, when
// set, once the new shards have their names and before the manifest is
// published.  Whatever it throws fails the build there.
extern std::function<void()> before_manifest_publish;

// A manifest's types line and shard lines, as spec/SHARDS.md 4 spells them
// (format_shard_manifest's parts; the fuzz target builds manifests of its
// own from them), appended to `text`.  `types` are canonical.
void append_types_line(std::string& text, const entry_types& types);
void append_shard_line(std::string& text, const shard_record& shard, const entry_types& types);
// The end line, whose checksum covers everything in `text` before it.
void append_end_line(std::string& text, std::uint64_t shards, std::uint64_t entries);

// Writes `manifest` at `path` atomically (a staged file, renamed into
// place), under the options' overwrite and sync.
void write_manifest_file(const std::filesystem::path& path, const shard_manifest& manifest,
                         const shard_set_options& options);

}  // namespace bbtree::detail
