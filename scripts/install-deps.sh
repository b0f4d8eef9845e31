#!/usr/bin/env bash
# Installs the Debian 12 packages nn-meter builds and tests with (run as root, or with sudo).
# Usage: scripts/install-deps.sh [--if-missing] [--dry-run]
#   --if-missing  do nothing, quietly, when every package is already installed (scripts/test.sh and
#                 scripts/main-job.sh call it so on a fresh machine no separate set-up step is needed)
#   --dry-run     print the packages that would be installed, install nothing
# NNMETER_EXTRA_PACKAGES="a b" adds packages to require (plugins' own dependencies).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
if_missing=0 dry_run=0
for arg in "$@"; do
  case "$arg" in
    --if-missing) if_missing=1 ;;
    --dry-run) dry_run=1 ;;
    *) echo "install-deps.sh: unknown option '$arg' (use --if-missing, --dry-run)" >&2; exit 2 ;;
  esac
done
# ONNX needs protobuf's dev package; oneDNN's CMake config needs the OpenCL headers; XGBoost's needs the
# xgboost CLI package (each found by trying Debian 12 packages on a clean machine). Chromium and pdftotext render the
# HTML report of `nn-meter evaluate` in its test, as a person would see it; help2man writes the man page.
# The Python package builds with pybind11 against Debian's python3; its tests use pytest, numpy, onnx (to
# write models), torch (predicting a torch.nn.Module) and torchvision (real exports of its models);
# python3-venv gives the pip-install test its fresh virtual environment.
# Ninja builds a fresh tree sooner than make with the same cores (scripts/configure.sh).
# flatbuffers writes the TFLite export; Arm NN's TFLite parser runs the exported files in the tests (its
# only backend on x86, CpuRef, is a separate package that nothing depends on).
packages=(
  cmake g++ make ninja-build pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  libdnnl-dev ocl-icd-opencl-dev
  libxgboost-dev xgboost
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libgtest-dev googletest libbenchmark-dev libsqlite3-dev
  chromium poppler-utils
  help2man
  python3-dev pybind11-dev python3-pytest python3-numpy python3-onnx python3-torch python3-torchvision
  python3-venv
  libflatbuffers-dev flatbuffers-compiler
  libxnnpack-dev libpthreadpool-dev libcpuinfo-dev
  libarmnn-dev libarmnntfliteparser-dev libarmnn-cpuref-backend22
  slurmctld slurmd slurm-client munge  # the sharded build's test runs a one-node Slurm (scripts/slurm-local.sh)
)
packages+=(${NNMETER_EXTRA_PACKAGES:-})  # more packages to require (word-split on purpose)

missing=()
for p in "${packages[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then missing+=("$p"); fi
done
if [ "$if_missing" = 1 ] && [ "${#missing[@]}" = 0 ]; then exit 0; fi
to_install=("${packages[@]}")
[ "$if_missing" = 1 ] && to_install=("${missing[@]}")
if [ "$dry_run" = 1 ]; then
  echo "would install: ${to_install[*]}"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${to_install[@]}"
