#include <fmt/format.h>

#include <algorithm>

#include "nnmeter/profiling.h"
#include "profiling/journal.h"

namespace nnmeter {

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
    DriftSeries s;
    s.probe = probe;
    for (const auto& [t, median] : p) {
      s.minutes.push_back((t - p.front().first) / 60);
      s.ratio.push_back(median / p.front().second);
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string describe_drift(const std::vector<DriftSeries>& drift) {
  std::string out;
  for (const auto& s : drift) {
    if (s.ratio.size() < 2) continue;
    const auto [lo, hi] = std::minmax_element(s.ratio.begin(), s.ratio.end());
    out += fmt::format("{}{}: {:+.1f}% after {:.0f} min ({} measurements, range {:+.1f}%..{:+.1f}%)", out.empty() ? "" : "\n",
                       s.probe, 100 * (s.ratio.back() - 1), s.span_minutes(), s.ratio.size(), 100 * (*lo - 1),
                       100 * (*hi - 1));
  }
  return out;
}

}  // namespace nnmeter
