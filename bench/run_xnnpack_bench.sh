#!/usr/bin/env bash
# Whole-model latency of the zoo (224x224, 1 thread) on xnnpack_cpu, onednn_cpu and ONNX Runtime CPU, each
# measurement in a fresh process, REPEATS per engine and model, interleaved (model by model, repeat by
# repeat, engine by engine) so all engines see the same machine state. Per engine and model: the minimum over
# the repeats, and the split-half agreement (minimum of the odd repeats vs of the even ones) as the
# measurement's own repeatability. Writes raw JSON lines to OUT and the report to stdout.
#
# usage: bench/run_xnnpack_bench.sh BUILD_DIR ORT_DIR OUT_DIR [REPEATS] > report.md
#   ORT_DIR holds node_modules/onnxruntime-node (npm install --ignore-scripts onnxruntime-node@1.30.0)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
ORT=$(realpath "${2:-/work/ortbench}")
OUT=$(realpath -m "${3:-/tmp/nnmeter-xnnpack-bench}")
REPEATS=${4:-6}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/models" "$OUT/home"
export NN_METER_HOME="$OUT/home"
# Same protocol for all three engines: 5 warm-up runs, then 3 rounds of >= 10 runs (and >= 20 ms), the median
# of the round medians.
export WARMUP=5 RUNS=10 ROUNDS=3
"$BUILD/bench/backend_export_zoo" "$OUT/models" >&2
: > "$OUT/runs.jsonl"
models=$(python3 -c "import json; print(' '.join(m['name'] for m in json.load(open('$OUT/models/zoo.json'))))")
for m in $models; do
  for r in $(seq "$REPEATS"); do
    for backend in onednn_cpu xnnpack_cpu; do
      "$BUILD/nn-meter" --json benchmark --backend "$backend" --onnx "$OUT/models/$m.onnx" --threads 1 --repeats 1 \
        --warmup "$WARMUP" --runs "$RUNS" --rounds "$ROUNDS" \
        | python3 -c "import json,sys; d=json.load(sys.stdin); print(json.dumps({'engine':'$backend','name':'$m','repeat':$r,'ms':d['result']['latency_ms']}))" \
        >> "$OUT/runs.jsonl"
    done
    NODE_PATH="$ORT/node_modules" node "$HERE/ort_time.js" 1 "$OUT/models/$m.onnx" \
      | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print(json.dumps({'engine':'onnxruntime','name':'$m','repeat':$r,'ms':d['median_ms']}))" \
      >> "$OUT/runs.jsonl"
  done
  echo "$m done" >&2
done
python3 "$HERE/xnnpack_report.py" "$OUT/runs.jsonl"
