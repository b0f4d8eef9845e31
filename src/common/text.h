// Small text helpers for parsing the output of external tools.
#pragma once

#include <string>

namespace nnmeter {

// `s` without leading and trailing spaces, tabs and carriage returns (tools on Android end lines "\r\n").
inline std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

}  // namespace nnmeter
