/* The C interface to bbtree index files.
 *
 * Keys and values are passed in their encoded form: u64 and i64 keys as 8
 * big-endian bytes (bbtree_u64_key and bbtree_i64_key encode them), u64
 * values as 8 little-endian bytes (bbtree_u64_value decodes them), fixed
 * and byte-string keys and values as their bytes.
 *
 * Every function that can fail returns a bbtree_status; BBTREE_OK is 0.
 * bbtree_last_error() gives the message of the calling thread's last
 * failure, naming the file.  No C++ exception crosses this interface.
 *
 * Thread safety: an index may be used by any number of threads at once; a
 * cursor by one thread at a time.  Bytes returned for values stay valid
 * until the index is closed; bytes returned for a cursor's key stay valid
 * until the cursor moves or is closed.
 */
#ifndef BBTREE_C_API_H
#define BBTREE_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum bbtree_status {
  BBTREE_OK = 0,
  BBTREE_NOT_FOUND = 1,           /* get: no such key */
  BBTREE_END = 2,                 /* a cursor moved past either end */
  BBTREE_E_NOT_BBTREE = 10,       /* not a file of this format */
  BBTREE_E_NEWER_VERSION = 11,    /* a format version this library does not read */
  BBTREE_E_UNSUPPORTED = 12,      /* a required feature this library does not know */
  BBTREE_E_TRUNCATED = 13,        /* shorter than its header says */
  BBTREE_E_CORRUPT = 14,          /* a corrupt header, page or item */
  BBTREE_E_INVALID_ARGUMENT = 15, /* a null pointer, a bad option, an end cursor */
  BBTREE_E_IO = 16,               /* the operating system refused */
  BBTREE_E_NO_MEMORY = 17,
  BBTREE_E_INTERNAL = 18
} bbtree_status;

typedef enum bbtree_key_kind {
  BBTREE_KEY_U64 = 1,
  BBTREE_KEY_I64 = 2,
  BBTREE_KEY_FIXED = 3,
  BBTREE_KEY_BYTES = 4
} bbtree_key_kind;

typedef enum bbtree_value_kind {
  BBTREE_VALUE_NONE = 0,
  BBTREE_VALUE_U64 = 1,
  BBTREE_VALUE_FIXED = 2,
  BBTREE_VALUE_BYTES = 3
} bbtree_value_kind;

typedef enum bbtree_memory_mode {
  BBTREE_MAP = 0,             /* a read-only file mapping */
  BBTREE_MAP_HUGE_PAGES = 1,  /* the same, advised with MADV_HUGEPAGE */
  BBTREE_COPY_HUGE_PAGES = 2, /* a copy in 2 MiB-aligned anonymous memory */
  /* a file mapping at once, replaced in the background by such a copy */
  BBTREE_MAP_THEN_COPY_HUGE_PAGES = 3
} bbtree_memory_mode;

typedef struct bbtree_index bbtree_index;
typedef struct bbtree_cursor bbtree_cursor;

/* A view of bytes owned by the index or a cursor. */
typedef struct bbtree_bytes {
  const void* data;
  size_t size;
} bbtree_bytes;

/* The calling thread's last error message ("" if none). */
const char* bbtree_last_error(void);
/* A short name for a status, such as "corrupt". */
const char* bbtree_status_name(bbtree_status status);
/* The library version, such as "0.1.0". */
const char* bbtree_version(void);

/* Opens an index file, or a shard set's manifest (spec/SHARDS.md) with
 * every shard it lists, read as one index: lookups, batches, counts and
 * cursors work across the shards as on one file.  populate: fault every
 * page in at open (0 or 1).  A shard that is missing or differs from its
 * manifest line fails the open, with a message naming the manifest line. */
bbtree_status bbtree_open(const char* path, bbtree_memory_mode mode, int populate,
                          bbtree_index** out);
/* Reads `size` bytes at `data` in place: the caller keeps them alive and
 * unchanged until bbtree_close.  Works at any address and alignment.  The
 * bytes are an index file's; a manifest names files, so it opens by path. */
bbtree_status bbtree_open_memory(const void* data, size_t size, bbtree_index** out);
/* Closes an index (null is allowed).  Its cursors must be closed first. */
void bbtree_close(bbtree_index* index);

uint64_t bbtree_size(const bbtree_index* index);
bbtree_key_kind bbtree_get_key_kind(const bbtree_index* index);
bbtree_value_kind bbtree_get_value_kind(const bbtree_index* index);
/* The size of fixed keys (8 for u64 and i64) and fixed values; 0 otherwise. */
uint32_t bbtree_key_size(const bbtree_index* index);
uint32_t bbtree_value_size(const bbtree_index* index);

/* Looks `key` up: BBTREE_OK with *value set, or BBTREE_NOT_FOUND. */
bbtree_status bbtree_get(const bbtree_index* index, const void* key, size_t key_size,
                         bbtree_bytes* value);
/* Looks up `count` keys at once, descending the tree for all of them level
 * by level.  found[i] is 1 and values[i] set for each key present, else 0.
 * *found_count (may be null) receives how many were found. */
bbtree_status bbtree_get_many(const bbtree_index* index, const bbtree_bytes* keys, size_t count,
                              bbtree_bytes* values, uint8_t* found, size_t* found_count);
/* Entries whose keys lie in [from, to) (from and to may be null for no bound). */
bbtree_status bbtree_count(const bbtree_index* index, const void* from, size_t from_size,
                           const void* to, size_t to_size, uint64_t* count);

/* Cursors.  A new cursor is at the end; seek it before reading. */
bbtree_status bbtree_cursor_open(const bbtree_index* index, bbtree_cursor** out);
void bbtree_cursor_close(bbtree_cursor* cursor);
/* To the first entry >= key; BBTREE_END if there is none. */
bbtree_status bbtree_cursor_seek(bbtree_cursor* cursor, const void* key, size_t key_size);
bbtree_status bbtree_cursor_first(bbtree_cursor* cursor);
bbtree_status bbtree_cursor_last(bbtree_cursor* cursor);
/* One entry forward or back, as the C++ cursor's ++ and --: BBTREE_END
 * past either end, the cursor then at the end.  Back from the end is the
 * last entry (BBTREE_END in an empty index), so that a walk backwards can
 * start at the end; forward from the end stays there (BBTREE_END).  On an
 * error (a damaged page on the way) the cursor stays at the entry it was
 * at. */
bbtree_status bbtree_cursor_next(bbtree_cursor* cursor);
bbtree_status bbtree_cursor_prev(bbtree_cursor* cursor);
int bbtree_cursor_valid(const bbtree_cursor* cursor);
bbtree_status bbtree_cursor_key(bbtree_cursor* cursor, bbtree_bytes* key);
bbtree_status bbtree_cursor_value(bbtree_cursor* cursor, bbtree_bytes* value);
/* A walk: calls each(key, value, context) at the cursor's entry and every
 * entry after it, in order, until `each` returns nonzero (BBTREE_OK, the
 * cursor left at that entry) or the last entry is done (BBTREE_END, the
 * cursor at the end).  Faster than bbtree_cursor_next over many entries.
 * A key is valid during its call only; a value while the index is open. */
typedef int (*bbtree_walk_fn)(bbtree_bytes key, bbtree_bytes value, void* context);
bbtree_status bbtree_cursor_walk(bbtree_cursor* cursor, bbtree_walk_fn each, void* context);

/* Encodings. */
void bbtree_u64_key(uint64_t key, unsigned char out[8]);
void bbtree_i64_key(int64_t key, unsigned char out[8]);
uint64_t bbtree_decode_u64_key(const void* key);
int64_t bbtree_decode_i64_key(const void* key);
uint64_t bbtree_u64_value(const void* value);

#ifdef __cplusplus
}
#endif

#endif /* BBTREE_C_API_H */
