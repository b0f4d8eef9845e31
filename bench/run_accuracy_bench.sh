#!/usr/bin/env bash
# Model-level accuracy under the repeat protocol: build kernel predictors for onednn_cpu with every sample
# measured in 5 independent repeats (one shuffled order across all kernels, drift probes), then
# `nn-meter evaluate` on 55 CNN variants (all families, widths x resolutions) measured by the same protocol,
# reported next to the measurements' own repeatability. Every step resumes: rerun after an interruption.
# Results: OUT/build.log (accuracy table with the repeat ceiling, drift), OUT/evaluate.txt, OUT/report.html,
# OUT/evaluate/results.{json,csv}; bench/RESULTS-accuracy.md quotes one run.
# CALIBRATE=1 fits the composition term on 23 other variants of the same architectures (none of the 55),
# measured in one shuffled order with the 55 (`evaluate --calibrate-on`), and scores the calibrated prediction
# and, on the same measurements, the plain sum of kernels (OUT/evaluate.txt); CALIBRATE=72 adds the 49 of
# `nn-meter networks export --set calibration-more` (none of the 55 either), CALIBRATE=99 those and the 27 of
# `nn-meter networks export --set calibration-span` (every architecture at and above its largest size among the 55),
# CALIBRATE=135 those and the 36 of `nn-meter networks export --set calibration-small` (the mobile networks at the narrow
# and low-resolution end of their range). bench/run_remeasure_bench.sh measures the same networks again.
# EVAL_REPEATS sets the evaluated (and calibration) networks' repeats (absent: REPEATS of the backend config, 5).
# With PRIOR_ROWS > 0 the evaluated families' layers are excluded from the prior rows (PRIOR_ROWS_EXCLUDE), so
# no evaluated layer is a training sample. KERNELS_EVAL=1 then also measures every kernel of the r224 width-1
# models (13 families; VGG-11 has none) alone (`evaluate --kernels`, 3 repeats) to split their error into kernel
# predictors and composition. OUT/timeline has the start of each step: kernels and models measured in one session.
# INPUT_RESOLUTIONS="128, 160, 192, 224" samples every HW as in networks at those inputs (absent: as at 224).
# SAMPLE_MODELS=1 adds every layer of the 23 calibration networks (none of the 55) as a sample of its kernel
# (predictorbuild_config SAMPLE_MODELS); SAMPLE_MODELS=72, 99 or 135 takes the layers of that union of calibration
# sets instead (still none of the 55).
# Usage: [BACKEND=onednn_cpu] [PRIOR_ROWS=0] [SEED=1] [KERNELS_EVAL=0] [CALIBRATE=0|1|72|99|135] [EVAL_REPEATS=5]
#        [INPUT_RESOLUTIONS=...] [SAMPLE_MODELS=0|1|72|99|135]
#        bench/run_accuracy_bench.sh [OUT] [build-dir]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
source "$(dirname "${BASH_SOURCE[0]}")/calibration_sets.sh"
[ "${CALIBRATE:-0}" = 0 ] || calibration_parts "$CALIBRATE" >/dev/null
[ "${SAMPLE_MODELS:-0}" = 0 ] || calibration_parts "$SAMPLE_MODELS" SAMPLE_MODELS >/dev/null
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-accuracy-bench-output}")"
build="${2:-build}"
cmake --build "$build" -j "$(nproc)" --target nn-meter >/dev/null
freeze_binaries "$build" "$out/bin" nn-meter nn-meter-worker
nnm="$out/bin/nn-meter"
export NN_METER_HOME="$out/home"
export NN_METER_WORKER="$(dirname "$nnm")/nn-meter-worker"
use_frozen "$(dirname "$NN_METER_WORKER")"
backend="${BACKEND:-onednn_cpu}"
ws="$out/ws"
[ -d "$ws/configs" ] || "$nnm" create --workspace "$ws" --backend "$backend" >/dev/null
cat > "$ws/configs/backend_config.yaml" <<'YAML'
NUM_THREADS: 1
WARMUP_RUNS: 5
NUM_RUNS: 10
NUM_ROUNDS: 2
MIN_TIME_MS: 10
REPEATS: 5
REPEAT_STATISTIC: min
DRIFT_PROBE_EVERY: 500
YAML
sample_models=""
if [ "${SAMPLE_MODELS:-0}" != 0 ]; then
  make_calibration_sets "$out" "$SAMPLE_MODELS" "$out/bin/nn-meter"
  folders=()
  for part in $(calibration_parts "$SAMPLE_MODELS"); do folders+=("$out/${part//-/_}_models"); done
  sample_models="SAMPLE_MODELS: [$(printf '%s, ' "${folders[@]}" | sed 's/, $//')]"
fi
# PRIOR_ROWS 0 and ALIGNED_CHANNELS 0: nn-Meter's column-wise prior sampling (absent keys take the defaults of
# `nn-meter create`).
# The prior library's names of the 14 evaluated families: their layers must not be training samples.
cat > "$ws/configs/predictorbuild_config.yaml" <<YAML
DETAIL: FALSE
IMPLEMENT: onnx
BATCH_SIZE: 1
PRIOR_ROWS: ${PRIOR_ROWS:-0}
PRIOR_ROWS_EXCLUDE: [alexnet, densenet121, efficientnetb0, googlenet, mnasnet, mobilenetv1, mobilenetv2,
                     mobilenetv3, resnet18, resnet34, resnet50, shufflenetv2x1-0, squeezenet, vgg11]
ALIGNED_CHANNELS: 0
${INPUT_RESOLUTIONS:+INPUT_RESOLUTIONS: [$INPUT_RESOLUTIONS]}
$sample_models
KERNELS:
  conv-bn-relu:   {INIT_SAMPLE_NUM: 250, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  dwconv-bn-relu: {INIT_SAMPLE_NUM: 150, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  conv-bn-swish:  {INIT_SAMPLE_NUM: 250, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  dwconv-bn-swish: {INIT_SAMPLE_NUM: 150, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  fc:             {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  maxpool:        {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  avgpool:        {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  global-avgpool: {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  se:             {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  hswish:         {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  swish:          {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  relu:           {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  add:            {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  addrelu:        {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  bnrelu:         {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  bn:             {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  concat:         {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  split:          {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  channelshuffle: {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
YAML
stamp() { echo "$1 $(date -u +%FT%TZ)" | tee -a "$out/timeline"; }
stamp build
/usr/bin/time -f "%e s elapsed, %M KB peak" -o "$out/build.time" "$nnm" build --workspace "$ws" --backend "$backend" \
  --predictor-name "${backend}_repeats" --regressor gbdt --seed "${SEED:-1}" | tee "$out/build.log"
cat "$out/build.time"
[ -d "$out/models" ] || "$out/bin/nn-meter" networks export --set evaluation --out "$out/models" >/dev/null
evaluate_args=(--predictor "$ws/predictor_build/predictor" --onnx "$out/models" --work-dir "$out/evaluate"
               --report "$out/report.html" ${EVAL_REPEATS:+--repeats "$EVAL_REPEATS"})
if [ "${CALIBRATE:-0}" != 0 ]; then
  # The calibration networks are measured in one shuffled order with the evaluated ones (one journal): measured as
  # two runs minutes apart, the machine's level moved between them and the term carried the shift into every
  # prediction. The term goes to OUT/evaluate/composition.json; the predictor folder stays as built.
  make_calibration_sets "$out" "$CALIBRATE" "$out/bin/nn-meter"
  evaluate_args+=(--calibrate-on "$out/$(calibration_folder "$CALIBRATE")")
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
