#!/usr/bin/env python3
"""The evaluated networks outside ±5 % with any of the larger calibration sets, and their error with every set.

Input: a folder of bench/score_on_journal.sh work dirs named after the calibration sets (OUT/NAME-score of
bench/run_remeasure_bench.sh), each with the results.json of `nn-meter evaluate --calibrate-on`. Sets absent from
the folder are left out. Pure Python: no numpy on a bare machine.
Usage: bench/misses_summary.py SCORE_FOLDER"""
import json
import os
import sys

SETS = [("calibration_models", "23"), ("more_calibration_models", "49"), ("calibration_models72", "72"),
        ("span_calibration_models", "27 span"), ("small_calibration_models", "36 small"),
        ("calibration_models99", "99"), ("calibration_models135", "135")]
JUDGED = {"calibration_models72", "calibration_models99", "calibration_models135"}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    errors = {}
    for folder, _ in SETS:
        path = os.path.join(sys.argv[1], folder, "results.json")
        if os.path.exists(path):
            errors[folder] = {m["model"]: m["error"] for m in json.load(open(path))["models"]}
    sets = [(folder, label) for folder, label in SETS if folder in errors]
    if not sets:
        sys.exit(f"no scoring of a known calibration set under {sys.argv[1]}")
    print(f"{'model':38s}" + "".join(f"{label:>10s}" for _, label in sets))
    for model in sorted(errors[sets[0][0]]):
        if any(abs(errors[folder][model]) > 0.05 for folder, _ in sets if folder in JUDGED):
            print(f"{model:38s}" + "".join(f"{100 * errors[folder][model]:+10.1f}" for folder, _ in sets))


if __name__ == "__main__":
    main()
