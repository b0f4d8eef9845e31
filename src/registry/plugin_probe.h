// The plugin calls the CLI makes only to check a plugin (registration, check-env, connect) run in a
// short-lived child, `nn-meter-worker plugin-probe`, as profiling runs in `profile-worker`: a plugin whose
// static initializer, constructor or get_version crashes or hangs costs one line naming it and the
// signal, never the nn-meter process.
#pragma once

#include "nnmeter/backend.h"
#include "nnmeter/registry.h"

namespace nnmeter {

// validate_plugin(kind, meta) in a child; `name` is the builtinName for messages. Throws Error.
void validate_plugin_isolated(ModuleKind kind, const Json& meta, const std::string& name);

// check_env_line(info); a registered backend is checked in a child and a crash reads "CheckFailed (...)".
std::string check_env_line_isolated(const Registry& registry, const BackendInfo& info);

// connect_backend(...)->test_connection() in a child for a registered backend (in process for a builtin):
// the backend's message. Throws Error.
std::string test_connection_isolated(const Registry& registry, const std::string& backend, const Json& config,
                                     const std::string& config_origin);

// The parameters a registered backend declares (its raw "params" answer), read in a child; in a worker
// or probe child (plugins_load_in_this_process()) read in process. Throws Error.
Json backend_params_isolated(const ModuleEntry& entry);

// True in the processes that exist to run plugins (profile-worker, plugin-probe): they load plugins
// themselves instead of starting yet another child.
bool plugins_load_in_this_process();
void set_plugins_load_in_this_process();

// The child: reads one JSON request on stdin, answers one JSON line on `result_fd`. Returns the exit code.
int run_plugin_probe(int result_fd);

}  // namespace nnmeter
