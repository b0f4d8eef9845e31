#!/usr/bin/env bash
# Transformers on onednn_cpu, as a user with PyTorch exports would build and judge a predictor for them:
#   python3 -m nn_meter.torch_networks export transformers / transformers-calibration   (Debian's torch)
#   nn-meter create --preset transformers; nn-meter build   (layers of, and calibration on, transformers-calibration)
#   nn-meter evaluate --kernels on the 24 of the set transformers, none of them a calibration network
# Writes OUT/summary.md: per kernel its held-out accuracy next to its split-half repeat ceiling
# (predictor_build/results/accuracy.json), BF_linear_gelu's verdict, and the model-level figures of evaluate
# next to the measurement's ceiling (the table bench/RESULTS-transformers.md quotes).
# Usage: [REPEATS=N] bench/run_transformers_bench.sh OUT [build-dir]   (~25 min on 2 cores; resumes: a rerun goes on
# from the build's and the evaluation's journals)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:?usage: run_transformers_bench.sh OUT [build-dir]}")"
build="$(realpath "${2:-build}")"
repeats="${REPEATS:-10}"
frozen_nnmeter "$build" "$out"
networks() { PYTHONPATH="$build/python" /usr/bin/python3 -m nn_meter.torch_networks export "$@" >/dev/null; }

ws="$out/ws"
[ -d "$ws" ] || "$nnm" create --workspace "$ws" --backend onednn_cpu --preset transformers >/dev/null
networks transformers-calibration "$ws/transformer_calibration"
networks transformers "$out/models"
start=$(date +%s)
"$nnm" build --workspace "$ws" --backend onednn_cpu --predictor-name onednn_cpu_transformers > "$out/build.log" 2>&1
echo "build: $(( $(date +%s) - start )) s (finished $(date -u +%H:%M) UTC)"
start=$(date +%s)
"$nnm" --json evaluate --predictor "$ws/predictor_build/predictor" --onnx "$out/models" --repeats "$repeats" --kernels \
  --work-dir "$out/evaluate" > "$out/evaluate.json" 2> "$out/evaluate.log"
echo "evaluate: $(( $(date +%s) - start )) s (finished $(date -u +%H:%M) UTC)"
/usr/bin/python3 bench/transformers_report.py "$out" | tee "$out/summary.md"
