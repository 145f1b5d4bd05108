// Shard sets for bbtree-dump and bbtree-verify: the manifest's summary,
// per-shard statistics, and verifying a set: each shard by verify_file and
// every claim the manifest makes about it.
#include <bbtree/inspect.h>
#include <bbtree/shards.h>

#include "shard_support.h"

#include <fmt/format.h>

#include <sys/stat.h>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <string>

namespace bbtree {

namespace fs = std::filesystem;

void write_shard_set_header(const sharded_reader& set, std::ostream& out) {
  const shard_manifest& manifest = set.manifest();
  const entry_types types = detail::canonical_types(manifest.types);
  std::string text;
  auto field = [&text](std::string_view name, const auto& value) {
    fmt::format_to(std::back_inserter(text), "{}: {}\n", name, value);
  };
  field("format", "bbtree-shards 1");
  field("key_type", key_type_name(types));
  field("value_type", value_type_name(types));
  field("shards", manifest.shards.size());
  field("entries", set.size());
  field("file_size", set.info().file_size);
  for (std::size_t number = 0; number < manifest.shards.size(); ++number) {
    const shard_record& shard = manifest.shards[number];
    const std::string prefix = fmt::format("shard.{}.", number);
    text += prefix + "path: ";
    append_escaped(text, shard.path);
    text += '\n';
    text += prefix + "first_key: ";
    append_key_text(text, shard.first_key, types);
    text += '\n';
    text += prefix + "last_key: ";
    append_key_text(text, shard.last_key, types);
    text += '\n';
    field(prefix + "entries", shard.entries);
    field(prefix + "first_rank", set.shard_first_rank(number));
    field(prefix + "file_size", shard.file_size);
    field(prefix + "header_checksum", fmt::format("0x{:08x}", shard.header_checksum));
  }
  out << text;
}

void write_shard_set_stats(const sharded_reader& set, std::ostream& out) {
  std::string text = fmt::format("shards: {}\nentries: {}\nfile_size: {}\n", set.shard_count(),
                                 set.size(), set.info().file_size);
  for (std::size_t number = 0; number < set.shard_count(); ++number) {
    std::ostringstream shard_text;
    write_stats(set.shard(number), shard_text);
    std::istringstream lines(shard_text.str());
    for (std::string line; std::getline(lines, line);) {
      fmt::format_to(std::back_inserter(text), "shard.{}.{}\n", number, line);
    }
  }
  out << text;
}

bool shard_set_report::ok() const noexcept {
  if (!problems.empty() || !unreadable.empty()) return false;
  for (const verify_report& shard : shards) {
    if (!shard.ok()) return false;
  }
  return true;
}

std::string format_problem(const shard_set_report& report, const shard_set_problem& problem) {
  std::string text = report.name;
  if (problem.line > 0) fmt::format_to(std::back_inserter(text), ":{}", problem.line);
  text += ": ";
  if (!problem.shard.empty()) fmt::format_to(std::back_inserter(text), "shard {}: ", problem.shard);
  text += problem.message;
  return text;
}

namespace {

class set_verifier {
 public:
  set_verifier(const fs::path& manifest, const verify_options& options)
      : manifest_path_(manifest), options_(options) {
    report_.name = manifest.string();
  }

  shard_set_report run() {
    shard_manifest manifest;
    try {
      manifest = read_shard_manifest(manifest_path_);
    } catch (const detail::manifest_error& e) {
      add({e.line(), {}, e.problem()});
      return std::move(report_);
    }
    report_.shard_count = manifest.shards.size();
    report_.entries = manifest.entries();
    for (const shard_record& record : manifest.shards) check_shard(manifest, record);
    return std::move(report_);
  }

 private:
  void add(shard_set_problem problem) {
    if (options_.max_errors != 0 && report_.problems.size() >= options_.max_errors) {
      report_.truncated_list = true;
      return;
    }
    report_.problems.push_back(std::move(problem));
  }

  void check_shard(const shard_manifest& manifest, const shard_record& record) {
    const fs::path path = detail::shard_path(manifest_path_, record);
    const std::string name = path.string();
    // Shards hold disjoint key ranges, so no file is two of them.  Checked
    // before verifying: a small manifest naming one large file on line
    // after line would otherwise cost that file's verification each time.
    struct stat status;
    if (::stat(path.c_str(), &status) == 0) {
      const auto [first, inserted] =
          first_line_of_file_.try_emplace({status.st_dev, status.st_ino}, record.line);
      if (!inserted) {
        add({record.line, name,
             fmt::format("is the file of the shard on line {} again", first->second)});
        return;
      }
    }
    verify_report shard_report;
    try {
      shard_report = verify_file(path, options_);
    } catch (const error& e) {
      report_.unreadable.emplace_back(name, e.what());
      return;
    }
    report_.file_size += shard_report.file_size;
    const bool shard_ok = shard_report.ok();
    report_.shards.push_back(std::move(shard_report));
    try {
      const reader file = reader::open(path);
      const std::string mismatch = detail::header_mismatch(record, manifest.types, file);
      if (!mismatch.empty()) {
        add({record.line, name, fmt::format("does not match the manifest: {}", mismatch)});
        return;
      }
      const auto first = file.first();
      const auto last = file.last();
      if (!first || first->key != record.first_key) {
        add({record.line, name,
             fmt::format("its first key is {}, the manifest says {}",
                         first ? detail::quoted_key_text(first->key, manifest.types) : "(none)",
                         detail::quoted_key_text(record.first_key, manifest.types))});
      }
      if (!last || last->key != record.last_key) {
        add({record.line, name,
             fmt::format("its last key is {}, the manifest says {}",
                         last ? detail::quoted_key_text(last->key, manifest.types) : "(none)",
                         detail::quoted_key_text(record.last_key, manifest.types))});
      }
    } catch (const error& e) {
      // A shard that fails here and passed verify_file would be a bug of
      // one of them; a damaged one is reported by its own report already.
      if (shard_ok) add({record.line, name, e.what()});
    }
  }

  fs::path manifest_path_;
  verify_options options_;
  shard_set_report report_;
  std::map<std::pair<dev_t, ino_t>, std::uint64_t> first_line_of_file_;  // by device and inode
};

}  // namespace

shard_set_report verify_shard_set(const fs::path& manifest, const verify_options& options) {
  return set_verifier(manifest, options).run();
}

}  // namespace bbtree
