// The input language of fuzz_build_differential: a few configuration bytes,
// then records that add entries (one at a time or in runs), duplicates and
// metadata.  Any byte string decodes to some case; fuzz_make_corpus writes
// seeds with encode_build_case.
//
//   byte 0   bits 0-1 key kind (u64, i64, fixed, bytes)
//            bits 2-3 value kind (none, u64, fixed, bytes)
//            bits 4-5 page size (512, 512, 1024, 4096)
//            bit 6    sorting_builder with entries in input order (else the
//                     streaming builder with entries stably sorted)
//            bit 7    metadata records are used
//   byte 1   fixed key size (fixed_size_of), byte 2 fixed value size
//   byte 3   bits 0-1 duplicate policy (error, keep_first, keep_last, keep_last)
//            bit 2    the external sort (external_sorting_builder) with entries
//                     in input order, whatever bit 6 of byte 0 says, with a
//                     budget by bits 3-4: 64 KiB, 256 KiB (many runs and
//                     merge passes), 2 MiB, 4 MiB (a few runs, or none)
//   records  tag byte, then by tag % 8:
//            0-3  one entry: key, value
//            4    a run: u16 count, key, u8 step, u8 value style: count
//                 entries whose keys count up from the key
//            5    a metadata pair: u8 length, bytes, u8 length, bytes
//            6    a duplicate: u16 index of an earlier entry, value
//            7    a neighbour: an entry whose key is the previous key changed
//                 at its end (shared prefixes, inline key ties)
//   keys     u64, i64: 8 bytes; fixed: N bytes; bytes: u8 L, then
//            L < 0xE0: L % 48 bytes; L < 0xFC: 48 + u16 % 400 bytes of a
//            pattern; 0xFC: 65536 (the longest key); 0xFD: 65537 (one too
//            many); else 200 + u16 % 2000
//   values   none: nothing; u64: 8 bytes; fixed: N bytes; bytes: u8 L, then
//            L < 0xE0: L % 48 bytes; L < 0xFF: 48 + u16 % 5000 of a pattern;
//            0xFF: 70000 + u16
//   Bytes past the end of the input read as zeros.
#pragma once

#include <bbtree/builder.h>
#include <bbtree/external_sort.h>
#include <bbtree/format/endian.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace bbtree::fuzz {

struct build_case {
  build_options options;
  bool sorting = false;  // sorting_builder, entries in input order
  // Not zero: external_sorting_builder with this budget, entries in input
  // order.
  std::uint64_t sort_memory = 0;
  std::vector<std::pair<std::string, std::string>> entries;  // in input order
};

inline constexpr std::size_t build_case_max_entries = 16384;
inline constexpr std::size_t build_case_max_bytes = std::size_t{8} << 20;

inline std::uint32_t fixed_size_of(std::uint8_t byte) {
  return byte < 0xC0 ? 1u + byte % 24u : 24u + (byte - 0xC0u) * 8u;
}

class build_case_decoder {
 public:
  explicit build_case_decoder(std::span<const std::uint8_t> input) : input_(input) {}

  build_case decode() {
    build_case out;
    const std::uint8_t config = u8();
    static constexpr key_kind keys[] = {key_kind::u64, key_kind::i64, key_kind::fixed,
                                        key_kind::bytes};
    static constexpr value_kind values[] = {value_kind::none, value_kind::u64, value_kind::fixed,
                                            value_kind::bytes};
    static constexpr std::uint32_t pages[] = {512, 512, 1024, 4096};
    static constexpr duplicate_policy policies[] = {
        duplicate_policy::error, duplicate_policy::keep_first, duplicate_policy::keep_last,
        duplicate_policy::keep_last};
    build_options& options = out.options;
    options.keys = keys[config & 3];
    options.values = values[(config >> 2) & 3];
    options.page_size = pages[(config >> 4) & 3];
    out.sorting = (config & 0x40) != 0;
    const bool with_metadata = (config & 0x80) != 0;
    const std::uint8_t key_size_byte = u8();
    const std::uint8_t value_size_byte = u8();
    options.key_size = options.keys == key_kind::fixed ? fixed_size_of(key_size_byte) : 0;
    options.value_size = options.values == value_kind::fixed ? fixed_size_of(value_size_byte) : 0;
    const std::uint8_t sort_byte = u8();
    options.duplicates = policies[sort_byte & 3];
    static constexpr std::uint64_t sort_budgets[] = {
        std::uint64_t{64} << 10, std::uint64_t{256} << 10, std::uint64_t{2} << 20,
        std::uint64_t{4} << 20};
    if ((sort_byte & 4) != 0) out.sort_memory = sort_budgets[(sort_byte >> 3) & 3];
    options.sync = false;
    options.overwrite = true;
    key_size_ = format::encoded_key_size(options.keys, options.key_size);
    keys_ = options.keys;
    values_ = options.values;
    value_size_ = format::encoded_value_size(options.values, options.value_size);

    std::unordered_set<std::string> metadata_keys;
    while (at_ < input_.size() && out.entries.size() < build_case_max_entries &&
           bytes_ < build_case_max_bytes) {
      const std::uint8_t tag = u8();
      switch (tag % 8) {
        case 4: {
          const std::size_t count = 1 + u16() % 2048;
          const std::string first = key();
          const std::uint8_t step = u8();
          const std::uint8_t style = u8();
          for (std::size_t i = 0; i < count && out.entries.size() < build_case_max_entries; ++i) {
            add(out, counted_key(first, i * (1 + std::uint64_t{step})), run_value(style, i));
          }
          break;
        }
        case 5: {
          std::string metadata_key = take(u8() % 16);
          std::string metadata_value = take(u8() % 48);
          if (with_metadata && metadata_keys.insert(metadata_key).second) {
            options.metadata.emplace_back(std::move(metadata_key), std::move(metadata_value));
          }
          break;
        }
        case 6: {
          const std::size_t index = u16();
          std::string value_bytes = value();
          if (!out.entries.empty()) {
            add(out, std::string(out.entries[index % out.entries.size()].first),
                std::move(value_bytes));
          }
          break;
        }
        case 7: {
          std::string neighbour = out.entries.empty() ? key() : out.entries.back().first;
          const std::uint8_t how = u8();
          if (keys_ == key_kind::bytes) {
            if (how % 3 == 0 && !neighbour.empty()) neighbour.pop_back();
            neighbour += take(how % 5);
          } else if (!neighbour.empty()) {
            neighbour[neighbour.size() - 1 - how % std::min<std::size_t>(neighbour.size(), 3)] ^=
                static_cast<char>(u8() | 1);
          }
          add(out, std::move(neighbour), value());
          break;
        }
        default: {
          std::string key_bytes = key();
          add(out, std::move(key_bytes), value());
          break;
        }
      }
    }
    return out;
  }

 private:
  std::uint8_t u8() { return at_ < input_.size() ? input_[at_++] : 0; }
  std::uint16_t u16() {
    const std::uint16_t high = u8();
    return static_cast<std::uint16_t>(high << 8 | u8());
  }
  std::string take(std::size_t length) {
    std::string bytes(length, '\0');
    for (std::size_t i = 0; i < length && at_ < input_.size(); ++i)
      bytes[i] = static_cast<char>(input_[at_++]);
    return bytes;
  }
  // `length` bytes of a constant run ending in two input bytes: long keys
  // that share long prefixes.
  std::string pattern(std::size_t length) {
    std::string bytes(length, static_cast<char>(u8()));
    const std::string tail = take(2);
    for (std::size_t i = 0; i < 2 && i < length; ++i) bytes[length - 1 - i] = tail[i];
    return bytes;
  }

  std::string key() {
    if (keys_ != key_kind::bytes) return take(key_size_);
    const std::uint8_t length = u8();
    if (length < 0xE0) return take(length % 48);
    if (length < 0xFC) return pattern(48 + u16() % 400);
    if (length == 0xFC) return pattern(65536);
    if (length == 0xFD) return pattern(65537);
    return pattern(200 + u16() % 2000);
  }

  std::string value() {
    if (values_ != value_kind::bytes) return take(value_size_);
    const std::uint8_t length = u8();
    if (length < 0xE0) return take(length % 48);
    if (length < 0xFF) return pattern(48 + u16() % 5000);
    return pattern(70000 + u16());
  }

  // The key `first` counted up by `n`: integers as integers, fixed keys in
  // their last 8 bytes, byte strings with a big-endian counter appended.
  std::string counted_key(const std::string& first, std::uint64_t n) const {
    std::string key_bytes = first;
    if (keys_ == key_kind::bytes) {
      unsigned char counter[4];
      format::store_be(counter, static_cast<std::uint32_t>(n));
      key_bytes.append(reinterpret_cast<const char*>(counter), 4);
      return key_bytes;
    }
    // Add n to the big-endian number in the last min(8, size) bytes.
    std::uint64_t carry = n;
    for (std::size_t i = key_bytes.size(); i-- > 0 && carry != 0 && key_bytes.size() - i <= 8;) {
      const std::uint64_t sum = static_cast<unsigned char>(key_bytes[i]) + (carry & 0xFF);
      key_bytes[i] = static_cast<char>(sum & 0xFF);
      carry = (carry >> 8) + (sum >> 8);
    }
    return key_bytes;
  }

  std::string run_value(std::uint8_t style, std::size_t i) const {
    switch (values_) {
      case value_kind::none:
        return {};
      case value_kind::u64:
      case value_kind::fixed: {
        std::string bytes(value_size_, static_cast<char>(style));
        unsigned char counter[8];
        format::store_le(counter, std::uint64_t{i} * (style | 1u));
        for (std::size_t j = 0; j < bytes.size() && j < 8; ++j)
          bytes[j] = static_cast<char>(counter[j]);
        return bytes;
      }
      case value_kind::bytes: {
        // Style bit 7: now and then a value past the inline limit.
        std::size_t length = (i * (style | 1u)) % 24;
        if ((style & 0x80) != 0 && i % 7 == 3) length = 100 + (i * 37) % 900;
        std::string bytes(length, static_cast<char>(style));
        for (std::size_t j = 0; j < bytes.size(); j += 5) bytes[j] = static_cast<char>(i + j);
        return bytes;
      }
    }
    return {};
  }

  void add(build_case& out, std::string key_bytes, std::string value_bytes) {
    bytes_ += key_bytes.size() + value_bytes.size();
    out.entries.emplace_back(std::move(key_bytes), std::move(value_bytes));
  }

  std::span<const std::uint8_t> input_;
  std::size_t at_ = 0;
  std::size_t bytes_ = 0;
  key_kind keys_ = key_kind::bytes;
  value_kind values_ = value_kind::bytes;
  std::uint32_t key_size_ = 0;
  std::uint32_t value_size_ = 0;
};

inline build_case decode_build_case(std::span<const std::uint8_t> input) {
  return build_case_decoder(input).decode();
}

// Writes a seed: the configuration, then every entry as a single record
// (keys and values short enough for the direct encodings), then runs.
struct build_seed_run {
  std::string first_key;
  std::uint16_t count;
  std::uint8_t step;
  std::uint8_t value_style;
};

inline std::string encode_build_case(
    std::uint8_t config, std::uint8_t key_size_byte, std::uint8_t value_size_byte,
    std::uint8_t sort_byte, const std::vector<std::pair<std::string, std::string>>& entries,
    const std::vector<build_seed_run>& runs,
    const std::vector<std::pair<std::string, std::string>>& metadata = {}) {
  const bool bytes_keys = (config & 3) == 3;
  const bool bytes_values = ((config >> 2) & 3) == 3;
  std::string out;
  out += static_cast<char>(config);
  out += static_cast<char>(key_size_byte);
  out += static_cast<char>(value_size_byte);
  out += static_cast<char>(sort_byte);
  auto put_key = [&](const std::string& key) {
    if (bytes_keys) out += static_cast<char>(key.size() % 48);
    out += key;
  };
  for (const auto& [key, value] : entries) {
    out += '\0';
    put_key(key);
    if (bytes_values) out += static_cast<char>(value.size() % 48);
    out += value;
  }
  for (const build_seed_run& run : runs) {
    out += '\4';
    out += static_cast<char>(run.count >> 8);
    out += static_cast<char>(run.count & 0xFF);
    put_key(run.first_key);
    out += static_cast<char>(run.step);
    out += static_cast<char>(run.value_style);
  }
  for (const auto& [key, value] : metadata) {
    out += '\5';
    out += static_cast<char>(key.size());
    out += key;
    out += static_cast<char>(value.size());
    out += value;
  }
  return out;
}

}  // namespace bbtree::fuzz
