#!/usr/bin/env python3
"""Checks a bbtree-bench CSV against the speed targets of issue #5.

    bench/targets.py bench/out/results.csv > bench/out/targets.md

Every target is a ratio between two figures of the same run, so that the
machine's noise moves both sides.  Where the peer's row is paired (its reps
alternated with a bbtree index of the same data, column
paired_bbtree_median), the ratio is the paired one, the median of the
per-rep ratios, and bbtree's figure is the median of its paired reps.
get_many's target uses the lone lookups that alternated with its reps on
the same index (columns alternated_single_median and over_single).
Each row gives both figures, the ratio, the bar and whether it was met; a
figure missing from the CSV (a peer or a dataset not run) gives "not
measured", never a pass.
"""

import csv
import sys


def load(path):
    figures = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["dataset"], row["peer"], row["metric"], row["hugepages"])
            paired = None
            if row.get("paired_bbtree_median"):
                # ratio_vs_bbtree is then the paired ratio, peer over bbtree.
                paired = (float(row["paired_bbtree_median"]), float(row["ratio_vs_bbtree"]))
            alternated = None
            if row.get("over_single"):
                # A batched row whose reps alternated with lone lookups of
                # the same keys: their median, and the median per-rep ratio.
                alternated = (float(row["alternated_single_median"]), float(row["over_single"]))
            figures[key] = (float(row["median"]), row["unit"], paired, row["hugepages"], alternated)
    return figures


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: targets.py RESULTS.csv")
    figures = load(sys.argv[1])

    def get(dataset, peer, metric, hp):
        # Metrics without a huge-page mode are recorded under "-"; in-memory
        # peers only under "off".
        for mode in (hp, "off", "-"):
            if (dataset, peer, metric, mode) in figures:
                return figures[(dataset, peer, metric, mode)]
        return None

    rows = []

    def ratio_row(target, bar, dataset, metric, hp, peer, other_peer=None, other_metric=None, scale=1.0,
                  strict=False):
        """bbtree's figure over the peer's (times scale) must be <= bar (< bar when strict)."""
        mine = get(dataset, peer, metric, hp)
        theirs = get(dataset, other_peer or "bbtree", other_metric or metric, hp)
        if mine is None or theirs is None:
            rows.append((target, hp, "not measured", "", f"{'<' if strict else '<='} {bar:g}", "not measured"))
            return
        value, unit, _, _, alternated = mine
        other, other_unit, paired, their_hp, _ = theirs
        ratio = value / (other * scale)
        if alternated is not None and other_metric == "lookup_hit" and other_peer == peer:
            # A batch against lone lookups of the same index: the figures of
            # the lone lookups that alternated with the batch's reps.
            other, ratio = alternated
            other_unit += " (alternated)"
        if paired is not None and peer == "bbtree" and other_metric is None and their_hp == hp:
            # bbtree against a peer, both read in the same setting: the paired figures.
            value, ratio = paired[0], 1.0 / paired[1]
            unit += " (paired)"
        if bar == float("inf"):  # reported beside a target, not a target
            rows.append((target, hp, f"{value:.4g} {unit}", f"{other:.4g} {other_unit}", "reported",
                         f"{ratio:.3g}"))
            return
        met = ratio < bar if strict else ratio <= bar
        shown_other = f"{other:.4g} {other_unit}" if scale == 1.0 else f"{other:.4g} {other_unit} x {scale:g}"
        # Three digits, or four where three would print the bar itself
        # ("0.3 MISSED" for 0.3004).
        shown_ratio = f"{ratio:.3g}" if float(f"{ratio:.3g}") != bar else f"{ratio:.4g}"
        rows.append((target, hp, f"{value:.4g} {unit}", shown_other, f"{'<' if strict else '<='} {bar:g}",
                     f"{shown_ratio} {'met' if met else 'MISSED'}"))

    def absolute_row(target, bar, dataset, metric, hp, peer="bbtree"):
        mine = get(dataset, peer, metric, hp)
        if mine is None:
            rows.append((target, hp, "not measured", "", f"<= {bar:g}", "not measured"))
            return
        value, unit, _, _, _ = mine
        met = value <= bar
        rows.append((target, hp, f"{value:.4g} {unit}", "", f"<= {bar:g} {unit}", "met" if met else "MISSED"))

    for hp in ("off", "on"):
        d = "u64-10M"
        ratio_row("point lookup hit, 10M u64, vs sorted array", 0.7, d, "lookup_hit", hp, "bbtree", "sorted-array")
        ratio_row("point lookup hit, 10M u64, vs absl::btree_map", 0.7, d, "lookup_hit", hp, "bbtree",
                  "absl::btree_map")
        ratio_row("point lookup hit, 10M u64, vs LMDB", 0.3, d, "lookup_hit", hp, "bbtree", "lmdb")
        ratio_row("point lookup miss, 10M u64, vs sorted array", 0.7, d, "lookup_miss", hp, "bbtree",
                  "sorted-array")
        s = "str-1M"
        ratio_row("path-like keys, lookup hit, vs LMDB", 0.5, s, "lookup_hit", hp, "bbtree", "lmdb")
        for peer in ("sorted-array", "absl::btree_map", "mtbl", "sqlite"):
            ratio_row(f"path-like keys, lookup hit, vs {peer}", 1.0, s, "lookup_hit", hp, "bbtree", peer,
                      strict=True)
        for dataset in ("u64-10M", "str-1M"):
            ratio_row(f"get_many vs single lookups, {dataset}", 0.5, dataset, "batch_hit", hp, "bbtree", "bbtree",
                      "lookup_hit")
        ratio_row("open + first answer, 10M u64, vs std::map rebuild / 10,000", 1.0, d, "open_answer_warm", hp,
                  "bbtree", "std::map", "build_unsorted", scale=0.1)  # ms / 10,000 in us
        ratio_row("open + first answer, 10M u64, vs LMDB", 1.0, d, "open_answer_warm", hp, "bbtree", "lmdb",
                  strict=True)
        absolute_row("full scan, 10M u64", 1.5, d, "full_scan", hp)
        ratio_row("100-entry scans, 10M u64, vs sorted array", 0.7, d, "scan100", hp, "bbtree", "sorted-array")
    # Build and size figures have no huge-page mode.
    d = "u64-10M"
    absolute_row("file size, 10M u64 -> u64 (1.05 x 16 B)", 16.8, d, "bytes_per_entry", "-")
    ratio_row("file size, path-like keys, vs LMDB", 0.5, "str-1M", "bytes_per_entry", "-", "bbtree", "lmdb")
    ratio_row("file size, path-like keys, vs mtbl (reported)", float("inf"), "str-1M", "bytes_per_entry", "-",
              "bbtree", "mtbl")
    for dataset in ("u64-1M", "u64-10M"):
        ratio_row(f"build from sorted input, {dataset}, vs mtbl", 0.5, dataset, "build_sorted", "-", "bbtree", "mtbl")
        ratio_row(f"build from sorted input, {dataset}, vs LMDB", 0.25, dataset, "build_sorted", "-", "bbtree",
                  "lmdb")

    print("| target | hp | bbtree | peer | bar (ratio) | ratio |")
    print("|---|---|---:|---:|---:|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
