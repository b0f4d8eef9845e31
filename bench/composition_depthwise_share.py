#!/usr/bin/env python3
"""Does the composition term need more than the footprint? On an `evaluate --calibrate-on` run's results.json
(calibration_models and models, with kernels_ms_by_type), fits ln((measured - fc) / (kernels - fc)) by least
squares on the calibration networks with three feature sets: ln footprint (the library's form, fc unscaled,
without its clamp), ln footprint + the share of the kernel time in depthwise kernels, and that share alone; then
scores each on the evaluated networks (±5 %, ±10 %, RMSPE, mean error).
Usage: bench/composition_depthwise_share.py RESULTS_JSON [RESULTS_JSON ...]
"""
import json
import math
import sys


def solve(a, b):
    n = len(a)
    m = [row[:] + [v] for row, v in zip(a, b)]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[p] = m[p], m[i]
        for r in range(n):
            if r != i:
                f = m[r][i] / m[i][i]
                m[r] = [x - f * y for x, y in zip(m[r], m[i])]
    return [m[i][n] / m[i][i] for i in range(n)]


def lstsq(x, y, w=None):
    """Least squares of y on the rows of x, each row weighted by w (default 1)."""
    w = w or [1.0] * len(y)
    k = len(x[0])
    return solve([[sum(wi * r[i] * r[j] for r, wi in zip(x, w)) for j in range(k)] for i in range(k)],
                 [sum(wi * r[i] * t for r, t, wi in zip(x, y, w)) for i in range(k)])


def features(m):
    by = m["kernels_ms_by_type"]
    depthwise = sum(v for k, v in by.items() if k.startswith("dwconv")) / sum(by.values())
    return [1.0, math.log(m["footprint_mb"]), depthwise], by.get("fc", 0.0)


def fit(calibration, use):
    x, y = [], []
    for m in calibration:
        f, fc = features(m)
        x.append([f[i] for i in use])
        y.append(math.log((m["measured_ms"] - fc) / (m["kernels_ms"] - fc)))
    return lstsq(x, y)


def score(models, coef, use):
    errors = []
    for m in models:
        f, fc = features(m)
        factor = math.exp(sum(c * f[i] for c, i in zip(coef, use)))
        errors.append((fc + (m["kernels_ms"] - fc) * factor) / m["measured_ms"] - 1)
    n = len(errors)
    return (100 * sum(abs(e) <= 0.05 for e in errors) / n, 100 * sum(abs(e) <= 0.10 for e in errors) / n,
            100 * math.sqrt(sum(e * e for e in errors) / n), 100 * sum(errors) / n)


if __name__ == "__main__":
    for path in sys.argv[1:]:
        d = json.load(open(path))
        print(path)
        for use, label in (([0, 1], "footprint"), ([0, 1, 2], "footprint + depthwise share"), ([0, 2], "depthwise share")):
            coef = fit(d["calibration_models"], use)
            s = score(d["models"], coef, use)
            print(f"  {label:<28} ±5 % {s[0]:5.1f}  ±10 % {s[1]:5.1f}  RMSPE {s[2]:4.1f}  mean {s[3]:+5.1f}  "
                  f"coefficients {[round(c, 3) for c in coef]}")
