#!/usr/bin/env python3
"""Swap the kernel predictors of one predictor folder into another (a copy of a baseline predictor), so two
predictors differ in those kernels only: bench/swap_predictor_kernels.py NEW_PREDICTOR TARGET_PREDICTOR [NAME]."""
import json
import pathlib
import shutil
import sys

new, target = map(pathlib.Path, sys.argv[1:3])
meta_new = json.loads((new / "predictor.json").read_text())
meta = json.loads((target / "predictor.json").read_text())
for kernel, entry in meta_new["kernels"].items():
    meta["kernels"][kernel] = entry
    shutil.copy(new / f"{kernel}.json", target / f"{kernel}.json")
if len(sys.argv) > 3:
    meta["name"] = sys.argv[3]
(target / "predictor.json").write_text(json.dumps(meta, indent=2))
