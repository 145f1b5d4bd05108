#!/usr/bin/env bash
# The reader's prefetches are in the library the compiler built.
#
#   tests/codegen/prefetches.sh LIBRARY
#
# GCC 12 once dropped every prefetch of a header-inlined helper from the
# functions that start scans, silently: the code read right and no test
# failed, and 100-entry scans lost about a sixth of their speed
# (bench/RESULTS.md, "Short scans").  It does the same to a page prefetch
# behind a condition in a helper that is not always_inline (descend lost
# its 1 KiB prefetch that way, with one prefetch left in it).  So this
# check disassembles the library and requires in each function below at
# least the prefetch instructions of the lines it exists to request: one
# a 64-byte line, unrolled.  It checks what was emitted, not how fast
# anything runs.
set -euo pipefail
library=$1
# Function, and the fewest prefetch instructions it may hold.
minimums=(
  "bbtree::detail::reader_core::integer_get(" 16       # a 1 KiB child page
  "bbtree::detail::reader_core::descend(" 32           # 1 KiB, integer and general steps
  "bbtree::detail::reader_core::get_many(" 29          # 1 KiB or 512 bytes of an inner page, 320 of a leaf
  "bbtree::detail::reader_core::prefetch_for_scan(" 16 # the next leaf
  "bbtree::detail::reader_core::prefetch_scan_ahead(" 16
  "bbtree::cursor::step_to_next_leaf(" 16
  "bbtree::detail::reader_core::prefetch_entry_items(" 3 # key remainder, value slot or value
)
# And the calls of the out-of-line functions that only prefetch, which GCC
# may delete where it can see that they change nothing it must keep (it
# did, to prefetch_page, before that was always_inline: bench/RESULTS.md,
# "An AVX2 count of a block's inline keys").  Caller, then callee; a
# callee that GCC inlines instead leaves its prefetches in the caller.
calls=(
  "bbtree::reader::lower_bound(" "bbtree::detail::reader_core::prefetch_for_scan("
  "bbtree::detail::reader_core::search(" "bbtree::detail::reader_core::prefetch_scan_ahead("
  "bbtree::detail::reader_core::place_in_leaf(std::basic_string_view"
  "bbtree::detail::reader_core::prefetch_entry_items("
)
# With relocations (-r): in an unlinked library a call names its target
# only in the relocation line after it.
listing=$(objdump -dr -C --no-show-raw-insn "$library")
# The lines of function $1 (from its label to the next blank line) that
# contain the text $2.
count_in_function() {
  awk -v name="$1" -v text="$2" '
    /^[0-9a-f]+ <.*>:$/ { inside = index($0, "<" name) > 0; next }
    /^$/ { inside = 0 }
    inside && index($0, text) > 0 { n++ }
    END { print n + 0 }' <<<"$listing"
}
status=0
for ((i = 0; i < ${#minimums[@]}; i += 2)); do
  function=${minimums[i]}
  minimum=${minimums[i + 1]}
  count=$(count_in_function "$function" $':\tprefetch')
  if [ "$count" -lt "$minimum" ]; then
    echo "prefetches.sh: $count prefetch instructions in $function, fewer than $minimum ($library)" >&2
    status=1
  else
    echo "$function: $count prefetch instructions"
  fi
done
minimum_of() {  # $1: a function of `minimums`
  local j
  for ((j = 0; j < ${#minimums[@]}; j += 2)); do
    if [ "${minimums[j]}" = "$1" ]; then echo "${minimums[j + 1]}"; fi
  done
}
for ((i = 0; i < ${#calls[@]}; i += 2)); do
  caller=${calls[i]}
  callee=${calls[i + 1]}
  need=$(minimum_of "$callee")
  if [ -z "$need" ]; then
    echo "prefetches.sh: $callee is called but has no minimum" >&2
    exit 2
  fi
  # The callee's name appears in the caller only in a call's relocation.
  if [ "$(count_in_function "$caller" "R_X86_64_PLT32	$callee")" -ge 1 ]; then
    echo "$caller: calls $callee"
  elif [ "$(count_in_function "$caller" $':\tprefetch')" -ge "$need" ]; then
    echo "$caller: holds the prefetches of $callee, inlined"
  else
    echo "prefetches.sh: no call of $callee in $caller, nor its prefetches ($library)" >&2
    status=1
  fi
done
exit $status
