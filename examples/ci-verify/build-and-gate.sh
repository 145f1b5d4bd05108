#!/usr/bin/env bash
# Builds an index as a build artifact and lets it through only if
# `bbtree-verify --json` finds nothing wrong, as a CI job would
# (github-actions.yml beside this script is the same job for GitHub Actions).
# Then it shows what a failure looks like: it flips one byte in a page of a
# copy, and checks that the verifier reports that page and the gate fails.
#
#   examples/ci-verify/build-and-gate.sh [--tools DIR] [--out FILE] [--no-demo]
#                                        [INPUT.tsv [-- BUILD_OPTION...]]
#
#   --tools DIR   where bbtree-build and bbtree-verify are (default build/tools)
#   --out FILE    the artifact (default: a temporary file, removed at exit)
#   --no-demo     only build and gate, as a real CI job does
#   INPUT.tsv     entries, one a line (default examples/sample/numbers.tsv);
#                 the gate also checks that the index has one entry a line
#   BUILD_OPTION  bbtree-build's type options (default: --value-type u64)
#
# Exit status: 0 the artifact passed (and the damaged copy failed as it
# should); 1 the artifact failed verification, or the demonstration did not
# go as expected; 2 a usage error; 3 bbtree-verify could not read a file.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tools="$here/../../build/tools"
input="$here/../sample/numbers.tsv"
out=""
demo=1
build_options=(--value-type u64)

# The comment at the top of this file: on stdout for --help (usage 0), on
# stderr for a usage error (exit status 2).
usage() {
  local status=${1:-2} text
  text=$(awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0")
  if [ "$status" -eq 0 ]; then echo "$text"; else echo "$text" >&2; fi
  exit "$status"
}

while [ $# -gt 0 ]; do
  case "$1" in
    --tools) [ $# -ge 2 ] || usage; tools=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    --no-demo) demo=0; shift ;;
    --) shift; build_options=("$@"); break ;;
    -h|--help) usage 0 ;;
    -*) echo "build-and-gate.sh: unknown option '$1'" >&2; usage ;;
    *) input=$1; shift ;;
  esac
done
for tool in bbtree-build bbtree-verify; do
  [ -x "$tools/$tool" ] || { echo "build-and-gate.sh: no $tools/$tool (--tools DIR)" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=${out:-$work/artifact.bbt}

# The gate: reads bbtree-verify's JSON report and its exit status, prints
# every problem as the verifier's text output does, and exits 0 only for a
# report that says ok, agrees with the exit status, and counts
# $expected_entries entries in every file.
gate() {
  local report=$1 verify_status=$2 expected_entries=$3
  python3 - "$report" "$verify_status" "$expected_entries" <<'PYTHON'
import json
import sys

report_path, verify_status, expected_entries = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(report_path) as source:
    report = json.load(source)
passed = report["ok"] is True and verify_status == 0
if report["ok"] != (verify_status == 0):
    print("gate: the report's ok (%s) disagrees with exit status %d" % (report["ok"], verify_status))
    passed = False
for file in report["files"]:
    if file.get("error"):
        print("%s: cannot be read: %s" % (file["name"], file["error"]))
        continue
    for problem in file["problems"]:
        where = "page %d" % problem["page"] if problem["page"] is not None else problem["region"]
        print("%s: %s (offset %d): %s" % (file["name"], where, problem["offset"], problem["message"]))
    if file["ok"]:
        print("%s: ok (%d entries, %d bytes, %d pages)" % (file["name"], file["entries"], file["size"],
                                                          file["pages"]))
        if file["entries"] != expected_entries:
            print("gate: %s has %d entries, not %d" % (file["name"], file["entries"], expected_entries))
            passed = False
print("gate: %s" % ("passed" if passed else "FAILED"))
sys.exit(0 if passed else 1)
PYTHON
}

echo "== build the artifact"
"$tools/bbtree-build" "$input" -o "$out" --force --quiet "${build_options[@]}"
entries=$(wc -l < "$input")

echo "== gate on bbtree-verify --json"
verify_status=0
"$tools/bbtree-verify" --json "$out" > "$work/report.json" || verify_status=$?
if [ "$verify_status" -ge 2 ]; then
  cat "$work/report.json"
  echo "build-and-gate.sh: bbtree-verify exited with $verify_status" >&2
  exit "$verify_status"
fi
gate "$work/report.json" "$verify_status" "$entries"  # a failure here ends the script: set -e

[ "$demo" -eq 1 ] || exit 0

echo
echo "== what a failure looks like: one byte flipped in page 1 of a copy"
damaged="$work/damaged.bbt"
cp "$out" "$damaged"
# Page 1 starts one page into the file; its checksum covers this byte.
page_size=$("$tools/bbtree-dump" --header "$out" 2>/dev/null | sed -n 's/^page_size: //p' || true)
page_size=${page_size:-4096}
offset=$((page_size + 100))
python3 - "$damaged" "$offset" <<'PYTHON'
import sys

path, offset = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as file:
    file.seek(offset)
    before = file.read(1)[0]
    file.seek(offset)
    file.write(bytes([before ^ 0x01]))
print("flipped the lowest bit of byte %d: %#04x -> %#04x" % (offset, before, before ^ 0x01))
PYTHON

echo "-- bbtree-verify $(basename "$damaged")"
text_status=0
"$tools/bbtree-verify" "$damaged" || text_status=$?
echo "-- exit status $text_status"

echo "-- bbtree-verify --json $(basename "$damaged")"
json_status=0
"$tools/bbtree-verify" --json "$damaged" > "$work/damaged.json" || json_status=$?
cat "$work/damaged.json"
echo "-- exit status $json_status"

echo "-- the gate on that report"
gate_status=0
gate "$work/damaged.json" "$json_status" "$entries" || gate_status=$?
echo "-- gate exit status $gate_status"

# The demonstration itself must go as described, or the gate is not a gate.
if [ "$text_status" -ne 1 ] || [ "$json_status" -ne 1 ] || [ "$gate_status" -ne 1 ]; then
  echo "build-and-gate.sh: the damaged copy should give exit status 1 everywhere" >&2
  exit 1
fi
python3 - "$work/damaged.json" "$offset" "$page_size" <<'PYTHON'
import json
import sys

report = json.load(open(sys.argv[1]))
offset, page_size = int(sys.argv[2]), int(sys.argv[3])
problems = [problem for file in report["files"] for problem in file["problems"]]
# The damaged page is named, and the first problem found lies within it.
if not problems or problems[0]["page"] != 1 or not page_size <= problems[0]["offset"] <= offset:
    sys.exit("build-and-gate.sh: the report does not name page 1: %r" % problems[:1])
PYTHON
echo "== the artifact passed; the damaged copy failed, naming page 1"
