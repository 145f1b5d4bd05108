# The independent reader spec/reference_reader.py, written from spec/FORMAT.md
# and spec/TEXT-FORMATS.md alone, must read every file bbtree-build writes and
# print exactly what bbtree-dump prints; it also verifies every checksum and
# the whole structure.  Covers every key kind and value kind, several page
# sizes, long keys and long (out-of-page) values, empty files and metadata;
# checks the worked examples of FORMAT.md section 17 byte for byte; and checks
# that the reader rejects damaged files.
#
#   bash tests/cli/reference_reader.sh TOOLS_DIR
SRC=$(cd "$(dirname "$0")/../.." && pwd)
source "$SRC/tests/cli/helpers.bash" "$@"

READER=$SRC/spec/reference_reader.py
command -v python3 >/dev/null || fail "python3 is needed"

# gen.py KEY_TYPE VALUE_TYPE COUNT SEED: tsv entries, unique keys, in no
# particular order.  Bytes are written with \xHH escapes for everything but
# printable ASCII, so the input is valid tsv whatever the bytes are.
cat >gen.py <<'EOF'
import random, sys
key_type, value_type, count, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)

def esc(b):
    return "".join(chr(c) if 0x20 <= c < 0x7F and c != 0x5C else "\\x%02x" % c for c in b)

def fixed_key(n, i):
    mode = i % 4
    if mode == 0:
        return rng.randbytes(n)
    if mode == 1:   # a cluster: long shared prefix, differences at the end
        return b"\xab" * (n - 2) + rng.randbytes(min(n, 2))
    if mode == 2:   # differences past the first 8 bytes of the suffix
        return (b"\x11" * (n // 2) + rng.randbytes(1) + b"\0" * n)[:n - 1] + rng.randbytes(1)
    return bytes([i % 256]) * n

def bytes_key(i):
    mode = i % 10
    if mode == 0:
        return b"k%06d" % rng.randrange(10**6)
    if mode == 1:   # UTF-8, control bytes, escapes, invalid UTF-8
        return rng.choice([b"caf\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"a\tb",
                           b"x\ny", b"r\rr", b"back\\slash", b"\x00\x01", b"\x7f",
                           b"\xff\xfe", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82",
                           b"\xf4\x90\x80\x80", b"\xc2\x80"]) + rng.randbytes(rng.randrange(4))
    if mode == 2:   # long keys, often longer than inline_limit, with long shared prefixes
        return b"long/" + b"p" * rng.randrange(300) + rng.randbytes(rng.randrange(1, 600))
    if mode == 3:   # keys that are prefixes of each other, and trailing zero bytes
        base = b"pre" + bytes([rng.randrange(3)])
        return base + b"\0" * rng.randrange(12)
    if mode == 4:   # very long keys
        return b"huge" + rng.randbytes(rng.randrange(1000, 5000))
    return rng.randbytes(rng.randrange(0, 20))

def key(i):
    if key_type == "u64":
        r = rng.randrange(4)
        if r == 0: return str(rng.randrange(2**64))
        if r == 1: return str(rng.randrange(1000))
        if r == 2: return str(2**40 + rng.randrange(100000))
        return str(2**64 - 1 - rng.randrange(1000))
    if key_type == "i64":
        r = rng.randrange(3)
        if r == 0: return str(rng.randrange(-2**63, 2**63))
        if r == 1: return str(rng.randrange(-500, 500))
        return str(-2**63 + rng.randrange(1000))
    if key_type.startswith("fixed:"):
        return fixed_key(int(key_type[6:]), i).hex()
    return esc(bytes_key(i))

def value(i):
    if value_type == "u64":
        return str(rng.choice([0, 2**64 - 1, rng.randrange(2**64), i]))
    if value_type.startswith("fixed:"):
        return rng.randbytes(int(value_type[6:])).hex()
    r = i % 8
    if r == 0: return ""
    if r == 1:   # long: out of page (inline_limit is page_size / 8)
        return esc(rng.randbytes(rng.randrange(100, 20000 if i % 5 == 0 else 3000)))
    if r == 2: return esc(b"\t\n\r\\ \xe2\x82\xac\x80" * rng.randrange(1, 20))
    return esc(b"v%d" % i)

seen = set()
extremes = {"u64": ["0", str(2**64 - 1)], "i64": [str(-2**63), str(2**63 - 1), "0", "-1"],
            "bytes": [""]}.get(key_type, [])
lines = []
for i in range(count):
    k = extremes[i] if i < len(extremes) else key(i)
    if k in seen:
        continue
    seen.add(k)
    lines.append(k if value_type == "none" else k + "\t" + value(i))
sys.stdout.write("".join(l + "\n" for l in lines))
EOF

# same FILE: bbtree-dump and the reference reader print the same entries.
same() {
  expect_status 0 "$DUMP" "$1"
  mv out dump.out
  expect_status 0 python3 "$READER" "$1"
  mv out reader.out
  cmp -s dump.out reader.out ||
    fail "$1: bbtree-dump and reference_reader.py differ: $(diff dump.out reader.out | head -10)"
  files=$((files + 1))
  if "$DUMP" --header "$1" | grep -q '^directory_length: [1-9]'; then
    directories=$((directories + 1))
    directory_file=$1
  fi
  return 0
}

files=0
directories=0
page_sizes=(512 1024 4096 65536)
combo=0
for key_type in u64 i64 fixed:16 fixed:20 fixed:32 bytes; do
  for value_type in none u64 fixed:12 bytes; do
    for page_size in "${page_sizes[combo % 4]}" "${page_sizes[(combo + 1) % 4]}"; do
      count=2000
      [[ $page_size == 65536 ]] && count=6000
      [[ $key_type == bytes && $page_size == 512 ]] && count=1200
      python3 gen.py "$key_type" "$value_type" "$count" "$combo" >input.tsv
      f=${key_type/:/}-$value_type-$page_size.bbt
      expect_status 0 "$BUILD" -q --key-type "$key_type" --value-type "$value_type" \
        --page-size "$page_size" -o "$f" input.tsv
      same "$f"
      [[ $(wc -l <reader.out) == $(wc -l <input.tsv) ]] || fail "$f: entries lost"
    done
    # The empty index of these types.
    : | expect_status 0 "$BUILD" -q --key-type "$key_type" --value-type "$value_type" \
      -o empty.bbt --force -
    same empty.bbt
    [[ ! -s reader.out ]] || fail "empty index: reader printed entries"
    combo=$((combo + 1))
  done
done

# A single entry, and a single entry with a key longer than inline_limit.
printf 'solo\tvalue\n' >one.tsv
expect_status 0 "$BUILD" -q -o one.bbt one.tsv
same one.bbt
python3 -c 'import sys; sys.stdout.write("k" * 65536 + "\t" + "v" * 70000 + "\n")' >maxkey.tsv
expect_status 0 "$BUILD" -q --page-size 512 -o maxkey.bbt maxkey.tsv
same maxkey.bbt

# An inner page with count 0 (FORMAT.md 11): with the reference builder's
# policy (15.5), these 4341 entries leave the last page of level 1 with one
# child.
python3 -c 'import sys; sys.stdout.write("".join("%d\t%d\n" % (i * 1000003, i) for i in range(1, 4342)))' >inner.tsv
expect_status 0 "$BUILD" -q --sorted --key-type u64 --value-type u64 --page-size 512 -o inner.bbt inner.tsv
same inner.bbt

# Metadata, with escapes and a long value; also on an empty index.
python3 gen.py bytes bytes 2000 99 >input.tsv
long_meta=$(python3 -c 'print("m" * 5000)')
meta=(--metadata source=test --metadata 'tab\tkey=\x01value' --metadata "long=$long_meta"
  --metadata 'empty=' --metadata '=empty key')
expect_status 0 "$BUILD" -q --page-size 1024 "${meta[@]}" -o meta.bbt input.tsv
same meta.bbt
expect_status 0 python3 "$READER" --header meta.bbt
grep -qx 'metadata_entries: 5' out || fail "--header: metadata_entries"
# Fields that both --header outputs name alike have the same text.
mv out reader-header.out
expect_status 0 "$DUMP" --header meta.bbt
python3 - out reader-header.out <<'EOF' || fail "--header outputs differ"
import sys
def fields(path):
    return dict(l.split(": ", 1) for l in open(path, encoding="utf-8").read().splitlines())
dump, reader = fields(sys.argv[1]), fields(sys.argv[2])
common = sorted(set(dump) & set(reader))
bad = [f"{n}: dump {dump[n]!r}, reader {reader[n]!r}" for n in common if dump[n] != reader[n]]
if len(common) < 25 or bad:
    sys.exit(f"{len(common)} common fields; differing: {bad}")
EOF
: | expect_status 0 "$BUILD" -q --value-type none "${meta[@]}" -o meta-empty.bbt -
same meta-empty.bbt

# A file of a few megabytes, read in reasonable time.
seq 1 200000 | awk '{ print $1 * 3 "\tvalue-" $1 }' >big.tsv
expect_status 0 "$BUILD" -q --sorted --key-type u64 -o big.bbt big.tsv
same big.bbt
cmp -s reader.out big.tsv || fail "big.bbt: the reader's output is not the input"

# The worked examples of FORMAT.md section 17: the listed bytes, and zeros
# elsewhere in the listed pages.
printf '1700000000\t100\n1700000100\t200\n1700003600\t300\n' |
  expect_status 0 "$BUILD" -q --sorted --key-type u64 --value-type u64 --page-size 512 -o ex1.bbt -
python3 -c 'print("user:alexandra\tred\nuser:bob\t\nuser:christopher\t" + "z" * 100)' |
  expect_status 0 "$BUILD" -q --sorted --page-size 512 -o ex2.bbt -
same ex1.bbt
same ex2.bbt
cat >examples.py <<'EOF'
import re, sys
spec, ex1, ex2 = sys.argv[1:4]
text = open(spec, encoding="utf-8").read()
section = text[text.index("\n## 17. Worked examples"):text.index("\n## 18.")]
blocks = re.findall(r"```\n(.*?)```", section, re.S)
if len(blocks) != 3:
    sys.exit(f"expected 3 listings in section 17, found {len(blocks)}")

def listed(block):
    got = {}
    for line in block.splitlines():
        m = re.match(r"([0-9a-f]{4}):\s+(.*)", line)
        if not m:
            continue
        base = int(m.group(1), 16)
        for j, tok in enumerate(m.group(2).split()[:16]):
            if not re.fullmatch(r"[0-9a-f]{2}", tok):
                break
            got[base + j] = int(tok, 16)
    return got

def check(name, data, start, block):
    want = listed(block)
    if not want:
        sys.exit(f"{name}: no bytes listed")
    for off in range(512):
        if data[start + off] != want.get(off, 0):
            sys.exit(f"{name}: byte 0x{off:04x} is {data[start + off]:02x}, "
                     f"FORMAT.md lists {want.get(off, 0):02x}")

d1 = open(ex1, "rb").read()
d2 = open(ex2, "rb").read()
check("17.1 leaf", d1, 512, blocks[0])
check("17.1 header", d1, 0, blocks[1])
check("17.2 leaf", d2, 512, blocks[2])
EOF
expect_status 0 python3 examples.py "$SRC/spec/FORMAT.md" ex1.bbt ex2.bbt

# Damaged files: the reader refuses them (exit 1), naming the problem.
# bump_byte FILE OFFSET: adds 1 to the byte at OFFSET, in place.
bump_byte() {
  python3 - "$1" "$2" <<'EOF'
import sys
path, off = sys.argv[1], int(sys.argv[2])
b = bytearray(open(path, "rb").read())
b[off] = (b[off] + 1) % 256
open(path, "wb").write(b)
EOF
}
damaged() {  # damaged OFFSET TEXT: damage a copy of meta.bbt at OFFSET; expect TEXT
  cp meta.bbt bad.bbt
  bump_byte bad.bbt "$1"
  expect_status 1 python3 "$READER" bad.bbt
  expect_err "$2"
}
page_count=$(python3 "$READER" --header meta.bbt | sed -n 's/^page_count: //p')
blob_offset=$(python3 "$READER" --header meta.bbt | sed -n 's/^blob_offset: //p')
metadata_offset=$(python3 "$READER" --header meta.bbt | sed -n 's/^metadata_offset: //p')
[[ $blob_offset -gt 0 ]] || fail "meta.bbt has no blob region"
damaged 0 'not_bbtree'
damaged 8 'newer_version'
damaged 40 'corrupt_header'          # key_size: the header checksum catches it
damaged 600 'page 0 are not zero'    # not covered by the header checksum
damaged $((1024 + 100)) 'page 1: checksum'
damaged $(((page_count - 1) * 1024 + 40)) "page $((page_count - 1)): checksum"
damaged $((blob_offset + 10)) 'external item checksum'
damaged $((metadata_offset + 6)) 'metadata checksum'
cp meta.bbt bad.bbt
printf 'x' >>bad.bbt
expect_status 1 python3 "$READER" bad.bbt
expect_err 'trailing_data'
head -c $((page_count * 1024)) meta.bbt >bad.bbt
expect_status 1 python3 "$READER" bad.bbt
expect_err 'truncated'

# Files of byte strings and of fixed keys over 8 bytes in three levels or
# more end in a directory region (FORMAT.md 12.3), which the reader checks.
[[ $directories -gt 0 ]] || fail "no file had a directory region"
cp "$directory_file" bad.bbt
python3 -c "import sys; p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[-1] ^= 1; open(p, 'wb').write(b)" bad.bbt
expect_status 1 python3 "$READER" bad.bbt
expect_err 'directory'
echo "reference_reader: ok ($files files identical, $directories with a directory region)"
