// The text formats of bbtree-build and bbtree-dump (spec/TEXT-FORMATS.md):
// round trips of every format with every key and value type, the exact
// text of fields, and every input error with its FILE:LINE message.
#include <bbtree/key_codec.h>
#include <bbtree/text_format.h>

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace bbtree {
namespace {

using entries = std::vector<std::pair<std::string, std::string>>;

entry_types make_types(std::string_view key_type, std::string_view value_type) {
  entry_types types;
  parse_key_type(key_type, types);
  parse_value_type(value_type, types);
  return types;
}

std::string write_all(const entries& list, text_format format, const entry_types& types) {
  std::ostringstream out;
  {
    entry_writer writer(out, "<test>", format, types);
    for (const auto& [key, value] : list) writer.write(key, value);
    writer.flush();
  }
  return out.str();
}

entries read_all(const std::string& text, text_format format, const entry_types& types,
                 const std::string& name = "data") {
  std::istringstream in(text);
  entry_reader reader(in, name, format, types);
  entries list;
  while (const auto entry = reader.next()) list.emplace_back(entry->key, entry->value);
  return list;
}

// The message and code of the error reading `text` raises.
std::pair<std::string, errc> read_error(const std::string& text, text_format format,
                                        const entry_types& types) {
  try {
    read_all(text, format, types);
  } catch (const input_error& e) {
    return {e.what(), e.code()};
  }
  FAIL("no error reading: " << text);
  return {};
}

std::string random_bytes(std::mt19937_64& random, std::size_t length) {
  std::string bytes(length, '\0');
  for (char& c : bytes) c = static_cast<char>(random() & 0xFF);
  return bytes;
}

// Random UTF-8 text: ASCII (controls, quotes and backslashes included) and
// two-, three- and four-byte characters.
std::string random_utf8(std::mt19937_64& random, std::size_t characters) {
  std::string text;
  for (std::size_t i = 0; i < characters; ++i) {
    switch (random() % 4) {
      case 0:
      case 1:
        text += static_cast<char>(random() % 0x80);
        break;
      case 2: {
        const auto code_point = static_cast<std::uint32_t>(0x80 + random() % (0x800 - 0x80));
        text += static_cast<char>(0xC0 | (code_point >> 6));
        text += static_cast<char>(0x80 | (code_point & 0x3F));
        break;
      }
      default: {
        auto code_point = static_cast<std::uint32_t>(0x800 + random() % (0x110000 - 0x800));
        if (code_point >= 0xD800 && code_point <= 0xDFFF) code_point = 0xE000;
        if (code_point < 0x10000) {
          text += static_cast<char>(0xE0 | (code_point >> 12));
          text += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
          text += static_cast<char>(0x80 | (code_point & 0x3F));
        } else {
          text += static_cast<char>(0xF0 | (code_point >> 18));
          text += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
          text += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
          text += static_cast<char>(0x80 | (code_point & 0x3F));
        }
      }
    }
  }
  return text;
}

std::string random_key(const entry_types& types, std::mt19937_64& random, bool utf8_only) {
  switch (types.keys) {
    case key_kind::u64: {
      // Include the extremes, which are where parsing goes wrong.
      const std::uint64_t choices[] = {0, 1, std::numeric_limits<std::uint64_t>::max(), random()};
      return std::string(u64_key(choices[random() % 4]).view());
    }
    case key_kind::i64: {
      const std::int64_t choices[] = {0, -1, std::numeric_limits<std::int64_t>::min(),
                                      std::numeric_limits<std::int64_t>::max(),
                                      static_cast<std::int64_t>(random())};
      return std::string(i64_key(choices[random() % 5]).view());
    }
    case key_kind::fixed:
      return random_bytes(random, types.key_size);
    case key_kind::bytes:
      return utf8_only ? random_utf8(random, random() % 12) : random_bytes(random, random() % 12);
  }
  return {};
}

std::string random_value(const entry_types& types, std::mt19937_64& random, bool utf8_only) {
  switch (types.values) {
    case value_kind::none:
      return {};
    case value_kind::u64:
      return std::string(u64_value(random()).view());
    case value_kind::fixed:
      return random_bytes(random, types.value_size);
    case value_kind::bytes:
      return utf8_only ? random_utf8(random, random() % 20) : random_bytes(random, random() % 20);
  }
  return {};
}

const char* const all_key_types[] = {"u64", "i64", "fixed:1", "fixed:5", "bytes"};
const char* const all_value_types[] = {"none", "u64", "fixed:3", "bytes"};
const text_format all_formats[] = {text_format::tsv, text_format::csv, text_format::jsonl,
                                   text_format::bin};

// A pipe whose writer hands over a few bytes at a time, so that reads
// return short counts and lines straddle every buffer boundary.
entries read_through_pipe(const std::string& text, text_format format, const entry_types& types) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::thread feeder([&text, fd = fds[1]] {
    std::mt19937_64 random(7);
    std::size_t at = 0;
    while (at < text.size()) {
      const std::size_t piece = std::min<std::size_t>(1 + random() % 13, text.size() - at);
      const ssize_t written = ::write(fd, text.data() + at, piece);
      if (written <= 0) break;
      at += static_cast<std::size_t>(written);
    }
    ::close(fd);
  });
  entries list;
  {
    entry_reader reader(fds[0], "pipe", format, types);
    while (const auto entry = reader.next()) list.emplace_back(entry->key, entry->value);
  }
  feeder.join();
  ::close(fds[0]);
  return list;
}

}  // namespace

TEST_CASE("every format round-trips every key and value type", "[text_format]") {
  std::mt19937_64 random(42);
  for (const text_format format : all_formats) {
    for (const char* key_type : all_key_types) {
      for (const char* value_type : all_value_types) {
        const entry_types types = make_types(key_type, value_type);
        // jsonl holds only UTF-8 byte strings; the others hold any bytes.
        const bool utf8_only = format == text_format::jsonl;
        entries list;
        for (int i = 0; i < 300; ++i) {
          list.emplace_back(random_key(types, random, utf8_only),
                            random_value(types, random, utf8_only));
        }
        INFO(to_string(format) << " " << key_type << " " << value_type);
        const std::string text = write_all(list, format, types);
        CHECK(read_all(text, format, types) == list);
        CHECK(read_through_pipe(text, format, types) == list);
      }
    }
  }
}

TEST_CASE("every byte value round-trips through every format that holds bytes", "[text_format]") {
  const entry_types types = make_types("bytes", "bytes");
  entries list;
  for (int byte = 0; byte < 256; ++byte) {
    const std::string one(1, static_cast<char>(byte));
    list.emplace_back(one, "a" + one + "b" + one + one);
  }
  for (const text_format format : {text_format::tsv, text_format::csv, text_format::bin}) {
    INFO(to_string(format));
    const std::string text = write_all(list, format, types);
    CHECK(read_all(text, format, types) == list);
  }
  // Every line of tsv is then printable: escapes leave no raw control byte
  // and no byte that is not UTF-8.
  const std::string tsv = write_all(list, text_format::tsv, types);
  CHECK(is_valid_utf8(tsv));
  for (const char c : tsv) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20) CHECK((c == '\t' || c == '\n'));
    CHECK(byte != 0x7F);
  }
}

TEST_CASE("entries bigger than the read buffer and empty byte strings", "[text_format]") {
  const entry_types types = make_types("bytes", "bytes");
  std::mt19937_64 random(3);
  entries list = {{"", ""},
                  {"k", std::string(3 << 20, 'v')},
                  {random_bytes(random, 65536), random_bytes(random, (2 << 20) + 5)},
                  {"", "x"},
                  {"\\", ""}};
  for (const text_format format : {text_format::tsv, text_format::csv, text_format::bin}) {
    INFO(to_string(format));
    CHECK(read_all(write_all(list, format, types), format, types) == list);
  }
  const entry_types set = make_types("bytes", "none");
  const entries keys = {{"", ""}, {"a", ""}, {"", ""}};
  for (const text_format format : all_formats) {
    INFO(to_string(format));
    CHECK(read_all(write_all(keys, format, set), format, set) == keys);
  }
}

TEST_CASE("fields are written as the spec shows", "[text_format]") {
  SECTION("tsv") {
    const entry_types types = make_types("bytes", "bytes");
    CHECK(write_all({{"a\tb", "c\\d\r\n"}}, text_format::tsv, types) == "a\\tb\tc\\\\d\\r\\n\n");
    CHECK(write_all({{std::string("\x00\x1f\x7f", 3), "caf\xc3\xa9"}}, text_format::tsv, types) ==
          "\\x00\\x1f\\x7f\tcaf\xc3\xa9\n");
    // Not UTF-8: a lone continuation byte, an overlong form, a surrogate, a
    // truncated sequence and a code point above U+10FFFF.
    CHECK(write_all({{"\x80", "\xc0\xaf"}}, text_format::tsv, types) == "\\x80\t\\xc0\\xaf\n");
    CHECK(write_all({{"\xed\xa0\x80", "\xe2\x82"}}, text_format::tsv, types) ==
          "\\xed\\xa0\\x80\t\\xe2\\x82\n");
    CHECK(write_all({{"\xf4\x90\x80\x80", "\xf0\x9f\x98\x80"}}, text_format::tsv, types) ==
          "\\xf4\\x90\\x80\\x80\t\xf0\x9f\x98\x80\n");
  }
  SECTION("integers and hex") {
    CHECK(write_all({{std::string(u64_key(18446744073709551615ull).view()),
                      std::string(u64_value(42).view())}},
                    text_format::tsv, make_types("u64", "u64")) == "18446744073709551615\t42\n");
    CHECK(write_all({{std::string(i64_key(std::numeric_limits<std::int64_t>::min()).view()), ""}},
                    text_format::tsv, make_types("i64", "none")) == "-9223372036854775808\n");
    CHECK(write_all({{"\x01\xab", "\xff"}}, text_format::tsv, make_types("fixed:2", "fixed:1")) ==
          "01ab\tff\n");
  }
  SECTION("csv") {
    const entry_types types = make_types("bytes", "bytes");
    CHECK(write_all({{"a,b", "say \"hi\""}}, text_format::csv, types) ==
          "\"a,b\",\"say \"\"hi\"\"\"\n");
    CHECK(write_all({{"x\ny", ""}}, text_format::csv, types) == "x\\ny,\n");
    CHECK(write_all({{"", ""}}, text_format::csv, make_types("bytes", "none")) == "\"\"\n");
  }
  SECTION("jsonl") {
    CHECK(write_all({{"a\"\\\n\x01\x7f/\xc3\xa9", "v"}}, text_format::jsonl,
                    make_types("bytes", "bytes")) ==
          "{\"key\": \"a\\\"\\\\\\n\\u0001\\u007f/\xc3\xa9\", \"value\": \"v\"}\n");
    CHECK(write_all({{std::string(i64_key(-5).view()), std::string(u64_value(7).view())}},
                    text_format::jsonl,
                    make_types("i64", "u64")) == "{\"key\": -5, \"value\": 7}\n");
    CHECK(write_all({{"\xab\xcd", ""}}, text_format::jsonl, make_types("fixed:2", "none")) ==
          "{\"key\": \"abcd\"}\n");
  }
  SECTION("bin holds the encoded bytes behind u32 little-endian lengths") {
    CHECK(write_all({{std::string(u64_key(1).view()), std::string(u64_value(2).view())}},
                    text_format::bin,
                    make_types("u64", "u64")) == std::string("\x08\x00\x00\x00"
                                                             "\x00\x00\x00\x00\x00\x00\x00\x01"
                                                             "\x08\x00\x00\x00"
                                                             "\x02\x00\x00\x00\x00\x00\x00\x00",
                                                             24));
    CHECK(write_all({{"ab", ""}}, text_format::bin, make_types("bytes", "none")) ==
          std::string("\x02\x00\x00\x00"
                      "ab",
                      6));
  }
}

TEST_CASE("input that text accepts beyond what it writes", "[text_format]") {
  SECTION("upper-case hex, leading zeros, -0, a last line without LF") {
    const entries list =
        read_all("0000000000000001\tAB\n", text_format::tsv, make_types("u64", "fixed:1"));
    REQUIRE(list.size() == 1);
    CHECK(decode_u64_key(list[0].first) == 1);
    CHECK(list[0].second == "\xab");
    CHECK(decode_i64_key(read_all("-0", text_format::tsv, make_types("i64", "none"))[0].first) ==
          0);
    CHECK(read_all("a\\x4A\\x4a", text_format::tsv, make_types("bytes", "none"))[0].first == "aJJ");
  }
  SECTION("csv: quoted fields with line ends, CRLF records, escapes inside quotes") {
    const std::string text = "\"a\nb\",\"x,\"\"y\"\"\"\r\nplain,\"q\\tr\"\n\"\",\n";
    const entries expected = {{"a\nb", "x,\"y\""}, {"plain", "q\tr"}, {"", ""}};
    CHECK(read_all(text, text_format::csv, make_types("bytes", "bytes")) == expected);
    // The third record starts on line 4, past the line end inside quotes.
    const auto [message, code] =
        read_error(text + "1,2,3\n", text_format::csv, make_types("bytes", "bytes"));
    CHECK(message.rfind("data:5: ", 0) == 0);
  }
  SECTION("jsonl: whitespace, any field order, escapes, surrogate pairs, null values") {
    const std::string text =
        " { \"value\" :\"\\u00e9\\ud83d\\ude00\\/\" ,\t\"key\":\"k\\n\"}\r\n"
        "{\"key\": \"a\", \"value\": \"\"}\n";
    const entries expected = {{"k\n", "\xc3\xa9\xf0\x9f\x98\x80/"}, {"a", ""}};
    CHECK(read_all(text, text_format::jsonl, make_types("bytes", "bytes")) == expected);
    // \u escapes of one, two and three UTF-8 bytes, and the largest below
    // the surrogates.
    CHECK(read_all("{\"key\": \"\\u0041\\u07ff\\u0800\\u20ac\\ud7ff\\uffff\"}", text_format::jsonl,
                   make_types("bytes", "none"))[0]
              .first == "A\xdf\xbf\xe0\xa0\x80\xe2\x82\xac\xed\x9f\xbf\xef\xbf\xbf");
    const entries set = read_all("{\"key\": 3, \"value\": null}\n{\"key\": 4}\n",
                                 text_format::jsonl, make_types("u64", "none"));
    REQUIRE(set.size() == 2);
    CHECK(decode_u64_key(set[1].first) == 4);
    CHECK(decode_i64_key(read_all("{\"key\":-9223372036854775808}", text_format::jsonl,
                                  make_types("i64", "none"))[0]
                             .first) == std::numeric_limits<std::int64_t>::min());
  }
}

TEST_CASE("field helpers", "[text_format]") {
  CHECK(unescape("a\\\\b\\t\\x00") == std::string("a\\b\t\0", 5));
  CHECK_THROWS_AS(unescape("a\\"), error);
  // Errors name the text as the caller calls it.
  CHECK_THROWS_WITH(unescape("a\\q"), Catch::Contains("bad escape \"\\q\" in text \"a\\q\""));
  CHECK_THROWS_WITH(unescape("a\\q", "metadata key"), Catch::Contains("in metadata key \"a\\q\""));
  CHECK_THROWS_WITH(unescape("a\\", "path"),
                    Catch::Equals("incomplete escape at the end of path \"a\\\""));
  CHECK_THROWS_WITH(
      unescape("a\rb", "path"),
      Catch::Equals("raw carriage return in path \"a\\x0db\": a CR byte is written \\r"));
  std::string escaped;
  append_escaped(escaped, std::string("\xff\n", 2));
  CHECK(escaped == "\\xff\\n");
  std::string storage;
  const entry_types u64s = make_types("u64", "none");
  CHECK(parse_key_text("42", u64s, storage) == u64_key(42).view());
  CHECK(key_text(u64_key(42), u64s) == "42");
  CHECK_THROWS_WITH(parse_key_text("4 2", u64s, storage), "key \"4 2\" is not a u64");
  CHECK(parse_value_text("0a", make_types("bytes", "fixed:1"), storage) == "\n");
  CHECK(is_valid_utf8("caf\xc3\xa9"));
  CHECK_FALSE(is_valid_utf8("caf\xc3"));
}

TEST_CASE("type and format names", "[text_format]") {
  for (const char* name : all_key_types) {
    entry_types types;
    parse_key_type(name, types);
    CHECK(key_type_name(types) == name);
  }
  for (const char* name : all_value_types) {
    entry_types types;
    parse_value_type(name, types);
    CHECK(value_type_name(types) == name);
  }
  for (const text_format format : all_formats) {
    CHECK(parse_text_format(to_string(format)) == format);
  }
  entry_types types;
  CHECK_THROWS_WITH(parse_key_type("fixed:0", types), Catch::Contains("from 1 to 4096"));
  CHECK_THROWS_WITH(parse_key_type("fixed:4097", types), Catch::Contains("from 1 to 4096"));
  CHECK_THROWS_WITH(parse_key_type("int", types), Catch::Contains("unknown key type \"int\""));
  CHECK_THROWS_WITH(parse_value_type("none:1", types), Catch::Contains("unknown value type"));
  CHECK_THROWS_WITH(parse_text_format("json"), Catch::Contains("unknown format \"json\""));
}

TEST_CASE("every input error names the file and line", "[text_format]") {
  struct bad_input {
    text_format format;
    const char* key_type;
    const char* value_type;
    std::string text;
    std::string message;
    errc code;
  };
  const std::string long_key(65537, 'k');
  const bad_input cases[] = {
      // tsv: fields
      {text_format::tsv, "u64", "u64", "1\t2\n12x\t3\n", "data:2: key \"12x\" is not a u64",
       errc::invalid_argument},
      {text_format::tsv, "u64", "u64", "1\t-2\n", "data:1: value \"-2\" is out of the u64 range",
       errc::invalid_argument},
      {text_format::tsv, "u64", "none", "18446744073709551616\n",
       "data:1: key \"18446744073709551616\" is out of the u64 range", errc::invalid_argument},
      {text_format::tsv, "u64", "none", "\n", "data:1: key \"\" is not a u64",
       errc::invalid_argument},
      {text_format::tsv, "u64", "none", "+1\n", "data:1: key \"+1\" is not a u64",
       errc::invalid_argument},
      {text_format::tsv, "i64", "none", "9223372036854775808\n",
       "data:1: key \"9223372036854775808\" is out of the i64 range", errc::invalid_argument},
      {text_format::tsv, "i64", "none", "-9223372036854775809\n",
       "data:1: key \"-9223372036854775809\" is out of the i64 range", errc::invalid_argument},
      {text_format::tsv, "i64", "none", "--1\n", "data:1: key \"--1\" is not an i64",
       errc::invalid_argument},
      {text_format::tsv, "fixed:2", "none", "0g0a\n",
       "data:1: key \"0g0a\" is not 2 bytes in hex (4 hex digits)", errc::invalid_argument},
      {text_format::tsv, "fixed:2", "none", "0a0a0a\n",
       "data:1: key \"0a0a0a\" is not 2 bytes in hex (4 hex digits)", errc::key_too_long},
      {text_format::tsv, "bytes", "fixed:1", "k\t1\n",
       "data:1: value \"1\" is not 1 bytes in hex (2 hex digits)", errc::value_too_long},
      {text_format::tsv, "bytes", "none", long_key + "\n",
       "data:1: key is 65537 bytes, over the limit of 65536 bytes", errc::key_too_long},
      // tsv: escapes and line structure
      {text_format::tsv, "bytes", "bytes", "a\\qb\tv\n",
       "data:1: bad escape \"\\q\" in key \"a\\qb\": the escapes are \\\\ \\t \\r \\n \\xHH",
       errc::invalid_argument},
      {text_format::tsv, "bytes", "bytes", "k\tv\\x4\n",
       "data:1: bad escape \"\\x4\" in value \"v\\x4\": \\x takes two hex digits",
       errc::invalid_argument},
      {text_format::tsv, "bytes", "bytes", "k\tv\\\n",
       "data:1: incomplete escape at the end of value \"v\\\"", errc::invalid_argument},
      {text_format::tsv, "bytes", "bytes", "a\tb\nc\n",
       "data:2: missing value: expected KEY<TAB>VALUE", errc::invalid_argument},
      {text_format::tsv, "bytes", "bytes", "a\tb\tc\n",
       "data:1: extra field: expected KEY<TAB>VALUE, found a second TAB", errc::invalid_argument},
      {text_format::tsv, "bytes", "none", "a\tb\n",
       "data:1: extra field: this file has no values, so a line holds a key alone",
       errc::invalid_argument},
      {text_format::tsv, "bytes", "bytes", "a\tb\r\n",
       "data:1: raw carriage return in value: a CR byte is written \\r", errc::invalid_argument},
      {text_format::tsv, "u64", "none", "1\r\n", "data:1: raw carriage return in key",
       errc::invalid_argument},
      // csv
      {text_format::csv, "bytes", "bytes", "a,1\nb\r,2\r\n",
       "data:2: raw carriage return in key: csv takes a CR only at the end of a record",
       errc::invalid_argument},
      {text_format::csv, "u64", "u64", "1,2\r\n3,4\r5\n",
       "data:2: raw carriage return in value: csv takes a CR only", errc::invalid_argument},
      {text_format::csv, "bytes", "bytes", "a\n", "data:1: missing value: expected 2 fields",
       errc::invalid_argument},
      {text_format::csv, "bytes", "bytes", "a,b,c\n", "data:1: extra field: expected 2 fields",
       errc::invalid_argument},
      {text_format::csv, "bytes", "none", "a,b\n", "data:1: extra field: this file has no values",
       errc::invalid_argument},
      {text_format::csv, "bytes", "bytes", "a,b\n\"c,d\n",
       "data:2: a quoted field is not closed before the end of the input", errc::invalid_argument},
      {text_format::csv, "bytes", "bytes", "a\"b,c\n", "data:1: a quote inside an unquoted field",
       errc::invalid_argument},
      {text_format::csv, "bytes", "bytes", "\"a\"b,c\n",
       "data:1: unexpected text after a closing quote", errc::invalid_argument},
      {text_format::csv, "u64", "u64", "1,x\n", "data:1: value \"x\" is not a u64",
       errc::invalid_argument},
      {text_format::csv, "bytes", "bytes", "a\\z,b\n", "data:1: bad escape \"\\z\" in key",
       errc::invalid_argument},
      {text_format::csv, "bytes", "bytes", "a\rb,c\n", "data:1: raw carriage return in key",
       errc::invalid_argument},
      // jsonl
      {text_format::jsonl, "u64", "u64",
       "{\"key\": 1, \"value\": 2}\n{\"key\": 1.5, \"value\": 2}\n",
       "data:2: key must be an integer: fractions and exponents are not accepted",
       errc::invalid_argument},
      {text_format::jsonl, "u64", "u64", "{\"key\": 1e3, \"value\": 2}\n",
       "data:1: key must be an integer", errc::invalid_argument},
      {text_format::jsonl, "u64", "none", "{\"key\": -1}\n",
       "data:1: key \"-1\" is out of the u64 range", errc::invalid_argument},
      {text_format::jsonl, "u64", "none", "{\"key\": 18446744073709551616}\n",
       "data:1: key \"18446744073709551616\" is out of the u64 range", errc::invalid_argument},
      {text_format::jsonl, "i64", "none", "{\"key\": 01}\n",
       "data:1: a JSON number has no leading zeros", errc::invalid_argument},
      {text_format::jsonl, "u64", "none", "{\"key\": \"1\"}\n",
       "data:1: key must be a JSON number, not a string", errc::invalid_argument},
      {text_format::jsonl, "bytes", "none", "{\"key\": 1}\n", "data:1: key must be a JSON string",
       errc::invalid_argument},
      {text_format::jsonl, "bytes", "none", "{\"key\": \"a\xff\"}\n",
       "data:1: key is not valid UTF-8 (column 11): JSON text must be UTF-8; use the tsv or bin "
       "format",
       errc::invalid_argument},
      {text_format::jsonl, "bytes", "none", "{\"key\": \"\\ud800\"}\n",
       "data:1: a high surrogate \\u escape without a low one after it", errc::invalid_argument},
      {text_format::jsonl, "bytes", "none", "{\"key\": \"\\ud83d\\u0041\"}\n",
       "data:1: a high surrogate \\u escape without a low one after it", errc::invalid_argument},
      {text_format::jsonl, "bytes", "none", "{\"key\": \"\\udc00\"}\n",
       "data:1: a low surrogate \\u escape without a high one before it", errc::invalid_argument},
      {text_format::jsonl, "bytes", "none", "{\"key\": \"\\x41\"}\n",
       "data:1: bad escape in a JSON string", errc::invalid_argument},
      {text_format::jsonl, "bytes", "none", "{\"key\": \"a\tb\"}\n",
       "data:1: a control character in a JSON string must be escaped", errc::invalid_argument},
      {text_format::jsonl, "bytes", "bytes", "{\"key\": \"a\", \"value\": \"b\", \"other\": 1}\n",
       "data:1: unknown field \"other\"", errc::invalid_argument},
      {text_format::jsonl, "bytes", "bytes", "{\"key\": \"a\", \"key\": \"b\"}\n",
       "data:1: duplicate field \"key\"", errc::invalid_argument},
      {text_format::jsonl, "bytes", "bytes", "{\"key\": \"a\"}\n",
       "data:1: missing field \"value\"", errc::invalid_argument},
      {text_format::jsonl, "bytes", "bytes", "{\"key\": \"a\", \"value\": null}\n",
       "data:1: value is null, but this file has values", errc::invalid_argument},
      {text_format::jsonl, "bytes", "none", "{\"value\": null}\n", "data:1: missing field \"key\"",
       errc::invalid_argument},
      {text_format::jsonl, "bytes", "none", "{\"key\": \"a\", \"value\": \"b\"}\n",
       "data:1: this file has no values, so \"value\" must be null or absent",
       errc::invalid_argument},
      {text_format::jsonl, "bytes", "none", "{\"key\": \"a\"} x\n",
       "data:1: unexpected text after the JSON object", errc::invalid_argument},
      {text_format::jsonl, "bytes", "none", "{\"key\": \"a\",}\n",
       "data:1: expected a field name in double quotes", errc::invalid_argument},
      {text_format::jsonl, "bytes", "none", "[\"a\"]\n", "data:1: expected '{'",
       errc::invalid_argument},
      {text_format::jsonl, "bytes", "none", "{\"key\": \"a\"}\n\n",
       "data:2: empty line: expected a JSON object", errc::invalid_argument},
      {text_format::jsonl, "bytes", "none", "{\"key\": \"abc", "data:1: unterminated JSON string",
       errc::invalid_argument},
      {text_format::jsonl, "fixed:2", "none", "{\"key\": \"abc\"}\n",
       "data:1: key \"abc\" is not 2 bytes in hex", errc::key_too_long},
      {text_format::jsonl, "fixed:2", "none", "{\"key\": \"abcx\"}\n",
       "data:1: key \"abcx\" is not 2 bytes in hex", errc::invalid_argument},
      // bin
      {text_format::bin, "bytes", "bytes", std::string("\x01\x00\x00\x00k\x01\x00", 7),
       "data: record 1 at byte 0: the input ends inside a record", errc::invalid_argument},
      {text_format::bin, "bytes", "none", std::string("\x01\x00\x00\x00k\x01\x00\x01\x00", 9),
       "data: record 2 at byte 5: key is 65537 bytes, over the limit of 65536 bytes",
       errc::key_too_long},
      {text_format::bin, "u64", "none",
       std::string("\x07\x00\x00\x00"
                   "1234567",
                   11),
       "data: record 1 at byte 0: key length 7 does not match the u64 type, whose keys are 8 "
       "bytes",
       errc::key_too_long},
      {text_format::bin, "bytes", "fixed:2", std::string("\x00\x00\x00\x00\x03\x00\x00\x00xyz", 11),
       "data: record 1 at byte 0: value length 3 does not match the fixed:2 type",
       errc::value_too_long},
  };
  for (const bad_input& input : cases) {
    INFO(to_string(input.format) << " " << input.key_type << " " << input.value_type << ": "
                                 << input.text.substr(0, 100));
    const auto [message, code] =
        read_error(input.text, input.format, make_types(input.key_type, input.value_type));
    CHECK_THAT(message, Catch::StartsWith(input.message));
    CHECK(code == input.code);
  }
}

TEST_CASE("the writer refuses what a format cannot hold", "[text_format]") {
  const entry_types types = make_types("bytes", "bytes");
  std::ostringstream out;
  entry_writer writer(out, "<test>", text_format::jsonl, types);
  CHECK_THROWS_WITH(writer.write("a\xff", "v"),
                    Catch::StartsWith("key \"a\\xff\" is not valid UTF-8") &&
                        Catch::Contains("use the tsv or bin format"));
  CHECK_THROWS_WITH(writer.write("k", "\xc3"), Catch::StartsWith("value \"\\xc3\""));
  entry_writer bin(out, "<test>", text_format::bin, types);
  CHECK_THROWS_AS(bin.write_key("k"), error);
}

TEST_CASE("a record the writer refuses leaves nothing of itself", "[text_format]") {
  // What came before stays well formed: jq reads every line that was written.
  const entry_types types = make_types("bytes", "bytes");
  std::ostringstream out;
  {
    entry_writer writer(out, "<test>", text_format::jsonl, types);
    writer.write("a", "ok");
    CHECK_THROWS_AS(writer.write("b", "\xff"), error);
    CHECK_THROWS_AS(writer.write("\xff", "v"), error);
    CHECK_THROWS_AS(writer.write_key("c\xfe"), error);
    CHECK_THROWS_AS(writer.write_value("\xc3"), error);
    CHECK_THROWS_AS(writer.write_missing("d\xff", "-"), error);
    writer.write_key("e");
    writer.flush();
  }
  CHECK(out.str() == "{\"key\": \"a\", \"value\": \"ok\"}\n{\"key\": \"e\"}\n");
}

TEST_CASE("lookup output lines", "[text_format]") {
  const entry_types types = make_types("u64", "bytes");
  std::ostringstream tsv_out;
  {
    entry_writer tsv(tsv_out, "<test>", text_format::tsv, types);
    tsv.write_key(u64_key(5));
    tsv.write_value("v\t");
    tsv.write_missing(u64_key(6), "-");
    tsv.write_text("3\n");
    tsv.flush();
  }
  CHECK(tsv_out.str() == "5\nv\\t\n6\t-\n3\n");
  std::ostringstream json_out;
  {
    entry_writer json(json_out, "<test>", text_format::jsonl, types);
    json.write_missing(u64_key(6), "none");
    json.flush();
  }
  CHECK(json_out.str() == "{\"key\": 6, \"missing\": \"none\"}\n");
  // A value alone, or a set's key alone, as `bbtree-query get` prints
  // them: one record a line in each text format.
  const entry_types byte_types = make_types("bytes", "bytes");
  for (const auto& [format, expected] : std::vector<std::pair<text_format, std::string>>{
           {text_format::tsv, "a b\n\"q\"\n"},
           {text_format::csv, "a b\n\"\"\"q\"\"\"\n"},
           {text_format::jsonl, "{\"key\": \"a b\"}\n{\"value\": \"\\\"q\\\"\"}\n"}}) {
    std::ostringstream out;
    entry_writer writer(out, "<test>", format, byte_types);
    writer.write_key("a b");
    writer.write_value("\"q\"");
    writer.flush();
    CHECK(out.str() == expected);
  }
  // A set's value, asked for anyway, is JSON's null.
  std::ostringstream set_out;
  {
    entry_writer json(set_out, "<test>", text_format::jsonl, make_types("bytes", "none"));
    json.write_value("");
    json.flush();
  }
  CHECK(set_out.str() == "{\"value\": null}\n");
}

TEST_CASE("the reader reports where each entry began", "[text_format]") {
  std::istringstream in("\"a\nb\",1\nc,2\n");
  entry_reader reader(in, "f.csv", text_format::csv, make_types("bytes", "u64"));
  REQUIRE(reader.next());
  CHECK(reader.line() == 1);
  CHECK(reader.position() == "f.csv:1");
  REQUIRE(reader.next());
  CHECK(reader.line() == 3);
  CHECK_FALSE(reader.next());
  CHECK(reader.bytes_read() == 12);
}

}  // namespace bbtree
