// One kernel predictor from profiled data: nn-Meter's build_predictor_by_data core.
#include <cmath>
#include <sstream>

#include "common/io.h"
#include "nnmeter/kernel_training.h"

namespace nnmeter {

namespace {

void check_dataset(const KernelDataset& d, const std::string& kernel) {
  if (d.features.size() != d.labels.size())
    throw Error("training data of " + kernel + ": " + std::to_string(d.features.size()) + " feature rows but " +
                std::to_string(d.labels.size()) + " latencies");
  if (!d.configs.empty() && d.configs.size() != d.labels.size())
    throw Error("training data of " + kernel + ": " + std::to_string(d.configs.size()) + " configs but " +
                std::to_string(d.labels.size()) + " latencies");
  for (size_t i = 1; i < d.features.size(); ++i)
    if (d.features[i].size() != d.features[0].size())
      throw Error("training data of " + kernel + ": feature row " + std::to_string(i) + " has " +
                  std::to_string(d.features[i].size()) + " values, row 0 has " + std::to_string(d.features[0].size()));
}

// Rows whose latency is usable; failed profiling is recorded as 0 (or missing → NaN) by the profiler.
std::vector<size_t> valid_rows(const KernelDataset& d) {
  std::vector<size_t> rows;
  for (size_t i = 0; i < d.labels.size(); ++i)
    if (std::isfinite(d.labels[i]) && d.labels[i] > 0) rows.push_back(i);
  return rows;
}

void gather(const KernelDataset& d, const std::vector<size_t>& rows, FeatureMatrix& x, std::vector<double>& y) {
  x.clear();
  y.clear();
  x.reserve(rows.size());
  y.reserve(rows.size());
  for (size_t i : rows) {
    x.push_back(d.features[i]);
    y.push_back(d.labels[i]);
  }
}

std::vector<size_t> pick(const std::vector<size_t>& rows, const std::vector<size_t>& positions) {
  std::vector<size_t> out;
  out.reserve(positions.size());
  for (size_t p : positions) out.push_back(rows[p]);
  return out;
}

}  // namespace

TrainResult train_kernel_predictor(const KernelDataset& data, const RegressorParams& params, double error_threshold,
                                   TrainMode mode, const std::string& kernel) {
  check_dataset(data, kernel);
  const std::vector<size_t> rows = valid_rows(data);
  if (rows.empty())
    throw Error("no valid latency sample for kernel " + kernel + " (" + std::to_string(data.labels.size()) +
                " samples, all failed or zero): see profile_error.log in the workspace");
  TrainResult result;
  result.sample_count = rows.size();
  result.dropped_count = data.labels.size() - rows.size();

  FeatureMatrix x;
  std::vector<double> y;
  if (mode == TrainMode::final) {
    gather(data, rows, x, y);
    result.model = KernelRegressor::train(x, y, params, data.feature_names);
    return result;
  }

  if (rows.size() < 2)
    throw Error("kernel " + kernel + " has only one valid latency sample: an 80/20 split needs at least 2");
  const SplitIndices split = train_test_split(rows.size(), 0.2, params.seed);
  gather(data, pick(rows, split.train), x, y);
  result.model = KernelRegressor::train(x, y, params, data.feature_names);

  const std::vector<size_t> test_rows = pick(rows, split.test);
  gather(data, test_rows, x, y);
  const std::vector<double> pred = result.model.predict(x);
  result.metrics = latency_metrics(pred, y);
  for (size_t i = 0; i < test_rows.size(); ++i) {
    const double e = relative_error(pred[i], y[i]);
    result.test_points.push_back({test_rows[i], y[i], pred[i], e});
    if (e > error_threshold) {
      result.error_indices.push_back(test_rows[i]);
      if (!data.configs.empty()) result.error_configs.push_back(data.configs[test_rows[i]]);
    }
  }
  return result;
}

void write_test_result_csv(const fs::path& file, const KernelDataset& data, const TrainResult& result) {
  std::ostringstream out;
  out.precision(17);
  const size_t n_features = data.features.empty() ? 0 : data.features[0].size();
  for (size_t i = 0; i < n_features; ++i) out << "feature" << i << ',';
  out << "True,Pred,Error\n";
  for (const TestPoint& p : result.test_points) {
    if (p.index >= data.features.size())
      throw Error("test result for " + file.string() + " refers to row " + std::to_string(p.index) +
                  " outside the dataset it was trained on");
    for (double v : data.features[p.index]) out << v << ',';
    out << p.y_true << ',' << p.y_pred << ',' << p.error << '\n';
  }
  io::write_file_atomic(file, out.str());
}

std::vector<std::string> feature_names_for(const FeatureParser& parser, size_t feature_count) {
  std::vector<std::string> names = parser.needed_config();
  if (names.size() > feature_count)
    throw Error("feature parser lists " + std::to_string(names.size()) + " config names but produces " +
                std::to_string(feature_count) + " features");
  for (size_t i = 0; names.size() < feature_count; ++i) names.push_back("feature_" + std::to_string(i));
  return names;
}

}  // namespace nnmeter
