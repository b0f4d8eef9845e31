// OpenVINO's benchmark_app output: the statistics report at its end, in the form of 2022 and later
// releases ("Latency:" followed by Median/Average/Min/Max lines, or a percentile instead of the median)
// and of the 2021 releases (one "Latency: X ms" line), with or without the "[ INFO ] " prefix, in ms, us or µs.
#pragma once

#include <optional>

#include "nnmeter/common.h"
#include "nnmeter/latency.h"

namespace nnmeter::openvino {

struct BenchmarkAppReport {
  // count: the iterations run; median: the printed median (or percentile, or the one-line latency); mean,
  // min, max: as printed, else the median (the one-line form prints nothing else); std: 0, never printed.
  LatencyStats stats;
  std::optional<double> throughput_fps, duration_ms, first_inference_ms;
  bool one_line = false;  // the 2021 form
};

// Throws Error quoting the raw line when a report line does not parse, and the tool's "[ ERROR ]" line
// (or its last line) when there is no latency at all.
BenchmarkAppReport parse_benchmark_app_output(const std::string& output);

}  // namespace nnmeter::openvino
