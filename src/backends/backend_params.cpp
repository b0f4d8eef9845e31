// One parameter declaration per backend drives defaults, validation and the generated YAML.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "nnmeter/backend.h"

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

std::string yaml_scalar(const Json& value) {
  if (value.is_null()) return "";
  if (value.is_boolean()) return value.get<bool>() ? "TRUE" : "FALSE";
  if (value.is_string()) {
    const auto s = value.get<std::string>();
    return s.empty() ? "''" : s;
  }
  return value.dump();
}

}  // namespace

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
  const Json user = config.is_null() ? Json::object() : config;
  if (!user.is_object()) throw Error(where + " must be a mapping of keys to values");
  // A plugin that declares nothing gets its config as written.
  if (params.empty()) return user;
  Json out = Json::object();
  for (const auto& p : params) out[p.name] = p.default_value;
  for (const auto& [key, value] : user.items()) {
    const auto it = std::find_if(params.begin(), params.end(), [&key = key](const BackendParam& p) { return p.name == key; });
    if (it == params.end()) {
      std::string known;
      for (const auto& p : params) known += (known.empty() ? "" : ", ") + p.name;
      throw Error(fmt::format("{}: unknown key '{}' (known keys: {})", where, key, known));
    }
    if (value.is_null()) continue;  // "KEY:" with no value keeps the default
    Json v = value;
    if (it->type == BackendParam::Type::Float && v.is_number_integer()) v = v.get<double>();
    if (!matches(it->type, v))
      throw Error(fmt::format("{}: key '{}' must be {} but is {}", where, key, to_string(it->type), value.dump()));
    out[key] = v;
  }
  return out;
}

std::string default_backend_config_yaml(const std::vector<BackendParam>& params) {
  std::string out;
  for (const auto& p : params) {
    out += fmt::format("# {} ({})\n", p.help, to_string(p.type));
    out += fmt::format("{}: {}\n", p.name, yaml_scalar(p.default_value));
  }
  return out;
}

}  // namespace nnmeter
