// Kernel latency regressors: their parameters (nn-Meter's per-kernel random forest table, gradient boosting)
// and the XGBoost booster (C API) that trains, predicts in process, and saves and loads itself as a
// self-describing JSON model. Implemented in src/regressors/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nnmeter/common.h"

namespace nnmeter {

// One row per sample; all rows of one kernel have the same length (FeatureParser::get_feature_by_config).
using FeatureMatrix = std::vector<std::vector<double>>;

// ---------------------------------------------------------------------------------------------------------
// Regressor parameters

enum class RegressorMode {
  random_forest,  // nn-Meter's default: one boosting round of `n_estimators` parallel trees, eta 1
  gbdt,           // gradient boosting: `rounds` sequential trees with shrinkage `eta`
};
const char* to_string(RegressorMode mode);  // "rf" / "gbdt"

struct RegressorParams {
  RegressorMode mode = RegressorMode::random_forest;
  // Trees per forest (rf) — sklearn's n_estimators, XGBoost's num_parallel_tree.
  int n_estimators = 370;
  int max_depth = 50;
  // Features tried per split (sklearn's max_features); 0 = all features. Becomes XGBoost's
  // colsample_bynode = max_features / n_features, clamped to 1.
  int max_features = 0;
  // Row fraction sampled without replacement per tree. 0.632 for rf approximates sklearn's bootstrap
  // (the expected share of distinct rows in a bootstrap sample).
  double subsample = 0.632;
  // gbdt only.
  int rounds = 300;
  double eta = 0.1;
  // Minimum hessian (= sample count for squared error) per leaf; 1 = sklearn's min_samples_leaf 1.
  double min_child_weight = 1.0;
  // Train on log(latency) and predict exp(model): errors become relative, which is what the ±10 %
  // metrics measure. See docs/notes-predictor.md for the measurement behind the default.
  bool log_target = true;
  // With log_target: first fit a power law log(latency) ≈ c0 + Σ ci·log1p(feature_i / scale_i) by ridge
  // least squares, then let the trees learn only the residual. Trees alone predict a constant outside the
  // sampled range and need thousands of samples to follow latency's multiplicative trends; the power law
  // carries the trend (it extrapolates) and the trees the backend's irregularities. See
  // docs/notes-predictor.md for the measurement behind the default.
  bool power_law_baseline = true;
  uint64_t seed = 10;  // nn-Meter's random_state
  int threads = 1;     // XGBoost nthread for training and prediction; 0 = all cores

  Json to_json() const;
  // Missing keys keep their defaults; unknown keys or bad values → Error naming `origin`.
  static RegressorParams from_json(const Json& j, const std::string& origin);
};

// nn-Meter's per-kernel random-forest table. The table is keyed by tflite_cpu,
// tflite_gpu and openvino_vpu; every other backend (onednn_cpu, customized ones) uses the tflite_cpu row.
// Kernels without tuned settings get max_depth 50, 370 trees and all features — nn-Meter's "auto"
// fallback, which crashes with scikit-learn >= 1.3, fixed. Conv/dwconv variants share the conv-bn-relu /
// dwconv-bn-relu rows (they share those predictors at prediction time).
RegressorParams default_regressor_params(const std::string& kernel_type, const std::string& backend_name);

// Gradient-boosting defaults (300 rounds, eta 0.1, depth 6, subsample 0.8), seed 10.
RegressorParams default_gbdt_params();

// ---------------------------------------------------------------------------------------------------------
// Regressor

// An XGBoost booster. Owns its handle; movable, not copyable. Every XGBoost failure becomes an Error
// carrying XGBGetLastError(). predict() may be called from several threads on one instance.
class KernelRegressor {
 public:
  KernelRegressor();  // empty: predict/save throw until trained or loaded
  ~KernelRegressor();
  KernelRegressor(KernelRegressor&&) noexcept;
  KernelRegressor& operator=(KernelRegressor&&) noexcept;
  KernelRegressor(const KernelRegressor&) = delete;
  KernelRegressor& operator=(const KernelRegressor&) = delete;

  // Fits on rows `x` with latencies `y` (> 0 when params.log_target). `feature_names` (optional, else
  // feature_0..) are stored in the model file.
  static KernelRegressor train(const FeatureMatrix& x, const std::vector<double>& y, const RegressorParams& params,
                               const std::vector<std::string>& feature_names = {});

  // Predicted latencies for all rows: the booster's trees evaluated in-process, equal to XGBoost's own
  // prediction bit for bit (its per-call setup cost more than the trees for model-level batches).
  std::vector<double> predict(const FeatureMatrix& rows) const;

  // XGBoost JSON, written atomically. The file is self-describing: nn-meter attributes record the
  // model-file version, feature names and target transform.
  void save(const fs::path& file) const;
  // Missing, unreadable or corrupt file → Error naming it.
  static KernelRegressor load(const fs::path& file);

  // XGBoost threads of the booster (a loaded model starts with 1); predict() runs on the calling thread.
  void set_threads(int threads);

  bool empty() const;
  size_t feature_count() const;
  const std::vector<std::string>& feature_names() const;
  bool log_target() const;

 private:
  // The predictor folder's tree cache (src/regressors/model_cache.h) stores and restores what predict()
  // needs; a regressor restored from it has no XGBoost booster, so save() refuses it.
  friend class ModelCache;
  static KernelRegressor from_json_text(const std::string& text, const std::string& origin);
  static std::string read_model_file(const fs::path& file);  // load()'s checks and errors
  std::string cache_payload() const;
  static KernelRegressor from_cache_payload(std::string_view payload, const std::string& origin);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nnmeter
