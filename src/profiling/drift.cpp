#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "nnmeter/profiling.h"
#include "profiling/journal.h"

namespace nnmeter {

namespace {

// A probe's level is set per process like any measurement's (one measurement may be far off the ones after it;
// docs/profiling.md), so the reference and the end point are each the median of a few consecutive measurements,
// not one.
constexpr size_t kDriftWindow = 3;

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::vector<DriftSeries> read_drift(const fs::path& probe_journal) {
  std::vector<DriftSeries> out;
  if (!fs::exists(probe_journal)) return out;
  const Journal journal(probe_journal);
  std::map<std::string, std::vector<std::pair<double, double>>> points;  // probe → (time, median)
  for (const auto& [key, r] : journal.records())
    if (r.value("ok", false) && r.value("median", 0.0) > 0)
      points[r.at("id").get<std::string>()].emplace_back(r.value("t", 0.0), r["median"].get<double>());
  for (auto& [probe, p] : points) {
    std::sort(p.begin(), p.end());
    std::vector<double> first;
    for (size_t i = 0; i < std::min(kDriftWindow, p.size()); ++i) first.push_back(p[i].second);
    const double reference = median_of(first);
    DriftSeries s;
    s.probe = probe;
    s.start_t = p.front().first;
    for (const auto& [t, median] : p) {
      s.minutes.push_back((t - p.front().first) / 60);
      s.ratio.push_back(median / reference);
    }
    out.push_back(std::move(s));
  }
  return out;
}

double DriftSeries::end_ratio() const {
  if (ratio.empty()) return 1;
  return median_of({ratio.end() - static_cast<std::ptrdiff_t>(std::min(kDriftWindow, ratio.size())), ratio.end()});
}

std::vector<double> DriftSeries::smoothed() const {
  std::vector<double> out;
  const size_t n = ratio.size(), window = std::min(kDriftWindow, n);
  for (size_t i = 0; i < n; ++i) {
    // The three measurements around this one; at the ends the first and last three, as read_drift's reference.
    const size_t lo = std::min(i == 0 ? 0 : i - 1, n - window);
    out.push_back(median_of({ratio.begin() + static_cast<std::ptrdiff_t>(lo), ratio.begin() + static_cast<std::ptrdiff_t>(lo + window)}));
  }
  return out;
}

DriftLevel::DriftLevel(const std::vector<DriftSeries>& drift) {
  for (const auto& s : drift) {
    if (s.ratio.size() < 2) continue;
    std::vector<double> times;
    for (double minute : s.minutes) times.push_back(s.start_t + 60 * minute);
    series_.emplace_back(std::move(times), s.smoothed());
  }
}

double DriftLevel::at(double t) const {
  if (series_.empty() || t <= 0) return 1;
  double log_sum = 0;
  for (const auto& [times, ratios] : series_) {
    double r = ratios.back();
    if (t <= times.front()) {
      r = ratios.front();
    } else if (t < times.back()) {
      const size_t j = static_cast<size_t>(std::upper_bound(times.begin(), times.end(), t) - times.begin());
      const double span = times[j] - times[j - 1];
      const double w = span > 0 ? (t - times[j - 1]) / span : 0;
      r = ratios[j - 1] * (1 - w) + ratios[j] * w;
    }
    log_sum += std::log(r);
  }
  return std::exp(log_sum / static_cast<double>(series_.size()));
}

std::string describe_drift(const std::vector<DriftSeries>& drift) {
  std::string out;
  for (const auto& s : drift) {
    if (s.ratio.size() < 2) continue;
    const auto [lo, hi] = std::minmax_element(s.ratio.begin(), s.ratio.end());
    out += fmt::format("{}{}: {:+.1f}% after {:.0f} min ({} measurements, range {:+.1f}%..{:+.1f}%)", out.empty() ? "" : "\n",
                       s.probe, 100 * (s.end_ratio() - 1), s.span_minutes(), s.ratio.size(), 100 * (*lo - 1),
                       100 * (*hi - 1));
  }
  return out;
}

}  // namespace nnmeter
