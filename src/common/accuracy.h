// The "within ±5 % / ±10 %" shares every accuracy figure reports (kernel test sets, networks, a measurement's
// own repeat agreement), computed one way so that the figures stand next to each other.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace nnmeter::accuracy {

inline constexpr double kWithin5 = 0.05, kWithin10 = 0.10, kWithin15 = 0.15;

// The share of `errors` (relative, signed or not) with |e| <= bound; 0 for none.
inline double share_within(const std::vector<double>& errors, double bound) {
  if (errors.empty()) return 0;
  const auto n = std::count_if(errors.begin(), errors.end(), [bound](double e) { return std::abs(e) <= bound; });
  return static_cast<double>(n) / static_cast<double>(errors.size());
}

}  // namespace nnmeter::accuracy
