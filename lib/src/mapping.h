// The memory a reader's bytes live in: a file mapping, an anonymous copy in
// huge pages, or a file mapping that a background copy in huge pages
// replaces at the same address (reader.h, memory_mode).
#pragma once

#include <bbtree/format/layout.h>
#include <bbtree/reader.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>

namespace bbtree::detail {

class background_copy;

struct mapped_bytes {
  const unsigned char* base = nullptr;
  std::uint64_t size = 0;
  // Releases the memory; for a background copy, stops and joins it first.
  std::shared_ptr<void> holder;
  // Set for memory_mode::map_then_copy_huge_pages only.  The copy starts
  // when start_background_copy() is called, once the header has checked.
  background_copy* copy = nullptr;
  // The file's first header_size bytes (zeros past its end), read with
  // pread by the mapping modes when header_read is set: a read costs about
  // a third of the page fault that checking the header in the mapping
  // would take, on the way to the first answer.
  std::array<unsigned char, format::header_size> header{};
  bool header_read = false;
  // The directory region, read with pread after the header when the header
  // says its heads are 8 bytes (those of keys searched as integers, spec
  // 15.7) and it is at most max_directory_read bytes: the reader builds a
  // tree over those heads at open (detail/integer_directory.h), and reading
  // them through the mapping would map its pages -- on file systems that
  // cache files in large folios, the header's page with them.  Checked by
  // nothing here: the reader uses it only for the region it validated.
  std::unique_ptr<unsigned char[]> directory;
  std::size_t directory_length = 0;
};

// The largest directory region map_file reads apart from the mapping: 128K
// heads, the directory of a file of about a billion u64 keys.  A larger
// one is read through the mapping.
inline constexpr std::uint64_t max_directory_read = std::uint64_t{1} << 20;

// Maps or copies the `size` bytes of the file at `path` as `options` asks.
// Throws error(io_error) naming the file.  A C string, so that opening a
// file by a name held in a string builds no std::filesystem::path (see
// reader::open).
mapped_bytes map_file(const char* path, std::uint64_t size, const open_options& options);

void start_background_copy(background_copy& copy);
// Blocks until the copy is in place or has given up; returns whether it is
// in place.
bool wait_for_background_copy(background_copy& copy);

}  // namespace bbtree::detail
