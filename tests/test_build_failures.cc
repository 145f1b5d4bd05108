// A failed build leaves the destination as it was (or absent) and no
// temporary file behind: bad input mid-stream, an application exception,
// a write error, a killed build, and a stale temporary from an earlier one.
// Options and entries that a file cannot hold are refused by every writer
// alike, naming the field or the entry.
#include "test_support.h"
#include "verify_test_support.h"

#include <bbtree/external_sort.h>
#include <bbtree/shards.h>

#include "../lib/src/file_io.h"

#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#include <functional>

using namespace bbtree;
using namespace bbtree::test;

namespace {

build_options u64_options() {
  build_options options;
  options.keys = key_kind::u64;
  options.values = value_kind::u64;
  options.sync = false;
  options.overwrite = true;
  return options;
}

// Requires that `call` throws error(code) with exactly `message`.
template <typename Call>
void require_error(Call&& call, errc code, const std::string& message) {
  try {
    call();
    FAIL("nothing was thrown; expected: " << message);
  } catch (const error& failure) {
    REQUIRE(failure.code() == code);
    REQUIRE(std::string(failure.what()) == message);
  }
}

// Writes a small valid index at `path` and returns its bytes.
std::string make_previous(const std::filesystem::path& path) {
  builder writer(path, u64_options());
  for (std::uint64_t i = 0; i < 100; ++i) writer.add(u64_key(i), u64_value(i));
  writer.finish();
  return read_file(path);
}

}  // namespace

TEST_CASE("bad input in the middle of the stream", "[build][failure]") {
  scratch_directory scratch;
  const auto path = scratch / "index.bbt";
  const std::string previous = make_previous(path);
  {
    builder writer(path, u64_options());
    for (std::uint64_t i = 0; i < 50000; ++i) writer.add(u64_key(i * 2), u64_value(i));
    try {
      writer.add(u64_key(10), u64_value(0));
      FAIL("an out-of-order key was accepted");
    } catch (const error& failure) {
      REQUIRE(failure.code() == errc::out_of_order);
      REQUIRE(std::string(failure.what()).find("entry 50001") != std::string::npos);
    }
    // A key that the open leaf would take as it is (same prefix, room left) is
    // refused too: the build was abandoned.
    try {
      writer.add(u64_key(99999), u64_value(0));
      FAIL("an entry was accepted after a failed add()");
    } catch (const error& failure) {
      REQUIRE(failure.code() == errc::invalid_argument);
    }
    REQUIRE_THROWS_AS(writer.finish(), error);
  }
  REQUIRE(read_file(path) == previous);
  REQUIRE(scratch.names() == std::vector<std::string>{"index.bbt"});
}

TEST_CASE("a build that has ended takes no more entries", "[build][failure]") {
  // After finish() or abort(), as after a failed add(): add() and finish()
  // are refused at once, on the inlined path of fixed-size entries (u64) as
  // on the general one (bytes), and nothing is written.
  scratch_directory scratch;
  build_options bytes_options;
  bytes_options.sync = false;
  bytes_options.overwrite = true;
  const std::string refused_add =
      "add() after finish(), abort() or a failed add(): the build has ended";
  const std::string refused_finish =
      "finish() after finish(), abort() or a failed add(): the build has ended";
  for (const build_options& options : {u64_options(), bytes_options}) {
    const auto key = [&](std::uint64_t i) {
      return options.keys == key_kind::u64 ? std::string(u64_key(i).view())
                                           : fmt::format("k{:08}", i);
    };
    const std::string value(u64_value(7).view());
    for (const bool finished : {true, false}) {
      CAPTURE(options.keys == key_kind::u64, finished);
      const auto path = scratch / "index.bbt";
      std::filesystem::remove(path);
      builder writer(path, options);
      for (std::uint64_t i = 0; i < 10; ++i) writer.add(key(i), value);
      if (finished) {
        writer.finish();
      } else {
        writer.abort();
      }
      const std::string published = finished ? read_file(path) : std::string();
      // Each refused, not taken into a leaf bound for a closed file.
      for (std::uint64_t i = 10; i < 15; ++i) {
        require_error([&] { writer.add(key(i), value); }, errc::invalid_argument, refused_add);
      }
      require_error([&] { writer.finish(); }, errc::invalid_argument, refused_finish);
      REQUIRE(writer.entries_added() == 10);
      if (finished) {
        REQUIRE(read_file(path) == published);
        REQUIRE(reader::open(path).size() == 10);
        REQUIRE(scratch.names() == std::vector<std::string>{"index.bbt"});
      } else {
        REQUIRE(scratch.names().empty());
      }
    }
  }
}

TEST_CASE("duplicates follow the policy", "[build]") {
  scratch_directory scratch;
  for (auto policy :
       {duplicate_policy::error, duplicate_policy::keep_first, duplicate_policy::keep_last}) {
    build_options options = u64_options();
    options.duplicates = policy;
    builder writer(scratch / "dups.bbt", options);
    writer.add(u64_key(1), u64_value(10));
    writer.add(u64_key(2), u64_value(20));
    if (policy == duplicate_policy::error) {
      try {
        writer.add(u64_key(2), u64_value(21));
        FAIL("a duplicate was accepted");
      } catch (const error& failure) {
        REQUIRE(failure.code() == errc::duplicate_key);
      }
      continue;
    }
    writer.add(u64_key(2), u64_value(21));
    writer.add(u64_key(2), u64_value(22));
    writer.add(u64_key(3), u64_value(30));
    // Entries kept so far, the one keep_last still holds back included.
    REQUIRE(writer.entries_added() == 3);
    REQUIRE(writer.destination() == scratch / "dups.bbt");
    writer.finish();
    const reader index = reader::open(scratch / "dups.bbt");
    REQUIRE(index.size() == 3);
    REQUIRE(decode_u64_value(*index.get(u64_key(2))) ==
            (policy == duplicate_policy::keep_first ? 20u : 22u));
  }
}

TEST_CASE("an exception from the application abandons the build", "[build][failure]") {
  scratch_directory scratch;
  const auto path = scratch / "index.bbt";
  const std::string previous = make_previous(path);
  auto produce = [&](std::uint64_t i) -> std::uint64_t {
    if (i == 30000) throw std::runtime_error("the application's data source failed");
    return i;
  };
  try {
    builder writer(path, u64_options());
    for (std::uint64_t i = 0;; ++i) writer.add(u64_key(produce(i)), u64_value(i));
  } catch (const std::runtime_error&) {
  }
  REQUIRE(read_file(path) == previous);
  REQUIRE(scratch.names() == std::vector<std::string>{"index.bbt"});
  // A new destination stays absent.
  try {
    builder writer(scratch / "new.bbt", u64_options());
    for (std::uint64_t i = 0;; ++i) writer.add(u64_key(produce(i)), u64_value(i));
  } catch (const std::runtime_error&) {
  }
  REQUIRE(scratch.names() == std::vector<std::string>{"index.bbt"});
}

namespace {

// Runs `build` into `path` in a child whose files may not pass 1 MiB, and
// checks that it reports an I/O error naming the file, that the previous
// file is as it was and that no temporary is left.
void check_build_past_file_size_limit(
    const std::function<void(const std::filesystem::path&)>& build) {
  scratch_directory scratch;
  const auto path = scratch / "index.bbt";
  const std::string previous = make_previous(path);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // EFBIG instead of a signal once the file passes 1 MiB.
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{1 << 20, 1 << 20};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    int status = 10;
    try {
      build(path);
    } catch (const error& failure) {
      status = failure.code() == errc::io_error &&
                       std::string(failure.what()).find(path.string()) != std::string::npos
                   ? 0
                   : 11;
    }
    ::_exit(status);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);  // the build reported an I/O error naming the file
  REQUIRE(read_file(path) == previous);
  REQUIRE(scratch.names() == std::vector<std::string>{"index.bbt"});
}

}  // namespace

TEST_CASE("a write error (file size limit) fails cleanly", "[build][failure]") {
  SECTION("in the leaves") {
    check_build_past_file_size_limit([](const std::filesystem::path& path) {
      builder writer(path, u64_options());
      for (std::uint64_t i = 0; i < 1000000; ++i) writer.add(u64_key(i), u64_value(i));
      writer.finish();
    });
  }
  SECTION("in the blob region, after the pages") {
    // The blob scratch file takes 990 KiB and the pages over 60 KiB, each
    // under the limit; the index, both together, passes it.
    check_build_past_file_size_limit([](const std::filesystem::path& path) {
      build_options options = options_for({key_kind::u64, 8, value_kind::bytes, 0});
      options.overwrite = true;
      builder writer(path, options);
      for (std::uint64_t i = 0; i < 3000; ++i) {
        writer.add(u64_key(i), i % 500 == 0 ? std::string(165 << 10, 'v') : std::string(20, 'v'));
      }
      writer.finish();
    });
  }
}

TEST_CASE("a killed build leaves nothing, and stale temporaries are removed", "[build][failure]") {
  scratch_directory scratch;
  const auto path = scratch / "index.bbt";
  const std::string previous = make_previous(path);
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(ready[0]);
    builder writer(path, u64_options());
    for (std::uint64_t i = 0;; ++i) {
      writer.add(u64_key(i), u64_value(i));
      if (i == 200000) {
        const char byte = 'r';
        (void)!::write(ready[1], &byte, 1);
      }
    }
  }
  ::close(ready[1]);
  kill_when_ready(child, ready[0]);
  REQUIRE(read_file(path) == previous);
  REQUIRE(scratch.names() == std::vector<std::string>{"index.bbt"});

  // A temporary name left by a build whose process is gone (where the file
  // system has no unnamed files, or a kill between link and rename) is
  // removed by the next build of the same destination.
  const std::string stale =
      detail::temporary_name_prefix(path) + std::to_string(child) + "-deadbeef";
  write_file(scratch / stale, "partial");
  make_previous(path);
  REQUIRE(scratch.names() == std::vector<std::string>{"index.bbt"});
}

TEST_CASE("an existing destination is kept unless overwriting is asked for", "[build]") {
  scratch_directory scratch;
  const auto path = scratch / "index.bbt";
  const std::string previous = make_previous(path);
  build_options options = u64_options();
  options.overwrite = false;
  try {
    builder writer(path, options);
    FAIL("the builder accepted an existing destination");
  } catch (const error& failure) {
    REQUIRE(failure.code() == errc::already_exists);
  }
  REQUIRE(read_file(path) == previous);
  // A path that ends in a slash names a directory, for a single file and a
  // shard set's manifest alike.
  for (const auto& make : std::vector<std::function<void(const std::filesystem::path&)>>{
           [](const std::filesystem::path& at) { builder writer(at, u64_options()); },
           [](const std::filesystem::path& at) { shard_set_builder writer(at, u64_options()); }}) {
    const auto directory = scratch.path() / "";
    require_error([&] { make(directory); }, errc::invalid_argument,
                  "output " + directory.string() + " names a directory, not a file");
  }
  // An unwritable place is an I/O error naming it.
  try {
    builder writer(scratch / "index.bbt" / "below-a-file.bbt", u64_options());
    FAIL("the builder accepted a path below a regular file");
  } catch (const error& failure) {
    REQUIRE(failure.code() == errc::io_error);
  }
  REQUIRE(scratch.names() == std::vector<std::string>{"index.bbt"});
}

namespace {

// An entry that a file of `kinds` cannot store, and what every writer says
// of it after the entry number.
struct unfit_entry {
  shape kinds;
  duplicate_policy duplicates = duplicate_policy::error;
  std::string key;
  std::string value;
  errc code;
  std::string message;
};

std::vector<unfit_entry> unfit_entries() {
  const std::string u64_value_bytes(u64_value(7).view());
  const shape u64_to_u64{key_kind::u64, 0, value_kind::u64, 0};
  const shape bytes_to_bytes{key_kind::bytes, 0, value_kind::bytes, 0};
  return {
      {u64_to_u64, duplicate_policy::error, "1234567", u64_value_bytes, errc::key_too_long,
       "key is 7 bytes; this file's keys are 8 bytes"},
      {u64_to_u64, duplicate_policy::error, std::string(u64_key(5).view()), "123456789",
       errc::value_too_long, "value is 9 bytes; this file's values are 8 bytes"},
      // keep_last holds an entry back, so its entries take the general path.
      {u64_to_u64, duplicate_policy::keep_last, "123456789", u64_value_bytes, errc::key_too_long,
       "key is 9 bytes; this file's keys are 8 bytes"},
      {{key_kind::u64, 0, value_kind::none, 0},
       duplicate_policy::error,
       std::string(u64_key(5).view()),
       "x",
       errc::value_too_long,
       "this file has no values"},
      {{key_kind::i64, 0, value_kind::none, 0},
       duplicate_policy::error,
       "",
       "",
       errc::key_too_long,
       "key is 0 bytes; this file's keys are 8 bytes"},
      {{key_kind::fixed, 16, value_kind::u64, 0},
       duplicate_policy::error,
       std::string(15, 'k'),
       u64_value_bytes,
       errc::key_too_long,
       "key is 15 bytes; this file's keys are 16 bytes"},
      {{key_kind::fixed, 20, value_kind::fixed, 12},
       duplicate_policy::error,
       std::string(20, 'k'),
       std::string(13, 'v'),
       errc::value_too_long,
       "value is 13 bytes; this file's values are 12 bytes"},
      {bytes_to_bytes, duplicate_policy::error, std::string(format::max_key_length + 1, 'k'), "v",
       errc::key_too_long, "key of 65537 bytes is over the limit of 65536"},
      {{key_kind::bytes, 0, value_kind::u64, 0},
       duplicate_policy::error,
       "key",
       "1234567",
       errc::value_too_long,
       "value is 7 bytes; this file's values are 8 bytes"},
  };
}

build_options options_of(const unfit_entry& entry) {
  build_options options = options_for(entry.kinds);
  options.duplicates = entry.duplicates;
  options.overwrite = true;
  return options;
}

// 1,000 distinct entries of the case's kinds: more than one leaf, so that
// the unfit entry comes to a builder with pages written.
model good_entries(const unfit_entry& entry) {
  model entries = random_model_of(entry.kinds, 1000, 17);
  REQUIRE(entries.size() == 1000);
  return entries;
}

// Requires that `add` throws the case's error for entry `position`.
template <typename Add>
void require_refused(const unfit_entry& entry, std::uint64_t position, Add&& add) {
  require_error([&] { add(entry.key, entry.value); }, entry.code,
                "entry " + std::to_string(position) + ": " + entry.message);
}

}  // namespace

TEST_CASE("an entry that the file's kinds cannot hold is refused by every writer alike",
          "[build][failure]") {
  for (const unfit_entry& entry : unfit_entries()) {
    DYNAMIC_SECTION(entry.kinds.describe() << ", " << entry.message) {
      scratch_directory scratch;
      const auto path = scratch / "index.bbt";
      const std::string previous = make_previous(path);
      const model entries = good_entries(entry);

      // The streaming builder abandons the build: the destination keeps
      // its previous bytes.
      {
        builder writer(path, options_of(entry));
        for (const auto& [key, value] : entries) writer.add(key, value);
        require_refused(
            entry, entries.size() + 1,
            [&](const std::string& key, const std::string& value) { writer.add(key, value); });
        const auto& [last_key, last_value] = *entries.rbegin();
        REQUIRE_THROWS_AS(writer.add(last_key + "\xff", last_value), error);
        REQUIRE_THROWS_AS(writer.finish(), error);
      }
      REQUIRE(read_file(path) == previous);
      REQUIRE(scratch.names() == std::vector<std::string>{"index.bbt"});

      // So does a shard set's builder, numbering entries across its shards,
      // and the set it would have replaced stays as it was.
      scratch_directory set_directory;
      const auto manifest = set_directory / "set.bbts";
      const auto build_set = [&](bool with_unfit_entry) {
        shard_set_builder writer(manifest, options_of(entry), 4 * 1024);
        for (const auto& [key, value] : entries) writer.add(key, value);
        if (with_unfit_entry) {
          require_refused(
              entry, entries.size() + 1,
              [&](const std::string& key, const std::string& value) { writer.add(key, value); });
        }
        return writer.finish();
      };
      REQUIRE(build_set(false).shards >= 2);  // so the entry's number is not its shard's
      const std::vector<std::string> set_files = set_directory.names();
      REQUIRE_THROWS_AS(build_set(true), error);
      REQUIRE(set_directory.names() == set_files);
      REQUIRE(sharded_reader::open(manifest).size() == entries.size());

      // The external sort abandons it too, numbering entries as they came.
      {
        sort_options sort;
        sort.memory = 64 * 1024;
        external_sorting_builder writer(path, options_of(entry), sort);
        std::uint64_t added = 0;
        for (auto it = entries.rbegin(); added < 500; ++it, ++added) {
          writer.add(it->first, it->second);
        }
        require_refused(entry, added + 1, [&](const std::string& key, const std::string& value) {
          writer.add(key, value);
        });
        REQUIRE_THROWS_AS(writer.add(entries.begin()->first, entries.begin()->second), error);
        REQUIRE_THROWS_AS(writer.finish(), error);
      }
      REQUIRE(read_file(path) == previous);
      REQUIRE(scratch.names() == std::vector<std::string>{"index.bbt"});

      // The in-memory sorting builder refuses the entry at once, and the
      // build goes on without it.
      sorting_builder writer(path, options_of(entry));
      std::uint64_t added = 0;
      for (auto it = entries.rbegin(); added < 500; ++it, ++added)
        writer.add(it->first, it->second);
      require_refused(entry, added + 1, [&](const std::string& key, const std::string& value) {
        writer.add(key, value);
      });
      for (auto it = std::next(entries.rbegin(), 500); it != entries.rend(); ++it) {
        writer.add(it->first, it->second);
      }
      REQUIRE(writer.entries_added() == entries.size());
      REQUIRE(writer.finish().entries == entries.size());
      const reader index = reader::open(path);
      std::mt19937_64 random(5);
      check_against_model(index, entries, probes_for(entry.kinds, entries, random, 100));
    }
  }
}

TEST_CASE("a value over the limit is refused by every writer without being read",
          "[build][failure]") {
  // 4 GiB and a byte of address space that is never touched: a writer that
  // read the value before checking its length would fault on it.
  const std::size_t length = std::size_t{format::max_value_length} + 1;
  void* const unreadable =
      ::mmap(nullptr, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  REQUIRE(unreadable != MAP_FAILED);
  const std::string_view value(static_cast<const char*>(unreadable), length);
  const std::string message = "entry 1: value of 4294967296 bytes is over the limit of 4294967295";
  scratch_directory scratch;
  build_options options = u64_options();
  options.values = value_kind::bytes;
  const auto require_refused = [&](auto& writer) {
    require_error([&] { writer.add(u64_key(1), value); }, errc::value_too_long, message);
  };
  {
    builder writer(scratch / "index.bbt", options);
    require_refused(writer);
  }
  {
    sorting_builder writer(scratch / "index.bbt", options);
    require_refused(writer);
  }
  {
    external_sorting_builder writer(scratch / "index.bbt", options);
    require_refused(writer);
  }
  {
    shard_set_builder writer(scratch / "set.bbts", options);
    require_refused(writer);
  }
  ::munmap(unreadable, length);
  REQUIRE(scratch.names().empty());
}

TEST_CASE("options that no file can have are refused before anything is written",
          "[build][failure]") {
  struct bad_options {
    const char* what;
    void (*change)(build_options&);
    std::string message;
  };
  const std::vector<bad_options> cases = {
      {"key kind", [](build_options& o) { o.keys = static_cast<key_kind>(9); }, "invalid key kind"},
      {"value kind", [](build_options& o) { o.values = static_cast<value_kind>(9); },
       "invalid value kind"},
      {"fixed key size 0",
       [](build_options& o) {
         o.keys = key_kind::fixed;
         o.key_size = 0;
       },
       "fixed key size 0 is outside 1..4096"},
      {"fixed value size 4097",
       [](build_options& o) {
         o.values = value_kind::fixed;
         o.value_size = 4097;
       },
       "fixed value size 4097 is outside 1..4096"},
      {"page size", [](build_options& o) { o.page_size = 3000; },
       "page size 3000 is not a power of two in 512..65536"},
      {"page too small for fixed entries",
       [](build_options& o) {
         o.keys = key_kind::fixed;
         o.key_size = 300;
         o.page_size = 512;
       },
       "page size 512 is too small for 300-byte keys and 8-byte values"},
      {"metadata key twice",
       [](build_options& o) {
         o.metadata = {{"source", "a"}, {"owner", "b"}, {"source", "c"}};
       },
       "metadata key \"source\" is given twice"},
  };
  scratch_directory scratch;
  const auto path = scratch / "index.bbt";
  for (const bad_options& bad : cases) {
    DYNAMIC_SECTION(bad.what) {
      build_options options = u64_options();
      bad.change(options);
      const auto require_refused = [&](auto&& make) {
        require_error(make, errc::invalid_argument, bad.message);
      };
      require_refused([&] { validate(options); });
      require_refused([&] { builder writer(path, options); });
      require_refused([&] { sorting_builder writer(path, options); });
      require_refused([&] { external_sorting_builder writer(path, options); });
      REQUIRE(scratch.names().empty());
    }
  }
}
