#!/usr/bin/env bash
# More calibration networks, and composition terms with more coefficients: the 55 evaluated networks, the 23
# calibration networks of run_accuracy_bench.sh and 49 more (`nn-meter networks export --set calibration-more`: other
# resolutions and widths of every architecture, in neither set) measured by `nn-meter evaluate` in one shuffled
# order with REPEATS repeats each, then again up to MORE_REPEATS (the same work dir: only the new repeats are
# measured). Every predictor given is then calibrated on the 23, the 49 and all 72 and scored on the 55, from
# copies of the journal (nothing measured again: checked), and bench/composition_kernel_types.py refits the
# term's forms (footprint; + kernel shares; a coefficient per kind of kernel; both) on each.
# Predictors are PREDICTOR folders of earlier builds (run_accuracy_bench.sh OUT/ws/predictor_build/predictor);
# the first one is the one `evaluate` measures with (any would do: measurements do not depend on it).
# Results: OUT/evaluate{REPEATS,MORE_REPEATS}.txt, OUT/score/<label>_<repeats>_<cal>.txt, OUT/forms_<label>_<repeats>.txt;
# bench/RESULTS-accuracy.md ("Twenty repeats") quotes one run.
# Usage: [BACKEND=onednn_cpu] [REPEATS=10] [MORE_REPEATS=20] bench/run_more_calibration_bench.sh OUT build-dir \
#          LABEL=PREDICTOR [LABEL=PREDICTOR ...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
here="$(cd "$(dirname "$0")" && pwd)"
out="$(realpath -m "${1:?output folder}")"
build="$(realpath "${2:?build directory}")"
shift 2
[ $# -ge 1 ] || { echo "give at least one LABEL=PREDICTOR_FOLDER" >&2; exit 2; }
repeats="${REPEATS:-10}"
more="${MORE_REPEATS:-20}"
cmake --build "$build" -j "$(nproc)" --target nn-meter nn-meter-worker prediction_bench >/dev/null
freeze_binaries "$build" "$out/bin" nn-meter nn-meter-worker bench/prediction_bench
nnm="$out/bin/nn-meter"
export NN_METER_HOME="$out/home"
export NN_METER_WORKER="$out/bin/nn-meter-worker"
use_frozen "$(dirname "$NN_METER_WORKER")"
[ -d "$out/models" ] || "$out/bin/nn-meter" networks export --set evaluation --out "$out/models" >/dev/null
[ -d "$out/cal23" ] || "$out/bin/nn-meter" networks export --set calibration --out "$out/cal23" >/dev/null
[ -d "$out/cal49" ] || "$out/bin/nn-meter" networks export --set calibration-more --out "$out/cal49" >/dev/null
mkdir -p "$out/cal72"
ln -sf "$out"/cal23/*.onnx "$out"/cal49/*.onnx "$out/cal72/"
stamp() { echo "$1 $(date -u +%FT%TZ)" | tee -a "$out/timeline"; }
# A copy of an evaluate work dir without its converted models (4.5 GB here): evaluate converts only what it
# measures, and what is journaled is not measured again.
copy_work() {
  mkdir -p "$2"
  find "$1" -mindepth 1 -maxdepth 1 ! -name converted ! -name composition.json -exec cp -r {} "$2/" \;
}
first="${1#*=}"
for r in "$repeats" "$more"; do
  # The second run continues the first's journal: only repeats $repeats.. are measured.
  [ "$r" = "$repeats" ] || [ -d "$out/evaluate$r" ] || copy_work "$out/evaluate$repeats" "$out/evaluate$r"
  stamp "evaluate$r"
  "$nnm" evaluate --predictor "$first" --onnx "$out/models" --calibrate-on "$out/cal72" --repeats "$r" \
    --work-dir "$out/evaluate$r" --report "$out/report$r.html" > "$out/evaluate$r.txt"
done
stamp scoring
mkdir -p "$out/score"
for arg in "$@"; do
  label="${arg%%=*}"
  predictor="${arg#*=}"
  for r in "$repeats" "$more"; do
    for cal in cal23 cal49 cal72; do
      echo "== $label, $r repeats, term fitted on $cal"
      "$here/score_on_journal.sh" "$nnm" "$out/evaluate$r" "$out/score/${label}_${r}_$cal" "$predictor" "$out/models" \
        "$out/$cal" "$r"
    done
    python3 "$here/composition_kernel_types.py" "$out/score/${label}_${r}"_cal{23,49,72}/results.json > "$out/forms_${label}_$r.txt"
  done
done
stamp end
