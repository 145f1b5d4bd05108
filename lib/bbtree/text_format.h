// Entries as text and as a simple binary stream: the formats bbtree-build
// reads and bbtree-dump and bbtree-query write.  spec/TEXT-FORMATS.md is the
// contract; this header implements it.
//
//   tsv    KEY<TAB>VALUE per line (KEY alone in a file without values)
//   csv    RFC 4180 records of one or two fields
//   jsonl  {"key": ..., "value": ...} per line
//   bin    u32 LE length + bytes for the key, then the same for the value
//
// Keys and values cross this interface in their encoded form (key_codec.h),
// the form builder::add takes and reader returns: whatever the format, a u64
// key parsed from "42" comes out as 8 big-endian bytes.
//
// entry_reader is made for inputs of many gigabytes: it reads through a
// large buffer and hands out views into it, so that the common case (a line
// without escapes) costs no allocation and no copy.
//
// Errors: input_error (a bbtree::error) naming FILE:LINE; broken_pipe when
// the output's reader has gone.  Thread safety: a reader or writer object is
// used by one thread at a time; separate objects are independent.
#pragma once

#include <bbtree/error.h>
#include <bbtree/format/layout.h>
#include <bbtree/reader.h>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace bbtree {

struct build_options;

enum class text_format : std::uint8_t { tsv, csv, jsonl, bin };

// Parses "tsv", "csv", "jsonl" or "bin"; throws error(invalid_argument).
text_format parse_text_format(std::string_view name);
const char* to_string(text_format format) noexcept;

// The key and value types of a file, which decide how entries are written as
// text.  The field names follow build_options and file_info.
struct entry_types {
  key_kind keys = key_kind::bytes;
  std::uint32_t key_size = 0;  // fixed keys only: N
  value_kind values = value_kind::bytes;
  std::uint32_t value_size = 0;  // fixed values only: N

  static entry_types of(const file_info& info) noexcept;
  static entry_types of(const build_options& options) noexcept;
};

// Parses a key type as the tools name it: u64, i64, bytes or fixed:N.
// Throws error(invalid_argument).
void parse_key_type(std::string_view name, entry_types& types);
// Parses a value type: none, u64, bytes or fixed:N.  Throws error(invalid_argument).
void parse_value_type(std::string_view name, entry_types& types);
std::string key_type_name(const entry_types& types);
std::string value_type_name(const entry_types& types);

// ---------------------------------------------------------------------------
// Single fields, as tsv writes them: decimal integers, lowercase hex for
// fixed sizes, escaped byte strings.

// True if `bytes` is well-formed UTF-8 (no overlong forms, no surrogates).
bool is_valid_utf8(std::string_view bytes) noexcept;

// Appends a JSON string (quoted) for a name of any bytes, such as a file
// name.  Valid UTF-8 is written as is (escaped as JSON requires); each byte
// that is not part of valid UTF-8 becomes the lone surrogate \udcHH, as
// Python's "surrogateescape" error handler writes it (PEP 383), so that two
// different names never give one string, and os.fsencode(name) gives the
// bytes back.  (jq shows such a surrogate as U+FFFD.)
void append_json_name(std::string& out, std::string_view bytes);

// Appends `bytes` with backslash, control bytes and bytes that are not part
// of valid UTF-8 escaped as \\, \t, \r, \n and \xHH.
void append_escaped(std::string& out, std::string_view bytes);
// Reverses append_escaped.  Throws error(invalid_argument) on an unknown or
// incomplete escape and on a raw carriage return, which text must escape;
// the message calls the text `what` ("metadata key", "path", ...).
std::string unescape(std::string_view text, std::string_view what = "text");

// Appends the text of an encoded key or value (a value of a file without
// values appends nothing).
void append_key_text(std::string& out, std::string_view key, const entry_types& types);
void append_value_text(std::string& out, std::string_view value, const entry_types& types);
std::string key_text(std::string_view key, const entry_types& types);

// Parses the text of a key as a tsv field and returns its encoded form,
// which lives in `storage` or in `text`.  Throws error(invalid_argument,
// key_too_long) with a message such as `key "12x" is not a u64`.
std::string_view parse_key_text(std::string_view text, const entry_types& types,
                                std::string& storage);
std::string_view parse_value_text(std::string_view text, const entry_types& types,
                                  std::string& storage);

// ---------------------------------------------------------------------------
// Streams of entries

// A malformed entry in an input: its message starts with "NAME:LINE: ", or
// "NAME: record N at byte B: " for bin.  code() tells the kind of problem:
// invalid_argument for syntax, key_too_long or value_too_long for sizes, and
// out_of_order or duplicate_key where the importer checks order.
class input_error : public error {
 public:
  using error::error;
};

// The reader of the output went away (EPIPE): tools stop quietly.
class broken_pipe : public error {
 public:
  using error::error;
};

namespace detail {
class entry_parser;
class entry_formatter;
}  // namespace detail

// Reads entries one at a time.  `name` is the input's name in messages.
class entry_reader {
 public:
  // Reads from a file descriptor, which stays the caller's to close.
  entry_reader(int fd, std::string name, text_format format, const entry_types& types);
  entry_reader(std::istream& in, std::string name, text_format format, const entry_types& types);
  ~entry_reader();
  entry_reader(entry_reader&&) noexcept;
  entry_reader& operator=(entry_reader&&) noexcept;

  // The next entry, or nullopt at the end of the input.  Its views are
  // valid until the next call.  Throws input_error for a malformed entry and
  // error(io_error) when reading fails.
  std::optional<entry_view> next();

  // Where the last entry began: its line (bin: its record number), from 1.
  std::uint64_t line() const noexcept;
  // "NAME:LINE" (bin: "NAME: record N at byte B") of the last entry.
  std::string position() const;
  // Where line (bin: record) `line` of input `name` is, when only its
  // number is known: "NAME:LINE" (bin: "NAME: record N").
  static std::string place(std::string_view name, text_format format, std::uint64_t line);
  std::uint64_t bytes_read() const noexcept;
  const std::string& name() const noexcept;

 private:
  std::unique_ptr<detail::entry_parser> parser_;
};

// Writes entries through a large buffer: nothing reaches the output until
// the buffer fills or flush() is called.
class entry_writer {
 public:
  // Writes to a file descriptor, which stays the caller's to close.
  entry_writer(int fd, std::string name, text_format format, const entry_types& types);
  entry_writer(std::ostream& out, std::string name, text_format format, const entry_types& types);
  // Flushes, ignoring errors: call flush() to see them.
  ~entry_writer();
  entry_writer(const entry_writer&) = delete;
  entry_writer& operator=(const entry_writer&) = delete;

  // One entry (the value is ignored in a file without values).  Throws
  // error(invalid_argument) for a byte string that jsonl cannot hold (not
  // UTF-8), error(io_error) or broken_pipe when writing fails.
  void write(std::string_view key, std::string_view value);
  // One line holding only the key, or only the value (text formats only).
  void write_key(std::string_view key);
  void write_value(std::string_view value);
  // A key that was looked up and not found, with a marker where the value
  // would be: tsv KEY<TAB>MARKER, csv KEY,MARKER, jsonl {"key": KEY,
  // "missing": "MARKER"} (text formats only).
  void write_missing(std::string_view key, std::string_view marker);
  // Raw bytes, for output that is not an entry (a count).
  void write_text(std::string_view text);
  void flush();

 private:
  std::unique_ptr<detail::entry_formatter> formatter_;
};

}  // namespace bbtree
