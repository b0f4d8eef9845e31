#include <fmt/format.h>

#include <algorithm>

#include "nnmeter/profiling.h"
#include "profiling/journal.h"

namespace nnmeter {

namespace {

// A probe's level is set per process like any measurement's (one start came out 29 % off the 14 after it), so
// the reference and the end point are each the median of a few consecutive measurements, not one.
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
