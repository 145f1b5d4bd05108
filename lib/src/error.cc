#include <bbtree/error.h>

namespace bbtree {

const char* to_string(errc code) noexcept {
  switch (code) {
    case errc::not_bbtree:
      return "not a bbtree file";
    case errc::newer_version:
      return "newer format version";
    case errc::unsupported_feature:
      return "unsupported feature";
    case errc::truncated:
      return "truncated";
    case errc::corrupt_header:
      return "corrupt header";
    case errc::corrupt:
      return "corrupt";
    case errc::trailing_data:
      return "trailing data";
    case errc::out_of_order:
      return "out of order";
    case errc::duplicate_key:
      return "duplicate key";
    case errc::key_too_long:
      return "key too long";
    case errc::value_too_long:
      return "value too long";
    case errc::already_exists:
      return "already exists";
    case errc::invalid_argument:
      return "invalid argument";
    case errc::type_mismatch:
      return "type mismatch";
    case errc::io_error:
      return "I/O error";
  }
  return "unknown error";
}

}  // namespace bbtree
