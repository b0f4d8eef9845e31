# Sourced by the accuracy benches: the calibration sets of `CALIBRATE=N` in a run's output folder. Each part is a
# folder of ONNX files written by `nn-meter networks export` (deterministic); a union (calibration_models72, 99,
# 135) is a folder of links to its parts' files.
#   calibration_parts N [NAME]                   the parts of the union N (1, 72, 99 or 135); NAME is the
#                                                setting an unknown N is reported as (CALIBRATE)
#   calibration_folder N                         the folder's name under OUT that `--calibrate-on` takes
#   scored_calibration_sets N                    every part and every union up to N: what a run of N is scored on
#   make_calibration_sets OUT N NN_METER         writes what is missing of them under OUT
#   calibrate_of_run OUT                         the N a finished run of bench/run_accuracy_bench.sh measured

calibration_parts() {
  case "$1" in
    1) echo calibration ;;
    72) echo calibration more-calibration ;;
    99) echo calibration more-calibration span-calibration ;;
    135) echo calibration more-calibration span-calibration small-calibration ;;
    *) echo "${2:-CALIBRATE} must be 1 (the 23 calibration networks), 72 (those and 49 more), 99 (and 27 more at the top" \
         "of each architecture's range) or 135 (and 36 more at the narrow end of the mobile networks')" >&2
       return 2 ;;
  esac
}

calibration_folder() { if [ "$1" = 1 ]; then echo calibration_models; else echo "calibration_models$1"; fi; }

scored_calibration_sets() {
  local n="$1" part union
  calibration_parts "$n" >/dev/null || return
  for part in $(calibration_parts "$n"); do echo "${part//-/_}_models"; done
  for union in 72 99 135; do [ "$union" -le "$n" ] && echo "calibration_models$union"; done
  return 0
}

make_calibration_sets() {
  local out="$1" n="$2" nn_meter="$3" part set union
  calibration_parts "$n" >/dev/null || return
  for part in $(calibration_parts "$n"); do
    set=calibration  # more-calibration is the library's set calibration-more, and so on
    [ "$part" = calibration ] || set="calibration-${part%-calibration}"
    [ -d "$out/${part//-/_}_models" ] || "$nn_meter" networks export --set "$set" --out "$out/${part//-/_}_models" >/dev/null
  done
  for union in 72 99 135; do
    [ "$union" -le "$n" ] || continue
    mkdir -p "$out/calibration_models$union"
    for part in $(calibration_parts "$union"); do ln -sf "$out/${part//-/_}_models"/*.onnx "$out/calibration_models$union/"; done
  done
}

# From OUT/evaluate/results.json, not from the folders: a later set's folders may sit in OUT unmeasured by it.
calibrate_of_run() {
  local n
  n="$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1])).get("calibration_models", [])))' \
    "$1/evaluate/results.json")"
  case "$n" in
    23) echo 1 ;;
    72|99|135) echo "$n" ;;
    *) echo "$1/evaluate measured $n calibration networks: not a run of CALIBRATE=1, 72, 99 or 135" >&2; return 1 ;;
  esac
}
