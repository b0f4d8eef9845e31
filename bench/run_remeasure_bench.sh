#!/usr/bin/env bash
# The same predictor on another measurement: on the output of `CALIBRATE=N bench/run_accuracy_bench.sh OUT`, the
# 55 and the calibration networks of CALIBRATE (absent: the run's own set) are measured again in one shuffled
# order, with the run's frozen programs, into OUT/NAME (OUT/NAME.txt: the build's predictor calibrated on the whole
# set); then the predictor calibrated on each part and union of that set is scored from copies of that journal
# (nothing measured again: checked) into OUT/NAME-score/<set>. A criterion met on one measurement of a quiet
# session can miss on the next: judge a calibration set on two or more.
# Resumes like evaluate: rerun after an interruption. Takes a CALIBRATE larger than the run's (the new networks'
# ONNX are written with this checkout's build).
# Usage: [CALIBRATE=72|99|135] bench/run_remeasure_bench.sh OUT NAME [build-dir]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
source "$(dirname "${BASH_SOURCE[0]}")/calibration_sets.sh"
here="$(cd "$(dirname "$0")" && pwd)"
out="$(realpath "${1:?the output folder of bench/run_accuracy_bench.sh with CALIBRATE=72, 99 or 135}")"
name="${2:?a name for the new measurement (a folder under OUT)}"
build="$(realpath "${3:-$here/../build}")"
[ -f "$out/evaluate/results.json" ] && [ -d "$out/ws/predictor_build/predictor" ] ||
  { echo "$out is not a finished run of bench/run_accuracy_bench.sh" >&2; exit 1; }
calibrate="${CALIBRATE:-$(calibrate_of_run "$out")}"
calibration_parts "$calibrate" >/dev/null
# The run's frozen nn-meter may predate a set; the sets are deterministic, so this checkout's writes the same.
cmake --build "$build" -j "$(nproc)" --target nn-meter >/dev/null
make_calibration_sets "$out" "$calibrate" "$build/nn-meter"
nnm="$out/bin/nn-meter"
export NN_METER_HOME="$out/home"
export NN_METER_WORKER="$out/bin/nn-meter-worker"
use_frozen "$out/bin"
repeats="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["protocol"]["repeats"])' "$out/evaluate/results.json")"
predictor="$out/ws/predictor_build/predictor"
stamp() { echo "$name $1 $(date -u +%FT%TZ)" | tee -a "$out/timeline"; }
stamp evaluate
/usr/bin/time -f "%e s elapsed" -o "$out/$name.time" "$nnm" evaluate --predictor "$predictor" --onnx "$out/models" \
  --calibrate-on "$out/$(calibration_folder "$calibrate")" --repeats "$repeats" --work-dir "$out/$name" \
  --report "$out/$name.html" > "$out/$name.txt"
cat "$out/$name.time"
stamp scoring
mkdir -p "$out/$name-score"
for cal in $(scored_calibration_sets "$calibrate"); do
  echo "== term fitted on $cal"
  "$here/score_on_journal.sh" "$nnm" "$out/$name" "$out/$name-score/$cal" "$predictor" "$out/models" "$out/$cal" "$repeats"
done
stamp end
