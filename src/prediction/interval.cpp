// The interval on a prediction (PredictionInterval, nnmeter/prediction.h): errors on families held out are
// multiplicative, so the interval is a normal prediction interval for one more network in log space.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "nnmeter/prediction.h"

namespace nnmeter {

namespace {

// The two-sided 90 % point of the standard normal.
constexpr double kZ90 = 1.6448536269514722;

// Student's t at 0.95 with `dof` degrees of freedom: the normal point's Cornish-Fisher expansion (Abramowitz and
// Stegun 26.7.5), within 0.1 % from 4 degrees of freedom on. Written out: no Debian package the project already
// depends on has a t quantile, and a dozen held-out families are few enough for t and z to differ by 5 %.
double t95(double dof) {
  const double z = kZ90, z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z, z9 = z7 * z * z;
  const double g1 = (z3 + z) / 4, g2 = (5 * z5 + 16 * z3 + 3 * z) / 96, g3 = (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / 384,
               g4 = (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / 92160;
  return z + g1 / dof + g2 / (dof * dof) + g3 / std::pow(dof, 3) + g4 / std::pow(dof, 4);
}

// The level's spread from the build's drift probes: the widest move one of them saw (its lowest to its highest
// level against its start) taken as the level's 90 % range.
double probe_level_spread(const Json& quality) {
  if (!quality.is_object() || !quality.contains("drift") || !quality["drift"].is_array()) return 0;
  double widest = 0;
  for (const Json& d : quality["drift"]) {
    const double low = d.value("low", 0.0), high = d.value("high", 0.0);
    if (low > -1 && high > -1) widest = std::max(widest, std::log1p(high) - std::log1p(low));
  }
  return widest / (2 * kZ90);
}

}  // namespace

std::optional<PredictionInterval> PredictionInterval::estimate(const std::vector<double>& held_out_errors,
                                                               const Json& measurement_quality) {
  std::vector<double> r;  // log(measured / predicted)
  for (const double e : held_out_errors)
    if (std::isfinite(e) && e > -1) r.push_back(-std::log1p(e));
  if (r.size() < kMinNetworks) return std::nullopt;
  const double n = static_cast<double>(r.size());
  double mean = 0;
  for (const double v : r) mean += v / n;
  double ss = 0;
  for (const double v : r) ss += (v - mean) * (v - mean);
  PredictionInterval out;
  out.networks = r.size();
  out.level_spread = probe_level_spread(measurement_quality);
  const double sd = std::sqrt(ss / (n - 1) * (1 + 1 / n) + out.level_spread * out.level_spread);
  const double half = t95(n - 1) * sd;
  out.low = std::exp(mean - half);
  out.high = std::exp(mean + half);
  return out;
}

Json PredictionInterval::to_json() const {
  return {{"coverage", kCoverage}, {"low", low}, {"high", high}, {"networks", networks}, {"level_spread", level_spread}};
}

PredictionInterval PredictionInterval::from_json(const Json& j, const std::string& origin) {
  const auto number = [&](const char* key) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_number())
      throw Error(fmt::format("{}: interval.{} is missing or not a number", origin, key));
    return j[key].get<double>();
  };
  PredictionInterval out;
  out.low = number("low");
  out.high = number("high");
  out.networks = static_cast<size_t>(number("networks"));
  out.level_spread = number("level_spread");
  if (!(out.low > 0) || !(out.high >= out.low))
    throw Error(fmt::format("{}: interval [{}, {}] is not 0 < low <= high", origin, out.low, out.high));
  return out;
}

}  // namespace nnmeter
