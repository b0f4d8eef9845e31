#!/usr/bin/env bash
# Where composition comes from, layer by layer: every primitive of the 55 networks timed inside its network
# (bench/composition_steps) against the same primitive of the kernels the predictor detects, measured alone
# (every distinct kernel model `nn-meter evaluate --kernels` writes), under COLD_CACHE's eviction ("cold0")
# and back-to-back warm runs ("warm"), in one shuffled order per process, REPEATS fresh processes one after
# the other. bench/composition_steps.py reads the repeats (min over processes) and prints the table
# bench/RESULTS-accuracy.md quotes (the kernel uses per network come from the oracle run's results.json:
# bench/run_oracle_bench.sh); bench/composition_cells.py fits per-kernel ratios on one run (e.g. of the
# calibration networks) and scores them on the oracle run. Nothing else may run on the machine meanwhile.
# Usage: bench/run_composition_steps.sh PREDICTOR_FOLDER [OUT] [build-dir]   (REPEATS=5, PROTOCOLS=cold0,warm,
#        MODEL_SETS="evaluation": `nn-meter networks list`'s sets, e.g. "calibration calibration-more")
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/freeze_binaries.sh
predictor="$(realpath "$1")"
out="$(realpath -m "${2:-composition-steps-output}")"
build="${3:-build}"
cmake --build "$build" -j "$(nproc)" --target nn-meter prediction_bench composition_steps >/dev/null
mkdir -p "$out"
freeze_binaries "$build" "$out/bin" nn-meter bench/prediction_bench bench/composition_steps
use_frozen "$out/bin"
export NN_METER_HOME="$out/home"
if [ ! -d "$out/models" ]; then
  for set in ${MODEL_SETS:-evaluation}; do "$out/bin/nn-meter" networks export --set "$set" --out "$out/models" >/dev/null; done
fi
# The kernel models evaluate detects and writes, per network; a timeout too short for any measurement makes
# it stop there (every measurement fails, nothing is kept).
for f in "$out"/models/*.onnx; do
  m="$(basename "$f" .onnx)"
  [ -d "$out/kernels/$m/ev/kernels" ] && continue
  mkdir -p "$out/kernels/$m/in"
  ln -sf "$f" "$out/kernels/$m/in/"
  "$out/bin/nn-meter" evaluate --predictor "$predictor" --onnx "$out/kernels/$m/in" --repeats 1 --kernels \
    --kernel-repeats 1 --timeout 0.01 --work-dir "$out/kernels/$m/ev" >/dev/null 2>&1 || true
done
mapfile -t files < <(ls "$out"/models/*.onnx; ls "$out"/kernels/*/ev/kernels/*.onnx | awk -F/ '!seen[$NF]++')
echo "${#files[@]} models: $(ls "$out"/models/*.onnx | wc -l) networks and their distinct kernels" | tee -a "$out/timeline"
for r in $(seq 1 "${REPEATS:-5}"); do
  [ -s "$out/repeat$r.done" ] && continue
  echo "repeat $r $(date -u +%FT%TZ)" | tee -a "$out/timeline"
  rm -f "$out/repeat$r.jsonl"
  taskset -c 1 "$out/bin/composition_steps" "$out/repeat$r.jsonl" "$r" "${PROTOCOLS:-cold0,warm}" "${files[@]}" \
    2> "$out/repeat$r.log"
  date -u +%FT%TZ > "$out/repeat$r.done"
done
echo "done $(date -u +%FT%TZ)" | tee -a "$out/timeline"
python3 bench/composition_steps.py --reduce "$out" "$out/steps.jsonl.gz"
python3 bench/composition_steps.py "$out" | tee "$out/composition_steps.txt"
