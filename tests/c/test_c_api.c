/* The C interface, from C: lookups, batches, cursors, counts and errors on
 * the sample index (English number names -> u64), opened from the file,
 * from a copy in memory at an odd address, and as a shard set of the same
 * entries; and a manifest whose shards are missing.
 *   test_c_api INDEX MANIFEST MANIFEST_WITHOUT_SHARDS */
#include <bbtree/bbtree.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed = 0;
static int failed = 0;

#define CHECK(condition)                                                      \
  do {                                                                        \
    if (condition) {                                                          \
      ++passed;                                                               \
    } else {                                                                  \
      ++failed;                                                               \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #condition); \
    }                                                                         \
  } while (0)

static uint64_t value_of(const bbtree_index* index, const char* key) {
  bbtree_bytes value = {0, 0};
  if (bbtree_get(index, key, strlen(key), &value) != BBTREE_OK || value.size != 8)
    return UINT64_MAX;
  return bbtree_u64_value(value.data);
}

/* What a walk saw: entries, the sum of their values, and the prefix that
 * stops it (null: none). */
struct walk_tally {
  const char* prefix;
  int entries;
  uint64_t sum;
};

static int tally_entry(bbtree_bytes key, bbtree_bytes value, void* context) {
  struct walk_tally* tally = (struct walk_tally*)context;
  if (tally->prefix != NULL) {
    const size_t length = strlen(tally->prefix);
    if (key.size < length || memcmp(key.data, tally->prefix, length) != 0) return 1;
  }
  ++tally->entries;
  tally->sum += bbtree_u64_value(value.data);
  return 0;
}

static void check_index(const bbtree_index* index) {
  CHECK(bbtree_size(index) == 5001);
  CHECK(bbtree_get_key_kind(index) == BBTREE_KEY_BYTES);
  CHECK(bbtree_get_value_kind(index) == BBTREE_VALUE_U64);
  CHECK(value_of(index, "forty-two") == 42);
  CHECK(value_of(index, "zero") == 0);
  CHECK(value_of(index, "five thousand") == 5000);

  bbtree_bytes value = {0, 0};
  CHECK(bbtree_get(index, "eleventy", 8, &value) == BBTREE_NOT_FOUND);

  bbtree_bytes keys[3] = {{"one", 3}, {"missing", 7}, {"two hundred", 11}};
  bbtree_bytes values[3];
  uint8_t found[3];
  size_t found_count = 0;
  CHECK(bbtree_get_many(index, keys, 3, values, found, &found_count) == BBTREE_OK);
  CHECK(found_count == 2);
  CHECK(found[0] == 1 && bbtree_u64_value(values[0].data) == 1);
  CHECK(found[1] == 0);
  CHECK(found[2] == 1 && bbtree_u64_value(values[2].data) == 200);

  /* A batch of every key, each followed by a missing one (the key with a
   * '!' appended), many times the size of a chunk of the interface. */
  {
    enum { entries = 5001, batch = 2 * entries };
    bbtree_bytes* batch_keys = malloc(batch * sizeof *batch_keys);
    bbtree_bytes* batch_values = malloc(batch * sizeof *batch_values);
    uint64_t* walked_values = malloc(entries * sizeof *walked_values);
    char** missing = malloc(entries * sizeof *missing);
    uint8_t* batch_found = malloc(batch);
    bbtree_cursor* all = NULL;
    CHECK(bbtree_cursor_open(index, &all) == BBTREE_OK);
    int n = 0;
    for (bbtree_status at = bbtree_cursor_first(all); at == BBTREE_OK && n < entries;
         at = bbtree_cursor_next(all), ++n) {
      bbtree_bytes walked_key = {0, 0};
      bbtree_bytes walked_value = {0, 0};
      CHECK(bbtree_cursor_key(all, &walked_key) == BBTREE_OK);
      CHECK(bbtree_cursor_value(all, &walked_value) == BBTREE_OK);
      missing[n] = malloc(walked_key.size + 1);
      memcpy(missing[n], walked_key.data, walked_key.size);
      missing[n][walked_key.size] = '!';
      /* Values stay valid while the index is open; a key's bytes are
       * copied, since they live only until the cursor moves. */
      batch_keys[2 * n].data = missing[n];
      batch_keys[2 * n].size = walked_key.size;
      batch_keys[2 * n + 1].data = missing[n];
      batch_keys[2 * n + 1].size = walked_key.size + 1;
      walked_values[n] = bbtree_u64_value(walked_value.data);
    }
    bbtree_cursor_close(all);
    CHECK(n == entries);
    size_t batch_hits = 0;
    CHECK(bbtree_get_many(index, batch_keys, batch, batch_values, batch_found, &batch_hits) ==
          BBTREE_OK);
    CHECK(batch_hits == entries);
    int agree = 0;
    for (int i = 0; i < entries; ++i) {
      agree += batch_found[2 * i] == 1 && batch_values[2 * i].size == 8 &&
               bbtree_u64_value(batch_values[2 * i].data) == walked_values[i] &&
               batch_found[2 * i + 1] == 0;
      free(missing[i]);
    }
    CHECK(agree == entries);
    free(batch_keys);
    free(batch_values);
    free(walked_values);
    free(missing);
    free(batch_found);
  }

  /* Keys starting with "twenty-": from "twenty-" up to "twenty." */
  uint64_t count = 0;
  CHECK(bbtree_count(index, "twenty-", 7, "twenty.", 7, &count) == BBTREE_OK);
  CHECK(count == 9);

  bbtree_cursor* cursor = NULL;
  CHECK(bbtree_cursor_open(index, &cursor) == BBTREE_OK);
  CHECK(!bbtree_cursor_valid(cursor));
  CHECK(bbtree_cursor_seek(cursor, "twenty-", 7) == BBTREE_OK);
  bbtree_bytes key = {0, 0};
  CHECK(bbtree_cursor_key(cursor, &key) == BBTREE_OK);
  CHECK(key.size == 12 && memcmp(key.data, "twenty-eight", 12) == 0);
  int steps = 0;
  while (bbtree_cursor_valid(cursor)) {
    CHECK(bbtree_cursor_key(cursor, &key) == BBTREE_OK);
    if (key.size < 7 || memcmp(key.data, "twenty-", 7) != 0) break;
    ++steps;
    bbtree_cursor_next(cursor);
  }
  CHECK(steps == 9);
  CHECK(bbtree_cursor_prev(cursor) == BBTREE_OK);
  CHECK(bbtree_cursor_value(cursor, &value) == BBTREE_OK);
  CHECK(bbtree_u64_value(value.data) == 22); /* "twenty-two" is the last key with the prefix */

  CHECK(bbtree_cursor_first(cursor) == BBTREE_OK);
  CHECK(bbtree_cursor_prev(cursor) == BBTREE_END);
  CHECK(bbtree_cursor_last(cursor) == BBTREE_OK);
  CHECK(bbtree_cursor_next(cursor) == BBTREE_END);
  CHECK(bbtree_cursor_key(cursor, &key) == BBTREE_E_INVALID_ARGUMENT);
  /* Back from the end, as the C++ --end(): the last entry, "zero" (5001
   * keys in byte order end with it), then the one before it. */
  CHECK(bbtree_cursor_prev(cursor) == BBTREE_OK);
  CHECK(bbtree_cursor_key(cursor, &key) == BBTREE_OK);
  CHECK(key.size == 4 && memcmp(key.data, "zero", 4) == 0);
  CHECK(bbtree_cursor_prev(cursor) == BBTREE_OK);
  CHECK(bbtree_cursor_key(cursor, &key) == BBTREE_OK);
  CHECK(memcmp(key.data, "zero", key.size < 4 ? key.size : 4) < 0);
  /* Back from the first entry: the end, and from there the last again. */
  CHECK(bbtree_cursor_first(cursor) == BBTREE_OK);
  CHECK(bbtree_cursor_prev(cursor) == BBTREE_END);
  CHECK(!bbtree_cursor_valid(cursor));
  CHECK(bbtree_cursor_prev(cursor) == BBTREE_OK);
  CHECK(bbtree_cursor_value(cursor, &value) == BBTREE_OK);
  CHECK(bbtree_u64_value(value.data) == 0);
  /* A new cursor is at the end too. */
  bbtree_cursor* fresh = NULL;
  CHECK(bbtree_cursor_open(index, &fresh) == BBTREE_OK);
  CHECK(bbtree_cursor_prev(fresh) == BBTREE_OK);
  CHECK(bbtree_cursor_key(fresh, &key) == BBTREE_OK);
  CHECK(key.size == 4 && memcmp(key.data, "zero", 4) == 0);
  bbtree_cursor_close(fresh);

  /* Walks: the "twenty-" keys (21 to 29), stopped at the first key after
   * them; then every entry, 0 to 5000. */
  struct walk_tally tally = {"twenty-", 0, 0};
  CHECK(bbtree_cursor_seek(cursor, "twenty-", 7) == BBTREE_OK);
  CHECK(bbtree_cursor_walk(cursor, tally_entry, &tally) == BBTREE_OK);
  CHECK(tally.entries == 9 && tally.sum == 225);
  CHECK(bbtree_cursor_key(cursor, &key) == BBTREE_OK);
  CHECK(memcmp(key.data, "twenty-", key.size < 7 ? key.size : 7) > 0); /* after the prefix */
  CHECK(bbtree_cursor_prev(cursor) == BBTREE_OK);
  CHECK(bbtree_cursor_value(cursor, &value) == BBTREE_OK);
  CHECK(bbtree_u64_value(value.data) == 22);
  struct walk_tally everything = {NULL, 0, 0};
  CHECK(bbtree_cursor_first(cursor) == BBTREE_OK);
  CHECK(bbtree_cursor_walk(cursor, tally_entry, &everything) == BBTREE_END);
  CHECK(everything.entries == 5001 && everything.sum == 12502500);
  CHECK(!bbtree_cursor_valid(cursor));
  CHECK(bbtree_cursor_walk(cursor, tally_entry, &everything) == BBTREE_END);
  CHECK(everything.entries == 5001);
  CHECK(bbtree_cursor_walk(cursor, NULL, NULL) == BBTREE_E_INVALID_ARGUMENT);
  bbtree_cursor_close(cursor);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: test_c_api INDEX MANIFEST MANIFEST_WITHOUT_SHARDS\n");
    return 2;
  }
  bbtree_index* index = NULL;
  /* Every memory mode gives the same answers. */
  const bbtree_memory_mode modes[] = {BBTREE_MAP, BBTREE_MAP_HUGE_PAGES, BBTREE_COPY_HUGE_PAGES,
                                      BBTREE_MAP_THEN_COPY_HUGE_PAGES};
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; ++m) {
    /* The file, and the shard set, whose cursors cross shard borders. */
    for (int path = 1; path <= 2; ++path) {
      index = NULL;
      CHECK(bbtree_open(argv[path], modes[m], 0, &index) == BBTREE_OK);
      if (index != NULL) check_index(index);
      bbtree_close(index);
    }
  }
  /* A set with its shards gone: an error that names the manifest's line. */
  index = NULL;
  CHECK(bbtree_open(argv[3], BBTREE_MAP, 0, &index) == BBTREE_E_IO);
  CHECK(index == NULL);
  CHECK(strstr(bbtree_last_error(), "numbers.manifest:3: cannot open ") != NULL);
  CHECK(bbtree_open(argv[1], (bbtree_memory_mode)4, 0, &index) == BBTREE_E_INVALID_ARGUMENT);

  /* The same bytes at an odd address in memory: the layout is relocatable. */
  FILE* file = fopen(argv[1], "rb");
  CHECK(file != NULL);
  if (file != NULL) {
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char* buffer = malloc((size_t)size + 3);
    CHECK(fread(buffer + 3, 1, (size_t)size, file) == (size_t)size);
    fclose(file);
    CHECK(bbtree_open_memory(buffer + 3, (size_t)size, &index) == BBTREE_OK);
    if (index != NULL) check_index(index);
    bbtree_close(index);
    /* Damaged bytes give an error, never a crash. */
    buffer[3] = 'X';
    CHECK(bbtree_open_memory(buffer + 3, (size_t)size, &index) == BBTREE_E_NOT_BBTREE);
    CHECK(strlen(bbtree_last_error()) > 0);
    free(buffer);
  }

  CHECK(bbtree_open("/nonexistent/index.bbt", BBTREE_MAP, 0, &index) == BBTREE_E_IO);
  CHECK(strstr(bbtree_last_error(), "/nonexistent/index.bbt") != NULL);
  CHECK(bbtree_open(NULL, BBTREE_MAP, 0, &index) == BBTREE_E_INVALID_ARGUMENT);

  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
