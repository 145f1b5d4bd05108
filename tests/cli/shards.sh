# Shard sets from the command line: bbtree-build --shards and --shard-size,
# bbtree-shards, and bbtree-query, bbtree-dump and bbtree-verify on a
# manifest, checked against the same entries in one file.
set -euo pipefail
source "$(dirname "$0")/helpers.bash" "$@"
SHARDS=$TOOLS/bbtree-shards
VERIFY=$TOOLS/bbtree-verify

# 5000 u64 keys, the even numbers, in order and shuffled (the same way on
# every run).
seq 0 4999 | awk '{ print $1 * 2 "\tv" $1 * 2 }' >sorted.tsv
awk 'BEGIN { srand(7) } { print rand() "\t" $0 }' sorted.tsv | sort | cut -f2- >unsorted.tsv
expect_status 0 "$BUILD" -q --key-type u64 -o single.bbt unsorted.tsv

# shard_counts MANIFEST: the entry counts of its shard lines, one line.
shard_counts() { grep '^shard' "$1" | cut -f5 | tr '\n' ' '; }

# --- bbtree-build --shards N ------------------------------------------------------

expect_status 0 "$BUILD" --key-type u64 --shards 4 -o set.manifest unsorted.tsv
expect_err 'wrote set.manifest: 5000 entries in 4 shards'
[[ $(head -1 set.manifest) == 'bbtree-shards 1' ]] || fail "manifest starts with $(head -1 set.manifest)"
[[ $(sed -n 2p set.manifest) == $'types\tu64\tbytes' ]] || fail "types line: $(sed -n 2p set.manifest)"
[[ $(shard_counts set.manifest) == '1250 1250 1250 1250 ' ]] || fail "counts: $(shard_counts set.manifest)"
# The shards beside the manifest, and nothing else: no temporary file.
ls -A | grep '^set\.manifest\|^\.set' >files
printf '%s\n' set.manifest set.manifest.shard-000{0,1,2,3}.bbt >expected
cmp -s files expected || fail "files of the set: $(cat files)"

# Every command of bbtree-query gives what it gives on the single file;
# standard input comes from $INPUT.
same_answers() {
  local set=$1 status_single status_set
  shift
  status_single=0
  "$QUERY" single.bbt "$@" <"${INPUT:-/dev/null}" >single.out 2>single.err || status_single=$?
  status_set=0
  "$QUERY" "$set" "$@" <"${INPUT:-/dev/null}" >set.out 2>set.err || status_set=$?
  [[ $status_single == "$status_set" ]] || fail "query $* exits $status_set on $set, $status_single on one file"
  cmp -s single.out set.out || fail "query $* differs on $set: $(diff single.out set.out | head -5)"
}
for set in set.manifest; do
  same_answers $set get 0 2 3 2498 2500 2502 9998 10000
  same_answers $set get --with-keys 2500 1
  same_answers $set range --from 2490 --to 2510
  same_answers $set range --from 2490 --to 2510 --reverse
  same_answers $set range --after 2498 --before 7502 --limit 3
  same_answers $set range --after 4990 --reverse --limit 30
  same_answers $set range --format json --from 7490 --before 7520
  same_answers $set count --from 100 --to 9000
  same_answers $set count --after 2498 --before 2500
  same_answers $set count
  same_answers $set first
  same_answers $set last
done
seq 0 10001 >probes.txt
INPUT=probes.txt same_answers set.manifest get --stdin --with-keys --missing-marker -
[[ $(wc -l <set.out) == 10002 ]] || fail "get --stdin on the set: $(wc -l <set.out) lines"

# The whole set, in key order, from dump.
expect_status 0 "$DUMP" set.manifest
expect_out_file sorted.tsv
expect_status 0 "$DUMP" --format bin set.manifest
"$DUMP" --format bin single.bbt >single.bin
expect_out_file single.bin

# --- --sorted input: --shards N and --shard-size ---------------------------------

expect_status 0 "$BUILD" -q --sorted --key-type u64 --shards 3 -o sorted3.manifest sorted.tsv
[[ $(shard_counts sorted3.manifest) == '1667 1667 1666 ' ]] || fail "counts: $(shard_counts sorted3.manifest)"
expect_status 0 "$DUMP" sorted3.manifest
expect_out_file sorted.tsv
# From standard input, which cannot be read twice to count: the whole index
# first, then cut; the same shards.
expect_status 0 "$BUILD" -q --sorted --key-type u64 --shards 3 -o piped3.manifest - <sorted.tsv
[[ $(shard_counts piped3.manifest) == '1667 1667 1666 ' ]] || fail "counts: $(shard_counts piped3.manifest)"
for number in 0 1 2; do
  cmp -s sorted3.manifest.shard-000$number.bbt piped3.manifest.shard-000$number.bbt ||
    fail "shard $number from a pipe differs from the one from a file"
done

# A duplicate in unsorted input from a pipe names both lines, and writes no
# shard, through the merge (--memory 64K) and from memory.
{ cat sorted.tsv; head -n 2 sorted.tsv | tail -n 1; } >dup-last.tsv
repeated=$(head -n 2 sorted.tsv | tail -n 1 | cut -f1)
lines=$(wc -l <dup-last.tsv)
for memory in 64K 1G; do
  expect_status 1 "$BUILD" -q --key-type u64 --shard-size 8K --memory $memory -o dup.manifest - \
    <dup-last.tsv
  expect_err_line "bbtree-build: error: <stdin>:$lines: duplicate key \"$repeated\" (first at <stdin>:2)"
  [[ -z $(ls dup.manifest* 2>/dev/null) ]] || fail "a failed build left $(ls dup.manifest*)"
done

expect_status 0 "$BUILD" -q --sorted --key-type u64 --page-size 512 --shard-size 8K -o sized.manifest \
  sorted.tsv
shards=$(grep -c '^shard' sized.manifest)
((shards > 5)) || fail "--shard-size 8K made $shards shards"
while IFS=$'\t' read -r kind path first last entries size crc; do
  [[ $kind == shard ]] || continue
  [[ $(stat -c %s "$path") == "$size" ]] || fail "$path is not $size bytes"
  [[ $path =~ ^sized\.manifest\.shard-[0-9]{4}\.bbt$ ]] || fail "shard name $path"
done <sized.manifest
# Every shard but the last has reached 8K, and passed it by a few pages at most.
grep '^shard' sized.manifest | head -n -1 | cut -f6 | while read -r size; do
  ((size >= 8192 && size <= 8192 + 4 * 512)) || fail "a shard of $size bytes for --shard-size 8K"
done
same_answers sized.manifest range --after 998 --before 1010
same_answers sized.manifest range --after 998 --before 1010 --reverse
# Every spelling of 8 KiB cuts the same shards; sizes that are no size are
# usage errors.
for spelling in 8192 8192B 8192b 8k 8KiB 8kib 8KB; do
  expect_status 0 "$BUILD" -q --sorted --key-type u64 --page-size 512 --shard-size "$spelling" \
    -o "spelled-$spelling.manifest" sorted.tsv
  for shard in $(grep '^shard' sized.manifest | cut -f2); do
    cmp -s "$shard" "spelled-$spelling${shard#sized}" || fail "--shard-size $spelling: $shard differs"
  done
  [[ $(grep -c '^shard' "spelled-$spelling.manifest") == "$shards" ]] ||
    fail "--shard-size $spelling: not $shards shards"
done
for bad in 0 0K 8Q 8KiBB 8.5K K 18014398509481984K 99999999999999999999; do
  expect_status 2 "$BUILD" -q --sorted --key-type u64 --shard-size "$bad" -o bad.manifest sorted.tsv
  expect_err "--shard-size: bad size \"$bad\""
done
expect_no_file bad.manifest
expect_status 0 "$DUMP" sized.manifest
expect_out_file sorted.tsv
# Unsorted input through an external sort of many runs: the merge streams
# into the same shards.
expect_status 0 "$BUILD" -q --key-type u64 --page-size 512 --shard-size 8K --memory 64K \
  -o sized-unsorted.manifest unsorted.tsv
expect_status 0 "$DUMP" sized-unsorted.manifest
expect_out_file sorted.tsv
[[ $(grep -c '^shard' sized-unsorted.manifest) == "$shards" ]] || fail "unsorted --shard-size: $(grep -c '^shard' sized-unsorted.manifest) shards, sorted $shards"
expect_status 0 "$VERIFY" sized-unsorted.manifest

# --- bbtree-verify -----------------------------------------------------------------

expect_status 0 "$VERIFY" set.manifest
grep -q '^set.manifest.shard-0002.bbt: ok (1250 entries' out || fail "verify: $(cat out)"
expect_out_line=$(tail -1 out)
[[ $expect_out_line == 'set.manifest: ok (shard set: 4 shards, 5000 entries, '*' bytes)' ]] ||
  fail "verify's last line: $expect_out_line"
expect_status 0 "$VERIFY" --json set.manifest single.bbt
python3 - out <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
assert report["ok"] is True, report
names = [f["name"] for f in report["files"]]
assert names == ["set.manifest.shard-%04d.bbt" % i for i in range(4)] + ["set.manifest", "single.bbt"], names
manifest = report["files"][4]
assert manifest["shard_set"] is True and manifest["shards"] == 4 and manifest["entries"] == 5000, manifest
EOF

# --- bbtree-dump --header, --stats, --pages ---------------------------------------

expect_status 0 "$DUMP" --header set.manifest
grep -qx 'shards: 4' out || fail "--header: $(head -20 out)"
grep -qx 'shard.1.first_rank: 1250' out || fail "--header: $(head -20 out)"
grep -qx 'shard.3.last_key: 9998' out || fail "--header: $(head -40 out)"
grep -qx 'shard.0.path: set.manifest.shard-0000.bbt' out || fail "--header: $(head -20 out)"
expect_status 0 "$DUMP" --stats set.manifest
grep -qx 'entries: 5000' out || fail "--stats: $(head -5 out)"
grep -qx 'shard.3.entries: 1250' out || fail "--stats: $(grep entries out)"
expect_status 2 "$DUMP" --pages set.manifest
expect_err 'set.manifest is a shard manifest'
expect_status 0 "$DUMP" --pages set.manifest.shard-0001.bbt

# --- bbtree-shards: joining files built apart -------------------------------------

mkdir parts
sed -n '1,1000p' sorted.tsv >parts/a.tsv
sed -n '1001,3500p' sorted.tsv >parts/b.tsv
sed -n '3501,5000p' sorted.tsv >parts/c.tsv
for part in a b c; do
  expect_status 0 "$BUILD" -q --sorted --key-type u64 -o parts/$part.bbt parts/$part.tsv
done
expect_status 0 "$SHARDS" joined.manifest parts/c.bbt parts/a.bbt parts/b.bbt
expect_err 'wrote joined.manifest: 3 shards, 5000 entries'
grep '^shard' joined.manifest | cut -f2 | tr '\n' ' ' >paths
[[ $(cat paths) == 'parts/a.bbt parts/b.bbt parts/c.bbt ' ]] || fail "shard paths: $(cat paths)"
same_answers joined.manifest range --from 1990 --to 2010 --reverse
same_answers joined.manifest count --from 1999 --to 7001
expect_status 0 "$VERIFY" joined.manifest

# The set moves as a whole.
mkdir moved
mv joined.manifest parts moved/
expect_status 0 "$QUERY" moved/joined.manifest get --with-keys 2000 6998
expect_out $'2000\tv2000\n6998\tv6998'
expect_status 0 "$DUMP" moved/joined.manifest
expect_out_file sorted.tsv

# A manifest and its shards are files: - is refused.
expect_status 2 "$SHARDS" - moved/parts/a.bbt
expect_no_file ./-
expect_status 2 "$SHARDS" stdin.manifest -
# An existing manifest is replaced only with --force.
expect_status 2 "$SHARDS" moved/joined.manifest moved/parts/a.bbt
expect_err 'already exists (use --force to replace it)'
expect_status 0 "$SHARDS" -q --force moved/joined.manifest moved/parts/a.bbt moved/parts/b.bbt moved/parts/c.bbt
[[ ! -s err ]] || fail "--quiet printed: $(cat err)"

# Files that cannot form a set: overlapping ranges are bad data (status 1),
# files of other types, empty ones and manifests bad arguments (status 2), as
# for bbtree-merge; the files are named, and nothing is written.
printf '100\tx\n1999\ty\n' | "$BUILD" -q --sorted --key-type u64 -o overlap.bbt
expect_status 1 "$SHARDS" bad.manifest moved/parts/a.bbt overlap.bbt
expect_err 'moved/parts/a.bbt and overlap.bbt overlap: moved/parts/a.bbt holds keys "0" to "1998", overlap.bbt holds keys "100" to "1999"'
expect_no_file bad.manifest
printf '50000\tx\n' | "$BUILD" -q --sorted --key-type i64 -o signed.bbt
expect_status 2 "$SHARDS" bad.manifest moved/parts/a.bbt signed.bbt
expect_err 'cannot be shards of one set'
expect_err 'signed.bbt has i64 keys and bytes values'
printf '' | "$BUILD" -q --sorted --key-type u64 -o empty.bbt
expect_status 2 "$SHARDS" bad.manifest moved/parts/a.bbt empty.bbt
expect_err 'empty.bbt has no entries'
expect_status 1 "$SHARDS" bad.manifest moved/parts/a.bbt sorted.tsv
expect_status 2 "$SHARDS" bad.manifest set.manifest
expect_err 'set.manifest is a shard manifest'
expect_status 2 "$SHARDS" --force moved/parts/a.bbt moved/parts/a.bbt
expect_err 'is both the manifest to write and one of its shards'
expect_status 3 "$SHARDS" bad.manifest moved/parts/a.bbt nothing.bbt
expect_err 'nothing.bbt'
expect_no_file bad.manifest
expect_status 2 "$SHARDS" bad.manifest
expect_status 0 "$SHARDS" --help
grep -q 'Examples:' out || fail "--help has no examples"
expect_status 0 "$SHARDS" --version
grep -q '^bbtree-shards ' out || fail "--version: $(cat out)"
grep -qx 'shard manifest format (spec/SHARDS.md): reads 1, writes 1' out ||
  fail "--version lacks the manifest version: $(cat out)"

# --- A set whose shards changed, or whose manifest is damaged ---------------------

cp -r moved changed
printf '1000\tv1000\n1002\tv1002\n' | "$BUILD" -q --sorted --force --key-type u64 -o changed/parts/b.bbt
expect_status 1 "$QUERY" changed/joined.manifest get 1000
expect_err 'changed/joined.manifest:4: shard changed/parts/b.bbt does not match the manifest: it has 2 entries, the manifest says 2500'
expect_status 1 "$VERIFY" changed/joined.manifest
grep -q '^changed/joined.manifest:4: shard changed/parts/b.bbt: does not match the manifest' out ||
  fail "verify of a replaced shard: $(cat out)"
grep -q '^changed/joined.manifest: damaged shard set (1 manifest problem)$' out || fail "verify: $(cat out)"

cp -r moved missing
rm missing/parts/c.bbt
expect_status 3 "$QUERY" missing/joined.manifest get 1000
expect_err 'missing/joined.manifest:5: cannot open missing/parts/c.bbt'
expect_status 3 "$VERIFY" missing/joined.manifest moved/joined.manifest
expect_err 'bbtree-verify: error: cannot open missing/parts/c.bbt'
grep -q '^moved/joined.manifest: ok' out || fail "verify goes on after a set with a missing shard: $(cat out)"

# A damaged page of a shard: the set opens, verification names the page.
cp -r moved flipped
python3 - flipped/parts/b.bbt <<'EOF'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(1024 + 200)
    byte = f.read(1)[0]
    f.seek(1024 + 200)
    f.write(bytes([byte ^ 0x01]))
EOF
expect_status 1 "$VERIFY" flipped/joined.manifest
grep -q '^flipped/parts/b.bbt: page 1 (offset ' out || fail "verify of a damaged shard: $(cat out)"
grep -q '^flipped/joined.manifest: damaged shard set (.*1 damaged shard' out || fail "verify: $(cat out)"

# The same three sets in --json, one document: a manifest problem names its
# line and shard, a damaged shard is a file of its own, and a shard that
# cannot be opened is reported as such.
expect_status 3 "$VERIFY" --json changed/joined.manifest flipped/joined.manifest \
  missing/joined.manifest
python3 - out <<'EOF' || fail "verify --json of damaged sets: $(cat out)"
import json, sys
report = json.load(open(sys.argv[1]))
assert report["ok"] is False
items = {item["name"]: item for item in report["files"]}
changed = items["changed/joined.manifest"]
assert changed["shard_set"] is True and changed["ok"] is False, changed
assert [(p["line"], p["shard"]) for p in changed["problems"]] == [(4, "changed/parts/b.bbt")], changed
assert "does not match the manifest" in changed["problems"][0]["message"], changed
flipped_shard = items["flipped/parts/b.bbt"]
assert flipped_shard["ok"] is False and flipped_shard["problems"][0]["page"] == 1, flipped_shard
assert items["flipped/joined.manifest"]["ok"] is False, items["flipped/joined.manifest"]
unreadable = items["missing/parts/c.bbt"]
assert unreadable["ok"] is False and "cannot open missing/parts/c.bbt" in unreadable["error"], unreadable
EOF

# A manifest with one byte changed, or cut short.
sed 's/^types\tu64/types\ti64/' moved/joined.manifest >moved/edited.manifest
expect_status 1 "$QUERY" moved/edited.manifest count
expect_err 'moved/edited.manifest:6: checksum mismatch'
expect_status 1 "$VERIFY" moved/edited.manifest
head -4 moved/joined.manifest >moved/cut.manifest
expect_status 1 "$QUERY" moved/cut.manifest count
expect_err 'the manifest has no end line (it is cut short)'
printf 'bbtree-shards 2\n' >moved/newer.manifest
expect_status 1 "$QUERY" moved/newer.manifest count
expect_err 'shard manifest version 2; this reader knows version 1'

# A manifest cannot come from standard input: its shards are found from its place.
# Not from a pipe either, and verify says so too, rather than "bad magic".
for tool in "$QUERY" "$DUMP" "$VERIFY"; do
  [[ $tool == "$QUERY" ]] && command=(count) || command=()
  expect_status 2 "$tool" - "${command[@]}" <set.manifest
  expect_err 'a shard manifest cannot be read from a stream'
  expect_status 2 "$tool" <(cat set.manifest) "${command[@]}"
  expect_err 'a shard manifest cannot be read from a stream'
done

# --- A failed sharded build leaves nothing ----------------------------------------

printf '1\ta\n3\tb\n2\tc\n' >disorder.tsv
expect_status 1 "$BUILD" -q --sorted --key-type u64 --shards 2 -o failed.manifest disorder.tsv
expect_err 'disorder.tsv:3: key "2" is out of order'
[[ -z $(ls -A | grep 'failed') ]] || fail "a failed build left: $(ls -A | grep failed)"
printf '1\ta\nx\tb\n' >malformed.tsv
expect_status 1 "$BUILD" -q --key-type u64 --shard-size 1M -o failed.manifest malformed.tsv
[[ -z $(ls -A | grep 'failed') ]] || fail "a failed build left: $(ls -A | grep failed)"
# Killed by SIGTERM or SIGINT once it has named a temporary file (the whole
# index, then each finished shard): the handler removes them, and the
# process dies of the signal.  Started from python3 so that SIGINT is not
# ignored, as a shell's background job has it.
seq 1 1000000 | awk '{ print $1 "\tv" $1 }' >big.tsv
for signal_name in SIGTERM SIGINT; do
  python3 - "$BUILD" "$signal_name" <<'PYTHON' || fail "$signal_name: the build did not die of it"
import os, signal, subprocess, sys, time
number = getattr(signal, sys.argv[2])
build = subprocess.Popen(
    [sys.argv[1], "-q", "--key-type", "u64", "--shards", "8", "-o", "killed.manifest", "big.tsv"],
    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
deadline = time.monotonic() + 60
while not any("killed.manifest.bbtree-tmp" in name for name in os.listdir(".")):
    if build.poll() is not None or time.monotonic() > deadline:
        sys.exit("the build ended before it named a temporary file")
    time.sleep(0.002)
build.send_signal(number)
sys.exit(0 if build.wait() == -number else 1)
PYTHON
  [[ -z $(ls -A | grep 'killed') ]] || fail "$signal_name left: $(ls -A | grep killed)"
done

# Usage: an existing OUT, standard output, both options, no shards.
expect_status 2 "$BUILD" -q --key-type u64 --shards 2 -o set.manifest sorted.tsv
expect_err 'set.manifest already exists (use --force to replace it)'
expect_status 0 "$BUILD" -q --force --key-type u64 --shards 2 -o set.manifest sorted.tsv
[[ $(shard_counts set.manifest) == '2500 2500 ' ]] || fail "counts after --force: $(shard_counts set.manifest)"
# The new shards took the names the old set did not use, and the old set's
# shards are gone; a second replacement goes back to the first names.
[[ $(ls set.manifest.shard-*) == $'set.manifest.shard-b-0000.bbt\nset.manifest.shard-b-0001.bbt' ]] ||
  fail "shards after --force: $(ls set.manifest.shard-*)"
grep -q $'^shard\tset.manifest.shard-b-0000.bbt\t' set.manifest || fail "manifest after --force"
expect_status 0 "$VERIFY" set.manifest
expect_status 0 "$BUILD" -q --force --key-type u64 --shards 3 -o set.manifest sorted.tsv
[[ $(ls set.manifest.shard-*) == $'set.manifest.shard-0000.bbt\nset.manifest.shard-0001.bbt\nset.manifest.shard-0002.bbt' ]] ||
  fail "shards after a second --force: $(ls set.manifest.shard-*)"
expect_status 0 "$VERIFY" set.manifest
expect_status 2 "$BUILD" -q --key-type u64 --shards 2 -o - sorted.tsv
expect_err 'give -o a path, not -'
expect_status 2 "$BUILD" -q --key-type u64 --shards 2 --shard-size 1M -o x.manifest sorted.tsv
expect_status 2 "$BUILD" -q --key-type u64 --shards 0 -o x.manifest sorted.tsv
expect_status 2 "$BUILD" -q --key-type u64 --shard-size 12Q -o x.manifest sorted.tsv
expect_no_file x.manifest

# An empty input makes a set without shards, which answers as an empty index.
expect_status 0 "$BUILD" -q --key-type u64 --shards 3 -o nothing.manifest </dev/null
[[ $(grep -c '^shard' nothing.manifest || true) == 0 ]] || fail "shards of an empty input"
expect_status 0 "$QUERY" nothing.manifest count
expect_out 0
expect_status 1 "$QUERY" nothing.manifest first
expect_status 0 "$VERIFY" nothing.manifest
