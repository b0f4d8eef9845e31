// Every key nn-meter itself reads from predictorbuild_config.yaml and ruletest_config.yaml, declared once
// with its type and accepted range and checked when the workspace is loaded, so a bad value fails before
// any sampling or profiling starts. Keys not declared here are left alone: plugins get the whole config; one
// that looks like a typo of a declared key (two edits or fewer, or another case) gets a warning naming it.
#pragma once

#include "nnmeter/common.h"

namespace nnmeter {

struct ConfigKey {
  enum class Type { Int, Number, Bool, Text, NameList, PathList, IntList, NumberList };
  const char* name;
  Type type;
  double min = 0, max = 0;     // Int, Number and each IntList/NumberList entry, inclusive
  bool min_exclusive = false;  // Number: (min, max]
};

const std::vector<ConfigKey>& predictorbuild_keys();  // top level
const std::vector<ConfigKey>& kernel_setting_keys();  // KERNELS.<kernel>.*
const std::vector<ConfigKey>& ruletest_keys();

// Throws Error "<file>: <prefix><KEY> must be ..., got ..." for the first declared key whose value has the
// wrong type or is out of range. Absent keys and null values (the default) pass.
void check_config_keys(const Json& config, const std::vector<ConfigKey>& keys, const std::string& file,
                       const std::string& prefix = "");

// Both workspace configs, after their defaults are filled in.
void check_predictorbuild_config(const Json& config, const std::string& file);
void check_ruletest_config(const Json& config, const std::string& file);

}  // namespace nnmeter
