// bbtree-verify: checks index files completely (bbtree/verify.h), and shard
// sets with every shard they list (bbtree/shards.h), and says what is wrong,
// where.
#include "common.h"

#include <bbtree/shards.h>
#include <bbtree/text_format.h>
#include <bbtree/verify.h>

#include <fmt/format.h>

#include <iostream>
#include <string>
#include <vector>

namespace bbtree::tools {
namespace {

constexpr std::string_view examples = R"(  bbtree-verify data.bbt
  bbtree-verify --quick /srv/indexes/*.bbt
  bbtree-verify --json --max-errors 20 a.bbt b.bbt > report.json
  bbtree-verify data.manifest
)";

constexpr std::string_view exit_statuses =
    R"(  0  every FILE is a valid bbtree file
  1  some FILE is damaged, truncated, has trailing data, or is not a bbtree
     file (the other files are still checked)
  2  usage error
  3  some FILE, or a shard that a manifest lists, cannot be read (missing, a
     directory, no permission); this wins over 1

Each problem is printed as `FILE: page P (offset X): WHAT` (or `blob
region` / `metadata` / `directory` instead of the page), where X is the offset in the
file of the first byte found wrong; page 0 is the header.  A good file gets
one line: `FILE: ok (N entries, S bytes, H levels, P pages)`; a damaged one
ends with `FILE: damaged (N problems)`, or `FILE: damaged (N problems,
listing stopped; --max-errors 0 lists all)` when --max-errors cut the list
short.  --json prints
one JSON document instead: {"ok": BOOL, "files": [{"name", "ok", "entries",
"size", "pages", "height", "quick", "truncated", "error", "problems":
[{"page", "region", "offset", "message"}]}]}; "page" is null outside the
pages, "error" is set only for a file that cannot be read, "truncated" says
that --max-errors cut the list short.

The full check covers spec/FORMAT.md, section 14.6: every checksum, page
numbers (so moved or copied pages are named), page kinds and levels, padding
and reserved bytes, key order within and across pages, separators against
the keys they divide, the first_rank and first_child chains, slots, the heap,
the blob, metadata and directory regions, and the header's totals.  It also
checks the reference builder's choices that the header records (section 15: prefix
lengths, inline widths, which items are outside the page); give
--no-builder-policy for files from other writers.

A FILE that is a shard manifest (spec/SHARDS.md) is checked as a set: the
manifest (syntax, checksum, totals, ordered and disjoint ranges), then every
shard it lists, each reported as a FILE of its own, and what the manifest
says of each: types, entry count, file size, header checksum, first and last
key.  Problems of the manifest are printed as `MANIFEST:LINE: shard PATH:
WHAT`; the set ends with `MANIFEST: ok (shard set: N shards, E entries, S
bytes)` or `MANIFEST: damaged shard set (...)`.  In --json, the shards come
as files, then the manifest as {"name", "ok", "shard_set": true, "shards",
"entries", "size", "truncated", "problems": [{"line", "shard", "message"}]}
("line" 0 and "shard" null where they do not apply).
)";

const char* region_name(verify_region region) {
  switch (region) {
    case verify_region::page:
      return "page";
    case verify_region::blob:
      return "blob";
    case verify_region::metadata:
      return "metadata";
    case verify_region::directory:
      return "directory";
  }
  return "page";
}

void append_json_report(std::string& out, const verify_report& report) {
  out += "    {\"name\": ";
  append_json_name(out, report.name);
  fmt::format_to(
      std::back_inserter(out),
      ", \"ok\": {}, \"entries\": {}, \"size\": {}, \"pages\": {}, \"height\": {}, \"quick\": {}, "
      "\"truncated\": {}, \"problems\": [",
      report.ok(), report.entries, report.file_size, report.pages, report.height, report.quick,
      report.truncated_list);
  const char* separator = "\n";
  for (const verify_problem& problem : report.problems) {
    out += separator;
    separator = ",\n";
    out += "      {\"page\": ";
    out += problem.page ? std::to_string(*problem.page) : "null";
    fmt::format_to(std::back_inserter(out), ", \"region\": \"{}\", \"offset\": {}, \"message\": ",
                   region_name(problem.region), problem.offset);
    append_json_name(out, problem.message);
    out += '}';
  }
  out += report.problems.empty() ? "]}" : "\n    ]}";
}

void append_json_failure(std::string& out, const std::string& name, std::string_view message) {
  out += "    {\"name\": ";
  append_json_name(out, name);
  out += ", \"ok\": false, \"error\": ";
  append_json_name(out, message);
  out += ", \"problems\": []}";
}

void append_json_item(std::string& out, const std::string& item) {
  if (!out.empty()) out += ",\n";
  out += item;
}

// A shard set in --json: its shards as files, then the manifest.
void append_json_set(std::string& out, const shard_set_report& report) {
  for (const verify_report& shard : report.shards) {
    std::string item;
    append_json_report(item, shard);
    append_json_item(out, item);
  }
  for (const auto& [name, message] : report.unreadable) {
    std::string item;
    append_json_failure(item, name, message);
    append_json_item(out, item);
  }
  std::string item = "    {\"name\": ";
  append_json_name(item, report.name);
  fmt::format_to(std::back_inserter(item),
                 ", \"ok\": {}, \"shard_set\": true, \"shards\": {}, \"entries\": {}, "
                 "\"size\": {}, \"truncated\": {}, \"problems\": [",
                 report.ok(), report.shard_count, report.entries, report.file_size,
                 report.truncated_list);
  const char* separator = "\n";
  for (const shard_set_problem& problem : report.problems) {
    item += separator;
    separator = ",\n";
    fmt::format_to(std::back_inserter(item), "      {{\"line\": {}, \"shard\": ", problem.line);
    if (problem.shard.empty()) {
      item += "null";
    } else {
      append_json_name(item, problem.shard);
    }
    item += ", \"message\": ";
    append_json_name(item, problem.message);
    item += '}';
  }
  item += report.problems.empty() ? "]}" : "\n    ]}";
  append_json_item(out, item);
}

// One file's report as text: its problems, then the verdict.
std::string text_report(const verify_report& report) {
  std::string text;
  for (const verify_problem& problem : report.problems) {
    text += format_problem(report, problem);
    text += '\n';
  }
  if (report.ok()) {
    fmt::format_to(std::back_inserter(text),
                   "{}: ok{} ({} entries, {} bytes, {} level{}, {} pages)\n", report.name,
                   report.quick ? ", checksums only" : "", report.entries, report.file_size,
                   report.height, report.height == 1 ? "" : "s", report.pages);
  } else if (report.truncated_list) {
    // The documented verdict, `FILE: damaged (N problems`, first: scripts
    // that match it read a cut-short list's verdict too.
    fmt::format_to(std::back_inserter(text),
                   "{}: damaged ({} problem{}, listing stopped; --max-errors 0 lists all)\n",
                   report.name, report.problems.size(), report.problems.size() == 1 ? "" : "s");
  } else {
    fmt::format_to(std::back_inserter(text), "{}: damaged ({} problem{})\n", report.name,
                   report.problems.size(), report.problems.size() == 1 ? "" : "s");
  }
  return text;
}

std::string plural(std::size_t count, std::string_view noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

// A shard set as text: each shard as a file (an unreadable one as an error
// on stderr), the manifest's problems, then the set's verdict.
void print_set_report(const shard_set_report& report) {
  for (const verify_report& shard : report.shards) std::cout << text_report(shard);
  for (const auto& [name, message] : report.unreadable) {
    std::cout.flush();
    report_error(message);
  }
  std::string text;
  for (const shard_set_problem& problem : report.problems) {
    text += format_problem(report, problem);
    text += '\n';
  }
  if (report.ok()) {
    fmt::format_to(std::back_inserter(text), "{}: ok (shard set: {}, {} entries, {} bytes)\n",
                   report.name, plural(report.shard_count, "shard"), report.entries,
                   report.file_size);
  } else {
    std::size_t damaged = 0;
    for (const verify_report& shard : report.shards) damaged += shard.ok() ? 0 : 1;
    std::string details;
    auto add = [&details](std::size_t count, std::string_view what) {
      if (count == 0) return;
      if (!details.empty()) details += ", ";
      details += plural(count, what);
    };
    add(report.problems.size(), "manifest problem");
    add(damaged, "damaged shard");
    add(report.unreadable.size(), "unreadable shard");
    if (report.truncated_list) details += "; listing stopped (--max-errors 0 lists all)";
    fmt::format_to(std::back_inserter(text), "{}: damaged shard set ({})\n", report.name, details);
  }
  std::cout << text;
}

}  // namespace
}  // namespace bbtree::tools

int main(int argc, char** argv) {
  using namespace bbtree;
  using namespace bbtree::tools;

  CLI::App app{
      "Checks bbtree index files and shard sets: every checksum and every rule of the file "
      "format, and every claim of a shard manifest."};
  set_up(app, "bbtree-verify", false, false);
  app.footer(help_footer(examples, exit_statuses));

  std::vector<std::string> files;
  verify_options options;
  bool json = false;
  bool no_builder_policy = false;
  app.add_option("FILE", files, "The index files and shard manifests to check")->required();
  app.add_flag(
      "--quick", options.quick,
      "Only the header and the checksums (pages, out-of-page items, metadata, directory): finds "
      "damage from storage or transfer, not from a faulty writer");
  app.add_flag("--json", json, "Print one JSON document for all files (for CI)");
  app.add_option("--max-errors", options.max_errors,
                 "Stop listing a file's problems after N; 0 lists all")
      ->check(whole_number())
      ->capture_default_str();
  app.add_flag("--no-builder-policy", no_builder_policy,
               "Check only the format's rules, not the reference builder's choices (section 15)");

  return run(app, argc, argv, [&] {
    options.builder_policy = !no_builder_policy;
    bool any_bad = false;
    bool any_unreadable = false;
    std::string json_files;
    for (const std::string& file : files) {
      std::string text;
      try {
        if (is_shard_manifest(file)) {
          const shard_set_report report = verify_shard_set(file, options);
          any_unreadable = any_unreadable || !report.unreadable.empty();
          any_bad = any_bad || !report.problems.empty();
          for (const verify_report& shard : report.shards) any_bad = any_bad || !shard.ok();
          if (json) {
            append_json_set(json_files, report);
          } else {
            print_set_report(report);
          }
          continue;
        }
        // "-" or a pipe: an index file read whole, checked in memory.
        const std::optional<stream_bytes> stream = read_if_stream(file);
        const verify_report report = stream ? verify_bytes(stream->bytes, stream->name, options)
                                            : verify_file(file, options);
        any_bad = any_bad || !report.ok();
        if (json) {
          if (!json_files.empty()) json_files += ",\n";
          append_json_report(json_files, report);
          continue;
        }
        text = text_report(report);
      } catch (const error& e) {
        // A file that cannot be read does not stop the others.
        if (e.code() != errc::io_error) throw;
        any_unreadable = true;
        if (json) {
          if (!json_files.empty()) json_files += ",\n";
          append_json_failure(json_files, file, e.what());
          continue;
        }
        std::cout.flush();
        report_error(e.what());
      }
      std::cout << text;
    }
    if (json) {
      std::cout << fmt::format("{{\"ok\": {}, \"files\": [\n{}\n]}}\n", !any_bad && !any_unreadable,
                               json_files);
    }
    if (any_unreadable) return static_cast<int>(exit_system);
    return static_cast<int>(any_bad ? exit_negative : exit_success);
  });
}
