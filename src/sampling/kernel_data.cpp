// collect_kernel_data / get_data_by_profiled_results / CSV export ("Convert Kernel Data to CSV").
#include "nnmeter/kernel_data.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdlib>

#include "common/io.h"

namespace nnmeter {

namespace {

void check_kernel_data(const Json& data, const fs::path& path) {
  bool ok = data.is_object();
  for (const auto& [kernel, entries] : data.items())
    if (!entries.is_object()) ok = false;
  if (!ok) throw Error("kernel data file " + path.string() + " must be {kernel: {ID: {...}}}");
}

// CSV cells are plain numbers or paths; quote anything that could break the row.
std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// A label a regressor can learn from: a finite, positive number of milliseconds.
bool usable_label(const std::optional<double>& label) { return label && std::isfinite(*label) && *label > 0; }

}  // namespace

Json collect_kernel_data(const std::vector<fs::path>& config_files, const std::vector<fs::path>& latency_files) {
  Json merged = Json::object();
  for (const auto& path : config_files) {
    Json data = io::load_json_file(path);
    check_kernel_data(data, path);
    for (const auto& [kernel, entries] : data.items())
      for (const auto& [id, item] : entries.items()) merged[kernel][id] = item;
  }
  for (const auto& path : latency_files) {
    Json data = io::load_json_file(path);
    check_kernel_data(data, path);
    for (const auto& [kernel, entries] : data.items()) {
      if (!merged.contains(kernel)) continue;
      for (const auto& [id, item] : entries.items()) {
        // A latency joins a config entry only when both are objects (a hand-edited file may hold anything).
        if (!merged[kernel].contains(id) || !merged[kernel][id].is_object() || !item.is_object()) continue;
        for (const auto& [field, value] : item.items()) merged[kernel][id][field] = value;
      }
    }
  }
  return merged;
}

std::optional<double> parse_latency_value(const Json& value) {
  if (value.is_number()) return value.get<double>();
  if (!value.is_string()) return std::nullopt;
  const std::string s = value.get<std::string>();
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) return std::nullopt;
  return v;
}

KernelDataTable get_data_by_profiled_results(const std::string& kernel_type, const FeatureParser& parser,
                                             const Json& kernel_data, const std::string& predict_label) {
  if (!kernel_data.is_object() || !kernel_data.contains(kernel_type))
    throw Error("the kernel data has no entries for kernel '" + kernel_type + "'; check the config files passed");
  KernelDataTable table;
  table.columns.push_back("model_path");
  for (const auto& name : parser.needed_config()) table.columns.push_back(name);
  size_t width = 0, unusable = 0;
  for (const auto& [id, item] : kernel_data[kernel_type].items()) {
    if (!item.is_object() || !item.contains("config") || !item.contains(predict_label)) continue;
    std::optional<double> label = parse_latency_value(item[predict_label]);
    if (!usable_label(label)) {  // failed profiling, or a file edited or written by another tool
      ++unusable;
      continue;
    }
    std::vector<double> feature = parser.get_feature_by_config(item["config"]);
    if (width == 0) width = feature.size();
    if (feature.size() != width)
      throw Error("the feature parser of '" + kernel_type + "' returned vectors of different lengths (" +
                  std::to_string(width) + " and " + std::to_string(feature.size()) + ")");
    table.ids.push_back(id);
    if (item.contains("model") && !item["model"].is_string())
      throw Error(fmt::format("kernel data of '{}', entry '{}': \"model\" must be the model's path (a string), not {}", kernel_type,
                              id, item["model"].type_name()));
    table.model_paths.push_back(item.value("model", std::string()));
    table.features.push_back(std::move(feature));
    table.labels.push_back(*label);
  }
  if (unusable > 0)
    spdlog::warn("WARNING: skipped {} entries of '{}' whose '{}' is not a positive finite number", unusable, kernel_type,
                 predict_label);
  if (table.features.empty())
    throw Error("no profiled '" + predict_label + "' for kernel '" + kernel_type +
                "' (all missing, unparsable, 0, negative or not finite); check the latency files and profile_error.log");
  const size_t needed = table.columns.size() - 1;
  if (width < needed)
    throw Error("the feature parser of '" + kernel_type + "' returned fewer features than needed_config lists");
  for (size_t i = needed; i < width; ++i) table.columns.push_back("feature_" + std::to_string(i - needed));
  table.columns.push_back(predict_label);
  return table;
}

std::string kernel_data_csv(const KernelDataTable& table) {
  std::string out;
  for (size_t i = 0; i < table.columns.size(); ++i) out += (i ? "," : "") + csv_cell(table.columns[i]);
  out += '\n';
  for (size_t r = 0; r < table.features.size(); ++r) {
    out += csv_cell(table.model_paths[r]);
    for (double v : table.features[r]) out += fmt::format(",{}", v);
    out += fmt::format(",{}\n", table.labels[r]);
  }
  return out;
}

void save_kernel_data_csv(const KernelDataTable& table, const fs::path& path) {
  io::write_file_atomic(path, kernel_data_csv(table));
}

}  // namespace nnmeter
