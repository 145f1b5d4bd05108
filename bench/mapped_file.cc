#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace bbtree::bench {

void mapped_file::open(const std::string& path, bool huge) {
  close();
  if (huge) {
    copy_.load(path);
    data_ = static_cast<const unsigned char*>(copy_.data);
    size_ = copy_.size;
    return;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("open " + path + ": " + std::strerror(errno));
  size_ = file_size(path);
  map_ = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) fail("mmap " + path + ": " + std::strerror(errno));
  data_ = static_cast<const unsigned char*>(map_);
}

void mapped_file::close() noexcept {
  if (map_ != nullptr) ::munmap(map_, size_);
  map_ = nullptr;
  copy_.reset();
  data_ = nullptr;
  size_ = 0;
}

file_writer::file_writer(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) fail("create " + path + ": " + std::strerror(errno));
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
}

file_writer::~file_writer() {
  if (file_ != nullptr) std::fclose(file_);
}

void file_writer::write(const void* data, std::size_t size) {
  if (size != 0 && std::fwrite(data, 1, size, file_) != size)
    fail("write " + path_ + ": " + std::strerror(errno));
}

void file_writer::finish() {
  if (std::fclose(file_) != 0) fail("close " + path_ + ": " + std::strerror(errno));
  file_ = nullptr;
}

}  // namespace bbtree::bench
