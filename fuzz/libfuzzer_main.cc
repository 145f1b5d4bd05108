// The libFuzzer entry points of one target, chosen at compile time by
// BBTREE_FUZZ_TARGET (fuzz/CMakeLists.txt builds this file once per
// target, as fuzz_<target>, with -fsanitize=fuzzer).  The bodies live in
// the target_*.cc files, which the normal build links into fuzz_replay.
#include "fuzz_support.h"

#include <cstddef>
#include <cstdint>

#ifndef BBTREE_FUZZ_TARGET
#error "BBTREE_FUZZ_TARGET names the target's body, e.g. open_query"
#endif

#define BBTREE_FUZZ_CONCAT(a, b) a##b
#define BBTREE_FUZZ_BODY(name) BBTREE_FUZZ_CONCAT(run_, name)

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return bbtree::fuzz::BBTREE_FUZZ_BODY(BBTREE_FUZZ_TARGET)({data, size});
}

// The targets whose inputs have checksums that byte mutations would break:
// mutations that know the layout, then fixed checksums (fuzz_mutated_file),
// or an end line kept right (fuzz_manifest).
#if defined(BBTREE_FUZZ_FILE_MUTATOR)
#define BBTREE_FUZZ_MUTATE mutate_file
#define BBTREE_FUZZ_CROSS_OVER cross_over_files
#elif defined(BBTREE_FUZZ_MANIFEST_MUTATOR)
#define BBTREE_FUZZ_MUTATE mutate_manifest
#define BBTREE_FUZZ_CROSS_OVER cross_over_manifests
#endif

#ifdef BBTREE_FUZZ_MUTATE
extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  return bbtree::fuzz::BBTREE_FUZZ_MUTATE(data, size, max_size, seed, LLVMFuzzerMutate);
}

extern "C" std::size_t LLVMFuzzerCustomCrossOver(const std::uint8_t* data1, std::size_t size1,
                                                 const std::uint8_t* data2, std::size_t size2,
                                                 std::uint8_t* out, std::size_t max_out_size,
                                                 unsigned int seed) {
  return bbtree::fuzz::BBTREE_FUZZ_CROSS_OVER(data1, size1, data2, size2, out, max_out_size, seed);
}
#endif
