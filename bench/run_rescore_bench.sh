#!/usr/bin/env bash
# One measurement, several predictors and calibration sets: on the output of
# `CALIBRATE=72 bench/run_accuracy_bench.sh OUT` (the 55 evaluated and 72 calibration networks measured in one
# shuffled order), the build's own predictor and every LABEL=PREDICTOR given are calibrated on the 23, the 49 and
# all 72 (on a CALIBRATE=99 run also on the 27 of span_calibration_models and all 99, on a CALIBRATE=135 run also
# on the 36 of small_calibration_models and all 135) and scored on the 55, each
# from a copy of OUT/evaluate's journal (nothing measured again: checked).
# Results: OUT/score/<label>_<cal>.txt (and its work dir with results.json).
# RESCORE_WITH=BUILD_DIR scores with that build's programs (frozen into OUT/bin-rescore) instead of the run's own,
# into OUT/score-rescore: a newer calibrate judged on the same measurement.
# Usage: bench/run_rescore_bench.sh OUT [LABEL=PREDICTOR ...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
source "$(dirname "${BASH_SOURCE[0]}")/calibration_sets.sh"
here="$(cd "$(dirname "$0")" && pwd)"
out="$(realpath "${1:?the output folder of CALIBRATE=72, 99 or 135 bench/run_accuracy_bench.sh}")"
shift
[ -d "$out/more_calibration_models" ] && [ -f "$out/evaluate/results.json" ] ||
  { echo "$out is not a finished CALIBRATE=72, 99 or 135 run of bench/run_accuracy_bench.sh" >&2; exit 1; }
calibrate="$(calibrate_of_run "$out")"
make_calibration_sets "$out" "$calibrate" "$out/bin/nn-meter"
mapfile -t sets < <(scored_calibration_sets "$calibrate")
bin="$out/bin" score="$out/score"
if [ -n "${RESCORE_WITH:-}" ]; then
  bin="$out/bin-rescore" score="$out/score-rescore"
  freeze_binaries "$RESCORE_WITH" "$bin" nn-meter nn-meter-worker
fi
nnm="$bin/nn-meter"
export NN_METER_HOME="$out/home"
export NN_METER_WORKER="$bin/nn-meter-worker"
use_frozen "$bin"
repeats="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["protocol"]["repeats"])' "$out/evaluate/results.json")"
mkdir -p "$score"
for arg in "build=$out/ws/predictor_build/predictor" "$@"; do
  label="${arg%%=*}"
  predictor="${arg#*=}"
  for cal in "${sets[@]}"; do
    echo "== $label, term fitted on $cal"
    "$here/score_on_journal.sh" "$nnm" "$out/evaluate" "$score/${label}_$cal" "$predictor" "$out/models" \
      "$out/$cal" "$repeats"
  done
done
