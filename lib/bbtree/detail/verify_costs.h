// What full verification spent on keys, for the tests that hold it to the
// bounds verify.h promises (tests/test_verify.cc).  Not part of the
// library's interface.
#pragma once

#include <bbtree/verify.h>

#include <cstdint>
#include <span>
#include <string>

namespace bbtree::detail {

struct verify_costs {
  // Bytes of key remainders read to compare keys, to find their common
  // prefix or to show them in messages (item checksums not counted): those
  // in the blob region, and those in the pages.
  std::uint64_t blob_bytes_compared = 0;
  std::uint64_t page_rest_bytes_compared = 0;
  // Bytes allocated to remember the separator of every leaf boundary.
  std::uint64_t separator_bytes_held = 0;
};

// verify_bytes, also filling `costs`.
verify_report verify_bytes_measured(std::span<const std::byte> bytes, std::string name,
                                    const verify_options& options, verify_costs& costs);

}  // namespace bbtree::detail
