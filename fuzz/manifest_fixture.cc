// fuzz_manifest's shard files, its seeds and its mutator (manifest_fixture.h).
#include "manifest_fixture.h"

#include "../lib/src/shard_support.h"

#include <bbtree/key_codec.h>

#include <fmt/format.h>

#include <sys/stat.h>
#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <tuple>

namespace bbtree::fuzz {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view magic_line = "bbtree-shards 1\n";

struct shard_plan {
  std::string path;  // relative to the fixture directory
  entry_map entries;
};

void build_set(const fs::path& directory, const entry_types& types, std::vector<shard_plan> plans,
               fixture_set& set) {
  set.types = types;
  std::vector<fs::path> paths;
  for (shard_plan& plan : plans) {
    build_options options;
    options.keys = types.keys;
    options.key_size = types.key_size;
    options.values = types.values;
    options.value_size = types.value_size;
    options.page_size = 512;  // a few leaves per shard, so that walks cross leaves and shards
    options.sync = false;
    options.overwrite = true;
    const fs::path path = directory / plan.path;
    fs::create_directories(path.parent_path());
    builder writer(path, options);
    for (const auto& [key, value] : plan.entries) writer.add(key, value);
    writer.finish();
    paths.push_back(path);
    fixture_shard shard;
    shard.types = types;
    shard.entries = std::move(plan.entries);
    set.shards.push_back(std::move(shard));
  }
  // The lines the reference writer gives these files, as a seed has them.
  const fs::path probe = directory / "probe.manifest";
  shard_set_options options;
  options.overwrite = true;
  options.sync = false;
  const shard_manifest written = write_shard_set(probe, paths, options);
  fs::remove(probe);
  if (written.shards.size() != set.shards.size()) fail("the fixture's shards do not form a set");
  for (std::size_t i = 0; i < set.shards.size(); ++i) {
    fixture_shard& shard = set.shards[i];
    shard.record = written.shards[i];
    shard.record.line = 0;
    if (shard.record.path != plans[i].path ||
        shard.record.first_key != shard.entries.begin()->first)
      fail("the fixture's shards are not in key order");
    struct stat status;
    if (::stat(paths[i].c_str(), &status) != 0) fail("cannot stat a fixture shard");
    shard.device = status.st_dev;
    shard.inode = status.st_ino;
  }
}

std::string encoded_u64(std::uint64_t key) { return std::string(u64_key(key).view()); }

manifest_fixture* build_fixture() {
  auto* fixture = new manifest_fixture;
  fixture->directory = scratch_directory() / "manifest";
  fixture->manifest = fixture->directory / "set.manifest";
  fs::create_directories(fixture->directory);

  // u64 -> bytes: three shards of 60 keys 7 apart, and one of the largest key.
  {
    entry_types types;
    types.keys = key_kind::u64;
    types.values = value_kind::bytes;
    std::vector<shard_plan> plans;
    for (std::uint64_t shard = 0; shard < 3; ++shard) {
      shard_plan plan{fmt::format("u64-{}.bbt", shard), {}};
      for (std::uint64_t i = shard * 60; i < shard * 60 + 60; ++i) {
        const std::uint64_t key = 7 * i;
        std::string value = fmt::format("v{}", key);
        if (key == 0) value.clear();
        // Now and then a value long enough to live outside its leaf.
        if (i % 9 == 4) value.assign(300 + key % 200, static_cast<char>('a' + i % 26));
        plan.entries.emplace(encoded_u64(key), std::move(value));
      }
      plans.push_back(std::move(plan));
    }
    plans.push_back({"u64-3.bbt", {{encoded_u64(~std::uint64_t{0}), "the largest key"}}});
    build_set(fixture->directory, types, std::move(plans), fixture->sets.emplace_back());
  }
  // bytes -> u64: keys that the manifest must escape, a TAB in a path,
  // bytes that are not UTF-8, the empty key and a key past the inline limit.
  {
    entry_types types;
    types.keys = key_kind::bytes;
    types.values = value_kind::u64;
    std::vector<shard_plan> plans(3);
    plans[0].path = "bytes-0.bbt";
    for (const std::string_view key :
         {std::string_view(), std::string_view("\0", 1), std::string_view("\0\0", 2),
          std::string_view("\t"), std::string_view("\n"), std::string_view("\\"),
          std::string_view("a"), std::string_view("a\tb"), std::string_view("a\nb"),
          std::string_view("a\\b"), std::string_view("a\x7f")}) {
      plans[0].entries.emplace(key, "");
    }
    for (int i = 0; i < 20; ++i) plans[0].entries.emplace(fmt::format("k/{:03}", i), "");
    plans[1].path = "sub/tab\there.bbt";
    for (const std::string_view key : {"m", "m\xc3\xa9", "m\xff", "m\xfe\xff", "m\r"})
      plans[1].entries.emplace(key, "");
    for (int i = 0; i < 20; ++i) plans[1].entries.emplace(fmt::format("m/{:03}", i * 5), "");
    plans[1].entries.emplace("m" + std::string(300, 'x'), "");
    plans[2].path = "sub/bytes-2.bbt";
    plans[2].entries.emplace("z", "");
    plans[2].entries.emplace("z\xff\xff\xff", "");
    std::uint64_t value = 0;
    for (shard_plan& plan : plans) {
      for (auto& [key, stored] : plan.entries) stored = std::string(u64_value(value++).view());
    }
    build_set(fixture->directory, types, std::move(plans), fixture->sets.emplace_back());
  }
  // fixed:3 -> none: keys spelled in hex.
  {
    entry_types types;
    types.keys = key_kind::fixed;
    types.key_size = 3;
    types.values = value_kind::none;
    std::vector<shard_plan> plans(2);
    for (int shard = 0; shard < 2; ++shard) {
      plans[shard].path = fmt::format("fixed-{}.bbt", shard);
      for (int i = 0; i < 40; ++i) {
        const int number = shard * 0x8000 + i * 0x301;
        plans[shard].entries.emplace(
            std::string{static_cast<char>(number >> 16), static_cast<char>(number >> 8),
                        static_cast<char>(number)},
            "");
      }
    }
    build_set(fixture->directory, types, std::move(plans), fixture->sets.emplace_back());
  }
  return fixture;
}

// Lenient reading of a decimal field, for the mutator's end line: whatever
// a shard line says its entry count is.
std::uint64_t loose_decimal(std::string_view text) {
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return 0;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (;;) {
    const std::size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

std::string join(const std::vector<std::string>& parts, char separator) {
  std::string text;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) text += separator;
    text += parts[i];
  }
  return text;
}

std::string shard_line(const shard_record& record, const entry_types& types) {
  std::string line;
  detail::append_shard_line(line, record, types);
  return line;
}

std::string types_line(const entry_types& types) {
  std::string line;
  detail::append_types_line(line, types);
  return line;
}

// The manifest of some of a set's shards, as the reference writer writes it.
std::string manifest_of(const fixture_set& set, std::initializer_list<std::size_t> numbers) {
  shard_manifest manifest;
  manifest.types = set.types;
  for (const std::size_t number : numbers) manifest.shards.push_back(set.shards[number].record);
  return format_shard_manifest(manifest);
}

}  // namespace

const manifest_fixture& the_manifest_fixture() {
  static const manifest_fixture* const fixture = build_fixture();
  return *fixture;
}

const fixture_shard* manifest_fixture::shard_at(const fs::path& path) const {
  struct stat status;
  if (::stat(path.c_str(), &status) != 0) return nullptr;
  for (const fixture_set& set : sets) {
    for (const fixture_shard& shard : set.shards) {
      if (shard.device == status.st_dev && shard.inode == status.st_ino) return &shard;
    }
  }
  return nullptr;
}

const fixture_set* manifest_fixture::set_of(const entry_types& types) const {
  auto canonical = [](entry_types t) {
    if (t.keys != key_kind::fixed) t.key_size = 0;
    if (t.values != value_kind::fixed) t.value_size = 0;
    return std::tuple(t.keys, t.key_size, t.values, t.value_size);
  };
  for (const fixture_set& set : sets) {
    if (canonical(set.types) == canonical(types)) return &set;
  }
  return nullptr;
}

std::string close_manifest(std::string body) {
  const std::vector<std::string_view> lines = split(body, '\n');
  // Every line after the first two is counted as a shard line, whatever it
  // holds: the mutator closes damaged manifests too.
  std::uint64_t shards = 0;
  std::uint64_t entries = 0;
  for (std::size_t i = 2; i < lines.size(); ++i) {
    if (i + 1 == lines.size() && lines[i].empty()) break;  // after the last LF
    ++shards;
    const std::vector<std::string_view> fields = split(lines[i], '\t');
    if (fields.size() > 4) entries += loose_decimal(fields[4]);
  }
  detail::append_end_line(body, shards, entries);
  return body;
}

// ---------------------------------------------------------------------------
// Seeds

std::vector<std::string> manifest_seeds() {
  const manifest_fixture& fixture = the_manifest_fixture();
  const fixture_set& numbers = fixture.sets[0];
  const fixture_set& strings = fixture.sets[1];
  const fixture_set& fixed = fixture.sets[2];
  std::vector<std::string> seeds;
  // Sets as the reference writer writes them: whole, in parts, one shard
  // (read through the single-file path), none.
  seeds.push_back(manifest_of(numbers, {0, 1, 2, 3}));
  seeds.push_back(manifest_of(numbers, {0, 1, 2}));
  seeds.push_back(manifest_of(numbers, {1}));
  seeds.push_back(manifest_of(numbers, {0, 2}));
  seeds.push_back(manifest_of(numbers, {3}));
  seeds.push_back(manifest_of(numbers, {}));
  seeds.push_back(manifest_of(strings, {0, 1, 2}));
  seeds.push_back(manifest_of(strings, {0}));
  seeds.push_back(manifest_of(strings, {1, 2}));
  seeds.push_back(manifest_of(fixed, {0, 1}));
  seeds.push_back(close_manifest(std::string(magic_line) + "types\tfixed:4096\tnone\n"));
  seeds.push_back(close_manifest(std::string(magic_line) + "types\ti64\tfixed:16\n"));

  auto with_records = [&](const fixture_set& set, std::vector<shard_record> records) {
    std::string body = std::string(magic_line) + types_line(set.types);
    for (const shard_record& record : records) body += shard_line(record, set.types);
    return close_manifest(std::move(body));
  };
  auto record = [](const fixture_set& set, std::size_t number) {
    return set.shards[number].record;
  };
  // Paths spelled another way that name the same files.
  {
    std::vector<shard_record> records{record(numbers, 0), record(numbers, 1), record(numbers, 2)};
    records[0].path = "./u64-0.bbt";
    records[1].path = "sub/../u64-1.bbt";
    records[2].path = "../manifest/u64-2.bbt";
    seeds.push_back(with_records(numbers, records));
  }
  // Manifests that open but lie about their shards' keys, which the reader
  // routes by: a first key past the shard's real one; a shard named twice;
  // shards in the wrong order.  Only verification tells.
  {
    std::vector<shard_record> records{record(numbers, 0), record(numbers, 1), record(numbers, 2)};
    records[1].first_key = encoded_u64(7 * 60 + 1);
    seeds.push_back(with_records(numbers, records));
  }
  {
    std::vector<shard_record> records{record(numbers, 3), record(numbers, 3)};
    records[0].first_key = records[0].last_key = encoded_u64(5);
    records[1].first_key = records[1].last_key = encoded_u64(10);
    seeds.push_back(with_records(numbers, records));
  }
  {
    std::vector<shard_record> records{record(numbers, 2), record(numbers, 1), record(numbers, 0)};
    std::swap(records[0].first_key, records[2].first_key);
    std::swap(records[0].last_key, records[2].last_key);
    seeds.push_back(with_records(numbers, records));
  }
  {
    std::vector<shard_record> records{record(strings, 0), record(strings, 1), record(strings, 2)};
    records[0].last_key = "k/019\xff";
    records[2].first_key = "y";
    seeds.push_back(with_records(strings, records));
  }
  // Shards whose headers differ from their lines; a directory, the manifest
  // itself and a missing file as shards.
  {
    std::vector<shard_record> records{record(numbers, 0), record(numbers, 1)};
    records[0].entries += 1;
    records[1].header_checksum ^= 1;
    seeds.push_back(with_records(numbers, records));
    records = {record(numbers, 0), record(numbers, 1), record(numbers, 2)};
    records[0].path = "sub";
    records[1].path = "set.manifest";
    records[2].path = "missing.bbt";
    seeds.push_back(with_records(numbers, records));
  }
  // Types that are not the shards'.
  {
    std::string text = manifest_of(numbers, {0, 1});
    const std::size_t types = text.find("types\tu64\tbytes");
    text.replace(types, 15, "types\ti64\tbytes");
    seeds.push_back(close_manifest(text.substr(0, text.rfind("end\t"))));
  }
  // What the parser refuses: a newer version, a cut-off text, no end line,
  // a wrong checksum, spellings that a tsv reader accepts and a manifest
  // does not, a CR, an absolute path.
  const std::string whole = manifest_of(numbers, {0, 1, 2});
  std::string newer = whole;
  newer[14] = '2';
  seeds.push_back(newer);
  seeds.push_back(whole.substr(0, whole.size() - 10));
  seeds.push_back(whole.substr(0, whole.rfind("end\t")));
  std::string wrong_checksum = whole;
  wrong_checksum[wrong_checksum.size() - 2] ^= 1;
  seeds.push_back(wrong_checksum);
  const std::string body = whole.substr(0, whole.rfind("end\t"));
  for (const auto& [from, to] :
       std::initializer_list<std::pair<std::string_view, std::string_view>>{
           {"\t413\t", "\t0413\t"},
           {"u64-1.bbt", "u64\\x2d1.bbt"},
           {"u64-1.bbt", "/u64-1.bbt"},
           {"types\tu64", "types\tU64"},
           {"\nshard", "\r\nshard"}}) {
    std::string changed = body;
    const std::size_t at = changed.find(from);
    if (at == std::string::npos) continue;
    changed.replace(at, from.size(), to);
    seeds.push_back(close_manifest(changed));
  }
  return seeds;
}

// ---------------------------------------------------------------------------
// The mutator

namespace {

// Field values worth trying: the fixture's own (which get past the header
// checks) and the edges of every field's spelling.
std::vector<std::string> field_tokens(std::uint32_t field, const entry_types* types) {
  const manifest_fixture& fixture = the_manifest_fixture();
  std::vector<std::string> tokens;
  for (const fixture_set& set : fixture.sets) {
    const bool same = types != nullptr && fixture.set_of(*types) == &set;
    for (const fixture_shard& shard : set.shards) {
      const shard_record& record = shard.record;
      switch (field) {
        case 1: {
          std::string path;
          append_escaped(path, record.path);
          tokens.push_back("./" + path);
          tokens.push_back(std::move(path));
          break;
        }
        case 2:
        case 3:
          if (same || types == nullptr) {
            // The edges, and every seventh key between them.
            std::size_t number = 0;
            for (const auto& [key, value] : shard.entries) {
              if (number++ % 7 == 0 || key == record.last_key)
                tokens.push_back(key_text(key, set.types));
            }
          }
          break;
        case 4:
          tokens.push_back(std::to_string(record.entries));
          break;
        case 5:
          tokens.push_back(std::to_string(record.file_size));
          break;
        case 6:
          tokens.push_back(fmt::format("{:08x}", record.header_checksum));
          break;
        default:
          break;
      }
    }
  }
  // The edges of each field's spelling.
  const std::initializer_list<const char*> edges[] = {
      {"", "0", "1", "01", "18446744073709551615", "18446744073709551616"},
      {"00000000", "ffffffff", "FFFFFFFF"},
      {"\\t", "\\n", "\\\\", "\\x41", "\\xff"},
      {"./", "../", "sub/", "sub", "set.manifest", "missing.bbt"},
      {"u64", "i64", "bytes", "none", "fixed:3", "fixed:4096", "fixed:0"},
      {"end", "shard", "types"},
  };
  for (const auto& group : edges) {
    for (const char* token : group) tokens.emplace_back(token);
  }
  return tokens;
}

// The types a text's second line names, if it names valid ones.
std::optional<entry_types> types_of(const std::vector<std::string>& lines) {
  if (lines.size() < 2) return std::nullopt;
  const std::vector<std::string_view> fields = split(lines[1], '\t');
  if (fields.size() != 3) return std::nullopt;
  entry_types types;
  try {
    parse_key_type(fields[1], types);
    parse_value_type(fields[2], types);
  } catch (const error&) {
    return std::nullopt;
  }
  return types;
}

// A key field moved to a neighbouring key: the last byte one up or down,
// a byte more or less.
std::optional<std::string> neighbouring_key(std::string_view text, const entry_types& types,
                                            std::mt19937& random) {
  std::string storage;
  std::string key;
  try {
    key = std::string(parse_key_text(text, types, storage));
  } catch (const error&) {
    return std::nullopt;
  }
  const bool sized = types.keys != key_kind::bytes;
  switch (random() % (sized ? 2 : 4)) {
    case 0:
    case 1: {
      // Up or down by one, carrying, as an integer would.
      const bool up = random() % 2 == 0;
      for (std::size_t i = key.size(); i-- > 0;) {
        auto& byte = reinterpret_cast<unsigned char&>(key[i]);
        if (up ? byte++ != 0xFF : byte-- != 0) break;
      }
      break;
    }
    case 2:
      key += static_cast<char>(random() % 3 == 0 ? 0 : random());
      break;
    default:
      if (!key.empty()) key.pop_back();
      break;
  }
  if (key.empty() && sized) return std::nullopt;
  return key_text(key, types);
}

// Closes the text again after a mutation: 7 times in 8 the end line is
// rewritten with the checksum of what precedes it (and, 3 times in 4, the
// counts of what precedes it), so that mutations get past the checksum.
std::string reclose(std::string text, std::mt19937& random) {
  if (random() % 8 == 0) return text;
  if (text.empty() || text.back() != '\n') {
    if (random() % 2 == 0) return text;
    text += '\n';
  }
  const std::size_t previous = text.rfind('\n', text.size() - 2);
  const std::size_t last_start = previous == std::string::npos ? 0 : previous + 1;
  const std::string_view last = std::string_view(text).substr(last_start);
  std::string body = text;
  std::vector<std::string_view> old_fields;
  if (last.starts_with("end\t")) {
    old_fields = split(last.substr(0, last.size() - 1), '\t');
    body = text.substr(0, last_start);
  } else if (random() % 2 == 0) {
    return text;
  }
  std::string closed = close_manifest(body);
  if (old_fields.size() == 4 && random() % 4 == 0) {
    // The old counts, with the new checksum.
    const std::size_t end_start = body.size();
    const std::string checksum = closed.substr(closed.size() - 9, 8);
    closed.resize(end_start);
    fmt::format_to(std::back_inserter(closed), "end\t{}\t{}\t{}\n", old_fields[1], old_fields[2],
                   checksum);
  }
  return closed;
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  for (const std::string_view line : split(text, '\n')) lines.emplace_back(line);
  return lines;  // a text ending in LF gives an empty last element
}

std::string mutate_text(std::string text, std::size_t max_size, std::mt19937& random,
                        base_mutator base) {
  const manifest_fixture& fixture = the_manifest_fixture();
  auto base_mutate = [&](std::string bytes, std::size_t room) {
    const std::size_t size = bytes.size();
    bytes.resize(std::max<std::size_t>(size + room, 1));
    bytes.resize(base(reinterpret_cast<std::uint8_t*>(bytes.data()), size, bytes.size()));
    return bytes;
  };
  std::vector<std::string> lines = lines_of(text);
  // Lines 0 .. content - 1 hold text; the element after the last LF is empty.
  const std::size_t content = lines.size() - (lines.back().empty() ? 1 : 0);
  auto any_line = [&]() { return content == 0 ? 0 : random() % content; };
  auto body_line = [&]() {  // a shard line, or the line where one would go
    return content <= 3 ? std::min<std::size_t>(2, content) : 2 + random() % (content - 3);
  };

  switch (random() % 16) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
      return base_mutate(std::move(text), max_size > text.size() ? max_size - text.size() : 0);
    case 5:
    case 6: {  // libFuzzer's mutator on one line only
      if (content == 0) break;
      const std::size_t i = any_line();
      lines[i] = base_mutate(lines[i], 16);
      return join(lines, '\n');
    }
    case 7:
    case 8:
    case 9: {  // one field replaced by a token
      if (content == 0) break;
      const std::size_t i = random() % 2 == 0 ? body_line() : any_line();
      if (i >= content) break;
      std::vector<std::string> fields;
      for (const std::string_view field : split(lines[i], '\t')) fields.emplace_back(field);
      const std::size_t field = random() % fields.size();
      const auto types = types_of(lines);
      const bool shard = fields[0] == "shard";
      const std::vector<std::string> tokens =
          field_tokens(shard ? static_cast<std::uint32_t>(field) : 0, types ? &*types : nullptr);
      fields[field] = tokens[random() % tokens.size()];
      if (random() % 16 == 0)
        fields.insert(fields.begin() + field, tokens[random() % tokens.size()]);
      lines[i] = join(fields, '\t');
      return join(lines, '\n');
    }
    case 10:
    case 11: {  // a key moved to its neighbour
      const auto types = types_of(lines);
      if (!types || content < 4) break;
      const std::size_t i = body_line();
      std::vector<std::string> fields;
      for (const std::string_view field : split(lines[i], '\t')) fields.emplace_back(field);
      if (fields.size() < 4) break;
      const std::size_t field = 2 + random() % 2;
      const auto moved = neighbouring_key(fields[field], *types, random);
      if (!moved) break;
      fields[field] = *moved;
      if (random() % 4 == 0) fields[5 - field] = *moved;  // first == last
      lines[i] = join(fields, '\t');
      return join(lines, '\n');
    }
    case 12: {  // a line repeated, dropped or two lines swapped
      if (content < 2) break;
      const std::size_t i = body_line();
      const std::size_t j = any_line();
      switch (random() % 3) {
        case 0: {
          const std::string copy = lines[j];
          lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(i), copy);
          break;
        }
        case 1:
          lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(j));
          break;
        default:
          std::swap(lines[std::min(i, content - 1)], lines[j]);
          break;
      }
      return join(lines, '\n');
    }
    case 13: {  // a real shard line of any set, at a shard line's place
      const fixture_set& set = fixture.sets[random() % fixture.sets.size()];
      std::string line = shard_line(set.shards[random() % set.shards.size()].record, set.types);
      line.pop_back();
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(std::min(body_line(), lines.size())),
                   line);
      return join(lines, '\n');
    }
    case 14: {  // a real manifest: some of a set's shards, in order
      const fixture_set& set = fixture.sets[random() % fixture.sets.size()];
      std::string body = std::string(magic_line) + types_line(set.types);
      for (const fixture_shard& shard : set.shards) {
        if (random() % 3 != 0) body += shard_line(shard.record, set.types);
      }
      return close_manifest(body);
    }
    default:
      break;
  }
  return base_mutate(std::move(text), max_size > text.size() ? max_size - text.size() : 0);
}

}  // namespace

std::size_t mutate_manifest(std::uint8_t* data, std::size_t size, std::size_t max_size,
                            unsigned seed, base_mutator base) {
  std::mt19937 random(seed);
  std::string text(reinterpret_cast<const char*>(data), size);
  text = reclose(mutate_text(std::move(text), max_size, random, base), random);
  if (text.size() > max_size) {
    // Too long for libFuzzer's buffer: its own mutation instead.
    return base(data, size, max_size);
  }
  std::memcpy(data, text.data(), text.size());
  return text.size();
}

std::size_t cross_over_manifests(const std::uint8_t* data, std::size_t size,
                                 const std::uint8_t* other, std::size_t other_size,
                                 std::uint8_t* out, std::size_t max_out, unsigned seed) {
  std::mt19937 random(seed);
  // The first lines of one, a run of lines of the other, the rest of the first.
  std::vector<std::string> first = lines_of({reinterpret_cast<const char*>(data), size});
  const std::vector<std::string> second =
      lines_of({reinterpret_cast<const char*>(other), other_size});
  const std::size_t cut = random() % (first.size() + 1);
  const std::size_t resume = cut + random() % (first.size() - cut + 1);
  const std::size_t from = random() % (second.size() + 1);
  const std::size_t to = from + random() % (second.size() - from + 1);
  std::vector<std::string> lines(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(cut));
  lines.insert(lines.end(), second.begin() + static_cast<std::ptrdiff_t>(from),
               second.begin() + static_cast<std::ptrdiff_t>(to));
  lines.insert(lines.end(), first.begin() + static_cast<std::ptrdiff_t>(resume), first.end());
  const std::string text = reclose(join(lines, '\n'), random);
  const std::size_t length = std::min(text.size(), max_out);
  std::memcpy(out, text.data(), length);
  return length;
}

}  // namespace bbtree::fuzz
