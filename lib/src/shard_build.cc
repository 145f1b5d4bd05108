// Building shard sets: the streaming shard_set_builder, splitting an index
// into shards, and bbtree-build's sharded import.
//
// Publishing order: each shard is built and published under a temporary
// name beside the manifest (".MANIFEST.bbtree-tmp-PID-shard-N", which a
// later build of the same manifest removes once this process is gone);
// finish() renames them to their names and then publishes the manifest,
// the one file that makes them a set.  When it replaces a set, the new
// shards take the names the old set does not use (shard_name_generation),
// so that the manifest's rename is the single step that replaces the set.
#include <bbtree/shards.h>

#include "entry_limits.h"
#include "file_io.h"
#include "key_compare.h"
#include "shard_support.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace bbtree {

namespace fs = std::filesystem;

namespace detail {
namespace {

fs::path directory_of(const fs::path& path) {
  return path.has_parent_path() ? path.parent_path() : fs::path(".");
}

void sync_directory(const fs::path& directory) {
  file_descriptor fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.valid()) ::fsync(fd.get());
}

// A builder's message about an entry begins "entry N: " with N counted
// within its shard; the set's count is the one that means something to the
// caller.  Other messages (I/O) are kept as they are.
std::string renumbered(std::string_view message, std::uint64_t position) {
  const std::size_t colon = message.find(": ");
  if (!message.starts_with("entry ") || colon == std::string_view::npos) {
    return std::string(message);
  }
  return fmt::format("entry {}: {}", position, message.substr(colon + 2));
}

void check_split(const shard_split& split) {
  if ((split.shards == 0) == (split.shard_size == 0)) {
    throw error(errc::invalid_argument, "give either a number of shards or a shard size");
  }
}

// The shard paths, as written, of the manifest at `manifest`; none if there
// is no file there or it is not a readable manifest, since then there is no
// set that a reader could open and that the new one must leave alone.
std::vector<std::string> paths_named_by(const fs::path& manifest) {
  std::vector<std::string> paths;
  if (!is_shard_manifest(manifest)) return paths;
  try {
    for (shard_record& record : read_shard_manifest(manifest).shards) {
      paths.push_back(std::move(record.path));
    }
  } catch (const error&) {
    paths.clear();
  }
  return paths;
}

// The generation whose names for `count` shards are none of the files the
// replaced manifest names (compared as files, so that "./x" or an absolute
// path or a hard link counts), a before b.
shard_name_generation generation_clear_of(const fs::path& manifest, std::size_t count,
                                          const std::vector<std::string>& replaced) {
  const fs::path directory = directory_of(manifest);
  auto clear = [&](shard_name_generation generation) {
    for (std::size_t number = 0; number < count; ++number) {
      const fs::path name = shard_file_name(manifest, number, generation);
      for (const std::string& path : replaced) {
        std::error_code ignored;
        if (fs::equivalent(name, directory / path, ignored)) return false;
      }
    }
    return true;
  };
  if (clear(shard_name_generation::a)) return shard_name_generation::a;
  if (clear(shard_name_generation::b)) return shard_name_generation::b;
  throw error(
      errc::already_exists,
      fmt::format("{}: the set it would replace uses shard names of both generations ({} "
                  "and {}); give another name, or remove that set first",
                  manifest.string(), shard_file_name(manifest, 0).filename().string(),
                  shard_file_name(manifest, 0, shard_name_generation::b).filename().string()));
}

// Entry `rank` of `total` goes to shard floor(rank * shards / total): counts
// that differ by at most one, and no empty shard when there are fewer
// entries than shards (spec/SHARDS.md, 7).
std::uint64_t shard_of(std::uint64_t rank, std::uint64_t shards, std::uint64_t total) {
  return static_cast<std::uint64_t>(static_cast<unsigned __int128>(rank) * shards / total);
}

// Sorted entries into a shard_set_builder, ending each shard where
// shard_of says, for a total known beforehand.
class splitting_sink final : public sorted_entry_sink {
 public:
  splitting_sink(shard_set_builder& out, std::uint64_t shards, std::uint64_t total)
      : out_(out), shards_(shards), total_(total) {}

  void add(std::string_view key, std::string_view value) override {
    if (seen_ == 0 || key != last_) {
      // An input that changed between its two reads.
      if (seen_ == total_) throw_changed();
      if (seen_ > 0 && shard_of(seen_, shards_, total_) != shard_of(seen_ - 1, shards_, total_))
        out_.end_shard();
      ++seen_;
      last_.assign(key);
    }
    out_.add(key, value);
  }

  void check_complete() const {
    if (seen_ != total_) throw_changed();
  }

 private:
  [[noreturn]] void throw_changed() const {
    throw error(errc::io_error,
                fmt::format("the input changed while it was read: {} entries at first, then {}{}",
                            total_, seen_, seen_ == total_ ? " and more" : ""));
  }

  shard_set_builder& out_;
  std::uint64_t shards_;
  std::uint64_t total_;
  std::uint64_t seen_ = 0;  // distinct keys added
  std::string last_;
};

// Removes a file this build created, whatever happens.
class removed_at_exit {
 public:
  explicit removed_at_exit(fs::path path) : path_(std::move(path)) {}
  ~removed_at_exit() { ::unlink(path_.c_str()); }
  removed_at_exit(const removed_at_exit&) = delete;
  removed_at_exit& operator=(const removed_at_exit&) = delete;

 private:
  fs::path path_;
};

}  // namespace

std::function<void()> before_manifest_publish;

}  // namespace detail

class shard_set_builder::impl {
 public:
  impl(fs::path manifest, build_options options, std::uint64_t shard_size)
      : manifest_(std::move(manifest)),
        options_(std::move(options)),
        shard_size_(shard_size),
        limits_(options_) {
    validate(options_);
    if (manifest_.filename().empty()) {
      throw error(errc::invalid_argument,
                  fmt::format("output {} names a directory, not a file", manifest_.string()));
    }
    // Found now rather than after the whole build.
    if (!options_.overwrite && ::access(manifest_.c_str(), F_OK) == 0) {
      throw error(errc::already_exists,
                  fmt::format("{} already exists (use --force to replace it)", manifest_.string()));
    }
  }
  ~impl() { abort(); }
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;

  void add(std::string_view key, std::string_view value) {
    if (state_ != state::building) {
      throw error(errc::invalid_argument, "add() after finish(), abort() or a failed add()");
    }
    ++position_;
    try {
      // Before the order, as every writer does: an entry that cannot be
      // stored is refused for that, whatever its key.
      limits_.check(position_, key, value);
      if (have_last_key_) {
        const int order = detail::compare_keys(key, last_key_);
        if (order < 0) {
          throw error(errc::out_of_order,
                      fmt::format("entry {}: key {} is smaller than the key before it, {}",
                                  position_, detail::quote_key(key), detail::quote_key(last_key_)));
        }
        if (order == 0 && options_.duplicates == duplicate_policy::error) {
          throw error(errc::duplicate_key,
                      fmt::format("entry {}: duplicate key {}", position_, detail::quote_key(key)));
        }
        // Equal keys stay together, so that no key is in two shards.
        if (order > 0 && end_requested_) finish_shard();
      }
      if (!current_) start_shard();
      try {
        current_->add(key, value);
      } catch (const error& e) {
        throw error(e.code(), detail::renumbered(e.what(), position_));
      }
      last_key_.assign(key);
      have_last_key_ = true;
      if (shard_size_ > 0 && current_->bytes_written() >= shard_size_) end_requested_ = true;
    } catch (...) {
      abort();
      throw;
    }
  }

  void end_shard() {
    if (current_) end_requested_ = true;
  }

  shard_set_summary finish() {
    if (state_ != state::building) {
      throw error(errc::invalid_argument, "finish() after finish(), abort() or a failed add()");
    }
    try {
      if (current_) finish_shard();
      shard_manifest manifest;
      manifest.types = detail::canonical_types(entry_types::of(options_));
      shard_set_summary summary;
      const std::vector<std::string> replaced =
          options_.overwrite ? detail::paths_named_by(manifest_) : std::vector<std::string>{};
      const shard_name_generation generation =
          detail::generation_clear_of(manifest_, temporaries_.size(), replaced);
      std::vector<fs::path> names;
      for (std::size_t number = 0; number < temporaries_.size(); ++number) {
        const reader file = reader::open(temporaries_[number]);
        const fs::path name = shard_file_name(manifest_, number, generation);
        shard_record record;
        record.path = name.filename().string();
        record.first_key = file.first()->key;
        record.last_key = file.last()->key;
        record.entries = file.size();
        record.file_size = file.info().file_size;
        record.header_checksum = detail::header_checksum_of(file);
        summary.entries += record.entries;
        summary.file_size += record.file_size;
        manifest.shards.push_back(std::move(record));
        names.push_back(name);
      }
      summary.shards = manifest.shards.size();
      if (!options_.overwrite) {
        for (const fs::path& name : names) {
          if (::access(name.c_str(), F_OK) == 0) {
            throw error(
                errc::already_exists,
                fmt::format("{} already exists (use --force to replace it)", name.string()));
          }
        }
      }
      for (std::size_t number = 0; number < names.size(); ++number) {
        publish_shard(temporaries_[number], names[number]);
      }
      if (options_.sync && !names.empty()) detail::sync_directory(detail::directory_of(manifest_));
      if (detail::before_manifest_publish) detail::before_manifest_publish();
      detail::write_manifest_file(manifest_, manifest, {options_.overwrite, options_.sync});
      temporaries_.clear();
      published_.clear();
      removable_.clear();
      state_ = state::finished;
      remove_replaced_shards(replaced, manifest);
      return summary;
    } catch (...) {
      abort();
      throw;
    }
  }

  void abort() noexcept {
    if (state_ == state::finished) return;
    state_ = state::abandoned;
    if (current_) current_->abort();
    current_.reset();
    for (const fs::path& path : temporaries_) ::unlink(path.c_str());
    for (const fs::path& path : published_) ::unlink(path.c_str());
    temporaries_.clear();
    published_.clear();
    removable_.clear();
  }

  std::uint64_t entries_added() const noexcept {
    return finished_entries_ + (current_ ? current_->entries_added() : 0);
  }

 private:
  enum class state { building, finished, abandoned };

  fs::path temporary_name(std::size_t number) const {
    return detail::directory_of(manifest_) / fmt::format("{}{}-shard-{}",
                                                         detail::temporary_name_prefix(manifest_),
                                                         ::getpid(), number);
  }

  void start_shard() {
    build_options shard_options = options_;
    shard_options.overwrite = true;  // the temporary name is this process's own
    const fs::path temporary = temporary_name(temporaries_.size());
    removable_.emplace_back(temporary);
    current_.emplace(temporary, shard_options);
    temporaries_.push_back(temporary);
  }

  void finish_shard() {
    finished_entries_ += current_->finish().entries;
    current_.reset();
    end_requested_ = false;
  }

  // The replaced set's shards that no manifest names any more.  Only files
  // under this builder's names go: a set joined by write_shard_set may name
  // index files the user keeps for other uses.
  void remove_replaced_shards(const std::vector<std::string>& replaced,
                              const shard_manifest& current) const noexcept {
    const fs::path directory = detail::directory_of(manifest_);
    for (const std::string& path : replaced) {
      if (!detail::is_builder_shard_name(path, manifest_)) continue;
      // As files: the old manifest may spell a name the new one uses
      // otherwise ("./NAME", for a file that was missing when the names
      // were chosen).
      const bool kept = std::any_of(
          current.shards.begin(), current.shards.end(), [&](const shard_record& record) {
            std::error_code ignored;
            return fs::equivalent(directory / path, directory / record.path, ignored);
          });
      if (!kept) ::unlink((directory / path).c_str());
    }
  }

  void publish_shard(const fs::path& temporary, const fs::path& name) {
    const int renamed = options_.overwrite ? ::rename(temporary.c_str(), name.c_str())
                                           : ::renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD,
                                                         name.c_str(), RENAME_NOREPLACE);
    if (renamed != 0) {
      if (errno == EEXIST) {
        throw error(errc::already_exists,
                    fmt::format("{} already exists (use --force to replace it)", name.string()));
      }
      detail::throw_errno("cannot rename a new shard to", name);
    }
    removable_.emplace_back(name);
    published_.push_back(name);
  }

  fs::path manifest_;
  build_options options_;
  std::uint64_t shard_size_ = 0;
  detail::entry_limits limits_;
  std::optional<builder> current_;
  std::vector<fs::path> temporaries_;  // finished or current shards, by temporary name
  std::vector<fs::path> published_;    // shards renamed to their names by finish()
  // Both, for a signal handler: removed as abort() would remove them.
  std::vector<detail::removable_on_signal> removable_;
  std::string last_key_;
  bool have_last_key_ = false;
  bool end_requested_ = false;
  std::uint64_t position_ = 0;
  std::uint64_t finished_entries_ = 0;
  state state_ = state::building;
};

shard_set_builder::shard_set_builder(fs::path manifest, build_options options,
                                     std::uint64_t shard_size)
    : impl_(std::make_unique<impl>(std::move(manifest), std::move(options), shard_size)) {}
shard_set_builder::~shard_set_builder() = default;
void shard_set_builder::add(std::string_view key, std::string_view value) {
  impl_->add(key, value);
}
void shard_set_builder::end_shard() { impl_->end_shard(); }
shard_set_summary shard_set_builder::finish() { return impl_->finish(); }
void shard_set_builder::abort() noexcept { impl_->abort(); }
std::uint64_t shard_set_builder::entries_added() const noexcept { return impl_->entries_added(); }

shard_set_summary split_index(const sharded_reader& source, const fs::path& manifest,
                              const build_options& options, const shard_split& split) {
  detail::check_split(split);
  build_options shard_options = options;
  const entry_types types = detail::canonical_types(entry_types::of(source.info()));
  shard_options.keys = types.keys;
  shard_options.key_size = types.key_size;
  shard_options.values = types.values;
  shard_options.value_size = types.value_size;
  shard_set_builder out(manifest, shard_options, split.shard_size);
  if (split.shards > 0) {
    detail::splitting_sink sink(out, split.shards, source.size());
    source.for_each([&](const entry_ref& entry) { sink.add(entry.key(), entry.value()); });
  } else {
    source.for_each([&](const entry_ref& entry) { out.add(entry.key(), entry.value()); });
  }
  return out.finish();
}

shard_set_summary import_shard_set(std::span<const std::string> inputs, const fs::path& manifest,
                                   const build_options& options, const import_options& import,
                                   const shard_split& split) {
  validate(options);
  detail::check_split(split);
  if (!options.overwrite && ::access(manifest.c_str(), F_OK) == 0) {
    throw error(errc::already_exists,
                fmt::format("{} already exists (use --force to replace it)", manifest.string()));
  }
  build_options shard_options = options;
  shard_options.input_unsorted = !import.sorted;
  if (split.shard_size > 0) {
    shard_set_builder out(manifest, shard_options, split.shard_size);
    sink_into<shard_set_builder> sink(out);
    import_into(inputs, sink, manifest, options, import);
    return out.finish();
  }
  // --shards N needs the entry count before the first shard ends: sorted
  // files are read twice, once to count, so that the set is written once.
  if (import.sorted) {
    if (const std::optional<std::uint64_t> total = count_sorted_entries(inputs, options, import)) {
      shard_set_builder out(manifest, shard_options);
      detail::splitting_sink sink(out, split.shards, *total);
      import_into(inputs, sink, manifest, options, import);
      sink.check_complete();
      return out.finish();
    }
  }
  // The whole index first: the importer sorts (or checks the order of) the
  // input and resolves duplicates, and the entry count that --shards needs
  // is known once it is written.
  const fs::path whole =
      detail::directory_of(manifest) /
      fmt::format("{}{}-whole", detail::temporary_name_prefix(manifest), ::getpid());
  build_options whole_options = options;
  whole_options.overwrite = true;
  whole_options.sync = false;
  const detail::removable_on_signal whole_on_signal(whole);
  import_entries(inputs, whole, whole_options, import);
  std::optional<sharded_reader> source;
  {
    // The mapping keeps the file readable once its name is gone.
    const detail::removed_at_exit remove_whole(whole);
    open_options sequential;
    sequential.advice = access_advice::sequential;
    source.emplace(reader::open(whole, sequential));
  }
  return split_index(*source, manifest, shard_options, split);
}

}  // namespace bbtree
