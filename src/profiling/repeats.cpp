// The statistics of a sample's repeats: its label, whether it has settled, and how well halves agree.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/accuracy.h"
#include "nnmeter/profiling.h"

namespace nnmeter {

double repeat_label(const std::vector<double>& repeats_ms, RepeatStatistic statistic) {
  if (repeats_ms.empty()) return 0;
  switch (statistic) {
    case RepeatStatistic::min:
      return *std::min_element(repeats_ms.begin(), repeats_ms.end());
    case RepeatStatistic::median:
      return LatencyStats::from_samples(repeats_ms).median;
    case RepeatStatistic::mean:
      return std::accumulate(repeats_ms.begin(), repeats_ms.end(), 0.0) / static_cast<double>(repeats_ms.size());
  }
  return 0;
}

bool repeats_settled(const std::vector<double>& repeats_ms, RepeatStatistic statistic, double tolerance) {
  if (repeats_ms.size() < 2) return false;
  if (statistic == RepeatStatistic::min) {
    std::vector<double> sorted = repeats_ms;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end());
    return sorted[0] > 0 && (sorted[1] - sorted[0]) / sorted[0] <= tolerance;
  }
  const double all = repeat_label(repeats_ms, statistic);
  const double before = repeat_label(std::vector<double>(repeats_ms.begin(), repeats_ms.end() - 1), statistic);
  return before > 0 && std::abs(all - before) / before <= tolerance;
}

Json RepeatAgreement::to_json() const {
  return {{"samples", samples},
          {"within5", within5},
          {"within10", within10},
          {"median_deviation", median_deviation},
          {"kendall_tau", kendall_tau ? Json(*kendall_tau) : Json(nullptr)}};
}

RepeatAgreement split_half_agreement(const std::vector<std::vector<double>>& repeats_per_sample, RepeatStatistic statistic) {
  RepeatAgreement out;
  std::vector<double> deviations, labels[2];
  for (const auto& repeats : repeats_per_sample) {
    if (repeats.size() < 2) continue;
    std::vector<double> halves[2];
    for (size_t i = 0; i < repeats.size(); ++i) halves[i % 2].push_back(repeats[i]);
    const double a = repeat_label(halves[0], statistic), b = repeat_label(halves[1], statistic);
    if (!(std::min(a, b) > 0)) continue;
    deviations.push_back(std::abs(a - b) / std::min(a, b));
    labels[0].push_back(a);
    labels[1].push_back(b);
  }
  out.samples = deviations.size();
  if (deviations.empty()) return out;
  out.kendall_tau = accuracy::kendall_tau(labels[0], labels[1]);
  out.within5 = accuracy::share_within(deviations, accuracy::kWithin5);
  out.within10 = accuracy::share_within(deviations, accuracy::kWithin10);
  out.median_deviation = LatencyStats::from_samples(deviations).median;
  return out;
}

}  // namespace nnmeter
