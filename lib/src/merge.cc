// Merging index files and shard sets: a loser tree over the leaves of the
// inputs' files, feeding a builder.
//
// Each input is walked leaf by leaf by checked_leaf_walk rather than by
// cursors, so that the merge checks what a lookup does not (each leaf's
// checksum, each out-of-page item's checksum, that keys ascend) and knows
// which pages it is done with: every 16 MiB of leaves (merge_drop_step), the
// mapped pages behind the merge are dropped, so that resident memory does
// not grow with the inputs.
#include <bbtree/merge.h>

#include <bbtree/reader.h>
#include <bbtree/shards.h>
#include <bbtree/text_format.h>

#include "checked_walk.h"
#include "key_compare.h"
#include "loser_tree.h"

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace bbtree {

namespace fs = std::filesystem;

namespace detail {
namespace {

std::string describe_types(const file_info& info) {
  const entry_types types = entry_types::of(info);
  return fmt::format("{} keys and {} values", key_type_name(types), value_type_name(types));
}

bool same_types(const file_info& a, const file_info& b) {
  return a.keys == b.keys && a.key_size == b.key_size && a.values == b.values &&
         a.value_size == b.value_size;
}

}  // namespace
}  // namespace detail

build_summary merge_indexes(std::span<const fs::path> inputs, const fs::path& destination,
                            const merge_options& options) {
  if (inputs.empty()) throw error(errc::invalid_argument, "no input files to merge");
  // A shard set's shards cover disjoint ranges, so each can be a source of
  // its own at the set's place among the inputs: the duplicate policy's
  // "first" and "last" input still mean what they say.
  std::vector<sharded_reader> sets;
  sets.reserve(inputs.size());
  for (const fs::path& path : inputs)
    sets.push_back(sharded_reader::open(
        path, open_options{memory_mode::map, false, access_advice::sequential}));
  // A set's info() has its types, and its page size if its shards share
  // one (else 0, the builder's default).
  const file_info& first = sets.front().info();
  std::uint64_t total = 0;
  for (const sharded_reader& set : sets) {
    const file_info& info = set.info();
    if (!detail::same_types(first, info)) {
      throw error(
          errc::type_mismatch,
          fmt::format("{} has {}, but {} has {}: only files of the same key and value types merge",
                      sets.front().name(), detail::describe_types(first), set.name(),
                      detail::describe_types(info)));
    }
    total += info.entries;
  }
  // The inputs are file mappings (memory_mode::map above), so the walks
  // may drop the pages behind them.
  std::vector<detail::checked_leaf_walk> sources;
  for (const sharded_reader& set : sets) {
    for (std::size_t number = 0; number < set.shard_count(); ++number)
      sources.emplace_back(set.shard(number), detail::checked_leaf_walk::pages::drop_behind);
  }

  build_options build;
  build.keys = first.keys;
  build.key_size = first.key_size;
  build.values = first.values;
  build.value_size = first.value_size;
  build.page_size = options.page_size != 0 ? options.page_size
                    : first.page_size != 0 ? first.page_size
                                           : build.page_size;
  build.duplicates = options.duplicates;
  build.overwrite = options.overwrite;
  build.sync = options.sync;
  build.metadata = options.metadata;
  builder out(destination, build);
  if (sources.empty()) return out.finish();  // only sets without shards

  for (detail::checked_leaf_walk& source : sources) source.advance();
  // Of equal keys, the earlier input's comes first: keep_first and
  // keep_last then mean the input given first and last.
  auto before = [&sources](std::size_t a, std::size_t b) {
    const detail::checked_leaf_walk& x = sources[a];
    const detail::checked_leaf_walk& y = sources[b];
    if (x.exhausted() || y.exhausted()) return !x.exhausted();
    const int order = detail::compare_keys(x.key(), y.key());
    return order != 0 ? order < 0 : a < b;
  };
  detail::loser_tree<decltype(before)> tree(sources.size(), before);

  merge_progress progress{0, total};
  constexpr std::uint64_t report_interval = 1 << 18;
  std::size_t previous_source = 0;
  for (;;) {
    const std::size_t winner = tree.winner();
    detail::checked_leaf_walk& source = sources[winner];
    if (source.exhausted()) break;
    try {
      out.add(source.key(), source.value());
    } catch (const error& failure) {
      if (failure.code() != errc::duplicate_key) throw;
      throw error(errc::duplicate_key, fmt::format("duplicate key \"{}\" in {} and {}",
                                                   key_text(source.key(), entry_types::of(first)),
                                                   sources[previous_source].name(), source.name()));
    }
    previous_source = winner;
    source.advance();
    tree.replay();
    if (++progress.entries % report_interval == 0 && options.progress) options.progress(progress);
  }
  if (options.progress) options.progress(progress);
  return out.finish();
}

}  // namespace bbtree
