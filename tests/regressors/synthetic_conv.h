// A synthetic conv-like latency function for regressor tests and the predictor benchmark: nn-Meter's 7
// conv features (HW, CIN, COUT, KERNEL_SIZE, STRIDES, FLOPs/2e6, params/1e6) and a latency proportional
// to FLOPs, with a utilization penalty for thin layers (CIN < 32), a fixed overhead and multiplicative
// noise. Latencies span ~5 orders of magnitude, like the kernels of real models.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>

#include "nnmeter/kernel_training.h"

namespace nnmeter::test {


inline double conv_latency_ms(double hw, double cin, double cout, double k, double s) {
  const double out = hw / s;
  const double flops = 2.0 * out * out * cout * (k * k * cin + 1.0);
  const double utilization = 0.5 + 0.5 * std::min(1.0, cin / 32.0);
  return 0.01 + flops / (40e9 * utilization) * 1e3;
}

// `noise` is the standard deviation of the multiplicative noise (0.02 = 2 %).
inline KernelDataset synthetic_conv_dataset(size_t n, uint64_t seed, double noise = 0.02) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) { return lo + (hi - lo) * (static_cast<double>(rng() >> 11) * 0x1.0p-53); };
  auto pick = [&](std::initializer_list<int> v) { return *(v.begin() + static_cast<ptrdiff_t>(rng() % v.size())); };
  KernelDataset d;
  d.feature_names = {"HW", "CIN", "COUT", "KERNEL_SIZE", "STRIDES", "feature_0", "feature_1"};
  for (size_t i = 0; i < n; ++i) {
    const double hw = pick({1, 3, 7, 14, 28, 56, 112, 224});
    const double cin = std::round(std::exp(uniform(std::log(3.0), std::log(512.0))));
    const double cout = std::round(std::exp(uniform(std::log(8.0), std::log(512.0))));
    const double k = pick({1, 3, 5, 7});
    const double s = pick({1, 2});
    const double params = cout * (k * k * cin + 1.0);
    const double flops = 2.0 * (hw / s) * (hw / s) * params;
    // Box-Muller keeps the noise independent of the standard library's distributions.
    const double u1 = uniform(1e-12, 1.0), u2 = uniform(0.0, 1.0);
    const double gauss = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    d.features.push_back({hw, cin, cout, k, s, flops / 2e6, params / 1e6});
    d.labels.push_back(conv_latency_ms(hw, cin, cout, k, s) * std::max(0.5, 1.0 + noise * gauss));
    d.configs.push_back({{"HW", hw}, {"CIN", cin}, {"COUT", cout}, {"KERNEL_SIZE", k}, {"STRIDES", s}});
  }
  return d;
}

}  // namespace nnmeter::test
