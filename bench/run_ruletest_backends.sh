#!/usr/bin/env bash
# The fusion rules of several backends side by side: one `nn-meter ruletest` per backend, each in its own
# fresh workspace, with the repeat protocol (5 repeats per test model), run one after the other on the same
# machine. Prints the rule table with one column per backend, rules that differ marked.
# Usage: bench/run_ruletest_backends.sh OUT BUILD_DIR BACKEND [BACKEND ...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
cd "$(dirname "$0")/.."
out="$(realpath -m "$1")"
build="$2"
shift 2
freeze_binaries "$build" "$out/bin" nn-meter nn-meter-worker
export NN_METER_HOME="$out/home"
export NN_METER_WORKER="$out/bin/nn-meter-worker"
use_frozen "$(dirname "$NN_METER_WORKER")"
for backend in "$@"; do
  ws="$out/ws-$backend"
  # The preset's measurement settings (5 repeats of 2 short rounds); the rule test takes nothing else of it.
  [ -d "$ws/configs" ] || "$out/bin/nn-meter" create --workspace "$ws" --backend "$backend" --preset quick >/dev/null
  /usr/bin/time -f "%e" -o "$out/$backend.time" "$out/bin/nn-meter" ruletest --workspace "$ws" --backend "$backend" \
    > "$out/$backend.txt" 2> "$out/$backend.log"
done
python3 - "$out" "$@" <<'PY'
import json, sys
out, backends = sys.argv[1], sys.argv[2:]
runs = [json.load(open(f"{out}/ws-{b}/fusion_rule_test/results/detected_fusion_rule.json")) for b in backends]
def word(rule):
    o = rule.get("obey")
    return "undecided" if o is None else ("fused" if o else "not fused")
names = sorted(set().union(*runs))
print("| rule | " + " | ".join(backends) + " |\n|---|" + "---|" * len(backends))
differ = 0
for n in names:
    words = [word(r.get(n, {})) for r in runs]
    decided = [w for w in words if w != "undecided"]
    mark = " **differs**" if len(set(decided)) > 1 else ""
    differ += bool(mark)
    print(f"| {n}{mark} | " + " | ".join(words) + " |")
times = [open(f"{out}/{b}.time").read().strip() for b in backends]
print(f"\n{differ} of {len(names)} rules decided differently; run times " + ", ".join(f"{b} {t} s" for b, t in zip(backends, times)))
PY
