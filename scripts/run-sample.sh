#!/usr/bin/env bash
# The main job on the shipped sample: build everything, build an index from
# examples/sample/numbers.tsv (English number names -> their values, in no
# particular order), query it and print the answers.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBBTREE_BUILD_TESTS=OFF >/dev/null
cmake --build build -j "$(nproc)"

mkdir -p out
index=out/numbers.bbt
build/tools/bbtree-build examples/sample/numbers.tsv -o "$index" --key-type bytes --value-type u64 --force
build/tools/bbtree-verify "$index"

run() {
  echo "\$ bbtree-query $index $*"
  build/tools/bbtree-query "$index" "$@"
}
run get --with-keys forty-two "one thousand and one" "four thousand nine hundred and ninety-nine"
run prefix "twenty-" --limit 5
run range --from "nine" --to "nine hundred" --limit 4
run count --from "a" --before "b"
run first
run last
