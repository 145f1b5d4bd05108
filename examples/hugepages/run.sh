#!/usr/bin/env bash
# ctest: writes a ~64 MiB index and runs the memory-mode report on it.  It
# checks that every mode and populate setting gets a line of numbers (the
# program itself fails on any wrong answer), not that huge pages were
# granted: that is the kernel's decision, and the report is there to show it.
set -euo pipefail
hugepages=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$hugepages" create "$work/test.bbt"
size=$(stat -c %s "$work/test.bbt")
[ "$size" -gt $((56 << 20)) ] && [ "$size" -lt $((72 << 20)) ]
"$hugepages" run "$work/test.bbt" 200000 | tee "$work/report"

number='[0-9]+(\.[0-9]+)?'
for mode in map map_huge_pages copy_huge_pages map_then_copy_huge_pages; do
  for populate in no yes; do
    count=$(grep -cE "^$mode +$populate( +$number){7} +(yes|no|unknown)$" "$work/report" || true)
    if [ "$count" -ne 1 ]; then
      echo "hugepages: expected one report line for $mode, populate $populate; got $count" >&2
      exit 1
    fi
  done
done
[ "$(grep -cv '^#' "$work/report")" -eq 9 ]  # the column names and eight modes
