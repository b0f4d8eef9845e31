# Sourced by the benches that rescore a finished bench/run_accuracy_bench.sh run on parts of its calibration
# networks. calibration_subsets OUT NN_METER prints every set of the library (`nn-meter networks list`) whose
# networks are all among OUT/calibration, and writes each into OUT/calibration-sets/NAME for
# `evaluate --calibrate-on`: a term fitted on any of them is scored on the run's measurement, nothing measured again.
calibration_subsets() {
  local out="$1" nn_meter="$2" set
  [ -d "$out/calibration" ] || { echo "$out has no calibration networks (a run with RECALIBRATE=0?)" >&2; return 1; }
  for set in $("$nn_meter" --json networks list | python3 -c '
import json, os, sys
have = set(os.listdir(sys.argv[1]))
print(" ".join(s["name"] for s in json.load(sys.stdin)["sets"] if all(n["file"] in have for n in s["networks"])))' \
      "$out/calibration"); do
    "$nn_meter" networks export --set "$set" --out "$out/calibration-sets/$set" >/dev/null
    echo "$set"
  done
}
