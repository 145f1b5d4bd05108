#!/usr/bin/env bash
# ctest: packs the sample index into a container at an odd offset, and checks
# that the index read in place there answers exactly as the standalone file
# does (bbtree-query), and passes a full verification in place.
set -euo pipefail
build_tool=$1 query_tool=$2 embedded=$3 sample=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$build_tool" "$sample" -o "$work/numbers.bbt" --value-type u64 --quiet
# A 37-byte header and a 50-byte note: the index starts at offset 87.
note="Fifty bytes of this application's own data, then a"
[ ${#note} -eq 50 ]
"$embedded" pack "$work/numbers.pack" "$work/numbers.bbt" "$note"
"$embedded" info "$work/numbers.pack" > "$work/info"
cat "$work/info"
grep -qx 'index offset: 87 (offset mod 8: 7; address mod 8: 7)' "$work/info"
grep -qx "index length: $(stat -c %s "$work/numbers.bbt") bytes, 5001 entries" "$work/info"
grep -qx 'read in place: yes' "$work/info"
grep -qx 'verify: ok' "$work/info"

# Every key of the sample, and some that are not there.
{ cut -f1 "$sample"; printf '%s\n' eleventy "" "forty two" "one million"; } > "$work/keys"
"$embedded" get "$work/numbers.pack" < "$work/keys" > "$work/embedded.out"
# bbtree-query exits 1 when some key is missing, as some are here.
query_status=0
"$query_tool" "$work/numbers.bbt" get --stdin --with-keys --missing-marker - < "$work/keys" \
  > "$work/standalone.out" || query_status=$?
[ "$query_status" -eq 1 ]
diff "$work/standalone.out" "$work/embedded.out"
[ "$(wc -l < "$work/embedded.out")" -eq "$(wc -l < "$work/keys")" ]
[ "$(grep -c $'\t-$' "$work/embedded.out")" -eq 4 ]
echo "embedded: $(wc -l < "$work/keys") answers equal the standalone file's"

# A container cut short: its header points past the end of the file, and the
# example refuses it before the reader sees a byte of it.
head -c 4096 "$work/numbers.pack" > "$work/cut.pack"
if "$embedded" info "$work/cut.pack" > /dev/null 2> "$work/error"; then
  echo "embedded: a truncated container was accepted" >&2
  exit 1
fi
grep -q 'the header points outside the file' "$work/error"
