// A bbtree index kept inside a file of the application's own format, and
// read in place from there: the container file is mapped, and the reader
// reads the index's span of the mapping, at whatever offset it lies, with no
// copy.  This works because an index holds no pointers, only page numbers
// and offsets relative to its own first byte, and reads every multi-byte
// field with unaligned loads.
//
//   example-embedded pack CONTAINER INDEX [NOTE]   write a container
//   example-embedded info CONTAINER                where the index lies, and a full check
//   example-embedded get CONTAINER < keys          KEY<TAB>VALUE or KEY<TAB>-
//
// The container (this application's format, not bbtree's): a 37-byte header,
// the application's own data (here a text NOTE), then the index, unchanged
// from its file.  Header fields, little-endian:
//   0  magic "NOTEPACK" (8 bytes)
//   8  header version, 1 (1 byte)
//   9  index offset (8 bytes)
//  17  index length (8 bytes)
//  25  note offset (8 bytes)
//  33  note length (4 bytes)
// So the index lies at offset 37 + the note's length, aligned to nothing in
// general; the test puts it at 87, an odd offset.
// The index is read with a typed view of byte-string keys and u64 values,
// as examples/sample gives.
#include <bbtree/typed.h>
#include <bbtree/verify.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

constexpr std::string_view container_magic = "NOTEPACK";
constexpr std::uint8_t container_version = 1;
constexpr std::size_t container_header_size = 37;

struct container_header {
  std::uint64_t index_offset = 0;
  std::uint64_t index_length = 0;
  std::uint64_t note_offset = 0;
  std::uint32_t note_length = 0;
};

// The application's header is its own: plain byte-by-byte little-endian
// fields, nothing borrowed from bbtree.
template <class Integer>
void store_le(unsigned char* target, Integer value) {
  for (std::size_t i = 0; i < sizeof(Integer); ++i)
    target[i] = static_cast<unsigned char>(value >> (8 * i));
}

template <class Integer>
Integer load_le(const unsigned char* source) {
  Integer value = 0;
  for (std::size_t i = 0; i < sizeof(Integer); ++i)
    value |= static_cast<Integer>(source[i]) << (8 * i);
  return value;
}

[[noreturn]] void fail(const std::string& message) { throw std::runtime_error(message); }

std::string system_message(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(system_message("cannot open " + path));
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail(system_message("cannot read " + path));
  return content;
}

void pack(const std::string& container_path, const std::string& index_path, std::string_view note) {
  const std::string index_bytes = read_whole_file(index_path);
  std::array<unsigned char, container_header_size> header{};
  container_header fields;
  fields.note_offset = container_header_size;
  fields.note_length = static_cast<std::uint32_t>(note.size());
  fields.index_offset = fields.note_offset + fields.note_length;
  fields.index_length = index_bytes.size();
  std::memcpy(header.data(), container_magic.data(), container_magic.size());
  header[8] = container_version;
  store_le(header.data() + 9, fields.index_offset);
  store_le(header.data() + 17, fields.index_length);
  store_le(header.data() + 25, fields.note_offset);
  store_le(header.data() + 33, fields.note_length);

  std::ofstream out(container_path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(header.data()), header.size());
  out.write(note.data(), static_cast<std::streamsize>(note.size()));
  out.write(index_bytes.data(), static_cast<std::streamsize>(index_bytes.size()));
  out.close();
  if (!out) fail(system_message("cannot write " + container_path));
  std::printf("%s: header %zu bytes, note %u bytes, index %llu bytes at offset %llu\n",
              container_path.c_str(), container_header_size, fields.note_length,
              static_cast<unsigned long long>(fields.index_length),
              static_cast<unsigned long long>(fields.index_offset));
}

// A read-only mapping of a whole file.
class mapped_file {
 public:
  explicit mapped_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(system_message("cannot open " + path));
    struct stat status;
    if (::fstat(fd, &status) != 0) {
      ::close(fd);
      fail(system_message("cannot stat " + path));
    }
    size_ = static_cast<std::size_t>(status.st_size);
    if (size_ > 0) {
      address_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    }
    ::close(fd);  // the mapping keeps the file
    if (address_ == MAP_FAILED) fail(system_message("cannot map " + path));
  }
  ~mapped_file() {
    if (address_ != nullptr && address_ != MAP_FAILED) ::munmap(address_, size_);
  }
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;

  std::span<const std::byte> bytes() const {
    return {static_cast<const std::byte*>(address_), size_};
  }

 private:
  void* address_ = nullptr;
  std::size_t size_ = 0;
};

// The container's header, checked against the file's size so that a
// damaged header cannot send the reader outside the mapping.
container_header read_header(std::span<const std::byte> file, const std::string& path) {
  if (file.size() < container_header_size) fail(path + ": shorter than the container header");
  const auto* header = reinterpret_cast<const unsigned char*>(file.data());
  if (std::memcmp(header, container_magic.data(), container_magic.size()) != 0) {
    fail(path + ": not a NOTEPACK container");
  }
  if (header[8] != container_version) fail(path + ": an unknown container version");
  container_header fields;
  fields.index_offset = load_le<std::uint64_t>(header + 9);
  fields.index_length = load_le<std::uint64_t>(header + 17);
  fields.note_offset = load_le<std::uint64_t>(header + 25);
  fields.note_length = load_le<std::uint32_t>(header + 33);
  const auto fits = [&](std::uint64_t offset, std::uint64_t length) {
    return offset <= file.size() && length <= file.size() - offset;
  };
  if (!fits(fields.index_offset, fields.index_length) ||
      !fits(fields.note_offset, fields.note_length)) {
    fail(path + ": the header points outside the file");
  }
  return fields;
}

// The index's bytes: a span of the mapping, not a copy.
std::span<const std::byte> index_span(std::span<const std::byte> file,
                                      const container_header& fields) {
  return file.subspan(fields.index_offset, fields.index_length);
}

void info(const std::string& path) {
  const mapped_file file(path);
  const container_header fields = read_header(file.bytes(), path);
  const std::span<const std::byte> span = index_span(file.bytes(), fields);
  const auto index = bbtree::typed_index<std::string_view, std::uint64_t>(
      bbtree::reader::from_memory(span, path + "@" + std::to_string(fields.index_offset)));
  const auto address = reinterpret_cast<std::uintptr_t>(span.data());
  const std::string_view note(
      reinterpret_cast<const char*>(file.bytes().data() + fields.note_offset), fields.note_length);
  std::printf("note: %.*s\n", static_cast<int>(note.size()), note.data());
  std::printf("index offset: %llu (offset mod 8: %llu; address mod 8: %llu)\n",
              static_cast<unsigned long long>(fields.index_offset),
              static_cast<unsigned long long>(fields.index_offset % 8),
              static_cast<unsigned long long>(address % 8));
  std::printf("index length: %llu bytes, %llu entries\n",
              static_cast<unsigned long long>(fields.index_length),
              static_cast<unsigned long long>(index.size()));
  // The reader reads the mapping itself: its bytes are the span's bytes.
  const bool in_place = index.raw().bytes().data() == span.data();
  std::printf("read in place: %s\n", in_place ? "yes" : "no");
  // The verifier takes the same span: every checksum and rule, in place.
  const bbtree::verify_report report =
      bbtree::verify_bytes(span, path + "@" + std::to_string(fields.index_offset));
  for (const bbtree::verify_problem& problem : report.problems) {
    std::printf("%s\n", bbtree::format_problem(report, problem).c_str());
  }
  std::printf("verify: %s\n", report.ok() ? "ok" : "damaged");
  if (!in_place || !report.ok()) fail(path + ": the embedded index is not usable in place");
}

int get(const std::string& path) {
  const mapped_file file(path);
  const container_header fields = read_header(file.bytes(), path);
  const auto index =
      bbtree::typed_index<std::string_view, std::uint64_t>(bbtree::reader::from_memory(
          index_span(file.bytes(), fields), path + "@" + std::to_string(fields.index_offset)));
  std::string key;
  while (std::getline(std::cin, key)) {
    if (const auto value = index.get(key)) {
      std::printf("%s\t%llu\n", key.c_str(), static_cast<unsigned long long>(*value));
    } else {
      std::printf("%s\t-\n", key.c_str());
    }
  }
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: example-embedded pack CONTAINER INDEX [NOTE]\n"
               "       example-embedded info CONTAINER\n"
               "       example-embedded get CONTAINER < keys\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 3) return usage();
  const std::string_view command = argv[1];
  if (command == "pack" && (argc == 4 || argc == 5)) {
    pack(argv[2], argv[3], argc == 5 ? argv[4] : "An application's own data, then an index.");
    return 0;
  }
  if (command == "info" && argc == 3) {
    info(argv[2]);
    return 0;
  }
  if (command == "get" && argc == 3) return get(argv[2]);
  return usage();
} catch (const std::exception& failure) {
  // bbtree::error is a std::runtime_error: its message names the span.
  std::fprintf(stderr, "example-embedded: %s\n", failure.what());
  return 1;
}
