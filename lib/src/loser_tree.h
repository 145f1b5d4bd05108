// A tournament tree of losers for k-way merges: the external sort's merge
// of sorted runs and the merge of index files.
//
// Each internal node keeps the loser of the match played there, so that
// after the winner's source advances, one path from its leaf to the root is
// replayed: log2(k) comparisons per entry, against log2(k) to 2 log2(k) for
// a binary heap, and no moves of the sources themselves.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace bbtree::detail {

// `Before(a, b)` says whether source a's current entry goes before source
// b's.  It must put exhausted sources last and break ties by source index
// (a < b), which makes the merge stable: of equal keys, the one from the
// earlier source comes first.
template <typename Before>
class loser_tree {
 public:
  loser_tree(std::size_t sources, Before before)
      : sources_(sources), before_(std::move(before)), nodes_(sources == 0 ? 1 : sources, 0) {
    if (sources_ <= 1) return;
    // Leaves sit at positions k .. 2k-1 of a complete binary tree whose
    // internal nodes are 1 .. k-1; node n's children are 2n and 2n+1.
    std::vector<std::size_t> winners(2 * sources_);
    for (std::size_t i = 0; i < sources_; ++i) winners[sources_ + i] = i;
    for (std::size_t node = sources_ - 1; node >= 1; --node) {
      const std::size_t left = winners[2 * node];
      const std::size_t right = winners[2 * node + 1];
      const bool right_wins = before_(right, left);
      winners[node] = right_wins ? right : left;
      nodes_[node] = right_wins ? left : right;
    }
    nodes_[0] = winners[1];
  }

  // The source whose entry comes next (exhausted when all are).
  std::size_t winner() const noexcept { return nodes_[0]; }

  // Call after the winner's source moved to its next entry (or ran out).
  void replay() {
    std::size_t candidate = nodes_[0];
    for (std::size_t node = (candidate + sources_) / 2; node >= 1; node /= 2) {
      if (before_(nodes_[node], candidate)) std::swap(nodes_[node], candidate);
    }
    nodes_[0] = candidate;
  }

 private:
  std::size_t sources_;
  Before before_;
  std::vector<std::size_t> nodes_;  // [0]: the winner; [1, k): the losers
};

}  // namespace bbtree::detail
