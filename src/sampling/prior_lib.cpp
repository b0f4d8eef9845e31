#include "sampling/prior_lib.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/text.h"

namespace nnmeter::sampling {

namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}


}  // namespace

PriorTable PriorTable::parse(const std::string& text, const std::string& origin, const std::vector<std::string>& required) {
  PriorTable table;
  table.origin_ = origin;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) throw Error("prior config CSV " + origin + " is empty; it needs a header row");
  std::vector<std::string> header = split_csv_line(line);
  for (auto& h : header) h = trim(h);
  std::vector<int> index;
  for (const auto& name : required) {
    auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw Error("prior config CSV " + origin + " has no column '" + name + "'");
    index.push_back(static_cast<int>(it - header.begin()));
    table.columns_[name];
  }
  const auto model_column = std::find(header.begin(), header.end(), "model");
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (trim(line).empty()) continue;
    std::vector<std::string> cells = split_csv_line(line);
    for (size_t k = 0; k < required.size(); ++k) {
      if (static_cast<size_t>(index[k]) >= cells.size())
        throw Error("prior config CSV " + origin + " line " + std::to_string(line_no) + " has too few columns");
      std::string cell = trim(cells[static_cast<size_t>(index[k])]);
      int64_t v = 0;
      auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
      if (ec != std::errc() || end != cell.data() + cell.size() || v < 1)
        throw Error("prior config CSV " + origin + " line " + std::to_string(line_no) + ": column '" + required[k] +
                    "' must be a positive integer, got '" + cell + "'");
      table.columns_[required[k]].push_back(static_cast<double>(v));
    }
    if (model_column != header.end()) {
      const auto at = static_cast<size_t>(model_column - header.begin());
      table.models_.push_back(at < cells.size() ? trim(cells[at]) : std::string());
    }
  }
  for (const auto& name : required)
    if (table.columns_[name].empty()) throw Error("prior config CSV " + origin + " has no data rows");
  return table;
}

const std::vector<double>& PriorTable::column(const std::string& name) const {
  auto it = columns_.find(name);
  if (it == columns_.end()) throw Error("prior config CSV " + origin_ + " was not loaded with column '" + name + "'");
  return it->second;
}

PriorTable load_prior_table(const std::string& file, const std::optional<fs::path>& override_dir,
                            const std::vector<std::string>& required) {
  if (override_dir) {
    fs::path path = *override_dir / file;
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    if (!in || !(text << in.rdbuf()))
      throw Error("cannot read prior config CSV " + path.string() +
                  "; fix PRIOR_CONFIG_LIB / --prior-config-lib or remove it to use the builtin library");
    return PriorTable::parse(text.str(), path.string(), required);
  }
  const auto& lib = sampling::embedded_prior_config_lib();
  auto it = lib.find(file);
  if (it == lib.end()) throw Error("the builtin prior config library has no " + file);
  return PriorTable::parse(it->second, "builtin " + file, required);
}

std::vector<int64_t> sample_from_distribution(const std::vector<double>& column, int n, Rng& rng) {
  constexpr int kBins = 40;
  const auto [mn_it, mx_it] = std::minmax_element(column.begin(), column.end());
  const double lo = *mn_it, hi = *mx_it;
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(std::max(n, 0)));
  if (hi <= lo) {
    out.assign(static_cast<size_t>(std::max(n, 0)), std::max<int64_t>(1, static_cast<int64_t>(lo)));
    return out;
  }
  // numpy.histogram: equal-width bins, the last one closed on the right.
  const double width = (hi - lo) / kBins;
  std::vector<double> cdf(kBins + 1, 0.0);
  for (double v : column) {
    int bin = std::min(kBins - 1, static_cast<int>((v - lo) / width));
    cdf[static_cast<size_t>(bin) + 1] += 1.0;
  }
  for (int i = 1; i <= kBins; ++i) cdf[i] += cdf[i - 1];
  for (double& c : cdf) c /= static_cast<double>(column.size());
  for (int i = 0; i < n; ++i) {
    const double u = rng.uniform();
    // First edge whose CDF exceeds u; empty bins (flat CDF) are skipped, as interpolation would.
    size_t k = static_cast<size_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
    k = std::clamp<size_t>(k, 1, kBins);
    const double c0 = cdf[k - 1], c1 = cdf[k];
    const double x0 = lo + width * static_cast<double>(k - 1);
    const double x = c1 > c0 ? x0 + (u - c0) / (c1 - c0) * width : x0;
    out.push_back(std::max<int64_t>({1, static_cast<int64_t>(lo), static_cast<int64_t>(std::floor(x))}));
  }
  return out;
}

void snap_to(std::vector<int64_t>& values, const std::vector<int64_t>& valid) {
  for (int64_t& v : values) {
    int64_t best = valid.front();
    for (int64_t c : valid)
      if (std::llabs(c - v) < std::llabs(best - v)) best = c;
    v = best;
  }
}

}  // namespace nnmeter::sampling
