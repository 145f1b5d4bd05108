#!/usr/bin/env bash
# The external sort at scale: COUNT random u64 -> u64 entries (distinct
# keys, in random order) built by bbtree-build under --memory MEMORY, with
# the time and peak RSS measured by /usr/bin/time -v (Debian package
# `time`).  The default, 100M entries (1.6 GB of keys and values; 2.4 GB as
# bin records) under 256M, needs about 6 GB free in the work directory: the
# input, the sorted runs and the index.  Not a ctest test.
#
#   bench/external-sort.sh [COUNT] [MEMORY] [FORMAT]   (default 100000000 256M bin)
#
# Environment: BUILD_DIR (default build-bench-sort: configured here at -O2),
# WORK_DIR (default a new directory in /tmp, removed afterwards; the runs go
# there too).
set -euo pipefail
export LC_ALL=C
COUNT=${1:-100000000}
MEMORY=${2:-256M}
FORMAT=${3:-bin}
SOURCE=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SOURCE/build-bench-sort}

if [[ ! -x $BUILD_DIR/tools/bbtree-build ]]; then
  cmake -S "$SOURCE" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DBBTREE_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$BUILD_DIR" --target bbtree-build bbtree-verify bbtree-query -j2 >/dev/null
"${CXX:-c++}" -O2 -std=c++20 -o "$BUILD_DIR/gen_entries" "$SOURCE/bench/gen_entries.cc"

WORK=${WORK_DIR:-$(mktemp -d /tmp/bbtree-external-XXXXXX)}
[[ -n ${WORK_DIR:-} ]] || trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
echo "free in $WORK before: $(df -h --output=avail . | tail -1)"
start=$(date +%s.%N)
"$BUILD_DIR/gen_entries" "$COUNT" "$FORMAT" random >data.$FORMAT
echo "generated $COUNT entries: $(stat -c %s data.$FORMAT) bytes of $FORMAT in" \
  "$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
load=$(cut -d' ' -f1-3 /proc/loadavg)

/usr/bin/time -v "$BUILD_DIR/tools/bbtree-build" --progress --format "$FORMAT" --key-type u64 --value-type u64 \
  --memory "$MEMORY" --tmp-dir "$WORK" -o index.bbt "data.$FORMAT" 2>build.log &
timer=$!
# The runs and the staged index are unnamed files: sample the disk space of
# the files the build holds open (all but its input), each second.
peak=0
while kill -0 $timer 2>/dev/null; do
  builder=$(pgrep -P $timer || true)
  if [[ -n $builder ]]; then
    used=0
    for fd in /proc/$builder/fd/*; do
      [[ $(readlink "$fd" 2>/dev/null) == *data.$FORMAT ]] && continue
      blocks=$(stat -L -c %b "$fd" 2>/dev/null || echo 0)
      [[ -f $fd ]] && used=$((used + blocks * 512))
    done
    ((used > peak)) && peak=$used
  fi
  sleep 1
done
wait $timer
grep -v '^\s' build.log | tail -8
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(free -g | awk '/^Mem:/ { print $2 }') GiB;" \
  "load average before: $load"
echo "command: bbtree-build --format $FORMAT --key-type u64 --value-type u64 --memory $MEMORY --tmp-dir WORK -o index.bbt data.$FORMAT"
grep -E 'Elapsed \(wall clock\)|Maximum resident set size|User time|System time|Percent of CPU' build.log
echo "index: $(stat -c %s index.bbt) bytes; temporary files at their peak (runs and staged index, sampled" \
  "each second): $((peak / 1048576)) MiB; files left: $(find . -name '.bbtree-*' | wc -l)"
"$BUILD_DIR/tools/bbtree-verify" --quick index.bbt
[[ $("$BUILD_DIR/tools/bbtree-query" index.bbt count) == "$COUNT" ]] || { echo "wrong entry count" >&2; exit 1; }
