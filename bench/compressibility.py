#!/usr/bin/env python3
"""How small the entries of an index could be, coded entry by entry.

Reads `bbtree-dump --format jsonl FILE` on standard input (keys and values
that are UTF-8 text, as the benchmark's path-like dataset's are) and prints,
in bytes an entry:

  raw key, raw value        the bytes as bbtree stores them now
  huffman value             each value coded alone with one order-0 Huffman
                            code for all values, rounded up to whole bytes
  front-coded key suffix    each key less the prefix it shares with the key
                            before it (restarting nowhere: a lower bound)
  huffman key suffix        those suffixes coded as the values are
  coded entry               huffman value + huffman key suffix, before any
                            length, offset, page or inner-level overhead

With --compare BYTES (another store's bytes an entry, e.g. LMDB's from the
benchmark), each figure is also given as a ratio to it.  This is an
estimate for a format bbtree does not have (bench/README.md), not a
measurement of one.
"""
import argparse
import collections
import heapq
import json
import sys


def huffman_code_lengths(frequencies):
    """The code length of each symbol in a Huffman code for these counts."""
    if len(frequencies) == 1:
        return {symbol: 1 for symbol in frequencies}
    heap = [(count, order, [symbol]) for order, (symbol, count) in enumerate(frequencies.items())]
    heapq.heapify(heap)
    lengths = collections.Counter()
    order = len(heap)
    while len(heap) > 1:
        count_a, _, symbols_a = heapq.heappop(heap)
        count_b, _, symbols_b = heapq.heappop(heap)
        for symbol in symbols_a + symbols_b:
            lengths[symbol] += 1
        order += 1
        heapq.heappush(heap, (count_a + count_b, order, symbols_a + symbols_b))
    return lengths


def coded_bytes(strings):
    """Bytes of all strings, each coded alone with one shared Huffman code."""
    frequencies = collections.Counter()
    for text in strings:
        frequencies.update(text)
    if not frequencies:
        return 0
    lengths = huffman_code_lengths(frequencies)
    return sum((sum(lengths[byte] for byte in text) + 7) // 8 for text in strings)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--compare", type=float, help="another store's bytes an entry")
    arguments = parser.parse_args()

    keys, values = [], []
    for line in sys.stdin:
        entry = json.loads(line)
        keys.append(entry["key"].encode())
        values.append(entry["value"].encode())
    if not keys:
        sys.exit("compressibility.py: no entries on standard input")

    suffixes = []
    previous = b""
    for key in keys:
        shared = 0
        limit = min(len(key), len(previous))
        while shared < limit and key[shared] == previous[shared]:
            shared += 1
        suffixes.append(key[shared:])
        previous = key

    count = len(keys)
    value_code = coded_bytes(values)
    suffix_code = coded_bytes(suffixes)
    rows = [
        ("entries", count, None),
        ("raw key", sum(map(len, keys)) / count, True),
        ("raw value", sum(map(len, values)) / count, True),
        ("huffman value", value_code / count, True),
        ("front-coded key suffix", sum(map(len, suffixes)) / count, True),
        ("huffman key suffix", suffix_code / count, True),
        ("coded entry", (value_code + suffix_code) / count, True),
    ]
    for name, figure, per_entry in rows:
        if per_entry is None:
            print(f"{name}: {figure}")
        elif arguments.compare:
            print(f"{name}: {figure:.1f} B ({figure / arguments.compare:.3f} of {arguments.compare} B)")
        else:
            print(f"{name}: {figure:.1f} B")


if __name__ == "__main__":
    main()
