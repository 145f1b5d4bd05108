# bbtree-merge: merged entries against sort(1), each duplicate policy, type
# mismatches, empty and damaged inputs, exit statuses and messages.
set -euo pipefail
source "$(dirname "$0")/helpers.bash" "$@"
MERGE=$TOOLS/bbtree-merge
VERIFY=$TOOLS/bbtree-verify

# --- Help, version, usage errors (exit 2) ---------------------------------

expect_status 0 "$MERGE" --help
grep -q '^Examples:' out || fail "--help has no examples"
grep -q '^Exit status:' out || fail "--help has no exit statuses"
expect_status 0 "$MERGE" --version
grep -Eq '^bbtree-merge [0-9]+\.[0-9]+\.[0-9]+$' out || fail "--version: $(cat out)"
grep -q 'writes 1\.2' out || fail "--version does not say which format it writes"
expect_status 2 "$MERGE" -o x.bbt
expect_err 'IN is required'
printf '1\t1\n' | "$BUILD" -q --key-type u64 --value-type u64 -o one.bbt
expect_status 2 "$MERGE" one.bbt
expect_err '--output is required'
expect_status 2 "$MERGE" --duplicates maybe one.bbt -o x.bbt
expect_status 0 "$MERGE" --help
grep -q -- '--page-size UINT:a power of two from 512 to 65536' out ||
  fail "--help on --page-size: $(grep -A1 -- --page-size out)"
expect_status 2 "$MERGE" --page-size 1000 one.bbt -o x.bbt
expect_err '--page-size: 1000 is not a power of two from 512 to 65536'
expect_status 2 "$MERGE" - -o x.bbt
expect_status 2 "$MERGE" one.bbt -o -
expect_status 2 "$MERGE" --progress --quiet one.bbt -o x.bbt
expect_no_file x.bbt

# --- Merged entries against sort(1) ---------------------------------------

# Three inputs over one key space; each value names its input and line.
for input in 1 2 3; do
  awk -v input=$input 'BEGIN { srand(input); for (i = 1; i <= 4000; i++) print int(rand() * 9000) "\t" input * 100000 + i }' |
    sort -s -t$'\t' -k1,1n | awk -F'\t' '!seen[$1]++' >in$input.tsv
  "$BUILD" -q --sorted --key-type u64 --value-type u64 -o in$input.bbt in$input.tsv
done
# expected POLICY: what merging in1, in2, in3 in this order must give.
expected() {
  cat in1.tsv in2.tsv in3.tsv | sort -s -t$'\t' -k1,1n |
    awk -F'\t' -v policy="$1" '
      NR == 1 || $1 != key { if (NR > 1) print key "\t" value; key = $1; value = $2; next }
      policy == "last" { value = $2 }
      END { if (NR > 0) print key "\t" value }'
}
for policy in first last; do
  expected $policy >expected-$policy.tsv
  expect_status 0 "$MERGE" -q --duplicates $policy in1.bbt in2.bbt in3.bbt -o merged-$policy.bbt
  [[ ! -s err ]] || fail "--quiet printed: $(cat err)"
  expect_status 0 "$DUMP" merged-$policy.bbt
  expect_out_file expected-$policy.tsv
  expect_status 0 "$VERIFY" merged-$policy.bbt
done
# The order of the inputs decides which entry first and last keep.
expect_status 0 "$MERGE" -q --duplicates first in3.bbt in2.bbt in1.bbt -o reversed.bbt
"$DUMP" reversed.bbt >reversed.tsv
expect_status 0 "$DUMP" merged-last.bbt
expect_out_file reversed.tsv

# A shard set's manifest is one input, at its place: in2 as three shards.
"$BUILD" -q --sorted --key-type u64 --value-type u64 --shards 3 -o in2.manifest in2.tsv
expect_status 0 "$MERGE" -q --duplicates last in1.bbt in2.manifest in3.bbt -o from-set.bbt
expect_status 0 "$DUMP" from-set.bbt
expect_out_file expected-last.tsv
# A set whose shard is gone: exit 3, the manifest's line named, nothing written.
mv in2.manifest.shard-0001.bbt moved.bbt
expect_status 3 "$MERGE" -q in1.bbt in2.manifest -o gone.bbt
grep -q '^bbtree-merge: error: in2.manifest:4: cannot open' err || fail "missing shard: $(cat err)"
expect_no_file gone.bbt

# A key in two inputs under --duplicates error (the default): exit 1, the
# key and both files named, nothing written.
expect_status 1 "$MERGE" in1.bbt in2.bbt -o dup.bbt
grep -Eq '^bbtree-merge: error: duplicate key "[0-9]+" in in1\.bbt and in2\.bbt$' err ||
  fail "duplicate message: $(cat err)"
expect_no_file dup.bbt
# Disjoint inputs merge under error.
printf '1\ta\n3\tc\n' | "$BUILD" -q --sorted --key-type u64 -o odd.bbt
printf '2\tb\n4\td\n' | "$BUILD" -q --sorted --key-type u64 -o even.bbt
expect_status 0 "$MERGE" odd.bbt even.bbt -o all.bbt
grep -Eq '^bbtree-merge: wrote all\.bbt: 4 entries from 2 files, [0-9.]+ KiB, [0-9.]+ s$' err ||
  fail "summary line: $(cat err)"
expect_status 0 "$DUMP" all.bbt
expect_out $'1\ta\n2\tb\n3\tc\n4\td'

# Empty inputs.
"$BUILD" -q --key-type u64 -o empty.bbt </dev/null
expect_status 0 "$MERGE" -q empty.bbt empty.bbt -o empty-merged.bbt
expect_status 0 "$QUERY" empty-merged.bbt count
expect_out 0
expect_status 0 "$MERGE" -q empty.bbt odd.bbt empty.bbt -o odd-merged.bbt
expect_status 0 "$DUMP" odd-merged.bbt
expect_out $'1\ta\n3\tc'

# --page-size, and the first input's page size by default.
expect_status 0 "$MERGE" -q --page-size 512 in1.bbt in2.bbt --duplicates last -o small-pages.bbt
expect_status 0 "$DUMP" --header small-pages.bbt
grep -q '^page_size: 512$' out || fail "--page-size 512 gave: $(grep page_size out)"
expect_status 0 "$DUMP" small-pages.bbt
cat in1.tsv in2.tsv | sort -s -t$'\t' -k1,1n | awk -F'\t' '{ v[$1] = $2 } !seen[$1]++ { k[n++] = $1 } END { for (i = 0; i < n; i++) print k[i] "\t" v[k[i]] }' >expected-12.tsv
expect_out_file expected-12.tsv

# --- Type mismatches, bad inputs, existing OUT ------------------------------

printf 'a\tb\n' | "$BUILD" -q -o words.bbt
expect_status 2 "$MERGE" odd.bbt words.bbt -o mixed.bbt
expect_err_line 'bbtree-merge: error: odd.bbt has u64 keys and bytes values, but words.bbt has bytes keys and bytes values: only files of the same key and value types merge'
expect_no_file mixed.bbt
printf 'not an index' >text.bbt
expect_status 1 "$MERGE" odd.bbt text.bbt -o bad.bbt
expect_err 'text.bbt'
expect_no_file bad.bbt
# A damaged leaf: found by its checksum.
cp in1.bbt damaged.bbt
printf '\xff\xff\xff\xff' | dd of=damaged.bbt bs=1 seek=$((1024 * 2 + 200)) conv=notrunc status=none
expect_status 1 "$MERGE" in2.bbt damaged.bbt --duplicates first -o bad.bbt
expect_err 'damaged.bbt: page 2'
expect_no_file bad.bbt
expect_status 3 "$MERGE" odd.bbt missing.bbt -o bad.bbt
expect_err 'missing.bbt'
expect_no_file bad.bbt

# An existing OUT: refused without --force, replaced with it, even when OUT
# is an input.
cp all.bbt saved.bbt
expect_status 2 "$MERGE" odd.bbt -o all.bbt
expect_err_line 'bbtree-merge: error: all.bbt already exists (use --force to replace it)'
expect_same_file all.bbt saved.bbt
printf '5\te\n' | "$BUILD" -q --sorted --key-type u64 -o five.bbt
expect_status 0 "$MERGE" -q --force all.bbt five.bbt -o all.bbt
expect_status 0 "$DUMP" all.bbt
expect_out $'1\ta\n2\tb\n3\tc\n4\td\n5\te'
[[ -z "$(ls -A | grep bbtree-tmp || true)" ]] || fail "temporary files left: $(ls -A)"

# --- Progress -------------------------------------------------------------

expect_status 0 "$MERGE" --progress --duplicates last in1.bbt in2.bbt in3.bbt -o progress.bbt
grep -q 'entries, 100%' err || fail "--progress printed no progress: $(cat err)"

echo "merge: ok"
