#include "backends/tflite/benchmark_output.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "common/subprocess.h"
#include "common/text.h"

namespace nnmeter::tflite {

namespace {

// Newer builds prefix every line with "INFO: " (TFLite's logger); the text after it is the same.
std::string strip_log_prefix(std::string line) {
  line = trim(line);
  for (const char* prefix : {"INFO: ", "WARNING: "})
    if (line.starts_with(prefix)) return trim(line.substr(std::string(prefix).size()));
  return line;
}

std::optional<double> number(const std::string& text) {
  const std::string t = trim(text);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// "init=55.4961 overall=55.4961" -> {init: 55.4961, overall: 55.4961}; tokens without '=' are skipped.
std::map<std::string, std::string> equals_fields(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string token; in >> token;) {
    const size_t eq = token.find('=');
    if (eq != std::string::npos && eq > 0) out[token.substr(0, eq)] = token.substr(eq + 1);
  }
  return out;
}

// "Init: 119515, First inference: 87112, Warmup (avg): 58147.4" -> {Init: 119515, ...}.
std::map<std::string, std::string> colon_fields(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string part = text.substr(start, comma - start);
    const size_t colon = part.rfind(':');
    if (colon != std::string::npos) out[trim(part.substr(0, colon))] = trim(part.substr(colon + 1));
    start = comma + 1;
  }
  return out;
}

std::optional<double> us_to_ms(const std::map<std::string, std::string>& fields, const std::string& key) {
  const auto it = fields.find(key);
  if (it == fields.end()) return std::nullopt;
  const auto v = number(it->second);
  return v ? std::optional<double>(*v / 1000.0) : std::nullopt;
}

constexpr const char* kOpProfilingPrefix = "Timings (microseconds):";

}  // namespace

LatencyStats parse_count_line(const std::string& raw) {
  std::string line = strip_log_prefix(raw);
  if (line.starts_with(kOpProfilingPrefix)) line = trim(line.substr(std::string(kOpProfilingPrefix).size()));
  const auto fields = equals_fields(line);
  const auto field = [&](const char* key) -> double {
    const auto it = fields.find(key);
    const auto v = it == fields.end() ? std::nullopt : number(it->second);
    if (!v || *v < 0)
      throw Error(fmt::format("benchmark_model printed a timing line without a valid '{}=' value: '{}'", key, trim(raw)));
    return *v;
  };
  // Every field must be a number, used or not: a garbled line is not half a measurement.
  for (const auto& [key, value] : fields)
    if (!number(value)) field(key.c_str());
  LatencyStats s;
  const double count = field("count");
  if (count < 1 || count != std::floor(count) || count > 1e9)
    throw Error(fmt::format("benchmark_model printed a timing line with an impossible count: '{}'", trim(raw)));
  s.count = static_cast<int>(count);
  s.mean = field("avg") / 1000.0;
  s.std = field("std") / 1000.0;
  s.min = field("min") / 1000.0;
  s.max = field("max") / 1000.0;
  s.median = fields.count("median") ? field("median") / 1000.0 : s.mean;
  if (s.min > s.max || s.mean < s.min || s.mean > s.max)
    throw Error(fmt::format("benchmark_model printed inconsistent statistics (min, avg, max out of order): '{}'", trim(raw)));
  return s;
}

BenchmarkModelReport parse_benchmark_model_output(const std::string& output) {
  BenchmarkModelReport report;
  std::vector<std::string> count_lines;
  std::string op_profiling_line, first_error;
  std::istringstream in(output);
  for (std::string raw; std::getline(in, raw);) {
    const std::string line = strip_log_prefix(raw);
    if (line.starts_with("count=")) {
      count_lines.push_back(raw);
    } else if (line.starts_with(kOpProfilingPrefix) && line.find("count=") != std::string::npos) {
      if (op_profiling_line.empty()) op_profiling_line = raw;  // the first one is the whole graph's
    } else if (line.starts_with("Initialized session in ")) {
      std::string value = line.substr(std::string("Initialized session in ").size());
      if (value.ends_with(".")) value.pop_back();
      if (value.ends_with("ms")) value.resize(value.size() - 2);
      if (const auto v = number(value)) report.init_ms = *v;
    } else if (line.starts_with("Inference timings in us:") || line.starts_with("Average inference timings in us:")) {
      const auto fields = colon_fields(line.substr(line.find(':') + 1));
      if (const auto v = us_to_ms(fields, "Init")) report.init_ms = *v;
      if (const auto v = us_to_ms(fields, "First inference")) report.first_inference_ms = *v;
    } else if (line.starts_with("Memory footprint delta") || line.starts_with("Peak memory footprint")) {
      const auto fields = equals_fields(line.substr(line.find(':') + 1));
      if (fields.count("init")) report.memory_init_mb = number(fields.at("init"));
      if (fields.count("overall")) report.memory_overall_mb = number(fields.at("overall"));
    } else if (first_error.empty() && (line.starts_with("ERROR:") || line.starts_with("Error:"))) {
      first_error = line;
    }
  }
  if (count_lines.empty() && op_profiling_line.empty()) {
    const std::string why = !first_error.empty() ? first_error : last_output_line(output);
    throw Error(fmt::format("benchmark_model printed no timing line (count=... avg=... std=...); it said: '{}'", why));
  }
  report.stats_line = trim(count_lines.empty() ? op_profiling_line : count_lines.back());
  report.stats = parse_count_line(report.stats_line);
  if (count_lines.size() >= 2) report.warmup = parse_count_line(count_lines[count_lines.size() - 2]);
  return report;
}

}  // namespace nnmeter::tflite
