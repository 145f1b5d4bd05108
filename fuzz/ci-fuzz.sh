#!/usr/bin/env bash
# CI's fuzzing step: builds the fuzz preset (clang, libFuzzer, ASan + UBSan),
# replays every seed and committed regression (ctest --preset fuzz), then runs
# every target for a bounded time from the generated seeds and the
# regressions.  Fails on any crash, sanitizer report, timeout or finding.
#
#   FUZZ_SECONDS   seconds per target (default 60)
#   FUZZ_TARGETS   targets to run (default: all six)
#   FUZZ_JOBS      targets to run at once (default 1)
# Crashes are left in build-fuzz/fuzz/artifacts/TARGET/ (CI keeps them);
# minimize one and commit it under fuzz/regressions/TARGET/ (fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-open_query verify mutated_file build_differential text_parsers manifest}
jobs=${FUZZ_JOBS:-1}
build_jobs=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}

echo "== ci-fuzz: build (preset fuzz)"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$build_jobs"

echo "== ci-fuzz: replay the seeds and the regressions"
ctest --preset fuzz -j "$build_jobs"

echo "== ci-fuzz: ${seconds} s per target"
logs=build-fuzz/fuzz/logs
mkdir -p "$logs"
failed=()
running=()
wait_one() {
  local pid=${running[0]%%:*} target=${running[0]#*:}
  running=("${running[@]:1}")
  if wait "$pid"; then
    echo "-- $target: no crash ($(grep -h 'stat::number_of_executed_units' "$logs/$target.log" | awk '{print $2}') runs)"
  else
    echo "-- $target: FAILED; the end of its log:"
    tail -n 60 "$logs/$target.log"
    failed+=("$target")
  fi
}
for target in $targets; do
  while [ ${#running[@]} -ge "$jobs" ]; do wait_one; done
  echo "-- $target: fuzzing for ${seconds} s"
  fuzz/run-target.sh "$target" "$seconds" >"$logs/$target.log" 2>&1 &
  running+=("$!:$target")
done
while [ ${#running[@]} -gt 0 ]; do wait_one; done

if [ ${#failed[@]} -gt 0 ]; then
  echo "== ci-fuzz: FAILED: ${failed[*]}; crashes in build-fuzz/fuzz/artifacts/" >&2
  exit 1
fi
echo "== ci-fuzz: every target ran ${seconds} s without a crash"
