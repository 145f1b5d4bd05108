#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time (fuzz/README.md).
#
#   fuzz/run-target.sh TARGET [SECONDS] [LIBFUZZER FLAGS...]
#
# TARGET is open_query, verify, mutated_file, build_differential,
# text_parsers or manifest; SECONDS defaults to 60.  The fuzzer reads the
# generated seeds (<build>/fuzz/corpus/TARGET) and the committed regressions
# (fuzz/regressions/TARGET), keeps what it finds in <build>/fuzz/work/TARGET
# and writes crashes to <build>/fuzz/artifacts/TARGET/.  Exits non-zero on a
# crash, a timeout or running out of memory.
#   BBTREE_FUZZ_BUILD   the fuzz build directory (default build-fuzz)
#   FUZZ_TIMEOUT        seconds one input may take (default 25)
#   FUZZ_RSS_MB         memory limit (default 4096)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BBTREE_FUZZ_BUILD:-$root/build-fuzz}
if [ $# -lt 1 ]; then
  echo "usage: fuzz/run-target.sh TARGET [SECONDS] [LIBFUZZER FLAGS...]" >&2
  exit 2
fi
target=$1
seconds=${2:-60}
shift $(($# >= 2 ? 2 : 1))

binary=$build/fuzz/fuzz_$target
if [ ! -x "$binary" ]; then
  echo "run-target.sh: $binary is missing: cmake --preset fuzz && cmake --build --preset fuzz" >&2
  exit 2
fi
work=$build/fuzz/work/$target
artifacts=$build/fuzz/artifacts/$target
mkdir -p "$work" "$artifacts"

flags=(-max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-25}" -rss_limit_mb="${FUZZ_RSS_MB:-4096}"
       -artifact_prefix="$artifacts/" -print_final_stats=1)
case "$target" in
  text_parsers) flags+=(-dict="$root/fuzz/dicts/text_parsers.dict" -max_len=16384) ;;
  open_query | verify | mutated_file) flags+=(-dict="$root/fuzz/dicts/files.dict") ;;
  build_differential) flags+=(-max_len=8192) ;;
  manifest) flags+=(-dict="$root/fuzz/dicts/manifest.dict" -max_len=4096) ;;
esac

ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  exec "$binary" "${flags[@]}" "$@" "$work" "$build/fuzz/corpus/$target" "$root/fuzz/regressions/$target"
