#!/usr/bin/env bash
# SAMPLE_MODELS against the prior samples alone, on one session's measurements: on a run of
# `SAMPLE_MODELS=1 CALIBRATE=1 bench/run_accuracy_bench.sh OUT`, the same workspace is built again without
# SAMPLE_MODELS from copies of its journals (the same prior samples and fusion rules, nothing measured again) and
# both predictors are calibrated and scored on copies of the evaluation journal (the same network measurements).
# bench/sample_models_overlap.py then says how much of each evaluated network's predicted time falls on layers
# that are exactly a training sample, of either predictor. Last, the calibration networks are split in two so
# that the composition term is not fitted on the networks whose layers are samples: the layers of 13 of them
# (SAMPLE_MODELS reduced to theirs, from the journals) and the term fitted on the other 10, against the prior
# samples alone with the term fitted on the same 10.
# Results: OUT/evaluate.txt (with the networks' layers), OUT/prior_only/evaluate.txt (without),
# OUT/prior_only/build.log, OUT/overlap.txt, OUT/split/{evaluate_with,evaluate_prior}.txt.
# Usage: [BACKEND=onednn_cpu] [SEED=1] bench/run_sample_models_bench.sh OUT
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/freeze_binaries.sh"
here="$(cd "$(dirname "$0")" && pwd)"
out="$(realpath "${1:?the output folder of SAMPLE_MODELS=1 CALIBRATE=1 bench/run_accuracy_bench.sh}")"
grep -q '^SAMPLE_MODELS:' "$out/ws/configs/predictorbuild_config.yaml" ||
  { echo "$out/ws was built without SAMPLE_MODELS: run bench/run_accuracy_bench.sh with SAMPLE_MODELS=1" >&2; exit 1; }
[ -f "$out/evaluate/composition.json" ] || { echo "$out has no --calibrate-on evaluation: run it with CALIBRATE=1" >&2; exit 1; }
nnm="$out/bin/nn-meter"
export NN_METER_HOME="$out/home"
export NN_METER_WORKER="$out/bin/nn-meter-worker"
use_frozen "$(dirname "$NN_METER_WORKER")"
backend="${BACKEND:-onednn_cpu}"
dir="$out/prior_only"
rm -rf "$dir"
mkdir -p "$dir"
cp -r "$out/ws" "$dir/ws"
sed -i '/^SAMPLE_MODELS:/d' "$dir/ws/configs/predictorbuild_config.yaml"
rm -rf "$dir/ws/predictor_build/predictor"
journals() { cat "$1"/predictor_build/results/profile_journal_*.jsonl "$1"/fusion_rule_test/results/profile_journal.jsonl 2>/dev/null | wc -l; }
before=$(journals "$dir/ws")
"$nnm" build --workspace "$dir/ws" --backend "$backend" --predictor-name "${backend}_prior_only" --regressor gbdt \
  --seed "${SEED:-1}" > "$dir/build.log"
after=$(journals "$dir/ws")
[ "$before" = "$after" ] || { echo "the build without SAMPLE_MODELS measured $((after - before)) models again" >&2; exit 1; }
cp -r "$out/evaluate" "$dir/evaluate"
rm -f "$dir/evaluate/composition.json"
repeats=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["protocol"]["repeats"])' "$out/evaluate/results.json")
before=$(wc -l < "$dir/evaluate/journal.jsonl")
"$nnm" evaluate --predictor "$dir/ws/predictor_build/predictor" --onnx "$out/models" --calibrate-on "$out/calibration_models" \
  --repeats "$repeats" --work-dir "$dir/evaluate" --report "$dir/report.html" > "$dir/evaluate.txt"
after=$(wc -l < "$dir/evaluate/journal.jsonl")
[ "$before" = "$after" ] || { echo "scoring without SAMPLE_MODELS measured $((after - before)) repeats again" >&2; exit 1; }
python3 "$here/sample_models_overlap.py" "$out" > "$out/overlap.txt"

split="$out/split"
rm -rf "$split"
mkdir -p "$split/layers" "$split/calibrate"
for f in "$out"/calibration_models/*.onnx; do
  case "$(basename "$f")" in
    *_r144_*|*_r112_*|squeezenet*|densenet*|alexnet*) ln -s "$f" "$split/layers/" ;;
    *) ln -s "$f" "$split/calibrate/" ;;
  esac
done
cp -r "$out/ws" "$split/ws"
rm -rf "$split/ws/predictor_build/predictor"
sed -i "s#^SAMPLE_MODELS:.*#SAMPLE_MODELS: [$split/layers]#" "$split/ws/configs/predictorbuild_config.yaml"
# The samples of the 13 networks' layers: those of the 23 a layer of the 13 is (as prediction detects it).
NN_METER_HOME="$out/overlap_home" "$nnm" predict --predictor "$(sed -n 's/^name: *//p' "$out/ws/predictor_build/predictor/meta.yaml")"   --onnx "$split/layers" --json > "$split/layers.json"
python3 - "$split" <<'PY'
import glob, json, os, sys
split = sys.argv[1]
key = lambda kernel, config: kernel + json.dumps(config, sort_keys=True)
layers = {key(k["predictor_kernel"], k["config"]) for net in json.load(open(split + "/layers.json")).values()
          for k in net["kernels"] if k.get("predictor_kernel")}
for path in glob.glob(split + "/ws/predictor_build/results/*_models.json"):
    kernel = os.path.basename(path)[: -len("_models.json")]
    doc = json.load(open(path))
    doc[kernel] = {i: e for i, e in doc[kernel].items() if key(kernel, e["config"]) in layers}
    if doc[kernel]:
        json.dump(doc, open(path, "w"))
    else:
        os.remove(path)
PY
before=$(journals "$split/ws")
"$nnm" build --workspace "$split/ws" --backend "$backend" --predictor-name "${backend}_split" --regressor gbdt   --seed "${SEED:-1}" > "$split/build.log"
after=$(journals "$split/ws")
[ "$before" = "$after" ] || { echo "the split build measured $((after - before)) models again" >&2; exit 1; }
for run in "with:$split/ws:$out/evaluate" "prior:$dir/ws:$dir/evaluate"; do
  IFS=: read -r name ws from <<< "$run"
  cp -r "$from" "$split/evaluate_$name"
  rm -f "$split/evaluate_$name/composition.json"
  before=$(wc -l < "$split/evaluate_$name/journal.jsonl")
  "$nnm" evaluate --predictor "$ws/predictor_build/predictor" --onnx "$out/models" --calibrate-on "$split/calibrate"     --repeats "$repeats" --work-dir "$split/evaluate_$name" > "$split/evaluate_$name.txt"
  after=$(wc -l < "$split/evaluate_$name/journal.jsonl")
  [ "$before" = "$after" ] || { echo "the split scoring measured $((after - before)) repeats again" >&2; exit 1; }
done

for run in "with the 23 calibration networks' layers, term fitted on them:$out/evaluate.txt" \
           "prior samples only, term fitted on the 23:$dir/evaluate.txt" \
           "with the layers of 13 of them, term fitted on the other 10:$split/evaluate_with.txt" \
           "prior samples only, term fitted on the same 10:$split/evaluate_prior.txt"; do
  echo "== ${run%%:*}"
  grep -E "models scored|repeatability|composition fitted|plain sum" "${run#*:}"
done
cat "$out/overlap.txt"
