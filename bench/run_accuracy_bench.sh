#!/usr/bin/env bash
# Model-level accuracy of a preset: build kernel predictors in a workspace of `nn-meter create --preset PRESET`
# (default accurate: `nn-meter create --list-presets`), then `nn-meter evaluate` on the networks of the library's
# sets SETS (default evaluation: 55 CNN variants, `nn-meter networks list`), each measured by the repeat protocol
# and reported next to the measurements' own repeatability. Every step resumes: rerun after an interruption.
# The preset's calibration networks (its CALIBRATION_NETWORKS; evaluate refuses a network both scored and
# calibrated on) are measured again in one shuffled order with the scored ones, and the composition term is
# fitted on them (`evaluate --calibrate-on`): measured as two runs minutes apart, the machine's level moved
# between them and the term carried the shift into every prediction (docs/accuracy.md). The term goes to
# OUT/evaluate/composition.json; the predictor folder keeps the build's own. RECALIBRATE=0 scores the predictor
# as its build calibrated it. bench/run_remeasure_bench.sh measures the same networks again.
# Results: OUT/build.log (accuracy table with the repeat ceiling, drift), OUT/evaluate.txt, OUT/report.html,
# OUT/evaluate/results.{json,csv}; OUT/models holds the scored networks, OUT/calibration the calibration ones;
# bench/RESULTS-accuracy.md quotes one run. OUT/timeline has the start of each step.
# EVAL_REPEATS sets the scored (and calibration) networks' repeats (absent: REPEATS of the backend config, 5).
# KERNELS_EVAL=1 also measures every kernel of the r224 width-1 models alone (`evaluate --kernels`, 3 repeats) to
# split their error into kernel predictors and composition.
# Usage: [PRESET=accurate] [SETS="evaluation ..."] [BACKEND=onednn_cpu] [SEED=1] [RECALIBRATE=1] [EVAL_REPEATS=5]
#        [KERNELS_EVAL=0] bench/run_accuracy_bench.sh [OUT] [build-dir]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-accuracy-bench-output}")"
build="${2:-build}"
preset="${PRESET:-accurate}"
backend="${BACKEND:-onednn_cpu}"
cmake --build "$build" -j "$(nproc)" --target nn-meter >/dev/null
freeze_binaries "$build" "$out/bin" nn-meter nn-meter-worker
nnm="$out/bin/nn-meter"
export NN_METER_HOME="$out/home"
export NN_METER_WORKER="$(dirname "$nnm")/nn-meter-worker"
use_frozen "$(dirname "$NN_METER_WORKER")"
ws="$out/ws"
[ -d "$ws/configs" ] || "$nnm" create --workspace "$ws" --backend "$backend" --preset "$preset" >/dev/null
# A rerun continues the run in OUT, so it must be of the same preset.
grep -q "^_base_: presets/$preset/" "$ws/configs/predictorbuild_config.yaml" ||
  { echo "$ws was not created with the preset $preset: give another OUT" >&2; exit 2; }
stamp() { echo "$1 $(date -u +%FT%TZ)" | tee -a "$out/timeline"; }
stamp build
/usr/bin/time -f "%e s elapsed, %M KB peak" -o "$out/build.time" "$nnm" build --workspace "$ws" --backend "$backend" \
  --predictor-name "${backend}_$preset" --seed "${SEED:-1}" | tee "$out/build.log"
cat "$out/build.time"
# Exporting keeps the files already there, so a rerun writes only what an interruption left out.
for set in ${SETS:-evaluation}; do "$nnm" networks export --set "$set" --out "$out/models" >/dev/null; done
evaluate_args=(--predictor "$ws/predictor_build/predictor" --onnx "$out/models" --work-dir "$out/evaluate"
               --report "$out/report.html" ${EVAL_REPEATS:+--repeats "$EVAL_REPEATS"})
if [ "${RECALIBRATE:-1}" = 1 ]; then
  calibration_sets="$("$nnm" --json create --list-presets | python3 -c '
import json, sys
preset = {p["name"]: p for p in json.load(sys.stdin)}[sys.argv[1]]
print(" ".join(preset["predictorbuild_config"].get("CALIBRATION_NETWORKS", [])))' "$preset")"
  [ -n "$calibration_sets" ] || { echo "the preset $preset calibrates on nothing: run with RECALIBRATE=0" >&2; exit 2; }
  for set in $calibration_sets; do "$nnm" networks export --set "$set" --out "$out/calibration" >/dev/null; done
  evaluate_args+=(--calibrate-on "$out/calibration")
fi
stamp evaluate
/usr/bin/time -f "%e s elapsed" -o "$out/evaluate.time" "$nnm" evaluate "${evaluate_args[@]}" | tee "$out/evaluate.txt"
cat "$out/evaluate.time"
if [ "${KERNELS_EVAL:-0}" = 1 ]; then
  stamp evaluate_kernels
  mkdir -p "$out/models_k"
  cp "$out"/models/*_r224_w1.onnx "$out/models_k/"
  "$nnm" evaluate --predictor "$ws/predictor_build/predictor" --onnx "$out/models_k" --kernels --repeats 3 \
    --work-dir "$out/evaluate_k" --report "$out/report_k.html" | tee "$out/evaluate_k.txt"
fi
stamp end
