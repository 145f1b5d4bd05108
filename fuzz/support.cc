// The target registry, failure reporting and the scratch directory.
#include "fuzz_support.h"

#include <fmt/format.h>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>

namespace bbtree::fuzz {

namespace fs = std::filesystem;

std::span<const target> all_targets() {
  static const target targets[] = {
      {"open_query", run_open_query},     {"verify", run_verify},
      {"mutated_file", run_mutated_file}, {"build_differential", run_build_differential},
      {"text_parsers", run_text_parsers}, {"manifest", run_manifest},
  };
  return targets;
}

const target* find_target(std::string_view name) {
  for (const target& candidate : all_targets()) {
    if (name == candidate.name) return &candidate;
  }
  return nullptr;
}

void fail(std::string_view what) {
  std::fprintf(stderr, "\n==bbtree-fuzz== FINDING: %.*s\n", static_cast<int>(what.size()),
               what.data());
  std::fflush(stderr);
  std::abort();
}

void fail_check(const char* condition, const char* file, int line, std::string_view what) {
  fail(fmt::format("{}:{}: check failed: {}: {}", file, line, condition, what));
}

namespace {
volatile unsigned char touched;
}  // namespace

void touch(std::string_view bytes) {
  unsigned char folded = 0;
  for (const char byte : bytes)
    folded = static_cast<unsigned char>(folded + static_cast<unsigned char>(byte));
  touched = folded;
}

std::string hex(std::string_view bytes, std::size_t limit) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < limit; ++i) {
    out += fmt::format("{:02x}", static_cast<unsigned char>(bytes[i]));
  }
  if (bytes.size() > limit) out += fmt::format("...({} bytes)", bytes.size());
  if (bytes.empty()) out = "(empty)";
  return out;
}

namespace {

fs::path make_scratch_directory() {
  fs::path base;
  if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir != nullptr && *tmpdir != '\0') {
    base = tmpdir;
  } else if (::access("/dev/shm", W_OK) == 0) {
    base = "/dev/shm";  // memory: the differential target writes a file per input
  } else {
    base = "/tmp";
  }
  std::string pattern = (base / "bbtree-fuzz-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    fail("cannot create a scratch directory under " + base.string());
  return pattern;
}

fs::path* scratch = nullptr;

void remove_scratch() {
  if (scratch == nullptr) return;
  std::error_code ignored;
  fs::remove_all(*scratch, ignored);
}

}  // namespace

const fs::path& scratch_directory() {
  if (scratch == nullptr) {
    scratch = new fs::path(make_scratch_directory());
    std::atexit(remove_scratch);
  }
  return *scratch;
}

}  // namespace bbtree::fuzz
