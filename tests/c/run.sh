#!/usr/bin/env bash
# ctest: builds the sample index, then runs the C interface test on it.
set -euo pipefail
build_tool=$1 test_binary=$2 sample=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build_tool" "$sample" -o "$work/numbers.bbt" --value-type u64 --quiet
"$test_binary" "$work/numbers.bbt"
