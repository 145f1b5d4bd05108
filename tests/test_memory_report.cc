// memory_report.h: what /proc/self/smaps says about a reader's bytes.  Only
// what the kernel guarantees is checked: populated bytes are resident, and
// each memory mode's bytes lie where the mode says (a mapping of the file,
// or anonymous memory).  Whether huge pages were granted is checked only
// where a control file shows that the kernel grants them at all.
#include "test_support.h"

#include <bbtree/detail/reader_core.h>
#include <bbtree/memory_report.h>

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

using namespace bbtree;
using namespace bbtree::test;

namespace {

std::filesystem::path build_test_index(const scratch_directory& scratch,
                                       std::uint64_t entries = 100000) {
  const std::filesystem::path path = scratch / "memory.bbt";
  builder writer(path, options_for({key_kind::u64, 8, value_kind::u64, 8}));
  for (std::uint64_t i = 0; i < entries; ++i) writer.add(u64_key(i), u64_value(i));
  writer.finish();
  return path;
}

}  // namespace

TEST_CASE("memory reports cover a reader's bytes in every memory mode", "[memory_report]") {
  scratch_directory scratch;
  const std::filesystem::path path = build_test_index(scratch);
  const std::uint64_t file_kb = std::filesystem::file_size(path) / 1024;

  for (const memory_mode mode :
       {memory_mode::map, memory_mode::map_huge_pages, memory_mode::copy_huge_pages,
        memory_mode::map_then_copy_huge_pages}) {
    CAPTURE(static_cast<int>(mode));
    open_options options;
    options.memory = mode;
    options.populate = true;
    const reader index = reader::open(path, options);
    const bool copied = index.wait_for_huge_page_copy();
    REQUIRE(copied == (mode == memory_mode::copy_huge_pages ||
                       mode == memory_mode::map_then_copy_huge_pages));
    const memory_report report = memory_report_for(index);
    REQUIRE(report.mappings >= 1);
    REQUIRE(report.size_kb >= file_kb);
    // Populated: every byte is resident (mappings count whole, so more may be).
    REQUIRE(report.rss_kb >= file_kb);
    REQUIRE(report.huge_kb() <= report.rss_kb);

    const std::vector<address_range> file_mappings = mappings_of_file(path);
    if (copied) {
      // The copy is anonymous memory; the file was read, not mapped.
      REQUIRE(file_mappings.empty());
      REQUIRE(memory_report_for_file(path).mappings == 0);
      REQUIRE(report.file_pmd_mapped_kb == 0);
    } else {
      REQUIRE(file_mappings.size() == 1);
      const auto begin = reinterpret_cast<std::uintptr_t>(index.bytes().data());
      REQUIRE(file_mappings[0].begin <= begin);
      REQUIRE(begin + index.bytes().size() <= file_mappings[0].end);
      const memory_report by_file = memory_report_for_file(path);
      REQUIRE(by_file.mappings == 1);
      REQUIRE(by_file.rss_kb == report.rss_kb);
      REQUIRE(report.anon_huge_kb == 0);
    }
  }
  // Closed: nothing maps the file any more.
  REQUIRE(mappings_of_file(path).empty());
}

TEST_CASE("a memory report of no bytes is empty", "[memory_report]") {
  const memory_report report = memory_report_for_range(nullptr, 0);
  REQUIRE(report.mappings == 0);
  REQUIRE(report.rss_kb == 0);
  REQUIRE(memory_report_for_file("/nonexistent/bbtree/file").mappings == 0);
}

namespace {

// Whether the page holding `address` is mapped in this process's page
// tables (bit 63 of its /proc/self/pagemap entry), as opposed to only
// being in the page cache.  Readable without privileges; only the frame
// numbers are hidden then.
bool page_present(const void* address) {
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const auto page = reinterpret_cast<std::uintptr_t>(address) / ::sysconf(_SC_PAGESIZE);
  std::uint64_t entry = 0;
  const ssize_t got = ::pread(fd, &entry, sizeof entry, static_cast<off_t>(page * sizeof entry));
  ::close(fd);
  REQUIRE(got == static_cast<ssize_t>(sizeof entry));
  return (entry >> 63) & 1u;
}

}  // namespace

TEST_CASE("opening a mapped index reads its header apart from the mapping", "[memory_report]") {
  // The header is read with pread and checked there (lib/src/mapping.h), so
  // that opening costs no page fault: no page of the mapping is touched
  // until the first lookup.  So is the directory region that open builds
  // its integer directory from: touching it would map pages, and on file
  // systems that cache files in large folios, the header's with them.
  scratch_directory scratch;
  const std::filesystem::path path = build_test_index(scratch);
  for (const memory_mode mode : {memory_mode::map, memory_mode::map_huge_pages}) {
    CAPTURE(static_cast<int>(mode));
    open_options options;
    options.memory = mode;
    const reader index = reader::open(path, options);
    REQUIRE(index.info().entries == 100000);
    REQUIRE_FALSE(index.core().integer_directory().empty());
    const std::byte* first_page = index.bytes().data();
    const std::byte* directory_page = first_page + index.info().directory_offset;
    REQUIRE_FALSE(page_present(first_page));
    REQUIRE_FALSE(page_present(directory_page));
    // The header is still the mapping's first bytes; reading them maps the
    // page, which shows that the probe above can see a present page.
    REQUIRE(std::memcmp(first_page,
                        "\x89"
                        "BBTREE\n",
                        8) == 0);
    REQUIRE(page_present(first_page));
    REQUIRE(index.get(u64_key(4242)) == std::optional<std::string_view>(u64_value(4242).view()));
  }
}

namespace {

// kB of `path`, written in 2 MiB pieces at multiples of 2 MiB and mapped
// as the reader maps it, that the kernel maps with 2 MiB entries: 0 where
// the file system keeps the page cache in smaller folios (ext4 before
// Linux 6.16), so that no file gets huge pages there.
std::uint64_t huge_kb_of_a_file_written_in_2_mib_pieces(const std::filesystem::path& path) {
  constexpr std::size_t piece = std::size_t{2} << 20;
  constexpr std::size_t pieces = 4;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  std::vector<char> bytes(piece, 'x');
  for (std::size_t i = 0; i < pieces; ++i) {
    REQUIRE(::pwrite(fd, bytes.data(), piece, static_cast<off_t>(i * piece)) ==
            static_cast<ssize_t>(piece));
  }
  void* mapping = ::mmap(nullptr, pieces * piece, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  REQUIRE(mapping != MAP_FAILED);
  ::madvise(mapping, pieces * piece, MADV_HUGEPAGE);
  const auto* mapped = static_cast<const volatile char*>(mapping);
  char sink = 0;
  for (std::size_t offset = 0; offset < pieces * piece; offset += 4096) sink ^= mapped[offset];
  (void)sink;
  const std::uint64_t huge_kb = memory_report_for_range(mapping, pieces * piece).file_pmd_mapped_kb;
  ::munmap(mapping, pieces * piece);
  return huge_kb;
}

}  // namespace

TEST_CASE("a file the builder wrote is mapped with huge pages where the kernel can",
          "[memory_report]") {
  // The builder writes in 2 MiB pieces at multiples of 2 MiB, so that the
  // page cache holds the file in 2 MiB folios, which a mapping maps with
  // 2 MiB entries (lib/src/builder.cc, output_flush_size).  Checked where a
  // file written so gets them at all; written in 1 MiB pieces, an index
  // got none.
  scratch_directory scratch;
  const std::uint64_t control_kb = huge_kb_of_a_file_written_in_2_mib_pieces(scratch / "control");
  if (control_kb == 0) {
    WARN("this kernel maps no file with huge pages; not checked");
    return;
  }
  const std::filesystem::path path = build_test_index(scratch, 1000000);
  REQUIRE(std::filesystem::file_size(path) > (std::uint64_t{4} << 20));
  open_options options;
  options.memory = memory_mode::map_huge_pages;
  options.populate = true;
  const reader index = reader::open(path, options);
  const memory_report report = memory_report_for(index);
  INFO("control: " << control_kb << " kB; the index: " << report.file_pmd_mapped_kb << " kB of "
                   << report.rss_kb << " kB");
  REQUIRE(report.file_pmd_mapped_kb >= 2048);
  REQUIRE(index.get(u64_key(765432)) == std::optional<std::string_view>(u64_value(765432).view()));
}

TEST_CASE("an index that is mostly blob region is mapped with huge pages where the kernel can",
          "[memory_report]") {
  // Values past the inline limit live in the blob region, which the builder
  // writes after the pages in the same 2 MiB pieces; appended by
  // copy_file_range instead, it was cached in small folios and a path-like
  // index of 182 MiB got 96 MiB of huge pages, its pages alone.
  scratch_directory scratch;
  if (huge_kb_of_a_file_written_in_2_mib_pieces(scratch / "control") == 0) {
    WARN("this kernel maps no file with huge pages; not checked");
    return;
  }
  const std::filesystem::path path = scratch / "blobs.bbt";
  const auto value_of = [](std::uint64_t i) {
    return std::string(160 << 10, static_cast<char>('a' + i % 26));
  };
  build_options options = options_for({key_kind::u64, 8, value_kind::bytes, 0});
  options.metadata = {{"what", "values of 160 KiB"}};
  builder writer(path, options);
  for (std::uint64_t i = 0; i < 64; ++i) writer.add(u64_key(i), value_of(i));
  writer.finish();

  open_options open;
  open.memory = memory_mode::map_huge_pages;
  open.populate = true;
  const reader index = reader::open(path, open);
  const std::uint64_t blob_length = index.info().blob_length;
  // The pages take one 2 MiB piece at most; the blob fills four more.
  REQUIRE(index.info().blob_offset < (std::uint64_t{2} << 20));
  REQUIRE(blob_length == 64 * (std::uint64_t{160} << 10));
  const memory_report report = memory_report_for(index);
  INFO("the index: " << report.file_pmd_mapped_kb << " kB of " << report.rss_kb << " kB");
  REQUIRE(report.file_pmd_mapped_kb >= 4096);
  for (std::uint64_t i = 0; i < 64; i += 9)
    REQUIRE(index.get(u64_key(i)) == std::optional<std::string_view>(value_of(i)));
}
