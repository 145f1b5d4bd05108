#!/usr/bin/env bash
# bbtree-verify reads an index from standard input when FILE is "-".
set -euo pipefail
tools=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'a\t1\nb\t2\n' | "$tools/bbtree-build" -o "$work/x.bbt" --quiet
"$tools/bbtree-verify" - < "$work/x.bbt" > "$work/out"
grep -qx '<stdin>: ok (2 entries, 2048 bytes, 1 level, 2 pages)' "$work/out"
status=0
head -c 1500 "$work/x.bbt" | "$tools/bbtree-verify" - > "$work/out" || status=$?
[ "$status" -eq 1 ] || { echo "a truncated index on stdin exited $status, not 1" >&2; exit 1; }
grep -q '^<stdin>: page 0 (offset 1500): truncated' "$work/out"
# A pipe named by its path is read the same way, under its name.
"$tools/bbtree-verify" <(cat "$work/x.bbt") > "$work/out"
grep -qx '/dev/fd/[0-9]*: ok (2 entries, 2048 bytes, 1 level, 2 pages)' "$work/out"
mkfifo "$work/x.fifo"
cat "$work/x.bbt" > "$work/x.fifo" &
"$tools/bbtree-verify" --json "$work/x.fifo" > "$work/out"
wait
grep -q '"ok": true' "$work/out"
echo "verify_stdin: passed"
