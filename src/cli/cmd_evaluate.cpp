// nn-meter evaluate: a predictor's accuracy on real models against measurements by the repeat protocol,
// next to the measurements' own repeatability; terminal table, --json, CSV and an HTML report.
// nn-meter calibrate: the same measuring, then the predictor's composition term fitted on those networks.
// nn-meter evaluate --leave-family-out: the workspace's own measurements, each family held out (Builder).
#include <fmt/format.h>

#include <iostream>
#include <optional>

#include "cli/cli.h"
#include "cli/output.h"
#include "common/io.h"
#include "nnmeter/builder.h"
#include "nnmeter/evaluate.h"
#include "workspace/config_files.h"

namespace nnmeter::cli {

namespace {

struct EvaluateArgs {
  std::string predictor, version, backend, config, work_dir = "nn-meter-evaluate", report, workspace;
  std::vector<std::string> onnx, calibrate_on;
  int repeats = 0;
  std::optional<int> kernel_repeats;
  double timeout_s = 300;
  uint64_t seed = 1;
  bool kernels = false;
  bool strict_machine = false;
  bool leave_family_out = false;
};

EvaluateSettings settings_from(Context& ctx, const EvaluateArgs& a) {
  EvaluateSettings s;
  s.predictor = a.predictor;
  s.predictor_version = a.version;
  s.backend = a.backend;
  if (!a.config.empty()) {
    s.backend_config = load_config_file(a.config);
    if (s.backend_config.is_null()) s.backend_config = Json::object();
    if (!s.backend_config.is_object()) throw Error("--config " + a.config + " must be a mapping of backend config keys");
  }
  if (a.repeats > 0) s.backend_config["REPEATS"] = a.repeats;
  for (const auto& f : a.onnx) s.onnx.emplace_back(f);
  for (const auto& f : a.calibrate_on) s.calibrate_on.emplace_back(f);
  s.work_dir = fs::absolute(a.work_dir);
  s.timeout_s = a.timeout_s;
  s.progress = !ctx.json;
  s.seed = a.seed;
  s.kernels = a.kernels;
  s.kernel_repeats = a.kernel_repeats;
  return s;
}

void print_table(const std::string& table) {
  for (size_t start = 0; start < table.size();) {
    const size_t end = table.find('\n', start);
    print_line(table.substr(start, end - start));
    start = end == std::string::npos ? table.size() : end + 1;
  }
}

// The workspace's calibration networks, each family held out with its layers: nothing new is measured.
void run_leave_family_out(Context& ctx, const EvaluateArgs& a) {
  if (a.workspace.empty())
    throw UsageError("--leave-family-out needs --workspace: the workspace the predictor was built in (its kernel samples "
                     "and calibration networks are what is held out and scored)");
  if (!a.onnx.empty() || !a.calibrate_on.empty() || a.kernels || !a.version.empty() || !a.backend.empty() ||
      !a.config.empty() || a.repeats > 0)
    throw UsageError("--leave-family-out scores the workspace's calibration networks as they were measured: give it "
                     "without --onnx, --calibrate-on, --kernels, --predictor-version, --backend, --config and --repeats");
  BuilderSettings settings;
  settings.timeout_s = a.timeout_s;
  settings.progress = !ctx.json;
  settings.seed = a.seed;
  const GeneralizationReport report = leave_family_out(ctx.registry, a.workspace, a.predictor, settings);
  if (ctx.json) {
    std::cout << json_text(report.to_json()) << std::endl;
    return;
  }
  print_table(report.to_table());
}

void run_evaluate(Context& ctx, const EvaluateArgs& a) {
  if (a.leave_family_out) return run_leave_family_out(ctx, a);
  if (!a.workspace.empty()) throw UsageError("--workspace is for --leave-family-out");
  if (a.predictor.empty()) throw UsageError("--predictor is required");
  if (a.onnx.empty()) throw UsageError("--onnx is required");
  const EvaluateSettings s = settings_from(ctx, a);
  check_machine_before_measuring(ctx, a.backend, a.strict_machine);
  const EvaluateReport report = evaluate(ctx.registry, s);
  const fs::path html = a.report.empty() ? s.work_dir / "report.html" : fs::absolute(a.report);
  io::write_file_atomic(html, report.to_html());
  if (ctx.json) {
    Json out = report.to_json();
    out["files"] = {{"report", html.string()},
                    {"json", (s.work_dir / "results.json").string()},
                    {"csv", (s.work_dir / "results.csv").string()}};
    if (s.kernels) out["files"]["kernels_csv"] = (s.work_dir / "kernels.csv").string();
    if (report.calibration) out["files"]["composition"] = report.composition_file.string();
    std::cout << json_text(out) << std::endl;
  } else {
    print_table(report.to_table());
    print_line(fmt::format("Report: {} (results also in {} and {})", html.string(), (s.work_dir / "results.csv").string(),
                           (s.work_dir / "results.json").string()));
  }
  if (report.summary.models == 0)
    throw Error(fmt::format("none of the {} models could be both predicted and measured: see {}", report.models.size(),
                            (s.work_dir / "results.csv").string()));
}

void run_calibrate(Context& ctx, const EvaluateArgs& a, bool dry_run, bool refresh) {
  const EvaluateSettings s = settings_from(ctx, a);
  check_machine_before_measuring(ctx, a.backend, a.strict_machine);
  const auto show = [&](const auto& report) {
    if (ctx.json)
      std::cout << json_text(report.to_json()) << std::endl;
    else
      print_table(report.to_table());
  };
  if (refresh)
    show(relevel(ctx.registry, s, !dry_run));
  else
    show(calibrate(ctx.registry, s, !dry_run));
}

// The options evaluate and calibrate share: which predictor, which models, how to measure them. Evaluate checks
// --predictor and --onnx itself (--leave-family-out needs neither).
void add_measuring_options(CLI::App* cmd, EvaluateArgs& a, bool required) {
  auto* predictor = cmd->add_option("--predictor", a.predictor, "a registered predictor name, or a predictor folder");
  cmd->add_option("--predictor-version", a.version, "predictor version; default: the latest registered");
  cmd->add_option("--backend", a.backend, "backend to measure on; default: the one the predictor was built for");
  auto* onnx = cmd->add_option("--onnx", a.onnx, "an ONNX model or a folder of *.onnx models; repeatable");
  predictor->required(required);
  onnx->required(required);
  cmd->add_option("--repeats", a.repeats, "independent repeats per model, each in a fresh process (REPEATS)");
  cmd->add_option("--config", a.config,
                  "backend_config.yaml whose keys override the config the predictor was built with");
  cmd->add_option("--work-dir", a.work_dir,
                  "journal, converted models and results; rerun with the same folder to resume")
      ->capture_default_str();
  cmd->add_option("--timeout", a.timeout_s, "seconds per measured repeat, conversion included, and for a worker to start")->capture_default_str();
  cmd->add_option("--seed", a.seed, "seed of the shuffled measuring order")->capture_default_str();
  cmd->add_flag("--strict-machine", a.strict_machine, "refuse to measure when the machine check warns (nn-meter check-machine)");
}

}  // namespace

void add_evaluate_commands(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<EvaluateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "evaluate", "measure models with the repeat protocol, predict them, and report the predictor's accuracy next to "
                  "the measurement's own repeatability");
  add_measuring_options(cmd, *a, false);
  cmd->add_option("--report", a->report, "the HTML report; default: <work-dir>/report.html");
  cmd->add_flag("--kernels", a->kernels,
                "also measure every kernel the predictor detects, alone, to split each model's error into the kernel "
                "predictors' and the composition's (kernels.csv)");
  cmd->add_option("--kernel-repeats", a->kernel_repeats,
                  "independent repeats per kernel with --kernels; default: the REPEATS the predictor's samples were "
                  "measured with");
  cmd->add_option("--calibrate-on", a->calibrate_on,
                  "ONNX networks (files or folders; repeatable) measured in the same shuffled order as --onnx, on which "
                  "the composition term is fitted as calibrate does; the --onnx models are predicted with it, and it is "
                  "written to <work-dir>/composition.json");
  cmd->add_flag("--leave-family-out", a->leave_family_out,
                "score the predictor built in --workspace on its calibration networks, each architecture family held out: "
                "its layers leave the kernel samples and its networks the composition term (nothing is measured again)");
  cmd->add_option("--workspace", a->workspace,
                  "with --leave-family-out: the workspace the predictor was built in (--predictor: its folder, default "
                  "<workspace>/predictor_build/predictor)");
  cmd->callback([&ctx, a] { run_evaluate(ctx, *a); });

  auto c = std::make_shared<EvaluateArgs>();
  c->work_dir = "nn-meter-calibrate";
  auto dry_run = std::make_shared<bool>(false);
  CLI::App* cal = app.add_subcommand(
      "calibrate", "measure networks with the repeat protocol and fit the predictor's composition term (how this device "
                   "runs a network against the sum of its kernels measured alone) into its composition.json");
  add_measuring_options(cal, *c, true);
  cal->add_flag("--dry-run", *dry_run, "fit and report, but leave the predictor folder as it is");
  auto refresh = std::make_shared<bool>(false);
  cal->add_flag("--refresh", *refresh,
                "on a later day: measure a few networks and move the calibrated predictor's level by the median of "
                "measured / predicted, without refitting the term (the machine's level moves between days)");
  cal->callback([&ctx, c, dry_run, refresh] { run_calibrate(ctx, *c, *dry_run, *refresh); });
}

}  // namespace nnmeter::cli
