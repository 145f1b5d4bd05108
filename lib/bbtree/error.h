// Errors reported by the library.  Every failure is a bbtree::error whose
// code() callers can tell apart; what() names the file and, where there is
// one, the page, offset or input position.
#pragma once

#include <stdexcept>
#include <string>

namespace bbtree {

enum class errc {
  // Opening a file.
  not_bbtree = 1,       // the magic does not match: not a file of this format
  newer_version,        // a major version this reader does not know
  unsupported_feature,  // a required feature bit this reader does not know
  truncated,            // shorter than its header says
  corrupt_header,       // header checksum or field out of range
  corrupt,              // a page or item found inconsistent during a query
  trailing_data,        // longer than its header says
  // Building.
  out_of_order,    // a key smaller than the one before it
  duplicate_key,   // an equal key under duplicate_policy::error
  key_too_long,    // over the key kind's length limit, or a fixed key of the wrong size
  value_too_long,  // over the value kind's length limit, or a fixed value of the wrong size
  already_exists,  // the destination exists and overwriting was not asked for
  // Anywhere.
  invalid_argument,  // an option or argument out of range
  type_mismatch,     // a typed view whose key or value type differs from the file's
  io_error,          // the operating system refused a read, write, map or rename
};

const char* to_string(errc code) noexcept;

// Thread safety: an error is an immutable value.
class error : public std::runtime_error {
 public:
  error(errc code, const std::string& message) : std::runtime_error(message), code_(code) {}
  errc code() const noexcept { return code_; }

 private:
  errc code_;
};

}  // namespace bbtree
