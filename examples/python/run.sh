#!/usr/bin/env bash
# ctest: builds the sample index and checks the Python example's output.
set -euo pipefail
build_tool=$1 library=$2 sample=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build_tool" "$sample" -o "$work/numbers.bbt" --value-type u64 --quiet
python3 "$here/lookup.py" "$library" "$work/numbers.bbt" forty-two "one hundred" > "$work/out"
cat > "$work/expected" <<'EXPECTED'
5001 entries
forty-two	42
one hundred	100
scan	ninety	90
scan	ninety-eight	98
scan	ninety-five	95
EXPECTED
diff "$work/expected" "$work/out"
