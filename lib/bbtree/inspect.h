// Human-readable views of a file's structure, for bbtree-dump.
//
// write_header is implemented in lib/src/inspect_header.cc; write_stats,
// write_pages and write_page, the page inspector, in lib/src/inspect.cc.
// They read through reader_core's checked page access, and show a damaged
// page as damaged instead of stopping.
//
// Errors: what the reader throws for a file it cannot read at all; I/O
// errors of the stream are the stream's.  Thread safety: as reader: any
// number of these may run at once on one reader.
#pragma once

#include <bbtree/reader.h>

#include <cstdint>
#include <iosfwd>

namespace bbtree {

// Every header field, one `name: value` per line, then the build options
// the header records and each metadata entry as `metadata.KEY: VALUE` with
// KEY and VALUE escaped as in tsv.
void write_header(const reader& file, std::ostream& out);

// Totals over the tree: pages per level, fill, prefix and inline-key use,
// out-of-page items.
void write_stats(const reader& file, std::ostream& out);
// One line per page: number, kind, level, key count, bytes used.
void write_pages(const reader& file, std::ostream& out);
// Every field and entry of page `page`.  Throws error(invalid_argument) for
// a page number past the end.
void write_page(const reader& file, std::uint32_t page, std::ostream& out);

}  // namespace bbtree
