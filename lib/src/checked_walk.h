// The entries of one index file in key order, read leaf by leaf with the
// checks that a cursor leaves to bbtree-verify: each leaf's checksum, each
// out-of-page item's checksum, and that keys ascend within and across
// leaves.  What reads every entry for a user (bbtree-merge's inputs,
// bbtree-dump's entries) walks with it, so that a damaged leaf fails the
// walk, naming the file and page, instead of passing on what it holds.
#pragma once

#include <bbtree/detail/reader_core.h>
#include <bbtree/reader.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace bbtree::detail {

class checked_leaf_walk {
 public:
  // How the walk treats the mapped pages behind it.  drop_behind gives
  // them back every merge_drop_step bytes of leaves (and the blob region
  // with them), so that resident memory does not grow with the file: only
  // for a file mapping (memory_mode::map), whose pages the next access
  // reads again from the page cache; dropping copied memory would zero it.
  enum class pages { keep, drop_behind };

  // The reader outlives the walk.
  explicit checked_leaf_walk(const reader& index, pages behind = pages::keep)
      : core_(&index.core()), drop_behind_(behind == pages::drop_behind) {}

  const std::string& name() const noexcept { return core_->name(); }

  // Moves to the next entry; false (and exhausted()) after the last.
  // Throws error(corrupt) naming the file and page for a leaf that fails
  // its checksum or its structure, an out-of-page item that fails its
  // checksum, or a key not above the one before it.
  bool advance();

  bool exhausted() const noexcept { return exhausted_; }
  // The current entry; the key until the next advance(), the value while
  // the reader is open.
  std::string_view key() const noexcept { return key_; }
  std::string_view value() const noexcept { return value_; }

 private:
  void enter_leaf(std::uint32_t number);
  void drop_pages_behind(std::uint32_t number);
  void check_item(const item_view& item, const char* what) const;

  const reader_core* core_;
  bool drop_behind_;
  page_view leaf_;
  bool in_leaf_ = false;
  std::uint32_t position_ = 0;  // of the next entry in leaf_
  std::uint32_t dropped_before_ = 0;
  std::string key_;
  std::string previous_key_;
  bool has_previous_ = false;
  std::string_view value_;
  bool exhausted_ = false;
};

}  // namespace bbtree::detail
