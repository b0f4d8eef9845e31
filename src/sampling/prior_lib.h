// The prior configuration library: nn-Meter's four CSVs (conv, dwconv, fc, pooling) of layer configs
// found in common CNNs. They are compiled into libnnmeter; predictorbuild_config key PRIOR_CONFIG_LIB
// (or `nn-meter sample --prior-config-lib DIR`) points at a folder with replacement CSVs read at run time.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/rng.h"
#include "nnmeter/common.h"

namespace nnmeter::sampling {

// Generated at build time (cmake/EmbedPriorLib.cmake): nn-Meter's prior CSVs by file name.
const std::map<std::string, std::string>& embedded_prior_config_lib();

// One parsed CSV: integer columns by header name, and the `model` column (the CNN a row comes from) when
// the file has one.
class PriorTable {
 public:
  // `origin` names the source in errors. Every value of `required` columns must be an integer.
  static PriorTable parse(const std::string& text, const std::string& origin, const std::vector<std::string>& required);
  const std::vector<double>& column(const std::string& name) const;
  const std::vector<std::string>& models() const { return models_; }  // empty without a `model` column
  size_t rows() const { return columns_.empty() ? 0 : columns_.begin()->second.size(); }

 private:
  std::string origin_;
  std::map<std::string, std::vector<double>> columns_;
  std::vector<std::string> models_;
};

// Loads `<file>` (e.g. "conv.csv") from the override folder when set, else from the embedded library.
PriorTable load_prior_table(const std::string& file, const std::optional<fs::path>& override_dir,
                            const std::vector<std::string>& required);

// nn-Meter's sample_based_on_distribution: inverse CDF of a 40-bin histogram of `column`, linearly
// interpolated, truncated to an integer; never below the column minimum nor below 1.
std::vector<int64_t> sample_from_distribution(const std::vector<double>& column, int n, Rng& rng);
// nn-Meter's data_validation: snaps each value to the nearest entry of `valid` (ties: earlier entry).
void snap_to(std::vector<int64_t>& values, const std::vector<int64_t>& valid);

}  // namespace nnmeter::sampling
