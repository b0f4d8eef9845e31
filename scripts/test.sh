#!/usr/bin/env bash
# Builds nn-meter and runs the whole test suite (unit, CLI end-to-end, conformance) through ctest.
# Usage: scripts/test.sh [build-dir] [extra cmake args...]   e.g. scripts/test.sh build-asan -DNNMETER_SANITIZE=ON
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --if-missing
build_dir="${1:-build}"
shift || true
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build_dir" -j "$(nproc)"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)"
