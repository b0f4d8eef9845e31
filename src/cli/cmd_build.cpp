// nn-meter build / profile: the kernel predictor builder (its models are converted and profiled in
// nn-meter-worker processes the library starts).
#include <fmt/format.h>
#include <fmt/ranges.h>

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
  std::optional<double> timeout_s;  // absent: 300 s, or a shard's plan's
  uint64_t seed = 1;
  bool no_ruletest = false;
  bool remeasure_noisy = false;
  bool strict_machine = false;
  bool plan_only = false;
  std::string shard;  // K/N
  int shards = 0;
};

std::string minutes_text(double seconds) {
  return seconds < 90 ? fmt::format("{:.0f} s", seconds) : fmt::format("{:.1f} min", seconds / 60);
}

// K/N with 1 <= K <= N, or a usage error.
std::pair<int, int> parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  const auto number = [](const std::string& s) {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoi(s);
  };
  const int k = slash == std::string::npos ? -1 : number(text.substr(0, slash));
  const int n = slash == std::string::npos ? -1 : number(text.substr(slash + 1));
  if (k < 1 || n < 1 || k > n)
    throw UsageError("--shard must be K/N with 1 <= K <= N (e.g. 2/4 or $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT), "
                     "got '" + text + "'");
  return {k, n};
}

Builder make_builder(Context& ctx, const BuildArgs& a) {
  BuilderSettings settings;
  settings.backend = a.backend;
  settings.seed = a.seed;
  settings.timeout_s = a.timeout_s.value_or(settings.timeout_s);
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
  if (a.timeout_s) check_timeout(*a.timeout_s);
  if (a.plan_only + !a.shard.empty() + (a.shards != 0) > 1)
    throw UsageError("--plan-only, --shard and --shards are steps of a sharded build: give one of them");
  if (a.shards < 0) throw UsageError("--shards must be a positive number of shards");
  if (a.plan_only) settings.sharding.mode = Sharding::Mode::plan;
  if (a.shards > 0) {
    settings.sharding.mode = Sharding::Mode::merge;
    settings.sharding.shards = a.shards;
  }
  Builder builder(Workspace::load(a.workspace), ctx.registry, settings);
  check_machine_before_measuring(ctx, a.backend, a.strict_machine);
  return builder;
}

// One shard of a sharded build's current plan, measured here.
void build_shard(Context& ctx, const BuildArgs& a) {
  const auto [shard, shards] = parse_shard(a.shard);
  if (a.plan_only || a.shards != 0) throw UsageError("--shard measures one shard of a plan: give it without --plan-only or --shards");
  if (a.timeout_s) check_timeout(*a.timeout_s);
  const Workspace workspace = Workspace::load(a.workspace);
  check_machine_before_measuring(ctx, a.backend, a.strict_machine);
  const Json done = measure_shard(workspace.shards_dir(), shard, shards,
                                  ShardRun{a.backend, ctx.registry.home(), {}, !ctx.json, a.timeout_s});
  report(ctx,
         fmt::format("Shard {} of plan {} ({}): its {} models are measured (journals in {}); when every shard is done, "
                     "merge with nn-meter build ... --shards {}",
                     done["shard"].get<std::string>(), done["plan"].get<std::string>(), done["phase"].get<std::string>(),
                     done["models"].get<size_t>(), done["folder"].get<std::string>(), shards),
         done);
}

void build(Context& ctx, const BuildArgs& a) {
  if (!a.shard.empty()) return build_shard(ctx, a);
  Builder builder = make_builder(ctx, a);
  std::vector<KernelBuildSummary> summaries;
  try {
    summaries = builder.build_latency_predictor(split_list(a.kernels), a.name, a.output);
  } catch (const MeasurementPlanned& planned) {
    const Json& p = planned.summary;
    Json out = p;
    out["status"] = "planned";
    std::vector<std::string> expected;  // the largest shard's expected time for a few device counts
    for (const auto& d : p.value("devices", Json::array()))
      if (const int n = d["shards"].get<int>(); n == 1 || n == 4 || n == 16)
        expected.push_back(fmt::format("{} on {} device{}", minutes_text(d["largest_s"].get<double>()), n, n == 1 ? "" : "s"));
    report(ctx,
           fmt::format("Plan {}: {}, {} measurements of {} models (expected {}); measure it with nn-meter build ... "
                       "--shard K/N on each of N devices, then merge with --shards N",
                       p.value("plan", ""), p.value("phase", ""), p.value("measurements", 0), p.value("models", 0),
                       fmt::join(expected, ", ")),
           out);
    if (a.plan_only) return;
    throw EarlyExit{3};
  }
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
  cmd->add_option("--timeout", a.timeout_s, "seconds a model may take to convert and profile, and a worker to start (default 300; a shard: its plan's)");
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
  build_cmd->add_flag("--plan-only", args->plan_only,
                      "a sharded build's first step: write the plan of the next measurements (predictor_build/shards/"
                      "plan.json) and stop (docs/sharding.md)");
  build_cmd->add_option("--shard", args->shard,
                        "measure shard K of N of the current plan here, e.g. $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT; "
                        "a rerun resumes it");
  build_cmd->add_option("--shards", args->shards,
                        "merge the N shards' journals of the current plan and go on building; exit 3 when the next phase's "
                        "plan is written and needs the shards again");
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
