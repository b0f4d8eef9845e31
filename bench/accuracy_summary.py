#!/usr/bin/env python3
"""Reads an `nn-meter evaluate` results.json and prints what bench/RESULTS-accuracy.md quotes: the summary next
to the measurement's repeatability, the mean error per family, the same scored against the run's common level
(every prediction times the median measured/predicted ratio: a diagnostic of how much of the error is one
shared offset, not a claim), and with `--kernels` results the per-kernel-type split.

Usage: bench/accuracy_summary.py RESULTS_JSON [RESULTS_JSON_WITH_KERNELS]
"""
import json
import statistics
import sys


def share(errors, bound):
    return 100.0 * sum(abs(e) <= bound for e in errors) / len(errors)


def rmspe(errors):
    return 100.0 * (sum(e * e for e in errors) / len(errors)) ** 0.5


def line(name, errors):
    return (f"{name}: {len(errors)} models, RMSPE {rmspe(errors):.1f} %, ±5 % {share(errors, 0.05):.1f} %, "
            f"±10 % {share(errors, 0.10):.1f} %, mean {100 * statistics.mean(errors):+.1f} %")


def main(path, kernels_path=None):
    results = json.load(open(path))
    scored = [m for m in results["models"] if m["error"] is not None]
    errors = [m["error"] for m in scored]
    print(line("as predicted", errors))
    halves = [m["split_half_deviation"] for m in scored if m["split_half_deviation"] is not None]
    print(f"repeatability (split-half of the repeats): ±5 % {share(halves, 0.05):.1f} %, ±10 % {share(halves, 0.10):.1f} %")
    level = statistics.median(m["measured_ms"] / m["predicted_ms"] for m in scored)
    leveled = [m["predicted_ms"] * level / m["measured_ms"] - 1 for m in scored]
    print(line(f"against the common level (x{level:.3f})", leveled))
    print("\n| family | models | mean error | ±10 % | mean error at the common level |")
    print("|---|---|---|---|---|")
    families = sorted({m["family"] for m in scored})
    for f in families:
        e = [m["error"] for m in scored if m["family"] == f]
        le = [x for m, x in zip(scored, leveled) if m["family"] == f]
        print(f"| {f} | {len(e)} | {100 * statistics.mean(e):+.1f} % | {share(e, 0.10):.0f} % | {100 * statistics.mean(le):+.1f} % |")
    if kernels_path:
        k = json.load(open(kernels_path))
        print("\n| model | prediction | kernel predictors | composition |\n|---|---|---|---|")
        splits = [m for m in k["models"] if m.get("predictor_error") is not None and m.get("composition_error") is not None]
        for m in splits:
            print(f"| {m['model']} | {100 * m['error']:+.1f} % | {100 * m['predictor_error']:+.1f} % | "
                  f"{100 * m['composition_error']:+.1f} % |")
        if splits:
            print(f"| **mean** | {100 * statistics.mean(m['error'] for m in splits):+.1f} % | "
                  f"{100 * statistics.mean(m['predictor_error'] for m in splits):+.1f} % | "
                  f"{100 * statistics.mean(m['composition_error'] for m in splits):+.1f} % |")
        print("\n| kernel | configs | measured | within ±10 % | RMSPE | Σ predicted / Σ measured |\n|---|---|---|---|---|---|")
        for name, t in sorted(k.get("by_kernel_type", {}).items(), key=lambda kv: -kv[1]["measured_ms"]):
            ratio = t["predicted_ms"] / t["measured_ms"] - 1 if t["measured_ms"] else float("nan")
            print(f"| {name} | {t['configs']} | {t['measured']} | {100 * t['within10']:.0f} % | {t['rmspe']:.1f} % | "
                  f"{100 * ratio:+.1f} % |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
