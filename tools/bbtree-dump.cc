// bbtree-dump: prints an index file's entries, header or page structure, or
// a shard set's entries, manifest and per-shard statistics.
#include "common.h"

#include <bbtree/inspect.h>

#include <fmt/format.h>

#include <optional>
#include <sstream>
#include <string>

namespace bbtree::tools {
namespace {

constexpr std::string_view examples = R"(  bbtree-dump data.bbt | head
  bbtree-dump --format jsonl data.bbt > data.jsonl
  bbtree-dump --header data.bbt
  bbtree-dump a.bbt | bbtree-build --sorted --key-type u64 --value-type bytes -o b.bbt
  bbtree-dump --header data.manifest
)";

constexpr std::string_view exit_statuses =
    R"(  0  success, also when a reader of the output stops early (| head)
  1  FILE is not a bbtree file or is damaged
  2  usage error, or an entry that jsonl cannot hold (a byte string that is
     not UTF-8: use tsv or bin), or --pages or --page on a shard manifest
  3  FILE (or a shard its manifest lists) cannot be read, or the output
     cannot be written

The entries come out in key order in the format that bbtree-build reads, so
`bbtree-dump a.bbt | bbtree-build --sorted --key-type T --value-type V -o b.bbt`
rebuilds a.bbt; with the same page size, metadata and duplicates policy, and
a.bbt built with --sorted, byte for byte.

FILE may be a shard manifest (spec/SHARDS.md): --entries prints the entries
of all shards in key order; --header prints the manifest (the types and
totals, then shard.N.path, first_key, last_key, entries, first_rank,
file_size and header_checksum for each shard); --stats prints the totals,
then each shard's statistics with every line prefixed by shard.N.; --pages
and --page read one file, so give them a shard.
)";

}  // namespace
}  // namespace bbtree::tools

int main(int argc, char** argv) {
  using namespace bbtree;
  using namespace bbtree::tools;

  CLI::App app{
      "Prints a bbtree index file or shard set: its entries (the default), its header or "
      "manifest, its statistics or its pages."};
  set_up(app, "bbtree-dump", false, false);
  app.footer(help_footer(examples, exit_statuses));

  std::string file_name;
  std::string format_name = "tsv";
  bool entries = false;
  bool header = false;
  bool stats = false;
  bool pages = false;
  std::optional<std::uint32_t> page;
  app.add_option("FILE", file_name,
                 "The index file or shard manifest; - reads an index file from standard input")
      ->required();
  auto* entries_flag = app.add_flag("--entries", entries, "Every entry in key order (the default)");
  auto* header_flag = app.add_flag("--header", header, "Every header field, one per line");
  auto* stats_flag = app.add_flag("--stats", stats, "Totals over pages and levels");
  auto* pages_flag = app.add_flag("--pages", pages, "One line per page");
  auto* page_option = app.add_option("--page", page, "Every field and entry of page N")
                          ->check(whole_number(0, std::numeric_limits<std::uint32_t>::max()));
  auto* format_option =
      app.add_option("--format", format_name, "Entry format: tsv, csv, jsonl or bin")
          ->check(CLI::IsMember({"tsv", "csv", "jsonl", "bin"}))
          ->capture_default_str();
  CLI::Option* const modes[] = {entries_flag, header_flag, stats_flag, pages_flag, page_option};
  for (CLI::Option* mode : modes) {
    for (CLI::Option* other : modes) {
      if (mode != other) mode->excludes(other);
    }
  }
  for (CLI::Option* mode : {header_flag, stats_flag, pages_flag, page_option}) {
    mode->excludes(format_option);
  }

  return run(app, argc, argv, [&] {
    open_options options;
    options.advice = access_advice::sequential;
    const open_index index(file_name, options);
    const entry_types types = index.types();
    const text_format format =
        header || stats || pages || page ? text_format::tsv : parse_text_format(format_name);
    const auto out = stdout_writer(format, types);
    if (header || stats || pages || page) {
      std::ostringstream text;
      std::string page_problem;
      if (header && index.is_shard_set()) {
        write_shard_set_header(index.index(), text);
      } else if (header) {
        write_header(index.reader(), text);
      } else if (stats && index.is_shard_set()) {
        write_shard_set_stats(index.index(), text);
      } else if (stats) {
        write_stats(index.reader(), text);
      } else if (pages) {
        write_pages(index.reader(), text);
      } else {
        page_problem = write_page(index.reader(), *page, text);
      }
      out->write_text(text.str());
      // The page is shown whole, its damage among its fields; the status
      // then says damaged, as the entry walk's does.
      if (!page_problem.empty()) {
        out->flush();
        throw error(errc::corrupt, page_problem);
      }
    } else {
      // The checked walk: a damaged leaf ends the dump with status 1, naming
      // the file and page, instead of printing what it holds.
      for_each_checked_entry(index.index(), [&out](std::string_view key, std::string_view value) {
        out->write(key, value);
      });
    }
    out->flush();
    return static_cast<int>(exit_success);
  });
}
