#!/usr/bin/env bash
# The main job, end to end on this machine: build nn-meter; walk through registration with the example
# plugins; then build kernel latency predictors for onednn_cpu (the embedded backend) from the preset quick of
# `nn-meter create` (the main kernels with modest sample counts), every sample measured in 5 independent
# repeats (fresh processes, one shuffled order), calibrate its composition term on 23 reference networks, print
# the accuracy tables next to the measurement's own repeatability, register the predictor (with the backend's
# fusion rules), predict four CNNs, and evaluate the predictor on them: each CNN measured by the same protocol,
# in one order with the 23 calibration networks, the report in OUT/report.html.
# About 20 minutes on 2 cores from a fresh clone, 30 on a slow day (bench/RESULTS-main-job.md). Everything goes to
# a throw-away NN_METER_HOME and workspace under the output folder.
# Usage: scripts/main-job.sh [output-dir]   (default: ./main-job-output)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --if-missing
out="$(realpath -m "${1:-main-job-output}")"
bash scripts/configure.sh build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target nn-meter backend kernel_script config_sampler feature_parser
nnm="$PWD/build/nn-meter"
export NN_METER_HOME="$out/home"
rm -rf "$out" && mkdir -p "$out"

step() { printf '\n$ nn-meter %s\n' "$*"; "$nnm" "$@"; }

# A plugin package: the example backend library next to its config and meta file.
pkg="$out/my_backend_package"
mkdir -p "$pkg"
cp build/examples/plugins/custom_backend/backend.so examples/plugins/custom_backend/{config.yaml,meta_backend.yaml} "$pkg/"
kpkg="$out/my_kernel_package"
mkdir -p "$kpkg"
cp build/examples/plugins/custom_kernel/{kernel_script,config_sampler,feature_parser}.so examples/plugins/custom_kernel/meta_kernel.yaml "$kpkg/"

step --list-backends
step --list-kernels
step check-env
step register --backend "$pkg/meta_backend.yaml"
step register --kernel "$kpkg/meta_kernel.yaml"
step create --customized-workspace "$out/custom_ws" --backend my_backend
step connect --backend my_backend --workspace "$out/custom_ws"
step --list-backends
step --list-kernels
step unregister --backend my_backend
step unregister --kernel mykernel
step --list-backends

# Kernel predictors for onednn_cpu from the preset quick: thirteen kernels at modest sample counts (nn-Meter's
# defaults are 10000 / 5000 / 3000), calibrated on the 23 networks of the set calibration (`nn-meter create
# --list-presets`; its files land in $ws/configs/presets/quick/).
ws="$out/onednn_ws"
step create --workspace "$ws" --backend onednn_cpu --preset quick
step connect --backend onednn_cpu --workspace "$ws"
# The main job's one override of the preset: no layer of the four CNNs evaluated at the end is a training sample.
echo "PRIOR_ROWS_EXCLUDE: [mobilenetv2, resnet18, mnasnet, mobilenetv3]" >> "$ws/configs/predictorbuild_config.yaml"
step build --workspace "$ws" --backend onednn_cpu --predictor-name onednn_cpu_demo
step register --predictor "$ws/predictor_build/predictor/meta.yaml"
step --list-predictors

# Use it: predict real CNNs without running them, then measure them by the same protocol to judge it.
step networks export --set main-job --out "$out/models"
step predict --predictor onednn_cpu_demo --onnx "$out/models"
step predict --predictor onednn_cpu_demo --onnx "$out/models/mobilenet_v2_r224_w1.onnx" --verbose
step get_ir --onnx "$out/models/mobilenet_v2_r224_w1.onnx"
step benchmark --backend onednn_cpu --onnx "$out/models/mobilenet_v2_r224_w1.onnx" --threads 1 --repeats 5
# The calibration networks are measured again in one shuffled order with the four CNNs: the machine's level moves
# within minutes on a VM, and a term fitted in that order judges the predictor rather than the move. evaluate also
# scores the predictor's own term, as predict gives it.
step networks export --set calibration --out "$out/calibration"
step evaluate --predictor onednn_cpu_demo --onnx "$out/models" --calibrate-on "$out/calibration" \
  --work-dir "$out/evaluate" --report "$out/report.html"
