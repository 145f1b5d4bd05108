# The tools and their standard streams: a closed stderr is not a free
# descriptor for the index, a stderr that cannot be written loses the
# diagnostics but not the exit status, and a file size limit is an error.
source "$(dirname "$0")/helpers.bash" "$@"
VERIFY=$TOOLS/bbtree-verify

seq 1 200000 | awk '{print $1 "\t" $1}' >numbers.tsv

# With fd 2 closed, the staged index would take descriptor 2, and progress
# lines would be written into it.
"$BUILD" --progress --sorted --key-type u64 --value-type u64 -o closed.bbt numbers.tsv 2>&- ||
  fail "a build with stderr closed exited with $?"
expect_status 0 "$VERIFY" closed.bbt
"$TOOLS/bbtree-merge" --progress closed.bbt -o merged.bbt 2>&- ||
  fail "a merge with stderr closed exited with $?"
expect_status 0 "$VERIFY" merged.bbt

# Diagnostics into a full or vanished stderr: the status of the work, not
# an abort (134).
status=0
"$DUMP" missing.bbt 2>/dev/full || status=$?
[[ $status == 3 ]] || fail "bbtree-dump of a missing file, stderr full, exited with $status"
status=0
"$BUILD" --progress --key-type u64 --value-type u64 -o full.bbt numbers.tsv 2>/dev/full || status=$?
[[ $status == 0 ]] || fail "a build with stderr full exited with $status"
expect_status 0 "$VERIFY" full.bbt
# Every "not found" note goes to a pipe that head has closed.
set +o pipefail
seq 300000 400000 | "$QUERY" closed.bbt get --stdin 2>&1 | head -2 >/dev/null
status=${PIPESTATUS[1]}
set -o pipefail
[[ $status == 1 ]] || fail "bbtree-query get --stdin 2>&1 | head exited with $status, expected 1 (not found)"

# Over the shell's file size limit: an io_error (3) naming the file, no
# SIGXFSZ death (153), and nothing left behind.
status=0
(ulimit -f 64 && exec "$BUILD" -q --key-type u64 --value-type u64 -o limited.bbt numbers.tsv) \
  >out 2>err || status=$?
[[ $status == 3 ]] || fail "a build over ulimit -f exited with $status; stderr: $(cat err)"
expect_err "cannot write limited.bbt: File too large"
[[ ! -e limited.bbt ]] || fail "a build over ulimit -f left limited.bbt"
leftovers=$(find . -name '*bbtree-tmp*')
[[ -z $leftovers ]] || fail "a build over ulimit -f left $leftovers"
