#include "entry_limits.h"

#include <fmt/format.h>

namespace bbtree::detail {

void entry_limits::throw_if_unfit(std::uint64_t position, std::string_view key,
                                  std::string_view value) const {
  if (key_size_ != 0 && key.size() != key_size_) {
    throw error(errc::key_too_long,
                fmt::format("entry {}: key is {} bytes; this file's keys are {} bytes", position,
                            key.size(), key_size_));
  }
  if (key.size() > format::max_key_length) {
    throw error(errc::key_too_long, fmt::format("entry {}: key of {} bytes is over the limit of {}",
                                                position, key.size(), format::max_key_length));
  }
  if (values_ == value_kind::bytes) {
    if (value.size() > format::max_value_length) {
      throw error(errc::value_too_long,
                  fmt::format("entry {}: value of {} bytes is over the limit of {}", position,
                              value.size(), format::max_value_length));
    }
  } else if (value.size() != value_size_) {
    throw error(errc::value_too_long,
                value_size_ == 0
                    ? fmt::format("entry {}: this file has no values", position)
                    : fmt::format("entry {}: value is {} bytes; this file's values are {} bytes",
                                  position, value.size(), value_size_));
  }
}

}  // namespace bbtree::detail
