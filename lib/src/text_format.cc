#include <bbtree/builder.h>
#include <bbtree/key_codec.h>
#include <bbtree/text_format.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <istream>
#include <limits>
#include <ostream>
#include <system_error>
#include <utility>

#include <unistd.h>

namespace bbtree {

namespace detail {
namespace {

enum class field_role { key, value };

const char* role_name(field_role role) noexcept {
  return role == field_role::key ? "key" : "value";
}

[[noreturn]] void fail(errc code, const std::string& message) { throw error(code, message); }

constexpr char hex_digits[] = "0123456789abcdef";

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The length of the well-formed UTF-8 sequence at `p`, or 0 if there is none
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
std::size_t utf8_sequence_length(const unsigned char* p, std::size_t available) noexcept {
  const unsigned char lead = p[0];
  if (lead < 0x80) return 1;
  auto continuation = [&](std::size_t i) { return i < available && (p[i] & 0xC0) == 0x80; };
  if (lead >= 0xC2 && lead <= 0xDF) return continuation(1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    if (!continuation(1) || !continuation(2)) return 0;
    if (lead == 0xE0 && p[1] < 0xA0) return 0;  // overlong
    if (lead == 0xED && p[1] > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (lead == 0xF0 && p[1] < 0x90) return 0;  // overlong
    if (lead == 0xF4 && p[1] > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

void append_hex_byte(std::string& out, unsigned char byte) {
  const char text[4] = {'\\', 'x', hex_digits[byte >> 4], hex_digits[byte & 15]};
  out.append(text, 4);
}

// Input text quoted for a message: control bytes and bytes that are not
// UTF-8 shown as \xHH, long text cut short.  Backslashes stay as typed, so
// that the message shows what the user wrote.
std::string quote(std::string_view text) {
  constexpr std::size_t shown = 80;
  std::string quoted = "\"";
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t limit = std::min(text.size(), shown);
  for (std::size_t i = 0; i < limit;) {
    const unsigned char c = bytes[i];
    if (c < 0x20 || c == 0x7F) {
      append_hex_byte(quoted, c);
      ++i;
      continue;
    }
    const std::size_t length = utf8_sequence_length(bytes + i, text.size() - i);
    if (length == 0) {
      append_hex_byte(quoted, c);
      ++i;
    } else {
      quoted.append(text.data() + i, length);
      i += length;
    }
  }
  quoted += '"';
  if (text.size() > shown) quoted += fmt::format(" (cut short; {} bytes in all)", text.size());
  return quoted;
}

[[noreturn]] void fail_raw_cr(field_role role) {
  fail(errc::invalid_argument,
       fmt::format("raw carriage return in {}: a CR byte is written \\r (CRLF line ends are "
                   "not accepted; convert the file with dos2unix)",
                   role_name(role)));
}

// Decodes backslash escapes.  Returns `text` itself when it holds none, else
// the decoded bytes in `storage`.  Errors call the text `what`.
std::string_view unescape_field(std::string_view text, std::string& storage,
                                std::string_view what) {
  const char* backslash = static_cast<const char*>(std::memchr(text.data(), '\\', text.size()));
  if (!backslash) return text;
  storage.assign(text.data(), backslash);
  const char* p = backslash;
  const char* end = text.data() + text.size();
  while (p < end) {
    if (*p != '\\') {
      const char* next = static_cast<const char*>(std::memchr(p, '\\', end - p));
      if (!next) next = end;
      storage.append(p, next);
      p = next;
      continue;
    }
    if (p + 1 == end) {
      fail(errc::invalid_argument,
           fmt::format("incomplete escape at the end of {} {}", what, quote(text)));
    }
    switch (p[1]) {
      case '\\':
        storage += '\\';
        p += 2;
        break;
      case 't':
        storage += '\t';
        p += 2;
        break;
      case 'r':
        storage += '\r';
        p += 2;
        break;
      case 'n':
        storage += '\n';
        p += 2;
        break;
      case 'x': {
        const int high = p + 2 < end ? hex_value(p[2]) : -1;
        const int low = p + 3 < end ? hex_value(p[3]) : -1;
        if (high < 0 || low < 0) {
          fail(errc::invalid_argument,
               fmt::format("bad escape {} in {} {}: \\x takes two hex digits",
                           quote(std::string_view(p, std::min<std::size_t>(4, end - p))), what,
                           quote(text)));
        }
        storage += static_cast<char>(high * 16 + low);
        p += 4;
        break;
      }
      default:
        fail(errc::invalid_argument,
             fmt::format("bad escape {} in {} {}: the escapes are \\\\ \\t \\r \\n \\xHH",
                         quote(std::string_view(p, 2)), what, quote(text)));
    }
  }
  return storage;
}

// The value of a decimal digit, or something above 9 for any other byte.
constexpr unsigned digit_value(char c) noexcept {
  return static_cast<unsigned>(static_cast<unsigned char>(c)) - unsigned{'0'};
}

// Up to 19 digits cannot overflow a u64, so only the 20th needs a check;
// leading zeros do not count.
bool parse_decimal(std::string_view digits, std::uint64_t& result) noexcept {
  if (digits.empty()) return false;
  std::size_t position = 0;
  while (position < digits.size() && digits[position] == '0') ++position;
  const std::size_t significant = digits.size() - position;
  if (significant > 20) return false;
  const std::size_t unchecked_end = position + std::min<std::size_t>(significant, 19);
  std::uint64_t value = 0;
  for (; position < unchecked_end; ++position) {
    const unsigned digit = digit_value(digits[position]);
    if (digit > 9) return false;
    value = value * 10 + digit;
  }
  if (position < digits.size()) {
    const unsigned digit = digit_value(digits[position]);
    if (digit > 9) return false;
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return false;
    value = value * 10 + digit;
  }
  result = value;
  return true;
}

// Reads the decimal number at `p`, advancing `p` past its digits, for the
// tsv fast path: the caller knows that a non-digit (a line's LF) follows
// within the buffer.  False for no digits and for 20 digits or more, which
// the checked path parses.  (A loop over eight bytes at a time measured no
// faster on numbers of ten digits or fewer.)
[[gnu::always_inline]] inline bool scan_short_decimal(const char*& p,
                                                      std::uint64_t& result) noexcept {
  const char* start = p;
  std::uint64_t value = 0;
  for (unsigned digit; (digit = digit_value(*p)) <= 9; ++p) value = value * 10 + digit;
  const auto digits = p - start;
  if (digits == 0 || digits > 19) return false;
  result = value;
  return true;
}

bool all_digits(std::string_view text) noexcept {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// `raw_cr_allowed`: whether a CR in the text is data (a quoted csv field, a
// decoded JSON string), so that the tsv advice about CRLF files does not fit.
[[noreturn]] void fail_number(std::string_view text, field_role role, bool raw_cr_allowed,
                              const char* type, const char* article) {
  if (!raw_cr_allowed && text.find('\r') != std::string_view::npos) fail_raw_cr(role);
  const std::string_view magnitude = !text.empty() && text[0] == '-' ? text.substr(1) : text;
  if (all_digits(magnitude)) {
    fail(errc::invalid_argument,
         fmt::format("{} {} is out of the {} range", role_name(role), quote(text), type));
  }
  fail(errc::invalid_argument,
       fmt::format("{} {} is not {} {}", role_name(role), quote(text), article, type));
}

std::uint64_t parse_u64(std::string_view text, field_role role, bool raw_cr_allowed) {
  std::uint64_t value;
  if (!parse_decimal(text, value)) fail_number(text, role, raw_cr_allowed, "u64", "a");
  return value;
}

std::int64_t parse_i64(std::string_view text, field_role role, bool raw_cr_allowed) {
  const bool negative = !text.empty() && text[0] == '-';
  std::uint64_t magnitude;
  if (!parse_decimal(negative ? text.substr(1) : text, magnitude)) {
    fail_number(text, role, raw_cr_allowed, "i64", "an");
  }
  constexpr auto limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (negative) {
    if (magnitude > limit + 1) fail_number(text, role, raw_cr_allowed, "i64", "an");
    return static_cast<std::int64_t>(0 - magnitude);
  }
  if (magnitude > limit) fail_number(text, role, raw_cr_allowed, "i64", "an");
  return static_cast<std::int64_t>(magnitude);
}

// Decodes exactly `size` bytes of hex into `storage`.
std::string_view parse_hex(std::string_view text, std::uint32_t size, field_role role,
                           bool raw_cr_allowed, std::string& storage) {
  const bool right_length = text.size() == std::size_t{size} * 2;
  if (right_length) {
    storage.resize(size);
    for (std::uint32_t i = 0; i < size; ++i) {
      const int high = hex_value(text[2 * i]);
      const int low = hex_value(text[2 * i + 1]);
      if (high < 0 || low < 0) break;
      storage[i] = static_cast<char>(high * 16 + low);
      if (i + 1 == size) return storage;
    }
  }
  if (!raw_cr_allowed && text.find('\r') != std::string_view::npos) fail_raw_cr(role);
  const bool all_hex =
      std::all_of(text.begin(), text.end(), [](char c) { return hex_value(c) >= 0; });
  const std::string problem = fmt::format("{} {} is not {} bytes in hex ({} hex digits)",
                                          role_name(role), quote(text), size, 2 * size);
  if (all_hex && !right_length) {
    fail(role == field_role::key ? errc::key_too_long : errc::value_too_long, problem);
  }
  fail(errc::invalid_argument, problem);
}

void check_bytes_length(std::size_t length, field_role role) {
  if (role == field_role::key && length > format::max_key_length) {
    fail(errc::key_too_long, fmt::format("key is {} bytes, over the limit of {} bytes", length,
                                         format::max_key_length));
  }
  if (role == field_role::value && length > format::max_value_length) {
    fail(errc::value_too_long, fmt::format("value is {} bytes, over the limit of {} bytes", length,
                                           format::max_value_length));
  }
}

// Parses one tsv or csv field into its encoded form.
std::string_view parse_field(std::string_view text, field_role role, const entry_types& types,
                             std::string& storage, bool raw_cr_allowed) {
  if (role == field_role::key) {
    switch (types.keys) {
      case key_kind::u64: {
        storage.resize(8);
        format::encode_u64_key(parse_u64(text, role, raw_cr_allowed),
                               reinterpret_cast<unsigned char*>(&storage[0]));
        return storage;
      }
      case key_kind::i64: {
        storage.resize(8);
        format::encode_i64_key(parse_i64(text, role, raw_cr_allowed),
                               reinterpret_cast<unsigned char*>(&storage[0]));
        return storage;
      }
      case key_kind::fixed:
        return parse_hex(text, types.key_size, role, raw_cr_allowed, storage);
      case key_kind::bytes:
        break;
    }
  } else {
    switch (types.values) {
      case value_kind::none:
        return {};
      case value_kind::u64: {
        storage.resize(8);
        format::store_le(&storage[0], parse_u64(text, role, raw_cr_allowed));
        return storage;
      }
      case value_kind::fixed:
        return parse_hex(text, types.value_size, role, raw_cr_allowed, storage);
      case value_kind::bytes:
        break;
    }
  }
  if (!raw_cr_allowed && std::memchr(text.data(), '\r', text.size())) fail_raw_cr(role);
  const std::string_view bytes = unescape_field(text, storage, role_name(role));
  check_bytes_length(bytes.size(), role);
  return bytes;
}

void append_decimal(std::string& out, std::uint64_t value) {
  char text[24];
  const auto result = std::to_chars(text, text + sizeof(text), value);
  out.append(text, result.ptr);
}

void append_signed_decimal(std::string& out, std::int64_t value) {
  char text[24];
  const auto result = std::to_chars(text, text + sizeof(text), value);
  out.append(text, result.ptr);
}

void append_hex(std::string& out, std::string_view bytes) {
  const std::size_t start = out.size();
  out.resize(start + 2 * bytes.size());
  char* p = &out[start];
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    *p++ = hex_digits[byte >> 4];
    *p++ = hex_digits[byte & 15];
  }
}

// Bytes that the text formats never write raw: control bytes, DEL and the
// backslash; bytes from 0x80 up are written raw only as part of valid UTF-8.
constexpr bool is_plain_ascii(unsigned char c) noexcept {
  return c >= 0x20 && c < 0x7F && c != '\\';
}

void append_escaped_bytes(std::string& out, std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t size = bytes.size();
  std::size_t i = 0;
  while (i < size) {
    std::size_t run = i;
    while (run < size && is_plain_ascii(p[run])) ++run;
    out.append(bytes.data() + i, run - i);
    i = run;
    if (i == size) break;
    const unsigned char c = p[i];
    switch (c) {
      case '\\':
        out.append("\\\\", 2);
        ++i;
        continue;
      case '\t':
        out.append("\\t", 2);
        ++i;
        continue;
      case '\r':
        out.append("\\r", 2);
        ++i;
        continue;
      case '\n':
        out.append("\\n", 2);
        ++i;
        continue;
      default:
        break;
    }
    if (c >= 0x80) {
      const std::size_t length = utf8_sequence_length(p + i, size - i);
      if (length != 0) {
        out.append(bytes.data() + i, length);
        i += length;
        continue;
      }
    }
    append_hex_byte(out, c);
    ++i;
  }
}

// The characters of a JSON string for `bytes`, which are valid UTF-8, with
// the escapes JSON requires: no quotes around them.
void append_json_characters(std::string& out, std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t i = 0;
  while (i < bytes.size()) {
    std::size_t run = i;
    while (run < bytes.size() && p[run] >= 0x20 && p[run] != '"' && p[run] != '\\' &&
           p[run] != 0x7F) {
      ++run;
    }
    out.append(bytes.data() + i, run - i);
    i = run;
    if (i == bytes.size()) break;
    const unsigned char c = p[i++];
    switch (c) {
      case '"':
        out.append("\\\"", 2);
        break;
      case '\\':
        out.append("\\\\", 2);
        break;
      case '\n':
        out.append("\\n", 2);
        break;
      case '\r':
        out.append("\\r", 2);
        break;
      case '\t':
        out.append("\\t", 2);
        break;
      case '\b':
        out.append("\\b", 2);
        break;
      case '\f':
        out.append("\\f", 2);
        break;
      default: {
        const char text[6] = {'\\', 'u', '0', '0', hex_digits[c >> 4], hex_digits[c & 15]};
        out.append(text, 6);
      }
    }
  }
}

// JSON strings hold Unicode text, so a byte string goes into one only if it
// is UTF-8.
void append_json_string(std::string& out, std::string_view bytes, field_role role) {
  if (!is_valid_utf8(bytes)) {
    std::string shown;
    append_escaped_bytes(shown, bytes.substr(0, 80));
    fail(errc::invalid_argument,
         fmt::format("{} \"{}\" is not valid UTF-8, which JSON strings cannot hold: use the tsv "
                     "or bin format",
                     role_name(role), shown));
  }
  out += '"';
  append_json_characters(out, bytes);
  out += '"';
}

void append_json_key(std::string& out, std::string_view key, const entry_types& types) {
  switch (types.keys) {
    case key_kind::u64:
      append_decimal(out, decode_u64_key(key));
      return;
    case key_kind::i64:
      append_signed_decimal(out, decode_i64_key(key));
      return;
    case key_kind::fixed:
      out += '"';
      append_hex(out, key);
      out += '"';
      return;
    case key_kind::bytes:
      append_json_string(out, key, field_role::key);
      return;
  }
}

void append_json_value(std::string& out, std::string_view value, const entry_types& types) {
  switch (types.values) {
    case value_kind::none:
      out.append("null");
      return;
    case value_kind::u64:
      append_decimal(out, decode_u64_value(value));
      return;
    case value_kind::fixed:
      out += '"';
      append_hex(out, value);
      out += '"';
      return;
    case value_kind::bytes:
      append_json_string(out, value, field_role::value);
      return;
  }
}

void append_utf8(std::string& out, std::uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

// One line of jsonl: {"key": ..., "value": ...} with any JSON whitespace.
class jsonl_line {
 public:
  jsonl_line(std::string_view line, const entry_types& types, std::string& key_storage,
             std::string& value_storage, std::string& name_storage)
      : begin_(line.data()),
        p_(line.data()),
        end_(line.data() + line.size()),
        types_(types),
        key_storage_(key_storage),
        value_storage_(value_storage),
        name_storage_(name_storage) {}

  entry_view parse() {
    skip_whitespace();
    if (p_ == end_) syntax_error("empty line: expected a JSON object");
    expect('{', "expected '{' to start a JSON object");
    skip_whitespace();
    entry_view entry;
    bool have_key = false;
    bool have_value = false;
    if (p_ < end_ && *p_ == '}') {
      ++p_;
    } else {
      for (;;) {
        if (p_ == end_ || *p_ != '"') syntax_error("expected a field name in double quotes");
        const std::string_view name = read_string(name_storage_, "field name");
        skip_whitespace();
        expect(':', "expected ':' after the field name");
        skip_whitespace();
        if (name == "key") {
          if (have_key) fail(errc::invalid_argument, "duplicate field \"key\"");
          have_key = true;
          entry.key = read_key();
        } else if (name == "value") {
          if (have_value) fail(errc::invalid_argument, "duplicate field \"value\"");
          have_value = true;
          entry.value = read_value();
        } else {
          std::string shown;
          append_escaped_bytes(shown, name);
          fail(errc::invalid_argument,
               fmt::format("unknown field \"{}\": an object has \"key\" and \"value\"", shown));
        }
        skip_whitespace();
        if (p_ < end_ && *p_ == ',') {
          ++p_;
          skip_whitespace();
          continue;
        }
        expect('}', "expected ',' or '}' after a field");
        break;
      }
    }
    skip_whitespace();
    if (p_ != end_) syntax_error("unexpected text after the JSON object");
    if (!have_key) fail(errc::invalid_argument, "missing field \"key\"");
    if (types_.values != value_kind::none && !have_value_) {
      fail(errc::invalid_argument, "missing field \"value\"");
    }
    return entry;
  }

 private:
  [[noreturn]] void syntax_error(const char* what) {
    fail(errc::invalid_argument, fmt::format("{} (column {})", what, p_ - begin_ + 1));
  }

  void skip_whitespace() noexcept {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }

  void expect(char c, const char* what) {
    if (p_ == end_ || *p_ != c) syntax_error(what);
    ++p_;
  }

  std::uint32_t read_hex4() {
    if (end_ - p_ < 4) syntax_error("\\u takes four hex digits");
    std::uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const int digit = hex_value(p_[i]);
      if (digit < 0) syntax_error("\\u takes four hex digits");
      value = value * 16 + static_cast<std::uint32_t>(digit);
    }
    p_ += 4;
    return value;
  }

  // Reads a JSON string starting at its opening quote.  Returns a view of
  // the line when the string has no escapes, else the decoded text in
  // `storage`.
  std::string_view read_string(std::string& storage, const char* what) {
    ++p_;
    const char* start = p_;
    while (p_ < end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        const std::string_view text(start, p_ - start);
        ++p_;
        return text;
      }
      if (c == '\\') break;
      step_raw_byte(c, what);
    }
    storage.assign(start, p_);
    while (p_ < end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return storage;
      }
      if (c != '\\') {
        const char* byte_start = p_;
        step_raw_byte(c, what);
        storage.append(byte_start, p_);
        continue;
      }
      if (p_ + 1 == end_) break;
      const char escape = p_[1];
      p_ += 2;
      switch (escape) {
        case '"':
          storage += '"';
          break;
        case '\\':
          storage += '\\';
          break;
        case '/':
          storage += '/';
          break;
        case 'b':
          storage += '\b';
          break;
        case 'f':
          storage += '\f';
          break;
        case 'n':
          storage += '\n';
          break;
        case 'r':
          storage += '\r';
          break;
        case 't':
          storage += '\t';
          break;
        case 'u': {
          std::uint32_t code_point = read_hex4();
          if (code_point >= 0xDC00 && code_point <= 0xDFFF) {
            syntax_error("a low surrogate \\u escape without a high one before it");
          }
          if (code_point >= 0xD800 && code_point <= 0xDBFF) {
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') {
              syntax_error("a high surrogate \\u escape without a low one after it");
            }
            p_ += 2;
            const std::uint32_t low = read_hex4();
            if (low < 0xDC00 || low > 0xDFFF) {
              syntax_error("a high surrogate \\u escape without a low one after it");
            }
            code_point = 0x10000 + ((code_point - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(storage, code_point);
          break;
        }
        default:
          p_ -= 2;
          syntax_error("bad escape in a JSON string");
      }
    }
    syntax_error("unterminated JSON string");
  }

  // Steps over one unescaped character of a JSON string, checking it.
  void step_raw_byte(unsigned char c, const char* what) {
    if (c < 0x20) syntax_error("a control character in a JSON string must be escaped");
    if (c < 0x80) {
      ++p_;
      return;
    }
    const std::size_t length =
        utf8_sequence_length(reinterpret_cast<const unsigned char*>(p_), end_ - p_);
    if (length == 0) {
      fail(errc::invalid_argument,
           fmt::format("{} is not valid UTF-8 (column {}): JSON text must be UTF-8; use the tsv "
                       "or bin format for byte strings that are not",
                       what, p_ - begin_ + 1));
    }
    p_ += length;
  }

  // Reads an integer JSON number: no fraction, no exponent; a sign and
  // digits only, so never a CR (its parse is told so).
  std::string_view read_integer_token(field_role role) {
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    const char* digits = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) {
      fail(errc::invalid_argument,
           fmt::format("{} must be an integer: fractions and exponents are not accepted (column "
                       "{})",
                       role_name(role), start - begin_ + 1));
    }
    if (p_ == digits) {
      p_ = start;
      if (p_ < end_ && *p_ == '"') {
        fail(errc::invalid_argument,
             fmt::format("{} must be a JSON number, not a string (column {})", role_name(role),
                         p_ - begin_ + 1));
      }
      fail(errc::invalid_argument,
           fmt::format("{} must be a JSON number (column {})", role_name(role), p_ - begin_ + 1));
    }
    if (*digits == '0' && p_ - digits > 1) {
      p_ = start;
      syntax_error("a JSON number has no leading zeros");
    }
    return {start, static_cast<std::size_t>(p_ - start)};
  }

  std::string_view read_hex_string(std::uint32_t size, field_role role, std::string& storage) {
    if (p_ == end_ || *p_ != '"') {
      fail(errc::invalid_argument,
           fmt::format("{} must be a JSON string of {} hex digits (column {})", role_name(role),
                       2 * size, p_ - begin_ + 1));
    }
    // A CR in the decoded string came from the escape \r, never raw.
    const std::string_view text = read_string(name_storage_, role_name(role));
    return parse_hex(text, size, role, true, storage);
  }

  std::string_view read_byte_string(field_role role, std::string& storage) {
    if (p_ == end_ || *p_ != '"') {
      fail(errc::invalid_argument,
           fmt::format("{} must be a JSON string (column {})", role_name(role), p_ - begin_ + 1));
    }
    const std::string_view bytes = read_string(storage, role_name(role));
    check_bytes_length(bytes.size(), role);
    return bytes;
  }

  std::string_view read_key() {
    switch (types_.keys) {
      case key_kind::u64: {
        key_storage_.resize(8);
        format::encode_u64_key(
            parse_u64(read_integer_token(field_role::key), field_role::key, true),
            reinterpret_cast<unsigned char*>(&key_storage_[0]));
        return key_storage_;
      }
      case key_kind::i64: {
        key_storage_.resize(8);
        format::encode_i64_key(
            parse_i64(read_integer_token(field_role::key), field_role::key, true),
            reinterpret_cast<unsigned char*>(&key_storage_[0]));
        return key_storage_;
      }
      case key_kind::fixed:
        return read_hex_string(types_.key_size, field_role::key, key_storage_);
      case key_kind::bytes:
        return read_byte_string(field_role::key, key_storage_);
    }
    return {};
  }

  bool at_null() const noexcept { return end_ - p_ >= 4 && std::string_view(p_, 4) == "null"; }

  std::string_view read_value() {
    if (at_null()) {
      if (types_.values != value_kind::none) {
        fail(errc::invalid_argument, "value is null, but this file has values");
      }
      p_ += 4;
      return {};
    }
    have_value_ = true;
    switch (types_.values) {
      case value_kind::none:
        fail(errc::invalid_argument,
             fmt::format("this file has no values, so \"value\" must be null or absent (column "
                         "{})",
                         p_ - begin_ + 1));
      case value_kind::u64: {
        value_storage_.resize(8);
        format::store_le(&value_storage_[0],
                         parse_u64(read_integer_token(field_role::value), field_role::value, true));
        return value_storage_;
      }
      case value_kind::fixed:
        return read_hex_string(types_.value_size, field_role::value, value_storage_);
      case value_kind::bytes:
        return read_byte_string(field_role::value, value_storage_);
    }
    return {};
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  const entry_types& types_;
  std::string& key_storage_;
  std::string& value_storage_;
  std::string& name_storage_;
  bool have_value_ = false;  // a non-null value
};

}  // namespace

// Where input bytes come from: a file descriptor or a stream.
class byte_source {
 public:
  explicit byte_source(int fd) noexcept : fd_(fd) {}
  explicit byte_source(std::istream& in) noexcept : stream_(&in) {}

  // Reads up to `capacity` bytes; 0 only at the end of the input.
  std::size_t read(char* out, std::size_t capacity, const std::string& name) {
    if (stream_) {
      stream_->read(out, static_cast<std::streamsize>(capacity));
      const auto count = static_cast<std::size_t>(stream_->gcount());
      if (count == 0 && stream_->bad()) fail(errc::io_error, name + ": read failed");
      return count;
    }
    for (;;) {
      const ssize_t count = ::read(fd_, out, capacity);
      if (count >= 0) return static_cast<std::size_t>(count);
      if (errno == EINTR) continue;
      fail(errc::io_error, fmt::format("{}: read failed: {}", name, std::strerror(errno)));
    }
  }

 private:
  int fd_ = -1;
  std::istream* stream_ = nullptr;
};

class entry_parser {
 public:
  entry_parser(byte_source source, std::string name, text_format format, const entry_types& types)
      : source_(source),
        name_(std::move(name)),
        format_(format),
        types_(types),
        buffer_(new char[initial_capacity]),
        capacity_(initial_capacity),
        integer_lines_(format == text_format::tsv && types.keys == key_kind::u64 &&
                       (types.values == value_kind::u64 || types.values == value_kind::none)) {}

  std::optional<entry_view> next() {
    try {
      switch (format_) {
        case text_format::tsv:
          return next_tsv();
        case text_format::csv:
          return next_csv();
        case text_format::jsonl:
          return next_jsonl();
        case text_format::bin:
          return next_bin();
      }
    } catch (const input_error&) {
      throw;
    } catch (const error& e) {
      if (e.code() == errc::io_error) throw;
      throw input_error(e.code(), position() + ": " + e.what());
    }
    return std::nullopt;
  }

  std::uint64_t line() const noexcept { return line_; }
  std::uint64_t bytes_read() const noexcept { return consumed_; }
  const std::string& name() const noexcept { return name_; }

  std::string position() const {
    const std::string place = entry_reader::place(name_, format_, line_);
    return format_ == text_format::bin ? fmt::format("{} at byte {}", place, record_offset_)
                                       : place;
  }

 private:
  static constexpr std::size_t initial_capacity = std::size_t{1} << 20;
  static constexpr const char* unclosed_quote = "a quoted field is not closed";
  static constexpr const char* unclosed_quote_at_end =
      "a quoted field is not closed before the end of the input";

  // Moves the unread bytes to the front, grows the buffer if they fill it,
  // and reads more.  Sets eof_ when the input has no more.
  void refill() {
    const std::size_t unread = end_ - begin_;
    if (begin_ > 0) {
      std::memmove(buffer_.get(), buffer_.get() + begin_, unread);
      begin_ = 0;
      end_ = unread;
    }
    if (end_ == capacity_) {
      std::unique_ptr<char[]> larger(new char[capacity_ * 2]);
      std::memcpy(larger.get(), buffer_.get(), end_);
      buffer_ = std::move(larger);
      capacity_ *= 2;
    }
    const std::size_t count = source_.read(buffer_.get() + end_, capacity_ - end_, name_);
    if (count == 0) {
      eof_ = true;
    } else {
      end_ += count;
    }
    if (integer_lines_) {
      const auto* last_lf = static_cast<const char*>(::memrchr(buffer_.get(), '\n', end_));
      lines_end_ = last_lf ? static_cast<std::size_t>(last_lf - buffer_.get()) + 1 : 0;
    }
  }

  void start_record(std::size_t length, std::uint64_t lines) {
    record_offset_ = consumed_;
    consumed_ += length;
    begin_ += length;
    line_ = next_line_;
    next_line_ += lines;
  }

  // The next line without its LF; the last line of the input may lack one.
  bool next_line(std::string_view& line) {
    std::size_t scanned = 0;
    for (;;) {
      const char* start = buffer_.get() + begin_;
      const std::size_t available = end_ - begin_;
      const auto* lf =
          static_cast<const char*>(std::memchr(start + scanned, '\n', available - scanned));
      if (lf) {
        const auto length = static_cast<std::size_t>(lf - start);
        line = {start, length};
        start_record(length + 1, 1);
        return true;
      }
      scanned = available;
      if (eof_) {
        if (available == 0) return false;
        line = {start, available};
        start_record(available, 1);
        return true;
      }
      refill();
    }
  }

  static std::size_t count_quotes(const char* p, std::size_t length) noexcept {
    std::size_t quotes = 0;
    const char* end = p + length;
    while ((p = static_cast<const char*>(std::memchr(p, '"', end - p)))) {
      ++quotes;
      ++p;
    }
    return quotes;
  }

  // A record's first line that ends inside quotes: fails, naming the
  // record's line, if a stray quote in an unquoted field (or text after a
  // closing quote) is the reason, and returns if a quoted field is open.
  void check_stray_quote(std::string_view first_line) {
    line_ = next_line_;  // the record's line, which start_record sets later
    std::string_view fields[3];
    bool quoted[3];
    try {
      split_csv(first_line, fields, quoted);
    } catch (const error& e) {
      if (std::string_view(e.what()) != unclosed_quote) throw;
    }
  }

  // The next CSV record without its line end (LF or CRLF).  Line ends
  // inside quotes belong to the field; an even number of quotes before an
  // LF means it is outside them, since a doubled quote counts twice.
  bool next_csv_record(std::string_view& record) {
    std::size_t scanned = 0;
    std::size_t quotes = 0;
    std::uint64_t lines = 1;
    for (;;) {
      const char* start = buffer_.get() + begin_;
      const std::size_t available = end_ - begin_;
      const auto* lf =
          static_cast<const char*>(std::memchr(start + scanned, '\n', available - scanned));
      if (lf) {
        const auto length = static_cast<std::size_t>(lf - start);
        quotes += count_quotes(start + scanned, length - scanned);
        if (quotes % 2 == 0) {
          record = {start, length};
          start_record(length + 1, lines);
          if (!record.empty() && record.back() == '\r') record.remove_suffix(1);
          return true;
        }
        // An open quote at the end of the record's first line: a quoted
        // field that goes on, or a stray quote, which would make the rest
        // of the input one record held in memory.  The first line tells.
        if (lines == 1) check_stray_quote(std::string_view(start, length));
        ++lines;
        scanned = length + 1;
        continue;
      }
      quotes += count_quotes(start + scanned, available - scanned);
      scanned = available;
      if (eof_) {
        if (available == 0) return false;
        record = {start, available};
        start_record(available, lines);
        if (quotes % 2 != 0) fail(errc::invalid_argument, unclosed_quote_at_end);
        return true;
      }
      refill();
    }
  }

  // A tsv line of a u64 key and a u64 value (or none), the common case of
  // large imports, parsed in one pass over its bytes: no search for its LF
  // and TAB first, no copy.  Takes only lines known to end in the buffer and
  // numbers of at most 19 digits; leaves anything else (which may be
  // malformed) unread for next_tsv's checked path, which gives the messages.
  bool next_integer_line(entry_view& entry) {
    if (begin_ >= lines_end_) return false;  // its LF may not be in the buffer yet
    const char* start = buffer_.get() + begin_;
    const char* p = start;
    std::uint64_t key = 0;
    std::uint64_t value = 0;
    if (!scan_short_decimal(p, key)) return false;
    if (types_.values == value_kind::none) {
      if (*p != '\n') return false;
    } else {
      if (*p != '\t') return false;
      ++p;
      if (!scan_short_decimal(p, value) || *p != '\n') return false;
      format::store_le(integer_value_, value);
      entry.value = std::string_view(reinterpret_cast<const char*>(integer_value_), 8);
    }
    format::encode_u64_key(key, integer_key_);
    entry.key = std::string_view(reinterpret_cast<const char*>(integer_key_), 8);
    start_record(static_cast<std::size_t>(p - start) + 1, 1);
    return true;
  }

  std::optional<entry_view> next_tsv() {
    if (integer_lines_) {
      entry_view entry;
      if (next_integer_line(entry)) return entry;
    }
    std::string_view line;
    if (!next_line(line)) return std::nullopt;
    const char* tab = static_cast<const char*>(std::memchr(line.data(), '\t', line.size()));
    entry_view entry;
    if (types_.values == value_kind::none) {
      if (tab) {
        fail(errc::invalid_argument,
             "extra field: this file has no values, so a line holds a key alone");
      }
      entry.key = parse_field(line, field_role::key, types_, key_storage_, false);
      return entry;
    }
    if (!tab) fail(errc::invalid_argument, "missing value: expected KEY<TAB>VALUE");
    const auto key_length = static_cast<std::size_t>(tab - line.data());
    const std::string_view value_text = line.substr(key_length + 1);
    if (std::memchr(value_text.data(), '\t', value_text.size())) {
      fail(errc::invalid_argument, "extra field: expected KEY<TAB>VALUE, found a second TAB");
    }
    entry.key =
        parse_field(line.substr(0, key_length), field_role::key, types_, key_storage_, false);
    entry.value = parse_field(value_text, field_role::value, types_, value_storage_, false);
    return entry;
  }

  // Splits a CSV record into at most three fields (a third only to report
  // it), removing quotes.  Returns the number of fields.
  std::size_t split_csv(std::string_view record, std::string_view fields[3], bool quoted[3]) {
    std::size_t count = 0;
    std::size_t i = 0;
    for (;;) {
      if (count == 3) return count;
      if (i < record.size() && record[i] == '"') {
        std::string& storage = csv_storage_[count];
        storage.clear();
        ++i;
        for (;;) {
          const std::size_t close = record.find('"', i);
          if (close == std::string_view::npos) {
            fail(errc::invalid_argument, unclosed_quote);
          }
          storage.append(record.data() + i, close - i);
          if (close + 1 < record.size() && record[close + 1] == '"') {
            storage += '"';
            i = close + 2;
            continue;
          }
          i = close + 1;
          break;
        }
        fields[count] = storage;
        quoted[count] = true;
        ++count;
        if (i == record.size()) return count;
        if (record[i] != ',') {
          fail(errc::invalid_argument,
               fmt::format("unexpected text after a closing quote (field {})", count));
        }
        ++i;
        continue;
      }
      std::size_t comma = record.find(',', i);
      if (comma == std::string_view::npos) comma = record.size();
      const std::string_view field = record.substr(i, comma - i);
      if (field.find('"') != std::string_view::npos) {
        fail(errc::invalid_argument,
             fmt::format("a quote inside an unquoted field (field {}): quote the whole field and "
                         "double the quotes in it",
                         count + 1));
      }
      fields[count] = field;
      quoted[count] = false;
      ++count;
      if (comma == record.size()) return count;
      i = comma + 1;
    }
  }

  std::optional<entry_view> next_csv() {
    std::string_view record;
    if (!next_csv_record(record)) return std::nullopt;
    std::string_view fields[3];
    bool quoted[3] = {false, false, false};
    const std::size_t count = split_csv(record, fields, quoted);
    const std::size_t expected = types_.values == value_kind::none ? 1 : 2;
    if (count != expected) {
      if (expected == 1) {
        fail(errc::invalid_argument,
             fmt::format("{}: this file has no values, so a record holds a key alone",
                         count > expected ? "extra field" : "missing field"));
      }
      fail(errc::invalid_argument, fmt::format("{}: expected 2 fields (key,value), found {}",
                                               count > expected ? "extra field" : "missing value",
                                               count > 2 ? "more" : "1"));
    }
    // CSV takes CRLF record ends (split off already), so the tsv advice to
    // convert CRLF files does not fit a CR left in an unquoted field.
    for (std::size_t i = 0; i < count; ++i) {
      if (!quoted[i] && fields[i].find('\r') != std::string_view::npos) {
        fail(errc::invalid_argument,
             fmt::format("raw carriage return in {}: csv takes a CR only at the end of a record "
                         "or inside a quoted field; elsewhere a CR byte is written \\r",
                         role_name(i == 0 ? field_role::key : field_role::value)));
      }
    }
    entry_view entry;
    entry.key = parse_field(fields[0], field_role::key, types_, key_storage_, quoted[0]);
    if (expected == 2) {
      entry.value = parse_field(fields[1], field_role::value, types_, value_storage_, quoted[1]);
    }
    return entry;
  }

  std::optional<entry_view> next_jsonl() {
    std::string_view line;
    if (!next_line(line)) return std::nullopt;
    jsonl_line parser(line, types_, key_storage_, value_storage_, name_storage_);
    return parser.parse();
  }

  // Makes `count` bytes from begin_ available; false if the input ends first.
  bool fill(std::size_t count) {
    while (end_ - begin_ < count) {
      if (eof_) return false;
      refill();
    }
    return true;
  }

  std::optional<entry_view> next_bin() {
    if (!fill(1)) return std::nullopt;
    record_offset_ = consumed_;
    line_ = next_line_++;
    const auto truncated = [&] { fail(errc::invalid_argument, "the input ends inside a record"); };
    std::size_t offset = 0;  // within the record
    const bool has_value = types_.values != value_kind::none;
    std::size_t key_length = 0;
    std::size_t value_length = 0;
    if (!fill(4)) truncated();
    key_length = format::load_le<std::uint32_t>(buffer_.get() + begin_);
    offset = 4;
    check_bin_length(key_length, field_role::key);
    if (!fill(offset + key_length)) truncated();
    offset += key_length;
    if (has_value) {
      if (!fill(offset + 4)) truncated();
      value_length = format::load_le<std::uint32_t>(buffer_.get() + begin_ + offset);
      check_bin_length(value_length, field_role::value);
      offset += 4;
      if (!fill(offset + value_length)) truncated();
    }
    const char* record = buffer_.get() + begin_;
    entry_view entry;
    entry.key = {record + 4, key_length};
    if (has_value) entry.value = {record + 4 + key_length + 4, value_length};
    begin_ += offset + value_length;
    consumed_ += offset + value_length;
    return entry;
  }

  void check_bin_length(std::size_t length, field_role role) const {
    const std::uint32_t fixed_size =
        role == field_role::key ? format::encoded_key_size(types_.keys, types_.key_size)
                                : format::encoded_value_size(types_.values, types_.value_size);
    const errc code = role == field_role::key ? errc::key_too_long : errc::value_too_long;
    if (fixed_size != 0 && length != fixed_size) {
      fail(code,
           fmt::format("{} length {} does not match the {} type, whose {}s are {} bytes",
                       role_name(role), length,
                       role == field_role::key ? key_type_name(types_) : value_type_name(types_),
                       role_name(role), fixed_size));
    }
    check_bytes_length(length, role);
  }

  byte_source source_;
  std::string name_;
  text_format format_;
  entry_types types_;
  std::unique_ptr<char[]> buffer_;
  std::size_t capacity_;
  std::size_t begin_ = 0;  // the first unread byte
  std::size_t end_ = 0;    // the end of the bytes read
  bool eof_ = false;
  // tsv of u64 keys and u64 values (or none): next_integer_line applies, to
  // the lines before lines_end_ (just past the buffer's last LF).
  bool integer_lines_;
  std::size_t lines_end_ = 0;
  unsigned char integer_key_[8] = {};
  unsigned char integer_value_[8] = {};
  std::uint64_t line_ = 0;       // of the last record
  std::uint64_t next_line_ = 1;  // of the next record
  std::uint64_t consumed_ = 0;   // bytes of the records returned
  std::uint64_t record_offset_ = 0;
  // Decoded fields, reused from entry to entry so that they stop allocating.
  std::string key_storage_;
  std::string value_storage_;
  std::string name_storage_;
  std::string csv_storage_[3];
};

// Where output bytes go: a file descriptor or a stream.
class entry_formatter {
 public:
  entry_formatter(int fd, std::string name, text_format format, const entry_types& types)
      : fd_(fd), name_(std::move(name)), format_(format), types_(types) {
    buffer_.reserve(flush_threshold + 4096);
  }
  entry_formatter(std::ostream& out, std::string name, text_format format, const entry_types& types)
      : stream_(&out), name_(std::move(name)), format_(format), types_(types) {
    buffer_.reserve(flush_threshold + 4096);
  }

  void write(std::string_view key, std::string_view value) {
    append_record([&] {
      const bool has_value = types_.values != value_kind::none;
      switch (format_) {
        case text_format::tsv:
          append_key_text(buffer_, key, types_);
          if (has_value) {
            buffer_ += '\t';
            append_value_text(buffer_, value, types_);
          }
          buffer_ += '\n';
          break;
        case text_format::csv: {
          const std::size_t start = buffer_.size();
          append_csv_key(key);
          if (has_value) {
            buffer_ += ',';
            append_csv_value(value);
          } else if (buffer_.size() == start) {
            // An empty key alone: a blank line, which CSV readers skip, would lose it.
            buffer_.append("\"\"");
          }
          buffer_ += '\n';
          break;
        }
        case text_format::jsonl:
          buffer_.append("{\"key\": ");
          append_json_key(buffer_, key, types_);
          if (has_value) {
            buffer_.append(", \"value\": ");
            append_json_value(buffer_, value, types_);
          }
          buffer_.append("}\n");
          break;
        case text_format::bin:
          append_bin_item(key);
          if (has_value) append_bin_item(value);
          break;
      }
    });
  }

  void write_key(std::string_view key) {
    append_record([&] {
      switch (format_) {
        case text_format::tsv:
          append_key_text(buffer_, key, types_);
          break;
        case text_format::csv:
          append_csv_key(key);
          break;
        case text_format::jsonl:
          buffer_.append("{\"key\": ");
          append_json_key(buffer_, key, types_);
          buffer_ += '}';
          break;
        case text_format::bin:
          refuse_bin();
      }
      buffer_ += '\n';
    });
  }

  void write_value(std::string_view value) {
    append_record([&] {
      switch (format_) {
        case text_format::tsv:
          append_value_text(buffer_, value, types_);
          break;
        case text_format::csv:
          append_csv_value(value);
          break;
        case text_format::jsonl:
          buffer_.append("{\"value\": ");
          append_json_value(buffer_, value, types_);
          buffer_ += '}';
          break;
        case text_format::bin:
          refuse_bin();
      }
      buffer_ += '\n';
    });
  }

  void write_missing(std::string_view key, std::string_view marker) {
    append_record([&] {
      switch (format_) {
        case text_format::tsv:
          append_key_text(buffer_, key, types_);
          buffer_ += '\t';
          append_escaped_bytes(buffer_, marker);
          break;
        case text_format::csv:
          append_csv_key(key);
          buffer_ += ',';
          append_csv_field(marker);
          break;
        case text_format::jsonl:
          buffer_.append("{\"key\": ");
          append_json_key(buffer_, key, types_);
          buffer_.append(", \"missing\": ");
          append_json_string(buffer_, marker, field_role::value);
          buffer_ += '}';
          break;
        case text_format::bin:
          refuse_bin();
      }
      buffer_ += '\n';
    });
  }

  void write_text(std::string_view text) {
    buffer_.append(text);
    if (buffer_.size() >= flush_threshold) flush_buffer();
  }

  void flush() {
    flush_buffer();
    if (stream_) {
      stream_->flush();
      if (!*stream_) fail(errc::io_error, name_ + ": write failed");
    }
  }

 private:
  static constexpr std::size_t flush_threshold = std::size_t{1} << 20;

  // Appends one record whole, or nothing of it: a record that fails half
  // way, at a byte string that JSON cannot hold, leaves no part of itself
  // in the output, so that what was written before it stays well formed.
  template <typename Append>
  void append_record(Append&& append) {
    const std::size_t start = buffer_.size();
    try {
      append();
    } catch (...) {
      buffer_.resize(start);
      throw;
    }
    if (buffer_.size() >= flush_threshold) flush_buffer();
  }

  [[noreturn]] static void refuse_bin() {
    fail(errc::invalid_argument, "the bin format holds whole entries only");
  }

  void append_bin_item(std::string_view item) {
    char length[4];
    format::store_le(length, static_cast<std::uint32_t>(item.size()));
    buffer_.append(length, 4);
    buffer_.append(item);
  }

  // Escaped text with quotes around it if it holds a comma or a quote.
  // Escaping leaves no raw line end to quote.
  void append_csv_field(std::string_view bytes) {
    const std::size_t start = buffer_.size();
    append_escaped_bytes(buffer_, bytes);
    const std::string_view text = std::string_view(buffer_).substr(start);
    if (text.find_first_of(",\"") == std::string_view::npos) return;
    csv_scratch_.assign(text);
    buffer_.resize(start);
    buffer_ += '"';
    for (const char c : csv_scratch_) {
      if (c == '"') buffer_ += '"';
      buffer_ += c;
    }
    buffer_ += '"';
  }

  void append_csv_key(std::string_view key) {
    if (types_.keys == key_kind::bytes) {
      append_csv_field(key);
    } else {
      append_key_text(buffer_, key, types_);
    }
  }

  void append_csv_value(std::string_view value) {
    if (types_.values == value_kind::bytes) {
      append_csv_field(value);
    } else {
      append_value_text(buffer_, value, types_);
    }
  }

  void flush_buffer() {
    if (buffer_.empty()) return;
    if (stream_) {
      stream_->write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
      buffer_.clear();
      if (!*stream_) fail(errc::io_error, name_ + ": write failed");
      return;
    }
    const char* p = buffer_.data();
    std::size_t left = buffer_.size();
    while (left > 0) {
      const ssize_t written = ::write(fd_, p, left);
      if (written < 0) {
        if (errno == EINTR) continue;
        buffer_.clear();
        if (errno == EPIPE) throw broken_pipe(errc::io_error, name_ + ": broken pipe");
        fail(errc::io_error, fmt::format("{}: write failed: {}", name_, std::strerror(errno)));
      }
      p += written;
      left -= static_cast<std::size_t>(written);
    }
    buffer_.clear();
  }

  int fd_ = -1;
  std::ostream* stream_ = nullptr;
  std::string name_;
  text_format format_;
  entry_types types_;
  std::string buffer_;
  std::string csv_scratch_;
};

}  // namespace detail

// ---------------------------------------------------------------------------
// Names

text_format parse_text_format(std::string_view name) {
  if (name == "tsv") return text_format::tsv;
  if (name == "csv") return text_format::csv;
  if (name == "jsonl") return text_format::jsonl;
  if (name == "bin") return text_format::bin;
  throw error(errc::invalid_argument,
              fmt::format("unknown format \"{}\": the formats are tsv, csv, jsonl and bin", name));
}

const char* to_string(text_format format) noexcept {
  switch (format) {
    case text_format::tsv:
      return "tsv";
    case text_format::csv:
      return "csv";
    case text_format::jsonl:
      return "jsonl";
    case text_format::bin:
      return "bin";
  }
  return "?";
}

entry_types entry_types::of(const file_info& info) noexcept {
  return {info.keys, info.key_size, info.values, info.value_size};
}

entry_types entry_types::of(const build_options& options) noexcept {
  return {options.keys, options.key_size, options.values, options.value_size};
}

namespace {

// Parses the N of "fixed:N".
bool parse_fixed_size(std::string_view name, std::uint32_t& size) {
  constexpr std::string_view prefix = "fixed:";
  if (name.substr(0, prefix.size()) != prefix) return false;
  const std::string_view digits = name.substr(prefix.size());
  std::uint64_t value = 0;
  if (!detail::parse_decimal(digits, value) || value == 0 || value > format::max_fixed_size) {
    throw error(errc::invalid_argument,
                fmt::format("bad type \"{}\": N in fixed:N must be from 1 to {}", name,
                            format::max_fixed_size));
  }
  size = static_cast<std::uint32_t>(value);
  return true;
}

}  // namespace

void parse_key_type(std::string_view name, entry_types& types) {
  types.key_size = 0;
  if (name == "u64") {
    types.keys = key_kind::u64;
  } else if (name == "i64") {
    types.keys = key_kind::i64;
  } else if (name == "bytes") {
    types.keys = key_kind::bytes;
  } else if (parse_fixed_size(name, types.key_size)) {
    types.keys = key_kind::fixed;
  } else {
    throw error(errc::invalid_argument,
                fmt::format("unknown key type \"{}\": the key types are u64, i64, bytes and "
                            "fixed:N",
                            name));
  }
}

void parse_value_type(std::string_view name, entry_types& types) {
  types.value_size = 0;
  if (name == "none") {
    types.values = value_kind::none;
  } else if (name == "u64") {
    types.values = value_kind::u64;
  } else if (name == "bytes") {
    types.values = value_kind::bytes;
  } else if (parse_fixed_size(name, types.value_size)) {
    types.values = value_kind::fixed;
  } else {
    throw error(errc::invalid_argument,
                fmt::format("unknown value type \"{}\": the value types are none, u64, bytes and "
                            "fixed:N",
                            name));
  }
}

std::string key_type_name(const entry_types& types) {
  switch (types.keys) {
    case key_kind::u64:
      return "u64";
    case key_kind::i64:
      return "i64";
    case key_kind::fixed:
      return fmt::format("fixed:{}", types.key_size);
    case key_kind::bytes:
      return "bytes";
  }
  return "?";
}

std::string value_type_name(const entry_types& types) {
  switch (types.values) {
    case value_kind::none:
      return "none";
    case value_kind::u64:
      return "u64";
    case value_kind::fixed:
      return fmt::format("fixed:{}", types.value_size);
    case value_kind::bytes:
      return "bytes";
  }
  return "?";
}

// ---------------------------------------------------------------------------
// Fields

bool is_valid_utf8(std::string_view bytes) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t i = 0;
  while (i < bytes.size()) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const std::size_t length = detail::utf8_sequence_length(p + i, bytes.size() - i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

void append_escaped(std::string& out, std::string_view bytes) {
  detail::append_escaped_bytes(out, bytes);
}

void append_json_name(std::string& out, std::string_view bytes) {
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t i = 0;
  while (i < bytes.size()) {
    // The longest valid run from i, written as JSON characters.
    std::size_t run = i;
    while (run < bytes.size()) {
      const std::size_t length =
          p[run] < 0x80 ? 1 : detail::utf8_sequence_length(p + run, bytes.size() - run);
      if (length == 0) break;
      run += length;
    }
    detail::append_json_characters(out, bytes.substr(i, run - i));
    if (run == bytes.size()) break;
    fmt::format_to(std::back_inserter(out), "\\udc{:02x}", p[run]);
    i = run + 1;
  }
  out += '"';
}

std::string unescape(std::string_view text, std::string_view what) {
  if (std::memchr(text.data(), '\r', text.size())) {
    throw error(errc::invalid_argument,
                fmt::format("raw carriage return in {} {}: a CR byte is written \\r", what,
                            detail::quote(text)));
  }
  std::string storage;
  const std::string_view bytes = detail::unescape_field(text, storage, what);
  return std::string(bytes);
}

void append_key_text(std::string& out, std::string_view key, const entry_types& types) {
  switch (types.keys) {
    case key_kind::u64:
      detail::append_decimal(out, decode_u64_key(key));
      return;
    case key_kind::i64:
      detail::append_signed_decimal(out, decode_i64_key(key));
      return;
    case key_kind::fixed:
      detail::append_hex(out, key);
      return;
    case key_kind::bytes:
      detail::append_escaped_bytes(out, key);
      return;
  }
}

void append_value_text(std::string& out, std::string_view value, const entry_types& types) {
  switch (types.values) {
    case value_kind::none:
      return;
    case value_kind::u64:
      detail::append_decimal(out, decode_u64_value(value));
      return;
    case value_kind::fixed:
      detail::append_hex(out, value);
      return;
    case value_kind::bytes:
      detail::append_escaped_bytes(out, value);
      return;
  }
}

std::string key_text(std::string_view key, const entry_types& types) {
  std::string text;
  append_key_text(text, key, types);
  return text;
}

std::string_view parse_key_text(std::string_view text, const entry_types& types,
                                std::string& storage) {
  return detail::parse_field(text, detail::field_role::key, types, storage, false);
}

std::string_view parse_value_text(std::string_view text, const entry_types& types,
                                  std::string& storage) {
  return detail::parse_field(text, detail::field_role::value, types, storage, false);
}

// ---------------------------------------------------------------------------
// entry_reader and entry_writer

entry_reader::entry_reader(int fd, std::string name, text_format format, const entry_types& types)
    : parser_(std::make_unique<detail::entry_parser>(detail::byte_source(fd), std::move(name),
                                                     format, types)) {}

entry_reader::entry_reader(std::istream& in, std::string name, text_format format,
                           const entry_types& types)
    : parser_(std::make_unique<detail::entry_parser>(detail::byte_source(in), std::move(name),
                                                     format, types)) {}

entry_reader::~entry_reader() = default;
entry_reader::entry_reader(entry_reader&&) noexcept = default;
entry_reader& entry_reader::operator=(entry_reader&&) noexcept = default;

std::optional<entry_view> entry_reader::next() { return parser_->next(); }
std::uint64_t entry_reader::line() const noexcept { return parser_->line(); }
std::string entry_reader::position() const { return parser_->position(); }
std::string entry_reader::place(std::string_view name, text_format format, std::uint64_t line) {
  return format == text_format::bin ? fmt::format("{}: record {}", name, line)
                                    : fmt::format("{}:{}", name, line);
}
std::uint64_t entry_reader::bytes_read() const noexcept { return parser_->bytes_read(); }
const std::string& entry_reader::name() const noexcept { return parser_->name(); }

entry_writer::entry_writer(int fd, std::string name, text_format format, const entry_types& types)
    : formatter_(std::make_unique<detail::entry_formatter>(fd, std::move(name), format, types)) {}

entry_writer::entry_writer(std::ostream& out, std::string name, text_format format,
                           const entry_types& types)
    : formatter_(std::make_unique<detail::entry_formatter>(out, std::move(name), format, types)) {}

entry_writer::~entry_writer() {
  try {
    formatter_->flush();
  } catch (...) {
    // Documented: a caller who needs to know calls flush() first.
  }
}

void entry_writer::write(std::string_view key, std::string_view value) {
  formatter_->write(key, value);
}
void entry_writer::write_key(std::string_view key) { formatter_->write_key(key); }
void entry_writer::write_value(std::string_view value) { formatter_->write_value(value); }
void entry_writer::write_missing(std::string_view key, std::string_view marker) {
  formatter_->write_missing(key, marker);
}
void entry_writer::write_text(std::string_view text) { formatter_->write_text(text); }
void entry_writer::flush() { formatter_->flush(); }

}  // namespace bbtree
