# build -> dump -> build for every key type, value type and format: the
# entries survive every format, and a sorted rebuild with the same options is
# byte-identical to the original.
set -euo pipefail
source "$(dirname "$0")/helpers.bash" "$@"

COUNT=3000

# generate KEY_TYPE VALUE_TYPE: canonical tsv lines, in no particular key
# order, with the extremes of the integer types and bytes that need escapes.
generate() {
  awk -v keys="$1" -v values="$2" -v n=$COUNT '
    function key(i,   k) {
      if (keys == "u64") return i * 7919 + 13
      if (keys == "i64") return (i - n / 2) * 104729
      if (keys == "fixed:3") return sprintf("%06x", (i * 9973) % 16777216)
      k = sprintf("k%05d", i)
      if (i % 7 == 0) k = k "\\t"
      if (i % 11 == 0) k = k ",x"
      if (i % 13 == 0) k = k "\"q"
      if (i % 17 == 0) k = k "\\x00"
      if (i % 19 == 0) k = k "\303\251"
      if (i % 23 == 0) k = k "\\\\"
      return k
    }
    function value(i,   v) {
      if (values == "u64") return i * 31
      if (values == "fixed:2") return sprintf("%04x", i % 65536)
      if (i % 29 == 0) return ""
      v = "v" i
      if (i % 5 == 0) v = v "\\n,\"\\r"
      if (i % 9 == 0) v = v " \342\202\254\\x7f"
      return v
    }
    BEGIN {
      for (i = 1; i <= n; i++) {
        # A permutation of 1..n (1009 is prime to n): unsorted for every type.
        j = (i * 1009) % n + 1
        if (values == "none") print key(j); else print key(j) "\t" value(j)
      }
      if (keys == "u64") extremes = "0 18446744073709551615"
      if (keys == "i64") extremes = "-9223372036854775808 9223372036854775807"
      split(extremes, extreme, " ")
      for (e in extreme) {
        if (values == "none") print extreme[e]; else print extreme[e] "\t" value(1)
      }
    }'
}

for key_type in u64 i64 fixed:3 bytes; do
  for value_type in none u64 fixed:2 bytes; do
    types=(--key-type "$key_type" --value-type "$value_type")
    options=("${types[@]}" --page-size 512 --metadata source=test --metadata 'tab\tkey=\x01value')
    what="$key_type/$value_type"
    generate "$key_type" "$value_type" >input.tsv

    # Unsorted input: every line comes back, in key order.
    expect_status 0 "$BUILD" -q "${options[@]}" -o unsorted.bbt input.tsv
    expect_status 0 "$DUMP" unsorted.bbt
    mv out dumped.tsv
    [[ $(wc -l <dumped.tsv) == $(wc -l <input.tsv) ]] || fail "$what: entries lost"
    cmp -s <(sort input.tsv) <(sort dumped.tsv) || fail "$what: dump differs from the input"
    case $key_type in
      u64 | i64) sort -s -n -k1,1 input.tsv >expected.tsv ;;
      *) sort -s -k1,1 input.tsv >expected.tsv ;;
    esac
    if [[ $key_type != bytes ]]; then
      # Escaped byte strings do not sort as their bytes do; the others do.
      cmp -s expected.tsv dumped.tsv || fail "$what: dump is not in key order"
    fi

    # The sorted rebuild is the reference for byte-identical output.
    expect_status 0 "$BUILD" -q --sorted "${options[@]}" -o sorted.bbt dumped.tsv
    expect_status 0 "$DUMP" sorted.bbt
    expect_out_file dumped.tsv

    for format in tsv csv jsonl bin; do
      expect_status 0 "$DUMP" --format $format sorted.bbt
      mv out dumped.$format
      "$DUMP" --format $format sorted.bbt |
        "$BUILD" -q --sorted --format $format "${options[@]}" -o piped.bbt
      expect_same_file piped.bbt sorted.bbt
      expect_status 0 "$BUILD" -q --format $format "${options[@]}" -o again.bbt dumped.$format
      expect_status 0 "$DUMP" again.bbt
      expect_out_file dumped.tsv
      rm piped.bbt again.bbt
    done
    # Without the metadata, the files differ: the check above is not vacuous.
    expect_status 0 "$BUILD" -q --sorted "${types[@]}" --page-size 512 -o bare.bbt dumped.tsv
    ! cmp -s bare.bbt sorted.bbt || fail "$what: metadata made no difference"
    rm unsorted.bbt sorted.bbt bare.bbt
  done
done

# Byte strings of random bytes, every byte value likely, through every format
# that holds arbitrary bytes.  The input is bin, written here by hand.
for ((i = 0; i < 400; i++)); do
  key_length=$((RANDOM % 9))
  value_length=$((RANDOM % 12))
  printf "\\x$(printf %02x $key_length)\\0\\0\\0"
  head -c $key_length /dev/urandom
  printf "\\x$(printf %02x $value_length)\\0\\0\\0"
  head -c $value_length /dev/urandom
done >random.bin
options=(--format bin --duplicates last)
expect_status 0 "$BUILD" -q "${options[@]}" -o random.bbt random.bin
expect_status 0 "$DUMP" --format bin random.bbt
mv out random-sorted.bin
expect_status 0 "$BUILD" -q --sorted "${options[@]}" -o reference.bbt random-sorted.bin
for format in tsv csv bin; do
  "$DUMP" --format $format random.bbt |
    "$BUILD" -q --sorted --format $format --duplicates last -o again.bbt
  expect_same_file again.bbt reference.bbt
  rm again.bbt
done
# The tsv of arbitrary bytes is still one entry per line.
expect_status 0 "$DUMP" random.bbt
[[ $(wc -l <out) == $(expect_status 0 "$QUERY" random.bbt count && cat out) ]] ||
  fail "tsv dump of random bytes has the wrong number of lines"
# jsonl cannot hold bytes that are not UTF-8, and says what to use instead.
expect_status 2 "$DUMP" --format jsonl random.bbt
expect_err 'is not valid UTF-8, which JSON strings cannot hold: use the tsv or bin format'

# The header shows the build options that byte-identical rebuilds need.
printf 'b\t2\na\t1\n' | "$BUILD" -q --page-size 1024 --duplicates first \
  --metadata 'owner=me' --metadata 'note=x\ty' -o header.bbt
expect_status 0 "$DUMP" --header header.bbt
for line in 'page_size: 1024' 'key_type: bytes' 'value_type: bytes' 'entries: 2' \
  'input_sorted: no' 'duplicates: first' 'metadata_entries: 2' 'metadata.note: x\ty' \
  'metadata.owner: me' 'format_version: 1.2' 'magic: 89 42 42 54 52 45 45 0a'; do
  grep -qxF -- "$line" out || fail "--header lacks '$line': $(cat out)"
done
"$DUMP" header.bbt | "$BUILD" -q --sorted --page-size 1024 -o header-sorted.bbt
expect_status 0 "$DUMP" --header header-sorted.bbt
grep -qx 'input_sorted: yes' out || fail "--header: input_sorted after --sorted"
grep -qx 'duplicates: error' out || fail "--header: duplicates after a default build"

echo "round_trip: ok"
