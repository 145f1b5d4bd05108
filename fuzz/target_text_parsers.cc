// fuzz_text_parsers: the entry formats of the tools (text_format.h) on
// arbitrary input.  Whatever parses must survive a round trip: written back
// in every format and parsed again, it gives the same entries, byte for
// byte (jsonl may refuse byte strings that are not UTF-8, and only those).
// The same input read in small chunks, as from a pipe, must give the same
// entries and the same error.  The escapes must round-trip on any bytes.
//
//   byte 0   bits 0-1 format (tsv, csv, jsonl, bin)
//            bits 2-3 key type (u64, i64, bytes, fixed)
//            bits 4-5 value type (none, u64, bytes, fixed)
//            bit 6    also read the input in chunks and compare
//   byte 1   fixed sizes: key 1 + (b & 15), value 1 + (b >> 4)
//   byte 2   where the chunks end
//   rest     the input text
#include "fuzz_support.h"

#include <bbtree/text_format.h>

#include <fmt/format.h>

#include <sys/socket.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <optional>
#include <sstream>

namespace bbtree::fuzz {

namespace {

using entry_list = std::vector<std::pair<std::string, std::string>>;

struct parse_result {
  entry_list entries;
  std::optional<std::pair<errc, std::string>> failure;
};

constexpr std::size_t max_entries = 100000;

parse_result parse_all(entry_reader& in) {
  parse_result result;
  try {
    while (const auto entry = in.next()) {
      result.entries.emplace_back(entry->key, entry->value);
      if (result.entries.size() >= max_entries) break;
    }
  } catch (const error& e) {
    result.failure.emplace(e.code(), e.what());
  }
  return result;
}

parse_result parse_text(std::string_view text, text_format format, const entry_types& types) {
  std::istringstream stream{std::string(text)};
  entry_reader in(stream, "input", format, types);
  return parse_all(in);
}

// Reads `text` through a socket that delivers it in the given chunks, one
// read() each, as a pipe does when the writer is slow.  Returns nothing when
// the socket cannot hold the input.
std::optional<parse_result> parse_chunked(std::string_view text, text_format format,
                                          const entry_types& types, std::uint8_t seed) {
  if (text.empty() || text.size() > (std::size_t{64} << 10)) return std::nullopt;
  int sockets[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sockets) != 0) return std::nullopt;
  const int buffer = 1 << 20;
  ::setsockopt(sockets[0], SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer));
  std::mt19937 random(seed);
  bool sent = true;
  std::size_t at = 0;
  for (int chunk = 0; at < text.size() && sent; ++chunk) {
    // Up to 24 chunks of 1 to 64 bytes, then the rest at once.
    std::size_t length = text.size() - at;
    if (chunk < 24) length = std::min<std::size_t>(length, 1 + random() % 64);
    sent = ::send(sockets[0], text.data() + at, length, MSG_DONTWAIT | MSG_NOSIGNAL) ==
           static_cast<ssize_t>(length);
    at += length;
  }
  ::close(sockets[0]);
  std::optional<parse_result> result;
  if (sent) {
    entry_reader in(sockets[1], "input", format, types);
    result = parse_all(in);
  }
  ::close(sockets[1]);
  return result;
}

std::string describe(const parse_result& result) {
  std::string out = fmt::format("{} entries", result.entries.size());
  if (result.failure)
    out += fmt::format(", then error {}: {}", static_cast<int>(result.failure->first),
                       result.failure->second);
  return out;
}

void check_same(const parse_result& a, const parse_result& b, const std::string& what) {
  if (a.entries == b.entries && a.failure == b.failure) return;
  std::string detail;
  for (std::size_t i = 0; i < std::min(a.entries.size(), b.entries.size()); ++i) {
    if (a.entries[i] != b.entries[i]) {
      detail = fmt::format("; entry {} differs: key {} value {} vs key {} value {}", i,
                           hex(a.entries[i].first), hex(a.entries[i].second),
                           hex(b.entries[i].first), hex(b.entries[i].second));
      break;
    }
  }
  fail(what + ": " + describe(a) + " vs " + describe(b) + detail);
}

// The reference for is_valid_utf8: RFC 3629, byte by byte.
bool reference_utf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  auto continuation = [&](std::size_t at, unsigned low = 0x80, unsigned high = 0xBF) {
    return at < n && p[at] >= low && p[at] <= high;
  };
  while (i < n) {
    const unsigned c = p[i];
    if (c < 0x80) {
      i += 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      if (!continuation(i + 1)) return false;
      i += 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      const unsigned low = c == 0xE0 ? 0xA0 : 0x80;
      const unsigned high = c == 0xED ? 0x9F : 0xBF;
      if (!continuation(i + 1, low, high) || !continuation(i + 2)) return false;
      i += 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      const unsigned low = c == 0xF0 ? 0x90 : 0x80;
      const unsigned high = c == 0xF4 ? 0x8F : 0xBF;
      if (!continuation(i + 1, low, high) || !continuation(i + 2) || !continuation(i + 3))
        return false;
      i += 4;
    } else {
      return false;
    }
  }
  return true;
}

void check_escapes(std::string_view bytes) {
  BBTREE_FUZZ_CHECK(is_valid_utf8(bytes) == reference_utf8(bytes),
                    "is_valid_utf8() of " + hex(bytes));
  std::string escaped;
  append_escaped(escaped, bytes);
  BBTREE_FUZZ_CHECK(is_valid_utf8(escaped), "escaped text is not UTF-8: " + hex(escaped));
  for (const char c : escaped) {
    const auto byte = static_cast<unsigned char>(c);
    BBTREE_FUZZ_CHECK(byte >= 0x20 && byte != 0x7F,
                      "escaped text holds a control byte: " + hex(escaped));
  }
  // Backslash, the C0 controls and DEL are escaped; other UTF-8 is itself.
  const bool plain = std::none_of(bytes.begin(), bytes.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7F || byte == '\\';
  });
  if (plain && is_valid_utf8(bytes)) {
    BBTREE_FUZZ_CHECK(escaped == bytes,
                      "the text of a plain UTF-8 string is not the string: " + hex(bytes));
  }
  try {
    BBTREE_FUZZ_CHECK(unescape(escaped) == bytes,
                      "unescape(append_escaped(x)) != x for x = " + hex(bytes));
  } catch (const error& e) {
    fail("unescape() refuses what append_escaped() wrote: " + hex(escaped) + ": " + e.what());
  }
  // Whatever unescapes, escapes and unescapes back to itself.
  std::string decoded;
  try {
    decoded = unescape(bytes);
  } catch (const error& e) {
    BBTREE_FUZZ_CHECK(e.code() == errc::invalid_argument,
                      std::string("unescape() threw ") + e.what());
    return;
  }
  std::string again;
  append_escaped(again, decoded);
  BBTREE_FUZZ_CHECK(unescape(again) == decoded, "unescape round trip of " + hex(bytes));
}

bool has_non_utf8(const entry_list& entries, const entry_types& types) {
  for (const auto& [key, value] : entries) {
    if (types.keys == key_kind::bytes && !is_valid_utf8(key)) return true;
    if (types.values == value_kind::bytes && !is_valid_utf8(value)) return true;
  }
  return false;
}

void check_round_trip(const entry_list& entries, text_format format, const entry_types& types) {
  std::ostringstream out;
  const std::string what =
      fmt::format("{} entries written as {}", entries.size(), to_string(format));
  try {
    entry_writer writer(out, "output", format, types);
    for (const auto& [key, value] : entries) writer.write(key, value);
    writer.flush();
  } catch (const error& e) {
    BBTREE_FUZZ_CHECK(format == text_format::jsonl && e.code() == errc::invalid_argument &&
                          has_non_utf8(entries, types),
                      what + ": the writer refused them: " + e.what());
    return;
  }
  BBTREE_FUZZ_CHECK(!(format == text_format::jsonl && has_non_utf8(entries, types)),
                    what + ": jsonl wrote a byte string that is not UTF-8");
  const std::string text = out.str();
  const parse_result back = parse_text(text, format, types);
  check_same({entries, std::nullopt}, back, what + " and read back");
}

void check_fields(const entry_list& entries, const entry_types& types) {
  std::string storage;
  for (std::size_t i = 0; i < entries.size() && i < 64; ++i) {
    const auto& [key, value] = entries[i];
    const std::string key_string = key_text(key, types);
    try {
      BBTREE_FUZZ_CHECK(parse_key_text(key_string, types, storage) == key,
                        "the key text " + hex(key_string));
      std::string value_string;
      append_value_text(value_string, value, types);
      BBTREE_FUZZ_CHECK(parse_value_text(value_string, types, storage) == value,
                        "the value text " + hex(value_string));
    } catch (const error& e) {
      fail(fmt::format("a field written by append_*_text does not parse: {}", e.what()));
    }
  }
}

}  // namespace

int run_text_parsers(bytes_view input) {
  if (input.size() < 3) return 0;
  static constexpr text_format formats[] = {text_format::tsv, text_format::csv, text_format::jsonl,
                                            text_format::bin};
  static constexpr key_kind keys[] = {key_kind::u64, key_kind::i64, key_kind::bytes,
                                      key_kind::fixed};
  static constexpr value_kind values[] = {value_kind::none, value_kind::u64, value_kind::bytes,
                                          value_kind::fixed};
  const text_format format = formats[input[0] & 3];
  entry_types types;
  types.keys = keys[(input[0] >> 2) & 3];
  types.values = values[(input[0] >> 4) & 3];
  types.key_size = types.keys == key_kind::fixed ? 1u + (input[1] & 15u) : 0u;
  types.value_size = types.values == value_kind::fixed ? 1u + (input[1] >> 4) : 0u;
  const bool chunked = (input[0] & 0x40) != 0;
  const std::string_view text(reinterpret_cast<const char*>(input.data()) + 3, input.size() - 3);

  const parse_result parsed = parse_text(text, format, types);
  if (parsed.failure) {
    const errc code = parsed.failure->first;
    BBTREE_FUZZ_CHECK(code == errc::invalid_argument || code == errc::key_too_long ||
                          code == errc::value_too_long,
                      "a parse error of an unexpected kind: " + parsed.failure->second);
    BBTREE_FUZZ_CHECK(parsed.failure->second.starts_with("input:"),
                      "a parse error that does not name its position: " + parsed.failure->second);
  }
  for (const auto& [key, value] : parsed.entries) {
    const std::size_t key_size =
        types.keys == key_kind::bytes ? 0 : format::encoded_key_size(types.keys, types.key_size);
    BBTREE_FUZZ_CHECK(key_size == 0 || key.size() == key_size,
                      "a parsed key of the wrong size: " + hex(key));
    BBTREE_FUZZ_CHECK(key.size() <= format::max_key_length, "a parsed key over the limit");
    BBTREE_FUZZ_CHECK(types.values != value_kind::none || value.empty(),
                      "a value in a file without values");
    BBTREE_FUZZ_CHECK(types.values != value_kind::u64 || value.size() == 8,
                      "a u64 value not of 8 bytes");
    BBTREE_FUZZ_CHECK(types.values != value_kind::fixed || value.size() == types.value_size,
                      "a fixed value of the wrong size");
  }
  if (chunked) {
    if (const auto in_chunks = parse_chunked(text, format, types, input[2])) {
      check_same(parsed, *in_chunks, "read at once vs read in chunks");
    }
  }
  for (const text_format other : formats) check_round_trip(parsed.entries, other, types);
  check_fields(parsed.entries, types);
  check_escapes(text.substr(0, 4096));
  return 0;
}

}  // namespace bbtree::fuzz
