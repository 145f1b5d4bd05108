#!/usr/bin/env python3
"""An independent reader and verifier of bbtree index files.

Written from spec/FORMAT.md (the file format) and spec/TEXT-FORMATS.md (the
tsv text of keys and values) alone, without looking at the C++ sources, to
show that the specification is complete and exact.  Python 3 standard library
only.

    python3 spec/reference_reader.py FILE [--format tsv]   every entry, in key order
    python3 spec/reference_reader.py FILE --header         header fields, `name: value`

Before printing anything the whole file is verified: the header (FORMAT.md
14.1), every page (14.2), every slot (14.3), the metadata (14.4), every
checksum (header, pages, metadata, external items) and the properties of a
full verification (14.6): zero padding and reserved fields (minor versions 0 to 2),
the level structure, key order within and across pages, separators bounding
their children, the heap and blob-region tiling, max_key_length and
max_value_length, and the directory region (12.3) when the file has one.  Then
a sample of keys (and probes between them) is searched by the algorithms of
section 13, from the root and, in a file with a directory, from level 1 by the
directory, to exercise the inner pages and the directory, and the results are
compared with each other and with the order given by the leaves.

Exit status: 0 on success, 1 when the file is not a valid bbtree file (the
message names the error class of FORMAT.md section 14 in brackets), 2 on a
usage error, 3 when the file cannot be read.
"""

import bisect
import struct
import sys

# --------------------------------------------------------------------------
# CRC32C (FORMAT.md section 4), table driven, slicing by 8.


def _crc_tables():
    t0 = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t0.append(c)
    tables = [t0]
    for _ in range(7):
        prev = tables[-1]
        tables.append([(v >> 8) ^ t0[v & 0xFF] for v in prev])
    return tables


_T = _crc_tables()
_UNPACK_Q = struct.Struct("<Q")


def crc32c(data, crc=0):
    """CRC32C of `data` (bytes or memoryview); `crc` continues a previous one."""
    t0, t1, t2, t3, t4, t5, t6, t7 = _T
    c = crc ^ 0xFFFFFFFF
    mv = memoryview(data)
    n = len(mv)
    whole = n - n % 8
    if whole:
        for (q,) in struct.iter_unpack("<Q", mv[:whole]):
            x = c ^ q
            c = (t7[x & 0xFF] ^ t6[(x >> 8) & 0xFF] ^ t5[(x >> 16) & 0xFF]
                 ^ t4[(x >> 24) & 0xFF] ^ t3[(x >> 32) & 0xFF]
                 ^ t2[(x >> 40) & 0xFF] ^ t1[(x >> 48) & 0xFF] ^ t0[x >> 56])
    for b in mv[whole:]:
        c = (c >> 8) ^ t0[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283
assert crc32c(b"") == 0

# --------------------------------------------------------------------------
# Errors


class BadFile(Exception):
    """The file is not a valid bbtree file; the message names the error class."""

    def __init__(self, errc, message):
        super().__init__(f"{message} [{errc}]")
        self.errc = errc
        self.message = message


def corrupt(message):
    raise BadFile("corrupt", message)


def corrupt_header(message):
    raise BadFile("corrupt_header", message)


# --------------------------------------------------------------------------
# Constants (FORMAT.md sections 3, 5, 6)

MAGIC = b"\x89BBTREE\n"
HEADER_SIZE = 512
# The minor versions this reader implements (1.1 changed only the builder
# policy, 1.2 added the directory region, FORMAT.md 16): reserved fields and
# padding are checked in them.
KNOWN_MINOR = 2
# required_features bits (FORMAT.md 5, 16): bit 0, the directory region (1.2).
FEATURE_DIRECTORY = 0x1
KNOWN_REQUIRED = FEATURE_DIRECTORY
KEY_U64, KEY_I64, KEY_FIXED, KEY_BYTES = 1, 2, 3, 4
VALUE_NONE, VALUE_U64, VALUE_FIXED, VALUE_BYTES = 0, 1, 2, 3
KEY_KIND_NAMES = {KEY_U64: "u64", KEY_I64: "i64", KEY_FIXED: "fixed", KEY_BYTES: "bytes"}
VALUE_KIND_NAMES = {VALUE_NONE: "none", VALUE_U64: "u64", VALUE_FIXED: "fixed",
                    VALUE_BYTES: "bytes"}
PAGE_LEAF, PAGE_INNER = 1, 2
EXTERNAL = 0x80000000
MAX_KEY = 65536
MAX_HEIGHT = 32


def u16(b, o):
    return int.from_bytes(b[o:o + 2], "little")


def u32(b, o):
    return int.from_bytes(b[o:o + 4], "little")


def u64(b, o):
    return int.from_bytes(b[o:o + 8], "little")


def align8(x):
    return (x + 7) & ~7


def align64(x):
    return (x + 63) & ~63


def is_zero(b):
    return bytes(b) == bytes(len(b))


def lcp(a, b):
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


# --------------------------------------------------------------------------
# The header (FORMAT.md section 5, checks of section 14.1)

HEADER_FIELDS = [
    # name, offset, size
    ("magic", 0, 8),
    ("major_version", 8, 2),
    ("minor_version", 10, 2),
    ("header_size", 12, 4),
    ("required_features", 16, 8),
    ("optional_features", 24, 8),
    ("page_size", 32, 4),
    ("key_kind", 36, 1),
    ("value_kind", 37, 1),
    ("key_size", 40, 4),
    ("value_size", 44, 4),
    ("entry_count", 48, 8),
    ("height", 56, 4),
    ("root_page", 60, 4),
    ("first_leaf_page", 64, 4),
    ("leaf_count", 68, 4),
    ("page_count", 72, 4),
    ("blob_offset", 80, 8),
    ("blob_length", 88, 8),
    ("metadata_offset", 96, 8),
    ("metadata_length", 104, 8),
    ("metadata_checksum", 112, 4),
    ("build_flags", 116, 4),
    ("inline_limit", 120, 4),
    ("prefix_cap", 124, 4),
    ("file_size", 128, 8),
    ("max_key_length", 136, 4),
    ("max_value_length", 140, 4),
    ("directory_offset", 144, 8),
    ("directory_length", 152, 8),
    ("directory_checksum", 160, 4),
    ("directory_head_size", 164, 4),
    ("directory_prefix_length", 168, 4),
    ("header_checksum", 508, 4),
]
HEADER_RESERVED = [(38, 40), (76, 80), (172, 256), (384, 508)]
# The directory fields, zero (as reserved bytes) when required bit 0 is clear.
HEADER_DIRECTORY = (144, 172)


class Header:
    pass


def parse_header(data):
    n = len(data)
    # 14.1.1
    k = min(8, n)
    if n == 0 or data[:k] != MAGIC[:k]:
        raise BadFile("not_bbtree", "not a bbtree file (bad magic)")
    # 14.1.2
    if n < HEADER_SIZE:
        raise BadFile("truncated", f"file is {n} bytes, shorter than the 512-byte header")
    h = Header()
    for name, off, size in HEADER_FIELDS:
        if name == "magic":
            setattr(h, name, bytes(data[0:8]))
        else:
            setattr(h, name, int.from_bytes(data[off:off + size], "little"))
    h.level_first_page = [u32(data, 256 + 4 * i) for i in range(MAX_HEIGHT)]
    # 14.1.3
    if h.major_version != 1:
        if h.major_version > 1:
            raise BadFile("newer_version",
                          f"major version {h.major_version}, this reader implements 1")
        corrupt_header("major version 0")
    # 14.1.4
    crc = crc32c(data[0:508])
    if crc != h.header_checksum:
        corrupt_header(f"header checksum 0x{h.header_checksum:08x}, computed 0x{crc:08x}")
    # 14.1.5
    if h.header_size != HEADER_SIZE:
        corrupt_header(f"header_size {h.header_size}, expected 512")
    # 14.1.6
    unknown = h.required_features & ~KNOWN_REQUIRED
    if unknown:
        raise BadFile("unsupported_feature", f"requires feature bits 0x{unknown:x}")
    h.has_directory = bool(h.required_features & FEATURE_DIRECTORY)
    # 14.1.7
    ps = h.page_size
    if ps < 512 or ps > 65536 or ps & (ps - 1):
        corrupt_header(f"page_size {ps} is not a power of two in 512..65536")
    if h.key_kind not in KEY_KIND_NAMES:
        corrupt_header(f"key_kind {h.key_kind}")
    if h.value_kind not in VALUE_KIND_NAMES:
        corrupt_header(f"value_kind {h.value_kind}")
    if h.key_kind in (KEY_U64, KEY_I64):
        ok = h.key_size == 8
    elif h.key_kind == KEY_FIXED:
        ok = 1 <= h.key_size <= 4096
    else:
        ok = h.key_size == 0
    if not ok:
        corrupt_header(f"key_size {h.key_size} for key kind {KEY_KIND_NAMES[h.key_kind]}")
    if h.value_kind == VALUE_U64:
        ok = h.value_size == 8
    elif h.value_kind == VALUE_FIXED:
        ok = 1 <= h.value_size <= 4096
    else:
        ok = h.value_size == 0
    if not ok:
        corrupt_header(f"value_size {h.value_size} for value kind "
                       f"{VALUE_KIND_NAMES[h.value_kind]}")
    # 14.1.8
    if n < h.file_size:
        raise BadFile("truncated", f"file is {n} bytes, header says {h.file_size}")
    if n > h.file_size:
        raise BadFile("trailing_data", f"file is {n} bytes, header says {h.file_size}")
    # 14.1.9 (Python integers do not overflow)
    pages_end = h.page_count * ps
    if h.page_count < 2:
        corrupt_header(f"page_count {h.page_count} < 2")
    if pages_end > h.file_size:
        corrupt_header("pages extend past file_size")
    if h.blob_length == 0:
        if h.blob_offset != 0:
            corrupt_header("blob_offset is not 0 with an empty blob region")
    elif h.blob_offset != pages_end:
        corrupt_header(f"blob_offset {h.blob_offset}, expected {pages_end}")
    e = pages_end + h.blob_length
    if h.metadata_length == 0:
        if h.metadata_offset != 0:
            corrupt_header("metadata_offset is not 0 with no metadata")
    else:
        if h.metadata_offset != e:
            corrupt_header(f"metadata_offset {h.metadata_offset}, expected {e}")
        if h.metadata_length < 4:
            corrupt_header(f"metadata_length {h.metadata_length} < 4")
    m = e + h.metadata_length
    h.metadata_end = m
    if not h.has_directory:
        if h.file_size != m:
            corrupt_header("file_size is not pages + blob_length + metadata_length")
    else:
        if h.directory_offset != align64(m):
            corrupt_header(f"directory_offset {h.directory_offset}, expected {align64(m)}")
        if h.file_size != h.directory_offset + h.directory_length:
            corrupt_header("file_size is not directory_offset + directory_length")
    if not 1 <= h.height <= MAX_HEIGHT:
        corrupt_header(f"height {h.height}")
    if h.root_page != h.page_count - 1:
        corrupt_header(f"root_page {h.root_page}, expected page_count - 1")
    if h.first_leaf_page != 1:
        corrupt_header(f"first_leaf_page {h.first_leaf_page}")
    if h.leaf_count < 1:
        corrupt_header("leaf_count 0")
    lfp = h.level_first_page
    if lfp[0] != 1:
        corrupt_header(f"level_first_page[0] = {lfp[0]}")
    for lv in range(h.height):
        if lfp[lv] >= h.page_count:
            corrupt_header(f"level_first_page[{lv}] = {lfp[lv]} >= page_count")
        if lv > 0 and lfp[lv] <= lfp[lv - 1]:
            corrupt_header(f"level_first_page not strictly increasing at {lv}")
    if lfp[h.height - 1] != h.root_page:
        corrupt_header("level_first_page[height - 1] is not root_page")
    if h.height >= 2:
        if lfp[1] != 1 + h.leaf_count:
            corrupt_header(f"level_first_page[1] = {lfp[1]}, expected 1 + leaf_count")
    elif h.leaf_count != 1 or h.page_count != 2:
        corrupt_header("height 1 with leaf_count != 1 or page_count != 2")
    for lv in range(h.height, MAX_HEIGHT):
        if lfp[lv] != 0:
            corrupt_header(f"level_first_page[{lv}] = {lfp[lv]} beyond height")
    if h.max_key_length > MAX_KEY:
        corrupt_header(f"max_key_length {h.max_key_length} > 65536")
    # 14.1.10
    h.directory = Directory(h, data) if h.has_directory else None
    return h


def verify_header_extras(h, data):
    """Checks of a full verification (14.6) that concern the header."""
    if h.minor_version <= KNOWN_MINOR:
        reserved = HEADER_RESERVED if h.has_directory else HEADER_RESERVED + [HEADER_DIRECTORY]
        for a, b in reserved:
            if not is_zero(data[a:b]):
                corrupt_header(f"reserved header bytes [{a}, {b}) are not zero")
        if not is_zero(data[HEADER_SIZE:h.page_size]):
            corrupt_header("bytes [512, page_size) of page 0 are not zero")
    if h.build_flags >> 3:
        corrupt_header(f"build_flags 0x{h.build_flags:x}: reserved bits 3-31 set")
    if (h.build_flags >> 1) & 3 == 3:
        corrupt_header("build_flags: duplicate policy 3")


def level_pages(h, lv):
    if lv < h.height - 1:
        return h.level_first_page[lv + 1] - h.level_first_page[lv]
    return 1


# --------------------------------------------------------------------------
# The directory region (FORMAT.md 12.3, checks 14.1.10)


class Directory:
    """The directory region of a file whose required bit 0 is set, checked
    by 14.1.10 when constructed: n, head_size and the prefix length come
    from the header alone, and nothing of the region is read."""

    def __init__(self, h, data):
        if h.height < 3:
            corrupt_header(f"directory region in a file of height {h.height} (needs 3 or more)")
        n = self.n = level_pages(h, 1) - 1
        if n < 1:
            corrupt_header(f"directory region with level_pages(1) - 1 = {n} entries")
        hs = self.head_size = h.directory_head_size
        if hs % 8 or not 8 <= hs <= 64:
            corrupt_header(f"directory_head_size {hs} is not a multiple of 8 in 8..64")
        p = self.p = h.directory_prefix_length
        if p > MAX_KEY:
            corrupt_header(f"directory_prefix_length {p} > 65536")
        want = n * (hs + 8) + p
        if h.directory_length != want:
            corrupt_header(f"directory_length {h.directory_length}, expected {n} * "
                           f"({hs} + 8) + {p} = {want}")
        o = self.offset = h.directory_offset
        self.region = data[o:o + h.directory_length]
        self.locators = n * hs
        self.prefix_at = n * (hs + 8)

    def prefix(self):
        return bytes(self.region[self.prefix_at:self.prefix_at + self.p])

    def head(self, i):
        o = i * self.head_size
        return bytes(self.region[o:o + self.head_size])

    def head_of(self, key):
        """head(s) of 12.3 for a key that begins with the prefix: the
        head_size bytes after the prefix, zero-padded."""
        return (key[self.p:] + bytes(self.head_size))[:self.head_size]

    def locator(self, i):
        """(page, index, reserved) of locator i."""
        o = self.locators + 8 * i
        r = self.region
        return u32(r, o), u16(r, o + 4), u16(r, o + 6)

    def bisect(self, H, right):
        """Number of heads < H (or <= H when `right`); heads are non-decreasing."""
        lo, hi = 0, self.n
        while lo < hi:
            mid = (lo + hi) // 2
            hd = self.head(mid)
            if hd < H or (right and hd == H):
                lo = mid + 1
            else:
                hi = mid
        return lo


# --------------------------------------------------------------------------
# Metadata (FORMAT.md 12.2, checks 14.4)


def read_metadata(h, data):
    if h.metadata_length == 0:
        if h.metadata_checksum != 0:
            corrupt_header("metadata_checksum is not 0 with no metadata")
        return []
    region = data[h.metadata_offset:h.metadata_offset + h.metadata_length]
    crc = crc32c(region)
    if crc != h.metadata_checksum:
        corrupt(f"metadata checksum 0x{h.metadata_checksum:08x}, computed 0x{crc:08x}")
    n = len(region)
    count = u32(region, 0)
    pos = 4
    pairs = []
    for i in range(count):
        if pos + 4 > n:
            corrupt(f"metadata pair {i}: key length past the region")
        kl = u32(region, pos)
        pos += 4
        if pos + kl > n:
            corrupt(f"metadata pair {i}: key past the region")
        key = bytes(region[pos:pos + kl])
        pos += kl
        if pos + 4 > n:
            corrupt(f"metadata pair {i}: value length past the region")
        vl = u32(region, pos)
        pos += 4
        if pos + vl > n:
            corrupt(f"metadata pair {i}: value past the region")
        value = bytes(region[pos:pos + vl])
        pos += vl
        if pairs and not pairs[-1][0] < key:
            corrupt(f"metadata keys not strictly ascending at pair {i}")
        pairs.append((key, value))
    if pos != n:
        corrupt(f"metadata region has {n - pos} bytes after its {count} pairs")
    return pairs


# --------------------------------------------------------------------------
# Pages (FORMAT.md sections 6 to 11, checks 14.2 and 14.3)


class Page:
    """One page, checked by 14.2 when constructed."""

    def __init__(self, f, x, lv):
        h = f.h
        self.f, self.x, self.level = f, x, lv
        first = h.level_first_page[lv]
        if not first <= x < first + level_pages(h, lv):
            corrupt(f"page {x} is not in level {lv}")
        ps = h.page_size
        self.base = base = x * ps
        b = self.b = f.data[base:base + ps]
        if u32(b, 4) != x:
            corrupt(f"page {x}: page_number {u32(b, 4)}")
        self.kind = b[8]
        want = PAGE_LEAF if lv == 0 else PAGE_INNER
        if self.kind != want:
            corrupt(f"page {x}: kind {self.kind}, expected {want}")
        if b[9] != lv:
            corrupt(f"page {x}: level {b[9]}, expected {lv}")
        w = self.w = b[10]
        if w not in (2, 4, 8):
            corrupt(f"page {x}: inline_width {w}")
        n = self.count = u16(b, 12)
        p = self.p = u16(b, 14)
        if h.key_kind != KEY_BYTES and p > h.key_size:
            corrupt(f"page {x}: prefix_length {p} > key_size")
        self.heap_end = u32(b, 24)
        # Section 7.
        self.I = align8(32 + p)
        self.K = align8(self.I + n * w)
        if h.key_kind == KEY_BYTES:
            self.t = 0
            kdl = n * 8
        else:
            s = max(0, h.key_size - p)
            self.t = max(0, s - w)
            kdl = n * self.t
        self.kdl = kdl
        self.V = align8(self.K + kdl)
        if lv == 0:
            vdl = {VALUE_NONE: 0, VALUE_U64: n * 8, VALUE_FIXED: n * h.value_size,
                   VALUE_BYTES: n * 8}[h.value_kind]
        else:
            vdl = 0
        self.vdl = vdl
        self.H = align8(self.V + vdl)
        if not self.H <= self.heap_end <= ps:
            corrupt(f"page {x}: sections end at {self.H}, heap_end {self.heap_end}, "
                    f"page_size {ps}")
        if lv == 0:
            self.first_rank = u64(b, 16)
            if self.first_rank + n > h.entry_count:
                corrupt(f"leaf {x}: first_rank {self.first_rank} + count {n} > entry_count")
            if n == 0 and h.entry_count > 0:
                corrupt(f"leaf {x} is empty in a non-empty index")
        else:
            self.first_child = u32(b, 16)
            if self.first_child + n + 1 > level_pages(h, lv - 1):
                corrupt(f"page {x}: children past the end of level {lv - 1}")
        self._inline = None

    # -- parts of keys ------------------------------------------------------

    def prefix(self):
        return bytes(self.b[32:32 + self.p])

    def inline_ints(self):
        if self._inline is None:
            b, I, w = self.b, self.I, self.w
            self._inline = [int.from_bytes(b[I + i * w:I + i * w + w], "big")
                            for i in range(self.count)]
        return self._inline

    def slot_item(self, off, item_len, is_key):
        """The item of the slot at page offset `off` (14.3); returns
        (bytes, heap_span) where heap_span is (start, length) in the page."""
        b, h = self.b, self.f.h
        length = u32(b, off)
        ref = u32(b, off + 4)
        what = f"page {self.x}: {'key' if is_key else 'value'} slot at {off}"
        if item_len == 0:
            if ref != 0:
                corrupt(f"{what}: empty item with reference 0x{ref:x}")
            return b"", None
        if ref == 0:
            corrupt(f"{what}: item of {item_len} bytes with reference 0")
        if not ref & EXTERNAL:
            if not (self.H <= ref and ref + item_len <= self.heap_end):
                corrupt(f"{what}: item [{ref}, {ref + item_len}) outside the heap")
            return bytes(b[ref:ref + item_len]), (ref, item_len)
        o = ref & 0x7FFFFFFF
        if not (self.H <= o and o + 16 <= self.heap_end):
            corrupt(f"{what}: external record at {o} outside the heap")
        bio = u64(b, o)
        item_crc = u32(b, o + 8)
        if bio > h.blob_length or item_len > h.blob_length - bio:
            corrupt(f"{what}: external item [{bio}, {bio + item_len}) outside the blob region")
        start = h.blob_offset + bio
        item = self.f.data[start:start + item_len]
        if self.f.collecting:
            self.f.external_items.append((bio, item_len, self.x, off))
        if self.f.verify and self.f.collecting:
            if u32(b, o + 12) != 0:
                corrupt(f"{what}: external record reserved field not zero")
            crc = crc32c(item)
            if crc != item_crc:
                corrupt(f"{what}: external item checksum 0x{item_crc:08x}, "
                        f"computed 0x{crc:08x}")
        return bytes(item), (o, 16)

    def key_slot_length(self, i):
        length = u32(self.b, self.K + 8 * i)
        if self.p + length > MAX_KEY:
            corrupt(f"page {self.x}: key {i} longer than 65536 bytes")
        return length

    def remainder(self, i):
        """Item of key slot i (bytes keys): the suffix past its first w bytes."""
        n_i = self.key_slot_length(i)
        return self.slot_item(self.K + 8 * i, max(0, n_i - self.w), True)

    def tail(self, i):
        o = self.K + i * self.t
        return bytes(self.b[o:o + self.t])

    def key(self, i):
        """Key i of the page, in full (section 8.3), i < count."""
        h, b = self.f.h, self.b
        io = self.I + i * self.w
        if h.key_kind == KEY_BYTES:
            m = min(self.w, self.key_slot_length(i))
            rem, _ = self.remainder(i)
            return self.prefix() + bytes(b[io:io + m]) + rem
        m = min(self.w, max(0, h.key_size - self.p))
        return self.prefix() + bytes(b[io:io + m]) + self.tail(i)

    # -- whole keys and values (sections 8.3, 10) ---------------------------

    def decode(self, verify):
        """Returns (keys, values, heap_spans).  values is None for inner pages;
        heap_spans lists the heap items of 9.1 in entry order."""
        h, b = self.f.h, self.b
        n, p, w, I = self.count, self.p, self.w, self.I
        prefix = self.prefix()
        keys, spans = [], []
        values = [] if self.level == 0 else None
        bytes_keys = h.key_kind == KEY_BYTES
        bytes_values = self.level == 0 and h.value_kind == VALUE_BYTES
        s = max(0, h.key_size - p)
        for i in range(n):
            io = I + i * w
            if bytes_keys:
                n_i = self.key_slot_length(i)
                rem, span = self.remainder(i)
                if span:
                    spans.append(span)
                m = min(w, n_i)
                key = prefix + bytes(b[io:io + m]) + rem
            else:
                m = min(w, s)
                key = prefix + bytes(b[io:io + m]) + self.tail(i)
            if verify and not is_zero(b[io + m:io + w]):
                corrupt(f"page {self.x}: inline key {i} has non-zero padding")
            keys.append(key)
            if values is None:
                continue
            vk = h.value_kind
            if vk == VALUE_NONE:
                values.append(None)
            elif vk == VALUE_U64:
                values.append(bytes(b[self.V + 8 * i:self.V + 8 * i + 8]))
            elif vk == VALUE_FIXED:
                vs = h.value_size
                values.append(bytes(b[self.V + vs * i:self.V + vs * i + vs]))
            else:
                off = self.V + 8 * i
                item, span = self.slot_item(off, u32(b, off), False)
                if span:
                    spans.append(span)
                values.append(item)
        return keys, values, spans

    def verify_layout(self, spans):
        """Zero padding and reserved fields, and the heap of 9.1 (14.6)."""
        b, x = self.b, self.x
        if self.f.h.minor_version <= KNOWN_MINOR:
            zero_ranges = [(11, 12), (28, 32), (32 + self.p, self.I),
                           (self.I + self.count * self.w, self.K),
                           (self.K + self.kdl, self.V), (self.V + self.vdl, self.H),
                           (self.heap_end, len(b))]
            if self.level > 0:
                zero_ranges.append((20, 24))
            for a, e in zero_ranges:
                if not is_zero(b[a:e]):
                    corrupt(f"page {x}: bytes [{a}, {e}) are not zero")
        pos = self.H
        for start, length in spans:
            if start != pos:
                corrupt(f"page {x}: heap item at {start}, expected at {pos} (section 9.1)")
            pos += length
        if pos != self.heap_end:
            corrupt(f"page {x}: heap items end at {pos}, heap_end is {self.heap_end}")
        if self.count == 0 and self.p != 0:
            corrupt(f"page {x}: no keys but prefix_length {self.p}")

    # -- search (sections 8.1, 8.4, 13.1) -----------------------------------

    def below(self, q, inclusive):
        """Number of keys < q (or <= q when inclusive), by the algorithm of
        13.1, from the page's parts rather than from decoded keys."""
        h = self.f.h
        n, p, w = self.count, self.p, self.w
        if n == 0:
            return 0
        P = self.b[32:32 + p]
        m = min(p, len(q))
        qp = q[:m]
        pp = bytes(P[:m])
        if qp != pp:
            return 0 if qp < pp else n
        if len(q) < p:
            return 0
        s = q[p:]
        iq = int.from_bytes((s + bytes(8))[:w], "big")
        inl = self.inline_ints()
        lo = bisect.bisect_left(inl, iq)
        hi = bisect.bisect_right(inl, iq)
        for i in range(lo, hi):
            if h.key_kind == KEY_BYTES:
                n_i = self.key_slot_length(i)
                ms = len(s)
                if n_i > w and ms > w:
                    r, _ = self.remainder(i)
                    c = (r > s[w:]) - (r < s[w:])
                else:
                    c = (n_i > ms) - (n_i < ms)
            else:
                tl = self.tail(i)
                sw = s[w:]
                c = (tl > sw) - (tl < sw)
            if c > 0 or (c == 0 and not inclusive):
                return i
        return hi


# --------------------------------------------------------------------------
# The whole file


class BBTree:
    def __init__(self, data, verify=True):
        self.data = memoryview(data)
        self.verify = verify
        self.external_items = []
        self.cache = {}
        self.collecting = True
        self.h = parse_header(self.data)
        if verify:
            verify_header_extras(self.h, self.data)
        self.metadata = read_metadata(self.h, self.data)

    def page(self, x, lv):
        """Page x, expected at level lv, checked by 14.2 (and its checksum
        when verifying).  Pages are checked once and then cached."""
        key = (x, lv)
        if key in self.cache:
            return self.cache[key]
        pg = Page(self, x, lv)
        if self.verify:
            crc = crc32c(pg.b[4:])
            stored = u32(pg.b, 0)
            if crc != stored:
                corrupt(f"page {x}: checksum 0x{stored:08x}, computed 0x{crc:08x}")
        if lv > 0 or len(self.cache) < 4096:
            self.cache[key] = pg
        return pg

    def read_all(self):
        """Reads and verifies every page; returns (keys, values, leaf_of) for
        all entries in key order, leaf_of[r] = (leaf page, index) of rank r."""
        h, verify = self.h, self.verify
        keys, values, leaf_of = [], [], []
        # bounds[lv][j] = (first key, last key) stored under page j of level lv
        bounds = []
        # upper[x] = the separators of page x of level 2 and above (12.3)
        upper = {}
        level_bounds = []
        rank = 0
        for j in range(h.leaf_count):
            x = 1 + j
            pg = self.page(x, 0)
            k, v, spans = pg.decode(verify)
            if verify:
                pg.verify_layout(spans)
                if pg.first_rank != rank:
                    corrupt(f"leaf {x}: first_rank {pg.first_rank}, expected {rank}")
                if pg.count == 0 and not (h.entry_count == 0 and h.leaf_count == 1):
                    corrupt(f"leaf {x} is empty")
                for i in range(1, len(k)):
                    if not k[i - 1] < k[i]:
                        corrupt(f"leaf {x}: keys {i - 1} and {i} not strictly ascending")
                if k and keys and not keys[-1] < k[0]:
                    corrupt(f"leaf {x}: first key not above the previous leaf's last key")
            for i in range(len(k)):
                leaf_of.append((x, i))
            keys.extend(k)
            values.extend(v)
            level_bounds.append((k[0], k[-1]) if k else None)
            rank += pg.count
        if rank != h.entry_count:
            corrupt(f"leaves hold {rank} entries, entry_count is {h.entry_count}")
        bounds.append(level_bounds)
        # Inner levels (section 11).
        for lv in range(1, h.height):
            below_bounds = bounds[lv - 1]
            level_bounds = []
            next_child = 0
            for j in range(level_pages(h, lv)):
                x = h.level_first_page[lv] + j
                pg = self.page(x, lv)
                seps, _, spans = pg.decode(verify)
                if lv >= 2 and h.directory is not None:
                    upper[x] = seps
                if verify:
                    pg.verify_layout(spans)
                    if pg.first_child != next_child:
                        corrupt(f"page {x}: first_child {pg.first_child}, "
                                f"expected {next_child}")
                    for i in range(1, len(seps)):
                        if not seps[i - 1] < seps[i]:
                            corrupt(f"page {x}: separators {i - 1} and {i} "
                                    "not strictly ascending")
                    for i in range(pg.count + 1):
                        cb = below_bounds[pg.first_child + i]
                        if cb is None:
                            continue
                        if i > 0 and not seps[i - 1] <= cb[0]:
                            corrupt(f"page {x}: separator {i - 1} is above a key of child {i}")
                        if i < pg.count and not cb[1] < seps[i]:
                            corrupt(f"page {x}: separator {i} is not above every key "
                                    f"of child {i}")
                next_child = pg.first_child + pg.count + 1
                children = below_bounds[pg.first_child:next_child]
                firsts = [c for c in children if c is not None]
                level_bounds.append((firsts[0][0], firsts[-1][1]) if firsts else None)
            if verify and next_child != level_pages(h, lv - 1):
                corrupt(f"level {lv} covers {next_child} of the "
                        f"{level_pages(h, lv - 1)} pages of level {lv - 1}")
            bounds.append(level_bounds)
        if verify:
            self.verify_blob_tiling()
            self.verify_max_lengths(keys, values)
            self.verify_directory(upper)
        self.collecting = False
        return keys, values, leaf_of

    def inorder(self, upper):
        """The in-order sequence of the upper separators (12.3), as
        (page, index, separator), from the separators decoded by read_all."""
        h = self.h
        out = []

        def walk(x, lv):  # recursion depth < height <= 32
            if lv == 1:
                return
            pg = self.page(x, lv)
            seps = upper[x]
            first = h.level_first_page[lv - 1] + pg.first_child
            for i in range(pg.count + 1):
                walk(first + i, lv - 1)
                if i < pg.count:
                    out.append((x, i, seps[i]))

        walk(h.root_page, h.height - 1)
        return out

    def verify_directory(self, upper):
        """14.6: the directory region's checksum, padding and reserved
        fields, and its entries against the in-order upper separators."""
        h, d = self.h, self.h.directory
        if d is None:
            return
        crc = crc32c(d.region)
        if crc != h.directory_checksum:
            corrupt(f"directory checksum 0x{h.directory_checksum:08x}, computed 0x{crc:08x}")
        if h.minor_version <= KNOWN_MINOR:
            if not is_zero(self.data[h.metadata_end:h.directory_offset]):
                corrupt(f"padding [{h.metadata_end}, {h.directory_offset}) before the "
                        "directory region is not zero")
            for i in range(d.n):
                if d.locator(i)[2] != 0:
                    corrupt(f"directory entry {i}: locator reserved field not zero")
        seq = self.inorder(upper)
        if len(seq) != d.n:
            corrupt(f"directory has {d.n} entries, the levels above level 1 hold "
                    f"{len(seq)} separators")
        prefix = d.prefix()
        prev = None
        for i, (x, j, sep) in enumerate(seq):
            page, index, _ = d.locator(i)
            if (page, index) != (x, j):
                corrupt(f"directory entry {i}: locator (page {page}, index {index}), "
                        f"the in-order separator {i} is (page {x}, index {j})")
            if not sep.startswith(prefix):
                corrupt(f"directory entry {i}: separator does not begin with the "
                        f"directory's prefix of {d.p} bytes")
            if d.head(i) != d.head_of(sep):
                corrupt(f"directory entry {i}: head is not the {d.head_size} bytes "
                        "of its separator after the prefix")
            if prev is not None and not prev < sep:
                corrupt(f"directory entries {i - 1} and {i}: separators not strictly ascending")
            prev = sep

    def verify_blob_tiling(self):
        """12.1: every blob byte belongs to exactly one external item."""
        items = sorted(self.external_items)
        pos = 0
        for bio, length, x, off in items:
            if bio != pos:
                what = "overlaps another item" if bio < pos else f"leaves a gap at {pos}"
                corrupt(f"blob item at {bio} (page {x}, slot at {off}) {what}")
            pos += length
        if pos != self.h.blob_length:
            corrupt(f"blob items end at {pos}, blob_length is {self.h.blob_length}")

    def verify_max_lengths(self, keys, values):
        h = self.h
        mk = max((len(k) for k in keys), default=0)
        if mk != h.max_key_length:
            corrupt_header(f"max_key_length {h.max_key_length}, longest key is {mk}")
        if h.value_kind == VALUE_NONE:
            mv = 0
        else:
            mv = max((len(v) for v in values), default=0)
        if mv != h.max_value_length:
            corrupt_header(f"max_value_length {h.max_value_length}, longest value is {mv}")

    # -- searches (section 13) ---------------------------------------------

    def directory_separator(self, i):
        """The separator of directory entry i, through its locator, checked
        as 14.2 says."""
        h = self.h
        page, index, _ = h.directory.locator(i)
        lfp = h.level_first_page
        if not lfp[2] <= page < h.page_count:
            corrupt(f"directory entry {i}: page {page} is not in levels 2 to {h.height - 1}")
        lv = 2
        while lv < h.height - 1 and page >= lfp[lv + 1]:
            lv += 1
        try:
            pg = self.page(page, lv)
            if index >= pg.count:
                corrupt(f"index {index} >= count {pg.count} of page {page}")
            return pg.key(index)
        except BadFile as e:
            corrupt(f"directory entry {i}: {e.message}")

    def directory_count(self, q):
        """Number of directory separators <= q (12.3, 13.2)."""
        d = self.h.directory
        # The prefix that every separator begins with decides most probes.
        P = d.prefix()
        m = min(d.p, len(q))
        if q[:m] != P[:m]:
            return 0 if q[:m] < P[:m] else d.n
        if len(q) < d.p:
            return 0
        H = d.head_of(q)
        lo = d.bisect(H, False)
        hi = d.bisect(H, True)
        while lo < hi:  # ties: their separators ascend; find the first > q
            mid = (lo + hi) // 2
            if self.directory_separator(mid) <= q:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def descend(self, q, use_directory=True):
        h = self.h
        x, lv = h.root_page, h.height - 1
        if use_directory and h.directory is not None:
            x, lv = h.level_first_page[1] + self.directory_count(q), 1
        while lv > 0:
            pg = self.page(x, lv)
            i = pg.below(q, True)
            x = h.level_first_page[lv - 1] + pg.first_child + i
            lv -= 1
        return self.page(x, 0)

    def rank(self, q, inclusive=False):
        leaf = self.descend(q)
        return leaf.first_rank + leaf.below(q, inclusive), leaf

    def check_searches(self, keys, leaf_of, samples=400):
        """Searches a sample of keys, and probes next to them, from the root
        and (in a file with a directory) from level 1 by the directory, and
        compares with each other and with the order given by the leaves
        (13.2, 13.5)."""
        h = self.h
        n = len(keys)
        fixed = h.key_kind != KEY_BYTES
        ks = h.key_size
        step = max(1, n // samples)
        picks = sorted(set(list(range(0, n, step)) + ([n - 1] if n else [])))
        probes = []
        for r in picks:
            k = keys[r]
            leaf, i = leaf_of[r]
            got, got_leaf = self.rank(k)
            if got_leaf.x != leaf or got != r:
                corrupt(f"search for key of rank {r} (leaf {leaf}) found rank {got} "
                        f"in leaf {got_leaf.x}")
            if got_leaf.below(k, True) != i + 1:
                corrupt(f"search for key of rank {r}: inclusive count wrong")
            if fixed:
                v = int.from_bytes(k, "big")
                for d in (-1, 1):
                    if 0 <= v + d < 1 << (8 * ks):
                        probes.append((v + d).to_bytes(ks, "big"))
            else:
                probes.append(k + b"\x00")
                probes.append(k + b"\xff\xff")
                if k:
                    probes.append(k[:-1])
                    if k[-1] < 255:
                        probes.append(k[:-1] + bytes([k[-1] + 1]))
        if fixed:
            probes += [bytes(ks), b"\xff" * ks, b"\x80" + bytes(ks - 1)]
        else:
            probes += [b"", b"\xff" * 20]
        d = h.directory
        if d is not None:
            # The directory's separators and their neighbours: ties of heads,
            # and probes on either side of a boundary between level-1 pages.
            e = d.p + d.head_size  # where a separator's head ends
            for i in sorted(set(list(range(0, d.n, max(1, d.n // samples))) + [d.n - 1])):
                sep = self.directory_separator(i)
                probes.append(sep)
                if fixed:
                    v = int.from_bytes(sep, "big")
                    for dv in (-1, 1):
                        if 0 <= v + dv < 1 << (8 * ks):
                            probes.append((v + dv).to_bytes(ks, "big"))
                    probes.append(sep[:e] + b"\xff" * (ks - min(e, ks)))
                    probes.append(sep[:e] + bytes(ks - min(e, ks)))
                else:
                    probes += [sep + b"\x00", sep[:-1], sep[:e] + b"\xff", sep[:e]]
            # Probes against the prefix: a proper prefix of it, the prefix
            # itself, and probes that differ from it at its last byte.
            pre = d.prefix()
            near = [pre, pre[:-1], pre[:d.p // 2]]
            if pre:
                last = pre[-1]
                if last > 0:
                    near.append(pre[:-1] + bytes([last - 1]) + b"\xff" * 4)
                if last < 255:
                    near.append(pre[:-1] + bytes([last + 1]))
            for q in near:
                if fixed:
                    q = q[:ks]
                    probes += [q + bytes(ks - len(q)), q + b"\xff" * (ks - len(q))]
                else:
                    probes += [q, q + b"\x00", q + b"\xff" * (d.head_size + 2)]
        for q in probes:
            if d is not None:
                by_dir, by_root = self.descend(q), self.descend(q, use_directory=False)
                if by_dir.x != by_root.x:
                    corrupt(f"probe {q.hex()}: the directory gives leaf {by_dir.x}, "
                            f"the descent from the root leaf {by_root.x}")
            for inclusive in (False, True):
                want = (bisect.bisect_right if inclusive else bisect.bisect_left)(keys, q)
                got, _ = self.rank(q, inclusive)
                if got != want:
                    corrupt(f"rank of probe {q.hex()} (inclusive={inclusive}) is {got} "
                            f"by search, {want} by scan")


# --------------------------------------------------------------------------
# Text (TEXT-FORMATS.md sections 1 to 3)

_ESCAPES = {0x5C: "\\\\", 0x09: "\\t", 0x0D: "\\r", 0x0A: "\\n"}


def _escape_char(ch):
    c = ord(ch)
    if c in _ESCAPES:
        return _ESCAPES[c]
    if c < 0x20 or c == 0x7F:
        return f"\\x{c:02x}"
    if 0xDC80 <= c <= 0xDCFF:  # a byte that is not part of valid UTF-8
        return f"\\x{c - 0xDC00:02x}"
    return ch


_PLAIN = frozenset(range(0x20, 0x7F)) - {0x5C}


def escape_bytes(b):
    if all(c in _PLAIN for c in b):
        return b.decode("ascii")
    # Python's UTF-8 decoder is strict RFC 3629 (no overlong forms, no
    # surrogates, nothing above U+10FFFF); surrogateescape turns each byte it
    # rejects into U+DC80..U+DCFF on its own.
    s = b.decode("utf-8", "surrogateescape")
    return "".join(_escape_char(ch) for ch in s)


def key_text(h, k):
    if h.key_kind == KEY_U64:
        return str(int.from_bytes(k, "big"))
    if h.key_kind == KEY_I64:
        # be64(value XOR 2^63), value in two's complement: value = encoded - 2^63.
        return str(int.from_bytes(k, "big") - (1 << 63))
    if h.key_kind == KEY_FIXED:
        return k.hex()
    return escape_bytes(k)


def value_text(h, v):
    if h.value_kind == VALUE_U64:
        return str(int.from_bytes(v, "little"))
    if h.value_kind == VALUE_FIXED:
        return v.hex()
    return escape_bytes(v)


def write_tsv(h, keys, values, out):
    chunk = []
    for i, k in enumerate(keys):
        if h.value_kind == VALUE_NONE:
            chunk.append(key_text(h, k) + "\n")
        else:
            chunk.append(key_text(h, k) + "\t" + value_text(h, values[i]) + "\n")
        if len(chunk) >= 10000:
            out.write("".join(chunk).encode("utf-8"))
            chunk = []
    out.write("".join(chunk).encode("utf-8"))


def header_lines(f):
    h = f.h
    lines = []
    for name, _, _ in HEADER_FIELDS:
        v = getattr(h, name)
        if name == "magic":
            v = v.hex(" ")
        elif name == "key_kind":
            v = f"{v} ({KEY_KIND_NAMES[v]})"
        elif name == "value_kind":
            v = f"{v} ({VALUE_KIND_NAMES[v]})"
        elif name in ("required_features", "optional_features"):
            v = f"0x{v:016x}"
        elif name == "build_flags":
            v = f"0x{v:08x}"
        elif name.endswith("checksum"):
            v = f"0x{v:08x}"
        lines.append(f"{name}: {v}")
        if name == "build_flags":
            lines.append(f"input_sorted: {'no' if h.build_flags & 1 else 'yes'}")
            lines.append("duplicates: " + ["error", "first", "last", "3?"][(h.build_flags >> 1) & 3])
    lines.insert(len(lines) - 1, "level_first_page: "
                 + " ".join(str(x) for x in h.level_first_page[:h.height]))
    lines.append(f"metadata_entries: {len(f.metadata)}")
    for k, v in f.metadata:
        lines.append(f"metadata.{escape_bytes(k)}: {escape_bytes(v)}")
    return lines


USAGE = "usage: reference_reader.py FILE [--format tsv] [--header]"


def main(argv):
    path = None
    header = False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--header":
            header = True
        elif a == "--format" or a.startswith("--format="):
            if a == "--format":
                i += 1
                if i >= len(argv):
                    print(USAGE, file=sys.stderr)
                    return 2
                fmt = argv[i]
            else:
                fmt = a.split("=", 1)[1]
            if fmt != "tsv":
                print(f"reference_reader: only --format tsv is supported, not {fmt}",
                      file=sys.stderr)
                return 2
        elif a in ("-h", "--help"):
            print(USAGE)
            print(__doc__)
            return 0
        elif a.startswith("-") and a != "-":
            print(f"reference_reader: unknown option {a}\n{USAGE}", file=sys.stderr)
            return 2
        elif path is None:
            path = a
        else:
            print(USAGE, file=sys.stderr)
            return 2
        i += 1
    if path is None:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as fh:
                data = fh.read()
    except OSError as e:
        print(f"reference_reader: {path}: {e.strerror}", file=sys.stderr)
        return 3
    try:
        f = BBTree(data)
        keys, values, leaf_of = f.read_all()
        f.check_searches(keys, leaf_of)
    except BadFile as e:
        print(f"reference_reader: {path}: {e}", file=sys.stderr)
        return 1
    out = sys.stdout.buffer
    try:
        if header:
            out.write(("\n".join(header_lines(f)) + "\n").encode("utf-8"))
        else:
            write_tsv(f.h, keys, values, out)
        out.flush()
    except BrokenPipeError:
        try:
            sys.stdout = None
        except Exception:
            pass
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
