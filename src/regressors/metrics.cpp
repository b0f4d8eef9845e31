// nn-Meter's latency metrics (nn_meter/utils/evaluation.py) and its 80/20 train/test split.
#include <cmath>
#include <numeric>

#include "nnmeter/kernel_training.h"
#include "common/accuracy.h"
#include "common/rng.h"

namespace nnmeter {

double relative_error(double y_pred, double y_true) { return std::abs(y_true - y_pred) / y_true; }

LatencyMetrics latency_metrics(const std::vector<double>& y_pred, const std::vector<double>& y_true) {
  if (y_pred.size() != y_true.size())
    throw Error("latency metrics: " + std::to_string(y_pred.size()) + " predictions for " +
                std::to_string(y_true.size()) + " measurements");
  if (y_true.empty()) throw Error("latency metrics need at least one test point");
  LatencyMetrics m;
  m.count = y_true.size();
  double sq = 0, sq_rel = 0, sum_true = 0;
  std::vector<double> errors;
  for (size_t i = 0; i < m.count; ++i) {
    if (!(y_true[i] > 0)) throw Error("latency metrics: measured latency " + std::to_string(y_true[i]) + " is not > 0");
    const double diff = y_pred[i] - y_true[i];
    const double rel = relative_error(y_pred[i], y_true[i]);
    sq += diff * diff;
    sq_rel += rel * rel;
    sum_true += y_true[i];
    errors.push_back(rel);
  }
  const double n = static_cast<double>(m.count);
  m.rmse = std::sqrt(sq / n);
  m.rmspe = 100.0 * std::sqrt(sq_rel / n);
  m.rmse_over_mean = m.rmse / (sum_true / n);
  m.acc5 = accuracy::share_within(errors, accuracy::kWithin5);
  m.acc10 = accuracy::share_within(errors, accuracy::kWithin10);
  m.acc15 = accuracy::share_within(errors, accuracy::kWithin15);
  return m;
}

Json LatencyMetrics::to_json() const {
  return Json{{"rmse", rmse}, {"rmspe", rmspe}, {"rmse_over_mean", rmse_over_mean}, {"acc5", acc5},
              {"acc10", acc10}, {"acc15", acc15}, {"count", count}};
}

LatencyMetrics LatencyMetrics::from_json(const Json& j) {
  LatencyMetrics m;
  m.rmse = j.at("rmse").get<double>();
  m.rmspe = j.at("rmspe").get<double>();
  m.rmse_over_mean = j.at("rmse_over_mean").get<double>();
  m.acc5 = j.at("acc5").get<double>();
  m.acc10 = j.at("acc10").get<double>();
  m.acc15 = j.at("acc15").get<double>();
  m.count = j.at("count").get<size_t>();
  return m;
}

SplitIndices train_test_split(size_t n, double test_size, uint64_t seed) {
  if (n < 2) throw Error("a train/test split needs at least 2 samples, got " + std::to_string(n));
  if (!(test_size > 0 && test_size < 1)) throw Error("test_size must be in (0, 1)");
  // sklearn: n_test = ceil(test_size · n), at least one training row.
  size_t n_test = static_cast<size_t>(std::ceil(test_size * static_cast<double>(n)));
  n_test = std::min(n_test, n - 1);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  Rng rng(seed);
  rng.shuffle(order);
  SplitIndices s;
  s.test.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_test));
  s.train.assign(order.begin() + static_cast<std::ptrdiff_t>(n_test), order.end());
  return s;
}

}  // namespace nnmeter
