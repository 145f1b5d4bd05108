// The shard manifest (spec/SHARDS.md): its text, reading and writing it,
// and joining independently built index files into a set.
#include <bbtree/detail/reader_core.h>
#include <bbtree/shards.h>

#include "file_io.h"
#include "key_compare.h"
#include "shard_support.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bbtree {

namespace fs = std::filesystem;

namespace detail {

namespace {

std::string located(const std::string& name, std::uint64_t line, std::string_view problem) {
  return line == 0 ? fmt::format("{}: {}", name, problem)
                   : fmt::format("{}:{}: {}", name, line, problem);
}

}  // namespace

manifest_error::manifest_error(errc code, const std::string& name, std::uint64_t line,
                               std::string problem)
    : error(code, located(name, line, problem)), line_(line), problem_(std::move(problem)) {}

entry_types canonical_types(const entry_types& types) noexcept {
  entry_types canonical = types;
  if (canonical.keys != key_kind::fixed) canonical.key_size = 0;
  if (canonical.values != value_kind::fixed) canonical.value_size = 0;
  return canonical;
}

bool same_types(const entry_types& a, const entry_types& b) noexcept {
  const entry_types x = canonical_types(a);
  const entry_types y = canonical_types(b);
  return x.keys == y.keys && x.key_size == y.key_size && x.values == y.values &&
         x.value_size == y.value_size;
}

std::string describe_types(const entry_types& types) {
  return fmt::format("{} keys and {} values", key_type_name(types), value_type_name(types));
}

std::string quoted_key_text(std::string_view key, const entry_types& types) {
  constexpr std::size_t shown = 80;
  std::string text = key_text(key, types);
  if (text.size() > shown) text = text.substr(0, shown) + "...";
  return "\"" + text + "\"";
}

std::uint32_t header_checksum_of(const reader& file) noexcept {
  return format::load_le<std::uint32_t>(file.core().base() + format::header::checksum_offset);
}

fs::path shard_path(const fs::path& manifest, const shard_record& record) {
  return manifest.parent_path() / fs::path(record.path);
}

std::string header_mismatch(const shard_record& record, const entry_types& types,
                            const reader& file) {
  const entry_types file_types = entry_types::of(file.info());
  if (!same_types(file_types, types)) {
    return fmt::format("it has {}, the manifest says {}",
                       describe_types(canonical_types(file_types)), describe_types(types));
  }
  if (file.size() != record.entries) {
    return fmt::format("it has {} entries, the manifest says {}", file.size(), record.entries);
  }
  if (file.info().file_size != record.file_size) {
    return fmt::format("it is {} bytes long, the manifest says {}", file.info().file_size,
                       record.file_size);
  }
  if (header_checksum_of(file) != record.header_checksum) {
    return fmt::format("its header checksum is {:08x}, the manifest says {:08x}",
                       header_checksum_of(file), record.header_checksum);
  }
  return {};
}

namespace {

constexpr std::string_view manifest_magic = "bbtree-shards ";

// Decimal without sign or leading zeros: the manifest spells every number
// one way, so that equal sets have equal manifests.
bool parse_canonical_decimal(std::string_view text, std::uint64_t& value) noexcept {
  if (text.empty() || text.size() > 20 || (text.size() > 1 && text[0] == '0')) return false;
  value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return false;
    value = value * 10 + digit;
  }
  return true;
}

bool parse_checksum(std::string_view text, std::uint32_t& value) noexcept {
  if (text.size() != 8) return false;
  value = 0;
  for (const char c : text) {
    std::uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<std::uint32_t>(c - 'a' + 10);
    } else {
      return false;
    }
    value = value << 4 | digit;
  }
  return true;
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  for (;;) {
    const std::size_t tab = line.find('\t');
    fields.push_back(line.substr(0, tab));
    if (tab == std::string_view::npos) break;
    line.remove_prefix(tab + 1);
  }
  return fields;
}

class manifest_parser {
 public:
  manifest_parser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  shard_manifest parse() {
    if (!text_.starts_with(manifest_magic)) {
      throw manifest_error(errc::not_bbtree, name_, 0,
                           "not a shard manifest (it does not begin with \"bbtree-shards \")");
    }
    const std::string_view first = next_line();
    const std::string_view version = first.substr(manifest_magic.size());
    if (version != shard_manifest_version) {
      std::uint64_t number = 0;
      if (parse_canonical_decimal(version, number)) {
        throw manifest_error(errc::newer_version, name_, 1,
                             fmt::format("shard manifest version {}; this reader knows version {}",
                                         version, shard_manifest_version));
      }
      fail("the first line is not \"bbtree-shards 1\"");
    }
    check_end_line();

    const std::vector<std::string_view> types_line = fields_of(next_line(), "types", 3);
    try {
      parse_key_type(types_line[1], manifest_.types);
      parse_value_type(types_line[2], manifest_.types);
    } catch (const error& e) {
      fail(e.what());
    }
    if (key_type_name(manifest_.types) != types_line[1] ||
        value_type_name(manifest_.types) != types_line[2]) {
      fail("the types are not spelled as the manifest spells them (e.g. fixed:16, not fixed:016)");
    }
    while (offset_ < end_line_start_) parse_shard(next_line());
    check_totals();
    return std::move(manifest_);
  }

 private:
  [[noreturn]] void fail(std::string_view what, errc code = errc::corrupt) const {
    throw manifest_error(code, name_, line_, std::string(what));
  }

  // The next line, without its LF; the text ends with an LF (check_end_line).
  std::string_view next_line() {
    const std::size_t newline = text_.find('\n', offset_);
    ++line_;
    if (newline == std::string_view::npos) {
      fail("the line does not end (the manifest is cut short)", errc::truncated);
    }
    const std::string_view line = text_.substr(offset_, newline - offset_);
    offset_ = newline + 1;
    return line;
  }

  std::vector<std::string_view> fields_of(std::string_view line, std::string_view kind,
                                          std::size_t count) const {
    std::vector<std::string_view> fields = split_fields(line);
    if (fields[0] != kind) {
      fail(fmt::format("expected a \"{}\" line, found \"{}\"", kind, fields[0].substr(0, 20)));
    }
    if (fields.size() != count) {
      fail(fmt::format("a \"{}\" line has {} tab-separated fields, this one {}", kind, count,
                       fields.size()));
    }
    return fields;
  }

  // The end line comes last and closes the text; its checksum covers every
  // byte before it, so it is checked before anything else is believed.
  void check_end_line() {
    if (text_.empty() || text_.back() != '\n') {
      throw manifest_error(
          errc::truncated, name_, 0,
          "the manifest does not end with its end line and a newline (it is cut short)");
    }
    const std::size_t previous_newline = text_.rfind('\n', text_.size() - 2);
    end_line_start_ = previous_newline == std::string_view::npos ? 0 : previous_newline + 1;
    const std::string_view line = text_.substr(end_line_start_, text_.size() - 1 - end_line_start_);
    const std::uint64_t saved_line = line_;
    line_ =
        1 + static_cast<std::uint64_t>(std::count(
                text_.begin(), text_.begin() + static_cast<std::ptrdiff_t>(end_line_start_), '\n'));
    if (!line.starts_with("end\t") || end_line_start_ < offset_) {
      throw manifest_error(errc::truncated, name_, 0,
                           "the manifest has no end line (it is cut short)");
    }
    const std::vector<std::string_view> fields = fields_of(line, "end", 4);
    if (!parse_canonical_decimal(fields[1], claimed_shards_))
      fail("the shard count is not a number");
    if (!parse_canonical_decimal(fields[2], claimed_entries_))
      fail("the entry count is not a number");
    std::uint32_t claimed_checksum = 0;
    if (!parse_checksum(fields[3], claimed_checksum)) {
      fail("the checksum is not 8 lowercase hex digits");
    }
    const std::uint32_t actual = format::crc32c(text_.data(), end_line_start_);
    if (actual != claimed_checksum) {
      fail(fmt::format(
          "checksum mismatch: the end line says {:08x}, the text before it gives {:08x} "
          "(the manifest was damaged or edited)",
          claimed_checksum, actual));
    }
    end_line_number_ = line_;
    line_ = saved_line;
  }

  std::string parse_key(std::string_view text, std::string_view role) const {
    std::string storage;
    std::string key;
    try {
      key = parse_key_text(text, manifest_.types, storage);
    } catch (const error& e) {
      fail(fmt::format("{}: {}", role, e.what()));
    }
    // One spelling per key (no leading zeros, lowercase hex, only the
    // escapes needed), so that equal sets have equal manifests.
    if (key_text(key, manifest_.types) != text) {
      fail(fmt::format("{} \"{}\" is not spelled as the manifest spells keys (\"{}\")", role,
                       text.substr(0, 80), key_text(key, manifest_.types).substr(0, 80)));
    }
    return key;
  }

  void parse_shard(std::string_view line) {
    const std::vector<std::string_view> fields = fields_of(line, "shard", 7);
    shard_record shard;
    shard.line = line_;
    try {
      shard.path = unescape(fields[1], "path");
    } catch (const error& e) {
      fail(fmt::format("path: {}", e.what()));
    }
    std::string spelled;
    append_escaped(spelled, shard.path);
    if (spelled != fields[1]) fail("the path is not spelled as the manifest spells paths");
    if (shard.path.empty()) fail("the path is empty");
    if (shard.path.front() == '/')
      fail("the path is absolute; a manifest names shards relative to itself");
    if (shard.path.find('\0') != std::string::npos) fail("the path holds a NUL byte");
    shard.first_key = parse_key(fields[2], "first key");
    shard.last_key = parse_key(fields[3], "last key");
    if (!parse_canonical_decimal(fields[4], shard.entries)) fail("the entry count is not a number");
    if (!parse_canonical_decimal(fields[5], shard.file_size)) fail("the file size is not a number");
    if (!parse_checksum(fields[6], shard.header_checksum)) {
      fail("the header checksum is not 8 lowercase hex digits");
    }
    if (shard.entries == 0) fail("the shard has no entries; a set holds only non-empty shards");
    const int order = compare_keys(shard.first_key, shard.last_key);
    if (order > 0 || (order == 0) != (shard.entries == 1)) {
      fail(fmt::format("first key {} and last key {} do not fit {} entries",
                       quoted_key_text(shard.first_key, manifest_.types),
                       quoted_key_text(shard.last_key, manifest_.types), shard.entries));
    }
    if (!manifest_.shards.empty()) {
      const shard_record& before = manifest_.shards.back();
      if (compare_keys(before.last_key, shard.first_key) >= 0) {
        fail(fmt::format(
                 "the shard's range overlaps or comes before the previous shard's (line {}): "
                 "it starts at {}, the previous one ends at {}",
                 before.line, quoted_key_text(shard.first_key, manifest_.types),
                 quoted_key_text(before.last_key, manifest_.types)),
             errc::out_of_order);
      }
    }
    if (entries_ > UINT64_MAX - shard.entries)
      fail("the entry counts add up to more than 2^64 - 1");
    entries_ += shard.entries;
    manifest_.shards.push_back(std::move(shard));
  }

  void check_totals() {
    line_ = end_line_number_;
    if (claimed_shards_ != manifest_.shards.size()) {
      fail(fmt::format("the end line counts {} shards; the manifest lists {}", claimed_shards_,
                       manifest_.shards.size()));
    }
    if (claimed_entries_ != entries_) {
      fail(fmt::format("the end line counts {} entries; the shards add up to {}", claimed_entries_,
                       entries_));
    }
  }

  std::string_view text_;
  const std::string& name_;
  std::size_t offset_ = 0;
  std::uint64_t line_ = 0;
  std::size_t end_line_start_ = 0;
  std::uint64_t end_line_number_ = 0;
  std::uint64_t claimed_shards_ = 0;
  std::uint64_t claimed_entries_ = 0;
  std::uint64_t entries_ = 0;
  shard_manifest manifest_;
};

// Reads a whole file; the manifest is small, a shard line per file.
std::string read_whole_file(const fs::path& path) {
  file_descriptor fd = open_for_reading(path);
  struct stat status;
  if (::fstat(fd.get(), &status) != 0) throw_errno("cannot read", path);
  if (S_ISDIR(status.st_mode)) {
    throw error(errc::io_error, fmt::format("cannot open {}: Is a directory", path.string()));
  }
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t count = ::read(fd.get(), buffer, sizeof(buffer));
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) throw_errno("cannot read", path);
    if (count == 0) break;
    text.append(buffer, static_cast<std::size_t>(count));
  }
  return text;
}

// The path of `shard` relative to the directory of `manifest`, worked out
// on the paths as written (symbolic links are not followed).
std::string relative_to_manifest(const fs::path& shard, const fs::path& manifest) {
  const fs::path base = fs::absolute(manifest).parent_path().lexically_normal();
  const fs::path target = fs::absolute(shard).lexically_normal();
  const fs::path relative = target.lexically_relative(base);
  if (relative.empty() || relative == ".") {
    throw error(errc::invalid_argument,
                fmt::format("cannot name {} relative to {}", shard.string(), base.string()));
  }
  return relative.generic_string();
}

}  // namespace

void write_manifest_file(const fs::path& path, const shard_manifest& manifest,
                         const shard_set_options& options) {
  const std::string text = format_shard_manifest(manifest);
  staged_file staged(path, options.overwrite);
  write_all(staged.fd(), text.data(), text.size(), path);
  staged.publish(options.sync);
}

}  // namespace detail

std::uint64_t shard_manifest::entries() const noexcept {
  std::uint64_t total = 0;
  for (const shard_record& shard : shards) total += shard.entries;
  return total;
}

bool is_shard_manifest(std::span<const std::byte> bytes) noexcept {
  return bytes.size() >= detail::manifest_magic.size() &&
         std::memcmp(bytes.data(), detail::manifest_magic.data(), detail::manifest_magic.size()) ==
             0;
}

bool is_shard_manifest(const fs::path& path) noexcept {
  // Only a regular file can be a manifest: its shards are found relative
  // to its directory.  Nothing else is opened (open_regular_file): reading
  // would consume the start of a pipe, and even opening a FIFO would let a
  // writer waiting on it start, and lose its bytes when this closes.
  detail::file_descriptor fd;
  try {
    std::uint64_t size = 0;
    fd = detail::open_regular_file(path, size);
  } catch (const error&) {
    return false;  // the caller's open of the path reports why
  }
  std::byte start[detail::manifest_magic.size()];
  std::size_t have = 0;
  while (have < sizeof(start)) {
    const ssize_t count = ::read(fd.get(), start + have, sizeof(start) - have);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) break;
    have += static_cast<std::size_t>(count);
  }
  return is_shard_manifest(std::span<const std::byte>(start, have));
}

namespace detail {

std::optional<reader> open_unless_manifest(const fs::path& path, const open_options& options) {
  try {
    return reader::open(path, options);
  } catch (const error& e) {
    if (e.code() != errc::not_bbtree || !is_shard_manifest(path)) throw;
  }
  return std::nullopt;
}

}  // namespace detail

shard_manifest parse_shard_manifest(std::string_view text, const std::string& name) {
  return detail::manifest_parser(text, name).parse();
}

shard_manifest read_shard_manifest(const fs::path& path) {
  return parse_shard_manifest(detail::read_whole_file(path), path.string());
}

namespace detail {

void append_types_line(std::string& text, const entry_types& types) {
  fmt::format_to(std::back_inserter(text), "types\t{}\t{}\n", key_type_name(types),
                 value_type_name(types));
}

void append_shard_line(std::string& text, const shard_record& shard, const entry_types& types) {
  text += "shard\t";
  append_escaped(text, shard.path);
  text += '\t';
  append_key_text(text, shard.first_key, types);
  text += '\t';
  append_key_text(text, shard.last_key, types);
  fmt::format_to(std::back_inserter(text), "\t{}\t{}\t{:08x}\n", shard.entries, shard.file_size,
                 shard.header_checksum);
}

void append_end_line(std::string& text, std::uint64_t shards, std::uint64_t entries) {
  const std::uint32_t checksum = format::crc32c(text.data(), text.size());
  fmt::format_to(std::back_inserter(text), "end\t{}\t{}\t{:08x}\n", shards, entries, checksum);
}

}  // namespace detail

std::string format_shard_manifest(const shard_manifest& manifest) {
  const entry_types types = detail::canonical_types(manifest.types);
  std::string text;
  text += detail::manifest_magic;
  text += shard_manifest_version;
  text += '\n';
  detail::append_types_line(text, types);
  std::uint64_t entries = 0;
  for (const shard_record& shard : manifest.shards) {
    detail::append_shard_line(text, shard, types);
    entries += shard.entries;
  }
  detail::append_end_line(text, manifest.shards.size(), entries);
  return text;
}

fs::path shard_file_name(const fs::path& manifest, std::size_t number,
                         shard_name_generation generation) {
  fs::path name = manifest;
  name +=
      fmt::format(".shard-{}{:04}.bbt", generation == shard_name_generation::a ? "" : "b-", number);
  return name;
}

namespace detail {

bool is_builder_shard_name(std::string_view path, const fs::path& manifest) {
  const fs::path normal = fs::path(path).lexically_normal();
  if (normal.has_parent_path()) return false;
  const std::string name = normal.string();
  const std::string stem = manifest.filename().string() + ".shard-";
  if (!name.starts_with(stem) || !name.ends_with(".bbt")) return false;
  std::string_view number =
      std::string_view(name).substr(stem.size(), name.size() - stem.size() - 4);
  if (number.starts_with("b-")) number.remove_prefix(2);
  return number.size() >= 4 &&
         std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace detail

shard_manifest write_shard_set(const fs::path& manifest, std::span<const fs::path> shards,
                               const shard_set_options& options) {
  if (shards.empty()) throw error(errc::invalid_argument, "a shard set needs at least one shard");
  if (!options.overwrite && ::access(manifest.c_str(), F_OK) == 0) {
    throw error(errc::already_exists,
                fmt::format("{} already exists (use --force to replace it)", manifest.string()));
  }
  struct opened_shard {
    std::string name;
    entry_types types;
    shard_record record;
  };
  std::vector<opened_shard> opened;
  opened.reserve(shards.size());
  for (const fs::path& path : shards) {
    std::error_code not_there;
    if (fs::equivalent(manifest, path, not_there)) {
      throw error(
          errc::invalid_argument,
          fmt::format("{} is both the manifest to write and one of its shards", path.string()));
    }
    std::optional<reader> index = detail::open_unless_manifest(path);
    if (!index) {
      throw error(
          errc::invalid_argument,
          fmt::format("{} is a shard manifest, not an index file: give its shards (bbtree-dump "
                      "--header lists them)",
                      path.string()));
    }
    const reader& file = *index;
    opened_shard shard{path.string(), entry_types::of(file.info()), {}};
    if (!opened.empty() && !detail::same_types(opened.front().types, shard.types)) {
      throw error(
          errc::type_mismatch,
          fmt::format("{} and {} cannot be shards of one set: {} has {}, {} has {}",
                      opened.front().name, shard.name, opened.front().name,
                      detail::describe_types(detail::canonical_types(opened.front().types)),
                      shard.name, detail::describe_types(detail::canonical_types(shard.types))));
    }
    const auto first = file.first();
    const auto last = file.last();
    if (!first || !last) {
      throw error(
          errc::invalid_argument,
          fmt::format("{} has no entries; a shard set holds only non-empty shards, so leave it out",
                      shard.name));
    }
    shard.record.path = detail::relative_to_manifest(path, manifest);
    shard.record.first_key = first->key;
    shard.record.last_key = last->key;
    shard.record.entries = file.size();
    shard.record.file_size = file.info().file_size;
    shard.record.header_checksum = detail::header_checksum_of(file);
    opened.push_back(std::move(shard));
  }
  // The given order does not matter: a set is in key order.
  std::stable_sort(opened.begin(), opened.end(), [](const opened_shard& a, const opened_shard& b) {
    return detail::compare_keys(a.record.first_key, b.record.first_key) < 0;
  });
  shard_manifest result;
  result.types = detail::canonical_types(opened.front().types);
  for (std::size_t i = 0; i < opened.size(); ++i) {
    if (i > 0) {
      const opened_shard& before = opened[i - 1];
      const opened_shard& shard = opened[i];
      if (detail::compare_keys(before.record.last_key, shard.record.first_key) >= 0) {
        throw error(
            errc::out_of_order,
            fmt::format("{} and {} overlap: {} holds keys {} to {}, {} holds keys {} to {}",
                        before.name, shard.name, before.name,
                        detail::quoted_key_text(before.record.first_key, result.types),
                        detail::quoted_key_text(before.record.last_key, result.types), shard.name,
                        detail::quoted_key_text(shard.record.first_key, result.types),
                        detail::quoted_key_text(shard.record.last_key, result.types)));
      }
    }
    result.shards.push_back(opened[i].record);
  }
  detail::write_manifest_file(manifest, result, options);
  return result;
}

}  // namespace bbtree
