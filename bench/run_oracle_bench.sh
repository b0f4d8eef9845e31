#!/usr/bin/env bash
# The oracle bound of a kernel-sum predictor: `nn-meter evaluate --kernels` on the 55 CNN variants of
# `nn-meter networks export --set evaluation` (each network in REPEATS independent repeats, every distinct kernel the predictor
# detects measured alone in the REPEATS its samples were measured with, all in one shuffled order), then
# bench/oracle_bound.py: how close Σ kernels measured alone, scaled by the composition term (fitted in sample, and
# with each family held out), comes to the measured networks, next to the same for the predicted kernels and to
# the measurement's own repeatability. No predictor of kernels can beat the oracle's row.
# Results: OUT/evaluate.txt, OUT/evaluate/{results.json,kernels.csv}, OUT/oracle.txt.
# Usage: [REPEATS=20] bench/run_oracle_bench.sh PREDICTOR_FOLDER [OUT] [build-dir]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."
predictor="$(realpath "${1:?a predictor folder, e.g. the ws/predictor_build/predictor of bench/run_accuracy_bench.sh}")"
out="$(realpath -m "${2:-oracle-bench-output}")"
build="${3:-build}"
cmake --build "$build" -j "$(nproc)" --target nn-meter prediction_bench >/dev/null
freeze_binaries "$build" "$out/bin" nn-meter nn-meter-worker bench/prediction_bench
export NN_METER_HOME="$out/home"
export NN_METER_WORKER="$out/bin/nn-meter-worker"
use_frozen "$(dirname "$NN_METER_WORKER")"
[ -d "$out/models" ] || "$out/bin/nn-meter" networks export --set evaluation --out "$out/models" >/dev/null
/usr/bin/time -f "%e s elapsed" -o "$out/evaluate.time" "$out/bin/nn-meter" evaluate --predictor "$predictor" \
  --onnx "$out/models" --kernels --repeats "${REPEATS:-20}" --work-dir "$out/evaluate" --report "$out/report.html" |
  tee "$out/evaluate.txt"
cat "$out/evaluate.time"
python3 "$here/oracle_bound.py" "$out/evaluate/results.json" | tee "$out/oracle.txt"
