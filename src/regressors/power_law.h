// The trend part of a kernel regressor: latency ≈ overhead + exp(c0 + Σ ci·t_i), t_i = log(x_i) for a
// feature positive in every training row, else log1p(x_i / scale_i) (concat's absent inputs are 0). Latency grows
// multiplicatively with shapes (FLOPs ∝ HW²·CIN·COUT·K²), so this form follows it across the whole
// sampled range and beyond, where trees would predict a constant.
#pragma once

#include <cstddef>
#include <vector>

#include "nnmeter/common.h"

namespace nnmeter {

class PowerLaw {
 public:
  // Ridge least squares on `rows` x `cols` row-major features against `log_latency`. The small ridge term
  // keeps the fit defined when features are collinear (FLOPs is a product of the other conv features;
  // add/addrelu list CIN twice).
  static PowerLaw fit(const std::vector<float>& data, size_t rows, size_t cols, const std::vector<float>& log_latency);

  // log(latency) estimated for one row of feature_count() values.
  double eval(const float* row) const;
  size_t feature_count() const { return scale_.size(); }

  Json to_json() const;
  static PowerLaw from_json(const Json& j, size_t feature_count, const std::string& origin);

 private:
  std::vector<double> scale_;  // per feature: median of its positive values (1 if none)
  std::vector<double> coef_;   // intercept, then one per feature
  double overhead_ = 0;        // ms: the fixed cost under the power law
};

}  // namespace nnmeter
