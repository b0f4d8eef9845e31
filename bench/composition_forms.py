#!/usr/bin/env python3
"""The composition term's two forms on the same measurements: every kernel scaled by the footprint's factor,
and fc left unscaled (what `nn-meter calibrate` chooses between by held-out families). Each form is fitted
on the calibration networks (least squares of ln((measured - unscaled) / (kernels - unscaled)) on
ln footprint, footprint clamped to the calibrated range, as the library does) and scored on the evaluated
ones, next to their measurement ceiling. Reads the results.json of a calibrate and an evaluate run that
list kernels_ms_by_type (any predictor: the forms are refitted here, the file's own term is ignored).

Usage: bench/composition_forms.py CALIBRATE_RESULTS_JSON EVALUATE_RESULTS_JSON [LABEL]
"""
import json
import math
import sys

FORMS = {"every kernel scaled": (), "fc unscaled": ("fc",)}


def rows(path):
    out = []
    for m in json.load(open(path))["models"]:
        if m.get("measured_ms") and m.get("kernels_ms") and m.get("footprint_mb"):
            out.append(m)
    return out


def unscaled(m, kernels):
    return sum(m.get("kernels_ms_by_type", {}).get(k, 0.0) for k in kernels)


def fit(cal, kernels):
    x = [math.log(m["footprint_mb"]) for m in cal]
    y = [math.log((m["measured_ms"] - unscaled(m, kernels)) / (m["kernels_ms"] - unscaled(m, kernels))) for m in cal]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxx = sum((a - mx) ** 2 for a in x)
    c1 = sum((a - mx) * (b - my) for a, b in zip(x, y)) / sxx
    return my - c1 * mx, c1, min(x), max(x)


def score(errors):
    n = len(errors)
    return "RMSPE %4.1f %%  ±5 %% %5.1f %%  ±10 %% %5.1f %%  mean %+5.1f %%" % (
        100 * math.sqrt(sum(e * e for e in errors) / n), 100 * sum(abs(e) <= 0.05 for e in errors) / n,
        100 * sum(abs(e) <= 0.10 for e in errors) / n, 100 * sum(errors) / n)


def main(args):
    if len(args) not in (2, 3):
        sys.exit(__doc__)
    cal, ev = rows(args[0]), rows(args[1])
    label = args[2] if len(args) == 3 else args[1]
    shd = [m["split_half_deviation"] for m in ev if m.get("split_half_deviation") is not None]
    print("%s: %d calibration networks, %d evaluated; ceiling ±5 %% %.1f %%, ±10 %% %.1f %%" % (
        label, len(cal), len(ev), 100 * sum(d <= 0.05 for d in shd) / len(shd), 100 * sum(d <= 0.10 for d in shd) / len(shd)))
    print("  %-20s %s" % ("plain sum", score([m["kernels_ms"] / m["measured_ms"] - 1 for m in ev])))
    for name, kernels in FORMS.items():
        c0, c1, lo, hi = fit(cal, kernels)
        errors = []
        for m in ev:
            u = unscaled(m, kernels)
            factor = math.exp(c0 + c1 * min(max(math.log(m["footprint_mb"]), lo), hi))
            errors.append((u + (m["kernels_ms"] - u) * factor) / m["measured_ms"] - 1)
        print("  %-20s %s  (c0 %.4f, c1 %.4f)" % (name, score(errors), c0, c1))


if __name__ == "__main__":
    main(sys.argv[1:])
