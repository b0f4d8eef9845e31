#include "nnmeter/registry.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "common/io.h"
#include "common/warn_once.h"
#include "nnmeter/backend.h"
#include "nnmeter/fusion.h"
#include "nnmeter/kernel.h"
#include "registry/names.h"
#include "registry/plugin_adapters.h"
#include "registry/plugin_probe.h"

namespace nnmeter {

namespace {

// Meta keys in both spellings the seeds use; registry.yaml stores the camelCase one.
struct MetaKey {
  const char* camel;
  const char* snake;
  bool required;
};

std::vector<MetaKey> meta_keys(ModuleKind kind) {
  std::vector<MetaKey> keys = {{"packageLocation", "package_location", true},
                               {"classModule", "class_module", true},
                               {"className", "class_name", true}};
  switch (kind) {
    case ModuleKind::Backend:
      keys.push_back({"defaultConfigFile", "default_config_file", false});
      break;
    case ModuleKind::Kernel:
      keys.push_back({"implement", "implement", false});
      keys.push_back({"samplerModule", "sampler_module", true});
      keys.push_back({"samplerName", "sampler_name", true});
      keys.push_back({"parserModule", "parser_module", true});
      keys.push_back({"parserName", "parser_name", true});
      break;
    case ModuleKind::Operator:
    case ModuleKind::TestCase:
      keys.push_back({"implement", "implement", true});
      break;
  }
  return keys;
}

Json load_meta_file(const fs::path& meta_file) {
  const Json meta = io::load_yaml_file(meta_file);
  if (!meta.is_object()) throw Error("meta file " + meta_file.string() + " must be a YAML mapping of keys to values");
  return meta;
}

std::string scalar_text(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  return value.dump();
}

// A meta value where a name or path is expected must be a scalar, never a mapping or a list.
std::string meta_text(const Json& value, const std::string& key, const fs::path& meta_file) {
  if (value.is_structured())
    throw Error("meta file " + meta_file.string() + ": " + key + " must be a single value, not a " +
                (value.is_object() ? "mapping" : "list"));
  return scalar_text(value);
}

// A bad entry already on disk (hand-edited, or written by an older nn-meter) is skipped with one warning
// per process, so it cannot take every command down; unregister still removes it.
void warn_skipped_entry(const fs::path& file, const std::string& what, const std::string& name, const std::string& why) {
  warn_once("registry entry " + file.string() + "\n" + what + "\n" + name,
            fmt::format("WARNING: {}: ignoring {} {}: {} (remove it with nn-meter unregister --{}=NAME)", file.string(),
                        what, quoted_name(name), why, what));
}

// Returns {name, normalized meta}. Unknown keys are reported, not fatal (a typo should be visible).
std::pair<std::string, Json> normalize_meta(ModuleKind kind, const Json& raw, const fs::path& meta_file) {
  std::set<std::string> used;
  auto pick = [&](const char* camel, const char* snake) -> std::optional<std::string> {
    for (const char* key : {camel, snake}) {
      if (raw.contains(key)) {
        used.insert(key);
        const std::string value = meta_text(raw[key], key, meta_file);
        if (!value.empty()) return value;
      }
    }
    return std::nullopt;
  };
  const auto name = pick("builtinName", "builtin_name");
  if (!name) throw Error("meta file " + meta_file.string() + " lacks the required key builtinName (or builtin_name)");
  Json meta = Json::object();
  for (const auto& key : meta_keys(kind)) {
    const auto value = pick(key.camel, key.snake);
    if (value) {
      meta[key.camel] = *value;
    } else if (key.required) {
      throw Error("meta file " + meta_file.string() + " lacks the required key " + key.camel + " (or " + key.snake +
                  ")");
    }
  }
  for (const auto& [key, value] : raw.items())
    if (!used.count(key)) spdlog::warn("WARNING: meta file {} has an unused key '{}'", meta_file.string(), key);

  // Relative paths are resolved against the meta file's folder, so a package can ship its own meta file.
  for (const char* key : {"packageLocation", "defaultConfigFile"}) {
    if (!meta.contains(key)) continue;
    fs::path p = meta[key].get<std::string>();
    if (p.is_relative()) p = fs::absolute(meta_file).parent_path() / p;
    std::string normal = p.lexically_normal().string();
    while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
    meta[key] = normal;
  }
  return {*name, meta};
}

std::vector<std::string> builtin_names(ModuleKind kind) {
  std::vector<std::string> out;
  switch (kind) {
    case ModuleKind::Backend:
      for (const auto& b : builtin_backends()) out.push_back(b.name);
      break;
    case ModuleKind::Kernel:
      for (const auto& k : builtin_kernels()) out.push_back(k.name);
      break;
    case ModuleKind::Operator:
      for (const auto& o : builtin_operators()) out.push_back(o.name);
      break;
    case ModuleKind::TestCase:
      for (const auto& t : builtin_testcases()) out.push_back(t.name);
      break;
  }
  return out;
}

bool keyed_by_implement(ModuleKind kind) { return kind == ModuleKind::Operator || kind == ModuleKind::TestCase; }

Json load_registry(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return Json::object();
  Json doc;
  try {
    doc = io::load_yaml_file(file);
  } catch (const Error& e) {
    throw Error("registry file " + file.string() + " is corrupt (" + e.what() + "): fix it or delete it");
  }
  if (doc.is_null()) return Json::object();
  if (!doc.is_object())
    throw Error("registry file " + file.string() + " is corrupt (not a mapping of sections): fix it or delete it");
  for (const auto& [section, entries] : doc.items()) {
    if (!entries.is_null() && !entries.is_object())
      throw Error("registry file " + file.string() + " is corrupt (section '" + section +
                  "' is not a mapping): fix it or delete it");
  }
  return doc;
}

Json load_predictors(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return Json::array();
  Json doc;
  try {
    doc = io::load_yaml_file(file);
  } catch (const Error& e) {
    throw Error("predictor registry " + file.string() + " is corrupt (" + e.what() + "): fix it or delete it");
  }
  if (doc.is_null()) return Json::array();
  if (!doc.is_array())
    throw Error("predictor registry " + file.string() + " is corrupt (not a list of predictors): fix it or delete it");
  return doc;
}

PredictorEntry predictor_from_json(const Json& j) {
  PredictorEntry p;
  p.name = scalar_text(j.value("name", Json()));
  p.version = scalar_text(j.value("version", Json()));
  p.category = scalar_text(j.value("category", Json()));
  p.package_location = scalar_text(j.value("package_location", Json()));
  if (j.contains("kernel_predictors") && j["kernel_predictors"].is_array())
    for (const auto& k : j["kernel_predictors"]) p.kernel_predictors.push_back(scalar_text(k));
  return p;
}

}  // namespace

const char* section_name(ModuleKind kind) {
  switch (kind) {
    case ModuleKind::Backend:
      return "backends";
    case ModuleKind::Kernel:
      return "kernels";
    case ModuleKind::Operator:
      return "operators";
    case ModuleKind::TestCase:
      return "testcases";
  }
  return "";
}

const char* singular_name(ModuleKind kind) {
  switch (kind) {
    case ModuleKind::Backend:
      return "backend";
    case ModuleKind::Kernel:
      return "kernel";
    case ModuleKind::Operator:
      return "operator";
    case ModuleKind::TestCase:
      return "testcase";
  }
  return "";
}

fs::path Registry::default_home() {
  if (const char* home = std::getenv("NN_METER_HOME"); home != nullptr && *home != '\0') return home;
  if (const char* user_home = std::getenv("HOME"); user_home != nullptr && *user_home != '\0')
    return fs::path(user_home) / ".nn_meter";
  throw Error("cannot locate the nn-Meter home: set NN_METER_HOME or HOME");
}

Registry::Registry(fs::path home) : home_(std::move(home)) {}

std::vector<ModuleEntry> Registry::list(ModuleKind kind) const {
  const Json doc = load_registry(registry_file());
  std::vector<ModuleEntry> out;
  const char* section = section_name(kind);
  if (!doc.contains(section) || doc[section].is_null()) return out;
  const std::string what = singular_name(kind);
  const auto builtins = builtin_names(kind);
  for (const auto& [name, value] : doc[section].items()) {
    if (const auto problem = name_problem(name)) {
      warn_skipped_entry(registry_file(), what, name, "the name " + *problem);
      continue;
    }
    if (!value.is_object()) {
      warn_skipped_entry(registry_file(), what, name, "its entry is not a mapping");
      continue;
    }
    if (std::find(builtins.begin(), builtins.end(), name) != builtins.end()) {
      warn_skipped_entry(registry_file(), what, name, "a builtin " + what + " has that name");
      continue;
    }
    if (keyed_by_implement(kind)) {
      for (const auto& [implement, meta] : value.items()) {
        if (const auto problem = name_problem(implement)) {
          warn_skipped_entry(registry_file(), what, name, "the implement " + quoted_name(implement) + " " + *problem);
        } else if (!meta.is_object()) {
          warn_skipped_entry(registry_file(), what, name, "its entry is not a mapping");
        } else {
          out.push_back({name, implement, meta});
        }
      }
    } else {
      out.push_back({name, "", value});
    }
  }
  return out;
}

std::optional<ModuleEntry> Registry::find(ModuleKind kind, const std::string& name, const std::string& implement) const {
  for (auto& entry : list(kind))
    if (entry.name == name && (implement.empty() || entry.implement == implement)) return entry;
  return std::nullopt;
}

ModuleEntry Registry::register_module(ModuleKind kind, const fs::path& meta_file) {
  const auto [name, meta] = normalize_meta(kind, load_meta_file(meta_file), meta_file);
  const std::string what = singular_name(kind);
  check_name(what, name, meta_file.string());
  if (keyed_by_implement(kind)) check_name("implement", meta["implement"].get<std::string>(), meta_file.string());
  if (kind == ModuleKind::Operator && name.find('_') != std::string::npos)
    throw Error("operator name '" + name + "' contains '_', which separates operators in test case names: rename it");
  const auto builtins = builtin_names(kind);
  if (std::find(builtins.begin(), builtins.end(), name) != builtins.end())
    throw Error("'" + name + "' is the name of a builtin " + what + ": choose another builtinName");
  if (meta.contains("defaultConfigFile")) {
    const fs::path config = meta["defaultConfigFile"].get<std::string>();
    if (!fs::is_regular_file(config))
      throw Error("defaultConfigFile " + config.string() + " does not exist: fix the path in " + meta_file.string());
    io::load_yaml_file(config);  // must at least be YAML
  }
  validate_plugin_isolated(kind, meta, name);

  const std::string implement = keyed_by_implement(kind) ? meta["implement"].get<std::string>() : "";
  io::FileLock lock(home_ / "config" / ".registry.lock");
  Json doc = load_registry(registry_file());
  Json& section = doc[section_name(kind)];
  if (section.is_null()) section = Json::object();
  if (keyed_by_implement(kind)) {
    if (section.contains(name) && section[name].contains(implement))
      throw Error(what + " '" + name + "' (" + implement + ") is already registered: unregister it first");
    Json stored = meta;
    stored.erase("implement");
    section[name][implement] = stored;
  } else {
    if (section.contains(name))
      throw Error(what + " '" + name + "' is already registered: unregister it first");
    section[name] = meta;
  }
  io::write_file_atomic(registry_file(), io::json_to_yaml(doc));
  return {name, implement, meta};
}

void Registry::unregister_module(ModuleKind kind, const std::string& name, const std::string& implement) {
  io::FileLock lock(home_ / "config" / ".registry.lock");
  Json doc = load_registry(registry_file());
  const std::string what = singular_name(kind);
  Json& section = doc[section_name(kind)];
  const std::string hint = " (see nn-meter --list-" + std::string(section_name(kind)) + ")";
  if (section.is_null() || !section.contains(name))
    throw Error("no registered " + what + " named '" + name + "'" + hint);
  if (keyed_by_implement(kind)) {
    if (!section[name].contains(implement))
      throw Error("no registered " + what + " named '" + name + "' with implement '" + implement + "'" + hint);
    section[name].erase(implement);
    if (section[name].empty()) section.erase(name);
  } else {
    section.erase(name);
  }
  io::write_file_atomic(registry_file(), io::json_to_yaml(doc));
}

std::vector<PredictorEntry> Registry::list_predictors() const {
  std::vector<PredictorEntry> out;
  for (const auto& j : load_predictors(predictors_file())) {
    if (!j.is_object()) {
      warn_skipped_entry(predictors_file(), "predictor", j.dump(), "it is not a mapping");
      continue;
    }
    PredictorEntry entry = predictor_from_json(j);
    std::optional<std::string> problem;
    if (const auto p = name_problem(entry.name)) problem = "the name " + *p;
    if (const auto p = name_problem(entry.version); p && !problem) problem = "the version " + *p;
    for (const auto& kernel : entry.kernel_predictors)
      if (!problem)
        if (const auto p = name_problem(kernel)) problem = "kernel " + quoted_name(kernel) + " " + *p;
    if (problem) {
      warn_skipped_entry(predictors_file(), "predictor", entry.name, *problem);
      continue;
    }
    out.push_back(std::move(entry));
  }
  return out;
}

PredictorEntry Registry::register_predictor(const fs::path& meta_file) {
  const Json raw = load_meta_file(meta_file);
  Json normalized = Json::object();
  for (const auto& [camel, snake] : std::vector<std::pair<const char*, const char*>>{
           {"name", "name"}, {"version", "version"}, {"category", "category"},
           {"packageLocation", "package_location"}, {"kernelPredictors", "kernel_predictors"}}) {
    for (const char* key : {camel, snake})
      if (raw.contains(key)) normalized[snake] = raw[key];
  }
  for (const char* key : {"name", "version", "package_location", "kernel_predictors"})
    if (!normalized.contains(key) || normalized[key].is_null())
      throw Error("meta file " + meta_file.string() + " lacks the required key " + key);
  for (const char* key : {"name", "version", "category", "package_location"})
    if (normalized.contains(key)) meta_text(normalized[key], key, meta_file);
  if (!normalized["kernel_predictors"].is_array() || normalized["kernel_predictors"].empty())
    throw Error("kernel_predictors in " + meta_file.string() + " must be a non-empty list of kernel names");
  for (const auto& kernel : normalized["kernel_predictors"]) meta_text(kernel, "kernel_predictors", meta_file);
  PredictorEntry entry = predictor_from_json(normalized);
  check_name("predictor", entry.name, meta_file.string());
  check_name("predictor version", entry.version, meta_file.string());
  for (const auto& kernel : entry.kernel_predictors) check_name("kernel", kernel, meta_file.string());
  if (entry.package_location.is_relative())
    entry.package_location = (fs::absolute(meta_file).parent_path() / entry.package_location).lexically_normal();
  if (!fs::is_directory(entry.package_location))
    throw Error("predictor package_location " + entry.package_location.string() + " is not a folder");
  for (const auto& kernel : entry.kernel_predictors) {
    const fs::path model = entry.package_location / (kernel + ".json");
    if (!fs::is_regular_file(model))
      throw Error("predictor folder " + entry.package_location.string() + " has no model " + model.filename().string() +
                  " for kernel '" + kernel + "' listed in kernel_predictors");
  }

  io::FileLock lock(home_ / "config" / ".registry.lock");
  Json doc = load_predictors(predictors_file());
  for (const auto& existing : doc) {
    const PredictorEntry e = predictor_from_json(existing);
    if (e.name == entry.name && e.version == entry.version)
      throw Error("predictor '" + entry.name + "' version " + entry.version + " is already registered: unregister it first");
  }
  Json stored = {{"name", entry.name},
                 {"version", entry.version},
                 {"category", entry.category},
                 {"package_location", entry.package_location.string()},
                 {"kernel_predictors", entry.kernel_predictors}};
  doc.push_back(stored);
  io::write_file_atomic(predictors_file(), io::json_to_yaml(doc));
  return entry;
}

size_t Registry::unregister_predictor(const std::string& name, const std::optional<std::string>& version) {
  io::FileLock lock(home_ / "config" / ".registry.lock");
  const Json doc = load_predictors(predictors_file());
  Json kept = Json::array();
  size_t removed = 0;
  for (const auto& j : doc) {
    const PredictorEntry e = predictor_from_json(j);
    if (e.name == name && (!version || e.version == *version)) {
      ++removed;
    } else {
      kept.push_back(j);
    }
  }
  if (removed == 0)
    throw Error("no registered predictor named '" + name + "'" + (version ? " with version " + *version : "") +
                " (see nn-meter --list-predictors)");
  io::write_file_atomic(predictors_file(), io::json_to_yaml(kept));
  return removed;
}

}  // namespace nnmeter
