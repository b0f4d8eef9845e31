#!/usr/bin/env bash
# PRIOR_ROWS against nn-Meter's column-wise prior sampling, on the run of bench/run_accuracy_bench.sh: the
# kernels that have prior rows (conv-bn-relu, dwconv-bn-relu, fc, maxpool, avgpool) are built again with the
# same sample counts, a share of them real layers of the prior library — never from the evaluated models'
# families (PRIOR_ROWS_EXCLUDE) — swapped into a copy of the baseline predictor, and the baseline's evaluate
# measurements rescored with it (nothing is measured twice). With KERNELS_EVAL=1 the r224 models of five
# families are also evaluated with --kernels (every kernel measured alone), once, and scored by both.
# ALIGNED_CHANNELS and SEED build other variants the same way, to compare sampling settings and to see the
# spread between builds that differ only in their seed.
# Usage: bench/run_prior_rows_bench.sh ACCURACY_OUT [build-dir]
#   env: PRIOR_ROWS (default 0.3), ALIGNED_CHANNELS (default 0), SEED (default 1), KERNELS_EVAL
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
cd "$(dirname "$0")/.."
base="$(realpath "${1:?the output folder of bench/run_accuracy_bench.sh}")"
build="${2:-build}"
share="${PRIOR_ROWS:-0.3}"
aligned="${ALIGNED_CHANNELS:-0}"
seed="${SEED:-1}"
out="$base/prior_rows_$share"
[ "$aligned" = 0 ] || out="${out}_aligned_$aligned"
[ "$seed" = 1 ] || out="${out}_seed_$seed"
cmake --build "$build" -j "$(nproc)" --target nn-meter >/dev/null
mkdir -p "$out"
freeze_binaries "$build" "$out" nn-meter nn-meter-worker
nnm="$out/nn-meter"
export NN_METER_HOME="$base/home"
export NN_METER_WORKER="$(dirname "$nnm")/nn-meter-worker"
use_frozen "$(dirname "$NN_METER_WORKER")"
ws="$out/ws"
[ -d "$ws/configs" ] || "$nnm" create --workspace "$ws" --backend onednn_cpu >/dev/null
cp "$base/ws/configs/backend_config.yaml" "$ws/configs/backend_config.yaml"
{
  echo "DETAIL: FALSE"
  echo "IMPLEMENT: onnx"
  echo "BATCH_SIZE: 1"
  echo "PRIOR_ROWS: $share"
  echo "ALIGNED_CHANNELS: $aligned"
  # The prior library's names of the 14 evaluated families: their layers must not be training samples.
  echo "PRIOR_ROWS_EXCLUDE: [alexnet, densenet121, efficientnetb0, googlenet, mnasnet, mobilenetv1, mobilenetv2,"
  echo "                     mobilenetv3, resnet18, resnet34, resnet50, shufflenetv2x1-0, squeezenet, vgg11]"
  echo "KERNELS:"
  grep -E '^  (conv-bn-relu|dwconv-bn-relu|fc|maxpool|avgpool):' "$base/ws/configs/predictorbuild_config.yaml"
} > "$ws/configs/predictorbuild_config.yaml"
"$nnm" build --workspace "$ws" --backend onednn_cpu --predictor-name onednn_cpu_rows --regressor gbdt --no-ruletest --seed "$seed" \
  | tee "$out/build.log"

# The baseline predictor with the rebuilt kernels' models swapped in.
rm -rf "$out/predictor"
cp -r "$base/ws/predictor_build/predictor" "$out/predictor"
python3 bench/swap_predictor_kernels.py "$ws/predictor_build/predictor" "$out/predictor"

rm -rf "$out/evaluate"
cp -r "$base/evaluate" "$out/evaluate"
"$nnm" evaluate --predictor "$out/predictor" --onnx "$base/models" --work-dir "$out/evaluate" --report "$out/report.html" \
  | tee "$out/evaluate.txt"

if [ "${KERNELS_EVAL:-0}" = 1 ]; then
  mkdir -p "$base/models_k"
  for m in resnet18 squeezenet1_1 mobilenet_v2 shufflenet_v2_x1_0 googlenet; do
    cp "$base/models/${m}_r224_w1.onnx" "$base/models_k/"
  done
  "$nnm" evaluate --predictor "$base/ws/predictor_build/predictor" --onnx "$base/models_k" --kernels --repeats 3 \
    --work-dir "$base/evaluate_k" --report "$base/report_k.html" | tee "$base/evaluate_k.txt"
  rm -rf "$out/evaluate_k"
  cp -r "$base/evaluate_k" "$out/evaluate_k"
  "$nnm" evaluate --predictor "$out/predictor" --onnx "$base/models_k" --kernels --repeats 3 \
    --work-dir "$out/evaluate_k" --report "$out/report_k.html" | tee "$out/evaluate_k.txt"
fi
