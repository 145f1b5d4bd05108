// The targets whose input is a file: fuzz_open_query, fuzz_verify and
// fuzz_mutated_file.
#include "fuzz_support.h"

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <optional>

namespace bbtree::fuzz {

namespace {

// The input in memory of its own, aligned as a mapping would be: reader
// offsets are relative to the start, and an exact-size buffer lets the
// address sanitizer catch a read one byte past the end.
struct file_copy {
  std::unique_ptr<std::uint8_t[]> bytes;
  std::size_t size;

  explicit file_copy(bytes_view input)
      : bytes(new std::uint8_t[input.size() ? input.size() : 1]), size(input.size()) {
    if (size > 0) std::memcpy(bytes.get(), input.data(), size);
  }
  std::span<const std::byte> span() const {
    return {reinterpret_cast<const std::byte*>(bytes.get()), size};
  }
  bytes_view view() const { return {bytes.get(), size}; }
};

std::optional<reader> open(const file_copy& file) {
  try {
    return reader::from_memory(file.span(), "input");
  } catch (const error&) {
    return std::nullopt;
  }
}

}  // namespace

int run_open_query(bytes_view input) {
  const file_copy file(input);
  if (const auto index = open(file)) exercise(*index, input);
  return 0;
}

int run_verify(bytes_view input) {
  const file_copy file(input);
  const bool valid = verifies(file.view());
  check_verifier_modes(file.view(), valid);
  const auto index = open(file);
  if (valid) {
    BBTREE_FUZZ_CHECK(index.has_value(), "a file that verifies does not open");
    check_consistent(*index);
  }
  return 0;
}

int run_mutated_file(bytes_view input) {
  const file_copy file(input);
  const auto index = open(file);
  if (index) exercise(*index, input);
  if (verifies(file.view())) {
    BBTREE_FUZZ_CHECK(index.has_value(), "a file that verifies does not open");
    check_consistent(*index);
  }
  return 0;
}

}  // namespace bbtree::fuzz
