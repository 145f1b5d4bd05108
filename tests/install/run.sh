#!/usr/bin/env bash
# ctest: installs the project into a prefix, moves the prefix, and builds and
# runs a consumer against the moved copy with CMake and with pkg-config, so
# that no build or install path can be baked in.
#   run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
mv "$work/prefix" "$work/moved"
test -x "$work/moved/bin/bbtree-build"
"$work/moved/bin/bbtree-build" --version >/dev/null

cmake -S "$source/tests/install/consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/moved" >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/consumer" "$work/cmake.bbt"
LD_LIBRARY_PATH="$work/moved/lib" "$work/consumer/consumer_c" "$work/cmake.bbt"

export PKG_CONFIG_PATH="$work/moved/lib/pkgconfig"
# shellcheck disable=SC2046
c++ -o "$work/pkgconfig-consumer" "$source/tests/install/consumer/consumer.cc" $(pkg-config --cflags --libs bbtree)
"$work/pkgconfig-consumer" "$work/pkgconfig.bbt"
cmp "$work/cmake.bbt" "$work/pkgconfig.bbt"
echo "install test passed"
