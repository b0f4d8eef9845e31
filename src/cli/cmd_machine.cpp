// nn-meter check-machine, and the short check build, profile, ruletest, evaluate and calibrate run before they
// measure on this machine.
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "cli/cli.h"
#include "cli/output.h"
#include "nnmeter/backend.h"
#include "nnmeter/machine_check.h"
#include "nnmeter/registry.h"

namespace nnmeter::cli {

namespace {

struct CheckArgs {
  double seconds = 1.0;
  int probe_runs = 30;
  bool strict = false;
};

void check(Context& ctx, const CheckArgs& a) {
  MachineCheckOptions options;
  options.window_s = a.seconds;
  options.probe_runs = a.probe_runs;
  const MachineCheck c = check_machine(options);
  if (ctx.json) {
    std::cout << json_text(c.to_json()) << std::endl;
  } else {
    std::istringstream table(c.to_table());
    for (std::string line; std::getline(table, line);) print_line(line);
  }
  if (a.strict && !c.fit()) throw Error("--strict: the machine is not fit to measure on (see the checks marked warn)");
}

}  // namespace

void check_machine_before_measuring(Context& ctx, const std::string& backend, bool strict) {
  // A device over adb is measured on the device: this machine's state does not set its labels.
  if (!backend.empty() && find_backend(ctx.registry, backend).remote_device) return;
  // A CI runner or a test suite that measures in parallel knows its machine is shared; --strict-machine still
  // checks.
  const char* setting = std::getenv("NN_METER_MACHINE_CHECK");
  if (!strict && setting && std::string(setting) == "off") return;
  MachineCheckOptions options;
  options.window_s = 0.5;
  options.probe_runs = 20;
  const MachineCheck c = check_machine(options);
  for (const auto& f : c.findings)
    if (f.state == CheckState::warn) spdlog::warn("machine check, {}: {}; {}", f.check, f.detail, f.advice);
  if (!c.fit() && strict)
    throw Error("--strict-machine: the machine is not fit to measure on (see the warnings above; nn-meter check-machine "
                "says more)");
}

void add_machine_commands(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand(
      "check-machine", "is this machine fit to measure on? governor, boost, SMT siblings, other processes, thermal, a "
                       "short probe series");
  cmd->add_option("--seconds", args->seconds, "how long other processes' CPU use is sampled (default 1)")
      ->check(CLI::Range(0.0, 60.0));
  cmd->add_option("--probe-runs", args->probe_runs, "runs of the in-process probe series; 0 skips it (default 30)")
      ->check(CLI::Range(0, 10000));
  cmd->add_flag("--strict", args->strict, "exit 1 when any check warns");
  cmd->callback([&ctx, args] { check(ctx, *args); });
}

}  // namespace nnmeter::cli
