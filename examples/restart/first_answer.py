#!/usr/bin/env python3
"""Starts a lookup service as a fresh process and measures the time to its
first answer, from outside.

    first_answer.py [--evict FILE]... QUERIES OUTPUT -- COMMAND [ARG...]

QUERIES holds one key per line, or KEY<TAB>ANSWER lines of which only the key
is sent.  The clock (CLOCK_MONOTONIC) starts just before the process is
spawned; the first key is written to its stdin at once (the pipe holds it
until the service reads it), and the clock stops when the parent has read
the first answer line.
So the time covers fork and exec, dynamic linking, the service's loading,
the first lookup and the pipe back: what a client waiting after a restart
sees.  The remaining keys follow, and every answer goes to OUTPUT.

--evict FILE drops FILE's pages from the page cache first (fsync, then
POSIX_FADV_DONTNEED; no privileges needed), for a start with cold data; the
program and its libraries stay cached.

Prints one line: "EXTERNAL_MS INTERNAL_MS", where INTERNAL_MS is what the
service itself reported on stderr ("first answer after T ms": from its
main() to the flush of its first answer).  Exits non-zero if the service
fails or gives no answer.
"""
import os
import re
import subprocess
import sys
import time


def evict(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # dirty pages would stay in the cache
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main(argv):
    evictions = []
    while argv and argv[0] == "--evict":
        evictions.append(argv[1])
        argv = argv[2:]
    if len(argv) < 4 or argv[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    queries_path, output_path, command = argv[0], argv[1], argv[3:]
    with open(queries_path, "rb") as queries:
        keys = [line.split(b"\t", 1)[0].rstrip(b"\n") + b"\n" for line in queries]
    if not keys:
        print("first_answer.py: no queries", file=sys.stderr)
        return 2
    for path in evictions:
        evict(path)

    start = time.monotonic_ns()
    service = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    service.stdin.write(keys[0])
    service.stdin.flush()
    first = service.stdout.readline()
    external_ms = (time.monotonic_ns() - start) / 1e6
    rest, errors = service.communicate(b"".join(keys[1:]))
    with open(output_path, "wb") as output:
        output.write(first + rest)
    if service.returncode != 0 or not first:
        sys.stderr.write(errors.decode(errors="replace"))
        print(f"first_answer.py: {command[0]} exited with {service.returncode}", file=sys.stderr)
        return 1
    reported = re.search(rb"first answer after ([0-9.]+) ms", errors)
    if not reported:
        sys.stderr.write(errors.decode(errors="replace"))
        print(f"first_answer.py: {command[0]} did not report its first answer", file=sys.stderr)
        return 1
    print(f"{external_ms:.3f} {float(reported.group(1)):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
