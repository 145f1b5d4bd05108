// A read-only file mapping, or a copy of the file in 2 MiB-aligned anonymous
// memory advised for huge pages: the reading modes of the peers whose file
// bytes the benchmark maps itself (the sorted array).
#pragma once

#include "peer.h"

#include <cstdio>

namespace bbtree::bench {

class mapped_file {
 public:
  mapped_file() = default;
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  ~mapped_file() { close(); }

  void open(const std::string& path, bool huge);
  void close() noexcept;
  const unsigned char* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  smaps_usage usage() const { return smaps_for_range(data_, size_); }

 private:
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
  void* map_ = nullptr;
  huge_copy copy_;
};

// A buffered writer that fails loudly.
class file_writer {
 public:
  explicit file_writer(const std::string& path);
  ~file_writer();
  file_writer(const file_writer&) = delete;
  file_writer& operator=(const file_writer&) = delete;
  void write(const void* data, std::size_t size);
  void finish();

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace bbtree::bench
