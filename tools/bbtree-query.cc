// bbtree-query: point lookups, ranges, prefixes and counts on an index file
// or a shard set.
#include "common.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

namespace bbtree::tools {
namespace {

constexpr std::string_view examples = R"(  bbtree-query counts.bbt get 42 43
  bbtree-query words.bbt get --with-keys apple pear
  cut -f1 queries.tsv | bbtree-query data.bbt get --stdin --with-keys --missing-marker -
  bbtree-query counts.bbt range --from 100 --before 200 --limit 10
  bbtree-query events.bbt range --after -5 --reverse
  bbtree-query words.bbt prefix 'app' --format json
  bbtree-query counts.bbt count --from 100 --to 199
  bbtree-query counts.bbt last
  bbtree-query data.manifest get 42
)";

constexpr std::string_view exit_statuses =
    R"(  0  success (range, prefix and count succeed even when nothing is in range)
  1  get: a key was not found; first, last: the file is empty; and any command
     on a FILE that is not a bbtree file or is damaged (the message says which),
     or on a shard set whose manifest is damaged or whose shard differs from
     the manifest (replaced or rebuilt since)
  2  usage error, including a KEY that is not a key of the file's key type
  3  FILE, or a shard that its manifest lists, cannot be read

Keys are written as in tsv (spec/TEXT-FORMATS.md): decimal for u64 and i64,
hex for fixed:N, escaped text for bytes.  Negative numbers can be given as
they are (get -5, --from -5); other keys that start with - go after -- right
after the command (get -- -x) or after = (--from=-x).  --huge-pages copies the file
into memory backed by 2 MiB pages in the background while the file mapping
answers (memory_mode::map_then_copy_huge_pages): the first answers wait for
no copy, and later lookups take fewer TLB misses; worth it for long get
--stdin runs on large files.

FILE may be a shard manifest (spec/SHARDS.md, bbtree-build --shards,
bbtree-shards): every command then works on the whole set as on one index,
across shard borders.
)";

// How many keys get --stdin looks up at once: enough for the lookups'
// cache misses to overlap, few enough to stay in cache.
constexpr std::size_t lookup_batch = 256;

struct query_settings {
  std::string file;
  std::string format_name = "tsv";
  bool huge_pages = false;
  bool populate = false;
};

struct bound_settings {
  std::optional<std::string> from, after, to, before;
  // Parsed keys, kept alive as long as the bounds that view them.
  std::string lower_storage, upper_storage;
};

std::string_view parse_key_argument(const std::string& text, const entry_types& types,
                                    std::string& storage) {
  try {
    return parse_key_text(text, types, storage);
  } catch (const error& e) {
    throw usage_error(fmt::format("{} (this file's keys are {})", e.what(), key_type_name(types)));
  }
}

void add_bound_options(CLI::App* command, bound_settings& bounds) {
  auto* from = command->add_option("--from", bounds.from, "Start at KEY, inclusive");
  auto* after = command->add_option("--after", bounds.after, "Start after KEY, exclusive");
  auto* to = command->add_option("--to", bounds.to, "End at KEY, inclusive");
  auto* before = command->add_option("--before", bounds.before, "End before KEY, exclusive");
  from->excludes(after);
  to->excludes(before);
}

std::pair<bound, bound> make_bounds(bound_settings& bounds, const entry_types& types) {
  bound lower = bound::none();
  bound upper = bound::none();
  if (bounds.from)
    lower = bound::inclusive(parse_key_argument(*bounds.from, types, bounds.lower_storage));
  if (bounds.after)
    lower = bound::exclusive(parse_key_argument(*bounds.after, types, bounds.lower_storage));
  if (bounds.to)
    upper = bound::inclusive(parse_key_argument(*bounds.to, types, bounds.upper_storage));
  if (bounds.before)
    upper = bound::exclusive(parse_key_argument(*bounds.before, types, bounds.upper_storage));
  return {lower, upper};
}

// A prefix is bytes: escaped text for byte-string keys, hex for fixed ones.
std::string parse_prefix(const std::string& text, const entry_types& types) {
  switch (types.keys) {
    case key_kind::bytes:
      try {
        return unescape(text);
      } catch (const error& e) {
        throw usage_error(fmt::format("prefix: {}", e.what()));
      }
    case key_kind::fixed: {
      std::string bytes;
      if (text.size() % 2 == 0 && text.size() / 2 <= types.key_size) {
        entry_types prefix_types = types;
        prefix_types.key_size = static_cast<std::uint32_t>(text.size() / 2);
        if (text.empty()) return bytes;
        try {
          return std::string(parse_key_text(text, prefix_types, bytes));
        } catch (const error&) {
        }
      }
      throw usage_error(
          fmt::format("prefix \"{}\" is not hex of at most {} bytes", text, types.key_size));
    }
    case key_kind::u64:
    case key_kind::i64:
      break;
  }
  throw usage_error(fmt::format("prefix works on bytes and fixed:N keys; this file's keys are {}",
                                key_type_name(types)));
}

void write_range(entry_writer& out, const entry_range& range, std::uint64_t limit, bool reverse) {
  std::uint64_t written = 0;
  if (!reverse) {
    for (cursor at = range.begin(); at != range.end() && written < limit; ++at, ++written) {
      out.write(at.key(), at.value());
    }
  } else {
    cursor at = range.end();
    while (at != range.begin() && written < limit) {
      --at;
      out.write(at.key(), at.value());
      ++written;
    }
  }
}

class lookup {
 public:
  lookup(const sharded_reader& file, entry_writer& out, bool with_keys, bool json)
      : file_(file), out_(out), with_keys_(with_keys), json_(json) {}

  void found(std::string_view key, std::string_view value) {
    if (json_ || (with_keys_ && file_.info().values != value_kind::none)) {
      out_.write(key, value);
    } else if (file_.info().values == value_kind::none) {
      out_.write_key(key);
    } else {
      out_.write_value(value);
    }
  }

 private:
  const sharded_reader& file_;
  entry_writer& out_;
  bool with_keys_;
  bool json_;
};

// get --stdin: keys one per line, looked up in batches with get_many.
bool get_from_stdin(const sharded_reader& file, entry_writer& out, lookup& answer,
                    const std::optional<std::string>& missing_marker) {
  const entry_types key_types{file.info().keys, file.info().key_size, value_kind::none, 0};
  const entry_types types = entry_types::of(file.info());
  entry_reader keys(STDIN_FILENO, "<stdin>", text_format::tsv, key_types);
  std::string arena;
  std::vector<std::size_t> ends;
  std::vector<std::string_view> batch;
  std::vector<std::optional<std::string_view>> values(lookup_batch);
  bool all_found = true;
  bool more = true;
  while (more) {
    arena.clear();
    ends.clear();
    try {
      while (ends.size() < lookup_batch) {
        const auto entry = keys.next();
        if (!entry) {
          more = false;
          break;
        }
        arena.append(entry->key);
        ends.push_back(arena.size());
      }
    } catch (const input_error& e) {
      throw usage_error(
          fmt::format("{} (this file's keys are {})", e.what(), key_type_name(types)));
    }
    batch.clear();
    for (std::size_t i = 0, start = 0; i < ends.size(); start = ends[i], ++i) {
      batch.push_back(std::string_view(arena).substr(start, ends[i] - start));
    }
    file.get_many(batch, std::span(values.data(), batch.size()));
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (values[i]) {
        answer.found(batch[i], *values[i]);
        continue;
      }
      all_found = false;
      if (missing_marker) {
        out.write_missing(batch[i], *missing_marker);
      } else {
        note(fmt::format("not found: {}", key_text(batch[i], types)));
      }
    }
  }
  return all_found;
}

}  // namespace
}  // namespace bbtree::tools

int main(int argc, char** argv) {
  using namespace bbtree;
  using namespace bbtree::tools;

  CLI::App app{
      "Queries a bbtree index file or shard set: bbtree-query FILE COMMAND [options].\n"
      "Keys are parsed according to the file's key type, as tsv keys are."};
  set_up(app, "bbtree-query", false, false);
  app.footer(help_footer(examples, exit_statuses));
  app.require_subcommand(1);
  app.fallthrough();

  query_settings settings;
  app.add_option("FILE", settings.file,
                 "The index file or shard manifest; - reads an index file from standard input")
      ->required();
  app.add_option("--format", settings.format_name,
                 "Output: tsv (KEY<TAB>VALUE) or json (one object per line, as jsonl)")
      ->check(CLI::IsMember({"tsv", "json"}))
      ->capture_default_str();
  app.add_flag("--huge-pages", settings.huge_pages,
               "Copy the file into huge-page memory in the background, answering from the "
               "file mapping meanwhile (see below)");
  app.add_flag("--populate", settings.populate,
               "Fault the whole file mapping in at open, before the first answer");

  bool with_keys = false;
  bool from_stdin = false;
  std::optional<std::string> missing_marker;
  std::vector<std::string> get_keys;
  auto* get = app.add_subcommand("get", "Print the value of each KEY, in order");
  get->add_flag("--with-keys", with_keys, "Print KEY<TAB>VALUE");
  auto* stdin_flag =
      get->add_flag("--stdin", from_stdin, "Read keys from standard input, one per line");
  get->add_option("--missing-marker", missing_marker,
                  "With --stdin, print KEY<TAB>M for a missing key, so that output lines match "
                  "input lines")
      ->needs(stdin_flag);
  auto* keys_option = get->add_option("KEY", get_keys, "Keys to look up");
  keys_option->excludes(stdin_flag);

  bound_settings bounds;
  std::uint64_t limit = std::numeric_limits<std::uint64_t>::max();
  bool reverse = false;
  auto* range = app.add_subcommand("range", "Print the entries within bounds, in key order");
  add_bound_options(range, bounds);
  range->add_option("--limit", limit, "Print at most N entries")->check(whole_number());
  range->add_flag("--reverse", reverse, "Descending key order");

  std::string prefix_text;
  auto* prefix = app.add_subcommand("prefix", "Print the entries whose keys start with P");
  prefix->add_option("P", prefix_text, "The prefix: escaped text, or hex for fixed:N keys")
      ->required();
  prefix->add_option("--limit", limit, "Print at most N entries")->check(whole_number());
  prefix->add_flag("--reverse", reverse, "Descending key order");

  auto* count = app.add_subcommand("count", "Print the number of entries within bounds");
  add_bound_options(count, bounds);

  auto* first = app.add_subcommand("first", "Print the first entry");
  app.add_subcommand("last", "Print the last entry");

  return run(app, argc, argv, [&] {
    if (get->parsed() && !from_stdin && get_keys.empty()) {
      throw usage_error("get needs a KEY, or --stdin");
    }
    open_options options;
    options.populate = settings.populate;
    if (settings.huge_pages) options.memory = memory_mode::map_then_copy_huge_pages;
    if (get->parsed() && from_stdin) options.advice = access_advice::random;
    if (range->parsed() || prefix->parsed()) options.advice = access_advice::sequential;
    if (settings.file == "-" && get->parsed() && from_stdin) {
      throw usage_error("FILE and --stdin keys cannot both come from standard input");
    }
    const open_index index(settings.file, options);
    const sharded_reader& file = index.index();
    const entry_types types = index.types();
    const bool json = settings.format_name == "json";
    const auto out = stdout_writer(json ? text_format::jsonl : text_format::tsv, types);

    if (get->parsed()) {
      lookup answer(file, *out, with_keys, json);
      bool all_found = true;
      if (from_stdin) {
        all_found = get_from_stdin(file, *out, answer, missing_marker);
      } else {
        // Every KEY is parsed before the first lookup, so that a bad one is a
        // usage error with nothing printed, not one after some answers.
        std::vector<std::string> keys(get_keys.size());
        for (std::size_t i = 0; i < get_keys.size(); ++i) {
          keys[i] = std::string(parse_key_argument(get_keys[i], types, keys[i]));
        }
        for (std::size_t i = 0; i < keys.size(); ++i) {
          if (const auto value = file.get(keys[i])) {
            answer.found(keys[i], *value);
          } else {
            all_found = false;
            out->flush();  // keeps stdout and stderr in order on a terminal
            note(fmt::format("not found: {}", get_keys[i]));
          }
        }
      }
      out->flush();
      return static_cast<int>(all_found ? exit_success : exit_negative);
    }
    if (range->parsed()) {
      const auto [lower, upper] = make_bounds(bounds, types);
      write_range(*out, file.range(lower, upper), limit, reverse);
    } else if (prefix->parsed()) {
      const std::string bytes = parse_prefix(prefix_text, types);
      write_range(*out, file.prefix(bytes), limit, reverse);
    } else if (count->parsed()) {
      const auto [lower, upper] = make_bounds(bounds, types);
      out->write_text(fmt::format("{}\n", file.count(lower, upper)));
    } else {
      const auto entry = first->parsed() ? file.first() : file.last();
      if (!entry) {
        out->flush();
        // An answer, not an error: reported as get reports a missing key.
        note(fmt::format("not found: {} entry ({} has no entries)",
                         first->parsed() ? "first" : "last", settings.file));
        return static_cast<int>(exit_negative);
      }
      out->write(entry->key, entry->value);
    }
    out->flush();
    return static_cast<int>(exit_success);
  });
}
