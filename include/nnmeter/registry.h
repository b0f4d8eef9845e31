// The user's registry of customized modules: $NN_METER_HOME/config/registry.yaml (backends, kernels,
// operators, testcases) and predictors.yaml. Every change validates first (the plugin library loads, the
// class exists, the ABI matches) and then rewrites the file atomically under a file lock.
#pragma once

#include <optional>

#include "nnmeter/backend.h"
#include "nnmeter/common.h"
#include "nnmeter/fusion.h"
#include "nnmeter/kernel.h"

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

// ---------------------------------------------------------------------------------------------------------
// Modules by name: the builtins compiled into libnnmeter, then the plugins registered in a Registry. The
// builtins are registered into this folder by the folders that implement them (backends/, sampling/,
// fusion/) when the library loads, so the lookups depend on no folder above.

// Builtin backends, in listing order.
std::vector<BackendInfo> builtin_backends();
// All backends: builtins first, then the ones registered in `registry`.
std::vector<BackendInfo> list_backends(const Registry& registry);
// Looks a backend up by name (registered plugins and builtins); unknown names throw Error listing the
// known ones.
BackendInfo find_backend(const Registry& registry, const std::string& name);
// find_backend + resolve the config + construct: nn-Meter's connect_backend.
std::unique_ptr<Backend> connect_backend(const Registry& registry, const std::string& name, const Json& config,
                                         const std::string& config_origin = "backend_config.yaml");
// MMDeploy's check_env line for one backend: "<name>:\t<version>" or "<name>:\tNone".
std::string check_env_line(const BackendInfo& info);

// Builtin kernels, in listing order.
std::vector<KernelInfo> builtin_kernels();
// Builtins first, then registered ones.
std::vector<KernelInfo> list_kernels(const Registry& registry);
// Unknown names throw Error listing the known ones.
KernelInfo find_kernel(const Registry& registry, const std::string& name);

// The rule tester's builtin operators and test cases, then registered ones.
std::vector<OperatorInfo> builtin_operators();
std::vector<TestCaseInfo> builtin_testcases();
std::vector<OperatorInfo> list_operators(const Registry& registry);
std::vector<TestCaseInfo> list_testcases(const Registry& registry);

}  // namespace nnmeter
