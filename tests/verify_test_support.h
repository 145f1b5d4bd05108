// Helpers shared by the verifier's tests (test_verify.cc) and the fault
// injection tests (test_fault_injection.cc): files built in memory, bytes
// edited and re-checksummed, and questions about a verify_report.
#pragma once

#include "test_support.h"

#include <bbtree/format/layout.h>
#include <bbtree/verify.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bbtree::test {

// One of each key kind and each value kind, at small pages so that a few
// dozen entries make several leaves, an inner level and blob items.
inline const std::vector<shape>& verify_shapes() {
  static const std::vector<shape> shapes = {
      {key_kind::u64, 0, value_kind::u64, 0, 512},
      {key_kind::u64, 0, value_kind::none, 0, 512},
      {key_kind::i64, 0, value_kind::bytes, 0, 512},
      {key_kind::fixed, 20, value_kind::fixed, 12, 512},
      {key_kind::fixed, 3, value_kind::bytes, 0, 512},
      {key_kind::bytes, 0, value_kind::bytes, 0, 512},
      {key_kind::bytes, 0, value_kind::none, 0, 512},
      {key_kind::bytes, 0, value_kind::u64, 0, 512},
      {key_kind::bytes, 0, value_kind::fixed, 7, 512},
  };
  return shapes;
}

inline model random_model_of(const shape& kinds, std::size_t count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  model entries;
  std::size_t attempts = 0;
  while (entries.size() < count && attempts++ < count * 100) {
    entries[random_key(kinds, random)] = random_value(kinds, random);
  }
  return entries;
}

// Builds a file and returns its bytes.
inline std::string build_bytes(const shape& kinds, const model& entries,
                               std::vector<std::pair<std::string, std::string>> metadata = {}) {
  scratch_directory scratch;
  build_options options = options_for(kinds);
  options.metadata = std::move(metadata);
  builder writer(scratch / "index.bbt", options);
  for (const auto& [key, value] : entries) writer.add(key, value);
  writer.finish();
  return read_file(scratch / "index.bbt");
}

inline std::span<const std::byte> as_bytes(const std::string& file) {
  return {reinterpret_cast<const std::byte*>(file.data()), file.size()};
}

inline unsigned char* raw(std::string& file) {
  return reinterpret_cast<unsigned char*>(file.data());
}

inline std::uint32_t page_size_of(const std::string& file) {
  return format::load_le<std::uint32_t>(file.data() + format::header::page_size_offset);
}

// Recomputes the checksum of page `number` after an edit, so that the
// structural checks, not the checksum, must find the damage.
inline void rechecksum_page(std::string& file, std::uint32_t number) {
  const std::uint32_t page_size = page_size_of(file);
  unsigned char* page = raw(file) + std::uint64_t{number} * page_size;
  format::store_le<std::uint32_t>(page + format::page::checksum_offset,
                                  format::page_checksum(page, page_size));
}

inline void rechecksum_header(std::string& file) {
  format::store_le<std::uint32_t>(raw(file) + format::header::checksum_offset,
                                  format::header_checksum(raw(file)));
}

template <typename T>
void store_field(std::string& file, std::uint64_t offset, T value) {
  format::store_le<T>(raw(file) + offset, value);
}

inline verify_report verify_string(const std::string& file, verify_options options = {}) {
  return verify_bytes(as_bytes(file), "test.bbt", options);
}

inline std::string describe(const verify_report& report) {
  std::string text;
  for (const verify_problem& problem : report.problems)
    text += format_problem(report, problem) + "\n";
  if (report.truncated_list) text += "(list truncated)\n";
  return text.empty() ? "ok\n" : text;
}

// Whether some problem lies on `page`, and its message contains `text`.
inline bool has_page_problem(const verify_report& report, std::uint32_t page,
                             std::string_view text = {}) {
  for (const verify_problem& problem : report.problems) {
    if (problem.region == verify_region::page && problem.page == page &&
        problem.message.find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

inline bool has_region_problem(const verify_report& report, verify_region region,
                               std::string_view text = {}) {
  for (const verify_problem& problem : report.problems) {
    if (problem.region == region && problem.message.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace bbtree::test
