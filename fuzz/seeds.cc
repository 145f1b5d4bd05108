// Seed inputs for every target, written by fuzz_make_corpus: small valid
// files of every key kind and value kind, build cases of every kind, and
// entry texts of every format and type with their corner cases.
#include "build_input.h"
#include "fuzz_support.h"

#include <bbtree/key_codec.h>
#include <bbtree/text_format.h>

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace bbtree::fuzz {

namespace {

namespace fs = std::filesystem;

const char* key_name(key_kind kind) {
  switch (kind) {
    case key_kind::u64:
      return "u64";
    case key_kind::i64:
      return "i64";
    case key_kind::fixed:
      return "fixed";
    case key_kind::bytes:
      return "bytes";
  }
  return "?";
}

const char* value_name(value_kind kind) {
  switch (kind) {
    case value_kind::none:
      return "none";
    case value_kind::u64:
      return "u64";
    case value_kind::fixed:
      return "fixed";
    case value_kind::bytes:
      return "bytes";
  }
  return "?";
}

std::string random_bytes(std::mt19937_64& random, std::size_t length) {
  std::string bytes(length, '\0');
  for (char& byte : bytes) byte = static_cast<char>(random());
  return bytes;
}

std::string seed_key(const seed_shape& shape, std::mt19937_64& random, std::size_t i) {
  switch (shape.keys) {
    case key_kind::u64: {
      const std::uint64_t choices[] = {i * 3, random(), ~std::uint64_t{0} - i,
                                       1700000000 + i * 100};
      return std::string(u64_key(choices[random() % 4]).view());
    }
    case key_kind::i64: {
      const std::int64_t choices[] = {
          static_cast<std::int64_t>(i) - 20, static_cast<std::int64_t>(random()),
          INT64_MIN + static_cast<std::int64_t>(i), INT64_MAX - static_cast<std::int64_t>(i)};
      return std::string(i64_key(choices[random() % 4]).view());
    }
    case key_kind::fixed: {
      std::string key = random_bytes(random, shape.key_size);
      if (random() % 2 == 0) {
        for (std::size_t j = 0; j < key.size() / 2; ++j) key[j] = 'p';  // a shared prefix
      }
      return key;
    }
    case key_kind::bytes: {
      switch (random() % 5) {
        case 0:
          return fmt::format("key:{:08}", i);
        case 1:
          return fmt::format("user:{}", random() % 100000);
        case 2: {
          // A small alphabet: shared prefixes and ties in the inline keys.
          static constexpr char alphabet[] = {'\x00', '\x01', 'a', 'b', '\xfe', '\xff'};
          std::string key(random() % 20, '\0');
          for (char& byte : key) byte = alphabet[random() % sizeof(alphabet)];
          return key;
        }
        case 3:
          if (shape.long_items && random() % 3 == 0) {
            return std::string(70 + random() % 200, 'L') + random_bytes(random, 4);
          }
          return "same-first-8-bytes:" + random_bytes(random, random() % 6);
        default:
          return random_bytes(random, random() % 12);
      }
    }
  }
  return {};
}

std::string seed_value(const seed_shape& shape, std::mt19937_64& random) {
  switch (shape.values) {
    case value_kind::none:
      return {};
    case value_kind::u64:
      return std::string(u64_value(random()).view());
    case value_kind::fixed:
      return random_bytes(random, shape.value_size);
    case value_kind::bytes:
      if (shape.long_items && random() % 6 == 0) return random_bytes(random, 100 + random() % 500);
      return random_bytes(random, random() % 20);
  }
  return {};
}

std::string read_whole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

std::string seed_shape::name() const {
  std::string out = key_name(keys);
  if (keys == key_kind::fixed) out += std::to_string(key_size);
  out += "-";
  out += value_name(values);
  if (values == value_kind::fixed) out += std::to_string(value_size);
  out += fmt::format("-p{}-n{}", page_size, entries);
  if (long_items) out += "-long";
  if (metadata) out += "-meta";
  return out;
}

std::vector<seed_shape> seed_shapes() {
  struct key_type {
    key_kind kind;
    std::uint32_t size;
  };
  struct value_type {
    value_kind kind;
    std::uint32_t size;
  };
  const key_type key_types[] = {{key_kind::u64, 0},   {key_kind::i64, 0},    {key_kind::fixed, 1},
                                {key_kind::fixed, 5}, {key_kind::fixed, 16}, {key_kind::fixed, 40},
                                {key_kind::bytes, 0}};
  const value_type value_types[] = {{value_kind::none, 0},
                                    {value_kind::u64, 0},
                                    {value_kind::fixed, 1},
                                    {value_kind::fixed, 6},
                                    {value_kind::bytes, 0}};
  std::vector<seed_shape> shapes;
  for (const key_type& k : key_types) {
    for (const value_type& v : value_types) {
      const bool bytes = k.kind == key_kind::bytes || v.kind == value_kind::bytes;
      shapes.push_back({k.kind, k.size, v.kind, v.size, 512, 1, false, false});
      shapes.push_back({k.kind, k.size, v.kind, v.size, 512, 40, bytes, false});
    }
    // An empty index, and one with metadata, of every key kind.
    shapes.push_back({k.kind, k.size, value_kind::bytes, 0, 512, 0, false, false});
    shapes.push_back({k.kind, k.size, value_kind::bytes, 0, 1024, 12, true, true});
  }
  // Three levels of small pages.
  shapes.push_back({key_kind::u64, 0, value_kind::u64, 0, 512, 2000, false, false});
  shapes.push_back({key_kind::fixed, 40, value_kind::none, 0, 512, 400, false, false});
  shapes.push_back({key_kind::bytes, 0, value_kind::none, 0, 512, 1500, false, false});
  shapes.push_back({key_kind::bytes, 0, value_kind::bytes, 0, 512, 300, true, true});
  shapes.push_back({key_kind::i64, 0, value_kind::fixed, 3, 512, 600, false, false});
  // A directory region of a dozen entries: the integer directory's tree
  // (lib/bbtree/detail/integer_directory.h) gets a layer above its bottom
  // nodes, and a last node it pads.
  shapes.push_back({key_kind::u64, 0, value_kind::u64, 0, 512, 40000, false, false});
  // Larger pages.
  shapes.push_back({key_kind::bytes, 0, value_kind::bytes, 0, 4096, 200, true, false});
  shapes.push_back({key_kind::u64, 0, value_kind::none, 0, 2048, 300, false, false});
  return shapes;
}

std::string make_seed_file(const seed_shape& shape, const fs::path& scratch) {
  std::mt19937_64 random(std::hash<std::string>()(shape.name()));
  std::map<std::string, std::string> entries;
  const std::size_t limit =
      shape.keys == key_kind::fixed && shape.key_size == 1 ? 200 : shape.entries;
  for (std::size_t i = 0, attempts = 0;
       entries.size() < std::min(shape.entries, limit) && attempts < 100 * shape.entries + 10;
       ++attempts) {
    if (entries.emplace(seed_key(shape, random, i), seed_value(shape, random)).second) ++i;
  }
  build_options options;
  options.keys = shape.keys;
  options.key_size = shape.key_size;
  options.values = shape.values;
  options.value_size = shape.value_size;
  options.page_size = shape.page_size;
  options.sync = false;
  options.overwrite = true;
  if (shape.metadata) {
    options.metadata = {
        {"created-by", "fuzz_make_corpus"}, {"", "an empty key"}, {"z", std::string("\0\xff", 2)}};
  }
  const fs::path path = scratch / "seed.bbt";
  builder writer(path, options);
  for (const auto& [key, value] : entries) writer.add(key, value);
  writer.finish();
  std::string bytes = read_whole(path);
  fs::remove(path);
  return bytes;
}

std::vector<std::string> build_differential_seeds() {
  std::vector<std::string> seeds;
  std::mt19937_64 random(42);
  for (std::uint8_t keys = 0; keys < 4; ++keys) {
    for (std::uint8_t values = 0; values < 4; ++values) {
      for (const std::uint8_t variant : {0, 1, 2, 3, 4}) {
        // variant 0: a few entries, streaming builder, 512-byte pages;
        // 1: the sorting builder with duplicates kept last, and metadata;
        // 2: a long run for a tall tree, 1024-byte pages;
        // 3: the external sort in 64 KiB, the long run as well;
        // 4: the external sort in 4 MiB, byte-string values only: eight
        //    runs of 2,047 entries, some values long (duplicates kept
        //    last, where the runs overlap).
        if (variant == 4 && values != 3) continue;
        std::uint8_t config = static_cast<std::uint8_t>(keys | values << 2);
        if (variant == 1) config |= 0x40 | 0x80;
        if (variant == 2 || variant == 3) config |= 2 << 4;
        const std::uint8_t key_size_byte = static_cast<std::uint8_t>(random() % 24);
        const std::uint8_t value_size_byte = static_cast<std::uint8_t>(random() % 24);
        const std::uint32_t key_size = keys == 0 || keys == 1 ? 8
                                       : keys == 2            ? fixed_size_of(key_size_byte)
                                                              : 0;
        const std::uint32_t value_size = values == 1   ? 8
                                         : values == 2 ? fixed_size_of(value_size_byte)
                                                       : 0;
        std::vector<std::pair<std::string, std::string>> entries;
        const std::size_t count = variant >= 2 ? 3 : 12;
        for (std::size_t i = 0; i < count; ++i) {
          std::string key = random_bytes(random, key_size != 0 ? key_size : random() % 30);
          std::string value =
              values == 0 ? std::string()
                          : random_bytes(random, value_size != 0 ? value_size : random() % 40);
          if (variant == 1 && i % 4 == 3) key = entries.front().first;  // a duplicate
          entries.emplace_back(std::move(key), std::move(value));
        }
        std::vector<build_seed_run> runs;
        if (variant == 2 || variant == 3) {
          runs.push_back({random_bytes(random, key_size != 0 ? key_size : 6), 1499, 1, 0x85});
        }
        for (int run = 0; variant == 4 && run < 8; ++run) {
          runs.push_back({random_bytes(random, key_size != 0 ? key_size : 6), 2047, 3, 0x85});
        }
        std::vector<std::pair<std::string, std::string>> metadata;
        if (variant == 1) metadata = {{"name", "seed"}, {"", ""}};
        // Byte 3: the duplicate policy, and the external sort's bit and budget.
        const std::uint8_t sort_byte = variant == 1   ? 2
                                       : variant == 3 ? 4
                                       : variant == 4 ? 2 | 4 | 3 << 3
                                                      : 0;
        seeds.push_back(encode_build_case(config, key_size_byte, value_size_byte, sort_byte,
                                          entries, runs, metadata));
      }
    }
  }
  return seeds;
}

namespace {

// The three configuration bytes of a text_parsers input.
std::string text_header(text_format format, std::uint8_t keys, std::uint8_t values, bool chunked,
                        std::uint8_t sizes = 0x37, std::uint8_t chunk_seed = 7) {
  std::string out;
  out += static_cast<char>(static_cast<std::uint8_t>(format) | keys << 2 | values << 4 |
                           (chunked ? 0x40 : 0));
  out += static_cast<char>(sizes);
  out += static_cast<char>(chunk_seed);
  return out;
}

}  // namespace

std::vector<std::string> text_parser_seeds() {
  std::vector<std::string> seeds;
  static constexpr text_format formats[] = {text_format::tsv, text_format::csv, text_format::jsonl,
                                            text_format::bin};
  static constexpr key_kind keys[] = {key_kind::u64, key_kind::i64, key_kind::bytes,
                                      key_kind::fixed};
  static constexpr value_kind values[] = {value_kind::none, value_kind::u64, value_kind::bytes,
                                          value_kind::fixed};
  std::mt19937_64 random(7);
  // Every format with every type: what the writer writes for random entries.
  for (const text_format format : formats) {
    for (std::uint8_t k = 0; k < 4; ++k) {
      for (std::uint8_t v = 0; v < 4; ++v) {
        entry_types types;
        types.keys = keys[k];
        types.values = values[v];
        types.key_size = types.keys == key_kind::fixed ? 1 + (0x37 & 15) : 0;
        types.value_size = types.values == value_kind::fixed ? 1 + (0x37 >> 4) : 0;
        std::ostringstream out;
        {
          entry_writer writer(out, "seed", format, types);
          for (int i = 0; i < 6; ++i) {
            std::string key;
            switch (types.keys) {
              case key_kind::u64:
                key = std::string(u64_key(random() >> (random() % 64)).view());
                break;
              case key_kind::i64:
                key = std::string(i64_key(static_cast<std::int64_t>(random())).view());
                break;
              case key_kind::fixed:
                key = random_bytes(random, types.key_size);
                break;
              case key_kind::bytes: {
                // UTF-8 text with escapes, so that jsonl can hold it too.
                const char* samples[] = {
                    "plain",       "tab\there",        "new\nline", "back\\slash", "quote\"comma,",
                    "caf\xc3\xa9", "\xf0\x9f\x98\x80", "",          "cr\rx",       "\x01\x7f"};
                key = samples[(i + k * 3 + v) % 10];
                break;
              }
            }
            std::string value;
            switch (types.values) {
              case value_kind::none:
                break;
              case value_kind::u64:
                value = std::string(u64_value(random()).view());
                break;
              case value_kind::fixed:
                value = random_bytes(random, types.value_size);
                break;
              case value_kind::bytes:
                value = i % 2 == 0 ? "v\xc3\xa9" : "x,\"y\"\t";
                break;
            }
            writer.write(key, value);
          }
          writer.flush();
        }
        seeds.push_back(text_header(format, k, v, (k + v) % 2 == 0) + out.str());
      }
    }
  }
  // Corner cases the writer never produces.  Key type bytes (2) and value
  // type bytes (2) unless noted.
  const auto tsv = [&](std::string text, std::uint8_t k = 2, std::uint8_t v = 2) {
    seeds.push_back(text_header(text_format::tsv, k, v, true) + std::move(text));
  };
  const auto csv = [&](std::string text, std::uint8_t k = 2, std::uint8_t v = 2) {
    seeds.push_back(text_header(text_format::csv, k, v, true) + std::move(text));
  };
  const auto jsonl = [&](std::string text, std::uint8_t k = 2, std::uint8_t v = 2) {
    seeds.push_back(text_header(text_format::jsonl, k, v, true) + std::move(text));
  };
  const auto bin = [&](std::string text, std::uint8_t k = 2, std::uint8_t v = 2) {
    seeds.push_back(text_header(text_format::bin, k, v, true) + std::move(text));
  };
  tsv("a\\tb\tc\\x00\\xFF\n\\\\\t\\r\\n\nlast\tline without LF");
  tsv("bad\\q\tescape\n");
  tsv("crlf\tline\r\n");
  tsv("\n", 2, 0);           // the empty key of a set
  tsv("one\ttwo\tthree\n");  // an extra field
  tsv("007\t18446744073709551615\n-0\t0\n", 1, 1);
  tsv("18446744073709551616\t1\n", 0, 1);  // out of range
  tsv("00ff00ff00ff00ff\tAbCdEf\n", 3, 3);
  tsv("\xff\xfe raw bytes\t\xc3\x28\n");
  csv("\"a,b\",\"c\"\"d\"\n\"multi\nline\",x\r\n\"\"\n", 2, 2);
  csv("a\"b,c\n");
  csv("\"unterminated,x\n");
  csv("\"a\"x,y\n");
  csv("k,v\r\nk2,v2\r", 2, 2);
  csv("\"\"\n\n", 2, 0);
  csv("\"esc\\x41\",\"\\t\"\n");
  jsonl("{\"key\": \"\\ud83d\\ude00\", \"value\": \"\\u0000\\/\\b\\f\"}\n");
  jsonl("{\"value\":null,\"key\":\"x\"}\n", 2, 0);
  jsonl("{\"key\": \"\\ud800\", \"value\": \"\"}\n");  // a lone surrogate
  jsonl("{\"key\": 1e3, \"value\": 1}\n", 0, 1);
  jsonl("{\"key\": -0, \"value\": 007}\n", 1, 1);
  jsonl("{\"key\": -9223372036854775808, \"value\": 18446744073709551615}\r\n", 1, 1);
  jsonl("{\"key\": \"a\", \"key\": \"b\", \"value\": \"\"}\n");
  jsonl("{\"key\": \"a\", \"other\": 1}\n");
  jsonl(" \t{ \"key\" : \"sp\" , \"value\" : \"ace\" } \n\n");
  jsonl("{\"key\": \"0a0B\", \"value\": \"ff\"}\n", 3, 3);
  jsonl("{\"key\": \"\xff\"}\n", 2, 0);
  std::string record;
  auto put = [&](std::string_view bytes) {
    unsigned char length[4];
    format::store_le(length, static_cast<std::uint32_t>(bytes.size()));
    record.append(reinterpret_cast<const char*>(length), 4);
    record.append(bytes);
  };
  put("key");
  put("value");
  put("");
  put(std::string("\0\xff", 2));
  bin(record);
  bin(record.substr(0, record.size() - 1));  // a truncated record
  record.clear();
  put(std::string(u64_key(7).view()));
  put(std::string(u64_value(9).view()));
  put("short");
  put(std::string(u64_value(9).view()));
  bin(record, 0, 1);
  return seeds;
}

}  // namespace bbtree::fuzz
