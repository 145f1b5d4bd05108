#!/usr/bin/env bash
# Installs the Debian 12 packages a job needs, only when some are missing.
#   scripts/install-deps.sh build   compilers, CMake, the libraries
#   scripts/install-deps.sh test    build + clang/libFuzzer, clang-format and Python
#   scripts/install-deps.sh bench   build + the peers the benchmark runs
#   scripts/install-deps.sh profile build + valgrind (bench/profile.sh)
set -euo pipefail

build_packages=(g++ cmake ninja-build pkg-config libboost-dev libcli11-dev libfmt-dev catch2 python3)
test_packages=(clang libclang-rt-14-dev clang-format)
bench_packages=(liblmdb-dev libmtbl-dev libmarisa-dev libsqlite3-dev libabsl-dev libcdb-dev libxxhash-dev)
profile_packages=(valgrind)

wanted=("${build_packages[@]}")
for job in "$@"; do
  case "$job" in
    build) ;;
    test) wanted+=("${test_packages[@]}") ;;
    bench) wanted+=("${bench_packages[@]}") ;;
    profile) wanted+=("${profile_packages[@]}") ;;
    *) echo "install-deps.sh: unknown job '$job' (build, test, bench or profile)" >&2; exit 2 ;;
  esac
done

missing=()
for package in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps.sh: installing ${missing[*]}" >&2
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
