# Sourced by every tests/cli/*.sh script (this file is not a test itself):
#   source "$(dirname "$0")/helpers.bash" "$@"
# Takes the tools directory, runs the test in a fresh directory that is
# removed at exit, and gives the checks below.  A failed check exits 1.
set -euo pipefail
export LC_ALL=C

TOOLS=$(cd "${1:?usage: bash $0 TOOLS_DIR}" && pwd)
BUILD=$TOOLS/bbtree-build
QUERY=$TOOLS/bbtree-query
DUMP=$TOOLS/bbtree-dump
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

# fail MESSAGE: reports the line of the test script that failed, and exits.
fail() {
  local frame where=""
  for ((frame = 1; frame < ${#BASH_SOURCE[@]}; frame++)); do
    if [[ ${BASH_SOURCE[frame]} != *helpers.bash ]]; then
      where="${BASH_SOURCE[frame]##*/}:${BASH_LINENO[frame - 1]}"
      break
    fi
  done
  echo "FAIL ($where): $*" >&2
  exit 1
}

# expect_status STATUS COMMAND...: runs COMMAND with stdout to ./out and
# stderr to ./err and checks its exit status.
expect_status() {
  local want=$1
  shift
  local got=0
  "$@" >out 2>err || got=$?
  if [[ $got != "$want" ]]; then
    fail "'$*' exited with $got, expected $want; stderr: $(head -c 2000 err)"
  fi
}

# expect_err TEXT: ./err contains TEXT (a fixed string).
expect_err() {
  grep -qF -- "$1" err || fail "stderr lacks '$1'; it is: $(head -c 2000 err)"
}

# expect_err_line TEXT: ./err is exactly the one line TEXT.
expect_err_line() {
  [[ "$(cat err)" == "$1" ]] || fail "stderr is '$(head -c 2000 err)', expected '$1'"
}

# expect_out TEXT: ./out holds exactly TEXT (a trailing newline is added).
expect_out() {
  printf '%s\n' "$1" >expected
  cmp -s out expected || fail "stdout differs from expected: $(diff out expected | head -20)"
}

# expect_out_file FILE: ./out equals FILE.
expect_out_file() {
  cmp -s out "$1" || fail "stdout differs from $1: $(diff out "$1" | head -20)"
}

expect_same_file() {
  cmp -s "$1" "$2" || fail "$1 and $2 differ"
}

expect_no_file() {
  [[ ! -e $1 ]] || fail "$1 exists"
}
