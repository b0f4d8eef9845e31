#include "nnmeter/workspace.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <sstream>

#include "common/io.h"
#include "nnmeter/backend.h"
#include "nnmeter/protocol.h"
#include "nnmeter/registry.h"
#include "workspace/config_files.h"
#include "workspace_config/config_schema.h"
#include "workspace/default_configs.h"

namespace nnmeter {

namespace {

constexpr const char* kBackendConfig = "backend_config.yaml";
constexpr const char* kPredictorBuildConfig = "predictorbuild_config.yaml";
constexpr const char* kRuleTestConfig = "ruletest_config.yaml";

Json load_mapping(const fs::path& file) { return load_config_file(file); }

Json load_required(const fs::path& root, const char* name) {
  const fs::path file = root / "configs" / name;
  if (!fs::exists(file))
    throw Error("workspace " + root.string() + " has no configs/" + name +
                ": create the workspace with `nn-meter create` first");
  return load_mapping(file);
}

// User values override the defaults key by key; each KERNELS entry is completed from the default entry of
// the same kernel (or the generic one for kernels without defaults).
Json with_predictorbuild_defaults(Json user, const fs::path& file) {
  const Json defaults = io::yaml_to_json(default_predictorbuild_config_yaml(), "default predictorbuild_config");
  Json out = defaults;
  for (const auto& [key, value] : user.items()) out[key] = value;
  if (!out["KERNELS"].is_object())
    throw Error(file.string() + ": KERNELS must be a mapping from kernel name to its settings");
  const Json generic = {{"INIT_SAMPLE_NUM", 1000}, {"FINEGRAINED_SAMPLE_NUM", 20}, {"ITERATION", 3},
                        {"ERROR_THRESHOLD", 0.1}};
  for (auto& [kernel, settings] : out["KERNELS"].items()) {
    if (settings.is_null()) settings = Json::object();
    if (!settings.is_object()) throw Error(file.string() + ": KERNELS." + kernel + " must be a mapping");
    const Json& base = defaults["KERNELS"].contains(kernel) ? defaults["KERNELS"][kernel] : generic;
    for (const auto& [key, value] : base.items())
      if (!settings.contains(key) || settings[key].is_null()) settings[key] = value;
  }
  check_predictorbuild_config(out, file.string());
  return out;
}

Json with_ruletest_defaults(const Json& user, const fs::path& file) {
  Json out = io::yaml_to_json(default_ruletest_config_yaml(), "default ruletest_config");
  for (const auto& [key, value] : user.items()) out[key] = value;
  check_ruletest_config(out, file.string());
  return out;
}

// The parameters the backend (or the pair of backends of a TFLite or OpenVINO workspace) declares.
std::vector<BackendParam> backend_params(const Registry& registry, WorkspaceFlavor flavor, const std::string& backend) {
  switch (flavor) {
    case WorkspaceFlavor::Tflite:
      return tflite_workspace_params();
    case WorkspaceFlavor::Openvino:
      return openvino_workspace_params();
    case WorkspaceFlavor::Customized:
      if (!registry.find(ModuleKind::Backend, backend)) {
        for (const auto& b : builtin_backends())
          if (b.name == backend) return b.params;
        throw Error("backend '" + backend +
                    "' is not registered: register it first (refer to `nn-meter register --h` for more help)");
      }
      return find_backend(registry, backend).params;
    case WorkspaceFlavor::Builtin:
      return find_backend(registry, backend).params;
  }
  return {};
}

std::string backend_config_text(const Registry& registry, WorkspaceFlavor flavor, const std::string& backend) {
  switch (flavor) {
    case WorkspaceFlavor::Tflite:
      return tflite_backend_config_yaml();
    case WorkspaceFlavor::Openvino:
      return openvino_backend_config_yaml();
    case WorkspaceFlavor::Customized:
      if (const auto entry = registry.find(ModuleKind::Backend, backend)) {
        const std::string file = entry->meta.value("defaultConfigFile", "");
        if (!file.empty()) return io::read_file(file);
      }
      break;
    case WorkspaceFlavor::Builtin:
      break;
  }
  return default_backend_config_yaml(backend_params(registry, flavor, backend));
}

std::string preset_file_header(const WorkspacePreset& preset, const char* file) {
  return fmt::format("# The preset {} as `nn-meter create --preset {}` ships it. The workspace's {}\n"
                     "# inherits this file (_base_): override a key there, not here.\n",
                     preset.name, preset.name, file);
}

// The preset's backend keys that the backend takes: the protocol's, and of the others those it declares. A
// plugin that declares nothing gets its config as written, so it gets only the protocol's: its own keys are
// unknown here.
std::string preset_backend_config_text(const WorkspacePreset& preset, const std::vector<BackendParam>& params,
                                       const std::string& backend) {
  const Json keys = io::yaml_to_json(preset.backend_yaml, "preset " + preset.name);
  std::set<std::string> left_out;
  for (const auto& [key, value] : keys.items())
    if (!is_protocol_key(key) &&
        std::none_of(params.begin(), params.end(), [&key = key](const BackendParam& p) { return p.name == key; }))
      left_out.insert(key);
  std::string text = preset_file_header(preset, kBackendConfig);
  if (!left_out.empty())
    text += fmt::format("# Left out: {} ({} does not take them).\n", fmt::join(left_out, ", "), backend);
  // The preset's text is one "KEY: value" line per key, so a key is left out with its line.
  std::istringstream lines(preset.backend_yaml);
  for (std::string line; std::getline(lines, line);) {
    const std::string key = line.substr(0, line.find(':'));
    if (!left_out.count(key)) text += line + "\n";
  }
  return text;
}

// A workspace config that only inherits the preset's file: the user's overrides go below `_base_`.
std::string inheriting_config_text(const std::string& preset, const fs::path& base, const std::string& note) {
  return fmt::format("# Starts from the preset {} ({}): a key written here overrides the preset's\n"
                     "# (docs/config.md, Presets). {}\n"
                     "_base_: {}\n",
                     preset, base.string(), note, base.string());
}

}  // namespace

Workspace Workspace::load(const fs::path& root) {
  if (!fs::is_directory(root)) throw Error("workspace " + root.string() + " is not a folder: create it with `nn-meter create`");
  Workspace ws;
  ws.root = fs::absolute(root).lexically_normal();
  const fs::path backend_file = ws.configs_dir() / kBackendConfig;
  if (fs::exists(backend_file)) ws.backend_config = load_mapping(backend_file);
  ws.predictorbuild_config =
      with_predictorbuild_defaults(load_required(ws.root, kPredictorBuildConfig), ws.configs_dir() / kPredictorBuildConfig);
  ws.ruletest_config = with_ruletest_defaults(load_required(ws.root, kRuleTestConfig), ws.configs_dir() / kRuleTestConfig);
  return ws;
}

fs::path create_workspace(const Registry& registry, const fs::path& dir, WorkspaceFlavor flavor,
                          const std::string& backend, const std::string& preset) {
  if (dir.empty()) throw Error("no workspace path given");
  const fs::path root = fs::absolute(dir).lexically_normal();
  if (fs::exists(root) && !fs::is_directory(root))
    throw Error("workspace path " + root.string() + " is an existing file: choose a folder path");
  if ((flavor == WorkspaceFlavor::Customized || flavor == WorkspaceFlavor::Builtin) && backend.empty())
    throw Error("this workspace needs --backend NAME");

  // Compute every file before writing any, so a bad backend or preset leaves nothing behind.
  std::vector<std::pair<fs::path, std::string>> files;
  if (preset.empty()) {
    files = {{kBackendConfig, backend_config_text(registry, flavor, backend)},
             {kPredictorBuildConfig, default_predictorbuild_config_yaml()}};
  } else {
    const WorkspacePreset& p = find_workspace_preset(preset);
    const fs::path preset_dir = fs::path("presets") / p.name;
    const std::string backend_name = flavor == WorkspaceFlavor::Tflite     ? "tflite"
                                     : flavor == WorkspaceFlavor::Openvino ? "openvino"
                                                                           : backend;
    files = {{preset_dir / kBackendConfig,
              preset_backend_config_text(p, backend_params(registry, flavor, backend), backend_name)},
             {preset_dir / kPredictorBuildConfig, preset_file_header(p, kPredictorBuildConfig) + p.predictorbuild_yaml},
             {kBackendConfig, inheriting_config_text(p.name, preset_dir / kBackendConfig,
                                                     "Keys neither file sets keep the backend's defaults.")},
             {kPredictorBuildConfig,
              inheriting_config_text(p.name, preset_dir / kPredictorBuildConfig,
                                     "KERNELS merges kernel by kernel, lists are replaced:\n"
                                     "# KERNELS: {conv-bn-relu: {INIT_SAMPLE_NUM: 500}} changes one count.")}};
  }
  files.emplace_back(kRuleTestConfig, default_ruletest_config_yaml());
  for (const auto& [name, text] : files) {
    const fs::path path = root / "configs" / name;
    if (fs::exists(path)) {
      // Never overwrite a user's edits; delete the file to get the default again. A kept file that does not
      // name the preset's folder (as its _base_) leaves the preset unused, which `create` would not say else.
      const bool ignores_preset = !preset.empty() && name.parent_path().empty() && name != kRuleTestConfig &&
                                  io::read_file(path).find("presets/" + preset + "/") == std::string::npos;
      if (ignores_preset)
        spdlog::warn("Kept existing {}, which does not inherit the preset {}: delete it and create again",
                     path.string(), preset);
      else
        spdlog::info("Kept existing {}", path.string());
      continue;
    }
    io::write_file_atomic(path, text);
  }
  return root;
}

}  // namespace nnmeter
