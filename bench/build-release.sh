# Sourced by bench/run.sh and bench/profile.sh: the Release build of the
# benchmark's programs, configured one way for both, so that a profile
# measures the code that the benchmark times.
#
#   bench_build "JOBS" TARGET...
#       installs the packages of the scripts/install-deps.sh JOBS (a fresh
#       machine has neither the library's packages nor the peers'), then
#       configures $build and builds the targets
#
# Build: Release with -O2 (CMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG"), the
# level Debian builds the peers' libraries with, and no -march=native: the
# peers come as generic x86-64 binaries, so bbtree is compiled for the same
# target.  Override with BBTREE_BENCH_CXX_FLAGS (e.g. "-O3 -march=native
# -DNDEBUG") and record the flags with the results.  BBTREE_BENCH_BUILD_DIR
# (default build-bench/) and BBTREE_BENCH_JOBS (default 2) as named.

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
build="${BBTREE_BENCH_BUILD_DIR:-$root/build-bench}"
flags="${BBTREE_BENCH_CXX_FLAGS:--O2 -DNDEBUG}"
jobs="${BBTREE_BENCH_JOBS:-2}"

bench_build() {
  local deps_jobs
  read -r -a deps_jobs <<<"$1"
  shift
  "$root/scripts/install-deps.sh" "${deps_jobs[@]}"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="$flags" \
    -DBBTREE_BUILD_BENCH=ON -DBBTREE_BUILD_TESTS=OFF -DBBTREE_BUILD_TOOLS=OFF >/dev/null
  cmake --build "$build" --target "$@" -j "$jobs"
}
