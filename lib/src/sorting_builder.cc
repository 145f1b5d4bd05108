// Unsorted input, sorted in memory and streamed into a builder.  Entries
// are kept back to back in one arena; a stable sort keeps equal keys in
// input order, so keep_first and keep_last mean "first and last given".
#include <bbtree/builder.h>

#include "entry_limits.h"

#include <algorithm>

namespace bbtree {

namespace fs = std::filesystem;

sorting_builder::sorting_builder(fs::path destination, build_options options)
    : destination_(std::move(destination)), options_(std::move(options)) {
  validate(options_);
  options_.input_unsorted = true;
}

sorting_builder::~sorting_builder() = default;

void sorting_builder::add(std::string_view key, std::string_view value) {
  if (done_) throw error(errc::invalid_argument, "add() after finish() or abort()");
  detail::entry_limits(options_).check(entries_.size() + 1, key, value);
  entries_.push_back({arena_.size(), static_cast<std::uint32_t>(key.size()),
                      arena_.size() + key.size(), value.size()});
  arena_.append(key);
  arena_.append(value);
}

build_summary sorting_builder::finish() {
  if (done_) throw error(errc::invalid_argument, "finish() after finish() or abort()");
  done_ = true;
  const std::string_view arena = arena_;
  auto key_of = [arena](const entry_ref& entry) {
    return arena.substr(entry.key_offset, entry.key_length);
  };
  std::stable_sort(entries_.begin(), entries_.end(),
                   [&](const entry_ref& a, const entry_ref& b) { return key_of(a) < key_of(b); });
  builder sink(destination_, options_);
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const entry_ref& entry = entries_[i];
    // Under error, the builder reports the duplicate; under keep_last, it
    // keeps replacing the pending entry, so the last given wins.
    sink.add(key_of(entry), arena.substr(entry.value_offset, entry.value_length));
  }
  arena_.clear();
  arena_.shrink_to_fit();
  entries_.clear();
  entries_.shrink_to_fit();
  return sink.finish();
}

void sorting_builder::abort() noexcept {
  done_ = true;
  arena_.clear();
  entries_.clear();
}

std::uint64_t sorting_builder::entries_added() const noexcept { return entries_.size(); }

}  // namespace bbtree
