#include "workspace_config/config_schema.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "kernels/config_check.h"
#include "nnmeter/sampling.h"
#include "nnmeter/workspace_config.h"
#include "registry/names.h"

namespace nnmeter {

namespace {

using T = ConfigKey::Type;

std::string shown(const Json& value) {
  if (value.is_number_float()) return fmt::format("{}", value.get<double>());  // nan and inf, not JSON's null
  const std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  return text.size() > 80 ? text.substr(0, 80) + "..." : text;
}

std::string expectation(const ConfigKey& k) {
  switch (k.type) {
    case T::Int:
      return fmt::format("an integer in [{}, {}]", k.min, k.max);
    case T::Number:
      return fmt::format("a number in {}{}, {}]", k.min_exclusive ? "(" : "[", k.min, k.max);
    case T::Bool:
      return "TRUE or FALSE";
    case T::Text:
      return "a text value";
    case T::NameList:
      return "a list of names";
    case T::PathList:
      return "a list of network sets (nn-meter networks list) or paths (files or folders)";
    case T::IntList:
      return fmt::format("a non-empty list of integers in [{}, {}]", k.min, k.max);
    case T::NumberList:
      return fmt::format("a non-empty list of numbers in [{}, {}]", k.min, k.max);
  }
  return "";
}

bool in_range(const ConfigKey& k, double v) {
  return std::isfinite(v) && (k.min_exclusive ? v > k.min : v >= k.min) && v <= k.max;
}

bool valid(const ConfigKey& k, const Json& v) {
  switch (k.type) {
    case T::Int:
      return v.is_number_integer() && in_range(k, v.get<double>());
    case T::Number:
      return v.is_number() && in_range(k, v.get<double>());
    case T::Bool:
      return v.is_boolean();
    case T::Text:
      return v.is_string();
    case T::NameList:
    case T::PathList:
      if (!v.is_array()) return false;
      for (const auto& item : v)
        if (!item.is_string() || item.get<std::string>().empty()) return false;
      return true;
    case T::IntList:
    case T::NumberList:
      if (!v.is_array() || v.empty()) return false;
      for (const auto& item : v)
        if (!(k.type == T::IntList ? item.is_number_integer() : item.is_number()) || !in_range(k, item.get<double>()))
          return false;
      return true;
  }
  return false;
}

// Edits (insert, delete, substitute) between two keys, case-insensitively.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const bool same = std::toupper(static_cast<unsigned char>(a[i - 1])) == std::toupper(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// A key nn-meter does not read is left to plugins, which get the whole config; but one a letter or two away
// from a declared key (or the same key in other case) is almost surely a typo that would silently keep the
// default, so it is named with the key it resembles.
void warn_likely_typos(const Json& config, const std::vector<ConfigKey>& keys, const std::vector<std::string>& also_read,
                       const std::string& file, const std::string& prefix = "") {
  if (!config.is_object()) return;
  std::vector<std::string> known(also_read);
  for (const auto& k : keys) known.emplace_back(k.name);
  for (const auto& [key, value] : config.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string* best = nullptr;
    size_t best_distance = 3;
    for (const auto& k : known)
      if (const size_t d = edit_distance(key, k); d < best_distance && (d == 0 || k.size() > 4)) {
        best = &k;
        best_distance = d;
      }
    if (best != nullptr)
      spdlog::warn("{}: {}{} is not a key nn-meter reads (it keeps its default): did you mean {}{}?", file, prefix, key,
                   prefix, *best);
  }
}

// REGRESSOR, a text key of two values (its type is checked with the other keys').
RegressorMode regressor_of(const Json& config, const std::string& file) {
  const auto it = config.find("REGRESSOR");
  if (it == config.end() || it->is_null() || *it == "rf") return RegressorMode::random_forest;
  if (*it == "gbdt") return RegressorMode::gbdt;
  throw Error(fmt::format("{}: REGRESSOR must be rf or gbdt, got {}", file, shown(*it)));
}

}  // namespace

const std::vector<ConfigKey>& predictorbuild_keys() {
  static const std::vector<ConfigKey> keys = {{"DETAIL", T::Bool},
                                              {"IMPLEMENT", T::Text},
                                              {"BATCH_SIZE", T::Int, 1, static_cast<double>(kernels::check::kMaxBatch)},
                                              {"PRIOR_CONFIG_LIB", T::Text},
                                              {"PRIOR_ROWS", T::Number, 0, 1},
                                              {"PRIOR_ROWS_EXCLUDE", T::NameList},
                                              {"ALIGNED_CHANNELS", T::Number, 0, 1},
                                              {"STEM_SAMPLES", T::Number, 0, 1},
                                              {"INPUT_RESOLUTIONS", T::IntList, 16, 1024},
                                              {"WIDTH_MULTIPLIERS", T::NumberList, 0.1, 4},
                                              {"SAMPLE_MODELS", T::PathList},
                                              {"CALIBRATION_NETWORKS", T::PathList},
                                              {"REGRESSOR", T::Text}};
  return keys;
}

const std::vector<ConfigKey>& kernel_setting_keys() {
  static const std::vector<ConfigKey> keys = {{"INIT_SAMPLE_NUM", T::Int, 1, kMaxSampleNum},
                                              {"FINEGRAINED_SAMPLE_NUM", T::Int, 1, kMaxSampleNum},
                                              {"ITERATION", T::Int, 1, 100},
                                              {"ERROR_THRESHOLD", T::Number, 0, 10, true}};
  return keys;
}

const std::vector<ConfigKey>& ruletest_keys() {
  constexpr auto channels = static_cast<double>(kernels::check::kMaxChannels);
  static const std::vector<ConfigKey> keys = {{"DETAIL", T::Bool},
                                              {"IMPLEMENT", T::Text},
                                              {"HW", T::Int, 1, static_cast<double>(kernels::check::kMaxHw)},
                                              {"CIN", T::Int, 1, channels},
                                              {"SHAPE_1D", T::Int, 1, channels},
                                              {"COUT", T::Int, 1, channels},
                                              {"KERNEL_SIZE", T::Int, 1, static_cast<double>(kernels::check::kMaxKernelSize)},
                                              {"STRIDES", T::Int, 1, static_cast<double>(kernels::check::kMaxStride)},
                                              {"POOL_STRIDES", T::Int, 1, static_cast<double>(kernels::check::kMaxStride)},
                                              {"EMP_ALPHA", T::Number, 0, 100},
                                              {"BASIC_TESTCASES", T::NameList},
                                              {"OTHER_TESTCASES", T::NameList},
                                              {"LAYERS_1D", T::NameList}};
  return keys;
}

void check_config_keys(const Json& config, const std::vector<ConfigKey>& keys, const std::string& file,
                       const std::string& prefix) {
  for (const auto& k : keys) {
    const auto it = config.find(k.name);
    if (it == config.end() || it->is_null() || valid(k, *it)) continue;
    throw Error(fmt::format("{}: {}{} must be {}, got {}", file, prefix, k.name, expectation(k), shown(*it)));
  }
}

void check_predictorbuild_config(const Json& config, const std::string& file) {
  check_config_keys(config, predictorbuild_keys(), file);
  warn_likely_typos(config, predictorbuild_keys(), {"KERNELS"}, file);
  regressor_of(config, file);
  const Json& kernels = config.at("KERNELS");
  for (const auto& [kernel, settings] : kernels.items()) {
    check_name("kernel", kernel, file + " KERNELS");
    check_config_keys(settings, kernel_setting_keys(), file, "KERNELS." + kernel + ".");
    warn_likely_typos(settings, kernel_setting_keys(), {}, file, "KERNELS." + kernel + ".");
  }
}

void check_ruletest_config(const Json& config, const std::string& file) {
  check_config_keys(config, ruletest_keys(), file);
  warn_likely_typos(config, ruletest_keys(), {}, file);
  // Each bound alone still allows a CIN x HW x HW input of terabytes.
  const auto value = [&](const char* key) -> int64_t {
    const auto it = config.find(key);
    return it != config.end() && it->is_number_integer() ? it->get<int64_t>() : 1;
  };
  const int64_t elements = value("CIN") * value("HW") * value("HW");
  if (elements > kernels::check::kMaxTensorElements)
    throw Error(fmt::format("{}: CIN x HW x HW is {} elements, more than the {} a test input may hold: lower CIN or HW",
                            file, elements, kernels::check::kMaxTensorElements));
}

}  // namespace nnmeter

namespace nnmeter {

namespace {

template <class T>
T value_of(const Json& config, const char* key, T fallback) {
  const auto it = config.find(key);
  return it == config.end() || it->is_null() ? fallback : it->get<T>();
}

std::vector<std::string> names_of(const Json& config, const char* key) {
  const auto it = config.find(key);
  return it == config.end() || it->is_null() ? std::vector<std::string>{} : it->get<std::vector<std::string>>();
}

}  // namespace

KernelBuildSettings PredictorBuildConfig::kernel(const std::string& name) const {
  const auto it = kernels.find(name);
  return it == kernels.end() ? KernelBuildSettings{} : it->second;
}

PredictorBuildConfig PredictorBuildConfig::from_json(const Json& c, const std::string& file) {
  PredictorBuildConfig p;
  if (!c.is_object()) return p;
  check_config_keys(c, predictorbuild_keys(), file);
  p.detail = value_of(c, "DETAIL", p.detail);
  p.batch_size = value_of(c, "BATCH_SIZE", p.batch_size);
  if (const std::string lib = value_of(c, "PRIOR_CONFIG_LIB", std::string()); !lib.empty()) p.prior_config_lib = lib;
  p.prior_rows = value_of(c, "PRIOR_ROWS", p.prior_rows);
  for (const auto& name : names_of(c, "PRIOR_ROWS_EXCLUDE")) p.prior_rows_exclude.insert(name);
  p.aligned_channels = value_of(c, "ALIGNED_CHANNELS", p.aligned_channels);
  p.stem_samples = value_of(c, "STEM_SAMPLES", p.stem_samples);
  if (const auto r = c.find("INPUT_RESOLUTIONS"); r != c.end() && !r->is_null())
    p.input_resolutions = r->get<std::vector<int64_t>>();
  if (const auto w = c.find("WIDTH_MULTIPLIERS"); w != c.end() && !w->is_null())
    p.width_multipliers = w->get<std::vector<double>>();
  for (const auto& path : names_of(c, "SAMPLE_MODELS")) p.sample_models.emplace_back(path);
  for (const auto& path : names_of(c, "CALIBRATION_NETWORKS")) p.calibration_networks.emplace_back(path);
  p.regressor = regressor_of(c, file);
  const auto kernels = c.find("KERNELS");
  if (kernels == c.end() || kernels->is_null()) return p;
  if (!kernels->is_object()) throw Error(file + ": KERNELS must be a mapping from kernel name to its settings");
  for (const auto& [name, settings] : kernels->items()) {
    KernelBuildSettings k;
    if (!settings.is_null() && !settings.is_object()) throw Error(file + ": KERNELS." + name + " must be a mapping");
    if (settings.is_object()) {
      check_config_keys(settings, kernel_setting_keys(), file, "KERNELS." + name + ".");
      k.init_sample_num = value_of(settings, "INIT_SAMPLE_NUM", k.init_sample_num);
      k.finegrained_sample_num = value_of(settings, "FINEGRAINED_SAMPLE_NUM", k.finegrained_sample_num);
      k.iteration = value_of(settings, "ITERATION", k.iteration);
      k.error_threshold = value_of(settings, "ERROR_THRESHOLD", k.error_threshold);
    }
    p.kernels[name] = k;
  }
  return p;
}

RuleTestConfig RuleTestConfig::from_json(const Json& c, const std::string& file) {
  RuleTestConfig r;
  if (!c.is_object()) return r;
  check_config_keys(c, ruletest_keys(), file);
  if (const std::string implement = value_of(c, "IMPLEMENT", std::string("onnx")); implement != "onnx")
    throw Error(fmt::format("{}: IMPLEMENT is '{}', but nn-meter builds ONNX test models: set IMPLEMENT: onnx", file,
                            implement));
  r.detail = value_of(c, "DETAIL", r.detail);
  r.hw = value_of(c, "HW", r.hw);
  r.cin = value_of(c, "CIN", r.cin);
  r.shape_1d = value_of(c, "SHAPE_1D", r.shape_1d);
  r.cout = value_of(c, "COUT", r.cout);
  r.kernel_size = value_of(c, "KERNEL_SIZE", r.kernel_size);
  r.strides = value_of(c, "STRIDES", r.strides);
  r.pool_strides = value_of(c, "POOL_STRIDES", r.pool_strides);
  r.alpha = value_of(c, "EMP_ALPHA", r.alpha);
  r.basic = names_of(c, "BASIC_TESTCASES");
  r.other = names_of(c, "OTHER_TESTCASES");
  r.layers_1d = names_of(c, "LAYERS_1D");
  return r;
}

}  // namespace nnmeter
