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
};

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
