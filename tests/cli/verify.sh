# bbtree-verify: good files, every kind of bad file, the output formats and
# the exit statuses; then bbtree-query on damaged files (it must answer or
# fail cleanly, never crash).
source "$(dirname "$0")/helpers.bash" "$@"
VERIFY=$TOOLS/bbtree-verify

# flip_bit FILE OFFSET BIT: flips one bit of FILE in place.
flip_bit() {
  local byte
  byte=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "\\x$(printf %02x $((byte ^ (1 << $3))))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

file_size() { wc -c <"$1" | tr -d ' '; }

# --- Good files ---------------------------------------------------------------

seq 1 60000 | awk '{ print $1 * 3 "\t" $1 }' >numbers.tsv
expect_status 0 "$BUILD" -q --sorted --key-type u64 --value-type u64 --page-size 512 -o numbers.bbt numbers.tsv
# Byte strings with long values (the blob region) and metadata.
awk 'BEGIN { for (i = 0; i < 800; i++) { v = sprintf("%0" (i % 13 == 0 ? 300 : 5) "d", i); print "key-" i "\t" v } }' |
  sort >words.tsv
expect_status 0 "$BUILD" -q --sorted --page-size 512 --metadata source=verify.sh -o words.bbt words.tsv

expect_status 0 "$VERIFY" numbers.bbt
expect_out "numbers.bbt: ok (60000 entries, $(file_size numbers.bbt) bytes, 3 levels, $(($(file_size numbers.bbt) / 512)) pages)"
[[ ! -s err ]] || fail "a good file printed on stderr: $(cat err)"
expect_status 0 "$VERIFY" numbers.bbt words.bbt
[[ $(wc -l <out) == 2 ]] || fail "two good files, $(wc -l <out) lines"
grep -q '^words.bbt: ok (800 entries, ' out || fail "words.bbt: $(cat out)"
expect_status 0 "$VERIFY" --quick words.bbt
grep -q '^words.bbt: ok, checksums only (800 entries' out || fail "--quick: $(cat out)"
expect_status 0 "$VERIFY" --no-builder-policy --max-errors 0 words.bbt

# --- Damaged files --------------------------------------------------------------

# A flipped bit in a leaf (in its checksum field, so that nothing else is
# wrong): named by page and offset.
cp numbers.bbt flipped.bbt
flip_bit flipped.bbt $((512 * 5 + 1)) 3
expect_status 1 "$VERIFY" flipped.bbt
grep -qx 'flipped.bbt: page 5 (offset 2560): checksum [0-9a-f]* does not match the page'"'"'s bytes ([0-9a-f]*)' out ||
  fail "flipped leaf: $(cat out)"
grep -qx 'flipped.bbt: damaged (1 problem)' out || fail "summary line: $(cat out)"

# Good and bad files together: every file is checked, the status is 1.
expect_status 1 "$VERIFY" numbers.bbt flipped.bbt words.bbt
grep -q '^numbers.bbt: ok' out || fail "numbers.bbt missing: $(cat out)"
grep -q '^words.bbt: ok' out || fail "words.bbt missing: $(cat out)"

# Two pages swapped: both named.
cp numbers.bbt swapped.bbt
dd if=numbers.bbt of=swapped.bbt bs=512 skip=3 seek=8 count=1 conv=notrunc status=none
dd if=numbers.bbt of=swapped.bbt bs=512 skip=8 seek=3 count=1 conv=notrunc status=none
expect_status 1 "$VERIFY" swapped.bbt
grep -q '^swapped.bbt: page 3 (offset 1540): page_number field is 8' out || fail "swapped: $(cat out)"
grep -q '^swapped.bbt: page 8 (offset 4100): page_number field is 3' out || fail "swapped: $(cat out)"

# A blob byte: the page holding the external record.
cp words.bbt blob.bbt
blob_offset=$("$DUMP" --header words.bbt | awk -F': ' '$1 == "blob_offset" { print $2 }')
[[ $blob_offset -gt 0 ]] || fail "words.bbt has no blob region"
flip_bit blob.bbt $((blob_offset + 10)) 0
expect_status 1 "$VERIFY" blob.bbt
grep -Eq '^blob.bbt: page [0-9]+ \(offset [0-9]+\): the value of entry [0-9]+: checksum ' out || fail "blob: $(cat out)"

# The metadata region.
header_field() { "$DUMP" --header "$1" | awk -F': ' -v name="$2" '$1 == name { print $2 }'; }
cp words.bbt meta.bbt
metadata_end=$(($(header_field words.bbt metadata_offset) + $(header_field words.bbt metadata_length)))
flip_bit meta.bbt $((metadata_end - 2)) 1
expect_status 1 "$VERIFY" meta.bbt
grep -Eq '^meta.bbt: metadata \(offset [0-9]+\): checksum ' out || fail "metadata: $(cat out)"

# The directory region, which ends the file of byte-string keys.
[[ $(header_field words.bbt directory_length) -gt 0 ]] || fail "words.bbt has no directory"
cp words.bbt directory.bbt
flip_bit directory.bbt $(($(file_size directory.bbt) - 2)) 1
expect_status 1 "$VERIFY" directory.bbt
grep -Eq '^directory.bbt: directory \(offset [0-9]+\): checksum ' out || fail "directory: $(cat out)"
expect_status 1 "$VERIFY" --quick directory.bbt
grep -Eq '^directory.bbt: directory \(offset [0-9]+\): checksum ' out || fail "directory --quick: $(cat out)"
# Without one (--no-directory), the file's required features are clear.
expect_status 0 "$BUILD" -q --sorted --page-size 512 --no-directory -o plain.bbt words.tsv
[[ $(header_field plain.bbt directory_length) == 0 ]] || fail "--no-directory wrote a directory"
[[ $(header_field plain.bbt required_features) == 0x0000000000000000 ]] ||
  fail "--no-directory: required_features $(header_field plain.bbt required_features)"
expect_status 0 "$VERIFY" plain.bbt

# Not a bbtree file, empty, truncated, trailing data: page 0, status 1.
expect_status 1 "$VERIFY" numbers.tsv
grep -q '^numbers.tsv: page 0 (offset 0): not a bbtree' out || fail "text file: $(cat out)"
: >empty.bbt
expect_status 1 "$VERIFY" empty.bbt
grep -q '^empty.bbt: page 0 (offset 0): empty file' out || fail "empty: $(cat out)"
head -c 3000 numbers.bbt >short.bbt
expect_status 1 "$VERIFY" short.bbt
grep -q '^short.bbt: page 0 (offset 3000): truncated' out || fail "truncated: $(cat out)"
{ cat numbers.bbt; echo junk; } >long.bbt
expect_status 1 "$VERIFY" long.bbt
grep -q "^long.bbt: page 0 (offset $(file_size numbers.bbt)): 5 bytes of trailing data" out || fail "trailing: $(cat out)"
[[ $(grep -c . out) == 2 ]] || fail "trailing data: the rest should verify: $(cat out)"

# --max-errors: many damaged pages, a short list.
cp numbers.bbt many.bbt
for page in 2 4 6 8 10 12 14 16; do flip_bit many.bbt $((page * 512 + 40)) 1; done
expect_status 1 "$VERIFY" --max-errors 3 many.bbt
[[ $(grep -c '^many.bbt: page ' out) == 3 ]] || fail "--max-errors 3: $(cat out)"
# The verdict keeps the documented `FILE: damaged (N problems` form.
grep -qx 'many.bbt: damaged (3 problems, listing stopped; --max-errors 0 lists all)' out ||
  fail "--max-errors summary: $(cat out)"
expect_status 2 "$VERIFY" --max-errors -1 many.bbt
expect_status 1 "$VERIFY" --max-errors 0 many.bbt
[[ $(grep -c '^many.bbt: page ' out) -ge 8 ]] || fail "--max-errors 0: $(cat out)"
expect_status 1 "$VERIFY" --quick many.bbt
[[ $(grep -c '^many.bbt: page .*checksum' out) == 8 ]] || fail "--quick: $(cat out)"

# --- Unreadable files: status 3, also next to bad ones -----------------------------

expect_status 3 "$VERIFY" missing.bbt
expect_err 'bbtree-verify: error: cannot open missing.bbt'
expect_status 3 "$VERIFY" "$WORK"
expect_err "$WORK"
expect_status 3 "$VERIFY" numbers.bbt missing.bbt flipped.bbt
grep -q '^numbers.bbt: ok' out || fail "files after a missing one: $(cat out)"
grep -q '^flipped.bbt: page 5' out || fail "files after a missing one: $(cat out)"

# --- JSON -------------------------------------------------------------------------

expect_status 3 "$VERIFY" --json numbers.bbt flipped.bbt missing.bbt
if command -v python3 >/dev/null; then
  python3 - out <<'EOF' || fail "--json: $(cat out)"
import json, sys
report = json.load(open(sys.argv[1]))
assert report["ok"] is False
good, bad, missing = report["files"]
assert good == {"name": "numbers.bbt", "ok": True, "entries": 60000, "size": good["size"], "pages": good["pages"],
                "height": 3, "quick": False, "truncated": False, "problems": []}, good
assert bad["ok"] is False and bad["problems"][0]["page"] == 5 and bad["problems"][0]["offset"] == 2560, bad
assert bad["problems"][0]["region"] == "page" and "checksum" in bad["problems"][0]["message"], bad
assert missing["ok"] is False and "cannot open" in missing["error"], missing
EOF
  expect_status 1 "$VERIFY" --json meta.bbt
  python3 -c 'import json, sys; p = json.load(open("out"))["files"][0]["problems"][0]; assert p["page"] is None and p["region"] == "metadata", p' ||
    fail "--json metadata: $(cat out)"
else
  echo "verify.sh: python3 not found; checking the JSON by pattern only"
  grep -q '"page": 5, "region": "page", "offset": 2560' out || fail "--json: $(cat out)"
fi
expect_status 0 "$VERIFY" --json numbers.bbt
grep -q '^{"ok": true, "files": \[' out || fail "--json good: $(cat out)"
# File names of any bytes stay valid JSON: escapes, control characters, and
# bytes that are not UTF-8 as lone surrogates \udcXX (Python's
# surrogateescape), so that two names never read back as one: 0xFF alone and
# the UTF-8 of U+00FF are different files.
mkdir -p names
names=($'names/tab\there.bbt' $'names/new\nline.bbt' 'names/quote"back\slash.bbt'
  $'names/bell\a.bbt' $'names/latin1-\xe9.bbt' 'names/utf8-é.bbt' $'names/\xff.bbt'
  $'names/\xc3\xbf.bbt' $'names/cut-\xe2\x82.bbt')
for name in "${names[@]}"; do cp numbers.bbt "$name"; done
expect_status 0 "$VERIFY" --json "${names[@]}"
grep -qF '"name": "names/\udcff.bbt"' out || fail "--json: 0xFF not as \\udcff: $(cat out)"
python3 - out <<'EOF' || fail "--json names: $(cat out)"
import json, os, sys
report = json.load(open(sys.argv[1]))
names = [os.fsencode(item["name"]) for item in report["files"]]
assert sorted(names) == sorted(os.path.join(b"names", n) for n in os.listdir(b"names")), names
assert all(item["ok"] for item in report["files"]), report
EOF

# --- Usage, help and version --------------------------------------------------------

expect_status 2 "$VERIFY"
expect_status 2 "$VERIFY" --max-errors lots numbers.bbt
expect_status 2 "$VERIFY" --frobnicate numbers.bbt
expect_status 0 "$VERIFY" --help
grep -q 'Examples:' out || fail "--help lacks examples"
grep -q 'Exit status:' out || fail "--help lacks exit statuses"
expect_status 0 "$VERIFY" --version
grep -Eq '^bbtree-verify [0-9]+\.[0-9]+\.[0-9]+$' out || fail "--version: $(cat out)"
grep -q 'file format: reads 1' out || fail "--version lacks the format version: $(cat out)"

# --- The query tool on damaged files ----------------------------------------------------
# Each flipped file is either answered (0, or 1 for a key not found) or
# refused as damaged (1, naming the file); a crash would be 128 + signal.

if [[ -x $QUERY ]]; then
  size=$(file_size words.bbt)
  for i in $(seq 0 59); do
    offset=$(((i * 7919 + 13) % size))
    for source in words numbers; do
      src_size=$(file_size $source.bbt)
      cp $source.bbt damaged.bbt
      flip_bit damaged.bbt $((offset % src_size)) $((i % 8))
      if [[ $source == words ]]; then key=key-$((i * 13 % 800)); else key=$((i * 3 + 3)); fi
      for command in "get $key" "range --from $key --limit 20" "range --reverse --limit 20" "count" "first"; do
        status=0
        # shellcheck disable=SC2086
        "$QUERY" damaged.bbt $command >out 2>err || status=$?
        [[ $status == 0 || $status == 1 ]] ||
          fail "bbtree-query damaged.bbt $command (bit $((i % 8)) of byte $offset of $source.bbt) exited with $status: $(head -c 500 err)"
        if [[ $status == 1 && -s err ]] && ! grep -q 'not found' err; then
          grep -q 'damaged.bbt' err || fail "query error without the file name: $(cat err)"
        fi
      done
    done
  done
else
  echo "verify.sh: $QUERY not built; skipping queries on damaged files"
fi

echo "verify: ok"
