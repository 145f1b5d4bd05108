// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of every
// page, of the header, of the metadata block and of every out-of-page item.
//
// The conventional form is used: initial value 0xFFFFFFFF, final XOR
// 0xFFFFFFFF, so crc32c("123456789") == 0xE3069283.  On x86-64 processors
// with SSE4.2 and PCLMULQDQ the crc32 instruction is used, three streams at
// a time so that its three-cycle latency is hidden, joined by carry-less
// multiplication; elsewhere a slicing-by-8 table.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <wmmintrin.h>
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

// Multiplication of two polynomials modulo the CRC polynomial, both in the
// reflected representation (bit 31 is x^0).  Shifting a CRC state by n zero
// bytes is a multiplication by x^(8n), which is how the three interleaved
// streams of the hardware path are joined.
constexpr std::uint32_t crc32c_multiply(std::uint32_t a, std::uint32_t b) noexcept {
  std::uint32_t product = 0;
  for (int bit = 0; bit < 32; ++bit) {
    if (a & 0x80000000u) product ^= b;
    a <<= 1;
    b = (b >> 1) ^ ((b & 1u) ? crc32c_polynomial : 0u);
  }
  return product;
}

// The hardware path joins its streams at multiples of 8 bytes up to this
// many: a stream is at most 1 KiB, and the first of three is shifted past
// the other two.
inline constexpr std::size_t crc32c_stream_block = 1024;

// x^(64 * i) for every shift the join needs, i up to 2 * crc32c_stream_block / 8.
constexpr std::array<std::uint32_t, 2 * crc32c_stream_block / 8 + 1> make_crc32c_word_shifts() {
  std::array<std::uint32_t, 2 * crc32c_stream_block / 8 + 1> shifts{};
  std::uint32_t x_to_the_64 = 0x80000000u >> 8;  // x^8, squared three times below
  for (int square = 0; square < 3; ++square) {
    x_to_the_64 = crc32c_multiply(x_to_the_64, x_to_the_64);
  }
  shifts[0] = 0x80000000u;  // x^0
  for (std::size_t i = 1; i < shifts.size(); ++i) {
    shifts[i] = crc32c_multiply(shifts[i - 1], x_to_the_64);
  }
  return shifts;
}

inline constexpr auto crc32c_word_shifts = make_crc32c_word_shifts();

// crc32c_multiply in three instructions.  The carry-less product of two
// reflected 32-bit polynomials, shifted left once, is a reflected 64-bit
// one: its high half holds x^0..x^31 as they are, and its low half holds
// x^32..x^63, which the crc32 instruction reduces (it multiplies its data by
// x^32 modulo the polynomial).
__attribute__((target("sse4.2,pclmul"))) inline std::uint32_t crc32c_multiply_hardware(
    std::uint32_t a, std::uint32_t b) noexcept {
  const __m128i product = _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(a)),
                                               _mm_cvtsi32_si128(static_cast<int>(b)), 0x00);
  const auto shifted = static_cast<std::uint64_t>(_mm_cvtsi128_si64(product)) << 1;
  return _mm_crc32_u32(0, static_cast<std::uint32_t>(shifted)) ^
         static_cast<std::uint32_t>(shifted >> 32);
}

// Three streams of `block` bytes each (a multiple of 8, at most
// crc32c_stream_block), so that the crc32 instruction's three-cycle latency
// is hidden, joined into `crc` as one pass over the 3 * block bytes.
__attribute__((always_inline, target("sse4.2,pclmul"))) inline std::uint64_t crc32c_three_streams(
    std::uint64_t crc, const unsigned char* data, std::size_t block) noexcept {
  std::uint64_t crc1 = 0;
  std::uint64_t crc2 = 0;
  const unsigned char* end = data + block;
  do {
    std::uint64_t word0, word1, word2;
    std::memcpy(&word0, data, 8);
    std::memcpy(&word1, data + block, 8);
    std::memcpy(&word2, data + 2 * block, 8);
    crc = _mm_crc32_u64(crc, word0);
    crc1 = _mm_crc32_u64(crc1, word1);
    crc2 = _mm_crc32_u64(crc2, word2);
    data += 8;
  } while (data < end);
  return crc32c_multiply_hardware(static_cast<std::uint32_t>(crc), crc32c_word_shifts[block / 4]) ^
         crc32c_multiply_hardware(static_cast<std::uint32_t>(crc1), crc32c_word_shifts[block / 8]) ^
         crc2;
}

// Below three streams of this many bytes one stream is faster: the join
// takes about as long as 96 bytes in one stream.  On the Intel Xeon of
// bench/RESULTS.md (12-05), three streams of 16 bytes were slower than one
// over 52 and 70 bytes, and three of 32 or more faster from 100 bytes up.
inline constexpr std::size_t crc32c_shortest_stream = 32;

// Hot: the builder and the verifier run it over every page, and every open
// over the header (lib/src/code_layout.h gathers the open path's code).
__attribute__((hot, target("sse4.2,pclmul"))) inline std::uint32_t crc32c_update_hardware(
    std::uint32_t crc, const unsigned char* data, std::size_t length) noexcept {
  std::uint64_t crc0 = crc;
  while (length >= 3 * crc32c_stream_block) {
    crc0 = crc32c_three_streams(crc0, data, crc32c_stream_block);
    data += 3 * crc32c_stream_block;
    length -= 3 * crc32c_stream_block;
  }
  // What is left, pages of 1 and 2 KiB among it, in three streams as long
  // as one third of it, leaving less than 24 bytes.
  if (length >= 3 * crc32c_shortest_stream) {
    const std::size_t block = length / 24 * 8;
    crc0 = crc32c_three_streams(crc0, data, block);
    data += 3 * block;
    length -= 3 * block;
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

inline bool crc32c_has_hardware() noexcept {
  static const bool supported =
      __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
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
  if (detail::crc32c_has_hardware()) return ~detail::crc32c_update_hardware(state, bytes, length);
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
