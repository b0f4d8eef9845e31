#include "backends/openvino/benchmark_app_output.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "common/subprocess.h"
#include "common/text.h"

namespace nnmeter::openvino {

namespace {

std::string strip_prefix(const std::string& raw) {
  std::string line = trim(raw);
  for (const char* prefix : {"[ INFO ]", "[INFO]"})
    if (line.starts_with(prefix)) return trim(line.substr(std::string(prefix).size()));
  return line;
}

// "2.03 ms", "850.3 us", "850.3 µs" -> milliseconds; nullopt when it is not a number with a time unit.
std::optional<double> duration_ms(const std::string& text) {
  std::istringstream in(text);
  std::string number, unit, rest;
  if (!(in >> number >> unit) || (in >> rest)) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  if (unit == "ms") return v;
  if (unit == "us" || unit == "µs") return v / 1000.0;
  if (unit == "s" || unit == "sec") return v * 1000.0;
  return std::nullopt;
}

// The value after the first ':' of "Label:   value".
std::string value_of(const std::string& line) { return trim(line.substr(line.find(':') + 1)); }

[[noreturn]] void bad(const std::string& raw) {
  throw Error(fmt::format("benchmark_app printed a statistics line that does not parse: '{}'", trim(raw)));
}

}  // namespace

BenchmarkAppReport parse_benchmark_app_output(const std::string& output) {
  BenchmarkAppReport r;
  std::optional<double> median, mean, min, max, percentile;
  std::optional<int> count;
  std::string first_error;
  bool in_latency_block = false;
  std::istringstream in(output);
  for (std::string raw; std::getline(in, raw);) {
    const std::string line = strip_prefix(raw);
    if (first_error.empty() && (line.starts_with("[ ERROR ]") || line.starts_with("[ERROR]"))) first_error = line;
    const size_t colon = line.find(':');
    const std::string label = colon == std::string::npos ? "" : trim(line.substr(0, colon));
    if (in_latency_block) {
      std::optional<double>* slot = label == "Median" ? &median : label == "Average" ? &mean : label == "Min" ? &min
                                  : label == "Max"    ? &max : label.ends_with("percentile") ? &percentile : nullptr;
      if (slot) {
        *slot = duration_ms(value_of(line));
        if (!*slot) bad(raw);
        continue;
      }
      in_latency_block = false;
    }
    if (label == "Count") {
      std::istringstream words(value_of(line));
      long long n = 0;
      std::string unit;
      if (!(words >> n >> unit) || n < 1 || n > 1000000000 || unit != "iterations") bad(raw);
      count = static_cast<int>(n);
    } else if (label == "Duration") {
      r.duration_ms = duration_ms(value_of(line));
      if (!r.duration_ms) bad(raw);
    } else if (label == "Latency") {
      const std::string v = value_of(line);
      if (v.empty()) {
        in_latency_block = true;
      } else {
        median = duration_ms(v);
        if (!median) bad(raw);
        r.one_line = true;
      }
    } else if (label == "Throughput") {
      std::istringstream words(value_of(line));
      double fps = 0;
      std::string unit;
      if (!(words >> fps >> unit) || unit != "FPS" || !std::isfinite(fps)) bad(raw);
      r.throughput_fps = fps;
    } else if (line.starts_with("First inference took ")) {
      r.first_inference_ms = duration_ms(line.substr(std::string("First inference took ").size()));
    }
  }
  if (!median) median = percentile;
  if (!median) {
    const std::string why = !first_error.empty() ? first_error : last_output_line(output);
    throw Error(fmt::format("benchmark_app printed no latency (its statistics report is missing); it said: '{}'", why));
  }
  if (!count) throw Error("benchmark_app printed a latency but no 'Count: N iterations' line");
  r.stats.count = *count;
  r.stats.median = *median;
  r.stats.mean = mean.value_or(*median);
  r.stats.min = min.value_or(*median);
  r.stats.max = max.value_or(*median);
  if (r.stats.min > r.stats.max) throw Error("benchmark_app printed a minimum latency above its maximum");
  return r;
}

}  // namespace nnmeter::openvino
