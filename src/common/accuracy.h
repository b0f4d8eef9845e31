// The "within ±5 % / ±10 %" shares every accuracy figure reports (kernel test sets, networks, a measurement's
// own repeat agreement), and the rank agreements a NAS run relies on (Kendall's τ, Spearman's ρ), computed one way
// so that the figures stand next to each other.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <vector>

namespace nnmeter::accuracy {

inline constexpr double kWithin5 = 0.05, kWithin10 = 0.10, kWithin15 = 0.15;

// The share of `errors` (relative, signed or not) with |e| <= bound; 0 for none.
inline double share_within(const std::vector<double>& errors, double bound) {
  if (errors.empty()) return 0;
  const auto n = std::count_if(errors.begin(), errors.end(), [bound](double e) { return std::abs(e) <= bound; });
  return static_cast<double>(n) / static_cast<double>(errors.size());
}

// Kendall's τ-b of two equally long lists (ties in either count for neither side): 1 when they rank alike, -1
// reversed. nullopt with fewer than 2 pairs or when one list is all ties. Hand-written: O(n²) over the few hundred
// networks or candidates scored at once, where no Debian library offers it for C++.
inline std::optional<double> kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n = std::min(a.size(), b.size());
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      const double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0) ++ties_a;
      else if (db == 0) ++ties_b;
      else if ((da > 0) == (db > 0)) ++concordant;
      else ++discordant;
    }
  const double denominator = std::sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
  if (!(denominator > 0)) return std::nullopt;
  return (concordant - discordant) / denominator;
}

// Spearman's ρ: the correlation of the two lists' ranks (ties take their mean rank). nullopt as kendall_tau.
inline std::optional<double> spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n = std::min(a.size(), b.size());
  if (n < 2) return std::nullopt;
  const auto ranks = [n](const std::vector<double>& v) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(n);
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j + 1 < n && v[order[j + 1]] == v[order[i]]) ++j;
      for (size_t k = i; k <= j; ++k) r[order[k]] = static_cast<double>(i + j) / 2;
      i = j + 1;
    }
    return r;
  };
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double mean = static_cast<double>(n - 1) / 2;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < n; ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  if (!(saa > 0 && sbb > 0)) return std::nullopt;
  return sab / std::sqrt(saa * sbb);
}

}  // namespace nnmeter::accuracy
