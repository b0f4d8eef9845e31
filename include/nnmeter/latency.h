// Latency values as nn-Meter writes them ("avg +- std", milliseconds) and the statistics a backend measures.
#pragma once

#include <string>
#include <vector>

namespace nnmeter {

// nn-Meter's Latency ("avg +- std"): the value recorded for a measurement and its standard deviation, in
// milliseconds. The value is whichever statistic the measuring protocol chose (the median of one process's
// rounds, the minimum or median over repeats in fresh processes), not necessarily a mean; nn-Meter's files
// call it "avg", and the CLI's --json output "latency_ms".
struct Latency {
  double value_ms = 0.0;
  double std = 0.0;

  // Parses "37.53 +- 0.314" (or a bare number); throws nnmeter::Error on anything else.
  static Latency parse(const std::string& text);
  std::string str() const;  // "37.53 +- 0.314"

  // Adding two latencies adds the values and combines the deviations as independent errors.
  Latency operator+(const Latency& other) const;
  Latency operator*(double k) const;
  bool operator<(const Latency& other) const { return value_ms < other.value_ms; }
  bool operator<=(const Latency& other) const { return value_ms <= other.value_ms; }
};

// What a backend's profile() returns: statistics over the measured runs, in milliseconds.
struct LatencyStats {
  std::vector<double> samples_ms;  // one entry per measured run (or per round), in measuring order
  double mean = 0.0;
  double std = 0.0;
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
  int count = 0;

  static LatencyStats from_samples(std::vector<double> samples_ms);
  // Coefficient of variation std/mean: how noisy the measurement was.
  double cv() const { return mean > 0 ? std / mean : 0.0; }
  // The value nn-Meter records for a model: the median as the central value (robust to the outliers a
  // shared machine produces), with the standard deviation.
  Latency latency() const { return Latency{median, std}; }
};

}  // namespace nnmeter
