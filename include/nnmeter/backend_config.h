// A backend's configuration: the parameters a backend declares once (with types, defaults and ranges) and
// their resolution against a backend_config.yaml. Shared by builtin and plugin backends; the measurement
// protocol's keys, which every backend config also holds, are declared in nnmeter/protocol.h.
#pragma once

#include <optional>

#include "nnmeter/common.h"

namespace nnmeter {

// One declared backend parameter. From this single declaration come the default backend_config.yaml,
// validation of a loaded config and the flags of `nn-meter backend NAME ...`.
struct BackendParam {
  enum class Type { Int, Float, Bool, String };
  std::string name;  // the YAML key, e.g. "NUM_THREADS"
  Type type = Type::String;
  Json default_value;
  std::string help;
  // Accepted range of an Int or Float value. Unset: any finite Float, any Int a 32-bit int holds.
  std::optional<double> min, max;
};
// One declaration in one call, e.g. backend_param("NUM_THREADS", BackendParam::Type::Int, 1, "threads", 1, 64).
BackendParam backend_param(std::string name, BackendParam::Type type, Json default_value, std::string help,
                           std::optional<double> min = std::nullopt, std::optional<double> max = std::nullopt);
const char* to_string(BackendParam::Type type);
BackendParam::Type backend_param_type_from_string(const std::string& name);  // "int", "float", ...

// Fills defaults into `config` and checks every key against `params`: an unknown key or a value of the
// wrong type throws Error naming the key (`where` names the file for the message).
Json resolve_backend_config(const std::vector<BackendParam>& params, const Json& config, const std::string& where);
// The default backend_config.yaml text, one commented key per parameter.
std::string default_backend_config_yaml(const std::vector<BackendParam>& params);

}  // namespace nnmeter
