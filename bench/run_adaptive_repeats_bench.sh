#!/usr/bin/env bash
# Fixed repeats against adaptive ones, on a quiet machine and on a loaded one: the same 200 kernel samples
# (SAMPLES=100 conv-bn-relu and as many dwconv-bn-relu, seed 1) built four times by `nn-meter build` on onednn_cpu —
#   fixed:    REPEATS $FIXED_REPEATS (default 8, what adaptive spent a sample on a noisy day; compare at the
#             count adaptive spends on the day, bench/RESULTS-adaptive-repeats.md)
#   adaptive: REPEATS 3, MAX_REPEATS 10, SETTLE_TOLERANCE 0.02
# each once quiet and once with a CPU-bound process spinning for the whole build (started and stopped here;
# LOADS="quiet" or "loaded" runs one of the two) —
# and for each: measurements spent (journal records), build time, the split-half ceilings and held-out
# accuracy of accuracy.json, how many samples settled, and what the machine check before the build said.
# Usage: [SAMPLES=N] [FIXED_REPEATS=R] [LOADS="quiet loaded"] bench/run_adaptive_repeats_bench.sh OUT [build-dir]
# (quiet: ~21 min on 2 cores; loaded: each measurement ~4x slower; resumes per build)
# Writes OUT/summary.md (the table bench/RESULTS-adaptive-repeats.md quotes).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:?usage: run_adaptive_repeats_bench.sh OUT [build-dir]}")"
build="${2:-build}"
samples="${SAMPLES:-100}"  # per kernel
fixed_repeats="${FIXED_REPEATS:-8}"
loads="${LOADS:-quiet loaded}"
frozen_nnmeter "$build" "$out"

hog=""
stop_hog() { if [ -n "$hog" ]; then kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true; hog=""; fi; }
trap stop_hog EXIT

for load in $loads; do
  for mode in fixed adaptive; do
    ws="$out/$load-$mode"
    [ -f "$ws/done" ] && continue
    rm -rf "$ws"
    "$nnm" create --workspace "$ws" --backend onednn_cpu >/dev/null
    cat > "$ws/configs/predictorbuild_config.yaml" <<YAML
DETAIL: TRUE
IMPLEMENT: onnx
BATCH_SIZE: 1
KERNELS:
  conv-bn-relu:
    INIT_SAMPLE_NUM: $samples
    FINEGRAINED_SAMPLE_NUM: 1
    ITERATION: 1
    ERROR_THRESHOLD: 0.1
  dwconv-bn-relu:
    INIT_SAMPLE_NUM: $samples
    FINEGRAINED_SAMPLE_NUM: 1
    ITERATION: 1
    ERROR_THRESHOLD: 0.1
YAML
    if [ "$mode" = fixed ]; then
      printf 'REPEATS: %s\n' "$fixed_repeats" >> "$ws/configs/backend_config.yaml"
    else
      printf 'REPEATS: 3\nMAX_REPEATS: 10\nSETTLE_TOLERANCE: 0.02\n' >> "$ws/configs/backend_config.yaml"
    fi
    if [ "$load" = loaded ]; then
      bash -c 'while :; do :; done' &
      hog=$!
    fi
    start=$(date +%s)
    "$nnm" build --workspace "$ws" --backend onednn_cpu --no-ruletest > "$ws/build.log" 2>&1
    echo $(( $(date +%s) - start )) > "$ws/seconds"
    stop_hog
    touch "$ws/done"
    echo "$load $mode: $(cat "$ws/seconds") s (finished $(date -u +%H:%M) UTC)"
  done
done

/usr/bin/python3 - "$out" "$fixed_repeats" $loads <<'PY'
import json, os, sys
out, fixed_repeats, loads = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = ["| machine | repeats | measurements | build (s) | kernel | ceiling ±5 % | ceiling ±10 % | held-out ±10 % | settled / capped |",
        "|---|---|---|---|---|---|---|---|---|"]
for load in loads:
    for mode in ("fixed", "adaptive"):
        ws = os.path.join(out, f"{load}-{mode}")
        res = os.path.join(ws, "predictor_build", "results")
        acc = {a["kernel"]: a for a in json.load(open(os.path.join(res, "accuracy.json")))}
        seconds = open(os.path.join(ws, "seconds")).read().strip()
        for kernel in ("conv-bn-relu", "dwconv-bn-relu"):
            lines = sum(1 for _ in open(os.path.join(res, f"profile_journal_{kernel}.jsonl")))
            profiled = json.load(open(os.path.join(res, f"profiled_{kernel}.json")))[kernel]
            stopped = [e.get("repeats_stopped", "") for e in profiled.values()]
            r, m = acc[kernel]["repeatability"], acc[kernel]["metrics"]
            how = f"{fixed_repeats} fixed" if mode == "fixed" else "3..10"
            settled = "-" if mode == "fixed" else f"{stopped.count('settled')} / {stopped.count('max_repeats')}"
            rows.append(f"| {load} | {how} | {lines} | {seconds} | {kernel} | {100 * r['within5']:.1f} % | "
                        f"{100 * r['within10']:.1f} % | {100 * m['acc10']:.1f} % | {settled} |")
checks = []
for load in loads:
    log = open(os.path.join(out, f"{load}-fixed", "build.log")).read().splitlines()
    checks.append(f"- {load}: " + ("; ".join(l.split("machine check, ", 1)[1][:160] for l in log if "machine check, " in l) or "no warning"))
quality = []
for load in loads:
    for mode in ("fixed", "adaptive"):
        meta = json.load(open(os.path.join(out, f"{load}-{mode}", "predictor_build", "predictor", "predictor.json")))
        quality.append(f"{load}-{mode}: {meta.get('measurement_quality', {}).get('verdict', '-')}")
open(os.path.join(out, "summary.md"), "w").write(
    "\n".join(rows) + "\n\nMachine check before the fixed builds:\n" + "\n".join(checks) +
    "\n\nmeasurement_quality: " + ", ".join(quality) + "\n")
print(open(os.path.join(out, "summary.md")).read())
PY
