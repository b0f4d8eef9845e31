#!/usr/bin/env bash
# Scores a predictor on networks already measured: a copy of an evaluate work dir's journal, the composition term
# fitted on CALIBRATE_ON, MODELS predicted with it (OUT_DIR.txt, OUT_DIR/results.json); fails if anything was
# measured again — evaluate converts only what it measures, and nothing journaled is measured again.
# CALIBRATE_ON "-" keeps the predictor's own term (the one its build fitted, on networks measured in another run).
# CONFIG=FILE passes evaluate a measurement config (--config): e.g. MAX_REPEATS: 0, so that a predictor built with
# adaptive repeats is scored on networks measured at fixed ones.
# Usage: [CONFIG=FILE] bench/score_on_journal.sh NN_METER MEASURED_WORK_DIR OUT_DIR PREDICTOR MODELS CALIBRATE_ON REPEATS
set -euo pipefail
[ $# = 7 ] || { echo "usage: $0 NN_METER MEASURED_WORK_DIR OUT_DIR PREDICTOR MODELS CALIBRATE_ON REPEATS" >&2; exit 2; }
nnm="$1" measured="$2" dir="$3" predictor="$4" models="$5" calibrate_on="$6" repeats="$7"
rm -rf "$dir"
mkdir -p "$dir"
cp "$measured/journal.jsonl" "$dir/"
before=$(wc -l < "$dir/journal.jsonl")
calibration=(--calibrate-on "$calibrate_on")
[ "$calibrate_on" != - ] || calibration=()
"$nnm" evaluate --predictor "$predictor" --onnx "$models" "${calibration[@]}" --repeats "$repeats" ${CONFIG:+--config "$CONFIG"} \
  --work-dir "$dir" > "$dir.txt"
after=$(wc -l < "$dir/journal.jsonl")
[ "$before" = "$after" ] || { echo "scoring $predictor on $calibrate_on measured $((after - before)) repeats again" >&2; exit 1; }
grep -E "models scored|repeatability|composition fitted|plain sum" "$dir.txt"
