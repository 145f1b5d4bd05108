#!/usr/bin/env bash
# The whole test suite, as CI runs it: a check that the sources follow
# .clang-format, the normal build and ctest (which
# also replays every fuzz corpus and regression), the suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer, the concurrency tests under
# ThreadSanitizer (from a build of only the test files that hold them:
# BBTREE_TEST_TAGS in tests/CMakeLists.txt), and a short run of every
# libFuzzer target.
#   FUZZ_SECONDS   seconds per fuzz target (default 30; 0 skips fuzzing)
#   FUZZ_JOBS      fuzz targets run at once (default: one a core)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh build test
jobs=$(nproc)

# Each phase's start, with the minutes and seconds since this script
# began: CI's budget is 30 minutes, and the log shows where they go.
phase() { printf '== [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$1"; }

phase "formatting (.clang-format)"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z '*.cc' '*.h' | xargs -0 clang-format --dry-run --Werror
else
  find format lib tools tests fuzz examples bench \( -name '*.cc' -o -name '*.h' \) -print0 |
    xargs -0 clang-format --dry-run --Werror
fi

# The trees keep line tables only (-g1, -gline-tables-only), all that
# sanitizer reports and backtraces use: with full debug information the g++
# tree took 191 s to build on 2 cores, against 149 s.
phase "build and test (g++, RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

phase "test under AddressSanitizer + UndefinedBehaviorSanitizer (clang)"
clang_flags=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG"
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG")
CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${clang_flags[@]}" "-DBBTREE_SANITIZE=address;undefined" >/dev/null
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j "$jobs"

phase "concurrency tests under ThreadSanitizer (clang)"
concurrency_tags="[concurrency],[background_copy]"
CC=clang CXX=clang++ cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${clang_flags[@]}" -DBBTREE_SANITIZE=thread -DBBTREE_BUILD_TOOLS=OFF \
  "-DBBTREE_TEST_TAGS=$concurrency_tags" >/dev/null
cmake --build build-tsan -j "$jobs" --target bbtree_tests
build-tsan/tests/bbtree_tests "$concurrency_tags"

if [ "${FUZZ_SECONDS:-30}" != 0 ] && [ -x fuzz/ci-fuzz.sh ]; then
  phase "fuzz targets, ${FUZZ_SECONDS:-30} s each"
  # One target a core: the targets run alone, each in one process.
  FUZZ_SECONDS="${FUZZ_SECONDS:-30}" FUZZ_JOBS="${FUZZ_JOBS:-$jobs}" fuzz/ci-fuzz.sh
fi
phase "all tests passed"
