// CRC32C: the check value, and the hardware path (three interleaved streams
// joined by carry-less multiplication) against the portable table at every
// length that crosses a boundary of the interleaving.
#include <bbtree/format/crc32c.h>

#include <catch2/catch.hpp>

#include <random>
#include <vector>

namespace {

std::vector<unsigned char> random_bytes(std::size_t count) {
  std::vector<unsigned char> data(count);
  std::mt19937_64 random(3);
  for (auto& byte : data) byte = static_cast<unsigned char>(random());
  return data;
}

}  // namespace

TEST_CASE("CRC32C check value and paths agree", "[crc32c]") {
  REQUIRE(bbtree::format::crc32c("123456789", 9) == 0xE3069283u);
  REQUIRE(bbtree::format::crc32c_portable("123456789", 9) == 0xE3069283u);
  const std::vector<unsigned char> data = random_bytes(20001);
  // Every length up to past the first whole 3 KiB round (which takes in each
  // block size of the short three-stream step, and the lengths left after
  // it), from an aligned and an unaligned start; then longer ones.
  std::vector<std::size_t> lengths;
  for (std::size_t length = 0; length <= 3 * 1024 + 200; ++length) lengths.push_back(length);
  for (std::size_t length : {4092u, 4096u, 6144u, 9215u, 9216u, 9217u, 20000u}) {
    lengths.push_back(length);
  }
  for (const std::size_t start : {0u, 1u}) {
    for (const std::size_t length : lengths) {
      INFO("start " << start << ", length " << length);
      const unsigned char* bytes = data.data() + start;
      const std::uint32_t expected = bbtree::format::crc32c_portable(bytes, length);
      REQUIRE(bbtree::format::crc32c(bytes, length) == expected);
      // Extending is the same as one pass.
      const std::size_t half = length / 2;
      REQUIRE(bbtree::format::crc32c_extend(bbtree::format::crc32c(bytes, half), bytes + half,
                                            length - half) == expected);
    }
  }
}

#if defined(__x86_64__)
TEST_CASE("CRC32C: the carry-less multiply is the polynomial product", "[crc32c]") {
  namespace detail = bbtree::format::detail;
  if (!detail::crc32c_has_hardware()) return;
  std::mt19937 random(11);
  for (int round = 0; round < 100000; ++round) {
    const auto a = static_cast<std::uint32_t>(random());
    const auto b = static_cast<std::uint32_t>(random());
    INFO("a " << a << ", b " << b);
    REQUIRE(detail::crc32c_multiply_hardware(a, b) == detail::crc32c_multiply(a, b));
  }
}

TEST_CASE("CRC32C: a word shift is the state after that many zero words", "[crc32c]") {
  namespace detail = bbtree::format::detail;
  const std::vector<unsigned char> zeros(8 * (detail::crc32c_word_shifts.size() - 1), 0);
  std::mt19937 random(12);
  for (std::size_t words = 0; words < detail::crc32c_word_shifts.size(); ++words) {
    const auto state = static_cast<std::uint32_t>(random());
    INFO("words " << words << ", state " << state);
    REQUIRE(detail::crc32c_multiply(state, detail::crc32c_word_shifts[words]) ==
            detail::crc32c_update_portable(state, zeros.data(), 8 * words));
  }
}
#endif
