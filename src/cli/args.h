// Parsing helpers shared by the subcommands.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "nnmeter/common.h"

namespace nnmeter::cli {

// "a,b,,c" → {"a", "b", "c"}: the comma-separated list flags (--kernels, --testcases).
inline std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// --timeout: NaN would disable the per-model deadline and a huge value overflows it.
inline void check_timeout(double seconds) {
  constexpr double kMaxTimeoutS = 7 * 24 * 3600.0;
  if (!(std::isfinite(seconds) && seconds > 0 && seconds <= kMaxTimeoutS))
    throw Error(fmt::format("--timeout must be positive, finite and at most 604800 seconds (a week), got {}", seconds));
}

}  // namespace nnmeter::cli
