// Parsing helpers shared by the subcommands.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace nnmeter::cli {

// "a,b,,c" → {"a", "b", "c"}: the comma-separated list flags (--kernels, --testcases).
inline std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace nnmeter::cli
