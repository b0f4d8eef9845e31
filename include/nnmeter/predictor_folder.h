// The predictor folder that replaces nn-Meter's sklearn pickles (nn-Meter issue #131: pickles that a newer
// scikit-learn cannot load): its metadata, its writer and its loader. A predictor folder is self-describing and
// versioned:
//
//   <folder>/predictor.json      metadata, format_version 1 (backend + config, device, library versions,
//                                per kernel: feature layout, target transform, regressor params, metrics)
//   <folder>/<kernel>.json       one XGBoost JSON model per kernel (also carries its feature layout and
//                                target transform as booster attributes, so a lone model file still loads)
//   <folder>/<kernel>.trees      the trees of <kernel>.json in a compact binary form, a cache that loading
//                                checks against the JSON and rewrites when stale (src/regressors/model_cache.h)
//   <folder>/meta.yaml           for `nn-meter register --predictor meta.yaml` (package_location: .)
//   <folder>/fusion_rules.json   fusion rules of the backend (nnmeter/fusion.h)
//
// Every file is written atomically; every load failure is an Error naming the file. Implemented in src/regressors/.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nnmeter/common.h"
#include "nnmeter/kernel_training.h"
#include "nnmeter/regressor.h"

namespace nnmeter {

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
