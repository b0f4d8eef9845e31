// One parameter declaration per backend drives defaults, validation and the generated YAML.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "nnmeter/backend_config.h"

#include "common/io.h"
#include "nnmeter/protocol.h"

namespace nnmeter {

namespace {

bool matches(BackendParam::Type type, const Json& value) {
  switch (type) {
    case BackendParam::Type::Int:
      return value.is_number_integer();
    case BackendParam::Type::Float:
      return value.is_number();
    case BackendParam::Type::Bool:
      return value.is_boolean();
    case BackendParam::Type::String:
      return value.is_string();
  }
  return false;
}

// NaN, infinities and integers that a 32-bit int cannot hold would silently become other values in the
// backend; a declared range narrows this further.
void check_range(const BackendParam& p, const Json& value, const std::string& where) {
  if (p.type != BackendParam::Type::Int && p.type != BackendParam::Type::Float) return;
  const double v = value.get<double>();
  const bool is_int = p.type == BackendParam::Type::Int;
  const double lo = p.min.value_or(is_int ? static_cast<double>(INT32_MIN) : -HUGE_VAL);
  const double hi = p.max.value_or(is_int ? static_cast<double>(INT32_MAX) : HUGE_VAL);
  if (std::isfinite(v) && v >= lo && v <= hi) return;
  const std::string range = p.min || p.max ? fmt::format(" in [{}, {}]", lo, hi) : is_int ? " of 32 bits" : " (finite)";
  throw Error(fmt::format("{}: key '{}' must be {}{}, got {}", where, p.name, is_int ? "an integer" : "a number", range,
                          value.is_number_float() ? fmt::format("{}", v) : value.dump()));
}

std::string yaml_scalar(const Json& value) {
  if (value.is_null()) return "";
  if (value.is_boolean()) return value.get<bool>() ? "TRUE" : "FALSE";
  if (value.is_string()) {
    // A string YAML would read as something else (off, yes, 1.5, null, '') is quoted.
    const auto s = value.get<std::string>();
    Json back;
    try {
      back = io::yaml_to_json("v: " + s, "a default value")["v"];
    } catch (const Error&) {
    }
    if (back.is_string() && back.get<std::string>() == s) return s;
    std::string quoted = "'";
    for (const char c : s) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    return quoted + "'";
  }
  return value.dump();
}

}  // namespace

BackendParam backend_param(std::string name, BackendParam::Type type, Json default_value, std::string help,
                           std::optional<double> min, std::optional<double> max) {
  return BackendParam{std::move(name), type, std::move(default_value), std::move(help), min, max};
}

const char* to_string(BackendParam::Type type) {
  switch (type) {
    case BackendParam::Type::Int:
      return "int";
    case BackendParam::Type::Float:
      return "float";
    case BackendParam::Type::Bool:
      return "bool";
    case BackendParam::Type::String:
      return "string";
  }
  return "string";
}

BackendParam::Type backend_param_type_from_string(const std::string& name) {
  if (name == "int") return BackendParam::Type::Int;
  if (name == "float") return BackendParam::Type::Float;
  if (name == "bool") return BackendParam::Type::Bool;
  if (name == "string" || name == "str") return BackendParam::Type::String;
  throw Error("unknown backend parameter type '" + name + "' (expected int, float, bool or string)");
}

Json resolve_backend_config(const std::vector<BackendParam>& params, const Json& config, const std::string& where) {
  const Json given = config.is_null() ? Json::object() : config;
  if (!given.is_object()) throw Error(where + " must be a mapping of keys to values");
  // The measurement protocol's keys are every backend's: validated and defaulted here, kept in the result.
  MeasurementProtocol::from_config(given, where);
  Json protocol = Json::object();
  for (const auto& p : protocol_params())
    protocol[p.name] = given.contains(p.name) && !given[p.name].is_null() ? given[p.name] : p.default_value;
  const Json user = backend_only(given);
  // A plugin that declares nothing gets its config as written.
  if (params.empty()) {
    Json out = user;
    out.update(protocol);
    return out;
  }
  Json out = Json::object();
  for (const auto& p : params) out[p.name] = p.default_value;
  for (const auto& [key, value] : user.items()) {
    const auto it = std::find_if(params.begin(), params.end(), [&key = key](const BackendParam& p) { return p.name == key; });
    if (it == params.end()) {
      std::string known;
      for (const auto& p : params) known += (known.empty() ? "" : ", ") + p.name;
      for (const auto& p : protocol_params()) known += ", " + p.name;
      throw Error(fmt::format("{}: unknown key '{}' (known keys: {})", where, key, known));
    }
    if (value.is_null()) continue;  // "KEY:" with no value keeps the default
    Json v = value;
    if (it->type == BackendParam::Type::Float && v.is_number_integer()) v = v.get<double>();
    if (!matches(it->type, v))
      throw Error(fmt::format("{}: key '{}' must be {} but is {}", where, key, to_string(it->type), value.dump()));
    check_range(*it, v, where);
    out[key] = v;
  }
  out.update(protocol);
  return out;
}

std::string default_backend_config_yaml(const std::vector<BackendParam>& params) {
  std::string out;
  std::vector<BackendParam> all = params;
  all.insert(all.end(), protocol_params().begin(), protocol_params().end());
  for (const auto& p : all) {
    out += fmt::format("# {} ({})\n", p.help, to_string(p.type));
    out += fmt::format("{}: {}\n", p.name, yaml_scalar(p.default_value));
  }
  return out;
}

}  // namespace nnmeter
