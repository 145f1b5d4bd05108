// CRC32C: the check value, and the hardware path (three interleaved streams
// joined by shift tables) against the portable table at every length that
// crosses a boundary of the interleaving.
#include <bbtree/format/crc32c.h>

#include <catch2/catch.hpp>

#include <random>
#include <vector>

TEST_CASE("CRC32C check value and paths agree", "[crc32c]") {
  REQUIRE(bbtree::format::crc32c("123456789", 9) == 0xE3069283u);
  REQUIRE(bbtree::format::crc32c_portable("123456789", 9) == 0xE3069283u);
  std::vector<unsigned char> data(20000);
  std::mt19937_64 random(3);
  for (auto& byte : data) byte = static_cast<unsigned char>(random());
  for (std::size_t length : {0u, 1u, 7u, 8u, 9u, 1023u, 1024u, 3071u, 3072u, 3073u, 4096u, 6144u,
                             9215u, 9216u, 9217u, 20000u}) {
    INFO("length " << length);
    REQUIRE(bbtree::format::crc32c(data.data(), length) ==
            bbtree::format::crc32c_portable(data.data(), length));
    // Extending is the same as one pass.
    const std::size_t half = length / 2;
    REQUIRE(bbtree::format::crc32c_extend(bbtree::format::crc32c(data.data(), half),
                                          data.data() + half, length - half) ==
            bbtree::format::crc32c(data.data(), length));
  }
}
