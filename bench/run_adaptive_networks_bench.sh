#!/usr/bin/env bash
# Fixed repeats against adaptive ones on whole networks: the networks of a library set (SET, default calibration:
# 23 networks of 14 families) measured by `nn-meter evaluate` ROUNDS times (default 2) with each protocol —
#   fixed:    REPEATS $FIXED_REPEATS (default 5, the presets'; 8 is about what adaptive spends a network)
#   adaptive: REPEATS 3, MAX_REPEATS 10, SETTLE_TOLERANCE 0.02
# alternating fixed and adaptive rounds, each round in its own shuffled order (--seed ROUND), once per LOADS entry
# ("quiet", or "loaded": a CPU-bound loop on the other core for the whole round, started and stopped here).
# For each protocol: measurements spent, seconds, the split-half ceiling evaluate reports, and the test-retest
# agreement of the labels (round 1 against round 2: what a user measuring again would see), which an adaptive stopping
# rule cannot bias the way it biases split halves of one or two repeats; then the same with the two rounds' level
# difference (their median ratio) taken out.
# PREDICTOR is a predictor folder (…/predictor_build/predictor); its predictions are scored too, but the networks'
# measurement is what this compares.
# Usage: [SET=calibration] [ROUNDS=2] [FIXED_REPEATS=5] [LOADS="quiet"] bench/run_adaptive_networks_bench.sh OUT PREDICTOR [build-dir]
# (about 10 min on 2 cores with the defaults on a quiet machine; resumes per round)
# Writes OUT/summary.md (the table bench/RESULTS-adaptive-repeats.md quotes).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
source "$(dirname "${BASH_SOURCE[0]}")/load_hog.sh"
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:?usage: run_adaptive_networks_bench.sh OUT PREDICTOR [build-dir]}")"
predictor="$(realpath "${2:?usage: run_adaptive_networks_bench.sh OUT PREDICTOR [build-dir]}")"
build="${3:-build}"
set_name="${SET:-calibration}"
rounds="${ROUNDS:-2}"
fixed_repeats="${FIXED_REPEATS:-5}"
loads="${LOADS:-quiet}"
frozen_nnmeter "$build" "$out"

[ -d "$out/networks" ] || { "$nnm" networks export --set "$set_name" --out "$out/networks.tmp" >/dev/null && mv "$out/networks.tmp" "$out/networks"; }
printf 'REPEATS: %s\nMAX_REPEATS: 0\n' "$fixed_repeats" > "$out/fixed.yaml"
printf 'REPEATS: 3\nMAX_REPEATS: 10\nSETTLE_TOLERANCE: 0.02\n' > "$out/adaptive.yaml"

for load in $loads; do
  for round in $(seq 1 "$rounds"); do
    for mode in fixed adaptive; do
      dir="$out/$load-$mode-$round"
      [ -f "$dir/done" ] && continue
      if [ "$load" = loaded ]; then
        start_hog
      fi
      mkdir -p "$dir"
      start=$(date +%s)
      "$nnm" evaluate --predictor "$predictor" --onnx "$out/networks" --config "$out/$mode.yaml" --seed "$round" \
        --work-dir "$dir" --json > "$dir/evaluate.json" 2> "$dir/evaluate.log"
      echo $(( $(date +%s) - start )) > "$dir/seconds"
      stop_hog
      touch "$dir/done"
      echo "$load $mode round $round: $(cat "$dir/seconds") s (finished $(date -u +%H:%M) UTC)"
    done
  done
done

/usr/bin/python3 - "$out" "$rounds" "$fixed_repeats" $loads <<'PY'
import json, os, statistics, sys
out, rounds, fixed, loads = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
def within(pairs, tol):
    return 100 * sum(abs(a / b - 1) <= tol for a, b in pairs) / max(1, len(pairs))
rows = ["| machine | repeats | networks | measurements a round | seconds a round | split-half ±5 / ±10 % | "
        "round against round ±5 / ±10 % | the same, level taken out | settled / capped | predicted ±10 % |",
        "|---|---|---|---|---|---|---|---|---|---|"]
for load in loads:
    for mode in ("fixed", "adaptive"):
        runs = [json.load(open(os.path.join(out, f"{load}-{mode}-{r}", "results.json"))) for r in range(1, rounds + 1)]
        seconds = [int(open(os.path.join(out, f"{load}-{mode}-{r}", "seconds")).read()) for r in range(1, rounds + 1)]
        labels = [{m["model"]: m["measured_ms"] for m in run["models"] if m.get("measured_ms")} for run in runs]
        counts = [sum(len(m["repeats_ms"]) for m in run["models"]) for run in runs]
        ceil5 = statistics.mean(run["summary"]["repeatability"]["within5"] for run in runs)
        ceil10 = statistics.mean(run["summary"]["repeatability"]["within10"] for run in runs)
        retest = [(labels[0][n], labels[1][n]) for n in labels[0] if n in labels[1]] if rounds >= 2 else []
        # The machine's level moves by a few percent between rounds minutes apart; the median ratio of the two
        # rounds is that move, and what is left is the protocol's own disagreement.
        level = statistics.median(a / b for a, b in retest) if retest else 1.0
        relevelled = [(a / level, b) for a, b in retest]
        capped = sum(len(m["repeats_ms"]) >= 10 for run in runs for m in run["models"]) if mode == "adaptive" else None
        total = sum(len(run["models"]) for run in runs)
        settled = f"{total - capped} / {capped}" if capped is not None else "-"
        acc10 = statistics.mean(run["summary"]["within10"] for run in runs)
        rows.append(f"| {load} | {fixed + ' fixed' if mode == 'fixed' else '3..10'} | {len(labels[0])} | "
                    f"{statistics.mean(counts):.0f} | {statistics.mean(seconds):.0f} | "
                    f"{100 * ceil5:.1f} / {100 * ceil10:.1f} | "
                    f"{within(retest, 0.05):.1f} / {within(retest, 0.10):.1f} | "
                    f"{within(relevelled, 0.05):.1f} / {within(relevelled, 0.10):.1f} (level {level:.3f}) | "
                    f"{settled} | {100 * acc10:.1f} % |")
open(os.path.join(out, "summary.md"), "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
PY
