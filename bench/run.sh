#!/usr/bin/env bash
# Builds bbtree-bench in Release and runs it, writing bench/out/results.csv
# and bench/out/results.md, and the issue #5 targets checked against them
# in bench/out/targets.md (bench/targets.py).
#
#   bench/run.sh [--quick] [other bbtree-bench flags ...]
#
# Build: Release with -O2 (CMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG"), the
# level Debian builds the peers' libraries with, and no -march=native: the
# peers come as generic x86-64 binaries, so bbtree is compiled for the same
# target.  Override with BBTREE_BENCH_CXX_FLAGS (e.g. "-O3 -march=native
# -DNDEBUG") and record the flags with the results.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
build="${BBTREE_BENCH_BUILD_DIR:-$root/build-bench}"
out="$here/out"
flags="${BBTREE_BENCH_CXX_FLAGS:--O2 -DNDEBUG}"
jobs="${BBTREE_BENCH_JOBS:-2}"

# A fresh machine has neither the library's packages nor the peers'.
"$root/scripts/install-deps.sh" bench

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="$flags" \
  -DBBTREE_BUILD_BENCH=ON -DBBTREE_BUILD_TESTS=OFF -DBBTREE_BUILD_TOOLS=OFF >/dev/null
cmake --build "$build" --target bbtree-bench -j "$jobs"

mkdir -p "$out"
work="${BBTREE_BENCH_WORKDIR:-$out/work}"
echo "compiler flags: $flags" >&2
"$build/bench/bbtree-bench" --workdir "$work" --note "CXXFLAGS_RELEASE=$flags" \
  --csv "$out/results.csv" --markdown "$out/results.md" "$@"
rmdir "$work" 2>/dev/null || true
python3 "$here/targets.py" "$out/results.csv" > "$out/targets.md"
echo "wrote $out/results.csv, $out/results.md and $out/targets.md" >&2
