#!/usr/bin/env bash
# The two kernel-detection additions against the systematic errors of bench/RESULTS-accuracy.md, on a run of
# bench/run_accuracy_bench.sh and its PRIOR_ROWS predictor (bench/run_prior_rows_bench.sh):
#   - conv-bn-swish / dwconv-bn-swish kernels (EfficientNet's SiLU convs were predicted as conv-bn-relu),
#     built with the sample counts of conv-bn-relu / dwconv-bn-relu, and the rule tester's conv_swish and
#     dwconv_swish cases;
#   - the rule tester's chain case concat_channelshuffle_split (onednn_cpu writes ShuffleNet's concat, shuffle
#     and split in one pass; detection predicted three kernels).
# The 55 models are measured once more (fresh processes, the run's protocol), then scored by four predictors
# that differ only in these additions: none, swish, shuffle, both. Nothing is measured twice.
# Usage: bench/run_swish_shuffle_bench.sh ACCURACY_OUT [build-dir]   env: VARIANT (default prior_rows_0.3), SEED
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
cd "$(dirname "$0")/.."
base="$(realpath "${1:?the output folder of bench/run_accuracy_bench.sh}")"
build="${2:-build}"
variant="$base/${VARIANT:-prior_rows_0.3}"
seed="${SEED:-1}"
out="$base/swish_shuffle_seed_$seed"
[ -d "$variant/predictor" ] || { echo "no predictor in $variant: run bench/run_prior_rows_bench.sh first" >&2; exit 1; }
cmake --build "$build" -j "$(nproc)" --target nn-meter >/dev/null
mkdir -p "$out"
freeze_binaries "$build" "$out" nn-meter nn-meter-worker
nnm="$out/nn-meter"
export NN_METER_HOME="$base/home"
export NN_METER_WORKER="$out/nn-meter-worker"
use_frozen "$(dirname "$NN_METER_WORKER")"
ws="$out/ws"
[ -d "$ws/configs" ] || "$nnm" create --workspace "$ws" --backend onednn_cpu >/dev/null
cp "$base/ws/configs/backend_config.yaml" "$ws/configs/backend_config.yaml"
count() { grep -E "^  $1:" "$base/ws/configs/predictorbuild_config.yaml" | sed -E "s/^  $1:/  $2:/"; }
{
  echo "DETAIL: FALSE"
  echo "IMPLEMENT: onnx"
  echo "BATCH_SIZE: 1"
  echo "PRIOR_ROWS: 0.3"
  echo "PRIOR_ROWS_EXCLUDE: [alexnet, densenet121, efficientnetb0, googlenet, mnasnet, mobilenetv1, mobilenetv2,"
  echo "                     mobilenetv3, resnet18, resnet34, resnet50, shufflenetv2x1-0, squeezenet, vgg11]"
  echo "KERNELS:"
  count conv-bn-relu conv-bn-swish
  count dwconv-bn-relu dwconv-bn-swish
} > "$ws/configs/predictorbuild_config.yaml"

echo "ruletest start $(date -u +%T)" | tee -a "$out/timeline"
"$nnm" ruletest --workspace "$ws" --backend onednn_cpu --testcases conv_swish,dwconv_swish,concat_channelshuffle_split \
  | tee "$out/ruletest.log"
echo "build start $(date -u +%T)" | tee -a "$out/timeline"
"$nnm" build --workspace "$ws" --backend onednn_cpu --predictor-name onednn_cpu_swish --regressor gbdt --no-ruletest \
  --seed "$seed" | tee "$out/build.log"
echo "evaluate start $(date -u +%T)" | tee -a "$out/timeline"

# Four predictors: the variant's, and with the swish kernels (+ their rules) and/or the shuffle chain rule.
python3 - "$variant/predictor" "$ws/predictor_build/predictor" "$ws/fusion_rule_test/results/detected_fusion_rule.json" "$out" <<'PY'
import json, shutil, sys, pathlib
old, new, rules_file, out = map(pathlib.Path, sys.argv[1:])
found = json.loads(rules_file.read_text())
for name, swish, shuffle in [("none", False, False), ("swish", True, False), ("shuffle", False, True), ("both", True, True)]:
    target = out / f"predictor_{name}"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(old, target)
    meta = json.loads((target / "predictor.json").read_text())
    rules = json.loads((target / "fusion_rules.json").read_text())
    if swish:
        for kernel, entry in json.loads((new / "predictor.json").read_text())["kernels"].items():
            meta["kernels"][kernel] = entry
            shutil.copy(new / f"{kernel}.json", target / f"{kernel}.json")
        rules.update({k: v for k, v in found.items() if "swish" in k})
    if shuffle:
        rules.update({k: v for k, v in found.items() if "channelshuffle" in k})
    (target / "predictor.json").write_text(json.dumps(meta, indent=2))
    (target / "fusion_rules.json").write_text(json.dumps(rules, indent=2))
PY

# Measured once (with the variant's predictor), then rescored from the same journal by the others.
for name in none swish shuffle both; do
  dir="$out/evaluate_$name"
  if [ "$name" != none ]; then rm -rf "$dir"; cp -r "$out/evaluate_none" "$dir"; fi
  "$nnm" evaluate --predictor "$out/predictor_$name" --onnx "$base/models" --work-dir "$dir" \
    --report "$out/report_$name.html" | tee "$out/evaluate_$name.txt"
done
echo "end $(date -u +%T)" | tee -a "$out/timeline"
