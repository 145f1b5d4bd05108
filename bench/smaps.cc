#include "smaps.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace bbtree::bench {
namespace {

// A VMA header line: "start-end perms offset dev inode [path]".
bool parse_header(const std::string& line, std::uintptr_t& begin, std::uintptr_t& end,
                  std::string& path) {
  unsigned long long b = 0, e = 0;
  int consumed = 0;
  if (std::sscanf(line.c_str(), "%llx-%llx %*s %*s %*s %*s%n", &b, &e, &consumed) != 2) {
    return false;
  }
  begin = static_cast<std::uintptr_t>(b);
  end = static_cast<std::uintptr_t>(e);
  std::size_t at = static_cast<std::size_t>(consumed);
  while (at < line.size() && line[at] == ' ') ++at;
  path = line.substr(at);
  return true;
}

bool is_header(const std::string& line) {
  // Field lines start with a capitalised name and a colon; headers with hex.
  const auto dash = line.find('-');
  const auto space = line.find(' ');
  return dash != std::string::npos && space != std::string::npos && dash < space &&
         line.find(':') > dash;
}

std::uint64_t field_kb(const std::string& line, const char* name) {
  const std::size_t n = std::strlen(name);
  if (line.compare(0, n, name) != 0 || line.size() <= n || line[n] != ':') return UINT64_MAX;
  return std::strtoull(line.c_str() + n + 1, nullptr, 10);
}

template <class Select>
smaps_usage scan_smaps(Select&& select) {
  smaps_usage usage;
  std::ifstream in("/proc/self/smaps");
  std::string line, path;
  bool inside = false;
  while (std::getline(in, line)) {
    std::uintptr_t begin = 0, end = 0;
    if (is_header(line) && parse_header(line, begin, end, path)) {
      inside = select(begin, end, path);
      if (inside) ++usage.mappings;
      continue;
    }
    if (!inside) continue;
    std::uint64_t v;
    if ((v = field_kb(line, "Size")) != UINT64_MAX) usage.size_kb += v;
    else if ((v = field_kb(line, "Rss")) != UINT64_MAX) usage.rss_kb += v;
    else if ((v = field_kb(line, "AnonHugePages")) != UINT64_MAX) usage.anon_huge_kb += v;
    else if ((v = field_kb(line, "FilePmdMapped")) != UINT64_MAX) usage.file_pmd_mapped_kb += v;
    else if ((v = field_kb(line, "ShmemPmdMapped")) != UINT64_MAX) usage.shmem_pmd_mapped_kb += v;
    else if ((v = field_kb(line, "THPeligible")) != UINT64_MAX) usage.thp_eligible |= v != 0;
  }
  return usage;
}

std::string resolve(const std::string& path) {
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer) == nullptr) return path;
  return buffer;
}

}  // namespace

smaps_usage smaps_for_range(const void* begin, std::size_t length) {
  const auto lo = reinterpret_cast<std::uintptr_t>(begin);
  const auto hi = lo + length;
  return scan_smaps([&](std::uintptr_t b, std::uintptr_t e, const std::string&) {
    return length != 0 && b < hi && lo < e;
  });
}

std::vector<address_range> mappings_of_file(const std::string& path) {
  const std::string target = resolve(path);
  std::vector<address_range> ranges;
  std::ifstream in("/proc/self/maps");
  std::string line, mapped;
  while (std::getline(in, line)) {
    std::uintptr_t b = 0, e = 0;
    if (parse_header(line, b, e, mapped) && mapped == target) ranges.push_back({b, e});
  }
  return ranges;
}

smaps_usage smaps_for_file(const std::string& path) {
  const std::string target = resolve(path);
  return scan_smaps(
      [&](std::uintptr_t, std::uintptr_t, const std::string& mapped) { return mapped == target; });
}

}  // namespace bbtree::bench
