# bbtree-build without --sorted on input larger than --memory: the external
# sort gives what sort(1) gives, under each duplicate policy; it leaves no
# file behind; a full --tmp-dir is an error naming it.
set -euo pipefail
source "$(dirname "$0")/helpers.bash" "$@"

# 100000 lines over 40000 keys, in no order; each value is its line number,
# so that first and last are checked.
awk 'BEGIN { srand(7); for (i = 1; i <= 100000; i++) print int(rand() * 40000) * 7919 "\t" i }' >data.tsv
# expected POLICY: what a build of data.tsv must hold.
expected() {
  sort -s -t$'\t' -k1,1n data.tsv |
    awk -F'\t' -v policy="$1" '
      NR == 1 || $1 != key { if (NR > 1) print key "\t" value; key = $1; value = $2; next }
      policy == "last" { value = $2 }
      END { print key "\t" value }'
}
mkdir tmp built

for policy in first last; do
  expected $policy >expected.tsv
  # 64K: hundreds of runs, merged in passes; the default: sorted in memory.
  expect_status 0 "$BUILD" -q --key-type u64 --value-type u64 --duplicates $policy \
    --memory 64K --tmp-dir tmp -o built/external.bbt data.tsv
  expect_status 0 "$DUMP" built/external.bbt
  expect_out_file expected.tsv
  expect_status 0 "$BUILD" -q --key-type u64 --value-type u64 --duplicates $policy -o built/memory.bbt data.tsv
  expect_same_file built/external.bbt built/memory.bbt
  # Runs beside OUT by default.
  expect_status 0 "$BUILD" -q --key-type u64 --value-type u64 --duplicates $policy \
    --memory 1M -o built/beside.bbt data.tsv
  expect_same_file built/external.bbt built/beside.bbt
  [[ -z "$(ls -A tmp)" ]] || fail "left in --tmp-dir: $(ls -A tmp)"
  [[ "$(ls -A built | tr '\n' ' ')" == "beside.bbt external.bbt memory.bbt " ]] || fail "left in built/: $(ls -A built)"
  rm built/*
done

# Byte-string keys and values from several inputs, one of them standard
# input, in bin format.
awk 'BEGIN { srand(3); for (i = 1; i <= 30000; i++) printf "k%x\tvalue %d %s\n", int(rand() * 20000), i, (i % 100 ? "" : sprintf("%0900d", i)) }' >words.tsv
head -n 15000 words.tsv >words-1.tsv
tail -n +15001 words.tsv >words-2.tsv
"$BUILD" -q --duplicates last -o words.bbt words.tsv
"$BUILD" -q --duplicates last --memory 64K --tmp-dir tmp -o words-external.bbt words-1.tsv - <words-2.tsv
expect_same_file words.bbt words-external.bbt
"$DUMP" --format bin words.bbt >words.bin
"$BUILD" -q --format bin --memory 64K --tmp-dir tmp -o words-bin.bbt words.bin
expect_status 0 "$DUMP" words-bin.bbt
"$DUMP" words.bbt >words-expected.tsv
expect_out_file words-expected.tsv

# --- A duplicate under --duplicates error ----------------------------------

# Distinct keys but one, repeated far apart: found by the merge, and the
# two lines are named.
awk 'BEGIN { for (i = 1; i <= 50000; i++) print (i * 7919) % 50021 "\t" i; print 7919 * 3 % 50021 "\tagain" }' >dup.tsv
expect_status 1 "$BUILD" -q --key-type u64 --memory 64K --tmp-dir tmp -o dup.bbt dup.tsv
expect_err_line 'bbtree-build: error: dup.tsv:50001: duplicate key "23757" (first at dup.tsv:3)'
expect_no_file dup.bbt
# From standard input too, which cannot be read again: the sort keeps each
# entry's line.
expect_status 1 "$BUILD" -q --key-type u64 --memory 64K --tmp-dir tmp -o dup.bbt <dup.tsv
expect_err_line 'bbtree-build: error: <stdin>:50001: duplicate key "23757" (first at <stdin>:3)'
expect_no_file dup.bbt
# Across inputs, lines counted in each: in memory, and by the merge.
printf '23757\tfirst\n' >dup-first.tsv
for memory in 64K 1G; do
  expect_status 1 "$BUILD" -q --key-type u64 --memory "$memory" --tmp-dir tmp -o dup.bbt \
    dup-first.tsv - <dup.tsv
  expect_err_line 'bbtree-build: error: <stdin>:3: duplicate key "23757" (first at dup-first.tsv:1)'
done
# Binary input names records: every key of words.bin again, the least
# found first.
cp words.bin dup.bin
least=$("$DUMP" words.bbt | head -n 1 | cut -f1)
expect_status 1 "$BUILD" -q --format bin --memory 64K --tmp-dir tmp -o dup.bbt words.bin dup.bin
expect_err_line "bbtree-build: error: dup.bin: record 1: duplicate key \"$least\" (first at words.bin: record 1)"
expect_no_file dup.bbt
[[ -z "$(ls -A tmp)" ]] || fail "left in --tmp-dir: $(ls -A tmp)"

# --- Options ---------------------------------------------------------------

expect_status 2 "$BUILD" --memory 1K -o x.bbt data.tsv
expect_err_line 'bbtree-build: error: --memory 1K: the sort needs at least 64K'
expect_status 0 "$BUILD" --help
grep -q -- '--memory' out || fail "--help does not mention --memory"
grep -q 'sorted runs' out || fail "--help does not explain the external sort"

# Progress names the phases: runs while reading, the merge passes, writing.
expect_status 0 "$BUILD" --progress --key-type u64 --value-type u64 --duplicates last \
  --memory 64K --tmp-dir tmp -o progress.bbt data.tsv
grep -q 'sorted runs; merging the sorted runs' err || fail "no reading line with runs: $(cat err)"
grep -Eq 'merging [0-9]+ sorted runs, pass 1 of [0-9]+: 100%' err || fail "no merge pass line: $(cat err)"
grep -Eq 'writing the index from [0-9]+ sorted runs: 100%' err || fail "no writing line: $(cat err)"
expect_status 0 "$BUILD" --progress --key-type u64 --value-type u64 --duplicates last -o progress2.bbt data.tsv
grep -q 'sorted in memory; writing the index: 100%' err || fail "no in-memory line: $(cat err)"

# -o -: the index goes to standard output, runs to --tmp-dir.
expect_status 0 "$BUILD" -q --key-type u64 --value-type u64 --duplicates last --memory 64K --tmp-dir tmp -o - data.tsv
expect_out_file progress.bbt

# --- A full temporary directory --------------------------------------------

# A file size limit stands for a full disk: writes past 128 KiB fail with
# EFBIG (the signal is ignored, as the test harness cannot fill a disk).
printf '1\t1\n' | "$BUILD" -q --key-type u64 --value-type u64 -o keep.bbt
cp keep.bbt saved.bbt
expect_status 3 bash -c 'trap "" XFSZ; ulimit -f 128; exec "$@"' limited "$BUILD" -q --key-type u64 \
  --value-type u64 --duplicates last --memory 64K --tmp-dir "$WORK/tmp" --force -o keep.bbt data.tsv
expect_err_line "bbtree-build: error: cannot write a sorted run in $WORK/tmp: File too large"
expect_same_file keep.bbt saved.bbt
[[ -z "$(ls -A tmp)" ]] || fail "left in --tmp-dir: $(ls -A tmp)"

echo "external_sort: ok"
