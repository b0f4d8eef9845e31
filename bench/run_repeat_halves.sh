#!/usr/bin/env bash
# Five repeats against ten, in one session: on a run of `CALIBRATE=1 EVAL_REPEATS=10 bench/run_accuracy_bench.sh`
# (23 calibration + 55 evaluated networks, 10 repeats each in one shuffled order), the same calibrate-and-score
# is run on each half of every network's repeats (repeats 0-4, then 5-9 renumbered 0-4) from copies of the
# journal, so each half is a 5-repeat measurement of the same session and nothing is measured again.
# Results: OUT/halves/{first,second}.txt next to OUT/evaluate.txt (the 10-repeat score).
# Usage: bench/run_repeat_halves.sh OUT
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
out="$(realpath "${1:?the output folder of bench/run_accuracy_bench.sh run with CALIBRATE=1 EVAL_REPEATS=10}")"
[ -f "$out/evaluate/composition.json" ] || { echo "$out has no --calibrate-on evaluation: run it with CALIBRATE=1" >&2; exit 1; }
nnm="$out/bin/nn-meter"
export NN_METER_HOME="$out/home"
export NN_METER_WORKER="$out/bin/nn-meter-worker"
use_frozen "$(dirname "$NN_METER_WORKER")"
mkdir -p "$out/halves"
for half in first second; do
  dir="$out/halves/$half"
  rm -rf "$dir"
  cp -r "$out/evaluate" "$dir"
  rm -f "$dir/composition.json"
  python3 - "$dir/journal.jsonl" "$half" <<'PY'
import json, os, sys
path, half = sys.argv[1], sys.argv[2]
kept = []
for line in open(path):
    record = json.loads(line)
    repeat = record.get("repeat", 0)
    if half == "first" and repeat < 5:
        kept.append(record)
    elif half == "second" and 5 <= repeat < 10:
        record["repeat"] = repeat - 5
        kept.append(record)
with open(path + ".tmp", "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in kept)
os.replace(path + ".tmp", path)
PY
  before=$(wc -l < "$dir/journal.jsonl")
  "$nnm" evaluate --predictor "$out/ws/predictor_build/predictor" --onnx "$out/models" \
    --calibrate-on "$out/calibration_models" --repeats 5 --work-dir "$dir" --report "$dir/report.html" > "$out/halves/$half.txt"
  after=$(wc -l < "$dir/journal.jsonl")
  # Nothing may be measured again: the halves are the session's own repeats.
  [ "$before" = "$after" ] || { echo "the $half half measured $((after - before)) repeats again" >&2; exit 1; }
  echo "== repeats of the $half half (5 of 10)"
  grep -E "models scored|repeatability|composition fitted|plain sum" "$out/halves/$half.txt"
done
echo "== all 10 repeats"
grep -E "models scored|repeatability|composition fitted|plain sum" "$out/evaluate.txt"
