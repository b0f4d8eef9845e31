#!/usr/bin/env bash
# The main job, end to end on this machine: build nn-meter, then walk through nn-Meter's workflow with the
# embedded onednn_cpu backend and the example plugins, in a throw-away NN_METER_HOME and workspace.
# Usage: scripts/main-job.sh [output-dir]   (default: ./main-job-output)
set -euo pipefail
cd "$(dirname "$0")/.."
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
step check-env || true
step create --workspace "$out/onednn_ws" --backend onednn_cpu
step connect --backend onednn_cpu --workspace "$out/onednn_ws"
step register --backend "$pkg/meta_backend.yaml"
step register --kernel "$kpkg/meta_kernel.yaml"
step create --customized-workspace "$out/custom_ws" --backend my_backend
step connect --backend my_backend --workspace "$out/custom_ws"
step --list-backends
step --list-kernels
step unregister --backend my_backend
step unregister --kernel mykernel
step --list-backends
