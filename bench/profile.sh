#!/usr/bin/env bash
# Where a lookup's time goes: for lone lookups (reader::get) and batched ones
# (get_many) on the benchmark's two main datasets, per lookup,
#
#  - the hardware's own counts of the timed loop (cycles, instructions,
#    cache-misses, dTLB-load-misses: perf stat's events, read with
#    perf_event_open by bbtree-lookup-probe), where the machine exposes
#    them; virtual machines often do not, and the table then says so;
#  - callgrind's count of instructions, and its simulation of this host's
#    caches (sizes from sysfs): the cache lines each lookup reads that are
#    not in L1, and those not in the last-level cache either, which come
#    from memory.  Prefetches are not loads to callgrind, so these are the
#    lines the lookup reads, wherever a prefetch brought them from.
#
#   bench/profile.sh [PROBES]      (default 100000 lookups a case)
#
# BBTREE_PROFILE_D1 and BBTREE_PROFILE_LL (callgrind's --D1 and --LL,
# "bytes,ways,line") set the caches simulated, where sysfs lists none or
# another machine's are wanted.
#
# Prints a markdown table on stdout, and progress on stderr when it is a
# terminal.  Takes about six minutes on a 2-core machine.  Builds
# bbtree-lookup-probe as run.sh builds the benchmark (bench/build-release.sh);
# its index files live in a scratch directory that is removed afterwards.
set -euo pipefail

source "$(dirname "$0")/build-release.sh"
probes="${1:-100000}"
case "$probes" in
  '' | *[!0-9]*) echo "profile.sh: PROBES must be a number, not '$probes'" >&2; exit 2 ;;
esac

bench_build "bench profile" bbtree-lookup-probe >/dev/null
probe="$build/bench/bbtree-lookup-probe"

scratch="$(mktemp -d "${TMPDIR:-/tmp}/bbtree-profile.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

# The host's L1 data cache and its last (largest) unified cache, as
# callgrind's --D1 and --LL take them: size,ways,line.  callgrind needs a
# power-of-two number of sets; a cache without one is simulated at the
# largest such size below it, and the header line gives the sizes simulated.
cache_spec() {  # $1: "data" for L1d, "last" for the last level
  local best="" best_level=0 dir level type size ways line sets
  for dir in /sys/devices/system/cpu/cpu0/cache/index*; do
    [ -r "$dir/level" ] || continue
    level=$(cat "$dir/level")
    type=$(cat "$dir/type")
    size=$(($(sed 's/K$//' "$dir/size") * 1024))
    ways=$(cat "$dir/ways_of_associativity")
    line=$(cat "$dir/coherency_line_size")
    if [ "$1" = data ] && [ "$level" = 1 ] && [ "$type" = Data ]; then
      best="$size $ways $line"
    elif [ "$1" = last ] && [ "$type" = Unified ] && [ "$level" -gt "$best_level" ]; then
      best="$size $ways $line"
      best_level=$level
    fi
  done
  [ -n "$best" ] || return 1
  read -r size ways line <<<"$best"
  sets=$((size / (ways * line)))
  local power=1
  while [ $((power * 2)) -le "$sets" ]; do power=$((power * 2)); done
  echo "$((power * ways * line)),$ways,$line"
}
# Some virtual machines list no caches in sysfs: then the geometry comes
# from the environment, as callgrind takes it.  getconf's figures are a
# hint only (a KVM guest reported a 508 MiB L3 with 0 ways).
no_cache() {  # $1: what is missing, $2: the variable that supplies it
  echo "profile.sh: no $1 in sysfs (/sys/devices/system/cpu/cpu0/cache);" \
    "set $2=BYTES,WAYS,LINE (getconf -a | grep CACHE may help)" >&2
  exit 1
}
d1="${BBTREE_PROFILE_D1:-}"
ll="${BBTREE_PROFILE_LL:-}"
[ -n "$d1" ] || d1="$(cache_spec data)" || no_cache "L1 data cache" BBTREE_PROFILE_D1
[ -n "$ll" ] || ll="$(cache_spec last)" || no_cache "unified cache" BBTREE_PROFILE_LL

cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "Host: $cpu, $(nproc) cores, kernel $(uname -r); $(date -u '+%Y-%m-%d %H:%M UTC')."
echo "Command: bench/profile.sh $probes (bbtree-lookup-probe, 1 KiB pages, $probes random hits a case)."
echo "Caches simulated by callgrind: L1d ${d1%%,*} bytes (${d1#*,}: ways,line), last level ${ll%%,*} bytes (${ll#*,})."
echo
echo "| case | ns / lookup (native) | hardware counters / lookup | instructions / lookup (callgrind) | lines not in L1 / lookup | lines from memory / lookup |"
echo "|---|---:|---|---:|---:|---:|"

per_lookup() { awk -v count="$1" -v total="$2" 'BEGIN { printf "%.1f", total / count }'; }

run_case() {  # $1: label, $2: KEYS value (u64 or str), $3: entries, $4: get|many
  local label=$1 keys=$2 entries=$3 mode=$4 native counters out summary
  if [ -t 2 ]; then echo "profile.sh: $label" >&2; fi
  # The first run builds the index in the scratch directory and leaves its
  # pages in the page cache; the second is the one reported.
  KEYS=$keys TMPDIR="$scratch" "$probe" "$entries" 1000 1024 "$mode" >/dev/null
  native="$(COUNTERS=1 KEYS=$keys TMPDIR="$scratch" "$probe" "$entries" "$probes" 1024 "$mode")"
  counters="$(sed -n 's/^counters per op: //p; s/^counters: //p' <<<"$native")"
  out="$scratch/callgrind.out"
  KEYS=$keys TMPDIR="$scratch" valgrind --tool=callgrind --cache-sim=yes --D1="$d1" --LL="$ll" \
    --callgrind-out-file="$out" --toggle-collect="*run_$mode*" \
    "$probe" "$entries" "$probes" 1024 "$mode" >/dev/null 2>"$scratch/valgrind.log" ||
    { cat "$scratch/valgrind.log" >&2; exit 1; }
  # events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
  summary="$(sed -n 's/^summary: //p' "$out")"
  read -r ir _ _ _ d1mr d1mw _ dlmr dlmw <<<"$summary"
  echo "| $label | $(sed -n 's/.*: \([0-9.]*\) ns\/op.*/\1/p' <<<"$native" | head -1) | $counters |" \
    "$(per_lookup "$probes" "$ir") | $(per_lookup "$probes" $((d1mr + d1mw))) |" \
    "$(per_lookup "$probes" $((dlmr + dlmw))) |"
}

run_case "10M u64 -> u64, get" u64 10000000 get
run_case "10M u64 -> u64, get_many" u64 10000000 many
run_case "1M path-like keys, get" str 1000000 get
run_case "1M path-like keys, get_many" str 1000000 many
