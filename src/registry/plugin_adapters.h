// Plugin classes seen through the library's own interfaces: a registered backend is a Backend, a
// registered kernel is a KernelSuite, and so on. Everything else in libnnmeter treats plugins and
// builtins alike.
#pragma once

#include "nnmeter/backend.h"
#include "nnmeter/fusion.h"
#include "nnmeter/kernel.h"
#include "nnmeter/registry.h"

namespace nnmeter {

// `load_params` loads the library to read the declared parameters (find/connect); listing does not.
BackendInfo plugin_backend_info(const ModuleEntry& entry, bool load_params);
// The backend plugin's raw "params" answer, loading it in this process (the probe child calls it).
Json plugin_backend_declared_params(const ModuleEntry& entry);
KernelInfo plugin_kernel_info(const ModuleEntry& entry);
OperatorInfo plugin_operator_info(const ModuleEntry& entry);
TestCaseInfo plugin_testcase_info(const ModuleEntry& entry);

// Registration-time check: loads every class the normalized meta names, checks kind and ABI, and
// constructs each once (backends with their defaultConfigFile's contents). Throws Error on failure.
void validate_plugin(ModuleKind kind, const Json& meta);

}  // namespace nnmeter
