#!/usr/bin/env python3
"""Composition of `nn-meter evaluate --kernels` runs: for each model, the sum of its kernels measured alone
against the model measured whole (Σ kernels / model − 1; negative: the network runs slower than its kernels),
with the label of model and kernels taken as the minimum of their repeats (the protocol's statistic), and the
mean over models for the minimum, median and mean of the repeats (whether the gap is an artefact of the
statistic). Needs results.json files that list each model's kernel_uses.

Usage: bench/composition_summary.py [LABEL=]RESULTS_JSON ...
"""
import json
import statistics
import sys

STATS = {"min": min, "median": statistics.median, "mean": statistics.mean}


def composition(results, statistic):
    kernels = {k["id"]: k for k in results["kernels"]}
    out = {}
    for m in results["models"]:
        if not m.get("kernel_uses") or not m["repeats_ms"]:
            continue
        if any(not kernels[u["id"]]["repeats_ms"] for u in m["kernel_uses"]):
            continue
        alone = sum(statistic(kernels[u["id"]]["repeats_ms"]) * u["groups"] for u in m["kernel_uses"])
        out[m["model"]] = alone / statistic(m["repeats_ms"]) - 1
    return out


def main(args):
    runs = []
    for a in args:
        label, _, path = a.rpartition("=")
        runs.append((label or path, json.load(open(path))))
    by_run = [(label, composition(r, min)) for label, r in runs]
    models = sorted({m for _, c in by_run for m in c})
    print("| model | " + " | ".join(label for label, _ in by_run) + " |")
    print("|---|" + "---|" * len(by_run))
    for m in models:
        print(f"| {m} | " + " | ".join(f"{100 * c[m]:+.1f} %" if m in c else "–" for _, c in by_run) + " |")
    for name, statistic in STATS.items():
        means = [statistics.mean(composition(r, statistic).values()) for _, r in runs]
        print(f"| **mean, {name} of repeats** | " + " | ".join(f"{100 * x:+.1f} %" for x in means) + " |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
