#!/usr/bin/env bash
# A build measured in shards against the same build on one host, on onednn_cpu (bench/RESULTS-sharding.md):
#   single:  the build on one host, nothing else running: the reference labels and wall time;
#   sharded: the same build as 2 shards at once, one per core (taskset), then merged: plan + shards + merge;
#   loaded:  2 shards again, shard 1 sharing its core with a CPU-bound process (started and stopped here);
# both merged with SHARD_LEVELS normalize, to compare the labels with and without it against the single build's.
# The build: conv-bn-relu, dwconv-bn-relu, fc and relu (SAMPLES of each, default 40) at the measurement settings of
# the presets (configs/presets via nn-meter create --preset quick), one iteration, no rule test or calibration.
# Usage: [SAMPLES=N] bench/run_sharding_bench.sh OUT [build-dir]   (~12 min on 2 cores at SAMPLES=40; resumes per part)
# Writes OUT/summary.md (what bench/RESULTS-sharding.md quotes).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
source "$(dirname "${BASH_SOURCE[0]}")/load_hog.sh"
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:?usage: run_sharding_bench.sh OUT [build-dir]}")"
build="${2:-build}"
samples="${SAMPLES:-40}"
frozen_nnmeter "$build" "$out"

workspace() {  # workspace DIR
  rm -rf "$1"
  "$nnm" create --workspace "$1" --backend onednn_cpu --preset quick >/dev/null
  cat > "$1/configs/predictorbuild_config.yaml" <<YAML
_base_: presets/quick/predictorbuild_config.yaml
PRIOR_ROWS: 0
CALIBRATION_NETWORKS: []
KERNELS:
  conv-bn-relu:   {INIT_SAMPLE_NUM: $samples, FINEGRAINED_SAMPLE_NUM: 1, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  dwconv-bn-relu: {INIT_SAMPLE_NUM: $samples, FINEGRAINED_SAMPLE_NUM: 1, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  fc:             {INIT_SAMPLE_NUM: $samples, FINEGRAINED_SAMPLE_NUM: 1, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  relu:           {INIT_SAMPLE_NUM: $samples, FINEGRAINED_SAMPLE_NUM: 1, ITERATION: 1, ERROR_THRESHOLD: 0.1}
YAML
}
build_args() { echo --workspace "$1" --backend onednn_cpu --no-ruletest --kernels conv-bn-relu,dwconv-bn-relu,fc,relu; }
now() { date +%s.%N; }

# single: one host.
ws="$out/single"
if [ ! -f "$ws.done" ]; then
  workspace "$ws"
  t0=$(now)
  # shellcheck disable=SC2046
  "$nnm" build $(build_args "$ws") > "$ws.log" 2>&1
  echo "$(now) - $t0" | bc > "$ws.done"
fi

# sharded (quiet) and loaded: plan, two shards at once on their own cores, merge.
for part in sharded loaded; do
  ws="$out/$part"
  [ -f "$ws.done" ] && continue
  workspace "$ws"
  t0=$(now)
  # shellcheck disable=SC2046
  "$nnm" build $(build_args "$ws") --plan-only --json > "$ws.plan.json"
  if [ "$part" = loaded ]; then
    start_hog 0
  fi
  # shellcheck disable=SC2046
  taskset -c 0 "$nnm" build $(build_args "$ws") --shard 1/2 > "$ws.shard1.log" 2>&1 &
  s1=$!
  # shellcheck disable=SC2046
  taskset -c 1 "$nnm" build $(build_args "$ws") --shard 2/2 > "$ws.shard2.log" 2>&1 &
  s2=$!
  wait "$s1"
  wait "$s2"
  stop_hog
  t_shards=$(now)
  # Merged with SHARD_LEVELS normalize; every merged record keeps its shard's level, so the report also has the
  # labels as measured (off).
  printf 'SHARD_LEVELS: normalize\n' >> "$ws/configs/backend_config.yaml"
  # shellcheck disable=SC2046
  "$nnm" build $(build_args "$ws") --shards 2 > "$ws.merge.log" 2>&1
  t_end=$(now)
  printf '%s %s %s\n' "$t0" "$t_shards" "$t_end" > "$ws.done"
done

python3 bench/sharding_report.py "$out" > "$out/summary.md"
cat "$out/summary.md"
