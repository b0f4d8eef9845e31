// Small text helpers for parsing files and the output of external tools.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace nnmeter {

// `s` without leading and trailing spaces, tabs, carriage returns and newlines (tools on Android end lines
// "\r\n", CSV files written on Windows too).
inline std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}

// Whether `s` is UTF-8 text, which JSON (the engines' plans, --json output) can hold. ONNX's protobuf does not
// check its strings, so a model's names can be any bytes.
inline bool valid_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

// `s` with each byte that is not UTF-8 replaced by U+FFFD: a file name or a message (any bytes) as text that
// JSON can hold.
inline std::string utf8_replaced(const std::string& s) {
  if (valid_utf8(s)) return s;
  return nlohmann::json::parse(nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .get<std::string>();
}

// `s` as a quoted JSON string for a one-line message: escaped, bytes that are not UTF-8 replaced, cut at 80
// bytes, so a name holding newlines or megabytes still gives one line.
inline std::string quoted(const std::string& s) {
  const std::string shown = s.size() > 80 ? s.substr(0, 80) + "..." : s;
  return nlohmann::json(shown).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace nnmeter
