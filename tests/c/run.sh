#!/usr/bin/env bash
# ctest: builds the sample index and a shard set of it, then runs the C
# interface test on them.
set -euo pipefail
build_tool=$1 test_binary=$2 sample=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build_tool" "$sample" -o "$work/numbers.bbt" --value-type u64 --quiet
mkdir "$work/set" "$work/alone"
"$build_tool" "$sample" -o "$work/set/numbers.manifest" --value-type u64 --shards 3 --quiet
cp "$work/set/numbers.manifest" "$work/alone/"
"$test_binary" "$work/numbers.bbt" "$work/set/numbers.manifest" "$work/alone/numbers.manifest"
