#!/usr/bin/env bash
# One measurement, several predictors and calibration sets: on the output of bench/run_accuracy_bench.sh OUT (the
# scored and the calibration networks measured in one shuffled order), the build's own predictor and every
# LABEL=PREDICTOR given are calibrated on each library set among the run's calibration networks (for the preset
# accurate: calibration, calibration-more, calibration-span, calibration-small and their unions calibration-72,
# -99 and -135) and scored on OUT/models, each from a copy of OUT/evaluate's journal (nothing measured again:
# checked).
# Results: OUT/score/<label>_<set>.txt (and its work dir with results.json).
# RESCORE_WITH=BUILD_DIR scores with that build's programs (frozen into OUT/bin-rescore) instead of the run's own,
# into OUT/score-rescore: a newer calibrate judged on the same measurement.
# Usage: bench/run_rescore_bench.sh OUT [LABEL=PREDICTOR ...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
source "$(dirname "${BASH_SOURCE[0]}")/calibration_subsets.sh"
here="$(cd "$(dirname "$0")" && pwd)"
out="$(realpath "${1:?the output folder of bench/run_accuracy_bench.sh}")"
shift
[ -d "$out/calibration" ] && [ -f "$out/evaluate/results.json" ] ||
  { echo "$out is not a finished run of bench/run_accuracy_bench.sh with its calibration networks" >&2; exit 1; }
bin="$out/bin" score="$out/score"
if [ -n "${RESCORE_WITH:-}" ]; then
  bin="$out/bin-rescore" score="$out/score-rescore"
  rm -rf "$bin"  # rescoring measures nothing: each run takes the build it is given
  freeze_binaries "$RESCORE_WITH" "$bin" nn-meter nn-meter-worker
fi
nnm="$bin/nn-meter"
export NN_METER_HOME="$out/home"
export NN_METER_WORKER="$bin/nn-meter-worker"
use_frozen "$bin"
mapfile -t sets < <(calibration_subsets "$out" "$nnm")
repeats="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["protocol"]["repeats"])' "$out/evaluate/results.json")"
mkdir -p "$score"
for arg in "build=$out/ws/predictor_build/predictor" "$@"; do
  label="${arg%%=*}"
  predictor="${arg#*=}"
  for cal in "${sets[@]}"; do
    echo "== $label, term fitted on $cal"
    "$here/score_on_journal.sh" "$nnm" "$out/evaluate" "$score/${label}_$cal" "$predictor" "$out/models" \
      "$out/calibration-sets/$cal" "$repeats"
  done
done
