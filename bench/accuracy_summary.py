#!/usr/bin/env python3
"""Reads an `nn-meter evaluate` results.json and prints what bench/RESULTS-accuracy.md quotes: the summary next
to the measurement's repeatability, the mean error per family, the same scored against the run's common level
(every prediction times the median measured/predicted ratio: a diagnostic of how much of the error is one
shared offset, not a claim) and with the factor fitted leave-one-family-out (from the other families only: what
one factor learnt on other networks would give), with `--kernels` results the per-kernel-type split, and with
`--again` how well the same models measured in another run agree with these measurements.

Usage: bench/accuracy_summary.py RESULTS_JSON [RESULTS_JSON_WITH_KERNELS] [--again OTHER_RESULTS_JSON]
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


def agreement(path, other_path):
    """Two runs' measurements of the same models: the ratio and the share agreeing within ±5 % / ±10 %."""
    first = {m["model"]: m["measured_ms"] for m in json.load(open(path))["models"] if m["measured_ms"]}
    other = {m["model"]: m["measured_ms"] for m in json.load(open(other_path))["models"] if m["measured_ms"]}
    ratios = [other[k] / first[k] for k in first if k in other]
    deviations = [abs(r - 1) / min(1, r) for r in ratios]
    print(f"\nthe other run against this one, {len(ratios)} models: median ratio {statistics.median(ratios):.3f} "
          f"({min(ratios):.2f}..{max(ratios):.2f}), agreeing within ±5 % {share(deviations, 0.05):.1f} %, "
          f"±10 % {share(deviations, 0.10):.1f} %")


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
    families = sorted({m["family"] for m in scored})
    held_out = []
    for f in families:
        factor = statistics.median(m["measured_ms"] / m["predicted_ms"] for m in scored if m["family"] != f)
        held_out += [m["predicted_ms"] * factor / m["measured_ms"] - 1 for m in scored if m["family"] == f]
    print(line("one factor fitted leave-one-family-out", held_out))
    print("\n| family | models | mean error | ±10 % | mean error at the common level |")
    print("|---|---|---|---|---|")
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
    args = sys.argv[1:]
    again = None
    if "--again" in args:
        i = args.index("--again")
        again = args[i + 1]
        del args[i:i + 2]
    main(*args[:2])
    if again:
        agreement(args[0], again)
