// Full verification of an index file: every rule of spec/FORMAT.md that a
// file can break, each broken rule reported with the page and file offset
// where it was found.  bbtree-verify is a front end to this.
//
// The reader checks only what it needs to stay in bounds (section 14.1 to
// 14.3); a damaged page that passes those checks gives wrong answers until
// verification finds it.  verify_file checks the rest (section 14.6):
// checksums, the page numbers that catch moved pages, padding and reserved
// fields, key order within and across pages, separators against the leaves
// they divide, the first_rank and first_child chains, slots and the heap,
// the blob region, the metadata region, the directory region and the
// header's totals.
//
// Verification never reads outside the bytes, never loops without bound and
// stops after max_errors problems.  It reads each page once, the inner
// levels before the leaves, and allocates per page at most, never per entry:
// the separator of each leaf boundary is remembered by where it lies in the
// file, a few words whatever its length, and keys are compared where they
// lie, not copied (only the keys a message shows are).  It reads the blob
// region a bounded number of times: an item's bytes are checksummed and
// compared only while the items checksummed add up to no more than the
// region.  Beyond that the items overlap, which is reported; their
// checksums and the key order checks that need their bytes are skipped, and
// the checks that the bytes in the pages decide (prefixes, inline keys) are
// still made.  A file whose items do not overlap gets every check.
//
// Thread safety: independent calls may run at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace bbtree {

struct verify_options {
  // Only the header and the checksums: page, item and metadata checksums and
  // page numbers.  Finds damage from storage or transfer, not from a writer.
  bool quick = false;
  // Problems to report before stopping; 0 reports all of them.
  std::size_t max_errors = 100;
  // Also the choices of the reference builder that the header records
  // (spec/FORMAT.md, section 15): each page's prefix is
  // min(lcp(first key, last key), prefix_cap), its inline width the
  // narrowest that fits, an item is out of the page exactly when it is
  // longer than inline_limit, and inline_limit = prefix_cap = page_size / 8.
  // A file from another writer may differ there and still be valid.
  bool builder_policy = true;
};

// Where a problem lies: a page (page 0 is the file header), or one of the
// regions after the pages (the directory's includes the padding before it).
enum class verify_region : std::uint8_t { page, blob, metadata, directory };

struct verify_problem {
  verify_region region = verify_region::page;
  std::optional<std::uint32_t> page;  // set when region is page
  std::uint64_t offset = 0;           // in the file: the first byte of the bad field
  std::string message;
};

struct verify_report {
  std::string name;
  std::vector<verify_problem> problems;
  // Verification stopped at max_errors; more problems may exist.
  bool truncated_list = false;
  // From the header, when it could be read (else 0), and the bytes given.
  std::uint64_t entries = 0;
  std::uint64_t file_size = 0;
  std::uint64_t pages = 0;
  std::uint32_t height = 0;
  std::uint32_t page_size = 0;
  bool quick = false;  // only checksums were checked

  bool ok() const noexcept { return problems.empty(); }
};

// "FILE: page P (offset X): MESSAGE", "FILE: blob region (offset X): ...",
// "FILE: metadata (offset X): ..." or "FILE: directory (offset X): ...".
std::string format_problem(const verify_report& report, const verify_problem& problem);

// Maps `path` and verifies it.  A file that is not a bbtree file, is
// truncated or has a damaged header is a problem of page 0 in the report;
// only a file that cannot be read at all throws (error(io_error)).
verify_report verify_file(const std::filesystem::path& path, const verify_options& options = {});

// Verifies bytes in memory; `name` starts every message.
verify_report verify_bytes(std::span<const std::byte> bytes, std::string name,
                           const verify_options& options = {});

}  // namespace bbtree
