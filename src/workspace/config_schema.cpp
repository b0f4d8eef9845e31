#include "workspace/config_schema.h"

#include <fmt/format.h>

#include <cmath>

#include "kernels/config_check.h"
#include "nnmeter/sampling.h"
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
      if (!v.is_array()) return false;
      for (const auto& item : v)
        if (!item.is_string() || item.get<std::string>().empty()) return false;
      return true;
  }
  return false;
}

}  // namespace

const std::vector<ConfigKey>& predictorbuild_keys() {
  static const std::vector<ConfigKey> keys = {{"DETAIL", T::Bool},
                                              {"IMPLEMENT", T::Text},
                                              {"BATCH_SIZE", T::Int, 1, static_cast<double>(kcheck::kMaxBatch)},
                                              {"PRIOR_CONFIG_LIB", T::Text},
                                              {"PRIOR_ROWS", T::Number, 0, 1},
                                              {"PRIOR_ROWS_EXCLUDE", T::NameList},
                                              {"ALIGNED_CHANNELS", T::Number, 0, 1}};
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
  constexpr auto channels = static_cast<double>(kcheck::kMaxChannels);
  static const std::vector<ConfigKey> keys = {{"DETAIL", T::Bool},
                                              {"IMPLEMENT", T::Text},
                                              {"HW", T::Int, 1, static_cast<double>(kcheck::kMaxHw)},
                                              {"CIN", T::Int, 1, channels},
                                              {"SHAPE_1D", T::Int, 1, channels},
                                              {"COUT", T::Int, 1, channels},
                                              {"KERNEL_SIZE", T::Int, 1, static_cast<double>(kcheck::kMaxKernelSize)},
                                              {"STRIDES", T::Int, 1, static_cast<double>(kcheck::kMaxStride)},
                                              {"POOL_STRIDES", T::Int, 1, static_cast<double>(kcheck::kMaxStride)},
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
  const Json& kernels = config.at("KERNELS");
  for (const auto& [kernel, settings] : kernels.items()) {
    check_name("kernel", kernel, file + " KERNELS");
    check_config_keys(settings, kernel_setting_keys(), file, "KERNELS." + kernel + ".");
  }
}

void check_ruletest_config(const Json& config, const std::string& file) {
  check_config_keys(config, ruletest_keys(), file);
  // Each bound alone still allows a CIN x HW x HW input of terabytes.
  const auto value = [&](const char* key) -> int64_t {
    const auto it = config.find(key);
    return it != config.end() && it->is_number_integer() ? it->get<int64_t>() : 1;
  };
  const int64_t elements = value("CIN") * value("HW") * value("HW");
  if (elements > kcheck::kMaxTensorElements)
    throw Error(fmt::format("{}: CIN x HW x HW is {} elements, more than the {} a test input may hold: lower CIN or HW",
                            file, elements, kcheck::kMaxTensorElements));
}

}  // namespace nnmeter
