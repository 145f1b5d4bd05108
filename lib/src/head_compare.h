// Byte-by-byte difference masks of two directory heads (spec/FORMAT.md,
// 12.3), for the reader's branch-free searches over the directory.  Two
// implementations of one function: SSE2 where the compiler targets it, and
// a portable one, which every build compiles so that tests hold the two to
// the same answers even on machines that would never run it.
#pragma once

#include <bbtree/format/layout.h>

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace bbtree::detail {

// A head size the format allows; one bit a byte of the largest fits the
// 64-bit masks below.
static_assert(format::directory::max_head_size <= 64);
template <std::size_t HeadSize>
concept head_size_in_mask = format::directory::is_valid_head_size(HeadSize);

// Bit i set where byte i of `a` differs from byte i of `b`.
template <std::size_t HeadSize>
requires head_size_in_mask<HeadSize>
[[gnu::always_inline]] inline std::uint64_t head_differences_portable(
    const unsigned char* a, const unsigned char* b) noexcept {
  std::uint64_t different = 0;
  for (std::size_t at = 0; at < HeadSize; ++at) different |= std::uint64_t{a[at] != b[at]} << at;
  return different;
}

#if defined(__SSE2__)
template <std::size_t HeadSize>
requires head_size_in_mask<HeadSize>
[[gnu::always_inline]] inline std::uint64_t head_differences_sse2(const unsigned char* a,
                                                                  const unsigned char* b) noexcept {
  // Sixteen bytes of a head, or its last eight with zeros above them (both
  // heads' are loaded the same way, so those zeros compare equal).
  const auto load = [](const unsigned char* head, std::size_t at) {
    if (16 * at + 16 <= HeadSize)
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(head + 16 * at));
    return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(head + 16 * at));
  };
  std::uint64_t equal = 0;
  for (std::size_t at = 0; at < (HeadSize + 15) / 16; ++at) {
    const auto mask =
        static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(load(a, at), load(b, at))));
    equal |= std::uint64_t{mask} << (16 * at);
  }
  constexpr std::uint64_t all =
      HeadSize == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << HeadSize) - 1;
  return ~equal & all;
}
#endif

template <std::size_t HeadSize>
requires head_size_in_mask<HeadSize>
[[gnu::always_inline]] inline std::uint64_t head_differences(const unsigned char* a,
                                                             const unsigned char* b) noexcept {
#if defined(__SSE2__)
  return head_differences_sse2<HeadSize>(a, b);
#else
  return head_differences_portable<HeadSize>(a, b);
#endif
}

}  // namespace bbtree::detail
