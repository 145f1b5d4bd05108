# bbtree-build: exit statuses and messages for usage errors, bad input of
# every kind, I/O errors; a failed build leaves OUT as it was and no
# temporary file behind.
set -euo pipefail
source "$(dirname "$0")/helpers.bash" "$@"

# --- Help, version, usage errors (exit 2) ---------------------------------

expect_status 0 "$BUILD" --help
grep -q '^Examples:' out || fail "--help has no examples"
grep -q '^Exit status:' out || fail "--help has no exit statuses"
expect_status 0 "$BUILD" --version
grep -Eq '^bbtree-build [0-9]+\.[0-9]+\.[0-9]+$' out || fail "--version: $(cat out)"
grep -q 'writes 1\.2' out || fail "--version does not say which format it writes"

printf 'a\t1\n' >good.tsv
expect_status 2 "$BUILD" good.tsv
expect_err "bbtree-build: error: "
expect_err "--output is required"
expect_status 2 "$BUILD" --key-type int -o x.bbt good.tsv
expect_err_line 'bbtree-build: error: unknown key type "int": the key types are u64, i64, bytes and fixed:N'
expect_status 2 "$BUILD" --value-type fixed:0 -o x.bbt good.tsv
expect_err 'N in fixed:N must be from 1 to 4096'
expect_status 2 "$BUILD" --format xml -o x.bbt good.tsv
expect_err 'unknown format "xml"'
expect_status 2 "$BUILD" --duplicates maybe -o x.bbt good.tsv
# The page size rule (spec/FORMAT.md), in --help and in the refusal.
expect_status 0 "$BUILD" --help
grep -q -- '--page-size UINT:a power of two from 512 to 65536=1024' out ||
  fail "--help on --page-size: $(grep -A1 -- --page-size out)"
for size in 1000 256 131072 0; do
  expect_status 2 "$BUILD" --page-size $size -o x.bbt good.tsv
  expect_err "--page-size: $size is not a power of two from 512 to 65536"
done
expect_status 2 "$BUILD" --memory 12Q -o x.bbt good.tsv
expect_err '--memory: bad size "12Q"'
# More than the machine has (no CI machine has 1000 TiB).
expect_status 2 "$BUILD" --memory 1000T -o x.bbt good.tsv
expect_err "--memory 1000T: more than this machine's memory"
expect_status 3 "$BUILD" --tmp-dir "$WORK/nowhere" -o x.bbt good.tsv
expect_err_line "bbtree-build: error: --tmp-dir $WORK/nowhere: No such directory"
expect_status 3 "$BUILD" --tmp-dir good.tsv -o x.bbt good.tsv
expect_err 'not a directory'
# Numbers take digits only: CLI11 alone would read -2 as 2^64 - 2.
expect_status 2 "$BUILD" --page-size -1024 -o x.bbt good.tsv
expect_status 2 "$BUILD" --shards 0 -o x.manifest good.tsv
expect_err 'is not a whole number from 1 to 4294967295'
expect_status 2 "$BUILD" --shards 4294967296 -o x.manifest good.tsv
expect_status 2 "$BUILD" --metadata novalue -o x.bbt good.tsv
expect_err '--metadata "novalue": expected KEY=VALUE'
expect_status 2 "$BUILD" --metadata 'k=\q' -o x.bbt good.tsv
expect_err_line 'bbtree-build: error: --metadata "k=\q": bad escape "\q" in value "\q": the escapes are \\ \t \r \n \xHH'
expect_status 2 "$BUILD" --metadata 'a\q=b' -o x.bbt good.tsv
expect_err 'bad escape "\q" in key "a\q"'
# --metadata takes one KEY=VALUE a time: the INPUTs after it stay INPUTs,
# even one whose name holds a "=".
printf 'b\t2\n' >'k=v.tsv'
echo 'not\tthis' | expect_status 0 "$BUILD" -q --metadata m=1 --metadata=n=2 -o meta.bbt 'k=v.tsv'
expect_status 0 "$DUMP" meta.bbt
expect_out $'b\t2'
expect_status 0 "$DUMP" --header meta.bbt
grep -qx 'metadata.m: 1' out && grep -qx 'metadata.n: 2' out || fail "metadata: $(grep metadata out)"
! grep -q '^metadata\.k' out || fail "an INPUT was taken as metadata"
rm meta.bbt
expect_status 2 "$BUILD" --progress --quiet -o x.bbt good.tsv
expect_no_file x.bbt
# Accepted: this input fits in --memory, so no run is written to --tmp-dir.
expect_status 0 "$BUILD" -q --memory 256M --tmp-dir "$WORK" -o x.bbt good.tsv
rm x.bbt

# --- Bad input data (exit 1, FILE:LINE, nothing written) ------------------

# check_bad NAME 'BUILD OPTIONS' 'EXPECTED MESSAGE' < input: the input saved
# as NAME fails the build with `bbtree-build: error: MESSAGE`.
check_bad() {
  local name=$1 options=$2 message=$3
  cat >"$name"
  # shellcheck disable=SC2086
  expect_status 1 "$BUILD" -q $options -o bad.bbt "$name"
  expect_err_line "bbtree-build: error: $message"
  expect_no_file bad.bbt
}

printf 'a\tb\nc\n' | check_bad missing.tsv '' 'missing.tsv:2: missing value: expected KEY<TAB>VALUE'
printf 'a\tb\tc\n' | check_bad extra.tsv '' \
  'extra.tsv:1: extra field: expected KEY<TAB>VALUE, found a second TAB'
printf 'a\tb\n' | check_bad extra-set.tsv '--value-type none' \
  'extra-set.tsv:1: extra field: this file has no values, so a line holds a key alone'
printf '%s' $'ok\t1\na\\qb\tv\n' | check_bad escape.tsv '' \
  'escape.tsv:2: bad escape "\q" in key "a\qb": the escapes are \\ \t \r \n \xHH'
printf '%s' $'k\tv\\x4g\n' | check_bad hex-escape.tsv '' \
  'hex-escape.tsv:1: bad escape "\x4g" in value "v\x4g": \x takes two hex digits'
printf '1\t2\n12x\t3\n' | check_bad u64.tsv '--key-type u64 --value-type u64' \
  'u64.tsv:2: key "12x" is not a u64'
printf '18446744073709551616\t3\n' | check_bad u64-range.tsv '--key-type u64' \
  'u64-range.tsv:1: key "18446744073709551616" is out of the u64 range'
printf '1\tabc\n' | check_bad u64-value.tsv '--key-type u64 --value-type u64' \
  'u64-value.tsv:1: value "abc" is not a u64'
printf -- '-9223372036854775809\n' | check_bad i64.tsv '--key-type i64 --value-type none' \
  'i64.tsv:1: key "-9223372036854775809" is out of the i64 range'
printf '0a0b0c\n' | check_bad fixed.tsv '--key-type fixed:2 --value-type none' \
  'fixed.tsv:1: key "0a0b0c" is not 2 bytes in hex (4 hex digits)'
printf 'zz\n' | check_bad fixed-hex.tsv '--key-type fixed:1 --value-type none' \
  'fixed-hex.tsv:1: key "zz" is not 1 bytes in hex (2 hex digits)'
printf 'a\t1\r\n' | check_bad crlf.tsv '' \
  'crlf.tsv:1: raw carriage return in value: a CR byte is written \r (CRLF line ends are not accepted; convert the file with dos2unix)'
head -c 65537 /dev/zero | tr '\0' k | check_bad long.tsv '--value-type none' \
  'long.tsv:1: key is 65537 bytes, over the limit of 65536 bytes'
# The limit itself is fine.
head -c 65536 /dev/zero | tr '\0' k >longest.tsv
expect_status 0 "$BUILD" -q --value-type none -o longest.bbt longest.tsv
printf 'b\t1\na\t2\nb\t3\n' | check_bad dup.tsv '' 'dup.tsv:3: duplicate key "b" (first at dup.tsv:1)'
printf 'a\t1\nb\t2\nb\t3\n' | check_bad dup-sorted.tsv '--sorted' \
  'dup-sorted.tsv:3: duplicate key "b" (first at dup-sorted.tsv:2)'
printf '1\t1\n10\t2\n9\t3\n' | check_bad order.tsv '--sorted --key-type u64' \
  'order.tsv:3: key "9" is out of order: it comes after "10" (order.tsv:2)'
printf 'a,b,c\n' | check_bad extra.csv '--format csv' \
  'extra.csv:1: extra field: expected 2 fields (key,value), found more'
printf 'a,"b\n' | check_bad open.csv '--format csv' \
  'open.csv:1: a quoted field is not closed before the end of the input'
printf '{"key": "a\377", "value": "b"}\n' | check_bad utf8.jsonl '--format jsonl' \
  'utf8.jsonl:1: key is not valid UTF-8 (column 11): JSON text must be UTF-8; use the tsv or bin format for byte strings that are not'
printf '{"key": 1.0, "value": 2}\n' | check_bad fraction.jsonl '--format jsonl --key-type u64 --value-type u64' \
  'fraction.jsonl:1: key must be an integer: fractions and exponents are not accepted (column 9)'
printf '{"key": "a", "value": "b", "extra": 1}\n' | check_bad unknown.jsonl '--format jsonl' \
  'unknown.jsonl:1: unknown field "extra": an object has "key" and "value"'
printf '\001\000\000\000k\005\000\000\000ab' | check_bad truncated.bin '--format bin' \
  'truncated.bin: record 1 at byte 0: the input ends inside a record'
# bin input names records, the earlier one too.
printf '\001\000\000\000a\000\000\000\000\001\000\000\000c\000\000\000\000\001\000\000\000b\000\000\000\000' |
  check_bad order.bin '--format bin --sorted' \
  'order.bin: record 3 at byte 18: key "b" is out of order: it comes after "c" (order.bin: record 2)'
printf '\001\000\000\000a\000\000\000\000\001\000\000\000b\000\000\000\000\001\000\000\000b\000\000\000\000' |
  check_bad dup.bin '--format bin --sorted' \
  'dup.bin: record 3 at byte 18: duplicate key "b" (first at dup.bin: record 2)'
# A CR that is data (in a quoted csv field, or a JSON string's \r) in a
# number or hex field: the field is named as not parsing, without the tsv
# advice about CRLF files.
printf '"1\r",2\r\n' | check_bad cr.csv '--format csv --key-type u64 --value-type u64' \
  'cr.csv:1: key "1\x0d" is not a u64'
printf '{"key": "ab\\r", "value": 1}\n' | check_bad cr.jsonl '--format jsonl --key-type fixed:1 --value-type u64' \
  'cr.jsonl:1: key "ab\x0d" is not 1 bytes in hex (2 hex digits)'
# A stray quote in an unquoted csv field is reported at its line at once,
# not after the rest of the input is read (and held) as one open quoted
# field: here the rest does not come, and the build must not wait for it.
mkfifo stray.fifo
{ printf 'x,1\na"b,1\n'; exec sleep 120; } >stray.fifo 2>/dev/null &
writer=$!
status=0
timeout 60 "$BUILD" -q --format csv -o stray.bbt stray.fifo >out 2>err || status=$?
kill "$writer" 2>/dev/null || true
[[ $status == 1 ]] || fail "stray quote before input that does not end: status $status"
expect_err_line 'bbtree-build: error: stray.fifo:2: a quote inside an unquoted field (field 1): quote the whole field and double the quotes in it'
expect_no_file stray.bbt

# Several inputs: lines are counted per file, and the order check spans files.
printf 'a\t1\nb\t2\n' >first.tsv
printf 'c\t3\nd\n' >second.tsv
expect_status 1 "$BUILD" -q -o bad.bbt first.tsv second.tsv
expect_err_line 'bbtree-build: error: second.tsv:2: missing value: expected KEY<TAB>VALUE'
printf 'a\t3\n' >third.tsv
expect_status 1 "$BUILD" -q --sorted -o bad.bbt first.tsv third.tsv
expect_err_line 'bbtree-build: error: third.tsv:1: key "a" is out of order: it comes after "b" (first.tsv:2)'
# Standard input among the files, as -.
printf 'c\t3\nd\n' | expect_status 1 "$BUILD" -q -o bad.bbt first.tsv -
expect_err_line 'bbtree-build: error: <stdin>:2: missing value: expected KEY<TAB>VALUE'
expect_no_file bad.bbt

# Unsorted duplicates from a pipe, which cannot be read again: the sort
# kept both lines.
expect_status 1 "$BUILD" -q -o bad.bbt <dup.tsv
expect_err_line 'bbtree-build: error: <stdin>:3: duplicate key "b" (first at <stdin>:1)'
expect_no_file bad.bbt

# --- Duplicates kept on request -------------------------------------------

printf 'k\t1\nj\t0\nk\t2\nk\t3\n' >dups.tsv
for mode in first last; do
  expect_status 0 "$BUILD" -q --duplicates $mode -o $mode.bbt dups.tsv
  expect_status 0 "$DUMP" $mode.bbt
  [[ $mode == first ]] && expect_out $'j\t0\nk\t1' || expect_out $'j\t0\nk\t3'
  sort -s -k1,1 dups.tsv >dups-sorted.tsv
  expect_status 0 "$BUILD" -q --sorted --duplicates $mode -o $mode-sorted.bbt dups-sorted.tsv
  expect_status 0 "$DUMP" $mode-sorted.bbt
  [[ $mode == first ]] && expect_out $'j\t0\nk\t1' || expect_out $'j\t0\nk\t3'
done

# --- Empty input: a valid, empty index ------------------------------------

expect_status 0 "$BUILD" -q -o empty.bbt </dev/null
expect_status 0 "$QUERY" empty.bbt count
expect_out 0
expect_status 0 "$DUMP" empty.bbt
[[ ! -s out ]] || fail "dump of an empty index printed something"

# --- I/O errors (exit 3) and an existing OUT (exit 2) ---------------------

expect_status 3 "$BUILD" -q -o x.bbt nonexistent.tsv
expect_err_line 'bbtree-build: error: nonexistent.tsv: cannot open: No such file or directory'
expect_status 3 "$BUILD" -q -o x.bbt "$WORK"
expect_err 'Is a directory'
# Tests run as root, for whom no directory is unwritable: a path under a
# regular file, and /proc, give real errors.
expect_status 3 "$BUILD" -q -o good.tsv/x.bbt good.tsv
expect_err_line 'bbtree-build: error: cannot create good.tsv/x.bbt: good.tsv is not a directory'
expect_status 3 "$BUILD" -q --sorted -o good.tsv/x.bbt good.tsv
expect_err 'good.tsv'
expect_status 3 "$BUILD" -q -o /proc/x.bbt good.tsv
expect_err '/proc'
expect_status 3 "$BUILD" -q -o "$WORK/missing-dir/x.bbt" good.tsv
expect_err 'missing-dir'

# An existing OUT: refused without --force, replaced with it.
mkdir keep
printf 'a\t1\n' | "$BUILD" -q -o keep/out.bbt
cp keep/out.bbt saved.bbt
expect_status 2 "$BUILD" -q -o keep/out.bbt good.tsv
expect_err_line 'bbtree-build: error: keep/out.bbt already exists (use --force to replace it)'
expect_same_file keep/out.bbt saved.bbt

# A failed build leaves a previous OUT untouched and no temporary file, with
# or without --sorted, whatever the failure.
for options in "" "--sorted"; do
  # shellcheck disable=SC2086
  expect_status 1 "$BUILD" -q $options --force -o keep/out.bbt dup-sorted.tsv
  expect_same_file keep/out.bbt saved.bbt
  # shellcheck disable=SC2086
  expect_status 1 "$BUILD" -q $options --force -o keep/out.bbt escape.tsv
  expect_same_file keep/out.bbt saved.bbt
  # shellcheck disable=SC2086
  expect_status 3 "$BUILD" -q $options --force -o keep/out.bbt good.tsv nonexistent.tsv
  expect_same_file keep/out.bbt saved.bbt
  [[ "$(ls -A keep)" == out.bbt ]] || fail "left behind in keep/: $(ls -A keep)"
done
expect_status 0 "$BUILD" -q --force -o keep/out.bbt good.tsv
expect_status 0 "$DUMP" keep/out.bbt
expect_out_file good.tsv
[[ "$(ls -A keep)" == out.bbt ]] || fail "left behind in keep/: $(ls -A keep)"

# --- Output to stdout, summary, progress ----------------------------------

expect_status 0 "$BUILD" -q -o - good.tsv
cmp -s out keep/out.bbt || fail "-o - wrote different bytes than -o FILE"
expect_status 0 "$BUILD" -o summary.bbt good.tsv
grep -Eq '^bbtree-build: wrote summary.bbt: 1 entries, [0-9.]+ KiB, [0-9.]+ bytes/entry, [0-9.]+ s$' err ||
  fail "summary line: $(cat err)"
expect_status 0 "$BUILD" -q --force -o summary.bbt good.tsv
[[ ! -s err ]] || fail "--quiet printed: $(cat err)"
expect_status 0 "$BUILD" --progress --force -o summary.bbt good.tsv
grep -q 'entries/s' err || fail "--progress printed no progress: $(cat err)"
# On a terminal progress is redrawn in place, and cleared before the summary
# line (script(1), from Debian's essential bsdutils, gives the tool a
# pseudo-terminal); elsewhere, without --progress, stderr has the summary
# line alone. Each phase's first line is drawn at once, so the small input
# shows progress however fast the build.
seq 1 200000 | awk '{ printf "%d\t%d\n", $1 * 7 % 200003, $1 }' >progress.tsv
script -qec "$(printf %q "$BUILD") --key-type u64 --value-type u64 --force -o tty.bbt progress.tsv" /dev/null >tty.out ||
  fail "bbtree-build under script(1): $(cat -v tty.out)"
grep -q 'entries/s' tty.out || fail "no progress on a terminal: $(cat -v tty.out)"
grep -q $'\r\x1b\[Kbbtree-build: wrote tty.bbt: 200000 entries' tty.out ||
  fail "progress not cleared before the summary: $(cat -v tty.out)"
expect_status 0 "$BUILD" --key-type u64 --value-type u64 --force -o notty.bbt progress.tsv
[[ $(wc -l <err) == 1 ]] || fail "progress off a terminal: $(cat err)"
grep -q '^bbtree-build: wrote notty.bbt: 200000 entries' err || fail "summary: $(cat err)"

echo "build_errors: ok"
