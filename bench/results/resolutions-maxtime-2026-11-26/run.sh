#!/usr/bin/env bash
# acc4: acc3's workspace with the four conv kernels re-sampled with INPUT_RESOLUTIONS [128,160,192,224] and
# re-measured; every other kernel from acc3's journals. Then the 23 calibration and 55 evaluation models are
# measured once (today), and both predictors — acc3's (control) and this one — are calibrated and evaluated
# on those same measurements.
set -euo pipefail
d=/work/exp/acc4; src=/work/exp/acc3
cd $d
if [ ! -d ws ]; then
  cp -r $src/ws ws
  for k in conv-bn-relu conv-bn-swish dwconv-bn-relu dwconv-bn-swish; do
    rm -f ws/predictor_build/results/{profile_journal_$k.jsonl,profile_journal_$k.jsonl.lock,profiled_$k.json,${k}_prior.json} \
          ws/predictor_build/results/collection/TestResult_${k}_*.csv ws/predictor_build/converted/${k}_*
    rm -rf ws/predictor_build/results/predictors/$k*
  done
  rm -rf ws/predictor_build/predictor
  sed -i 's/^ALIGNED_CHANNELS: 0$/ALIGNED_CHANNELS: 0\nINPUT_RESOLUTIONS: [128, 160, 192, 224]/' ws/configs/predictorbuild_config.yaml
fi
export NN_METER_HOME=$d/home NN_METER_WORKER=$d/bin/nn-meter-worker LD_LIBRARY_PATH=$d/bin
nnm=$d/bin/nn-meter
stamp() { echo "$1 $(date -u +%FT%TZ)" | tee -a $d/timeline; }
stamp build
/usr/bin/time -f "%e s elapsed, %M KB peak" -o build.time $nnm build --workspace ws --backend onednn_cpu \
  --predictor-name onednn_cpu_repeats --regressor gbdt --seed 1 --no-ruletest > build.log 2>&1
cp $src/ws/predictor_build/predictor/fusion_rules.json ws/predictor_build/predictor/
[ -d control ] || { cp -r $src/ws/predictor_build/predictor control; rm -f control/composition.json; }
[ -d models ] || bin/prediction_bench models models >/dev/null
[ -d calibration_models ] || bin/prediction_bench calibration-models calibration_models >/dev/null
stamp calibrate
$nnm calibrate --predictor ws/predictor_build/predictor --onnx calibration_models --work-dir calibrate > calibrate.txt
$nnm calibrate --predictor control --onnx calibration_models --work-dir calibrate > calibrate_control.txt
stamp evaluate
$nnm evaluate --predictor ws/predictor_build/predictor --onnx models --work-dir evaluate --report report.html > evaluate.txt
$nnm evaluate --predictor control --onnx models --work-dir evaluate --report report_control.html > evaluate_control.txt
stamp end
