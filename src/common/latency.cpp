#include "nnmeter/latency.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/text.h"
#include "nnmeter/common.h"

namespace nnmeter {

namespace {

double parse_number(const std::string& text, const std::string& whole) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const auto rest = text.find_first_not_of(" \t", used);
  if (used == 0 || rest != std::string::npos || !std::isfinite(value))
    throw Error("cannot parse latency '" + whole + "': expected \"<avg> +- <std>\" in milliseconds");
  return value;
}


}  // namespace

const char* version() { return NNMETER_VERSION; }

Latency Latency::parse(const std::string& text) {
  const auto sep = text.find("+-");
  Latency out;
  if (sep == std::string::npos) {
    out.value_ms = parse_number(trim(text), text);
  } else {
    out.value_ms = parse_number(trim(text.substr(0, sep)), text);
    out.std = parse_number(trim(text.substr(sep + 2)), text);
  }
  if (out.value_ms < 0 || out.std < 0) throw Error("latency '" + text + "' is negative");
  return out;
}

std::string Latency::str() const { return fmt::format("{:.6g} +- {:.6g}", value_ms, std); }

Latency Latency::operator+(const Latency& other) const {
  return Latency{value_ms + other.value_ms, std::sqrt(std * std + other.std * other.std)};
}

Latency Latency::operator*(double k) const { return Latency{value_ms * k, std * std::abs(k)}; }

LatencyStats LatencyStats::from_samples(std::vector<double> samples_ms) {
  LatencyStats s;
  s.samples_ms = samples_ms;
  s.count = static_cast<int>(samples_ms.size());
  if (samples_ms.empty()) return s;
  s.mean = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0) / s.count;
  double sq = 0;
  for (double v : samples_ms) sq += (v - s.mean) * (v - s.mean);
  s.std = s.count > 1 ? std::sqrt(sq / (s.count - 1)) : 0.0;
  std::sort(samples_ms.begin(), samples_ms.end());
  s.min = samples_ms.front();
  s.max = samples_ms.back();
  const size_t mid = samples_ms.size() / 2;
  s.median = samples_ms.size() % 2 ? samples_ms[mid] : (samples_ms[mid - 1] + samples_ms[mid]) / 2;
  return s;
}

}  // namespace nnmeter
