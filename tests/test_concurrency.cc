// Readers in threads and in processes query one path while a writer
// replaces it, again and again, with atomically published builds.  Every
// answer must come wholly from one generation of the file; a reader that
// reopens sees a generation no older than the one before.  Run under
// ThreadSanitizer in CI.
#include "test_support.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <thread>

using namespace bbtree;
using namespace bbtree::test;

namespace {

constexpr std::uint64_t keys_per_generation = 3000;
constexpr std::uint64_t generation_stride = 1'000'000;

// Generation g maps key k to g * stride + k, so a value names its file.
void build_generation(const std::filesystem::path& path, std::uint64_t generation) {
  build_options options;
  options.keys = key_kind::u64;
  options.values = value_kind::u64;
  options.page_size = 512;
  options.overwrite = true;
  options.sync = false;
  builder writer(path, options);
  for (std::uint64_t key = 0; key < keys_per_generation; ++key) {
    writer.add(u64_key(key), u64_value(generation * generation_stride + key));
  }
  writer.finish();
}

// Opens the path, checks a sample of lookups and a scan against one
// generation, and returns it.  Returns 0 and sets `failure` on a mixed or
// wrong answer.
std::uint64_t check_one_open(const std::filesystem::path& path, std::uint64_t seed,
                             std::string& failure) {
  const reader index = reader::open(path);
  std::uint64_t generation = 0;
  std::mt19937_64 random(seed);
  auto check_value = [&](std::uint64_t key, std::string_view value) {
    const std::uint64_t decoded = decode_u64_value(value);
    if (decoded % generation_stride != key) failure = "value of another key";
    if (generation == 0) generation = decoded / generation_stride;
    if (decoded / generation_stride != generation)
      failure = "answers from two generations in one open file";
  };
  for (int i = 0; i < 200; ++i) {
    const std::uint64_t key = random() % keys_per_generation;
    const auto value = index.get(u64_key(key));
    if (!value) {
      failure = "a key is missing";
      return 0;
    }
    check_value(key, *value);
  }
  std::uint64_t expected_key = random() % keys_per_generation;
  const std::uint64_t start = expected_key;
  for (cursor position = index.lower_bound(u64_key(start));
       !position.is_end() && expected_key < start + 300; ++position, ++expected_key) {
    if (decode_u64_key(position.key()) != expected_key) failure = "scan skipped a key";
    check_value(expected_key, position.value());
  }
  return failure.empty() ? generation : 0;
}

}  // namespace

TEST_CASE("readers see whole generations while the file is replaced", "[concurrency]") {
  scratch_directory scratch;
  const auto path = scratch / "live.bbt";
  build_generation(path, 1);
  const auto duration = std::chrono::milliseconds(1500);

  // Processes first, before any thread exists in this process.
  std::vector<pid_t> children;
  for (int process = 0; process < 2; ++process) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      std::string failure;
      std::uint64_t last_generation = 0;
      const auto deadline = std::chrono::steady_clock::now() + duration;
      int opens = 0;
      while (std::chrono::steady_clock::now() < deadline) {
        const std::uint64_t generation =
            check_one_open(path, static_cast<std::uint64_t>(opens++), failure);
        if (!failure.empty() || generation < last_generation) ::_exit(1);
        last_generation = generation;
      }
      ::_exit(opens > 0 ? 0 : 2);
    }
    children.push_back(child);
  }

  // Opened before the writer starts, so that it holds generation 1.
  const reader shared = reader::open(path);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> latest_generation{1};
  std::thread writer([&] {
    for (std::uint64_t generation = 2; !stop.load(); ++generation) {
      build_generation(path, generation);
      latest_generation.store(generation);
    }
  });

  // The shared reader, used by every other thread, alongside threads that
  // reopen the path.
  std::vector<std::thread> readers;
  std::vector<std::string> failures(4);
  std::vector<std::uint64_t> opens(4, 0);
  for (std::size_t thread = 0; thread < 4; ++thread) {
    readers.emplace_back([&, thread] {
      std::mt19937_64 random(thread);
      std::uint64_t last_generation = 0;
      const auto deadline = std::chrono::steady_clock::now() + duration;
      while (std::chrono::steady_clock::now() < deadline && failures[thread].empty()) {
        if (thread % 2 == 0) {
          const std::uint64_t generation = check_one_open(path, random(), failures[thread]);
          if (generation < last_generation)
            failures[thread] = "a reopened file went back a generation";
          last_generation = generation;
          ++opens[thread];
        } else {
          const std::uint64_t key = random() % keys_per_generation;
          const auto value = shared.get(u64_key(key));
          if (!value || decode_u64_value(*value) != generation_stride + key) {
            failures[thread] = "the shared reader's answer changed";
          }
        }
      }
    });
  }
  for (auto& thread : readers) thread.join();
  stop.store(true);
  writer.join();

  for (const auto& failure : failures) {
    CAPTURE(failure);
    REQUIRE(failure.empty());
  }
  REQUIRE(opens[0] > 0);
  REQUIRE(latest_generation.load() > 2);
  // A reader that opens now sees the newest generation.
  std::string failure;
  REQUIRE(check_one_open(path, 99, failure) == latest_generation.load());
  for (pid_t child : children) {
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
  }
}
