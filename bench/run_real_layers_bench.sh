#!/usr/bin/env bash
# Conv samples where networks are: on a run of `PRIOR_ROWS=0.3 CALIBRATE=1 bench/run_accuracy_bench.sh` (the
# baseline), conv-bn-relu and dwconv-bn-relu are sampled again with more real layers of the prior library
# (PRIOR_ROWS, never from the evaluated families), each at the widths of WIDTH_MULTIPLIERS and the inputs of
# INPUT_RESOLUTIONS, as width-multiplied networks and NAS spaces have them; measured by the baseline's
# protocol in the same session, swapped into a copy of the baseline predictor, calibrated on the 23 and scored
# on the 55 (`evaluate --calibrate-on`) on a copy of the baseline's journal of those networks (nothing measured
# twice), so the two predictors differ in those two kernels only. AGAIN=1 then measures the 23 + 55 networks
# once more, in one shuffled order, and scores both predictors on that one journal the same way.
# Results: OUT/build.log, OUT/score.txt, OUT/evaluate.txt (OUT/again/evaluate_{baseline,real_layers}.txt).
# Usage: [CONV=500] [DWCONV=300] [PRIOR_ROWS=0.6] [WIDTHS="0.5, 0.75, 1.0, 1.25, 1.5"]
#        [RESOLUTIONS="128, 160, 192, 224"] [AGAIN=0] [EVAL_REPEATS=5 or the baseline's]
#        bench/run_real_layers_bench.sh BASELINE_OUT [OUT]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
cd "$(dirname "$0")/.."
base="$(realpath "${1:?the output folder of bench/run_accuracy_bench.sh with CALIBRATE=1}")"
out="$(realpath -m "${2:-$base/real_layers}")"
[ -f "$base/evaluate/composition.json" ] || { echo "$base has no calibration: run the baseline with CALIBRATE=1" >&2; exit 1; }
nnm="$base/bin/nn-meter"
export NN_METER_HOME="$base/home"
export NN_METER_WORKER="$base/bin/nn-meter-worker"
use_frozen "$(dirname "$NN_METER_WORKER")"
mkdir -p "$out"
ws="$out/ws"
[ -d "$ws/configs" ] || "$nnm" create --workspace "$ws" --backend onednn_cpu >/dev/null
cp "$base/ws/configs/backend_config.yaml" "$ws/configs/backend_config.yaml"
cat > "$ws/configs/predictorbuild_config.yaml" <<YAML
DETAIL: FALSE
IMPLEMENT: onnx
BATCH_SIZE: 1
PRIOR_ROWS: ${PRIOR_ROWS:-0.6}
PRIOR_ROWS_EXCLUDE: [alexnet, densenet121, efficientnetb0, googlenet, mnasnet, mobilenetv1, mobilenetv2,
                     mobilenetv3, resnet18, resnet34, resnet50, shufflenetv2x1-0, squeezenet, vgg11]
WIDTH_MULTIPLIERS: [${WIDTHS:-0.5, 0.75, 1.0, 1.25, 1.5}]
INPUT_RESOLUTIONS: [${RESOLUTIONS:-128, 160, 192, 224}]
KERNELS:
  conv-bn-relu:   {INIT_SAMPLE_NUM: ${CONV:-500}, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  dwconv-bn-relu: {INIT_SAMPLE_NUM: ${DWCONV:-300}, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
YAML
echo "build $(date -u +%FT%TZ)" >> "$out/timeline"
/usr/bin/time -f "%e s elapsed, %M KB peak" -o "$out/build.time" "$nnm" build --workspace "$ws" --backend onednn_cpu \
  --predictor-name onednn_cpu_real_layers --regressor gbdt --no-ruletest --seed "${SEED:-1}" | tee "$out/build.log"

# The baseline predictor with the two kernels' models swapped in and its composition term fitted again.
rm -rf "$out/predictor"
cp -r "$base/ws/predictor_build/predictor" "$out/predictor"
rm -f "$out/predictor/composition.json"
python3 bench/swap_predictor_kernels.py "$ws/predictor_build/predictor" "$out/predictor" onednn_cpu_real_layers
score() {  # score PREDICTOR WORK_DIR LABEL: the term fitted on the 23, the 55 scored, on the journal there
  "$nnm" evaluate --predictor "$1" --onnx "$base/models" --calibrate-on "$base/calibration_models" --work-dir "$2" \
    --report "$2.html" ${EVAL_REPEATS:+--repeats "$EVAL_REPEATS"} > "$2.txt"
  echo "== $3"; grep -E "models scored|repeatability|composition fitted|plain sum" "$2.txt"
}
rm -rf "$out/evaluate"
cp -r "$base/evaluate" "$out/evaluate"
score "$out/predictor" "$out/evaluate" "real layers, on the baseline's measurements" | tee "$out/score.txt"

if [ "${AGAIN:-0}" = 1 ]; then
  # The 23 + 55 networks measured once more, now in one shuffled order (calibrating and evaluating as two runs
  # put a level shift of the machine between the term's networks and the scored ones), then each predictor
  # calibrated on its 23 and scored on its 55 from that one journal.
  again="$out/again"
  mkdir -p "$again"
  echo "again $(date -u +%FT%TZ)" >> "$out/timeline"
  rm -rf "$again/baseline_predictor"
  cp -r "$base/ws/predictor_build/predictor" "$again/baseline_predictor"
  rm -f "$again/baseline_predictor/composition.json"
  score "$again/baseline_predictor" "$again/evaluate_baseline" "baseline, networks measured again in one order" \
    | tee "$again/baseline.txt"
  rm -rf "$again/evaluate_real_layers"
  cp -r "$again/evaluate_baseline" "$again/evaluate_real_layers"
  score "$out/predictor" "$again/evaluate_real_layers" "real layers, networks measured again in one order" \
    | tee "$again/real_layers.txt"
fi
echo "end $(date -u +%FT%TZ)" >> "$out/timeline"
