#!/usr/bin/env bash
# Does a fusion decision repeat from run to run? Three separate `nn-meter ruletest` runs on onednn_cpu, each
# in its own workspace (nothing shared, nothing resumed), with the repeat protocol; prints the rule table
# side by side (bench/RESULTS-accuracy.md quotes one).
# Usage: bench/run_ruletest_repeat.sh [OUT] [build-dir]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-ruletest-repeat-output}")"
build="${2:-build}"
cmake --build "$build" -j "$(nproc)" --target nn-meter >/dev/null
freeze_binaries "$build" "$out/bin" nn-meter nn-meter-worker
export NN_METER_HOME="$out/home"
export NN_METER_WORKER="$out/bin/nn-meter-worker"
use_frozen "$(dirname "$NN_METER_WORKER")"
for run in 1 2 3; do
  ws="$out/ws$run"
  # The preset's measurement settings (5 repeats of 2 short rounds); the rule test takes nothing else of it.
  [ -d "$ws/configs" ] || "$out/bin/nn-meter" create --workspace "$ws" --backend onednn_cpu --preset quick >/dev/null
  /usr/bin/time -f "%e" -o "$out/run$run.time" "$out/bin/nn-meter" ruletest --workspace "$ws" --backend onednn_cpu \
    > "$out/run$run.txt"
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
runs = [json.load(open(f"{out}/ws{i}/fusion_rule_test/results/detected_fusion_rule.json")) for i in (1, 2, 3)]
def word(rule):
    o = rule.get("obey")
    return "undecided" if o is None else ("fused" if o else "not fused")
names = sorted(runs[0])
same = sum(1 for n in names if len({word(r.get(n, {})) for r in runs}) == 1)
print(f"| rule | run 1 | run 2 | run 3 |\n|---|---|---|---|")
for n in names:
    words = [word(r.get(n, {})) for r in runs]
    mark = "" if len(set(words)) == 1 else " **differs**"
    print(f"| {n}{mark} | " + " | ".join(words) + " |")
times = [open(f"{out}/run{i}.time").read().strip() for i in (1, 2, 3)]
print(f"\n{same} of {len(names)} rules decided the same in all three runs; run times {', '.join(t + ' s' for t in times)}")
PY
