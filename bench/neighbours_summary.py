#!/usr/bin/env python3
"""The neighbours' correction of `nn-meter calibrate`, judged on the evaluated networks.

Input: results.json files of `nn-meter evaluate --calibrate-on` (bench/score_on_journal.sh work dirs: e.g.
OUT/score/<label>_<cal>/results.json of bench/run_rescore_bench.sh or bench/run_more_calibration_bench.sh).
For each: the setting calibrate chose (k, footprint weight, statistic; k 0 = none kept), its score on the
calibration networks each held out against the term alone's, and on the evaluated networks within ±5 % / ±10 %
(RMSPE) with the term alone — recomputed from composition.json's c0, c1 and unscaled kernels — and with the
correction, next to the measurement's own repeatability (split halves of each model's repeats).
Pure Python: no numpy on a bare machine.
Usage: bench/neighbours_summary.py results.json [results.json ...]"""
import json
import math
import os
import sys


def score(errors):
    n = len(errors)
    return (f"{100 * sum(abs(e) <= 0.05 for e in errors) / n:5.1f} / {100 * sum(abs(e) <= 0.10 for e in errors) / n:5.1f}"
            f" ({100 * math.sqrt(sum(e * e for e in errors) / n):3.1f})")


def term_alone(composition, model):
    lo, hi = composition["footprint_mb_range"]
    unscaled = sum(ms for kernel, ms in model["kernels_ms_by_type"].items()
                   if kernel in composition.get("unscaled_kernels", []))
    footprint = min(max(model["footprint_mb"], lo), hi)
    return unscaled + (model["kernels_ms"] - unscaled) * math.exp(composition["c0"] + composition["c1"] * math.log(footprint))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print(f"{'calibrated on':44s} {'kept':28s} {'calibration, each out: ±5 (RMSPE)':36s} "
          f"{'evaluated: term alone':23s} {'with neighbours':23s} ceiling")
    for path in sys.argv[1:]:
        doc = json.load(open(path))
        composition = doc["composition"]
        record = composition["calibration"].get("neighbours", {})
        models = [m for m in doc["models"] if m.get("measured_ms") and m.get("kernels_ms_by_type")]
        term = [term_alone(composition, m) / m["measured_ms"] - 1 for m in models]
        corrected = [m["predicted_ms"] / m["measured_ms"] - 1 for m in models]
        ceiling = [m["split_half_deviation"] for m in models]
        kept = (f"k {record['k']}, w {record['footprint_weight']:g}, {record['statistic']}" if record.get("k")
                else "none")
        held = record.get("term_alone_network_out")
        out = record.get("network_out")
        loo = (f"{100 * held['within5']:5.1f} ({held['rmspe']:3.1f})" if held else "-") + (
            f" -> {100 * out['within5']:5.1f} ({out['rmspe']:3.1f})" if out else "")
        label = os.path.basename(os.path.dirname(os.path.abspath(path)))
        print(f"{label:44s} {kept:28s} {loo:36s} {score(term):23s} {score(corrected):23s} "
              f"{100 * sum(c <= 0.05 for c in ceiling) / len(ceiling):5.1f} / {100 * sum(c <= 0.10 for c in ceiling) / len(ceiling):5.1f}")


if __name__ == "__main__":
    main()
