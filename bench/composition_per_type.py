#!/usr/bin/env python3
"""A composition factor per kernel type, fitted on calibration networks and judged on the evaluated ones.

Input: the results.json of `nn-meter evaluate --calibrate-on` (e.g. OUT/score/<label>_calibration_models72 of
bench/run_rescore_bench.sh), whose models carry Σ predicted ms per predictor kernel. Fits measured ≈ Σ_type
w_type × Σ kernels of that type on the calibration networks (relative least squares), with a ridge pulling every
w_type toward the one global factor (λ = 0: free factors), and scores the evaluated networks with it, next to the
one global factor.
Usage: bench/composition_per_type.py results.json [results.json ...]"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle_bound import solve  # noqa: E402


def score(errors):
    n = len(errors)
    return (f"±5 % {100 * sum(abs(e) <= 0.05 for e in errors) / n:5.1f}  ±10 % {100 * sum(abs(e) <= 0.10 for e in errors) / n:5.1f}"
            f"  RMSPE {100 * math.sqrt(sum(e * e for e in errors) / n):4.1f}")


def main():
    for path in sys.argv[1:]:
        doc = json.load(open(path))
        usable = lambda ms: [m for m in ms if m.get("measured_ms") and m.get("kernels_ms_by_type")]
        calibration, evaluated = usable(doc.get("calibration_models", [])), usable(doc["models"])
        if not calibration:
            sys.exit(f"{path}: no calibration networks (run evaluate with --calibrate-on)")
        types = sorted({t for m in calibration + evaluated for t in m["kernels_ms_by_type"]})
        row = lambda m: [m["kernels_ms_by_type"].get(t, 0.0) / m["measured_ms"] for t in types]
        a = [row(m) for m in calibration]
        totals = [sum(r) for r in a]
        g = sum(totals) / sum(t * t for t in totals)  # one factor: relative least squares
        print(f"{path}: {len(calibration)} calibration, {len(evaluated)} evaluated networks, {len(types)} kernel types")
        print(f"  one factor ({g:.3f})        evaluated {score([g * sum(row(m)) - 1 for m in evaluated])}")
        n = len(calibration)
        for lam in (0.0, 0.01, 0.1, 1.0):
            # min Σ (a·w - 1)² + λ n Σ (w_t - g)²: the ridge rows appended to the system
            ridge = [[math.sqrt(lam * n) * (i == j) for j in range(len(types))] for i in range(len(types))]
            w = solve(a + ridge, [1.0] * n + [math.sqrt(lam * n) * g] * len(types))
            fit = lambda m: sum(x * y for x, y in zip(row(m), w)) - 1
            print(f"  per type, λ = {lam:<4}      calibration {score([fit(m) for m in calibration])} | "
                  f"evaluated {score([fit(m) for m in evaluated])}")


if __name__ == "__main__":
    main()
