#!/usr/bin/env bash
# What a build's profiling costs outside the timed runs, with and without HUGE_PAGES: the main job's kernel
# mix (fewer samples: 40 conv, 30 dwconv, 15 fc, 10 of every other kernel, nn-Meter's prior sampling with
# the main job's prior rows) profiled with the main job's backend_config, every kernel once with
# HUGE_PAGES: false and once with true, alternating which goes first, on two copies of one workspace.
# Then the latency levels: the CNNs and kernels given measured in single-repeat fresh processes, HUGE_PAGES
# false and true interleaved in one shuffled order (ROUNDS each), to show the setting does not move them.
# Nothing else may run on the machine meanwhile. bench/RESULTS-main-job.md quoted one run until ee0e270 (git history).
# Usage: bench/run_overhead_bench.sh OUT [build-dir]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:?usage: run_overhead_bench.sh OUT [build-dir]}")"
build="${2:-build}"
rounds="${ROUNDS:-20}"
cmake --build "$build" -j "$(nproc)" --target nn-meter backend_export_zoo >/dev/null
freeze_binaries "$build" "$out/bin" nn-meter nn-meter-worker bench/backend_export_zoo
export NN_METER_HOME="$out/home"
export NN_METER_WORKER="$out/bin/nn-meter-worker"
use_frozen "$(dirname "$NN_METER_WORKER")"
nnm="$out/bin/nn-meter"
kernels=(conv-bn-relu dwconv-bn-relu fc maxpool avgpool global-avgpool se hswish relu add bnrelu concat)
# The sampled configs name their models by absolute path: the workspace is sampled in place, the copies
# below measure its models, and a marker file says the sampling finished.
if [ ! -f "$out/ws_base/sampled" ]; then
  ws="$out/ws_base"
  rm -rf "$ws"
  "$nnm" create --workspace "$ws" --backend onednn_cpu >/dev/null
  cat > "$ws/configs/backend_config.yaml" <<'YAML'
NUM_THREADS: 1
WARMUP_RUNS: 5
NUM_RUNS: 10
NUM_ROUNDS: 2
MIN_TIME_MS: 10
REPEATS: 5
REPEAT_STATISTIC: min
YAML
  "$nnm" connect --backend onednn_cpu --workspace "$ws" >/dev/null
  printf 'PRIOR_ROWS: 0.3\nPRIOR_ROWS_EXCLUDE: [mobilenetv2, resnet18, mnasnet, mobilenetv3]\n' >> "$ws/configs/predictorbuild_config.yaml"
  for spec in conv-bn-relu:40 dwconv-bn-relu:30 fc:15 maxpool:10 avgpool:10 global-avgpool:10 se:10 hswish:10 relu:10 \
              add:10 bnrelu:10 concat:10; do
    "$nnm" sample --workspace "$ws" --kernel "${spec%%:*}" --num "${spec##*:}" --seed 11 >/dev/null
  done
  touch "$ws/sampled"
fi
if [ ! -f "$out/profiling.csv" ]; then
  for arm in false true; do
    rm -rf "$out/ws_$arm" && cp -r "$out/ws_base" "$out/ws_$arm"
    printf 'HUGE_PAGES: %s\n' "$arm" >> "$out/ws_$arm/configs/backend_config.yaml"
  done
  echo "kernel,huge_pages,seconds,measurements" > "$out/profiling.csv.tmp"
  i=0
  for k in "${kernels[@]}"; do
    arms=(false true)
    [ $((i % 2)) -eq 1 ] && arms=(true false)
    for arm in "${arms[@]}"; do
      start=$(date +%s.%N)
      "$nnm" profile --workspace "$out/ws_$arm" --backend onednn_cpu --kernel "$k" >/dev/null
      end=$(date +%s.%N)
      n=$(grep -c '"id"' "$out/ws_$arm/predictor_build/results/profile_journal_$k.jsonl")
      echo "$k,$arm,$(echo "$end - $start" | bc),$n" >> "$out/profiling.csv.tmp"
    done
    i=$((i + 1))
  done
  mv "$out/profiling.csv.tmp" "$out/profiling.csv"
fi
# Latency levels: three CNNs and three kernels of the workspace (a 25 MB conv, a mid conv, a 100 MB fc).
if [ ! -d "$out/models" ]; then
  "$out/bin/backend_export_zoo" "$out/models.tmp" 224 mobilenet_v2 resnet18 mnasnet1_0 >/dev/null
  python3 - "$out" <<'PY'
import json, shutil, sys
out = sys.argv[1]
def pick(kernel, key):
    configs = json.load(open(f"{out}/ws_base/predictor_build/results/{kernel}_prior.json"))[kernel]
    return sorted(configs.values(), key=key)[len(configs) // 2]["model"]
size = lambda c: c["config"].get("CIN", 0) * c["config"].get("COUT", 0) * c["config"].get("KERNEL_SIZE", 1) ** 2
shutil.copy(pick("conv-bn-relu", size), f"{out}/models.tmp/conv_median_weights.onnx")
shutil.copy(max(json.load(open(f"{out}/ws_base/predictor_build/results/conv-bn-relu_prior.json"))["conv-bn-relu"].values(),
                key=size)["model"], f"{out}/models.tmp/conv_largest_weights.onnx")
shutil.copy(pick("fc", size), f"{out}/models.tmp/fc_median_weights.onnx")
PY
  mv "$out/models.tmp" "$out/models"
fi
python3 bench/huge_pages_levels.py "$nnm" "$out/models" "$out/levels.jsonl" "$rounds"
python3 bench/huge_pages_levels.py --report "$out" | tee "$out/summary.txt"
