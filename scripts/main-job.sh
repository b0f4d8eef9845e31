#!/usr/bin/env bash
# The main job, end to end on this machine: build nn-meter; walk through registration with the example
# plugins; then build kernel latency predictors for onednn_cpu (the embedded backend) for the main kernels
# with modest sample counts, every sample measured in 5 independent repeats (fresh processes, one shuffled
# order), calibrate its composition term on 23 reference networks, print the accuracy tables next to the
# measurement's own repeatability, register the predictor (with the backend's fusion rules), predict four CNNs,
# and evaluate the predictor on them: each CNN measured by the same protocol, the report in OUT/report.html.
# About 25 minutes on 2 cores from a fresh clone (bench/RESULTS-main-job.md). Everything goes to a throw-away
# NN_METER_HOME and workspace under the output folder.
# Usage: scripts/main-job.sh [output-dir]   (default: ./main-job-output)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --if-missing
out="$(realpath -m "${1:-main-job-output}")"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
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

# Kernel predictors for onednn_cpu: modest sample counts (nn-Meter's defaults are 10000 / 5000 / 3000).
ws="$out/onednn_ws"
step create --workspace "$ws" --backend onednn_cpu
# Short repeats: inside one process the rounds agree within 1-2 %; what varies is the level of each
# process, which the five repeats (REPEATS, the default) in fresh processes take care of.
cat > "$ws/configs/backend_config.yaml" <<'YAML'
NUM_THREADS: 1
WARMUP_RUNS: 5
NUM_RUNS: 10
NUM_ROUNDS: 2
MIN_TIME_MS: 10
REPEATS: 5
REPEAT_STATISTIC: min
DRIFT_PROBE_EVERY: 500
YAML
step connect --backend onednn_cpu --workspace "$ws"
cat > "$ws/configs/predictorbuild_config.yaml" <<'YAML'
DETAIL: FALSE
IMPLEMENT: onnx
BATCH_SIZE: 1
# A share of real CNN layers among the samples; never those of the four CNNs evaluated at the end.
PRIOR_ROWS: 0.3
PRIOR_ROWS_EXCLUDE: [mobilenetv2, resnet18, mnasnet, mobilenetv3]
# The build calibrates itself: the composition term fitted on 23 other sizes of the reference architectures
# (never the four evaluated at the end), measured by the same protocol once the kernels are trained.
CALIBRATION_NETWORKS: [calibration]
KERNELS:
  conv-bn-relu:   {INIT_SAMPLE_NUM: 120, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  dwconv-bn-relu: {INIT_SAMPLE_NUM: 80, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  fc:             {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  maxpool:        {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  avgpool:        {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  global-avgpool: {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  se:             {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  hswish:         {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  relu:           {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  add:            {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  bnrelu:         {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  concat:         {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
YAML
step build --workspace "$ws" --backend onednn_cpu --predictor-name onednn_cpu_demo
step register --predictor "$ws/predictor_build/predictor/meta.yaml"
step --list-predictors

# Use it: predict real CNNs without running them, then measure them by the same protocol to judge it.
step networks export --set main-job --out "$out/models"
step predict --predictor onednn_cpu_demo --onnx "$out/models"
step predict --predictor onednn_cpu_demo --onnx "$out/models/mobilenet_v2_r224_w1.onnx" --verbose
step get_ir --onnx "$out/models/mobilenet_v2_r224_w1.onnx"
step benchmark --backend onednn_cpu --onnx "$out/models/mobilenet_v2_r224_w1.onnx" --threads 1 --repeats 5
step evaluate --predictor onednn_cpu_demo --onnx "$out/models" --work-dir "$out/evaluate" --report "$out/report.html"
