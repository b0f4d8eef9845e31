// Training one kernel predictor as nn-Meter's builder does: its metrics (RMSE, RMSPE, ±5/10/15 %), the 80/20
// split, and the fit on a kernel's feature table. Implemented in src/regressors/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nnmeter/common.h"
#include "nnmeter/kernel.h"
#include "nnmeter/regressor.h"

namespace nnmeter {

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

}  // namespace nnmeter
