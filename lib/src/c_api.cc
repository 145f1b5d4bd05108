// The C interface: a thin layer over sharded_reader (an index file, or a
// shard set's manifest, read as one index) that turns every exception into
// a status and a thread-local message.
#include <bbtree/bbtree.h>
#include <bbtree/key_codec.h>
#include <bbtree/reader.h>
#include <bbtree/shards.h>
#include <bbtree/version.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

struct bbtree_index {
  bbtree::sharded_reader reader;
};

struct bbtree_cursor {
  const bbtree_index* index;
  bbtree::cursor position;
};

namespace {

thread_local std::string last_error;

bbtree_status status_of(bbtree::errc code) {
  using bbtree::errc;
  switch (code) {
    case errc::not_bbtree:
      return BBTREE_E_NOT_BBTREE;
    case errc::newer_version:
      return BBTREE_E_NEWER_VERSION;
    case errc::unsupported_feature:
      return BBTREE_E_UNSUPPORTED;
    case errc::truncated:
      return BBTREE_E_TRUNCATED;
    case errc::corrupt_header:
    case errc::corrupt:
    case errc::trailing_data:
      return BBTREE_E_CORRUPT;
    case errc::io_error:
      return BBTREE_E_IO;
    default:
      return BBTREE_E_INVALID_ARGUMENT;
  }
}

// Runs `body`, turning any exception into a status and a message.
template <typename Body>
bbtree_status guarded(Body&& body) noexcept {
  try {
    last_error.clear();
    return body();
  } catch (const bbtree::error& failure) {
    last_error = failure.what();
    return status_of(failure.code());
  } catch (const std::bad_alloc&) {
    last_error = "out of memory";
    return BBTREE_E_NO_MEMORY;
  } catch (const std::exception& failure) {
    last_error = failure.what();
    return BBTREE_E_INTERNAL;
  } catch (...) {
    last_error = "unknown error";
    return BBTREE_E_INTERNAL;
  }
}

bbtree_status invalid(const char* what) {
  last_error = what;
  return BBTREE_E_INVALID_ARGUMENT;
}

std::string_view view_of(const void* data, std::size_t size) {
  return {static_cast<const char*>(data), size};
}

bbtree_bytes bytes_of(std::string_view view) { return {view.data(), view.size()}; }

bbtree_status position_status(const bbtree_cursor* cursor) {
  return cursor->position.is_end() ? BBTREE_END : BBTREE_OK;
}

}  // namespace

extern "C" {

const char* bbtree_last_error(void) { return last_error.c_str(); }

const char* bbtree_status_name(bbtree_status status) {
  switch (status) {
    case BBTREE_OK:
      return "ok";
    case BBTREE_NOT_FOUND:
      return "not found";
    case BBTREE_END:
      return "end";
    case BBTREE_E_NOT_BBTREE:
      return "not a bbtree file";
    case BBTREE_E_NEWER_VERSION:
      return "newer format version";
    case BBTREE_E_UNSUPPORTED:
      return "unsupported feature";
    case BBTREE_E_TRUNCATED:
      return "truncated";
    case BBTREE_E_CORRUPT:
      return "corrupt";
    case BBTREE_E_INVALID_ARGUMENT:
      return "invalid argument";
    case BBTREE_E_IO:
      return "I/O error";
    case BBTREE_E_NO_MEMORY:
      return "out of memory";
    case BBTREE_E_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

const char* bbtree_version(void) { return bbtree::version_string; }

// bbtree_open casts the C mode to the C++ one.
static_assert(BBTREE_MAP == static_cast<int>(bbtree::memory_mode::map) &&
              BBTREE_MAP_HUGE_PAGES == static_cast<int>(bbtree::memory_mode::map_huge_pages) &&
              BBTREE_COPY_HUGE_PAGES == static_cast<int>(bbtree::memory_mode::copy_huge_pages) &&
              BBTREE_MAP_THEN_COPY_HUGE_PAGES ==
                  static_cast<int>(bbtree::memory_mode::map_then_copy_huge_pages));

bbtree_status bbtree_open(const char* path, bbtree_memory_mode mode, int populate,
                          bbtree_index** out) {
  if (path == nullptr || out == nullptr) return invalid("bbtree_open: null argument");
  // A C caller may pass any int; in C++ a value outside the enumerators'
  // range must not be read as the enum, so the check reads its bytes.
  int mode_value = 0;
  static_assert(sizeof mode == sizeof mode_value);
  std::memcpy(&mode_value, &mode, sizeof mode_value);
  if (mode_value < BBTREE_MAP || mode_value > BBTREE_MAP_THEN_COPY_HUGE_PAGES)
    return invalid("bbtree_open: unknown memory mode");
  *out = nullptr;
  return guarded([&] {
    bbtree::open_options options;
    options.memory = static_cast<bbtree::memory_mode>(mode_value);
    options.populate = populate != 0;
    *out = new bbtree_index{bbtree::sharded_reader::open(path, options)};
    return BBTREE_OK;
  });
}

bbtree_status bbtree_open_memory(const void* data, size_t size, bbtree_index** out) {
  if ((data == nullptr && size > 0) || out == nullptr)
    return invalid("bbtree_open_memory: null argument");
  *out = nullptr;
  return guarded([&] {
    *out = new bbtree_index{bbtree::sharded_reader(bbtree::reader::from_memory(
        std::span<const std::byte>(static_cast<const std::byte*>(data), size)))};
    return BBTREE_OK;
  });
}

void bbtree_close(bbtree_index* index) { delete index; }

uint64_t bbtree_size(const bbtree_index* index) { return index ? index->reader.size() : 0; }
bbtree_key_kind bbtree_get_key_kind(const bbtree_index* index) {
  return static_cast<bbtree_key_kind>(index->reader.info().keys);
}
bbtree_value_kind bbtree_get_value_kind(const bbtree_index* index) {
  return static_cast<bbtree_value_kind>(index->reader.info().values);
}
uint32_t bbtree_key_size(const bbtree_index* index) { return index->reader.info().key_size; }
uint32_t bbtree_value_size(const bbtree_index* index) { return index->reader.info().value_size; }

bbtree_status bbtree_get(const bbtree_index* index, const void* key, size_t key_size,
                         bbtree_bytes* value) {
  if (index == nullptr || (key == nullptr && key_size > 0) || value == nullptr) {
    return invalid("bbtree_get: null argument");
  }
  return guarded([&] {
    const auto found = index->reader.get(view_of(key, key_size));
    if (!found) return BBTREE_NOT_FOUND;
    *value = bytes_of(*found);
    return BBTREE_OK;
  });
}

bbtree_status bbtree_get_many(const bbtree_index* index, const bbtree_bytes* keys, size_t count,
                              bbtree_bytes* values, uint8_t* found, size_t* found_count) {
  if (index == nullptr ||
      (count > 0 && (keys == nullptr || values == nullptr || found == nullptr))) {
    return invalid("bbtree_get_many: null argument");
  }
  return guarded([&] {
    // In chunks on the stack: a batch allocates nothing, whatever its size,
    // and the reader works in groups smaller than a chunk anyway.
    constexpr size_t chunk = 64;
    std::string_view views[chunk];
    std::optional<std::string_view> answers[chunk];
    size_t hits = 0;
    for (size_t start = 0; start < count; start += chunk) {
      const size_t n = std::min(chunk, count - start);
      for (size_t i = 0; i < n; ++i) views[i] = view_of(keys[start + i].data, keys[start + i].size);
      hits += index->reader.get_many(std::span(views, n), std::span(answers, n));
      for (size_t i = 0; i < n; ++i) {
        found[start + i] = answers[i].has_value() ? 1 : 0;
        values[start + i] = answers[i] ? bytes_of(*answers[i]) : bbtree_bytes{nullptr, 0};
      }
    }
    if (found_count != nullptr) *found_count = hits;
    return BBTREE_OK;
  });
}

bbtree_status bbtree_count(const bbtree_index* index, const void* from, size_t from_size,
                           const void* to, size_t to_size, uint64_t* count) {
  if (index == nullptr || count == nullptr) return invalid("bbtree_count: null argument");
  return guarded([&] {
    const bbtree::bound lower =
        from ? bbtree::bound::inclusive(view_of(from, from_size)) : bbtree::bound::none();
    const bbtree::bound upper =
        to ? bbtree::bound::exclusive(view_of(to, to_size)) : bbtree::bound::none();
    *count = index->reader.count(lower, upper);
    return BBTREE_OK;
  });
}

bbtree_status bbtree_cursor_open(const bbtree_index* index, bbtree_cursor** out) {
  if (index == nullptr || out == nullptr) return invalid("bbtree_cursor_open: null argument");
  *out = nullptr;
  return guarded([&] {
    *out = new bbtree_cursor{index, index->reader.end()};
    return BBTREE_OK;
  });
}

void bbtree_cursor_close(bbtree_cursor* cursor) { delete cursor; }

bbtree_status bbtree_cursor_seek(bbtree_cursor* cursor, const void* key, size_t key_size) {
  if (cursor == nullptr || (key == nullptr && key_size > 0))
    return invalid("bbtree_cursor_seek: null argument");
  return guarded([&] {
    cursor->position = cursor->index->reader.lower_bound(view_of(key, key_size));
    return position_status(cursor);
  });
}

bbtree_status bbtree_cursor_first(bbtree_cursor* cursor) {
  if (cursor == nullptr) return invalid("bbtree_cursor_first: null cursor");
  return guarded([&] {
    cursor->position = cursor->index->reader.begin();
    return position_status(cursor);
  });
}

bbtree_status bbtree_cursor_last(bbtree_cursor* cursor) {
  if (cursor == nullptr) return invalid("bbtree_cursor_last: null cursor");
  return guarded([&] {
    cursor->position = cursor->index->reader.end();
    --cursor->position;
    return position_status(cursor);
  });
}

bbtree_status bbtree_cursor_next(bbtree_cursor* cursor) {
  if (cursor == nullptr) return invalid("bbtree_cursor_next: null cursor");
  return guarded([&] {
    if (cursor->position.is_end()) return BBTREE_END;
    ++cursor->position;
    return position_status(cursor);
  });
}

bbtree_status bbtree_cursor_prev(bbtree_cursor* cursor) {
  if (cursor == nullptr) return invalid("bbtree_cursor_prev: null cursor");
  return guarded([&] {
    // As the C++ cursor: back from the end is the last entry (none in an
    // empty index), back from the first entry is the end.
    --cursor->position;
    return position_status(cursor);
  });
}

int bbtree_cursor_valid(const bbtree_cursor* cursor) {
  return cursor != nullptr && !cursor->position.is_end();
}

bbtree_status bbtree_cursor_key(bbtree_cursor* cursor, bbtree_bytes* key) {
  if (cursor == nullptr || key == nullptr) return invalid("bbtree_cursor_key: null argument");
  if (cursor->position.is_end()) return invalid("bbtree_cursor_key: the cursor is at the end");
  return guarded([&] {
    *key = bytes_of(cursor->position.key());
    return BBTREE_OK;
  });
}

bbtree_status bbtree_cursor_value(bbtree_cursor* cursor, bbtree_bytes* value) {
  if (cursor == nullptr || value == nullptr) return invalid("bbtree_cursor_value: null argument");
  if (cursor->position.is_end()) return invalid("bbtree_cursor_value: the cursor is at the end");
  return guarded([&] {
    *value = bytes_of(cursor->position.value());
    return BBTREE_OK;
  });
}

bbtree_status bbtree_cursor_walk(bbtree_cursor* cursor, bbtree_walk_fn each, void* context) {
  if (cursor == nullptr || each == nullptr) return invalid("bbtree_cursor_walk: null argument");
  return guarded([&] {
    bool stopped = false;
    cursor->position.for_each_until(
        cursor->index->reader.end(), [&](const bbtree::entry_ref& entry) {
          stopped = each(bytes_of(entry.key()), bytes_of(entry.value()), context) != 0;
          return !stopped;
        });
    return stopped ? BBTREE_OK : BBTREE_END;
  });
}

void bbtree_u64_key(uint64_t key, unsigned char out[8]) {
  bbtree::format::encode_u64_key(key, out);
}
void bbtree_i64_key(int64_t key, unsigned char out[8]) { bbtree::format::encode_i64_key(key, out); }
uint64_t bbtree_decode_u64_key(const void* key) {
  return bbtree::format::decode_u64_key(static_cast<const unsigned char*>(key));
}
int64_t bbtree_decode_i64_key(const void* key) {
  return bbtree::format::decode_i64_key(static_cast<const unsigned char*>(key));
}
uint64_t bbtree_u64_value(const void* value) {
  return bbtree::format::load_le<std::uint64_t>(value);
}

}  // extern "C"
