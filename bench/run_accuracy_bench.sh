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
# OUT/evaluate/results.{json,csv}, OUT/by-set/ (each set scored alone); OUT/models links the scored networks of
# OUT/sets/*, OUT/calibration holds the calibration ones;
# bench/RESULTS-accuracy.md quotes one run. OUT/timeline has the start of each step.
# TORCH_SETS (default torchvision-reference torchvision-new) are sets of nn_meter.torch_networks scored beside SETS:
# torchvision's own models as torch.onnx.export writes them (Debian's python3-torch), of the builtin sets'
# families and of families in no builtin set; TORCH_SETS= leaves them out.
# EVAL_REPEATS sets the scored (and calibration) networks' repeats (absent: REPEATS of the backend config, 5).
# KERNELS_EVAL=1 also measures every kernel of the r224 width-1 models alone (`evaluate --kernels`, 3 repeats) to
# split their error into kernel predictors and composition.
# Usage: [PRESET=accurate] [SETS="evaluation ..."] [TORCH_SETS="..."] [BACKEND=onednn_cpu] [SEED=1] [RECALIBRATE=1] [EVAL_REPEATS=5]
#        [KERNELS_EVAL=0] bench/run_accuracy_bench.sh [OUT] [build-dir]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-accuracy-bench-output}")"
build="${2:-build}"
preset="${PRESET:-accurate}"
backend="${BACKEND:-onednn_cpu}"
torch_sets="${TORCH_SETS-torchvision-reference torchvision-new}"
cmake --build "$build" -j "$(nproc)" --target nn-meter ${torch_sets:+nn_meter_python} >/dev/null
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
# Exporting keeps the files already there, so a rerun writes only what an interruption left out. Each set has its
# folder (OUT/sets/SET, scored alone below); OUT/models links them all, to be measured in one order.
for set in ${SETS:-evaluation}; do "$nnm" networks export --set "$set" --out "$out/sets/$set" >/dev/null; done
for set in $torch_sets; do
  PYTHONPATH="$(realpath "$build")/python" /usr/bin/python3 -m nn_meter.torch_networks export "$set" "$out/sets/$set" \
    >/dev/null
done
mkdir -p "$out/models"
for f in "$out"/sets/*/*.onnx; do ln -sfn "$f" "$out/models/"; done
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
# Each set alone, from a copy of the evaluation's journal (nothing measured again): with the term fitted on the
# calibration networks measured in the same order (OUT/by-set/SET.txt), and with the build's own term, fitted on
# the same networks as the build measured them, an hour before (OUT/by-set/SET_build-term.txt): a later run's figure.
repeats="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["protocol"]["repeats"])' "$out/evaluate/results.json")"
for dir in "$out"/sets/*/; do
  set="$(basename "$dir")"
  [ "${RECALIBRATE:-1}" != 1 ] || bench/score_on_journal.sh "$nnm" "$out/evaluate" "$out/by-set/$set" \
    "$ws/predictor_build/predictor" "$dir" "$out/calibration" "$repeats" >/dev/null
  bench/score_on_journal.sh "$nnm" "$out/evaluate" "$out/by-set/${set}_build-term" "$ws/predictor_build/predictor" \
    "$dir" - "$repeats" >/dev/null
done
if [ "${KERNELS_EVAL:-0}" = 1 ]; then
  stamp evaluate_kernels
  mkdir -p "$out/models_k"
  cp "$out"/sets/*/*_r224_w1.onnx "$out/models_k/"
  "$nnm" evaluate --predictor "$ws/predictor_build/predictor" --onnx "$out/models_k" --kernels --repeats 3 \
    --work-dir "$out/evaluate_k" --report "$out/report_k.html" | tee "$out/evaluate_k.txt"
fi
stamp end
