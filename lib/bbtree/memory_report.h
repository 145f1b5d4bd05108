// What holds an index's bytes in memory, as the kernel reports it in
// /proc/self/smaps (Linux): how much is resident, and how much of it sits on
// huge pages.  A memory mode (reader.h) is only a request; the kernel decides
// whether a mapping gets huge pages, and this is how to find out what it
// decided.  The benchmark and examples/hugepages use it.
//
// Each call reads /proc/self/smaps once, which walks the page tables of every
// mapping of the process: milliseconds, not for a hot path.  Where smaps
// cannot be read, every report is empty (mappings == 0 means "not known").
//
// Thread safety: any call may run at any time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

namespace bbtree {

class reader;

// Fields summed over the mappings (VMAs) that were looked at, in KiB as
// smaps gives them.
struct memory_report {
  std::uint64_t size_kb = 0;              // "Size": the mappings' extent
  std::uint64_t rss_kb = 0;               // "Rss": resident
  std::uint64_t anon_huge_kb = 0;         // "AnonHugePages": huge pages of anonymous memory
  std::uint64_t file_pmd_mapped_kb = 0;   // "FilePmdMapped": page cache mapped by 2 MiB entries
  std::uint64_t shmem_pmd_mapped_kb = 0;  // "ShmemPmdMapped": the same for shared memory
  int mappings = 0;                       // mappings looked at; 0 when smaps is unreadable
  bool thp_eligible = false;              // some mapping says "THPeligible: 1"

  std::uint64_t huge_kb() const noexcept {
    return anon_huge_kb + file_pmd_mapped_kb + shmem_pmd_mapped_kb;
  }
};

// The bytes a reader reads: its file mapping, or its huge-page copy (for a
// reader from_memory, the mapping that holds the caller's bytes).
memory_report memory_report_for(const reader& index);

// Every mapping of this process that overlaps [begin, begin + length).
// Mappings count whole: smaps has no finer grain, so a range that covers part
// of a mapping reports all of it.
memory_report memory_report_for_range(const void* begin, std::size_t length);

// Every mapping of the file at `path` (compared after resolving symbolic
// links), for libraries that map files themselves and do not say where.
memory_report memory_report_for_file(const std::filesystem::path& path);

struct address_range {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
};

// The address ranges this process maps from the file at `path`.
std::vector<address_range> mappings_of_file(const std::filesystem::path& path);

}  // namespace bbtree
