#!/usr/bin/env bash
# Model-level prediction benchmark on onednn_cpu at 1 thread (issue 6): build kernel predictors and the
# backend's fusion rules with `nn-meter build`, write the CNN model set, measure every model on the
# backend, predict every model, and time prediction. Every step resumes: rerun after an interruption.
# Results: OUT/accuracy.md, OUT/speed.txt, OUT/oracle.md (prediction error split into kernel-predictor and
# composition error for four models), OUT/builder_bench.md (issue 5: conv-bn-relu and dwconv-bn-relu accuracy
# against samples on a fresh profiled set); bench/RESULTS-prediction.md and RESULTS-builder.md quote one run.
# Usage: bench/run_prediction_bench.sh [OUT] [build-dir]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-prediction-bench-output}")"
build="${2:-build}"
cmake --build "$build" -j "$(nproc)" --target nn-meter prediction_bench prediction_oracle builder_bench
mkdir -p "$out/bin"
# A private copy: rebuilding the tree while the bench runs must not swap the binary under its workers.
freeze_binaries "$build" "$out/bin" nn-meter nn-meter-worker bench/prediction_bench bench/prediction_oracle bench/builder_bench
nnm="$out/bin/nn-meter"
export NN_METER_HOME="$out/home"
export NN_METER_WORKER="$(dirname "$nnm")/nn-meter-worker"
use_frozen "$(dirname "$NN_METER_WORKER")"
ws="$out/ws"
[ -d "$ws/configs" ] || "$nnm" create --workspace "$ws" --backend onednn_cpu
cat > "$ws/configs/backend_config.yaml" <<'YAML'
NUM_THREADS: 1
WARMUP_RUNS: 5
NUM_RUNS: 10
NUM_ROUNDS: 3
MIN_TIME_MS: 10
YAML
# Modest sample counts (nn-Meter's defaults are 10000 / 5000 / 3000) and no fine-grained round: what fits
# in a quarter of an hour of profiling on a 2-core machine.
cat > "$ws/configs/predictorbuild_config.yaml" <<'YAML'
DETAIL: FALSE
IMPLEMENT: onnx
BATCH_SIZE: 1
KERNELS:
  conv-bn-relu:   {INIT_SAMPLE_NUM: 500, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  dwconv-bn-relu: {INIT_SAMPLE_NUM: 300, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  fc:             {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  maxpool:        {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  avgpool:        {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  global-avgpool: {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  se:             {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  hswish:         {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  swish:          {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  relu:           {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  add:            {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  addrelu:        {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  bnrelu:         {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  bn:             {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  concat:         {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  split:          {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  channelshuffle: {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
YAML
/usr/bin/time -v -o "$out/build.time" "$nnm" build --workspace "$ws" --backend onednn_cpu \
  --predictor-name onednn_cpu_bench --regressor gbdt | tee "$out/build.log"
grep -E "Elapsed|Maximum resident" "$out/build.time"
predictor="$ws/predictor_build/predictor"

"$out/bin/nn-meter" networks export --set evaluation --out "$out/models" >/dev/null
"$out/bin/prediction_bench" measure "$out/models" "$out/measured.json" '{"NUM_RUNS": 10, "WARMUP_RUNS": 5}'
"$out/bin/prediction_bench" accuracy "$out/models" "$out/measured.json" "$predictor" | tee "$out/accuracy.md"
"$out/bin/prediction_bench" speed "$predictor" "$out/speed" 1000 | tee "$out/speed.txt"
for m in mobilenet_v2_r224_w1 shufflenet_v2_x1_0_r224_w1 efficientnet_b0_r224_w1 resnet18_r224_w1; do
  "$out/bin/prediction_oracle" "$out/models/$m.onnx" "$predictor" '{"NUM_RUNS": 10, "WARMUP_RUNS": 5}'
done > "$out/oracle.md"
grep '^\*\*' "$out/oracle.md"
{
  "$out/bin/builder_bench" "$ws" conv-bn-relu 150
  echo
  "$out/bin/builder_bench" "$ws" dwconv-bn-relu 100
} | tee "$out/builder_bench.md"
