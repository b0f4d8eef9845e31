// The two workspace configs nn-meter reads, typed: predictorbuild_config.yaml and ruletest_config.yaml.
// Every part of nn-meter reads these structs, never the files' keys.
#pragma once

#include <map>
#include <optional>
#include <set>

#include "nnmeter/common.h"
#include "nnmeter/regressor.h"

namespace nnmeter {

// One kernel's KERNELS entry of predictorbuild_config.yaml (nn-Meter's values where a key is absent).
struct KernelBuildSettings {
  int init_sample_num = 1000;       // INIT_SAMPLE_NUM
  int finegrained_sample_num = 20;  // FINEGRAINED_SAMPLE_NUM
  int iteration = 3;                // ITERATION
  double error_threshold = 0.1;     // ERROR_THRESHOLD
};

// predictorbuild_config.yaml as nn-meter reads it, declared once here: every part of nn-meter reads this
// struct, never the file's keys. Workspace::load checks it (so a bad value fails before any sampling);
// plugins get the file's Json as it is.
struct PredictorBuildConfig {
  bool detail = false;                          // DETAIL
  int batch_size = 1;                           // BATCH_SIZE
  std::optional<fs::path> prior_config_lib;     // PRIOR_CONFIG_LIB: prior CSVs instead of the builtin ones
  double prior_rows = 0;                        // PRIOR_ROWS: share of prior samples that are real layers
  std::set<std::string> prior_rows_exclude;     // PRIOR_ROWS_EXCLUDE: model names those layers never come from
  double aligned_channels = 0;                  // ALIGNED_CHANNELS: share with channels rounded to multiples of 8
  double stem_samples = 0;                      // STEM_SAMPLES: share of conv samples that are 3-channel stems
  std::vector<int64_t> input_resolutions;       // INPUT_RESOLUTIONS: HW scaled to these inputs; empty: 224
  std::vector<double> width_multipliers;        // WIDTH_MULTIPLIERS: PRIOR_ROWS at these widths; empty: as they are
  // SAMPLE_MODELS: networks whose layers (kernels as the backend's fusion rules detect them) are added to the
  // prior samples. Each entry is a builtin network set by name (`nn-meter networks list`) or an ONNX file or
  // folder of them; relative paths are taken from the workspace folder (write ./NAME for a folder named like
  // a set).
  std::vector<fs::path> sample_models;
  // CALIBRATION_NETWORKS: networks (entries as SAMPLE_MODELS') the build measures by the repeat protocol once
  // its kernel predictors are trained, fitting the predictor's composition term on them (composition.json).
  std::vector<fs::path> calibration_networks;
  // REGRESSOR: rf (random forest, nn-Meter's) or gbdt; `nn-meter build --regressor` overrides it.
  RegressorMode regressor = RegressorMode::random_forest;
  std::map<std::string, KernelBuildSettings> kernels;  // KERNELS
  // The KERNELS entry of `kernel`, or the defaults for a kernel the file does not list.
  KernelBuildSettings kernel(const std::string& name) const;
  // One line naming `file` and the key for a value of the wrong type or out of range; absent keys keep
  // the defaults above.
  static PredictorBuildConfig from_json(const Json& config, const std::string& file = "predictorbuild_config.yaml");
};

// ruletest_config.yaml as nn-meter reads it (the same contract as PredictorBuildConfig).
struct RuleTestConfig {
  bool detail = false;  // DETAIL: also record the per-model latencies in the rules file
  int64_t hw = 28, cin = 64, shape_1d = 428;  // HW, CIN: 3-D test inputs [CIN, HW, HW]; SHAPE_1D: 1-D ones
  int64_t cout = 128, kernel_size = 3, strides = 1, pool_strides = 2;  // the operators' settings
  double alpha = 0.5;  // EMP_ALPHA
  std::vector<std::string> basic, other, layers_1d;  // BASIC_TESTCASES, OTHER_TESTCASES, LAYERS_1D
  static RuleTestConfig from_json(const Json& config, const std::string& file = "ruletest_config.yaml");
};

}  // namespace nnmeter
