#!/usr/bin/env bash
# ctest: builds the sample index and checks the README example's answers.
set -euo pipefail
build_tool=$1 lookup=$2 sample=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build_tool" "$sample" -o "$work/numbers.bbt" --value-type u64 --quiet
"$lookup" "$work/numbers.bbt" forty-two "one thousand and one" > "$work/out"
printf 'forty-two\t42\none thousand and one\t1001\n' | diff - "$work/out"
if "$lookup" "$work/numbers.bbt" eleventy > "$work/out"; then
  echo "a missing key exited 0" >&2
  exit 1
fi
grep -qx $'eleventy\tnot found' "$work/out"
