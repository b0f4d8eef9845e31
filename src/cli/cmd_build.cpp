// nn-meter build / profile: the kernel predictor builder (its models are converted and profiled in
// nn-meter-worker processes the library starts).
#include <fmt/format.h>

#include <iostream>
#include <sstream>

#include "cli/args.h"
#include "cli/cli.h"
#include "cli/output.h"
#include "nnmeter/builder.h"

namespace nnmeter::cli {

namespace {

struct BuildArgs {
  std::string workspace, backend, kernels, name, output, regressor;
  double timeout_s = 300;
  uint64_t seed = 1;
  bool no_ruletest = false;
  bool remeasure_noisy = false;
  bool strict_machine = false;
};

Builder make_builder(Context& ctx, const BuildArgs& a) {
  BuilderSettings settings;
  settings.backend = a.backend;
  settings.seed = a.seed;
  settings.timeout_s = a.timeout_s;
  settings.progress = !ctx.json;
  settings.ruletest = !a.no_ruletest;
  settings.remeasure_noisy = a.remeasure_noisy;
  if (a.regressor == "gbdt") {
    settings.regressor = RegressorMode::gbdt;
  } else if (a.regressor == "rf") {
    settings.regressor = RegressorMode::random_forest;
  } else if (!a.regressor.empty()) {
    throw Error("--regressor must be rf or gbdt, not '" + a.regressor + "'");
  }
  check_timeout(a.timeout_s);
  Builder builder(Workspace::load(a.workspace), ctx.registry, settings);
  check_machine_before_measuring(ctx, a.backend, a.strict_machine);
  return builder;
}

void build(Context& ctx, const BuildArgs& a) {
  Builder builder = make_builder(ctx, a);
  const auto summaries = builder.build_latency_predictor(split_list(a.kernels), a.name, a.output);
  if (ctx.json) {
    Json out = Json::array();
    for (const auto& s : summaries)
      out.push_back({{"kernel", s.kernel}, {"samples", s.samples}, {"failed", s.failed}, {"metrics", s.metrics.to_json()}});
    std::cout << json_text(out) << std::endl;
    return;
  }
  print_line("Kernel predictor accuracy (held-out 20 % of the last iteration):");
  std::istringstream table(format_accuracy_table(summaries));
  for (std::string line; std::getline(table, line);) print_line(line);
}

void profile(Context& ctx, const BuildArgs& a, const std::string& kernel) {
  Builder builder = make_builder(ctx, a);
  const fs::path results = builder.workspace().predictor_build_dir() / "results";
  std::vector<fs::path> config_files;
  if (fs::is_directory(results))
    for (const auto& e : fs::directory_iterator(results)) {
      const std::string name = e.path().filename().string();
      if (name.rfind(kernel + "_", 0) == 0 && e.path().extension() == ".json") config_files.push_back(e.path());
    }
  if (config_files.empty())
    throw Error("no sampled configs of '" + kernel + "' in " + results.string() + ": run nn-meter sample first");
  std::sort(config_files.begin(), config_files.end());
  const KernelData entries = load_kernel_data(kernel, config_files, {});
  const KernelData profiled = builder.profile_kernel_data(kernel, entries);
  print_line(fmt::format("Profiled {} of {} models of {}: {}", profiled.size(), entries.size(), kernel,
                         (results / ("profiled_" + kernel + ".json")).string()));
}

void add_common(CLI::App* cmd, BuildArgs& a) {
  cmd->add_option("--workspace", a.workspace, "path to the workspace (see nn-meter create)")->required();
  cmd->add_option("--backend", a.backend, "backend to profile on, e.g. onednn_cpu")->required();
  cmd->add_option("--timeout", a.timeout_s, "seconds a model may take to convert and profile (default 300)");
  cmd->add_option("--seed", a.seed, "sampling seed (default 1)");
  cmd->add_flag("--strict-machine", a.strict_machine, "refuse to measure when the machine check warns (nn-meter check-machine)");
}

}  // namespace

void add_builder_commands(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<BuildArgs>();
  CLI::App* build_cmd = app.add_subcommand(
      "build", "build kernel latency predictors: sample, profile, train, adaptive sampling (build_latency_predictor)");
  add_common(build_cmd, *args);
  build_cmd->add_option("--kernels", args->kernels, "comma-separated kernels (default: KERNELS of predictorbuild_config.yaml)");
  build_cmd->add_option("--predictor-name", args->name, "name of the predictor (default: <backend>_predictor)");
  build_cmd->add_option("--output", args->output, "predictor folder (default: <workspace>/predictor_build/predictor)");
  build_cmd->add_option("--regressor", args->regressor,
                        "rf (random forest, nn-Meter's) or gbdt (gradient boosting) (default: REGRESSOR of "
                        "predictorbuild_config.yaml, else rf)");
  build_cmd->add_flag("--no-ruletest", args->no_ruletest,
                      "do not run the fusion-rule test; the predictor folder then has no fusion_rules.json");
  build_cmd->add_flag("--remeasure-noisy", args->remeasure_noisy,
                      "repeat the samples whose repeats did not settle (SETTLE_TOLERANCE) up to twice MAX_REPEATS (or "
                      "REPEATS), reusing every measurement of an earlier build of the workspace, and train again");
  build_cmd->callback([&ctx, args] { build(ctx, *args); });

  auto pargs = std::make_shared<BuildArgs>();
  auto kernel = std::make_shared<std::string>();
  CLI::App* profile_cmd = app.add_subcommand(
      "profile", "profile every sampled model of a kernel on a backend (writes results/profiled_<kernel>.json)");
  add_common(profile_cmd, *pargs);
  profile_cmd->add_option("--kernel", *kernel, "kernel whose sampled models to profile")->required();
  profile_cmd->callback([&ctx, pargs, kernel] { profile(ctx, *pargs, *kernel); });
}

}  // namespace nnmeter::cli
