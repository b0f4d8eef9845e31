#!/usr/bin/env bash
# Repeatability of measurements between runs, old protocol (one process) against new (the minimum of
# independent repeats in fresh processes): 60 kernel models (conv, dwconv, pooling, element-wise) and 12
# CNNs, every model measured REPEATS times in one shuffled order. Run it twice, at least 30 minutes apart
# with other work in between, then compare:
#   bench/run_repeatability_bench.sh OUT A      # first run
#   bench/run_repeatability_bench.sh OUT B      # second run, later
#   build/bench/repeatability_bench compare OUT/run_A.json OUT/run_B.json
# Each run resumes after an interruption. bench/RESULTS-repeatability.md quotes one pair of runs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:?usage: run_repeatability_bench.sh OUT A|B [build-dir]}")"
run="${2:?usage: run_repeatability_bench.sh OUT A|B [build-dir]}"
build="${3:-build}"
repeats="${REPEATS:-6}"
cmake --build "$build" -j "$(nproc)" --target nn-meter repeatability_bench >/dev/null
# A private copy: rebuilding the tree while the bench runs must not swap the binary under its workers.
freeze_binaries "$build" "$out/bin" nn-meter nn-meter-worker bench/repeatability_bench
export NN_METER_HOME="$out/home"
export NN_METER_WORKER="$out/bin/nn-meter-worker"
use_frozen "$(dirname "$NN_METER_WORKER")"
if [ ! -d "$out/kernels" ]; then
  ws="$out/ws"
  "$out/bin/nn-meter" create --workspace "$ws" --backend onednn_cpu >/dev/null
  for spec in conv-bn-relu:20 dwconv-bn-relu:15 maxpool:5 avgpool:5 relu:5 add:5 hswish:5 global-avgpool:5; do
    "$out/bin/nn-meter" sample --workspace "$ws" --kernel "${spec%%:*}" --num "${spec##*:}" --seed 11 >/dev/null
  done
  mkdir -p "$out/kernels.tmp" && cp "$ws"/predictor_build/kernels/*.onnx "$out/kernels.tmp/" && mv "$out/kernels.tmp" "$out/kernels"
fi
if [ ! -d "$out/cnns" ]; then
  "$out/bin/nn-meter" networks export --set evaluation --out "$out/all_cnns" >/dev/null
  mkdir -p "$out/cnns.tmp"
  for m in mobilenet_v1_r224_w1 mobilenet_v2_r224_w1 mobilenet_v2_r160_w0.5 mobilenet_v3_large_r224_w1 mnasnet1_0_r192_w0.75 \
           efficientnet_b0_r224_w1 shufflenet_v2_x1_0_r224_w1 resnet18_r224_w1 resnet50_r160_w0.5 squeezenet1_1_r224_w1 \
           googlenet_r160_w0.5 densenet121_r160_w0.5; do
    cp "$out/all_cnns/$m.onnx" "$out/cnns.tmp/"
  done
  mv "$out/cnns.tmp" "$out/cnns"
fi
# Short repeats: inside one process the rounds agree within 1-2 %, so a repeat needs few of them.
cat > "$out/config.yaml" <<'YAML'
NUM_THREADS: 1
WARMUP_RUNS: 5
NUM_RUNS: 10
NUM_ROUNDS: 2
MIN_TIME_MS: 10
YAML
/usr/bin/time -f "%e s" -o "$out/run_$run.time" "$out/bin/repeatability_bench" measure "$out/run_$run.json" "$repeats" \
  "$out/config.yaml" "$out/kernels" "$out/cnns"
echo "run $run: $(ls "$out/kernels" | wc -l) kernel models, $(ls "$out/cnns" | wc -l) CNNs, $repeats repeats, $(cat "$out/run_$run.time") (finished $(date -u +%H:%M) UTC)"
