#!/usr/bin/env bash
# Fixed repeats against adaptive ones, on a quiet machine and on a loaded one: the same 200 kernel samples
# (SAMPLES=100 conv-bn-relu and as many dwconv-bn-relu, seed 1) built four times by `nn-meter build` on onednn_cpu —
#   fixed:    REPEATS $FIXED_REPEATS (default 5, the presets'; 8 is about what adaptive spends a sample under load)
#   adaptive: REPEATS 3, MAX_REPEATS 10, SETTLE_TOLERANCE 0.02
# each once quiet and once with a CPU-bound process spinning for the whole build (started and stopped here;
# LOADS="quiet" or "loaded" runs one of the two) —
# and for each: measurements spent (journal records), build time, the split-half ceilings and held-out
# accuracy of accuracy.json, how many samples settled, and what the machine check before the build said.
# Each loaded build is then finished on the quiet machine by `nn-meter build --remeasure-noisy` (the loaded
# figures are kept in its results-loaded/ first; REMEASURE=0 skips it): what a user told "noisy" does.
# Usage: [SAMPLES=N] [FIXED_REPEATS=R] [LOADS="quiet loaded"] [REMEASURE=1] bench/run_adaptive_repeats_bench.sh OUT [build-dir]
# (90 min on 2 cores at SAMPLES=100, FIXED_REPEATS=5: quiet 12, loaded 74, remeasuring 4; resumes per build)
# Writes OUT/summary.md (the table bench/RESULTS-adaptive-repeats.md quotes).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:?usage: run_adaptive_repeats_bench.sh OUT [build-dir]}")"
build="${2:-build}"
samples="${SAMPLES:-100}"  # per kernel
fixed_repeats="${FIXED_REPEATS:-5}"
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

if [[ " $loads " == *" loaded "* ]] && [ "${REMEASURE:-1}" = 1 ]; then
  for mode in fixed adaptive; do
    ws="$out/loaded-$mode"
    [ -f "$ws/remeasured" ] && continue
    if [ ! -d "$ws/results-loaded" ]; then
      cp -a "$ws/predictor_build/results" "$ws/results-loaded.tmp"
      cp "$ws/predictor_build/predictor/predictor.json" "$ws/results-loaded.tmp/"
      mv "$ws/results-loaded.tmp" "$ws/results-loaded"
    fi
    start=$(date +%s)
    "$nnm" build --workspace "$ws" --backend onednn_cpu --no-ruletest --remeasure-noisy > "$ws/remeasure.log" 2>&1
    echo $(( $(date +%s) - start )) > "$ws/remeasure-seconds"
    touch "$ws/remeasured"
    echo "loaded $mode, remeasured quiet: $(cat "$ws/remeasure-seconds") s (finished $(date -u +%H:%M) UTC)"
  done
fi

/usr/bin/python3 - "$out" "$fixed_repeats" $loads <<'PY'
import json, os, sys
out, fixed_repeats, loads = sys.argv[1], sys.argv[2], sys.argv[3:]
# two lowest ±10 %: the share of samples whose two lowest repeats are within 10 % of each other, a check of the
# label that does not split a sample's few repeats in halves (bench/RESULTS-adaptive-repeats.md).
# labels ±10 % of quiet fixed: the share of samples whose label is within 10 % of the quiet fixed build's label of
# the same sample (the same seed samples the same configs): how far the labels a build trains on moved.
rows = ["| machine | repeats | measurements | build (s) | kernel | ceiling ±5 % | ceiling ±10 % | two lowest ±10 % | labels ±10 % of quiet fixed | held-out ±10 % | settled / capped |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
# (machine, mode, results folder, predictor.json, seconds): a loaded build that was remeasured has its loaded
# figures in results-loaded/ and the remeasured ones in place.
builds = []
for load in loads:
    for mode in ("fixed", "adaptive"):
        ws = os.path.join(out, f"{load}-{mode}")
        res, meta = os.path.join(ws, "predictor_build", "results"), os.path.join(ws, "predictor_build", "predictor", "predictor.json")
        seconds = open(os.path.join(ws, "seconds")).read().strip()
        if os.path.exists(os.path.join(ws, "remeasured")):
            loaded = os.path.join(ws, "results-loaded")
            builds.append((load, mode, loaded, os.path.join(loaded, "predictor.json"), seconds))
            extra = open(os.path.join(ws, "remeasure-seconds")).read().strip()
            builds.append(("loaded, then --remeasure-noisy quiet", mode, res, meta, f"{seconds} + {extra}"))
        else:
            builds.append((load, mode, res, meta, seconds))
def labels(res, kernel):
    profiled = json.load(open(os.path.join(res, f"profiled_{kernel}.json")))[kernel]
    return {i: float(e["latency"].split("+-")[0]) for i, e in profiled.items() if "latency" in e}
reference = os.path.join(out, "quiet-fixed", "predictor_build", "results")
for load, mode, res, meta, seconds in builds:
    acc = {a["kernel"]: a for a in json.load(open(os.path.join(res, "accuracy.json")))}
    for kernel in ("conv-bn-relu", "dwconv-bn-relu"):
        lines = sum(1 for _ in open(os.path.join(res, f"profile_journal_{kernel}.jsonl")))
        profiled = json.load(open(os.path.join(res, f"profiled_{kernel}.json")))[kernel].values()
        stopped = [e.get("repeats_stopped", "") for e in profiled]
        lowest = [sorted(e["repeats_ms"])[:2] for e in profiled if len(e.get("repeats_ms", [])) >= 2]
        two10 = sum(b <= 1.1 * a for a, b in lowest) / max(1, len(lowest))
        r, m = acc[kernel]["repeatability"], acc[kernel]["metrics"]
        how = f"{fixed_repeats} fixed" if mode == "fixed" else "3..10"
        settled = f"{stopped.count('settled')} / {stopped.count('max_repeats')}" if any(stopped) else "-"
        agree = "-"
        if os.path.isdir(reference) and res != reference:
            mine, quiet = labels(res, kernel), labels(reference, kernel)
            both = [i for i in mine if i in quiet]
            agree = f"{100 * sum(abs(mine[i] / quiet[i] - 1) <= 0.1 for i in both) / max(1, len(both)):.1f} %"
        rows.append(f"| {load} | {how} | {lines} | {seconds} | {kernel} | {100 * r['within5']:.1f} % | "
                    f"{100 * r['within10']:.1f} % | {100 * two10:.1f} % | {agree} | {100 * m['acc10']:.1f} % | {settled} |")
checks = []
for load in loads:
    log = open(os.path.join(out, f"{load}-fixed", "build.log")).read().splitlines()
    checks.append(f"- {load}: " + ("; ".join(l.split("machine check, ", 1)[1][:160] for l in log if "machine check, " in l) or "no warning"))
quality = [f"{load} {mode}: {json.load(open(meta)).get('measurement_quality', {}).get('verdict', '-')}"
           for load, mode, res, meta, seconds in builds]
open(os.path.join(out, "summary.md"), "w").write(
    "\n".join(rows) + "\n\nMachine check before the fixed builds:\n" + "\n".join(checks) +
    "\n\nmeasurement_quality: " + ", ".join(quality) + "\n")
print(open(os.path.join(out, "summary.md")).read())
PY
