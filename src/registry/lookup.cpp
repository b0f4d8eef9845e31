// Name lookups across builtins and registered plugins, for every module kind.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nnmeter/backend.h"
#include "nnmeter/fusion.h"
#include "nnmeter/kernel.h"
#include "nnmeter/protocol.h"
#include "nnmeter/registry.h"
#include "registry/plugin_adapters.h"

namespace nnmeter {

namespace {

template <class Info>
std::vector<std::string> names_of(const std::vector<Info>& infos) {
  std::vector<std::string> out;
  for (const auto& i : infos) out.push_back(i.name);
  return out;
}

template <class Info>
Error unknown_name(const std::string& what, const std::string& name, const std::vector<Info>& known) {
  const auto names = names_of(known);
  return Error(fmt::format("unknown {} '{}'; known {}s: {}{}", what, name, what,
                           names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")),
                           " (register a customized one with nn-meter register --" + what + " META.yaml)"));
}

}  // namespace

std::vector<BackendInfo> list_backends(const Registry& registry) {
  auto out = builtin_backends();
  for (const auto& entry : registry.list(ModuleKind::Backend)) out.push_back(plugin_backend_info(entry, false));
  return out;
}

BackendInfo find_backend(const Registry& registry, const std::string& name) {
  if (const auto entry = registry.find(ModuleKind::Backend, name)) return plugin_backend_info(*entry, true);
  for (auto& info : builtin_backends())
    if (info.name == name) return info;
  throw unknown_name("backend", name, list_backends(registry));
}

std::unique_ptr<Backend> connect_backend(const Registry& registry, const std::string& name, const Json& config,
                                         const std::string& config_origin) {
  const BackendInfo info = find_backend(registry, name);
  return info.create(backend_only(resolve_backend_config(info.params, config, config_origin)));
}

std::string check_env_line(const BackendInfo& info) {
  std::string version = "None";
  try {
    const Json defaults = resolve_backend_config(info.params, Json::object(), "defaults");
    const auto backend = info.create(backend_only(defaults));
    if (backend->is_available()) version = backend->get_version();
  } catch (const std::exception&) {
    version = "CheckFailed";
  }
  return info.name + ":\t" + version;
}

std::vector<KernelInfo> list_kernels(const Registry& registry) {
  auto out = builtin_kernels();
  for (const auto& entry : registry.list(ModuleKind::Kernel)) out.push_back(plugin_kernel_info(entry));
  return out;
}

KernelInfo find_kernel(const Registry& registry, const std::string& name) {
  auto all = list_kernels(registry);
  for (auto& info : all)
    if (info.name == name) return info;
  throw unknown_name("kernel", name, all);
}

std::vector<OperatorInfo> list_operators(const Registry& registry) {
  auto out = builtin_operators();
  for (const auto& entry : registry.list(ModuleKind::Operator)) out.push_back(plugin_operator_info(entry));
  return out;
}

std::vector<TestCaseInfo> list_testcases(const Registry& registry) {
  auto out = builtin_testcases();
  for (const auto& entry : registry.list(ModuleKind::TestCase)) out.push_back(plugin_testcase_info(entry));
  return out;
}

}  // namespace nnmeter
