// A failed build leaves the destination as it was (or absent) and no
// temporary file behind: bad input mid-stream, an application exception,
// a write error, a killed build, and a stale temporary from an earlier one.
#include "test_support.h"

#include "../lib/src/file_io.h"

#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

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

TEST_CASE("a write error (file size limit) fails cleanly", "[build][failure]") {
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
      builder writer(path, u64_options());
      for (std::uint64_t i = 0; i < 1000000; ++i) writer.add(u64_key(i), u64_value(i));
      writer.finish();
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
  // An unwritable place is an I/O error naming it.
  try {
    builder writer(scratch / "index.bbt" / "below-a-file.bbt", u64_options());
    FAIL("the builder accepted a path below a regular file");
  } catch (const error& failure) {
    REQUIRE(failure.code() == errc::io_error);
  }
  REQUIRE(scratch.names() == std::vector<std::string>{"index.bbt"});
}
