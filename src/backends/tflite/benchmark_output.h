// TFLite's benchmark_model output, as printed by the releases nn-Meter's users run on their phones (TF 1.x
// to 2.1x: with or without the "INFO: " prefix and the percentile fields, both summary forms). Times in
// the tool's output are microseconds; everything here is milliseconds.
#pragma once

#include <optional>

#include "nnmeter/common.h"
#include "nnmeter/latency.h"

namespace nnmeter::tflite {

struct BenchmarkModelReport {
  // The timed runs: count, avg, std, min, max as printed; median is the printed median (TF >= 2.4 builds
  // print one) or else the average. samples_ms stays empty: the tool prints no per-run values.
  LatencyStats stats;
  std::optional<LatencyStats> warmup;  // the warm-up phase's line, when printed before the timed one
  std::optional<double> init_ms;       // "Initialized session in ..." / "Init: ..." in the summary
  std::optional<double> first_inference_ms;
  std::optional<double> memory_init_mb, memory_overall_mb;  // footprint delta (older) or peak (newer)
  std::string stats_line;  // the line the statistics were read from, as printed
};

// Parses the tool's whole output. The statistics come from the last line starting with `count=` (the
// timed phase; earlier ones are the warm-up), or when there is none from an op-profiling
// "Timings (microseconds): count=..." line. No such line, or one that does not parse, throws Error
// quoting the raw line (or the tool's first "ERROR:" line, or its last line) — never a made-up latency.
BenchmarkModelReport parse_benchmark_model_output(const std::string& output);

// One `count=... avg=... std=...` line (after any "INFO: " or "Timings (microseconds): " prefix) in
// milliseconds; throws Error quoting the line when a required field is missing or not a number.
LatencyStats parse_count_line(const std::string& line);

}  // namespace nnmeter::tflite
