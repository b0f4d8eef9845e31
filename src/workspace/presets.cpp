// The presets of `nn-meter create --preset`, each the recipe of a run recorded in bench/: its numbers are those
// the run measured with, and its comment names the RESULTS file, so that changing a number means measuring again.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/io.h"
#include "nnmeter/workspace.h"

namespace nnmeter {

namespace {

// Both presets measure alike: the settings of the runs behind them (scripts/main-job.sh and
// bench/run_accuracy_bench.sh wrote the same backend_config.yaml).
constexpr const char* kMeasurement = R"YAML(# Short rounds: inside one process the rounds agree closely; what varies
# is the level of each process, which the five repeats in fresh processes take care of (docs/measurement.md).
NUM_THREADS: 1
WARMUP_RUNS: 5
NUM_RUNS: 10
NUM_ROUNDS: 2
MIN_TIME_MS: 10
REPEATS: 5
REPEAT_STATISTIC: min
DRIFT_PROBE_EVERY: 500
)YAML";

constexpr const char* kQuick = R"YAML(# Preset quick: the main job's predictor (scripts/main-job.sh). Thirteen kernels at modest sample counts with one
# round of fine-grained sampling, calibrated on 28 per-layer variants (two of each family). Its measuring time and
# its scores: docs/config.md, bench/RESULTS-main-job.md and bench/RESULTS-accuracy.md.
DETAIL: FALSE
IMPLEMENT: onnx
BATCH_SIZE: 1
# A share of real CNN layers among the samples (it cut the model-level error on onednn_cpu, docs/accuracy.md,
# bench/RESULTS-accuracy.md). To evaluate on networks the samples never saw, list their families in
# PRIOR_ROWS_EXCLUDE in your predictorbuild_config.yaml (scripts/main-job.sh does).
PRIOR_ROWS: 0.3
# One conv sample in 16 is a network's 3-channel stem, which no other sample teaches (bench/RESULTS-main-job.md).
STEM_SAMPLES: 0.0625
# Gradient boosting: on the same samples as random forest it put more held-out conv and dwconv samples, and more
# of real networks' conv and dwconv layers, within ±10 % (bench/RESULTS-main-job.md).
REGRESSOR: gbdt
# Measured by the repeat protocol once the kernels are trained; the composition term is fitted on them. Variants
# drawn layer by layer (nn-meter networks sample) taught it more of networks it never saw than the width and
# resolution variants of the set calibration did (bench/RESULTS-accuracy.md, the development split).
CALIBRATION_NETWORKS: ["sample:all:2:4"]
# The conv kernel carries most of a dense network's time, and at a few hundred samples its regressor still
# moves with the samples it gets: twice the samples put ResNet-18's convs closer and steadier. Since conv samples
# stay within the largest real layer (docs/cli-sampling.md), the extra samples hardly lengthen the measuring
# (docs/accuracy.md).
KERNELS:
  conv-bn-relu:   {INIT_SAMPLE_NUM: 240, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  dwconv-bn-relu: {INIT_SAMPLE_NUM: 80, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  fc:             {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  maxpool:        {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  avgpool:        {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  global-avgpool: {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  se:             {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  hswish:         {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  relu:           {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  add:            {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  bnrelu:         {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  concat:         {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
  # Grouped convs (ResNeXt, RegNet, ShuffleNet v1), for a little more measuring: on exports of families in no
  # set, the same build with it put more of them within ±10 % (bench/RESULTS-main-job.md).
  gconv-bn-relu:  {INIT_SAMPLE_NUM: 80, FINEGRAINED_SAMPLE_NUM: 5, ITERATION: 2, ERROR_THRESHOLD: 0.1}
)YAML";

constexpr const char* kAccurate = R"YAML(# Preset accurate: the predictor of the accuracy figure (bench/RESULTS-accuracy.md). Twenty kernels, the
# layers of the 72 networks of calibration-72 among the samples, gradient boosting, calibrated on the 135
# networks of calibration-135. Its scores on networks as torch.onnx.export writes them, none of them in those
# sets, and its build time: bench/RESULTS-accuracy.md and docs/config.md.
DETAIL: FALSE
IMPLEMENT: onnx
BATCH_SIZE: 1
# nn-Meter's column-wise prior samples: the real layers come from SAMPLE_MODELS.
PRIOR_ROWS: 0
SAMPLE_MODELS: [calibration-72]
CALIBRATION_NETWORKS: [calibration-135]
REGRESSOR: gbdt
KERNELS:
  conv-bn-relu:    {INIT_SAMPLE_NUM: 250, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  dwconv-bn-relu:  {INIT_SAMPLE_NUM: 150, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  conv-bn-swish:   {INIT_SAMPLE_NUM: 250, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  dwconv-bn-swish: {INIT_SAMPLE_NUM: 150, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  fc:              {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  maxpool:         {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  avgpool:         {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  global-avgpool:  {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  se:              {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  hswish:          {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  swish:           {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  relu:            {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  add:             {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  addrelu:         {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  bnrelu:          {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  bn:              {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  concat:          {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  split:           {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  channelshuffle:  {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  gconv-bn-relu:   {INIT_SAMPLE_NUM: 200, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
)YAML";

constexpr const char* kTransformers = R"YAML(# Preset transformers: ViT/DeiT, ConvNeXt, MobileViT-style and BERT-style networks as PyTorch
# exports them (bench/RESULTS-transformers.md). The token kernels (src/kernels/transformer_kernels.cpp), the
# convs of patch embeddings, ConvNeXt and MobileViT, and the two kernels element-wise ops are predicted by (add,
# relu: a transpose or a scale is one pass over its output). Every layer of the networks in
# transformer_calibration is a sample too, so the patch embeddings (16x16 stride 16) and ConvNeXt's 7x7 depthwise
# convs are measured, not extrapolated; the composition term is fitted on the same networks. Write them first,
# with PyTorch (Debian: python3-torch, python3-torchvision), into the workspace folder:
#   python3 -m nn_meter.torch_networks export transformers-calibration <workspace>/transformer_calibration
# or list your own exports' folder instead.
DETAIL: FALSE
IMPLEMENT: onnx
BATCH_SIZE: 1
PRIOR_ROWS: 0.3
SAMPLE_MODELS: [transformer_calibration]
CALIBRATION_NETWORKS: [transformer_calibration]
KERNELS:
  layernorm:       {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  gelu:            {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  softmax:         {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  linear:          {INIT_SAMPLE_NUM: 100, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  linear-gelu:     {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  matmul:          {INIT_SAMPLE_NUM: 80, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  conv-bn:         {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  dwconv-bn:       {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  conv-bn-swish:   {INIT_SAMPLE_NUM: 60, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  dwconv-bn-swish: {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  add:             {INIT_SAMPLE_NUM: 40, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  relu:            {INIT_SAMPLE_NUM: 30, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  fc:              {INIT_SAMPLE_NUM: 20, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  global-avgpool:  {INIT_SAMPLE_NUM: 20, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
  concat:          {INIT_SAMPLE_NUM: 20, FINEGRAINED_SAMPLE_NUM: 3, ITERATION: 1, ERROR_THRESHOLD: 0.1}
)YAML";

}  // namespace

Json WorkspacePreset::to_json() const {
  Json j = {{"name", name},
            {"description", description},
            {"backend_config", io::yaml_to_json(backend_yaml, "preset " + name + " backend_config")},
            {"predictorbuild_config", io::yaml_to_json(predictorbuild_yaml, "preset " + name + " predictorbuild_config")}};
  if (!before_build.empty()) j["before_build"] = before_build;
  return j;
}

const std::vector<WorkspacePreset>& workspace_presets() {
  static const std::vector<WorkspacePreset> presets = {
      {"quick", "the main job's: 13 kernels, calibrated on 23 networks; about 15 min of measuring on 2 cores",
       kMeasurement, kQuick, ""},
      {"accurate",
       "the accuracy figure's: 20 kernels, layers of 72 networks among the samples, calibrated on 135; 49-59 min "
       "of measuring on 2 cores",
       kMeasurement, kAccurate, ""},
      {"transformers",
       "ViT, ConvNeXt, MobileViT and BERT-style exports: 15 kernels, layers and calibration from PyTorch exports "
       "(python3 -m nn_meter.torch_networks)",
       kMeasurement, kTransformers,
       "python3 -m nn_meter.torch_networks export transformers-calibration {workspace}/transformer_calibration"},
  };
  return presets;
}

const WorkspacePreset& find_workspace_preset(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& p : workspace_presets()) {
    if (p.name == name) return p;
    names.push_back(p.name);
  }
  throw Error(fmt::format("unknown preset '{}' (presets: {})", name, fmt::join(names, ", ")));
}

}  // namespace nnmeter
