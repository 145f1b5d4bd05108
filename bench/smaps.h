// Reading /proc/self/smaps: how much of an address range is resident and
// how much of it is backed by huge pages.  Used by the benchmark to report
// whether a mapping that asked for huge pages actually got them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bbtree::bench {

struct smaps_usage {
  std::uint64_t size_kb = 0;             // "Size": the mappings' extent
  std::uint64_t rss_kb = 0;              // "Rss"
  std::uint64_t anon_huge_kb = 0;        // "AnonHugePages": THP in anonymous memory
  std::uint64_t file_pmd_mapped_kb = 0;  // "FilePmdMapped": page cache mapped by PMD
  std::uint64_t shmem_pmd_mapped_kb = 0; // "ShmemPmdMapped"
  int mappings = 0;                      // VMAs that overlap the range
  bool thp_eligible = false;             // any overlapping VMA says "THPeligible: 1"

  std::uint64_t huge_kb() const noexcept {
    return anon_huge_kb + file_pmd_mapped_kb + shmem_pmd_mapped_kb;
  }
};

// Sums the fields of every VMA of this process that overlaps
// [begin, begin + length).  VMAs are counted whole: a range that covers part
// of a VMA reports all of it (smaps has no finer grain).
smaps_usage smaps_for_range(const void* begin, std::size_t length);

// The address ranges this process maps from the file at `path` (compared
// after resolving it with realpath), for libraries that map files
// themselves and do not say where.
struct address_range {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
};
std::vector<address_range> mappings_of_file(const std::string& path);

// Sum of smaps_for_range over every mapping of `path`.
smaps_usage smaps_for_file(const std::string& path);

}  // namespace bbtree::bench
