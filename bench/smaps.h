// The benchmark's names for bbtree/memory_report.h, which holds the one
// reader of /proc/self/smaps: how much of an address range is resident and
// how much of it is backed by huge pages, to report whether a mapping that
// asked for huge pages actually got them.
#pragma once

#include <bbtree/memory_report.h>

#include <cstddef>
#include <string>

namespace bbtree::bench {

using smaps_usage = bbtree::memory_report;
using bbtree::address_range;
using bbtree::mappings_of_file;

inline smaps_usage smaps_for_range(const void* begin, std::size_t length) {
  return bbtree::memory_report_for_range(begin, length);
}

inline smaps_usage smaps_for_file(const std::string& path) {
  return bbtree::memory_report_for_file(path);
}

}  // namespace bbtree::bench
