// nn-meter-worker: the process that runs backends and plugins for the library — profiling (`profile-worker`)
// and the checks of a plugin at registration, check-env and connect (`plugin-probe`). The library starts
// it; users never do. Being its own program, found beside libnnmeter, it lets any process that loads the
// library (the CLI, Python, a downstream program) profile without the CLI, and keeps plugin code out of
// that process.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>

#include "common/worker_process.h"
#include "nnmeter/profiling.h"
#include "registry/plugin_probe.h"

namespace {

// The worker's stdout and stderr go to a log file the parent names; lines carry nn-Meter's prefix there too.
void setup_logging() {
  auto logger = std::make_shared<spdlog::logger>("nn-Meter", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("(nn-Meter) %v");
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"nn-meter-worker: runs backends and plugins for nn-Meter in their own process (started by the library)",
               "nn-meter-worker"};
  app.require_subcommand(1);
  int result_fd = 3;
  int parent_pid = 0;
  int (*run)(int) = nullptr;
  struct Mode {
    const char* name;
    const char* help;
    int (*entry)(int result_fd);
  };
  for (const Mode& mode : {Mode{"profile-worker", "converts and profiles models on a backend", &nnmeter::run_profile_worker},
                           Mode{"plugin-probe", "loads a plugin to check it (register, check-env, connect)",
                                &nnmeter::run_plugin_probe}}) {
    CLI::App* cmd = app.add_subcommand(mode.name, mode.help);
    cmd->add_option("--result-fd", result_fd, "file descriptor for answers");
    cmd->add_option("--parent-pid", parent_pid, "the process that started the worker");
    cmd->callback([&run, entry = mode.entry] { run = entry; });
  }
  CLI11_PARSE(app, argc, argv);
  setup_logging();
  nnmeter::die_with_parent(parent_pid);
  try {
    return run(result_fd);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "(nn-Meter) %s\n", e.what());
    return 1;
  }
}
