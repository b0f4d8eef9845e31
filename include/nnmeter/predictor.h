// Kernel latency predictors: the regressor (XGBoost, C API), nn-Meter's metrics and 80/20 split, and the
// predictor folder that replaces nn-Meter's sklearn pickles (nn-Meter issue #131: pickles that a newer
// scikit-learn cannot load). A predictor folder is self-describing and versioned:
//
//   <folder>/predictor.json      metadata, format_version 1 (backend + config, device, library versions,
//                                per kernel: feature layout, target transform, regressor params, metrics)
//   <folder>/<kernel>.json       one XGBoost JSON model per kernel (also carries its feature layout and
//                                target transform as booster attributes, so a lone model file still loads)
//   <folder>/<kernel>.trees      the trees of <kernel>.json in a compact binary form, a cache that loading
//                                checks against the JSON and rewrites when stale (src/regressors/model_cache.h)
//   <folder>/meta.yaml           for `nn-meter register --predictor meta.yaml` (package_location: .)
//   <folder>/fusion_rules.json   fusion rules of the backend; written by the fusion-rule issue, not here
//
// Every file is written atomically; every load failure is an Error naming the file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nnmeter/common.h"
#include "nnmeter/kernel.h"

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

// ---------------------------------------------------------------------------------------------------------
// Metrics and split, as nn-Meter computes them

struct LatencyMetrics {
  double rmse = 0;            // sqrt(mean((pred − true)²)), same unit as the latencies (ms)
  double rmspe = 0;           // 100 · sqrt(mean(((true − pred) / true)²)), percent
  double rmse_over_mean = 0;  // rmse / mean(true)
  double acc5 = 0, acc10 = 0, acc15 = 0;  // fraction with |true − pred| / true ≤ 0.05 / 0.10 / 0.15
  size_t count = 0;

  Json to_json() const;
  static LatencyMetrics from_json(const Json& j);
};

// Sizes must match and be non-zero, every y_true > 0; otherwise Error.
LatencyMetrics latency_metrics(const std::vector<double>& y_pred, const std::vector<double>& y_true);

// |y_true − y_pred| / y_true.
double relative_error(double y_pred, double y_true);

struct SplitIndices {
  std::vector<size_t> train, test;
};
// Shuffled split of 0..n-1 like sklearn's train_test_split: ceil(test_size · n) test rows, the rest train.
// Deterministic for a seed (own shuffle over mt19937_64, identical on every standard library; the
// permutation differs from numpy's). n < 2 → Error.
SplitIndices train_test_split(size_t n, double test_size = 0.2, uint64_t seed = 10);

// ---------------------------------------------------------------------------------------------------------
// Training one kernel predictor (nn-Meter's build_predictor_by_data core)

struct KernelDataset {
  FeatureMatrix features;
  std::vector<double> labels;          // latency in ms; ≤ 0 or non-finite = failed profiling, dropped
  std::vector<KernelConfig> configs;   // optional: empty, or one per row (then error_configs is filled)
  std::vector<std::string> feature_names;  // optional (feature_names_for); stored in the model
};

enum class TrainMode {
  split,  // 80/20 split: fit on 80 %, metrics and error points on the held-out 20 %
  final,  // fit on all samples; no metrics, no error points (nn-Meter's final_predictor=True)
};

struct TestPoint {
  size_t index;  // row in the input KernelDataset
  double y_true, y_pred, error;  // error = relative error
};

struct TrainResult {
  KernelRegressor model;
  std::optional<LatencyMetrics> metrics;  // split mode only
  std::vector<TestPoint> test_points;     // split mode only, in test-split order
  std::vector<size_t> error_indices;      // input rows of test points with error > error_threshold
  std::vector<KernelConfig> error_configs;  // their configs, if the dataset had configs
  size_t sample_count = 0;                // samples used (after dropping)
  size_t dropped_count = 0;               // samples dropped for label ≤ 0 / non-finite
};

// Drops failed samples, splits (split mode), fits, evaluates. No valid sample left → Error suggesting
// profile_error.log; rows of unequal length, label/config count mismatch → Error. `kernel` only names
// the kernel in messages.
TrainResult train_kernel_predictor(const KernelDataset& data, const RegressorParams& params, double error_threshold,
                                   TrainMode mode = TrainMode::split, const std::string& kernel = "kernel");

// nn-Meter's collection/TestResult_<kernel>_<mark>.csv: feature0..featureN-1,True,Pred,Error — one line
// per test point of `result` (features taken from `data`). Atomic write.
void write_test_result_csv(const fs::path& file, const KernelDataset& data, const TrainResult& result);

// needed_config names followed by feature_0, feature_1, ... for the parser's extra features (nn-Meter's
// Data_<kernel>.csv naming), for a parser producing `feature_count` features.
std::vector<std::string> feature_names_for(const FeatureParser& parser, size_t feature_count);

// ---------------------------------------------------------------------------------------------------------
// Predictor folder

inline constexpr int kPredictorFormatVersion = 1;
inline constexpr const char* kPredictorMetaFile = "predictor.json";
inline constexpr const char* kRegistryMetaFile = "meta.yaml";
inline constexpr const char* kFusionRulesFile = "fusion_rules.json";  // written by the fusion-rule builder

struct DeviceInfo {
  std::string cpu_model;          // /proc/cpuinfo "model name"
  unsigned logical_cores = 0;
  std::vector<std::string> isa;   // notable flags: sse4_2, avx, avx2, fma, avx512*, amx*, neon, ...
  Json to_json() const;
};
DeviceInfo describe_device();

struct PredictorInfo {
  std::string name;                // registry name, e.g. "onednn_cpu_predictor"
  std::string version = "1.0";
  std::string category = "cpu";    // nn-Meter's predictors.yaml category
  std::string backend;             // backend name, e.g. "onednn_cpu"
  Json backend_config = Json::object();
};

// What predictor.json records per kernel. For PredictorWriter::add_kernel only `kernel`, `params`,
// `metrics` and `sample_count` need filling: empty feature_names are taken from the model, log_target
// always is.
struct KernelPredictorMeta {
  std::string kernel;
  std::vector<std::string> feature_names;  // layout of one input row
  bool log_target = true;                  // target transform of the model
  RegressorParams params;
  std::optional<LatencyMetrics> metrics;   // from the split run; absent if only a final fit was made
  size_t sample_count = 0;
  Json to_json() const;
  static KernelPredictorMeta from_json(const std::string& kernel, const Json& j, const std::string& origin);
};

struct PredictorMeta {
  int format_version = kPredictorFormatVersion;
  PredictorInfo info;
  DeviceInfo device;
  Json libraries;  // {"xgboost": "1.7.4", "nn-meter": "0.1.0"}
  std::map<std::string, KernelPredictorMeta> kernels;
  // The build's verdict on its own measurements (assess_measurement_quality); null when not assessed.
  Json measurement_quality;
  Json to_json() const;
};

// Writes a predictor folder kernel by kernel: add_kernel() writes <kernel>.json at once (atomically), so
// a long build that dies keeps the models already trained; finish() writes predictor.json and meta.yaml.
class PredictorWriter {
 public:
  PredictorWriter(fs::path folder, PredictorInfo info);
  // meta.params/log_target/feature_names are checked against the model; mismatch → Error.
  void add_kernel(const KernelRegressor& model, KernelPredictorMeta meta);
  void set_measurement_quality(Json quality) { meta_.measurement_quality = std::move(quality); }
  // Returns the path of meta.yaml. At least one kernel needed.
  fs::path finish();

 private:
  fs::path folder_;
  PredictorMeta meta_;
};

struct KernelModelEntry {
  const KernelRegressor* model;
  KernelPredictorMeta meta;
};
// One-shot form of PredictorWriter.
fs::path save_predictor_folder(const fs::path& folder, const PredictorInfo& info,
                               const std::vector<KernelModelEntry>& kernels);

// A predictor folder whose kernel models are loaded on first use: a prediction from a fresh process loads
// only the kernels its model has. predict() may be called from several threads.
class LoadedPredictor {
 public:
  LoadedPredictor();
  ~LoadedPredictor();
  LoadedPredictor(LoadedPredictor&&) noexcept;
  LoadedPredictor& operator=(LoadedPredictor&&) noexcept;

  const PredictorMeta& meta() const { return meta_; }
  const fs::path& folder() const { return folder_; }
  std::vector<std::string> kernels() const;
  bool has_kernel(const std::string& kernel) const { return meta_.kernels.count(kernel) != 0; }
  // Batched prediction (ms). Unknown kernel or rows narrower than the model → Error; so is a model file that
  // fails load_predictor_folder's per-kernel checks, each time that kernel is asked for. Rows wider than the
  // model are read up to its width: a model trained before a feature was appended still predicts.
  std::vector<double> predict(const std::string& kernel, const FeatureMatrix& rows) const;

 private:
  friend LoadedPredictor load_predictor_folder(const fs::path& folder);
  struct Model;  // one kernel's regressor, loaded on first use
  fs::path folder_;
  PredictorMeta meta_;
  std::map<std::string, std::unique_ptr<Model>> models_;
};

// Checks predictor.json's format and version and that every kernel's <kernel>.json exists, up front. Each
// model file is read when its kernel is first predicted: then it must parse as an XGBoost model whose
// feature count, feature names and target transform match predictor.json. Any failure → one-line Error
// naming the offending file. A model whose tree cache matches its file is not parsed again: the cache was
// made of the same bytes, which passed these checks then.
LoadedPredictor load_predictor_folder(const fs::path& folder);

}  // namespace nnmeter
