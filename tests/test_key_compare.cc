// The reader's word-at-a-time key compare and inline-key extraction against
// their definitions in spec/FORMAT.md: bytewise order, the shorter first on
// a shared prefix (section 3), and the first `width` suffix bytes
// zero-padded, big-endian (section 8.2).  The lengths cross every path of
// compare_keys and common_prefix_length (under 8, multiples of 8 and not),
// and the pairs share long prefixes, as path-like keys do.
#include "../lib/src/key_compare.h"

#include <bbtree/format/layout.h>

#include <catch2/catch.hpp>

#include <random>
#include <string>

namespace {

int reference_order(const std::string& a, const std::string& b) {
  const int order = a.compare(b);
  return (order > 0) - (order < 0);
}

std::string random_bytes(std::mt19937_64& random, std::size_t length) {
  std::string bytes(length, '\0');
  // A small alphabet that includes 0x00 and 0xFF makes equal bytes, and so
  // long shared prefixes, common.
  const unsigned char alphabet[] = {0x00, 0x01, 'a', 'b', 0x7F, 0x80, 0xFE, 0xFF};
  for (auto& byte : bytes) byte = static_cast<char>(alphabet[random() % 8]);
  return bytes;
}

}  // namespace

TEST_CASE("compare_keys is memcmp order, then the shorter first; common prefixes",
          "[key_compare]") {
  std::mt19937_64 random(11);
  for (int round = 0; round < 200000; ++round) {
    const std::string base = random_bytes(random, random() % 130);
    std::string a = base.substr(0, random() % (base.size() + 1));
    std::string b = base.substr(0, random() % (base.size() + 1));
    // Change one byte of either at any position, or none.
    if (!a.empty() && random() % 3 == 0) a[random() % a.size()] = static_cast<char>(random());
    if (!b.empty() && random() % 3 == 0) b[random() % b.size()] = static_cast<char>(random());
    INFO("lengths " << a.size() << " and " << b.size());
    REQUIRE(bbtree::detail::compare_keys(a, b) == reference_order(a, b));
    REQUIRE(bbtree::detail::compare_keys(b, a) == reference_order(b, a));
    std::size_t shared = 0;
    while (shared < a.size() && shared < b.size() && a[shared] == b[shared]) ++shared;
    REQUIRE(bbtree::detail::common_prefix_length(a, b) == shared);
  }
  REQUIRE(bbtree::detail::compare_keys({}, {}) == 0);
  REQUIRE(bbtree::detail::compare_keys(std::string("\xFF", 1), std::string("\x00\x00", 2)) == 1);
}

TEST_CASE("inline_key_of reads the first width bytes, zero-padded", "[key_compare]") {
  std::mt19937_64 random(12);
  for (int round = 0; round < 20000; ++round) {
    const std::string suffix = random_bytes(random, random() % 12);
    for (const std::uint32_t width : {2u, 4u, 8u}) {
      std::uint64_t expected = 0;
      for (std::uint32_t i = 0; i < width; ++i) {
        const unsigned char byte = i < suffix.size() ? static_cast<unsigned char>(suffix[i]) : 0;
        expected = (expected << 8) | byte;
      }
      REQUIRE(bbtree::format::inline_key_of(reinterpret_cast<const unsigned char*>(suffix.data()),
                                            suffix.size(), width) == expected);
    }
  }
}
