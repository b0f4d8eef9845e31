#!/usr/bin/env bash
# `nn-meter predict` of one model from a fresh process (issue 41): builds a 19-kernel onednn_cpu predictor
# with small sample counts but the default regressor (random forests, nn-Meter's per-kernel table), exports
# MobileNetV2, then times RUNS predictions, each a new process, and prints their median. Timing takes
# /tmp/nnmeter-timing.lock so that no other timing run shares the machine. Results:
# bench/RESULTS-prediction.md.
#
# usage: bench/run_predict_startup_bench.sh [OUT_DIR] [BUILD_DIR] [RUNS]
#   NN_METER=path/to/nn-meter times another binary (e.g. a frozen older build) on the same predictor.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-predict-startup-output}")"
build="$(realpath "${2:-build}")"
runs="${3:-20}"
lock=/tmp/nnmeter-timing.lock
cmake --build "$build" -j "$(nproc)" --target nn-meter backend_export_zoo >/dev/null
nnm="${NN_METER:-$build/nn-meter}"
export NN_METER_HOME="$out/home"
ws="$out/ws"
predictor="$ws/predictor_build/predictor"
if [ ! -f "$predictor/meta.yaml" ]; then
  "$build/nn-meter" create --workspace "$ws" --backend onednn_cpu >/dev/null
  cat > "$ws/configs/backend_config.yaml" <<'YAML'
NUM_THREADS: 1
WARMUP_RUNS: 2
NUM_RUNS: 5
NUM_ROUNDS: 1
MIN_TIME_MS: 2
REPEATS: 1
YAML
  {
    printf 'DETAIL: FALSE\nIMPLEMENT: onnx\nBATCH_SIZE: 1\nKERNELS:\n'
    printf '  conv-bn-relu:   {INIT_SAMPLE_NUM: 120, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 1, ERROR_THRESHOLD: 0.1}\n'
    printf '  dwconv-bn-relu: {INIT_SAMPLE_NUM: 80, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 1, ERROR_THRESHOLD: 0.1}\n'
    for k in conv-bn dwconv-bn fc maxpool avgpool global-avgpool se hswish swish relu add addrelu bnrelu bn concat \
             split channelshuffle; do
      printf '  %s: {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 1, ERROR_THRESHOLD: 0.1}\n' "$k"
    done
  } > "$ws/configs/predictorbuild_config.yaml"
  # Profiling is a timing run too.
  flock "$lock" "$build/nn-meter" build --workspace "$ws" --backend onednn_cpu --predictor-name predict_startup >&2
fi
"$build/nn-meter" unregister --predictor predict_startup >/dev/null 2>&1 || true  # a rerun registers it again
"$build/nn-meter" register --predictor "$predictor/meta.yaml" >/dev/null
model="$out/models/mobilenet_v2.onnx"
[ -f "$model" ] || "$build/bench/backend_export_zoo" "$out/models" 224 mobilenet_v2 >/dev/null
kernels=$(python3 -c "import json,sys; print(' '.join(json.load(open(sys.argv[1]))['kernels']))" "$predictor/predictor.json")
bytes=0
for k in $kernels; do bytes=$((bytes + $(stat -c %s "$predictor/$k.json"))); done
echo "predictor: $(echo "$kernels" | wc -w) kernels, $bytes bytes of regressor JSON ($predictor)"
echo "binary: $nnm; model: $model"
# One untimed run: the page cache holds the files, and the folder's tree cache is written if missing.
"$nnm" predict --predictor predict_startup --onnx "$model" >/dev/null
flock "$lock" bash -c '
  for i in $(seq "$1"); do
    t0=$EPOCHREALTIME
    "$2" predict --predictor predict_startup --onnx "$3" >/dev/null
    t1=$EPOCHREALTIME
    echo "$t0 $t1"
  done' _ "$runs" "$nnm" "$model" |
  awk '{ printf "%.3f\n", ($2 - $1) * 1000 }' | sort -n |
  awk '{ ms[NR] = $1 } END {
         med = NR % 2 ? ms[(NR + 1) / 2] : (ms[NR / 2] + ms[NR / 2 + 1]) / 2
         printf "nn-meter predict, fresh process: median %.1f ms of %d (min %.1f, max %.1f)\n", med, NR, ms[1], ms[NR] }'
