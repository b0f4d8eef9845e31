// Kernel data: sampled configs joined with profiled latencies, turned into feature tables (nn-Meter's
// collect_kernel_data and get_data_by_profiled_results, "Convert Kernel Data to CSV").
#pragma once

#include <optional>

#include "nnmeter/kernel.h"

namespace nnmeter {

// Merges config files ({kernel: {ID: {model, shapes, config}}}) and latency files
// ({kernel: {ID: {latency: "avg +- std", ...}}}) into one {kernel: {ID: {...all fields}}}. Later files
// win on conflicting fields; latency entries without a config are ignored.
Json collect_kernel_data(const std::vector<fs::path>& config_files, const std::vector<fs::path>& latency_files);

// The feature table of one kernel type.
struct KernelDataTable {
  // model_path, the parser's needed_config names, feature_0.. for extra features, then the label.
  std::vector<std::string> columns;
  std::vector<std::string> ids;
  std::vector<std::string> model_paths;
  std::vector<std::vector<double>> features;
  std::vector<double> labels;
};

// Latency in ms from a profiled entry: "12.3 +- 0.4", "12.3" or a number; nullopt if absent/unparsable.
std::optional<double> parse_latency_value(const Json& value);

// Feature vectors and labels of every entry of `kernel_type` with a non-zero `predict_label`; entries
// without one (failed profiling) are skipped. Throws Error when nothing remains.
KernelDataTable get_data_by_profiled_results(const std::string& kernel_type, const FeatureParser& parser,
                                             const Json& kernel_data, const std::string& predict_label = "latency");

// CSV text (header + one row per entry, shortest round-trip numbers) and its atomic save.
std::string kernel_data_csv(const KernelDataTable& table);
void save_kernel_data_csv(const KernelDataTable& table, const fs::path& path);

}  // namespace nnmeter
