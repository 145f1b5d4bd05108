// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of every
// page, of the header, of the metadata block and of every out-of-page item.
//
// The conventional form is used: initial value 0xFFFFFFFF, final XOR
// 0xFFFFFFFF, so crc32c("123456789") == 0xE3069283.  On x86-64 processors
// with SSE4.2 the crc32 instruction is used, three streams at a time so that
// its three-cycle latency is hidden; elsewhere a slicing-by-8 table.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

// Thread safety: pure functions; the hardware check is a function-local
// static, initialized once.
namespace bbtree::format {

namespace detail {

constexpr std::uint32_t crc32c_polynomial = 0x82F63B78u;

constexpr std::array<std::array<std::uint32_t, 256>, 8> make_crc32c_tables() {
  std::array<std::array<std::uint32_t, 256>, 8> tables{};
  for (std::uint32_t byte = 0; byte < 256; ++byte) {
    std::uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? crc32c_polynomial : 0u);
    tables[0][byte] = crc;
  }
  for (std::uint32_t byte = 0; byte < 256; ++byte) {
    for (std::size_t slice = 1; slice < 8; ++slice) {
      const std::uint32_t previous = tables[slice - 1][byte];
      tables[slice][byte] = (previous >> 8) ^ tables[0][previous & 0xFFu];
    }
  }
  return tables;
}

inline constexpr auto crc32c_tables = make_crc32c_tables();

// Updates a raw (not pre- or post-inverted) CRC state.
inline std::uint32_t crc32c_update_portable(std::uint32_t crc, const unsigned char* data,
                                            std::size_t length) noexcept {
  const auto& table = crc32c_tables;
  while (length >= 8) {
    std::uint64_t word;
    std::memcpy(&word, data, 8);
    if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap64(word);
    word ^= crc;
    crc = table[7][word & 0xFF] ^ table[6][(word >> 8) & 0xFF] ^ table[5][(word >> 16) & 0xFF] ^
          table[4][(word >> 24) & 0xFF] ^ table[3][(word >> 32) & 0xFF] ^
          table[2][(word >> 40) & 0xFF] ^ table[1][(word >> 48) & 0xFF] ^ table[0][word >> 56];
    data += 8;
    length -= 8;
  }
  while (length-- > 0) crc = (crc >> 8) ^ table[0][(crc ^ *data++) & 0xFFu];
  return crc;
}

#if defined(__x86_64__)

// Multiplication by x^(8*bytes) modulo the polynomial, used to join the
// three interleaved streams of the hardware path.
constexpr std::uint32_t crc32c_multiply(std::uint32_t a, std::uint32_t b) noexcept {
  std::uint32_t product = 0;
  for (int bit = 0; bit < 32; ++bit) {
    if (a & 0x80000000u) product ^= b;
    a <<= 1;
    b = (b >> 1) ^ ((b & 1u) ? crc32c_polynomial : 0u);
  }
  return product;
}

// x^(8*n) in the reflected representation, for shifting a CRC state by n zero bytes.
constexpr std::uint32_t crc32c_shift_constant(std::size_t bytes) noexcept {
  std::uint32_t result = 0x80000000u;  // x^0
  std::uint32_t power = 0x40000000u;   // x^1
  std::size_t bits = bytes * 8;
  while (bits > 0) {
    if (bits & 1u) result = crc32c_multiply(result, power);
    power = crc32c_multiply(power, power);
    bits >>= 1;
  }
  return result;
}

inline constexpr std::size_t crc32c_stream_block = 1024;

// Shifting a CRC state by a fixed number of zero bytes is linear, so it is
// four table lookups: one table per byte of the state.
using crc32c_shift_table = std::array<std::array<std::uint32_t, 256>, 4>;

constexpr crc32c_shift_table make_crc32c_shift_table(std::size_t bytes) {
  const std::uint32_t constant = crc32c_shift_constant(bytes);
  crc32c_shift_table table{};
  for (std::size_t position = 0; position < 4; ++position) {
    for (std::uint32_t byte = 0; byte < 256; ++byte) {
      table[position][byte] = crc32c_multiply(constant, byte << (8 * position));
    }
  }
  return table;
}

inline constexpr crc32c_shift_table crc32c_shift_one_block =
    make_crc32c_shift_table(crc32c_stream_block);
inline constexpr crc32c_shift_table crc32c_shift_two_blocks =
    make_crc32c_shift_table(2 * crc32c_stream_block);

inline std::uint32_t crc32c_shift(std::uint32_t crc, const crc32c_shift_table& table) noexcept {
  return table[0][crc & 0xFF] ^ table[1][(crc >> 8) & 0xFF] ^ table[2][(crc >> 16) & 0xFF] ^
         table[3][crc >> 24];
}

// Hot: the verifier runs it over every page, and every open over the header
// (lib/src/code_layout.h gathers the open path's code).
__attribute__((hot, target("sse4.2"))) inline std::uint32_t crc32c_update_sse42(
    std::uint32_t crc, const unsigned char* data, std::size_t length) noexcept {
  std::uint64_t crc0 = crc;
  while (length >= 3 * crc32c_stream_block) {
    std::uint64_t crc1 = 0;
    std::uint64_t crc2 = 0;
    const unsigned char* end = data + crc32c_stream_block;
    do {
      std::uint64_t word0, word1, word2;
      std::memcpy(&word0, data, 8);
      std::memcpy(&word1, data + crc32c_stream_block, 8);
      std::memcpy(&word2, data + 2 * crc32c_stream_block, 8);
      crc0 = _mm_crc32_u64(crc0, word0);
      crc1 = _mm_crc32_u64(crc1, word1);
      crc2 = _mm_crc32_u64(crc2, word2);
      data += 8;
    } while (data < end);
    crc0 = crc32c_shift(static_cast<std::uint32_t>(crc0), crc32c_shift_two_blocks) ^
           crc32c_shift(static_cast<std::uint32_t>(crc1), crc32c_shift_one_block) ^ crc2;
    data += 2 * crc32c_stream_block;
    length -= 3 * crc32c_stream_block;
  }
  while (length >= 8) {
    std::uint64_t word;
    std::memcpy(&word, data, 8);
    crc0 = _mm_crc32_u64(crc0, word);
    data += 8;
    length -= 8;
  }
  auto crc32 = static_cast<std::uint32_t>(crc0);
  while (length-- > 0) crc32 = _mm_crc32_u8(crc32, *data++);
  return crc32;
}

inline bool crc32c_has_sse42() noexcept {
  static const bool supported = __builtin_cpu_supports("sse4.2");
  return supported;
}

#endif

}  // namespace detail

// Extends a finished CRC32C value with more bytes: crc32c(a + b) ==
// crc32c_extend(crc32c(a), b).
inline std::uint32_t crc32c_extend(std::uint32_t crc, const void* data,
                                   std::size_t length) noexcept {
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::uint32_t state = ~crc;
#if defined(__x86_64__)
  if (detail::crc32c_has_sse42()) return ~detail::crc32c_update_sse42(state, bytes, length);
#endif
  return ~detail::crc32c_update_portable(state, bytes, length);
}

inline std::uint32_t crc32c(const void* data, std::size_t length) noexcept {
  return crc32c_extend(0, data, length);
}

// The portable path alone, so that tests can compare both paths on one machine.
inline std::uint32_t crc32c_portable(const void* data, std::size_t length) noexcept {
  return ~detail::crc32c_update_portable(~0u, static_cast<const unsigned char*>(data), length);
}

}  // namespace bbtree::format
