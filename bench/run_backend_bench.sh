#!/usr/bin/env bash
# Whole-model latency of the zoo on onednn_cpu (1 and 2 threads, each 1-thread model measured twice
# back to back for the repeatability figure) and on ONNX Runtime 1.30 CPU, interleaved per model so
# both engines see the same machine state. Writes raw JSON lines to OUT and the report to stdout.
#
# usage: bench/run_backend_bench.sh BUILD_DIR ORT_DIR OUT_DIR > report.md   (bench/RESULTS-backend.md quotes one run)
#   ORT_DIR holds node_modules/onnxruntime-node (npm install --ignore-scripts onnxruntime-node@1.30.0)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
ORT=$(realpath "${2:-/work/ortbench}")
OUT=$(realpath -m "${3:-/tmp/nnmeter-backend-bench}")
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/models" "$OUT/home"
export NN_METER_HOME="$OUT/home"
"$BUILD/bench/backend_export_zoo" "$OUT/models" >&2
: > "$OUT/ours.jsonl"
: > "$OUT/ort.jsonl"
"$BUILD/bench/onednn_conv_bench" > "$OUT/conv.jsonl"
models=$(python3 -c "import json,sys; print(' '.join(m['name'] for m in json.load(open('$OUT/models/zoo.json'))))")
for threads in 1 2; do
  for m in $models; do
    repeats=1
    [ "$threads" = 1 ] && repeats=2
    for r in $(seq "$repeats"); do
      "$BUILD/nn-meter" --json benchmark --backend onednn_cpu --onnx "$OUT/models/$m.onnx" --threads "$threads" \
        | python3 -c "import json,sys; d=json.load(sys.stdin); d.update(name='$m', threads=$threads, repeat=$r); print(json.dumps(d))" \
        >> "$OUT/ours.jsonl"
    done
    NODE_PATH="$ORT/node_modules" node "$HERE/ort_time.js" "$threads" "$OUT/models/$m.onnx" \
      | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); d.update(name='$m'); print(json.dumps(d))" \
      >> "$OUT/ort.jsonl"
  done
done
python3 "$HERE/backend_report.py" "$OUT"
