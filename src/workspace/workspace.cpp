#include "nnmeter/workspace.h"

#include <spdlog/spdlog.h>

#include "common/io.h"
#include "nnmeter/backend.h"
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

std::string backend_config_text(const Registry& registry, WorkspaceFlavor flavor, const std::string& backend) {
  switch (flavor) {
    case WorkspaceFlavor::Tflite:
      return tflite_backend_config_yaml();
    case WorkspaceFlavor::Openvino:
      return openvino_backend_config_yaml();
    case WorkspaceFlavor::Customized: {
      const auto entry = registry.find(ModuleKind::Backend, backend);
      if (!entry) {
        for (const auto& b : builtin_backends())
          if (b.name == backend) return default_backend_config_yaml(b.params);
        throw Error("backend '" + backend +
                    "' is not registered: register it first (refer to `nn-meter register --h` for more help)");
      }
      const std::string file = entry->meta.value("defaultConfigFile", "");
      if (!file.empty()) return io::read_file(file);
      return default_backend_config_yaml(find_backend(registry, backend).params);
    }
    case WorkspaceFlavor::Builtin:
      return default_backend_config_yaml(find_backend(registry, backend).params);
  }
  return "";
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
                          const std::string& backend) {
  if (dir.empty()) throw Error("no workspace path given");
  const fs::path root = fs::absolute(dir).lexically_normal();
  if (fs::exists(root) && !fs::is_directory(root))
    throw Error("workspace path " + root.string() + " is an existing file: choose a folder path");
  if ((flavor == WorkspaceFlavor::Customized || flavor == WorkspaceFlavor::Builtin) && backend.empty())
    throw Error("this workspace needs --backend NAME");

  // Compute every file before writing any, so a bad backend leaves nothing behind.
  const std::vector<std::pair<std::string, std::string>> files = {
      {kBackendConfig, backend_config_text(registry, flavor, backend)},
      {kPredictorBuildConfig, default_predictorbuild_config_yaml()},
      {kRuleTestConfig, default_ruletest_config_yaml()}};
  for (const auto& [name, text] : files) {
    const fs::path path = root / "configs" / name;
    if (fs::exists(path)) {
      // Never overwrite a user's edits; delete the file to get the default again.
      spdlog::info("Kept existing {}", path.string());
      continue;
    }
    io::write_file_atomic(path, text);
  }
  return root;
}

}  // namespace nnmeter
