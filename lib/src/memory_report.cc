// Reading /proc/self/smaps and /proc/self/maps (see bbtree/memory_report.h).
#include <bbtree/memory_report.h>
#include <bbtree/reader.h>

#include <charconv>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

namespace bbtree {
namespace {

struct mapping_header {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  std::string_view path;  // empty for anonymous memory
};

std::string_view skip_spaces(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  return text;
}

// "start-end perms offset dev inode [path]", as in /proc/self/maps.  Field
// lines of smaps ("Rss:   12 kB") never parse as one: they have no '-'
// between two hexadecimal numbers at the start.
bool parse_header(std::string_view line, mapping_header& header) {
  const char* const first = line.data();
  const char* const last = line.data() + line.size();
  unsigned long long begin = 0;
  unsigned long long end = 0;
  auto parsed = std::from_chars(first, last, begin, 16);
  if (parsed.ec != std::errc() || parsed.ptr == last || *parsed.ptr != '-') return false;
  parsed = std::from_chars(parsed.ptr + 1, last, end, 16);
  if (parsed.ec != std::errc() || parsed.ptr == last || *parsed.ptr != ' ') return false;
  std::string_view rest(parsed.ptr, static_cast<std::size_t>(last - parsed.ptr));
  // Skip perms, offset, dev and inode; what remains is the path, if any.
  for (int field = 0; field < 4; ++field) {
    rest = skip_spaces(rest);
    const std::size_t space = rest.find(' ');
    if (space == std::string_view::npos) {
      if (field < 3) return false;
      rest = {};
      break;
    }
    rest.remove_prefix(space);
  }
  header.begin = static_cast<std::uintptr_t>(begin);
  header.end = static_cast<std::uintptr_t>(end);
  header.path = skip_spaces(rest);
  return true;
}

// The value of "Name:   123 kB" when `line` is that field.
bool field_value(std::string_view line, std::string_view name, std::uint64_t& value) {
  if (line.size() <= name.size() || line.compare(0, name.size(), name) != 0 ||
      line[name.size()] != ':') {
    return false;
  }
  const std::string_view number = skip_spaces(line.substr(name.size() + 1));
  return std::from_chars(number.data(), number.data() + number.size(), value).ec == std::errc();
}

template <class Select>
memory_report scan_smaps(Select&& select) {
  memory_report report;
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool selected = false;
  while (std::getline(smaps, line)) {
    mapping_header header;
    if (parse_header(line, header)) {
      selected = select(header);
      if (selected) ++report.mappings;
      continue;
    }
    if (!selected) continue;
    std::uint64_t value = 0;
    if (field_value(line, "Size", value)) {
      report.size_kb += value;
    } else if (field_value(line, "Rss", value)) {
      report.rss_kb += value;
    } else if (field_value(line, "AnonHugePages", value)) {
      report.anon_huge_kb += value;
    } else if (field_value(line, "FilePmdMapped", value)) {
      report.file_pmd_mapped_kb += value;
    } else if (field_value(line, "ShmemPmdMapped", value)) {
      report.shmem_pmd_mapped_kb += value;
    } else if (field_value(line, "THPeligible", value)) {
      report.thp_eligible = report.thp_eligible || value != 0;
    }
  }
  return report;
}

// The kernel names mapped files by their resolved path.
std::string resolved(const std::filesystem::path& path) {
  std::error_code failure;
  const std::filesystem::path canonical = std::filesystem::canonical(path, failure);
  return failure ? path.string() : canonical.string();
}

}  // namespace

memory_report memory_report_for(const reader& index) {
  const std::span<const std::byte> bytes = index.bytes();
  return memory_report_for_range(bytes.data(), bytes.size());
}

memory_report memory_report_for_range(const void* begin, std::size_t length) {
  if (length == 0) return {};
  const auto low = reinterpret_cast<std::uintptr_t>(begin);
  const auto high = low + length;
  return scan_smaps(
      [&](const mapping_header& header) { return header.begin < high && low < header.end; });
}

memory_report memory_report_for_file(const std::filesystem::path& path) {
  const std::string target = resolved(path);
  return scan_smaps([&](const mapping_header& header) { return header.path == target; });
}

std::vector<address_range> mappings_of_file(const std::filesystem::path& path) {
  const std::string target = resolved(path);
  std::vector<address_range> ranges;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    mapping_header header;
    if (parse_header(line, header) && header.path == target) {
      ranges.push_back({header.begin, header.end});
    }
  }
  return ranges;
}

}  // namespace bbtree
