#include "regressors/power_law.h"

#include <algorithm>
#include <cmath>

#include "common/linear_solve.h"

namespace nnmeter {

namespace {

// scale 0 marks a feature that was positive in every training row: plain log, the exact power law.
double transformed(double x, double scale) {
  return scale == 0 ? std::log(std::max(x, 1e-12)) : std::log1p(std::max(x, 0.0) / scale);
}

}  // namespace

PowerLaw PowerLaw::fit(const std::vector<float>& data, size_t rows, size_t cols, const std::vector<float>& log_latency) {
  PowerLaw law;
  law.scale_.assign(cols, 1.0);
  for (size_t c = 0; c < cols; ++c) {
    std::vector<double> positive;
    for (size_t r = 0; r < rows; ++r)
      if (data[r * cols + c] > 0) positive.push_back(data[r * cols + c]);
    if (positive.size() == rows) {
      law.scale_[c] = 0;
      continue;
    }
    if (positive.empty()) continue;
    std::nth_element(positive.begin(), positive.begin() + static_cast<std::ptrdiff_t>(positive.size() / 2), positive.end());
    law.scale_[c] = positive[positive.size() / 2];
  }
  // A kernel never runs faster than its fixed cost (dispatch, setup): take 90 % of the fastest sample as
  // that cost and fit the power law to what lies above it.
  const float fastest = *std::min_element(log_latency.begin(), log_latency.end());
  law.overhead_ = 0.9 * std::exp(static_cast<double>(fastest));
  std::vector<double> target(rows);
  for (size_t r = 0; r < rows; ++r) target[r] = std::log(std::exp(static_cast<double>(log_latency[r])) - law.overhead_);
  // Weighted normal equations of [1, t_1..t_cols] · w = log_latency, ridge on the slopes only. Rows
  // below the median latency weigh little: there fixed costs (dispatch, cache warm-up) flatten the
  // curve, and fitting them would bend the slope that matters for extrapolating to larger kernels; the
  // trees correct the small ones, which lie inside the sampled range anyway.
  std::vector<float> sorted = log_latency;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(rows / 2), sorted.end());
  const double median = sorted[rows / 2];
  const size_t n = cols + 1;
  std::vector<std::vector<double>> ata(n, std::vector<double>(n, 0.0));
  std::vector<double> atb(n, 0.0), t(n);
  for (size_t r = 0; r < rows; ++r) {
    t[0] = 1.0;
    for (size_t c = 0; c < cols; ++c) t[c + 1] = transformed(data[r * cols + c], law.scale_[c]);
    const double w = log_latency[r] >= median ? 1.0 : 0.05;
    for (size_t i = 0; i < n; ++i) {
      atb[i] += w * t[i] * target[r];
      for (size_t j = 0; j < n; ++j) ata[i][j] += w * t[i] * t[j];
    }
  }
  const double ridge = 1e-3 * static_cast<double>(rows);
  for (size_t i = 1; i < n; ++i) ata[i][i] += ridge;
  law.coef_ = solve_linear(std::move(ata), std::move(atb), "power-law fit (all features constant?)");
  return law;
}

double PowerLaw::eval(const float* row) const {
  double s = coef_[0];
  for (size_t c = 0; c < scale_.size(); ++c) s += coef_[c + 1] * transformed(row[c], scale_[c]);
  return std::log(overhead_ + std::exp(s));
}

Json PowerLaw::to_json() const { return Json{{"scale", scale_}, {"coef", coef_}, {"overhead", overhead_}}; }

PowerLaw PowerLaw::from_json(const Json& j, size_t feature_count, const std::string& origin) {
  const auto numbers = [&](const char* key, size_t size) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_array() || j[key].size() != size)
      throw Error(origin + " has a malformed power-law baseline ('" + key + "' must list " + std::to_string(size) +
                  " numbers): rebuild the predictor");
    std::vector<double> v;
    for (const auto& x : j[key]) {
      if (!x.is_number()) throw Error(origin + " has a non-numeric power-law baseline value: rebuild the predictor");
      v.push_back(x.get<double>());
    }
    return v;
  };
  PowerLaw law;
  law.scale_ = numbers("scale", feature_count);
  law.coef_ = numbers("coef", feature_count + 1);
  if (!j.contains("overhead") || !j["overhead"].is_number() || !(j["overhead"].get<double>() >= 0))
    throw Error(origin + " has a power-law baseline without a valid 'overhead': rebuild the predictor");
  law.overhead_ = j["overhead"].get<double>();
  for (double s : law.scale_)
    if (!(s >= 0)) throw Error(origin + " has a power-law scale <= 0: rebuild the predictor");
  return law;
}

}  // namespace nnmeter
