#!/usr/bin/env bash
# Fixed repeats against adaptive ones, on a quiet machine and on a loaded one: the same 200 kernel samples
# (SAMPLES=100 conv-bn-relu and as many dwconv-bn-relu, seed 1) built four times by `nn-meter build` on onednn_cpu —
#   fixed:    REPEATS $FIXED_REPEATS (default 5, the presets'; 8 is about what adaptive spends a sample under load)
#   adaptive: REPEATS 3, MAX_REPEATS 10, SETTLE_TOLERANCE 0.02 (and SETTLE_CEILING $SETTLE_CEILING when given:
#             a kernel's samples settle together)
# each once quiet and once with a CPU-bound process spinning for the whole build (started and stopped here;
# LOADS="quiet" or "loaded" runs one of the two) —
# and for each: measurements spent (journal records), build time, the split-half ceilings and held-out
# accuracy of accuracy.json, how many samples settled, and what the machine check before the build said.
# Each loaded build is then finished on the quiet machine by `nn-meter build --remeasure-noisy` (the loaded
# figures are kept in its results-loaded/ first; REMEASURE=0 skips it): what a user told "noisy" does.
# PRESET=NAME builds whole predictors instead, from `nn-meter create --preset NAME` (fusion rules and calibration
# included), and scores every build's predictor on one evaluation: the networks of the library sets EVAL_SETS
# (default published) and of nn_meter.torch_networks' TORCH_SETS (default torchvision-reference) measured once by
# `nn-meter evaluate` (5 repeats, in one shuffled order with the preset's calibration networks, on which each
# predictor's term is fitted again), then each predictor scored on that journal (bench/score_on_journal.sh), with
# the term refitted and with its build's own.
# With FIXED_REPEATS of 8 or more, each fixed build's repeats are also replayed under stopping rules
# (`repeatability_bench replay`): what each rule would spend and how its labels would repeat, from one measurement.
# KERNELS="..." builds other kernels than conv-bn-relu and dwconv-bn-relu. TEST_SAMPLES=N first measures N other
# samples of each kernel (seed 2) on the quiet machine with TEST_REPEATS (default 8) repeats, and scores every
# build's predictor on them (loaded ones before and after --remeasure-noisy): one held-out set for all builds.
# Usage: [SAMPLES=N] [FIXED_REPEATS=R] [SETTLE_CEILING=C] [LOADS="quiet loaded"] [REMEASURE=1] [KERNELS="..."]
#        [TEST_SAMPLES=N [TEST_REPEATS=R]] [PRESET=quick [EVAL_SETS=...] [TORCH_SETS=...]]
#        bench/run_adaptive_repeats_bench.sh OUT [build-dir]
# (90 min on 2 cores at SAMPLES=100, FIXED_REPEATS=5: quiet 12, loaded 74, remeasuring 4; PRESET=quick
# LOADS=quiet about 65 on a noisy morning; resumes per build)
# Writes OUT/summary.md (the tables bench/RESULTS-adaptive-repeats.md quotes).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
source "$(dirname "${BASH_SOURCE[0]}")/load_hog.sh"
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:?usage: run_adaptive_repeats_bench.sh OUT [build-dir]}")"
build="${2:-build}"
samples="${SAMPLES:-100}"  # per kernel
fixed_repeats="${FIXED_REPEATS:-5}"
loads="${LOADS:-quiet loaded}"
export KERNELS="${KERNELS:-conv-bn-relu dwconv-bn-relu}"
test_samples="${TEST_SAMPLES:-0}"
frozen_nnmeter "$build" "$out"

# The held-out set, measured quiet before any build: other configs (seed 2) than the builds' (seed 1).
if [ "$test_samples" -gt 0 ] && [ ! -f "$out/test/done" ]; then
  rm -rf "$out/test"
  "$nnm" create --workspace "$out/test" --backend onednn_cpu >/dev/null
  printf 'REPEATS: %s\n' "${TEST_REPEATS:-8}" >> "$out/test/configs/backend_config.yaml"
  for kernel in $KERNELS; do
    "$nnm" sample --workspace "$out/test" --kernel "$kernel" --num "$test_samples" --seed 2 >/dev/null
    "$nnm" profile --workspace "$out/test" --backend onednn_cpu --kernel "$kernel" > "$out/test/profile-$kernel.log" 2>&1
    "$nnm" kernel-data to-csv --workspace "$out/test" --kernel "$kernel" --output "$out/test/$kernel.csv" >/dev/null
  done
  touch "$out/test/done"
  echo "held-out set: $test_samples samples a kernel (finished $(date -u +%H:%M) UTC)"
fi

for load in $loads; do
  for mode in fixed adaptive; do
    ws="$out/$load-$mode"
    [ -f "$ws/done" ] && continue
    rm -rf "$ws"
    if [ -n "${PRESET:-}" ]; then
      "$nnm" create --workspace "$ws" --backend onednn_cpu --preset "$PRESET" >/dev/null
      build_args=(--predictor-name "onednn_cpu_$load-$mode")
    else
      "$nnm" create --workspace "$ws" --backend onednn_cpu >/dev/null
      build_args=(--no-ruletest)
      {
        printf 'DETAIL: TRUE\nIMPLEMENT: onnx\nBATCH_SIZE: 1\nKERNELS:\n'
        for kernel in $KERNELS; do
          printf '  %s:\n    INIT_SAMPLE_NUM: %s\n    FINEGRAINED_SAMPLE_NUM: 1\n    ITERATION: 1\n    ERROR_THRESHOLD: 0.1\n' \
            "$kernel" "$samples"
        done
      } > "$ws/configs/predictorbuild_config.yaml"
    fi
    if [ "$mode" = fixed ]; then
      printf 'REPEATS: %s\n' "$fixed_repeats" >> "$ws/configs/backend_config.yaml"
    else
      printf 'REPEATS: 3\nMAX_REPEATS: 10\nSETTLE_TOLERANCE: 0.02\n' >> "$ws/configs/backend_config.yaml"
      [ -z "${SETTLE_CEILING:-}" ] || printf 'SETTLE_CEILING: %s\n' "$SETTLE_CEILING" >> "$ws/configs/backend_config.yaml"
    fi
    if [ "$load" = loaded ]; then
      start_hog
    fi
    start=$(date +%s)
    "$nnm" build --workspace "$ws" --backend onednn_cpu "${build_args[@]}" > "$ws/build.log" 2>&1
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
      cp -a "$ws/predictor_build/predictor" "$ws/results-loaded.tmp/predictor"
      mv "$ws/results-loaded.tmp" "$ws/results-loaded"
    fi
    start=$(date +%s)
    remeasure_args=(--no-ruletest)
    [ -z "${PRESET:-}" ] || remeasure_args=(--predictor-name "onednn_cpu_loaded-$mode")
    "$nnm" build --workspace "$ws" --backend onednn_cpu "${remeasure_args[@]}" --remeasure-noisy > "$ws/remeasure.log" 2>&1
    echo $(( $(date +%s) - start )) > "$ws/remeasure-seconds"
    touch "$ws/remeasured"
    echo "loaded $mode, remeasured quiet: $(cat "$ws/remeasure-seconds") s (finished $(date -u +%H:%M) UTC)"
  done
fi

# PRESET: one evaluation measured once (with the first build's predictor), every build's predictor scored on it.
builds=()
for load in $loads; do for mode in fixed adaptive; do builds+=("$load-$mode"); done; done
if [ -n "${PRESET:-}" ] && [ ! -f "$out/scored" ]; then
  for set in ${EVAL_SETS:-published}; do "$nnm" networks export --set "$set" --out "$out/models" >/dev/null; done
  for set in ${TORCH_SETS-torchvision-reference}; do
    PYTHONPATH="$(realpath "$build")/python" /usr/bin/python3 -m nn_meter.torch_networks export "$set" "$out/models" \
      >/dev/null
  done
  for set in $("$nnm" --json create --list-presets | /usr/bin/python3 -c '
import json, sys
print(" ".join({p["name"]: p for p in json.load(sys.stdin)}[sys.argv[1]]["predictorbuild_config"]["CALIBRATION_NETWORKS"]))' "$PRESET"); do
    "$nnm" networks export --set "$set" --out "$out/calibration" >/dev/null
  done
  "$nnm" evaluate --predictor "$out/${builds[0]}/predictor_build/predictor" --onnx "$out/models" \
    --calibrate-on "$out/calibration" --repeats 5 --work-dir "$out/evaluate" > "$out/evaluate.txt"
  # Every predictor is scored on the same fixed 5 repeats, whatever repeats its build measured with.
  printf 'MAX_REPEATS: 0\n' > "$out/scoring.yaml"
  for b in "${builds[@]}"; do
    CONFIG="$out/scoring.yaml" bench/score_on_journal.sh "$nnm" "$out/evaluate" "$out/scored/$b" "$out/$b/predictor_build/predictor" \
      "$out/models" "$out/calibration" 5 >/dev/null
    CONFIG="$out/scoring.yaml" bench/score_on_journal.sh "$nnm" "$out/evaluate" "$out/scored/$b-build-term" "$out/$b/predictor_build/predictor" \
      "$out/models" - 5 >/dev/null
  done
  touch "$out/scored"
fi

replay=""
if [ -z "${PRESET:-}" ] && [ "$fixed_repeats" -ge 8 ]; then
  cmake --build "$build" -j "$(nproc)" --target repeatability_bench >/dev/null
  for load in $loads; do
    # A loaded build's repeats as the loop left them (before --remeasure-noisy added quiet ones).
    results="$out/$load-fixed/predictor_build/results"
    [ ! -d "$out/$load-fixed/results-loaded" ] || results="$out/$load-fixed/results-loaded"
    replay+=$'\n'"### $load"$'\n\n'"$("$build/bench/repeatability_bench" replay 30 "$results"/profiled_*.json)"$'\n'
  done
fi
PYTHONPATH="$(realpath "$build")/python" /usr/bin/python3 - "$out" "$fixed_repeats" "${SETTLE_CEILING:-}" "$replay" $loads <<'PY'
import json, os, sys
out, fixed_repeats, settle_ceiling, replay, loads = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
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
    for kernel in os.environ["KERNELS"].split():
        lines = sum(1 for _ in open(os.path.join(res, f"profile_journal_{kernel}.jsonl")))
        profiled = json.load(open(os.path.join(res, f"profiled_{kernel}.json")))[kernel].values()
        stopped = [e.get("repeats_stopped", "") for e in profiled]
        lowest = [sorted(e["repeats_ms"])[:2] for e in profiled if len(e.get("repeats_ms", [])) >= 2]
        two10 = sum(b <= 1.1 * a for a, b in lowest) / max(1, len(lowest))
        r, m = acc[kernel]["repeatability"], acc[kernel]["metrics"]
        how = f"{fixed_repeats} fixed" if mode == "fixed" else f"3..10, kernel ceiling {settle_ceiling}" if settle_ceiling else "3..10"
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
heldout = []
if os.path.exists(os.path.join(out, "test", "done")):
    # Every build's predictor on the one quiet held-out set; a loaded build that was remeasured kept its loaded
    # predictor in results-loaded/predictor.
    import csv
    import numpy as np
    from nn_meter.builder.kernel_predictor_builder import KernelPredictor
    heldout = ["", "Held-out set (measured quiet before the builds, seed 2): each build's predictor on it.", "",
               "| build | kernel | held-out samples | ±5 % | ±10 % | RMSPE |", "|---|---|---|---|---|---|"]
    for load, mode, res, meta, seconds in builds:
        folder = os.path.join(res, "predictor")
        folder = folder if os.path.isdir(folder) else os.path.dirname(meta)
        for kernel in os.environ["KERNELS"].split():
            predictor = KernelPredictor(os.path.join(folder, f"{kernel}.json"))
            csv_rows = list(csv.reader(open(os.path.join(out, "test", f"{kernel}.csv"))))
            table = np.array([[float(v) for v in r[1:]] for r in csv_rows[1:]])
            truth = table[:, -1]
            error = predictor.predict(table[:, :-1]) / truth - 1
            heldout.append(f"| {load}, {mode} | {kernel} | {len(truth)} | {100 * np.mean(abs(error) <= 0.05):.1f} % | "
                           f"{100 * np.mean(abs(error) <= 0.1):.1f} % | {100 * np.sqrt(np.mean(error ** 2)):.1f} % |")
    for kernel in os.environ["KERNELS"].split():
        profiled = json.load(open(os.path.join(out, "test", "predictor_build", "results", f"profiled_{kernel}.json")))[kernel]
        halves = [(min(r[0::2]), min(r[1::2])) for r in (e["repeats_ms"] for e in profiled.values()) if len(r) >= 2]
        agree = sum(abs(a - b) / min(a, b) <= 0.1 for a, b in halves) / max(1, len(halves))
        heldout.append(f"\nThe held-out {kernel} labels' split-half ceiling (min of alternate repeats): ±10 % {100 * agree:.1f} %.")
scored = []
if os.path.exists(os.path.join(out, "scored")):
    # Whole predictors (PRESET): the build's measurements are its journals' records, kernels and calibration networks.
    scored = ["", "| build | measurements | build (s) | networks | term refitted: ±5 / ±10 % / RMSPE | build's term: ±5 / ±10 % / RMSPE |",
              "|---|---|---|---|---|---|"]
    for load in loads:
        for mode in ("fixed", "adaptive"):
            name = f"{load}-{mode}"
            ws = os.path.join(out, name, "predictor_build")
            spent = sum(sum(1 for _ in open(os.path.join(root, f))) for root, _, files in os.walk(ws)
                        for f in files if f.endswith(".jsonl") and "journal" in f)
            figures = []
            for d in (name, name + "-build-term"):
                s = json.load(open(os.path.join(out, "scored", d, "results.json")))["summary"]
                figures.append(f"{100 * s['within5']:.1f} / {100 * s['within10']:.1f} / {s['rmspe']:.1f} %")
            n = len(json.load(open(os.path.join(out, "scored", name, "results.json")))["models"])
            seconds = open(os.path.join(out, name, "seconds")).read().strip()
            scored.append(f"| {load}, {fixed_repeats + ' fixed' if mode == 'fixed' else '3..10'} | {spent} | {seconds} | "
                          f"{n} | {figures[0]} | {figures[1]} |")
    ceiling = json.load(open(os.path.join(out, "evaluate", "results.json")))["summary"]["repeatability"]
    scored.append(f"\nThe evaluation's split-half ceiling: ±5 % {100 * ceiling['within5']:.1f} %, "
                  f"±10 % {100 * ceiling['within10']:.1f} %.")
open(os.path.join(out, "summary.md"), "w").write(
    "\n".join(rows) + "\n\nMachine check before the fixed builds:\n" + "\n".join(checks) +
    "\n\nmeasurement_quality: " + ", ".join(quality) + "\n" + "\n".join(heldout + scored) + "\n" +
    (f"\nEach fixed build's repeats replayed under stopping rules:\n{replay}\n" if replay else ""))
print(open(os.path.join(out, "summary.md")).read())
PY
