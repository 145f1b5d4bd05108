// Helpers shared by the tests: scratch directories, key generators and the
// std::map model that every query is checked against.
#pragma once

#include <bbtree/builder.h>
#include <bbtree/key_codec.h>
#include <bbtree/reader.h>
#include <bbtree/shards.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace bbtree::test {

// A directory removed with everything in it when the test ends.
class scratch_directory {
 public:
  scratch_directory();
  ~scratch_directory();
  scratch_directory(const scratch_directory&) = delete;
  scratch_directory& operator=(const scratch_directory&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  // Names in the directory, for checks that nothing was left behind.
  std::vector<std::string> names() const;

 private:
  std::filesystem::path path_;
};

using model = std::map<std::string, std::string>;

// The kinds of one test file.
struct shape {
  key_kind keys = key_kind::bytes;
  std::uint32_t key_size = 0;
  value_kind values = value_kind::bytes;
  std::uint32_t value_size = 0;
  std::uint32_t page_size = format::default_page_size;
  bool directory = true;  // build_options::directory
  std::string describe() const;
};

build_options options_for(const shape& kinds);

// Random encoded keys and values of a shape.
std::string random_key(const shape& kinds, std::mt19937_64& random);
std::string random_value(const shape& kinds, std::mt19937_64& random);

// Builds `path` from the model through the streaming builder.
build_summary build_file(const std::filesystem::path& path, const shape& kinds,
                         const model& entries);

std::string read_file(const std::filesystem::path& path);
void write_file(const std::filesystem::path& path, const std::string& bytes);
// Waits until a forked child writes one byte on `ready_fd` (and closes it),
// then kills the child with SIGKILL and reaps it, requiring that it died of
// the signal.
void kill_when_ready(int child, int ready_fd);

// Checks every query of `index` against `entries`: lookups of present and
// absent probes, bounds, ranges, prefixes, ranks, counts, at(), scans in
// both directions and get_many.  Uses Catch2 assertions.
void check_against_model(const reader& index, const model& entries,
                         const std::vector<std::string>& probes);
// The same for a shard set, or a single file opened as one.
void check_against_model(const sharded_reader& index, const model& entries,
                         const std::vector<std::string>& probes);

// Probes worth asking: every key, its neighbours (one byte more, one less,
// truncated), and random ones.
std::vector<std::string> probes_for(const shape& kinds, const model& entries,
                                    std::mt19937_64& random, std::size_t random_count);

}  // namespace bbtree::test
