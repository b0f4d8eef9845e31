#!/usr/bin/env python3
"""How each network's latency repeats between measurements of one predictor's networks, after the machine's level.

Input: two or more results.json of `nn-meter evaluate` (labelled LABEL=PATH), each measuring the same evaluated
networks (and calibration networks, with --calibrate-on). For each pair: the level between them (the median of
the networks' latency ratios) and, with it divided out, the share of networks within ±2 / ±3 / ±5 %, the spread
and the worst; then the same for the calibration networks both measured. The split-half ceiling of `evaluate` is
within one measurement; this is the part of each network's latency that moves between two.
Pure Python: no numpy on a bare machine.
Usage: bench/between_measurements.py LABEL=results.json LABEL=results.json [...]"""
import itertools
import json
import statistics
import sys


def agreement(a, b):
    common = sorted(set(a) & set(b))
    level = statistics.median(a[n] / b[n] for n in common)
    deviation = [a[n] / b[n] / level - 1 for n in common]
    share = lambda limit: 100 * sum(abs(d) <= limit for d in deviation) / len(deviation)
    return (f"{len(common):3d} networks, level {level:.3f}; then within ±2 % {share(0.02):5.1f}, ±3 % {share(0.03):5.1f}, "
            f"±5 % {share(0.05):5.1f}; spread {100 * statistics.pstdev(deviation):.1f} %, worst "
            f"{100 * max(deviation, key=abs):+.1f} %")


def main():
    if len(sys.argv) < 3 or any("=" not in arg for arg in sys.argv[1:]):
        sys.exit(__doc__)
    runs = {}
    for arg in sys.argv[1:]:
        label, path = arg.split("=", 1)
        doc = json.load(open(path))
        runs[label] = ({m["model"]: m["measured_ms"] for m in doc["models"]},
                       {m["model"]: m["measured_ms"] for m in doc.get("calibration_models", [])})
    for kind, index in (("evaluated", 0), ("calibration", 1)):
        for x, y in itertools.combinations(runs, 2):
            if runs[x][index] and runs[y][index]:
                print(f"{kind:11s} {x} vs {y}: {agreement(runs[x][index], runs[y][index])}")


if __name__ == "__main__":
    main()
