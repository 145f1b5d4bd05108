#!/usr/bin/env bash
# The reader's prefetches are in the library the compiler built.
#
#   tests/codegen/prefetches.sh LIBRARY
#
# GCC 12 once dropped every prefetch of a header-inlined helper from the
# functions that start scans, silently: the code read right and no test
# failed, and 100-entry scans lost about a sixth of their speed
# (bench/RESULTS.md, "Short scans").  This check disassembles the library
# and requires at least one prefetch instruction in each function below,
# each of which exists to issue them.  It checks what was emitted, not
# how fast anything runs.
set -euo pipefail
library=$1
functions=(
  "bbtree::detail::reader_core::integer_get("
  "bbtree::detail::reader_core::descend("
  "bbtree::detail::reader_core::get_many("
  "bbtree::detail::reader_core::prefetch_for_scan("
  "bbtree::detail::reader_core::prefetch_scan_ahead("
  "bbtree::cursor::step_to_next_leaf("
)
listing=$(objdump -d -C --no-show-raw-insn "$library")
status=0
for function in "${functions[@]}"; do
  # Instructions from the function's label to the next blank line.
  count=$(awk -v name="$function" '
    /^[0-9a-f]+ <.*>:$/ { inside = index($0, "<" name) > 0; next }
    /^$/ { inside = 0 }
    inside && /:\tprefetch/ { n++ }
    END { print n + 0 }' <<<"$listing")
  if [ "$count" -eq 0 ]; then
    echo "prefetches.sh: no prefetch instruction in $function ($library)" >&2
    status=1
  else
    echo "$function: $count prefetch instructions"
  fi
done
exit $status
