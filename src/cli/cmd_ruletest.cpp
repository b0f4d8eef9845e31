// nn-meter ruletest: the fusion-rule tester.
#include <fmt/format.h>

#include <iostream>
#include <sstream>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/output.h"
#include "nnmeter/ruletest.h"

namespace nnmeter::cli {

namespace {

struct RuleTestArgs {
  std::string workspace, backend, testcases;
  double timeout_s = 300;
  bool strict_machine = false;
};

void ruletest(Context& ctx, const RuleTestArgs& a) {
  check_timeout(a.timeout_s);
  RuleTestSettings settings;
  settings.backend = a.backend;
  settings.testcases = split_list(a.testcases);
  settings.timeout_s = a.timeout_s;
  settings.progress = !ctx.json;
  RuleTester tester(Workspace::load(a.workspace), ctx.registry, settings);
  check_machine_before_measuring(ctx, a.backend, a.strict_machine);
  const RuleTestResult r = tester.run();
  if (ctx.json) {
    std::cout << json_text(r.rules) << std::endl;
    return;
  }
  std::string summary = fmt::format("Fusion rules of {}: {} test cases, {} obeyed, {} not obeyed", a.backend,
                                    r.obeyed + r.not_obeyed + r.undecided, r.obeyed, r.not_obeyed);
  if (r.undecided > 0)
    summary += fmt::format(", {} undecided (their \"error\" says why; profiling errors in {})", r.undecided,
                           (r.rules_file.parent_path() / "profile_error.log").string());
  summary += fmt::format(" ({} measurements now, {} from earlier runs", r.profiled_now, r.models - r.profiled_now);
  if (r.remeasured > 0) summary += fmt::format("; {} measured again to get out of the noise", r.remeasured);
  summary += ")";
  print_line(summary);
  print_line(fmt::format("Detected fusion rules saved to {}", r.rules_file.string()));
}

}  // namespace

void add_ruletest_commands(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<RuleTestArgs>();
  CLI::App* cmd = app.add_subcommand(
      "ruletest", "detect the backend's fusion rules: generate test models, profile them, decide (fusion_rule_tester)");
  cmd->add_option("--workspace", args->workspace, "path to the workspace (see nn-meter create)")->required();
  cmd->add_option("--backend", args->backend, "backend to profile on, e.g. onednn_cpu")->required();
  cmd->add_option("--testcases", args->testcases,
                  "comma-separated test cases, e.g. conv_relu,BF_dwconv_bn,MON (default: BASIC_TESTCASES and "
                  "OTHER_TESTCASES of ruletest_config.yaml)");
  cmd->add_option("--timeout", args->timeout_s, "seconds a model may take to convert and profile, and a worker to start (default 300)");
  cmd->add_flag("--strict-machine", args->strict_machine, "refuse to measure when the machine check warns (nn-meter check-machine)");
  cmd->callback([&ctx, args] { ruletest(ctx, *args); });
}

}  // namespace nnmeter::cli
