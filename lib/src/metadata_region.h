// The metadata region's layout (spec/FORMAT.md, 12.2), read once for the
// reader, which throws at the first fault, and for the verifier, which
// reports it and goes on to check the keys' order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bbtree::detail {

// A region's pairs, as views of its bytes, up to the first fault of its
// layout (spec 14.4), if it has one.
struct metadata_layout {
  struct fault {
    std::uint64_t offset;  // within the region
    std::string what;
  };
  std::vector<std::pair<std::string_view, std::string_view>> pairs;
  std::optional<fault> problem;
};

// `region` holds `length` >= 4 bytes.  Reads no byte outside them.
metadata_layout read_metadata_layout(const unsigned char* region, std::uint64_t length);

}  // namespace bbtree::detail
