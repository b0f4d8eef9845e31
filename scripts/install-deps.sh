#!/usr/bin/env bash
# Installs the Debian 12 packages nn-meter builds and tests with (run as root, or with sudo).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -q
# ONNX needs protobuf's dev package; oneDNN's CMake config needs the OpenCL headers; XGBoost's needs the
# xgboost CLI package (see ../shared/reference/dependencies-debian.md). Chromium and pdftotext render the
# HTML report of `nn-meter evaluate` in its test, as a person would see it.
$SUDO apt-get install -y -q --no-install-recommends \
  cmake g++ make pkg-config \
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata \
  libdnnl-dev ocl-icd-opencl-dev \
  libxgboost-dev xgboost \
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev \
  libgtest-dev googletest libbenchmark-dev libsqlite3-dev \
  chromium poppler-utils
