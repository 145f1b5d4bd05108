// Encoded forms of typed keys and values, as builder::add and reader take
// them.  Integer keys are big-endian (i64 with the sign bit flipped) so that
// byte order is numeric order; u64 values are little-endian.
#pragma once

#include <bbtree/format/layout.h>

#include <cstdint>
#include <string_view>

// Thread safety: pure functions of their arguments.
namespace bbtree {

// Eight bytes that view as a std::string_view, kept on the stack.
struct encoded_word {
  unsigned char bytes[8];
  std::string_view view() const noexcept {
    return {reinterpret_cast<const char*>(bytes), sizeof(bytes)};
  }
  operator std::string_view() const noexcept { return view(); }
};

inline encoded_word u64_key(std::uint64_t key) noexcept {
  encoded_word word;
  format::encode_u64_key(key, word.bytes);
  return word;
}

inline encoded_word i64_key(std::int64_t key) noexcept {
  encoded_word word;
  format::encode_i64_key(key, word.bytes);
  return word;
}

inline encoded_word u64_value(std::uint64_t value) noexcept {
  encoded_word word;
  format::store_le(word.bytes, value);
  return word;
}

inline std::uint64_t decode_u64_key(std::string_view key) noexcept {
  return format::decode_u64_key(reinterpret_cast<const unsigned char*>(key.data()));
}

inline std::int64_t decode_i64_key(std::string_view key) noexcept {
  return format::decode_i64_key(reinterpret_cast<const unsigned char*>(key.data()));
}

inline std::uint64_t decode_u64_value(std::string_view value) noexcept {
  return format::load_le<std::uint64_t>(value.data());
}

}  // namespace bbtree
