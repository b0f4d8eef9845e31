#!/usr/bin/env bash
# The transformer kernels on onednn_cpu: `nn-meter build` of layernorm, gelu, softmax, linear, linear-gelu and
# matmul (SAMPLES prior samples each, seed of the workspace, one round) with the rule test of linear_gelu, then per
# kernel its held-out accuracy next to its split-half repeat ceiling (predictor_build/results/accuracy.json), and
# the rule's verdict.
# Usage: [SAMPLES=N] bench/run_transformer_kernels_bench.sh OUT [build-dir]   (~15 min at SAMPLES=100 on 2 cores;
# resumes: a rerun goes on from the build's journals)
# Writes OUT/summary.md (the table bench/RESULTS-transformers.md quotes).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:?usage: run_transformer_kernels_bench.sh OUT [build-dir]}")"
build="${2:-build}"
samples="${SAMPLES:-100}"
frozen_nnmeter "$build" "$out"
kernels=(layernorm gelu softmax linear linear-gelu matmul)

ws="$out/ws"
if [ ! -d "$ws" ]; then
  "$nnm" create --workspace "$ws" --backend onednn_cpu >/dev/null
  {
    printf 'DETAIL: TRUE\nIMPLEMENT: onnx\nBATCH_SIZE: 1\nKERNELS:\n'
    for k in "${kernels[@]}"; do
      printf '  %s:\n    INIT_SAMPLE_NUM: %s\n    FINEGRAINED_SAMPLE_NUM: 1\n    ITERATION: 1\n    ERROR_THRESHOLD: 0.1\n' "$k" "$samples"
    done
  } > "$ws/configs/predictorbuild_config.yaml"
  # The rule test's default sizes (HW 112, CIN 4, COUT 32): a Linear over the last axis of [4, 112, 112].
  /usr/bin/python3 - "$ws/configs/ruletest_config.yaml" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
start = lines.index("BASIC_TESTCASES:")
end = lines.index("LAYERS_1D:")
lines[start:end] = ["BASIC_TESTCASES: [linear_gelu]", "OTHER_TESTCASES: []"]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
fi
start=$(date +%s)
"$nnm" build --workspace "$ws" --backend onednn_cpu > "$out/build.log" 2>&1
echo "$(( $(date +%s) - start )) s (finished $(date -u +%H:%M) UTC)"

/usr/bin/python3 - "$ws" "${kernels[@]}" <<'PY'
import json, os, sys
ws, kernels = sys.argv[1], sys.argv[2:]
acc = {a["kernel"]: a for a in json.load(open(os.path.join(ws, "predictor_build", "results", "accuracy.json")))}
rows = ["| kernel | samples | held out | held-out ±5 % | held-out ±10 % | RMSPE | ceiling ±5 % | ceiling ±10 % |",
        "|---|---|---|---|---|---|---|---|"]
for k in kernels:
    a = acc[k]
    m, r = a["metrics"], a["repeatability"]
    rows.append(f"| {k} | {a['samples']} | {m['count']} | {100 * m['acc5']:.1f} % | {100 * m['acc10']:.1f} % | "
                f"{m['rmspe']:.1f} % | {100 * r['within5']:.1f} % | {100 * r['within10']:.1f} % |")
rules = json.load(open(os.path.join(ws, "fusion_rule_test", "results", "detected_fusion_rule.json")))
rule = rules.get("BF_linear_gelu", {})
meta = json.load(open(os.path.join(ws, "predictor_build", "predictor", "predictor.json")))
text = ("\n".join(rows) + f"\n\nBF_linear_gelu: obey {rule.get('obey')} {rule.get('reason', rule.get('error', ''))}\n"
        f"measurement_quality: {meta.get('measurement_quality', {}).get('verdict', '-')}\n")
open(os.path.join(os.path.dirname(ws), "summary.md"), "w").write(text)
print(text)
PY
