# bbtree-query: every command against answers computed here with seq, awk,
# grep and sort, and the exit statuses.
set -euo pipefail
source "$(dirname "$0")/helpers.bash" "$@"

# Keys 0, 3, ..., 2997 with value 2 * key, given in descending order.
seq 0 3 2997 | awk '{ print $1 "\t" 2 * $1 }' | sort -rn >numbers.tsv
sort -n numbers.tsv >numbers-sorted.tsv
expect_status 0 "$BUILD" -q --key-type u64 --value-type u64 --page-size 512 -o numbers.bbt numbers.tsv

# in_range LOW HIGH: the expected lines for LOW <= key <= HIGH.
in_range() { awk -v low="$1" -v high="$2" '$1 >= low && $1 <= high' numbers-sorted.tsv; }

# --- get ------------------------------------------------------------------

expect_status 0 "$QUERY" numbers.bbt get 3 2997 0
expect_out $'6\n5994\n0'
expect_status 0 "$QUERY" numbers.bbt get --with-keys 3 6
expect_out $'3\t6\n6\t12'
expect_status 1 "$QUERY" numbers.bbt get 4
[[ ! -s out ]] || fail "a missing key printed on stdout"
expect_err_line 'bbtree-query: not found: 4'
expect_status 1 "$QUERY" numbers.bbt get 3 4 6 3000
expect_out $'6\n12'
[[ "$(cat err)" == $'bbtree-query: not found: 4\nbbtree-query: not found: 3000' ]] ||
  fail "not-found lines: $(cat err)"
expect_status 0 "$QUERY" numbers.bbt get --format json 9
expect_out '{"key": 9, "value": 18}'
# Keys are parsed as tsv keys of the file's type: a bad one is a usage error.
expect_status 2 "$QUERY" numbers.bbt get 12x
expect_err_line 'bbtree-query: error: key "12x" is not a u64 (this file'"'"'s keys are u64)'
# Every KEY is parsed before any lookup: nothing is printed for the good ones.
expect_status 2 "$QUERY" numbers.bbt get 3 -1
[[ ! -s out ]] || fail "a bad KEY after a good one still printed: $(cat out)"
expect_err 'key "-1" is out of the u64 range'
expect_status 2 "$QUERY" numbers.bbt get
expect_err 'get needs a KEY, or --stdin'

# --- get --stdin: batched, in input order -----------------------------------

# Probes: present and absent keys, repeated, in no order.
seq 0 3100 | awk '{ print ($1 * 7919) % 3101 }' >probes.txt
seq 0 3 30 >>probes.txt
awk 'NR == FNR { value[$1] = $2; next }
     { if ($1 in value) print $1 "\t" value[$1]; else print $1 "\t-" }' \
  numbers.tsv probes.txt >expected.txt
expect_status 1 "$QUERY" numbers.bbt get --stdin --with-keys --missing-marker - <probes.txt
expect_out_file expected.txt
[[ ! -s err ]] || fail "--missing-marker still reported on stderr: $(head -3 err)"
[[ $(wc -l <out) == $(wc -l <probes.txt) ]] || fail "output lines do not match input lines"
# Without the marker, only the values of the keys found; misses on stderr.
awk -F'\t' '$2 != "-" { print $2 }' expected.txt >expected-values.txt
expect_status 1 "$QUERY" numbers.bbt get --stdin <probes.txt
expect_out_file expected-values.txt
[[ $(wc -l <err) == $(grep -c $'\t-$' expected.txt) ]] || fail "not-found count on stderr"
grep -qx 'bbtree-query: not found: 1' err || fail "stderr lacks not found: 1"
# All found: exit 0.
seq 0 3 2997 | expect_status 0 "$QUERY" numbers.bbt get --stdin
cut -f2 numbers-sorted.tsv >values.txt
expect_out_file values.txt
printf '5\nx\n' | expect_status 2 "$QUERY" numbers.bbt get --stdin
expect_err '<stdin>:2: key "x" is not a u64'
expect_status 2 "$QUERY" numbers.bbt get --stdin 5
expect_status 2 "$QUERY" numbers.bbt get --missing-marker - 5

# --- range and count --------------------------------------------------------

expect_status 0 "$QUERY" numbers.bbt range --from 30 --to 60
in_range 30 60 >expected.txt
expect_out_file expected.txt
expect_status 0 "$QUERY" numbers.bbt range --after 30 --before 60
in_range 31 59 >expected.txt
expect_out_file expected.txt
expect_status 0 "$QUERY" numbers.bbt range --from 31 --to 59
expect_out_file expected.txt
expect_status 0 "$QUERY" numbers.bbt range
expect_out_file numbers-sorted.tsv
expect_status 0 "$QUERY" numbers.bbt range --reverse
sort -rn numbers.tsv >expected.txt
expect_out_file expected.txt
expect_status 0 "$QUERY" numbers.bbt range --from 1000 --limit 5
in_range 1000 9999 | sed -n 1,5p >expected.txt  # sed reads all: no SIGPIPE under pipefail
expect_out_file expected.txt
expect_status 0 "$QUERY" numbers.bbt range --before 1000 --reverse --limit 4
in_range 0 999 | tail -4 | sort -rn >expected.txt
expect_out_file expected.txt
expect_status 2 "$QUERY" numbers.bbt range --limit -2
expect_err '-2 is not a whole number of at least 0'
expect_status 2 "$QUERY" numbers.bbt prefix 1 --limit 99999999999999999999999
expect_status 0 "$QUERY" numbers.bbt range --from 3000
[[ ! -s out ]] || fail "an empty range printed something"
expect_status 0 "$QUERY" numbers.bbt range --from 61 --to 62
[[ ! -s out ]] || fail "an empty range printed something"
expect_status 2 "$QUERY" numbers.bbt range --from 1 --after 1
expect_status 0 "$QUERY" numbers.bbt range --from 3 --to 6 --format json
expect_out $'{"key": 3, "value": 6}\n{"key": 6, "value": 12}'

for bounds in "" "--from 30 --to 60" "--after 30 --before 60" "--from 2500" "--before 7" \
  "--from 3000" "--after 2997" "--from 60 --to 30"; do
  # shellcheck disable=SC2086
  expect_status 0 "$QUERY" numbers.bbt count $bounds
  # shellcheck disable=SC2086
  "$QUERY" numbers.bbt range $bounds >listed.txt
  [[ "$(cat out)" == "$(wc -l <listed.txt)" ]] || fail "count $bounds: $(cat out)"
done
expect_status 0 "$QUERY" numbers.bbt count
expect_out 1000
expect_status 0 "$QUERY" numbers.bbt count --after 30 --before 60
expect_out 9

# --- first, last, empty files ------------------------------------------------

expect_status 0 "$QUERY" numbers.bbt first
expect_out $'0\t0'
expect_status 0 "$QUERY" numbers.bbt last
expect_out $'2997\t5994'
expect_status 0 "$BUILD" -q -o empty.bbt </dev/null
expect_status 1 "$QUERY" empty.bbt first
# As get reports a missing key: not found, on stderr, nothing on stdout.
expect_err_line 'bbtree-query: not found: first entry (empty.bbt has no entries)'
[[ ! -s out ]] || fail "first on an empty file printed: $(cat out)"
expect_status 1 "$QUERY" empty.bbt last
expect_err_line 'bbtree-query: not found: last entry (empty.bbt has no entries)'
expect_status 0 "$QUERY" empty.bbt range
[[ ! -s out ]] || fail "range of an empty file printed something"
expect_status 0 "$QUERY" empty.bbt count
expect_out 0
expect_status 1 "$QUERY" empty.bbt get x
expect_err_line 'bbtree-query: not found: x'

# --- byte-string keys: prefix, sets, escapes -----------------------------------

printf '%s\n' apple apricot banana 'app' application ap b 'a b' 'tab\there' >words.txt
expect_status 0 "$BUILD" -q --value-type none -o words.bbt words.txt
expect_status 0 "$QUERY" words.bbt prefix ap
grep '^ap' words.txt | sort >expected.txt
expect_out_file expected.txt
expect_status 0 "$QUERY" words.bbt prefix ap --reverse --limit 2
grep '^ap' words.txt | sort -r | sed -n 1,2p >expected.txt
expect_out_file expected.txt
expect_status 0 "$QUERY" words.bbt prefix zz
[[ ! -s out ]] || fail "an empty prefix range printed something"
expect_status 0 "$QUERY" words.bbt prefix ''
sort words.txt >expected.txt
expect_out_file expected.txt
expect_status 0 "$QUERY" words.bbt get 'tab\there' 'a b'
expect_out $'tab\\there\na b'
expect_status 0 "$QUERY" words.bbt get --with-keys apple --format json
expect_out '{"key": "apple"}'
expect_status 0 "$QUERY" words.bbt prefix 'tab\t'
expect_out 'tab\there'
expect_status 2 "$QUERY" words.bbt prefix 'a\q'
expect_err 'bad escape'
expect_status 2 "$QUERY" numbers.bbt prefix 1
expect_err 'prefix works on bytes and fixed:N keys'
# Keys that look like commands or options.
printf 'first\t1\nget\t2\n-x\t3\n' | "$BUILD" -q -o odd.bbt
expect_status 0 "$QUERY" odd.bbt get first get
expect_out $'1\n2'
expect_status 0 "$QUERY" odd.bbt get -- -x
expect_out 3

# --- signed and fixed keys ------------------------------------------------------

printf -- '-5\tminus five\n7\tseven\n-9223372036854775808\tmin\n' >signed.tsv
expect_status 0 "$BUILD" -q --key-type i64 -o signed.bbt signed.tsv
expect_status 0 "$QUERY" signed.bbt get -5
expect_out 'minus five'
expect_status 0 "$QUERY" signed.bbt range --from=-10 --to 7
expect_out $'-5\tminus five\n7\tseven'
expect_status 0 "$QUERY" signed.bbt first
expect_out $'-9223372036854775808\tmin'
printf '00ff\t1\n0100\t2\n01ab\t3\n' | "$BUILD" -q --key-type fixed:2 --value-type u64 -o fixed.bbt
expect_status 0 "$QUERY" fixed.bbt prefix 01
expect_out $'0100\t2\n01ab\t3'
expect_status 0 "$QUERY" fixed.bbt get 01AB
expect_out 3
expect_status 2 "$QUERY" fixed.bbt prefix 0
expect_err 'is not hex of at most 2 bytes'

# --- open options, FILE from stdin, files that are not indexes -------------------

for options in --huge-pages --populate; do
  expect_status 0 "$QUERY" numbers.bbt $options range --from 30 --to 60
  in_range 30 60 >expected.txt
  expect_out_file expected.txt
done
expect_status 0 "$QUERY" - get 3 <numbers.bbt
expect_out 6
expect_status 2 "$QUERY" - get --stdin <numbers.bbt
# A pipe named by its path (a shell's <(...), a FIFO) is read like stdin:
# it cannot be mapped.
expect_status 0 "$QUERY" <(cat numbers.bbt) get 3
expect_out 6
mkfifo index.fifo
cat numbers.bbt >index.fifo &
expect_status 0 "$QUERY" index.fifo get 3 6
wait
expect_out $'6\n12'
expect_status 0 "$DUMP" <(cat numbers.bbt)
"$DUMP" numbers.bbt | cmp -s - out || fail "bbtree-dump <(cat FILE) differs from bbtree-dump FILE"
expect_status 3 "$QUERY" nonexistent.bbt get 1
expect_err 'nonexistent.bbt'
expect_status 1 "$QUERY" numbers.tsv get 1
expect_err 'numbers.tsv'
expect_err 'not a bbtree'
head -c 5000 numbers.bbt >truncated.bbt
expect_status 1 "$QUERY" truncated.bbt get 1
expect_err 'truncated.bbt'
expect_status 2 "$QUERY" numbers.bbt frobnicate
expect_status 0 "$QUERY" --version
grep -Eq '^bbtree-query [0-9]+\.[0-9]+\.[0-9]+$' out || fail "--version: $(cat out)"
grep -q 'reads 1\.x' out || fail "--version does not say which format it reads"
expect_status 0 "$QUERY" --help
grep -q '^Exit status:' out || fail "--help has no exit statuses"

echo "query: ok"
