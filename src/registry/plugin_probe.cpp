#include "registry/plugin_probe.h"

#include <iostream>

#include "common/worker_process.h"
#include "nnmeter/profiling.h"
#include "registry/plugin_adapters.h"

namespace nnmeter {

namespace {

// Loading a plugin and constructing one object; generous for a slow disk, short enough not to look hung.
constexpr double kProbeTimeoutS = 120;

// Runs `request` in a child. A crash or hang becomes "<who> <how it ended>".
Json probe(const Json& request, const std::string& who) {
  WorkerProcess child(find_worker_executable(), "plugin-probe", "/dev/null");
  auto reply = child.request(request, kProbeTimeoutS);
  if (const auto* why = std::get_if<std::string>(&reply)) throw Error(who + " " + *why);
  const Json& answer = std::get<Json>(reply);
  if (!answer.value("ok", false)) throw Error(answer.value("error", who + " failed for an unknown reason"));
  return answer;
}

std::string plugin_label(const std::string& kind, const std::string& name, const Json& meta) {
  return "the " + kind + " plugin '" + name + "' (" + meta.value("packageLocation", std::string()) + ")";
}

Json handle(const Json& request) {
  const std::string task = request.at("task").get<std::string>();
  if (task == "validate") {
    const std::string kind = request.at("kind").get<std::string>();
    for (const ModuleKind k : {ModuleKind::Backend, ModuleKind::Kernel, ModuleKind::Operator, ModuleKind::TestCase})
      if (kind == singular_name(k)) {
        validate_plugin(k, request.at("meta"));
        return Json::object();
      }
    throw Error("unknown module kind '" + kind + "'");
  }
  if (task == "params")
    return {{"params", plugin_backend_declared_params(
                           ModuleEntry{request.at("name").get<std::string>(), "", request.at("meta")})}};
  const Registry registry(request.at("registry_home").get<std::string>());
  const std::string backend = request.at("backend").get<std::string>();
  if (task == "check_env") {
    for (const auto& info : list_backends(registry))
      if (info.name == backend) return {{"line", check_env_line(info)}};
    throw Error("no backend named '" + backend + "'");
  }
  if (task == "connect")
    return {{"message", connect_backend(registry, backend, request.at("config"), request.at("origin").get<std::string>())
                            ->test_connection()}};
  throw Error("unknown probe task '" + task + "'");
}

bool in_plugin_process = false;

}  // namespace

bool plugins_load_in_this_process() { return in_plugin_process; }
void set_plugins_load_in_this_process() { in_plugin_process = true; }

Json backend_params_isolated(const ModuleEntry& entry) {
  if (plugins_load_in_this_process()) return plugin_backend_declared_params(entry);
  return probe({{"task", "params"}, {"name", entry.name}, {"meta", entry.meta}}, plugin_label("backend", entry.name, entry.meta))
      .at("params");
}

void validate_plugin_isolated(ModuleKind kind, const Json& meta, const std::string& name) {
  probe({{"task", "validate"}, {"kind", singular_name(kind)}, {"meta", meta}}, plugin_label(singular_name(kind), name, meta));
}

std::string check_env_line_isolated(const Registry& registry, const BackendInfo& info) {
  if (!info.customized) return check_env_line(info);
  try {
    return probe({{"task", "check_env"}, {"registry_home", registry.home().string()}, {"backend", info.name}},
                 "the backend plugin '" + info.name + "'")
        .at("line")
        .get<std::string>();
  } catch (const std::exception& e) {
    return info.name + ":\tCheckFailed (" + e.what() + ")";
  }
}

std::string test_connection_isolated(const Registry& registry, const std::string& backend, const Json& config,
                                     const std::string& config_origin) {
  if (!registry.find(ModuleKind::Backend, backend))
    return connect_backend(registry, backend, config, config_origin)->test_connection();
  return probe({{"task", "connect"},
                {"registry_home", registry.home().string()},
                {"backend", backend},
                {"config", config},
                {"origin", config_origin}},
               "the backend plugin '" + backend + "'")
      .at("message")
      .get<std::string>();
}

int run_plugin_probe(int result_fd) {
  set_plugins_load_in_this_process();
  std::string line;
  if (!std::getline(std::cin, line)) return 1;
  Json answer;
  try {
    answer = handle(Json::parse(line));
    answer["ok"] = true;
  } catch (const std::exception& e) {
    answer = {{"ok", false}, {"error", e.what()}};
  }
  return write_all(result_fd, answer.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n") ? 0 : 1;
}

}  // namespace nnmeter
