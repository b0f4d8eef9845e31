// nn-meter sample: config sampling + kernel model generation (generate_config_sample).
// nn-meter kernel-data to-csv: configs + profiled latencies -> feature CSV.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <random>

#include "cli/cli.h"
#include "cli/output.h"
#include "nnmeter/kernel_data.h"
#include "nnmeter/registry.h"
#include "nnmeter/sampling.h"
#include "nnmeter/workspace.h"

namespace nnmeter::cli {

namespace {

struct SampleArgs {
  std::string workspace, kernel, mark, mode = "prior", configs, prior_lib;
  std::optional<int> num;
  std::optional<uint64_t> seed;
};

// --num defaults to the workspace's KERNELS.<kernel>.INIT_SAMPLE_NUM / FINEGRAINED_SAMPLE_NUM.
int default_num(const PredictorBuildConfig& build, const std::string& kernel, SamplingMode mode) {
  const char* key = mode == SamplingMode::Prior ? "INIT_SAMPLE_NUM" : "FINEGRAINED_SAMPLE_NUM";
  const auto it = build.kernels.find(kernel);
  if (it == build.kernels.end())
    throw Error(fmt::format("give --num, or set KERNELS.{}.{} in the workspace's predictorbuild_config.yaml", kernel, key));
  return mode == SamplingMode::Prior ? it->second.init_sample_num : it->second.finegrained_sample_num;
}

void sample(Context& ctx, const SampleArgs& a) {
  const SamplingMode mode = parse_sampling_mode(a.mode);
  Workspace ws = Workspace::load(a.workspace);
  if (!a.prior_lib.empty()) ws.predictorbuild_config["PRIOR_CONFIG_LIB"] = a.prior_lib;
  // Fail on an unknown kernel before anything else, with the list of known ones.
  const KernelInfo info = find_kernel(ctx.registry, a.kernel);
  const int num = a.num ? *a.num : default_num(ws.build_config(), info.name, mode);
  std::vector<KernelConfig> configs;
  if (mode == SamplingMode::Finegrained) {
    if (a.configs.empty()) throw UsageError("--sampling-mode finegrained needs --configs FILE (the configs to sample around)");
    configs = load_configs_file(a.configs, info.name);
  } else if (!a.configs.empty()) {
    throw Error("--configs is only used with --sampling-mode finegrained");
  }
  // Without --seed every run differs, as in nn-Meter; the seed is logged so a run can be repeated.
  const uint64_t seed = a.seed ? *a.seed : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  const std::string mark = a.mark.empty() ? a.mode : a.mark;
  spdlog::debug("sampling {} with seed {}", info.name, seed);
  const SampleResult r = generate_config_sample(ws, ctx.registry, info.name, num, mark, mode, configs, seed);
  const int written = static_cast<int>(r.new_entries.size());
  if (ctx.json) {
    Json out = {{"kernel", info.name}, {"mark", mark},          {"seed", seed},
                {"sampled", r.sampled}, {"duplicates", r.duplicates}, {"written", written},
                {"results_file", r.results_file.string()}};
    std::cout << json_text(out) << std::endl;
    return;
  }
  if (written == 0) {
    print_line(fmt::format("No new {} kernel models: all {} sampled configs are already in the workspace (seed {})",
                           info.name, r.sampled, seed));
    return;
  }
  print_line(fmt::format("Generated {} {} kernel models ({} sampled, {} duplicates dropped, seed {}) in {}", written,
                         info.name, r.sampled, r.duplicates, seed, (ws.predictor_build_dir() / "kernels").string()));
  print_line(fmt::format("Kernel configs saved to {}", r.results_file.string()));
}

struct ToCsvArgs {
  std::string workspace, kernel, mark = "prior", output, label = "latency";
  std::vector<std::string> configs, latencies;
};

void to_csv(Context& ctx, const ToCsvArgs& a) {
  const Workspace ws = Workspace::load(a.workspace);
  const KernelInfo info = find_kernel(ctx.registry, a.kernel);
  const fs::path results = ws.predictor_build_dir() / "results";
  std::vector<fs::path> configs(a.configs.begin(), a.configs.end());
  if (configs.empty()) {
    // Every <kernel>_<mark>.json of the workspace, in name order so the CSV is reproducible.
    std::error_code ec;
    if (fs::is_directory(results, ec))
      for (const auto& e : fs::directory_iterator(results)) {
        const std::string name = e.path().filename().string();
        if (e.path().extension() == ".json" && name.rfind(info.name + "_", 0) == 0) configs.push_back(e.path());
      }
    std::sort(configs.begin(), configs.end());
    if (configs.empty())
      throw Error(fmt::format("no {}_<mark>.json in {}; run nn-meter sample first or pass --configs", info.name,
                              results.string()));
  }
  std::vector<fs::path> latencies(a.latencies.begin(), a.latencies.end());
  if (latencies.empty()) latencies.push_back(results / fmt::format("profiled_{}.json", info.name));
  const fs::path output =
      a.output.empty() ? results / "collection" / fmt::format("Data_{}_{}.csv", info.name, a.mark) : fs::path(a.output);

  KernelSuite suite = info.create(ws.predictorbuild_config);
  const Json data = collect_kernel_data(configs, latencies);
  const KernelDataTable table = get_data_by_profiled_results(info.name, *suite.parser, data, a.label);
  save_kernel_data_csv(table, output);
  if (ctx.json) {
    std::cout << json_text({{"kernel", info.name}, {"rows", table.features.size()}, {"columns", table.columns},
                            {"output", output.string()}})
              << std::endl;
    return;
  }
  print_line(fmt::format("Saved {} rows of {} kernel data to {}", table.features.size(), info.name, output.string()));
}

}  // namespace

void add_sample_commands(CLI::App& app, Context& ctx) {
  auto s = std::make_shared<SampleArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sample", "sample kernel configs and generate their ONNX models in a workspace (generate_config_sample)");
  cmd->add_option("--workspace", s->workspace, "the workspace folder")->required();
  cmd->add_option("--kernel", s->kernel, "kernel type, e.g. conv-bn-relu (see nn-meter --list-kernels)")->required();
  cmd->add_option("--num", s->num,
                  "prior: number of configs; finegrained: configs per given config (default: the kernel's "
                  "INIT_SAMPLE_NUM / FINEGRAINED_SAMPLE_NUM in predictorbuild_config.yaml)");
  cmd->add_option("--mark", s->mark, "mark in the file names <kernel>_<mark>_<ID>.onnx (default: the sampling mode)");
  cmd->add_option("--sampling-mode", s->mode, "prior or finegrained")->check(CLI::IsMember({"prior", "finegrained"}));
  cmd->add_option("--configs", s->configs,
                  "finegrained: JSON/YAML file with a list of configs, or a kernel data file (<kernel>_<mark>.json)");
  cmd->add_option("--seed", s->seed, "random seed for reproducible sampling (default: random, logged with -v)");
  cmd->add_option("--prior-config-lib", s->prior_lib,
                  "folder with conv.csv, dwconv.csv, fc.csv, pooling.csv replacing the builtin prior config library");
  cmd->callback([&ctx, s] { sample(ctx, *s); });

  auto t = std::make_shared<ToCsvArgs>();
  CLI::App* kd = app.add_subcommand("kernel-data", "kernel data tools");
  kd->require_subcommand(1);
  CLI::App* csv = kd->add_subcommand("to-csv", "convert kernel configs + profiled latencies to a feature CSV");
  csv->add_option("--workspace", t->workspace, "the workspace folder")->required();
  csv->add_option("--kernel", t->kernel, "kernel type")->required();
  csv->add_option("--configs", t->configs, "config json files (default: results/<kernel>_*.json)");
  csv->add_option("--latencies", t->latencies, "latency json files (default: results/profiled_<kernel>.json)");
  csv->add_option("--label", t->label, "the profiled field to use as label (default: latency)");
  csv->add_option("--mark", t->mark, "mark used in the default output name (default: prior)");
  csv->add_option("--output", t->output, "CSV path (default: results/collection/Data_<kernel>_<mark>.csv)");
  csv->callback([&ctx, t] { to_csv(ctx, *t); });
}

}  // namespace nnmeter::cli
