// Order and equality of directory heads (spec/FORMAT.md, 12.3) against a
// probe's head, for the reader's branch-free searches over the directory.
//
// Heads compare bytewise, which is the order of their bytes read as one
// big-endian number: so a probe's head is read once into big-endian 64-bit
// words, and each directory head it meets is compared word by word as a
// multi-word subtraction.  Two implementations of the one order: a chain of
// subtract-with-borrow instructions on x86-64, and a portable one, which
// every build compiles so that tests hold the two to the same answers even
// on machines that would never run it.
#pragma once

#include <bbtree/format/endian.h>
#include <bbtree/format/layout.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace bbtree::detail {

template <std::size_t HeadSize>
concept valid_head_size = format::directory::is_valid_head_size(HeadSize);

// A probe's head: the first HeadSize bytes of what follows the directory's
// prefix in the key, zero-padded as the builder pads heads, as big-endian
// words.
template <std::size_t HeadSize>
requires valid_head_size<HeadSize>
struct head_words {
  static constexpr std::size_t word_count = HeadSize / 8;
  std::uint64_t words[word_count];

  void assign(std::string_view rest) noexcept {
    if (rest.size() >= HeadSize) [[likely]] {
      // The key holds the whole head: no padding, and no copy.
      for (std::size_t at = 0; at < word_count; ++at)
        words[at] = format::load_be<std::uint64_t>(rest.data() + 8 * at);
      return;
    }
    unsigned char padded[HeadSize];
    format::directory::store_head(padded, rest, HeadSize);
    for (std::size_t at = 0; at < word_count; ++at)
      words[at] = format::load_be<std::uint64_t>(padded + 8 * at);
  }
};

// Whether `head` <= the probe: whether head - probe - 1 borrows, the
// borrow carried from the last word to the first.
template <std::size_t HeadSize>
[[gnu::always_inline]] inline bool head_at_most_portable(
    const unsigned char* head, const head_words<HeadSize>& probe) noexcept {
  bool borrow = true;
  for (std::size_t at = head_words<HeadSize>::word_count; at-- > 0;) {
    const std::uint64_t word = format::load_be<std::uint64_t>(head + 8 * at);
    borrow = (word < probe.words[at]) | ((word == probe.words[at]) & borrow);
  }
  return borrow;
}

#if defined(__x86_64__)
// The same subtraction as one instruction a word: a load, a byte swap and a
// subtract-with-borrow, with no compare or flag juggling between words.
// Against the SSE2 byte compare it replaced (mask of differing bytes, bit
// scan, compare of the first differing byte) a step runs about as many
// instructions but a shorter chain of dependent ones: batched path-like
// keys 8% faster in cache (bench/RESULTS.md, "Directory heads compared as
// big-endian words").
template <std::size_t HeadSize>
[[gnu::always_inline]] inline bool head_at_most_borrow(const unsigned char* head,
                                                       const head_words<HeadSize>& probe) noexcept {
  constexpr std::size_t last = head_words<HeadSize>::word_count - 1;
  unsigned char borrow = 1;
  unsigned long long difference;
  // Unrolled by hand: GCC keeps a loop of _subborrow_u64 as a loop, which
  // moves the borrow through a register every word.
  [&]<std::size_t... From>(std::index_sequence<From...>) {
    ((borrow = _subborrow_u64(borrow, format::load_be<std::uint64_t>(head + 8 * (last - From)),
                              probe.words[last - From], &difference)),
     ...);
  }
  (std::make_index_sequence<last + 1>{});
  return borrow != 0;
}
#endif

template <std::size_t HeadSize>
[[gnu::always_inline]] inline bool head_at_most(const unsigned char* head,
                                                const head_words<HeadSize>& probe) noexcept {
#if defined(__x86_64__)
  return head_at_most_borrow<HeadSize>(head, probe);
#else
  return head_at_most_portable<HeadSize>(head, probe);
#endif
}

template <std::size_t HeadSize>
inline bool head_equals(const unsigned char* head, const head_words<HeadSize>& probe) noexcept {
  bool equal = true;
  for (std::size_t at = 0; at < head_words<HeadSize>::word_count; ++at)
    equal &= format::load_be<std::uint64_t>(head + 8 * at) == probe.words[at];
  return equal;
}

}  // namespace bbtree::detail
