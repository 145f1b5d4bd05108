#!/usr/bin/env bash
# Builds bbtree-bench in Release and runs it, writing bench/out/results.csv
# and bench/out/results.md, and the issue #5 targets checked against them
# in bench/out/targets.md (bench/targets.py).
#
#   bench/run.sh [--quick] [other bbtree-bench flags ...]
#
# Build: bench/build-release.sh (Release, -O2, generic x86-64; the flags
# from BBTREE_BENCH_CXX_FLAGS).
set -euo pipefail

source "$(dirname "$0")/build-release.sh"
out="$here/out"
bench_build bench bbtree-bench

mkdir -p "$out"
work="${BBTREE_BENCH_WORKDIR:-$out/work}"
echo "compiler flags: $flags" >&2
"$build/bench/bbtree-bench" --workdir "$work" --note "CXXFLAGS_RELEASE=$flags" \
  --csv "$out/results.csv" --markdown "$out/results.md" "$@"
rmdir "$work" 2>/dev/null || true
python3 "$here/targets.py" "$out/results.csv" > "$out/targets.md"
echo "wrote $out/results.csv, $out/results.md and $out/targets.md" >&2
