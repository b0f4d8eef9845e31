// The user's registry of customized modules: $NN_METER_HOME/config/registry.yaml (backends, kernels,
// operators, testcases) and predictors.yaml. Every change validates first (the plugin library loads, the
// class exists, the ABI matches) and then rewrites the file atomically under a file lock.
#pragma once

#include <optional>

#include "nnmeter/common.h"

namespace nnmeter {

enum class ModuleKind { Backend, Kernel, Operator, TestCase };
const char* section_name(ModuleKind kind);  // "backends", "kernels", ...
const char* singular_name(ModuleKind kind);  // "backend", "kernel", ...

// One registered module. `meta` holds the normalized meta keys (camelCase, as registry.yaml stores them):
// packageLocation, classModule, className, and per kind defaultConfigFile, implement, samplerModule,
// samplerName, parserModule, parserName.
struct ModuleEntry {
  std::string name;
  std::string implement;  // operators and test cases only; "" otherwise
  Json meta;
};

// A registered predictor (predictors.yaml entry).
struct PredictorEntry {
  std::string name;
  std::string version;
  std::string category;
  fs::path package_location;
  std::vector<std::string> kernel_predictors;
};

class Registry {
 public:
  // $NN_METER_HOME if set, else ~/.nn_meter.
  static fs::path default_home();
  explicit Registry(fs::path home = default_home());

  const fs::path& home() const { return home_; }
  fs::path registry_file() const { return home_ / "config" / "registry.yaml"; }
  fs::path predictors_file() const { return home_ / "config" / "predictors.yaml"; }

  std::vector<ModuleEntry> list(ModuleKind kind) const;
  std::optional<ModuleEntry> find(ModuleKind kind, const std::string& name, const std::string& implement = "") const;
  // Validates the meta file and the plugin it names, then records it. Returns the entry.
  ModuleEntry register_module(ModuleKind kind, const fs::path& meta_file);
  // Throws Error when nothing matches.
  void unregister_module(ModuleKind kind, const std::string& name, const std::string& implement = "");

  std::vector<PredictorEntry> list_predictors() const;
  PredictorEntry register_predictor(const fs::path& meta_file);
  // Removes every version of `name`, or only `version`; returns how many entries were removed.
  size_t unregister_predictor(const std::string& name, const std::optional<std::string>& version);

 private:
  fs::path home_;
};

}  // namespace nnmeter
