# bbtree-dump: output modes, a reader that stops early (| head), exit
# statuses.
set -euo pipefail
source "$(dirname "$0")/helpers.bash" "$@"

# 300000 entries: several megabytes of output, far more than a pipe holds.
seq 1 300000 | awk '{ print $1 "\tvalue-" $1 }' >big.tsv
expect_status 0 "$BUILD" -q --sorted --key-type u64 -o big.bbt big.tsv
expect_status 0 "$DUMP" big.bbt
expect_out_file big.tsv
expect_status 0 "$DUMP" --entries big.bbt
expect_out_file big.tsv

# A reader that goes away: no message, and exit 0 even under pipefail.
for format in tsv csv jsonl bin; do
  status=0
  "$DUMP" --format $format big.bbt 2>err | head -c 100 >/dev/null || status=$?
  [[ $status == 0 ]] || fail "dump --format $format | head exited with $status"
  [[ ! -s err ]] || fail "dump | head printed: $(cat err)"
done
status=0
"$QUERY" big.bbt range 2>err | head -n 1 >/dev/null || status=$?
[[ $status == 0 && ! -s err ]] || fail "query range | head: status $status, $(cat err)"

# The formats agree with each other.
expect_status 0 "$DUMP" --format csv big.bbt
sed 's/\t/,/' big.tsv >expected.csv
expect_out_file expected.csv
expect_status 0 "$DUMP" --format jsonl big.bbt
awk -F'\t' '{ printf "{\"key\": %s, \"value\": \"%s\"}\n", $1, $2 }' big.tsv >expected.jsonl
expect_out_file expected.jsonl
expect_status 0 "$DUMP" --format bin big.bbt
[[ $(wc -c <out) == $((300000 * 16 + $(cut -f2 big.tsv | tr -d '\n' | wc -c))) ]] ||
  fail "bin dump has the wrong size"

# FILE from standard input.
expect_status 0 "$DUMP" - <big.bbt
expect_out_file big.tsv

# --header: every field, one per line, and nothing else.
expect_status 0 "$DUMP" --header big.bbt
for field in magic format_version header_size required_features optional_features page_size \
  key_type value_type entries height root_page first_leaf_page leaf_count page_count \
  blob_offset blob_length metadata_offset metadata_length metadata_checksum build_flags \
  input_sorted duplicates inline_limit prefix_cap file_size max_key_length max_value_length \
  directory_offset directory_length directory_checksum directory_head_size \
  directory_prefix_length level_first_page header_checksum metadata_entries; do
  grep -q "^$field: " out || fail "--header lacks $field"
done
grep -qx 'entries: 300000' out || fail "--header entries"
grep -qx 'key_type: u64' out || fail "--header key_type"
grep -qx 'input_sorted: yes' out || fail "--header input_sorted"
grep -qx "file_size: $(wc -c <big.bbt)" out || fail "--header file_size"
[[ $(wc -l <out) == 35 ]] || fail "--header has $(wc -l <out) lines"

# The page inspector's views (the wiring; their content has its own tests).
expect_status 0 "$DUMP" --stats big.bbt
grep -qx 'entries: 300000' out || fail "--stats: $(head -5 out)"
expect_status 0 "$DUMP" --pages big.bbt
[[ -s out ]] || fail "--pages printed nothing"
expect_status 0 "$DUMP" --page 1 big.bbt
grep -qx 'page: 1' out || fail "--page 1: $(head -5 out)"
expect_status 2 "$DUMP" --page 999999 big.bbt
expect_err 'there is no page 999999'
expect_status 2 "$DUMP" --page -1 big.bbt

# Usage errors.
expect_status 2 "$DUMP" --header --entries big.bbt
expect_status 2 "$DUMP" --header --format csv big.bbt
expect_status 2 "$DUMP" --stats --pages big.bbt
expect_status 2 "$DUMP" --page x big.bbt
expect_status 2 "$DUMP" --format xml big.bbt
expect_status 2 "$DUMP"
expect_status 0 "$DUMP" --version
grep -Eq '^bbtree-dump [0-9]+\.[0-9]+\.[0-9]+$' out || fail "--version: $(cat out)"

# Files that are not indexes, or are damaged: 1; unreadable: 3.
expect_status 1 "$DUMP" big.tsv
expect_err 'bbtree-dump: error: big.tsv'
expect_err 'not a bbtree'
: >zero.bbt
expect_status 1 "$DUMP" zero.bbt
expect_err 'zero.bbt'
head -c 4096 big.bbt >short.bbt
expect_status 1 "$DUMP" short.bbt
expect_err 'short.bbt'
# A leaf whose checksum does not match (a flipped bit in its checksum
# field, so that its structure is sound): the entry walk checks every leaf
# as bbtree-merge does, so the dump fails naming the file and page, having
# printed at most the entries of the leaves before it.
cp big.bbt damaged.bbt
byte=$(od -An -tu1 -j $((1024 * 3)) -N1 damaged.bbt | tr -d ' ')
printf "\\x$(printf %02x $((byte ^ 1)))" | dd of=damaged.bbt bs=1 seek=$((1024 * 3)) conv=notrunc status=none
expect_status 0 "$DUMP" --page 3 big.bbt
before=$(sed -n 's/^first_rank: //p' out)
[[ $before -gt 0 ]] || fail "leaf 3's first_rank: $(head -12 out)"
for format in tsv bin; do
  expect_status 1 "$DUMP" --format $format damaged.bbt
  expect_err_line 'bbtree-dump: error: damaged.bbt: page 3 (offset 3072): checksum mismatch'
done
expect_status 1 "$DUMP" damaged.bbt
[[ $(wc -l <out) -le $before ]] || fail "dump printed $(wc -l <out) entries, leaves 1-2 hold $before"
head -n "$(wc -l <out)" big.tsv | cmp -s - out || fail "the entries printed are not big.tsv's first"
# --page on that leaf: shown whole, with its damage among its fields, and
# the status of a damaged file.
expect_status 1 "$DUMP" --page 3 damaged.bbt
grep -qx 'damaged: damaged.bbt: page 3 (offset 3072): checksum mismatch' out ||
  fail "--page 3 of damaged.bbt: $(head -12 out)"
grep -q '^entry\.0: ' out || fail "--page 3 of damaged.bbt lacks its entries"
expect_err_line 'bbtree-dump: error: damaged.bbt: page 3 (offset 3072): checksum mismatch'
expect_status 0 "$DUMP" --page 4 damaged.bbt
expect_status 3 "$DUMP" nonexistent.bbt
expect_err 'nonexistent.bbt'
expect_status 3 "$DUMP" "$WORK"
expect_err "$WORK"

echo "dump: ok"
