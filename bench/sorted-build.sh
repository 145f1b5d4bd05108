#!/usr/bin/env bash
# The sorted-input fast path against cp of the same bytes: bbtree-build
# --sorted on a tsv of COUNT u64 -> u64 lines (text parsing included), the
# builder API on the same entries (no parsing), and peak RSS at COUNT and
# COUNT/10 entries, which must be the same: --sorted holds one page per
# level, not the entries.  Each timing is the median of RUNS runs, with the
# input in the page cache.  Not a ctest test.
#
#   bench/sorted-build.sh [COUNT] [RUNS]       (default 10000000 and 3)
#
# Environment: BUILD_DIR (default build-bench-sort: configured here at -O2),
# WORK_DIR (default a new directory in /tmp, removed afterwards).
set -euo pipefail
export LC_ALL=C
COUNT=${1:-10000000}
RUNS=${2:-3}
SOURCE=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SOURCE/build-bench-sort}

if [[ ! -x $BUILD_DIR/tools/bbtree-build ]]; then
  cmake -S "$SOURCE" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DBBTREE_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$BUILD_DIR" --target bbtree bbtree-build -j2 >/dev/null
CXX=${CXX:-c++}
"$CXX" -O2 -std=c++20 -o "$BUILD_DIR/gen_entries" "$SOURCE/bench/gen_entries.cc"
"$CXX" -O2 -std=c++20 -I"$SOURCE/lib" -I"$SOURCE/format" -I"$BUILD_DIR/generated" -o "$BUILD_DIR/api_build" \
  "$SOURCE/bench/api_build.cc" "$BUILD_DIR/libbbtree.a" -lfmt -pthread

WORK=${WORK_DIR:-$(mktemp -d /tmp/bbtree-sorted-XXXXXX)}
[[ -n ${WORK_DIR:-} ]] || trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
"$BUILD_DIR/gen_entries" "$COUNT" tsv sorted >data.tsv
"$BUILD_DIR/gen_entries" $((COUNT / 10)) tsv sorted >small.tsv
cat data.tsv small.tsv >/dev/null  # into the page cache

# measure NAME COMMAND...: appends "NAME WALL_SECONDS MAX_RSS_KB CPU_SECONDS"
# to times.txt.  CPU time (user + system) is the steadier figure on a shared
# machine.
measure() {
  local name=$1
  shift
  /usr/bin/time -f "%e %M %U %S" -o time.out "$@" >/dev/null
  read -r wall rss user system <time.out
  echo "$name $wall $rss $(awk -v u="$user" -v s="$system" 'BEGIN { print u + s }')" >>times.txt
}
: >times.txt
for ((run = 1; run <= RUNS; run++)); do
  rm -f copy.tsv
  measure cp cp data.tsv copy.tsv
  measure cp+sync sh -c 'cp data.tsv copy2.tsv && sync copy2.tsv && rm copy2.tsv'
  measure build "$BUILD_DIR/tools/bbtree-build" -q --sorted --key-type u64 --value-type u64 --force -o out.bbt data.tsv
  measure build-small "$BUILD_DIR/tools/bbtree-build" -q --sorted --key-type u64 --value-type u64 --force -o small.bbt small.tsv
  measure api "$BUILD_DIR/api_build" "$COUNT" api.bbt
done

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
bytes=$(stat -c %s data.tsv)
small_bytes=$(stat -c %s small.tsv)
echo "input: $COUNT lines, $bytes bytes of tsv; index: $(stat -c %s out.bbt) bytes; $RUNS runs, medians"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| what | wall s | CPU s | MB/s of tsv (wall) | M entries/s (wall) | peak RSS (MiB) |\n|---|---:|---:|---:|---:|---:|\n'
for name in cp cp+sync build api build-small; do
  seconds=$(awk -v n="$name" '$1 == n { print $2 }' times.txt | median)
  rss=$(awk -v n="$name" '$1 == n { print $3 }' times.txt | median)
  cpu=$(awk -v n="$name" '$1 == n { print $4 }' times.txt | median)
  entries=$COUNT input_bytes=$bytes
  [[ $name == build-small ]] && entries=$((COUNT / 10)) input_bytes=$small_bytes
  awk -v n="$name" -v s="$seconds" -v c="$cpu" -v b="$input_bytes" -v e="$entries" -v r="$rss" 'BEGIN {
    printf "| %s | %.2f | %.2f | %.0f | %.2f | %.1f |\n", n, s, c, b / s / 1e6, e / s / 1e6, r / 1024 }'
done
