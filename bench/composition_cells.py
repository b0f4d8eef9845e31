#!/usr/bin/env python3
"""Can a kernel's slowdown inside a network be learned from other networks, layer by layer? Fits, on the steps
of a set of networks timed inside them (bench/run_composition_steps.sh, e.g. the 72 calibration networks), the
ratio "inside the network / alone" per predictor kernel type and per MB the network moved before the step (the
buckets of composition_steps.py), then scales each kernel of the evaluated networks by its cell and scores the
sums against the networks measured by `nn-meter evaluate --kernels` (bench/run_oracle_bench.sh's results.json):
the predictor's kernels and the kernels measured alone, each plain, with one factor (fitted on the evaluated
networks, or with the family held out), by type only, and by type × MB. Pure Python.

    composition_cells.py STEPS(OUT_DIR|.jsonl.gz) [ORACLE_RESULTS_JSON(.gz)]
"""
import collections
import gzip
import sys

import composition_steps as cs
import oracle_bound as ob

MIN_CELL_MS = 0.05  # a cell with less time alone than this falls back to its kernel type's ratio


def bucket(mb):
    return next(i for i in range(len(cs.BUCKETS) - 1) if mb < cs.BUCKETS[i + 1])


def fit_cells(data):
    """{(kernel type, bucket or -1): (Σ inside, Σ alone)} over every network step that a kernel model of the
    network runs too (its distinct kernels, so matched with replacement)."""
    cells = collections.defaultdict(lambda: [0.0, 0.0])
    for (model, protocol), net in data.items():
        if protocol != "cold0" or "kernel_ids" not in net:
            continue
        alone = {}
        for kid in net["kernel_ids"]:
            for s in data[(kid, "cold0")]["steps"]:
                alone.setdefault(cs.key(s), (kid.split("@")[0], s["ms"]))
        moved = 0.0
        for s in net["steps"]:
            b = bucket(moved)
            moved += cs.step_mb(s)
            if cs.key(s) in alone:
                kind, ms = alone[cs.key(s)]
                for cell in ((kind, b), (kind, -1), ("*", -1)):
                    cells[cell][0] += s["ms"]
                    cells[cell][1] += ms
    return cells


def ratio(cells, kind, b):
    for cell in ((kind, b), (kind, -1), ("*", -1)):
        inside, alone = cells.get(cell, (0.0, 0.0))
        if alone > MIN_CELL_MS or cell == ("*", -1):
            return inside / alone


def main():
    cells = fit_cells(cs.load(sys.argv[1]))
    oracle_path = sys.argv[2] if len(sys.argv) > 2 else cs.DEFAULT_ORACLE
    with (gzip.open if oracle_path.endswith(".gz") else open)(oracle_path, "rt") as f:
        doc = __import__("json").load(f)
    kernels = {k["id"]: k for k in doc["kernels"]}
    rows = []
    for m in doc["models"]:
        sums = collections.Counter()
        moved = 0.0
        for use in m["kernel_uses"]:
            k, groups = kernels[use["id"]], use["groups"]
            by_type, by_cell = ratio(cells, k["kernel"], -1), ratio(cells, k["kernel"], bucket(moved))
            for source, ms in (("predicted", use["predicted_ms"]), ("alone", k["measured_ms"] * groups)):
                sums[source] += ms
                sums[source + " × type"] += ms * by_type
                sums[source + " × type, MB"] += ms * by_cell
            moved += sum(ob.kernel_bytes(k["kernel"], k["config"])) * groups
        rows.append({"family": m["family"], "measured": m["measured_ms"], **sums})
    print(f"cells fitted on {sys.argv[1]}: {sum(1 for c in cells if c[1] >= 0)} (kernel type, MB) cells; "
          f"scored on {len(rows)} networks of {oracle_path}")
    for source in [s + t for s in ("predicted", "alone") for t in ("", " × type", " × type, MB")]:
        plain = [r[source] / r["measured"] - 1 for r in rows]
        factor = sum(r["measured"] / r[source] for r in rows) / len(rows)
        held_out = []
        for r in rows:
            train = [x for x in rows if x["family"] != r["family"]]
            held_out.append(r[source] * sum(x["measured"] / x[source] for x in train) / len(train) / r["measured"] - 1)
        print(f"  {source:20s} plain {ob.score(plain)}\n  {'':20s} factor in sample "
              f"{ob.score([r[source] * factor / r['measured'] - 1 for r in rows])}\n  {'':20s} factor family out "
              f"{ob.score(held_out)}")


if __name__ == "__main__":
    main()
