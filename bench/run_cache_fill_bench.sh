#!/usr/bin/env bash
# How full the caches must be before a cold timed run (COLD_CACHE_FILL_MB) for kernels measured alone to add
# up to the network they come from: `nn-meter evaluate --kernels` on six CNNs at 224 (AlexNet, DenseNet-121,
# GoogLeNet, MobileNetV2, ResNet18, SqueezeNet 1.1; every distinct kernel the predictor detects is measured alone
# too, 3 repeats each, one shuffled order) once per fill size, one size after the other in one session. The
# composition (Σ kernels alone / network − 1) does not depend on the predictor's accuracy, only on the kernels
# it detects: any onednn_cpu predictor folder will do. bench/composition_summary.py prints the table
# bench/RESULTS-accuracy.md and docs/profiling.md quote.
# Usage: bench/run_cache_fill_bench.sh PREDICTOR_FOLDER [OUT] [build-dir]   (SIZES="0 2 8 32 64 128" in MB)
set -euo pipefail
cd "$(dirname "$0")/.."
predictor="$(realpath "$1")"
out="$(realpath -m "${2:-cache-fill-bench-output}")"
build="${3:-build}"
cmake --build "$build" -j "$(nproc)" --target nn-meter prediction_bench >/dev/null
mkdir -p "$out"
export NN_METER_HOME="$out/home"
[ -d "$out/models" ] || {
  "$build/nn-meter" networks export --set evaluation --out "$out/all_models" >/dev/null
  mkdir -p "$out/models"
  for m in alexnet squeezenet1_1 densenet121 mobilenet_v2 resnet18 googlenet; do
    cp "$out/all_models/${m}_r224_w1.onnx" "$out/models/"
  done
}
runs=()
for mb in ${SIZES:-0 2 8 32 64 128}; do
  printf 'COLD_CACHE_FILL_MB: %s\n' "$mb" > "$out/fill_$mb.yaml"
  echo "fill $mb MB $(date -u +%FT%TZ)" | tee -a "$out/timeline"
  "$build/nn-meter" evaluate --predictor "$predictor" --onnx "$out/models" --kernels --repeats 3 \
    --config "$out/fill_$mb.yaml" --work-dir "$out/fill_$mb" > "$out/fill_$mb.txt"
  runs+=("$mb MB=$out/fill_$mb/results.json")
done
echo "end $(date -u +%FT%TZ)" | tee -a "$out/timeline"
python3 bench/composition_summary.py "${runs[@]}"
