// The checked walk over an index file's leaves (checked_walk.h), and
// for_each_checked_entry (inspect.h), bbtree-dump's entry walk over a file
// or shard set.
#include "checked_walk.h"

#include <bbtree/inspect.h>
#include <bbtree/merge.h>
#include <bbtree/shards.h>

#include "key_compare.h"

#include <fmt/format.h>

#include <utility>

#include <sys/mman.h>
#include <unistd.h>

namespace bbtree {

namespace detail {

bool checked_leaf_walk::advance() {
  while (!in_leaf_ || position_ >= leaf_.count) {
    const std::uint32_t next = in_leaf_ ? leaf_.number + 1 : core_->first_leaf();
    if (next >= core_->end_leaf()) {
      exhausted_ = true;
      return false;
    }
    enter_leaf(next);
  }
  std::swap(key_, previous_key_);
  key_.clear();
  core_->append_key(leaf_, position_, key_);
  if (core_->info().keys == format::key_kind::bytes &&
      core_->key_suffix_length(leaf_, position_) > leaf_.inline_width) {
    check_item(core_->key_remainder(leaf_, position_), "key");
  }
  if (has_previous_ && compare_keys(previous_key_, key_) >= 0) {
    core_->corrupt(leaf_.number, fmt::format("entry {}: keys out of order", position_));
  }
  const item_view value = core_->value_item(leaf_, position_);
  check_item(value, "value");
  value_ = value.bytes;
  has_previous_ = true;
  ++position_;
  return true;
}

void checked_leaf_walk::enter_leaf(std::uint32_t number) {
  leaf_ = core_->page(number, 0);
  const std::uint32_t page_size = core_->info().page_size;
  const std::uint32_t stored =
      format::load_le<std::uint32_t>(leaf_.bytes + format::page::checksum_offset);
  if (stored != format::page_checksum(leaf_.bytes, page_size))
    core_->corrupt(number, "checksum mismatch");
  in_leaf_ = true;
  position_ = 0;
  if (drop_behind_ && std::uint64_t{number - dropped_before_} * page_size >= merge_drop_step) {
    drop_pages_behind(number);
  }
}

// The pages before leaf `number`, and the blob region, whose values the
// caller is done with: the next access, if any, maps them again from the
// page cache.
void checked_leaf_walk::drop_pages_behind(std::uint32_t number) {
  dropped_before_ = number;
  const auto system_page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const auto base = reinterpret_cast<std::uintptr_t>(core_->base());
  if (system_page == 0 || base % system_page != 0) return;
  auto drop = [&](std::uint64_t begin, std::uint64_t end) {
    begin = (begin + system_page - 1) / system_page * system_page;
    end = end / system_page * system_page;
    if (end > begin) ::madvise(reinterpret_cast<void*>(base + begin), end - begin, MADV_DONTNEED);
  };
  drop(0, std::uint64_t{number} * core_->info().page_size);
  const file_info& info = core_->info();
  if (info.blob_length > 0) drop(info.blob_offset, info.blob_offset + info.blob_length);
}

void checked_leaf_walk::check_item(const item_view& item, const char* what) const {
  if (item.external &&
      format::crc32c(item.bytes.data(), item.bytes.size()) != item.stored_checksum) {
    core_->corrupt(
        leaf_.number,
        fmt::format("entry {}: the {} stored out of the page fails its checksum", position_, what));
  }
}

}  // namespace detail

void for_each_checked_entry(
    const sharded_reader& index,
    const std::function<void(std::string_view key, std::string_view value)>& each) {
  for (std::size_t number = 0; number < index.shard_count(); ++number) {
    detail::checked_leaf_walk walk(index.shard(number));
    while (walk.advance()) each(walk.key(), walk.value());
  }
}

}  // namespace bbtree
