// Byte-order helpers for the on-disk format.
//
// Every multi-byte integer in a bbtree file is little-endian, except inline
// keys and encoded integer keys, which are big-endian so that comparing their
// bytes (or the integers loaded from them) gives key order.  All loads and
// stores go through memcpy, so callers may pass unaligned pointers: offsets
// read from a corrupt file are never trusted to be aligned.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

// Thread safety: pure functions of their arguments.
namespace bbtree::format {

static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big,
              "mixed-endian hosts are not supported");

template <typename T>
constexpr T byteswap_if(T value, bool swap) noexcept {
  if (!swap) return value;
  if constexpr (sizeof(T) == 1) {
    return value;
  } else if constexpr (sizeof(T) == 2) {
    return static_cast<T>(__builtin_bswap16(static_cast<std::uint16_t>(value)));
  } else if constexpr (sizeof(T) == 4) {
    return static_cast<T>(__builtin_bswap32(static_cast<std::uint32_t>(value)));
  } else {
    static_assert(sizeof(T) == 8);
    return static_cast<T>(__builtin_bswap64(static_cast<std::uint64_t>(value)));
  }
}

template <typename T>
inline T load_le(const void* source) noexcept {
  T value;
  std::memcpy(&value, source, sizeof(T));
  return byteswap_if(value, std::endian::native == std::endian::big);
}

template <typename T>
inline void store_le(void* target, T value) noexcept {
  value = byteswap_if(value, std::endian::native == std::endian::big);
  std::memcpy(target, &value, sizeof(T));
}

template <typename T>
inline T load_be(const void* source) noexcept {
  T value;
  std::memcpy(&value, source, sizeof(T));
  return byteswap_if(value, std::endian::native == std::endian::little);
}

template <typename T>
inline void store_be(void* target, T value) noexcept {
  value = byteswap_if(value, std::endian::native == std::endian::little);
  std::memcpy(target, &value, sizeof(T));
}

}  // namespace bbtree::format
