// Small text helpers for parsing files and the output of external tools.
#pragma once

#include <string>

namespace nnmeter {

// `s` without leading and trailing spaces, tabs, carriage returns and newlines (tools on Android end lines
// "\r\n", CSV files written on Windows too).
inline std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}

}  // namespace nnmeter
