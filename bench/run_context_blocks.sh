#!/usr/bin/env bash
# Kernels measured in context: every layer of the 55 networks timed as the last step of a block made of it and
# the DEPTH layers the network runs before it (bench/context_blocks.py cuts the blocks from the networks),
# against the same layer inside the whole network and alone — whether sampling blocks instead of lone kernels
# would measure what a layer costs in a network. Needs a bench/run_composition_steps.sh run of the 55 (its
# steps.jsonl.gz and models) and Debian's python3-onnx (/usr/bin/python3). Each depth's blocks in one shuffled
# order per process, REPEATS fresh processes one after the other, COLD_CACHE's eviction before every run as for
# any kernel; nothing else may run meanwhile.
# Usage: bench/run_context_blocks.sh STEPS_RUN_DIR [OUT] [build-dir]   (DEPTHS="1 3", REPEATS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/freeze_binaries.sh
steps="$(realpath "$1")"
out="$(realpath -m "${2:-context-blocks-output}")"
build="${3:-build}"
cmake --build "$build" -j "$(nproc)" --target composition_steps >/dev/null
mkdir -p "$out"
freeze_binaries "$build" "$out/bin" bench/composition_steps
use_frozen "$out/bin"
runs=()
for depth in ${DEPTHS:-1 3}; do
  run="$out/depth$depth"
  runs+=("$run")
  [ -d "$run/blocks" ] || /usr/bin/python3 bench/context_blocks.py cut "$steps/steps.jsonl.gz" "$steps/models" "$run/blocks" \
    "$depth" 2> "$run.cut.log"
  mapfile -t files < <(ls "$run"/blocks/*.onnx)
  for r in $(seq 1 "${REPEATS:-5}"); do
    [ -s "$run/repeat$r.done" ] && continue
    echo "depth $depth repeat $r: ${#files[@]} blocks $(date -u +%FT%TZ)" | tee -a "$out/timeline"
    rm -f "$run/repeat$r.jsonl"
    taskset -c 1 "$out/bin/composition_steps" "$run/repeat$r.jsonl" "$r" cold0 "${files[@]}" 2> "$run/repeat$r.log"
    date -u +%FT%TZ > "$run/repeat$r.done"
  done
done
echo "done $(date -u +%FT%TZ)" | tee -a "$out/timeline"
python3 bench/context_blocks.py report "$steps/steps.jsonl.gz" "${runs[@]}" | tee "$out/context_blocks.txt"
