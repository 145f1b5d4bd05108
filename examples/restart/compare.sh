#!/usr/bin/env bash
# Start-up time of a lookup service, to its first answer: one that opens a
# bbtree index (example-restart-bbtree) against one that rebuilds a std::map
# from the TSV at every start (example-restart-map).
#
#   examples/restart/compare.sh [--entries N [N...]] [--runs R] [--queries Q]
#                               [--build-dir DIR] [--no-cold]
#
# For each N (default 1000000 and 10000000) it generates N u64 -> u64
# entries with a fixed seed (example-restart-generate), builds the index with
# bbtree-build, and starts each service R times (default 5) as a fresh
# process, sending Q keys (default 1000; half of them absent).  Each start is
# timed by first_answer.py, which prints two figures:
#   external  from spawning the process to the parent reading the first
#             answer line: exec, dynamic linking, loading, the lookup, the pipe
#   internal  what the service reports: from the start of its main() to the
#             flush of its first answer
# with the data files in the page cache ("warm": a service restarted on the
# same machine) and evicted from it ("cold", fsync + POSIX_FADV_DONTNEED
# before each start; --no-cold skips these).  Every run's answers must equal
# the generator's expected answers, so both services answer identically;
# any difference fails the script.
#
# DIR (default: build/ beside examples/) holds tools/bbtree-build and
# examples/example-restart-*; ctest gives the two directories instead, with
# --tools-dir and --examples-dir.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build_dir="$here/../../build"
tools_dir=""
examples_dir=""
entry_counts=()
runs=5
query_count=1000
cold=1

# The comment at the top of this file: on stdout for --help (usage 0), on
# stderr for a usage error (exit status 2).
usage() {
  local status=${1:-2} text
  text=$(awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0")
  if [ "$status" -eq 0 ]; then echo "$text"; else echo "$text" >&2; fi
  exit "$status"
}

while [ $# -gt 0 ]; do
  case "$1" in
    --entries) [ $# -ge 2 ] || usage; shift
      while [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; do entry_counts+=("$1"); shift; done ;;
    --runs) [ $# -ge 2 ] || usage; runs=$2; shift 2 ;;
    --queries) [ $# -ge 2 ] || usage; query_count=$2; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || usage; build_dir=$2; shift 2 ;;
    --tools-dir) [ $# -ge 2 ] || usage; tools_dir=$2; shift 2 ;;
    --examples-dir) [ $# -ge 2 ] || usage; examples_dir=$2; shift 2 ;;
    --no-cold) cold=0; shift ;;
    -h|--help) usage 0 ;;
    *) echo "compare.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[ ${#entry_counts[@]} -gt 0 ] || entry_counts=(1000000 10000000)
[[ "$runs" =~ ^[1-9][0-9]*$ && "$query_count" =~ ^[1-9][0-9]*$ ]] || usage

tools_dir=${tools_dir:-$build_dir/tools}
examples_dir=${examples_dir:-$build_dir/examples}
build_tool="$tools_dir/bbtree-build"
generate="$examples_dir/example-restart-generate"
bbtree_service="$examples_dir/example-restart-bbtree"
map_service="$examples_dir/example-restart-map"
for program in "$build_tool" "$generate" "$bbtree_service" "$map_service"; do
  if [ ! -x "$program" ]; then
    echo "compare.sh: $program is missing: build it (cmake --build $build_dir --target $(basename "$program"))" >&2
    exit 2
  fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# "median min" of the numbers on stdin, one a line.
median_and_min() {
  sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                                     printf "%.3f %.3f\n", m, v[1] }'
}

seconds_since() {
  awk -v start="$1" -v now="$(date +%s.%N)" 'BEGIN { printf "%.1f", now - start }'
}

caches=(warm)
[ "$cold" -eq 1 ] && caches+=(cold)

echo "# time to the first answer of a fresh process; median (min) of $runs starts, in ms"
echo "# external: spawn -> first answer line read by the parent; internal: main() -> first answer flushed"
printf '%-10s %-5s %-28s %22s %22s\n' entries cache service external internal

for entries in "${entry_counts[@]}"; do
  tsv="$work/entries-$entries.tsv"
  index="$work/entries-$entries.bbt"
  queries="$work/queries-$entries.tsv"
  started=$(date +%s.%N)
  "$generate" entries "$entries" > "$tsv"
  "$generate" queries "$entries" "$query_count" > "$queries"
  generated=$(seconds_since "$started")
  started=$(date +%s.%N)
  "$build_tool" "$tsv" -o "$index" --key-type u64 --value-type u64 --quiet
  built=$(seconds_since "$started")
  echo "# $entries entries: TSV $(stat -c %s "$tsv") bytes (generated in $generated s)," \
       "index $(stat -c %s "$index") bytes (bbtree-build: $built s, once)"

  for cache in "${caches[@]}"; do
    for service in bbtree map; do
      if [ "$service" = bbtree ]; then
        command=("$bbtree_service" "$index") data=$index label="bbtree (open the index)"
      else
        command=("$map_service" "$tsv") data=$tsv label="std::map (rebuild from TSV)"
      fi
      # Warm: one untimed start first puts the data, the program and its
      # libraries in the page cache.  Cold: the data is evicted before each.
      first_run=0 evict=()
      if [ "$cache" = cold ]; then
        first_run=1 evict=(--evict "$data")
      fi
      : > "$work/times"
      for ((run = first_run; run <= runs; run++)); do
        python3 "$here/first_answer.py" "${evict[@]}" "$queries" "$work/answers" -- "${command[@]}" \
          > "$work/time"
        [ "$run" -eq 0 ] || cat "$work/time" >> "$work/times"
        if ! cmp -s "$queries" "$work/answers"; then
          echo "compare.sh: $label, $entries entries: answers differ from the expected ones:" >&2
          diff "$queries" "$work/answers" | head -n 10 >&2
          exit 1
        fi
      done
      mv "$work/answers" "$work/answers-$service"
      read -r external_median external_min < <(cut -d' ' -f1 "$work/times" | median_and_min)
      read -r internal_median internal_min < <(cut -d' ' -f2 "$work/times" | median_and_min)
      printf '%-10s %-5s %-28s %22s %22s\n' "$entries" "$cache" "$label" \
        "$external_median ($external_min)" "$internal_median ($internal_min)"
    done
    # Implied by the checks above, and the point of the comparison: said outright.
    cmp "$work/answers-bbtree" "$work/answers-map"
  done
  rm -f "$tsv" "$index"
done
echo "# both services gave the expected answer to every one of the $query_count queries, in every run,"
echo "# and identical answers to each other"
