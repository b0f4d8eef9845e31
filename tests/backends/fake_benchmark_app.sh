#!/usr/bin/env bash
# A stand-in for OpenVINO's benchmark_app, for the openvino backends' tests: appends its argv to
# $FAKE_BENCHMARK_APP_LOG (one line, words joined by '|') and prints the recorded report in
# $FAKE_BENCHMARK_APP_OUTPUT. FAKE_BENCHMARK_APP_DEVICE=missing answers as OpenVINO does without the stick.
log="${FAKE_BENCHMARK_APP_LOG:?FAKE_BENCHMARK_APP_LOG must name the argv log}"
(IFS='|'; printf '%s\n' "$*") >> "$log"
if [ "${1:-}" = -h ]; then
  echo "[ INFO ] OpenVINO:"
  echo "[ INFO ] Build ................................. 2023.0.0-10926-b4452d56304-releases/2023/0"
  echo "usage: benchmark_app [-h [HELP]] [-i PATHS_TO_INPUT [PATHS_TO_INPUT ...]] -m PATH_TO_MODEL"
  exit 0
fi
model=""
while [ $# -gt 0 ]; do
  if [ "$1" = -m ]; then model="$2"; fi
  shift
done
[ -f "$model" ] || { echo "[ ERROR ] Model file $model cannot be opened!"; exit 1; }
if [ "${FAKE_BENCHMARK_APP_DEVICE:-ok}" = missing ]; then
  echo "[Step 2/11] Loading OpenVINO Runtime"
  echo "[ ERROR ] Device with \"MYRIAD\" name is not registered in the OpenVINO Runtime"
  exit 1
fi
cat "${FAKE_BENCHMARK_APP_OUTPUT:?FAKE_BENCHMARK_APP_OUTPUT must name the recorded report}"
