#!/usr/bin/env bash
# The same predictor on another measurement: on the output of bench/run_accuracy_bench.sh OUT, its scored networks
# (OUT/models) and calibration networks (OUT/calibration) are measured again in one shuffled order, with the run's
# frozen programs, into OUT/NAME (OUT/NAME.txt: the build's predictor calibrated on all of them); then the
# predictor calibrated on each library set among the calibration networks (calibration, calibration-more, ...,
# calibration-135 for the preset accurate) is scored from copies of that journal (nothing measured again:
# checked) into OUT/NAME-score/<set>. A criterion met on one measurement of a quiet session can miss on the
# next: judge a calibration set on two or more.
# Resumes like evaluate: rerun after an interruption.
# Usage: bench/run_remeasure_bench.sh OUT NAME
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
source "$(dirname "${BASH_SOURCE[0]}")/calibration_subsets.sh"
here="$(cd "$(dirname "$0")" && pwd)"
out="$(realpath "${1:?the output folder of bench/run_accuracy_bench.sh}")"
name="${2:?a name for the new measurement (a folder under OUT)}"
[ -f "$out/evaluate/results.json" ] && [ -d "$out/ws/predictor_build/predictor" ] && [ -d "$out/calibration" ] ||
  { echo "$out is not a finished run of bench/run_accuracy_bench.sh with its calibration networks" >&2; exit 1; }
nnm="$out/bin/nn-meter"
export NN_METER_HOME="$out/home"
export NN_METER_WORKER="$out/bin/nn-meter-worker"
use_frozen "$out/bin"
repeats="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["protocol"]["repeats"])' "$out/evaluate/results.json")"
predictor="$out/ws/predictor_build/predictor"
stamp() { echo "$name $1 $(date -u +%FT%TZ)" | tee -a "$out/timeline"; }
stamp evaluate
/usr/bin/time -f "%e s elapsed" -o "$out/$name.time" "$nnm" evaluate --predictor "$predictor" --onnx "$out/models" \
  --calibrate-on "$out/calibration" --repeats "$repeats" --work-dir "$out/$name" --report "$out/$name.html" \
  > "$out/$name.txt"
cat "$out/$name.time"
stamp scoring
mkdir -p "$out/$name-score"
for cal in $(calibration_subsets "$out" "$nnm"); do
  echo "== term fitted on $cal"
  "$here/score_on_journal.sh" "$nnm" "$out/$name" "$out/$name-score/$cal" "$predictor" "$out/models" \
    "$out/calibration-sets/$cal" "$repeats"
done
stamp end
