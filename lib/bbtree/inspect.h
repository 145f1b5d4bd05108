// Human-readable views of a file's structure, and its entries read with
// every check a walk can make, for bbtree-dump.
//
// write_header is implemented in lib/src/inspect_header.cc; write_stats,
// write_pages and write_page, the page inspector, in lib/src/inspect.cc.
// They read through reader_core's checked page access, and show a damaged
// page as damaged instead of stopping.  for_each_checked_entry is in
// lib/src/checked_walk.cc.
//
// Errors: what the reader throws for a file it cannot read at all; I/O
// errors of the stream are the stream's.  Thread safety: as reader: any
// number of these may run at once on one reader.
#pragma once

#include <bbtree/reader.h>
#include <bbtree/shards.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

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
// Every field and entry of page `page`, and a `damaged: MESSAGE` line for
// each problem found: a checksum that does not match the page's bytes, a
// page the reader cannot decode, an entry it cannot read.  Returns the
// first such MESSAGE (naming the file and page), empty for a sound page and
// for page 0, the header (which opening checked).  Throws
// error(invalid_argument) for a page number past the end.
std::string write_page(const reader& file, std::uint32_t page, std::ostream& out);

// Calls each(key, value) for every entry of `index` (a file, or a shard
// set's shards in turn) in key order, checking what a cursor leaves to
// bbtree-verify: each leaf's checksum, each out-of-page item's checksum,
// and that keys ascend.  The walk bbtree-merge reads its inputs with.
// Throws error(corrupt) naming the file and page at the first damage,
// after passing on the entries of the leaves before it; what `each`
// throws ends the walk.
void for_each_checked_entry(
    const sharded_reader& index,
    const std::function<void(std::string_view key, std::string_view value)>& each);

}  // namespace bbtree
