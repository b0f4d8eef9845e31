// Leave-family-out with the layers held out (Builder::leave_family_out, nnmeter/builder.h): the figure a user can
// expect on an architecture family the predictor never saw. A family held out only from the composition term
// (calibrate's "each family held out") still has its layers among the kernel samples; here they leave too.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <set>

#include "common/io.h"
#include "nnmeter/builder.h"
#include "nnmeter/kernel_data.h"
#include "nnmeter/networks.h"
#include "nnmeter/prediction.h"

namespace nnmeter {

namespace {

using FeatureRows = std::set<std::vector<double>>;

// A predictor folder of the retrained kernels, removed when done (it is only read to predict).
struct ScratchFolder {
  fs::path path;
  explicit ScratchFolder(fs::path p) : path(std::move(p)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
};

// One kernel's training table with the rows of its configs.
struct KernelTable {
  KernelDataset data;
  KernelPredictorMeta meta;  // as the predictor folder records it
};

KernelDataset without_rows(const KernelDataset& all, const FeatureRows& drop, size_t& removed) {
  KernelDataset out;
  out.feature_names = all.feature_names;
  removed = 0;
  for (size_t i = 0; i < all.features.size(); ++i) {
    if (drop.count(all.features[i])) {
      ++removed;
      continue;
    }
    out.features.push_back(all.features[i]);
    out.labels.push_back(all.labels[i]);
  }
  return out;
}

std::string percent(double share) { return fmt::format("{:.1f} %", 100 * share); }

std::string tau_text(const std::optional<double>& tau) { return tau ? fmt::format("{:.3f}", *tau) : std::string("-"); }

}  // namespace

KernelData Builder::measured_kernel_data(const std::string& kernel_type) const {
  const fs::path dir = results_dir();
  KernelData out = Json::object();
  const fs::path profiled_file = dir / ("profiled_" + kernel_type + ".json");
  if (!fs::is_directory(dir) || !fs::exists(profiled_file)) return out;
  const Json profiled = io::load_json_file(profiled_file);
  if (!profiled.is_object() || !profiled.contains(kernel_type) || !profiled[kernel_type].is_object()) return out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json" && e.path().filename().string().rfind(kernel_type + "_", 0) == 0)
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    const Json doc = io::load_json_file(file);
    // Another kernel whose name starts like this one ("add" and "add_relu") has its own key.
    if (!doc.is_object() || !doc.contains(kernel_type) || !doc[kernel_type].is_object()) continue;
    for (const auto& [id, entry] : doc[kernel_type].items()) {
      const auto latency = profiled[kernel_type].find(id);
      if (latency == profiled[kernel_type].end() || !latency->contains("latency")) continue;
      out[id] = entry;
      out[id]["latency"] = (*latency)["latency"];
    }
  }
  return out;
}

GeneralizationReport Builder::leave_family_out(const fs::path& folder_given) {
  const fs::path folder = folder_given.empty() ? workspace_.predictor_build_dir() / "predictor" : folder_given;
  const PredictorBuildConfig build = workspace_.build_config();
  const std::vector<fs::path> calibration = network_files("CALIBRATION_NETWORKS", build.calibration_networks);
  if (calibration.empty())
    throw Error("leave-family-out scores the calibration networks: predictorbuild_config.yaml lists no "
                "CALIBRATION_NETWORKS (e.g. [calibration]); add them and run nn-meter build again");
  if (!fs::exists(folder / kFusionRulesFile))
    throw Error(fmt::format("{} has no {}: leave-family-out predicts networks as predict does, which needs the fusion "
                            "rules (build without --no-ruletest)", folder.string(), kFusionRulesFile));
  std::set<std::string> families;
  for (const auto& file : calibration) families.insert(network_family(file.stem().string()));
  if (families.size() < 2)
    throw Error(fmt::format("leave-family-out needs calibration networks of at least two families; the {} of "
                            "CALIBRATION_NETWORKS are all of family '{}'", calibration.size(), *families.begin()));

  // The measurements: the calibration journal, resumed (what a finished build measured is not measured again).
  const EvaluateReport measured = evaluate(registry_, calibration_settings(folder, calibration));
  const LatencyPredictor base = LatencyPredictor::from_folder(folder, registry_);
  const PredictorMeta& base_meta = base.kernel_predictors().meta();

  // Each family's layers, as the predictor detects them, by the regressor that predicts them.
  std::map<std::string, std::map<std::string, FeatureRows>> layers;  // family → predictor kernel → rows
  std::vector<fs::path> with_samples = calibration;
  for (const auto& file : network_files("SAMPLE_MODELS", build.sample_models)) with_samples.push_back(file);
  for (const auto& file : with_samples) {
    auto& rows = layers[network_family(file.stem().string())];
    for (const KernelPrediction& k : base.predict_file(file).kernels)
      if (!k.predictor_kernel.empty()) rows[k.predictor_kernel].insert(k.features);
  }

  std::map<std::string, KernelTable> tables;
  for (const auto& [kernel, meta] : base_meta.kernels) {
    const KernelData data = measured_kernel_data(kernel);
    if (data.empty())
      throw Error(fmt::format("{}: kernel '{}' has no measured samples in {}: leave-family-out retrains the kernels "
                              "of a predictor built in this workspace", folder.string(), kernel, results_dir().string()));
    KernelSuite& ks = suite(kernel);
    const KernelDataTable table = get_data_by_profiled_results(kernel, *ks.parser, Json{{kernel, data}});
    KernelTable& t = tables[kernel];
    t.data.features = table.features;
    t.data.labels = table.labels;
    t.data.feature_names = meta.feature_names;
    t.meta = meta;
  }

  spdlog::info("Leave-family-out: the kernels retrained without each of the {} families' layers, the composition term "
               "refitted without its networks",
               families.size());
  GeneralizationReport report;
  // An interval the folder already has (an earlier run's) is not scored here: these errors are what make one.
  std::vector<ModelEvaluation> as_built = measured.models;
  for (auto& m : as_built) m.interval.reset();
  report.models = as_built;
  for (auto& m : report.models) m.predicted_ms.reset();  // each set when its family is held out
  const ScratchFolder scratch(workspace_.predictor_build_dir() / "leave_family_out");
  for (const std::string& family : families) {
    FamilyHeldOut held;
    held.family = family;
    // The kernels without the family's layers; a kernel none of whose samples is one is the folder's own.
    const fs::path retrained = scratch.path / "predictor";
    fs::remove_all(retrained);
    PredictorWriter writer(retrained, base_meta.info);
    for (const auto& [kernel, t] : tables) {
      size_t removed = 0;
      const auto rows = layers[family].find(kernel);
      const KernelDataset kept = rows == layers[family].end() ? KernelDataset{} : without_rows(t.data, rows->second, removed);
      KernelPredictorMeta meta = t.meta;
      if (removed == 0) {
        writer.add_kernel(KernelRegressor::load(folder / (kernel + ".json")), meta);
        continue;
      }
      held.samples_removed[kernel] = removed;
      held.samples_kept[kernel] = kept.features.size();
      if (kept.features.empty())
        throw Error(fmt::format("every sample of kernel '{}' is a layer of family '{}': nothing is left to train it on "
                                "with the family held out; sample more configs of it (INIT_SAMPLE_NUM)", kernel, family));
      TrainResult fit = train_kernel_predictor(kept, t.meta.params, build.kernel(kernel).error_threshold,
                                               TrainMode::final, kernel);
      meta.metrics.reset();
      meta.sample_count = fit.sample_count;
      writer.add_kernel(fit.model, meta);
    }
    writer.finish();
    fs::copy_file(folder / kFusionRulesFile, retrained / kFusionRulesFile, fs::copy_options::overwrite_existing);
    const LatencyPredictor without = LatencyPredictor::from_folder(retrained, registry_);

    // Every calibration network predicted without the family's layers; the term fitted on the other families'.
    std::vector<ModelEvaluation> models = measured.models, others;
    for (auto& m : models) {
      if (!m.predicted_ms) continue;  // not predicted: evaluate said why
      m.take_prediction(without.predict_file(m.onnx));
      if (m.family != family) others.push_back(m);
    }
    const CompositionFit fit = fit_composition_forms(others, measured, "the calibration journal");
    for (size_t i = 0; i < models.size(); ++i) {
      if (models[i].family != family) continue;
      held.networks.push_back(models[i].name);
      if (models[i].predicted_ms) report.models[i].predicted_ms = models[i].predicted_with(fit.composition);
    }
    spdlog::debug("leave-family-out: {} held out", family);
    report.families.push_back(std::move(held));
  }

  std::vector<const ModelEvaluation*> all, in_sample;
  std::map<std::string, std::vector<const ModelEvaluation*>> by_family;
  for (const auto& m : report.models) {
    all.push_back(&m);
    by_family[m.family].push_back(&m);
  }
  for (const auto& m : as_built) in_sample.push_back(&m);
  report.summary = summarize(all, measured.protocol.statistic);
  for (const auto& [family, ms] : by_family) report.by_family[family] = summarize(ms, measured.protocol.statistic);
  report.in_sample = summarize(in_sample, measured.protocol.statistic);
  std::vector<double> errors;
  for (const auto& m : report.models)
    if (const auto e = m.relative_error()) errors.push_back(*e);
  report.interval = PredictionInterval::estimate(errors, base_meta.measurement_quality);
  io::save_json_file(results_dir() / kGeneralizationFile, report.to_json());
  io::save_json_file(folder / kGeneralizationFile, report.to_json());
  return report;
}

GeneralizationReport leave_family_out(const Registry& registry, const fs::path& workspace_root, const fs::path& given,
                                      BuilderSettings settings) {
  Workspace workspace = Workspace::load(workspace_root);
  const fs::path folder = given.empty() ? workspace.predictor_build_dir() / "predictor" : fs::absolute(given);
  if (!fs::is_directory(folder))
    throw Error(fmt::format("{} is not a predictor folder: leave-family-out retrains the kernels of a predictor built in "
                            "the workspace (default <workspace>/predictor_build/predictor; run nn-meter build first)",
                            folder.string()));
  settings.backend = load_predictor_folder(folder).meta().info.backend;
  Builder builder(std::move(workspace), registry, std::move(settings));
  return builder.leave_family_out(folder);
}

Json GeneralizationReport::to_json() const {
  Json models_json = Json::array();
  for (const auto& m : models) {
    Json j = {{"model", m.name}, {"family", m.family}};
    j["predicted_ms"] = m.predicted_ms ? Json(*m.predicted_ms) : Json(nullptr);
    j["measured_ms"] = m.measured_ms ? Json(*m.measured_ms) : Json(nullptr);
    const auto e = m.relative_error();
    j["error"] = e ? Json(*e) : Json(nullptr);
    if (!m.error.empty()) j["failure"] = m.error;
    models_json.push_back(std::move(j));
  }
  Json families_json = Json::array();
  for (const auto& f : families)
    families_json.push_back({{"family", f.family}, {"networks", f.networks}, {"samples_removed", f.samples_removed},
                             {"samples_kept", f.samples_kept}});
  Json by = Json::object();
  for (const auto& [family, s] : by_family) by[family] = s.to_json();
  return {{"method", "each family held out: its layers left the kernel samples, its networks the composition term"},
          {"interval", interval ? interval->to_json() : Json(nullptr)},
          {"summary", summary.to_json()},
          {"in_sample", in_sample.to_json()},
          {"by_family", std::move(by)},
          {"families", std::move(families_json)},
          {"models", std::move(models_json)}};
}

std::string GeneralizationReport::line() const {
  const RepeatAgreement& c = summary.repeatability;
  return fmt::format("each family held out with its layers ({} families, {} networks): ±10 % {}, ±5 % {}, RMSPE {:.1f} %, "
                     "Kendall τ {}; the same networks in sample ±10 % {}; ceiling ±10 % {}, τ {}; {}",
                     families.size(), summary.models, percent(summary.within10), percent(summary.within5), summary.rmspe,
                     tau_text(summary.kendall_tau), percent(in_sample.within10),
                     c.samples > 0 ? percent(c.within10) : std::string("-"), tau_text(c.kendall_tau),
                     interval ? fmt::format("predictions come with a 90 % interval of x{:.3f} to x{:.3f}", interval->low,
                                            interval->high)
                              : fmt::format("too few networks scored for an interval on predictions (fewer than {})",
                                            PredictionInterval::kMinNetworks));
}

std::string GeneralizationReport::to_table() const {
  std::string out = fmt::format("{:<16} {:>8} {:>8} {:>8} {:>8} {:>9}  {}\n", "family", "networks", "±10 %", "±5 %",
                                "RMSPE", "mean", "kernel samples held out");
  for (const auto& f : families) {
    const auto s = by_family.find(f.family);
    if (s == by_family.end()) continue;
    std::string removed;
    for (const auto& [kernel, n] : f.samples_removed)
      removed += fmt::format("{}{} {}", removed.empty() ? "" : ", ", kernel, n);
    out += fmt::format("{:<16} {:>8} {:>8} {:>8} {:>7.1f}% {:>+8.1f}%  {}\n", f.family, s->second.models,
                       percent(s->second.within10), percent(s->second.within5), s->second.rmspe,
                       100 * s->second.mean_error, removed.empty() ? "none" : removed);
  }
  for (const auto& m : models) {
    const auto e = m.relative_error();
    out += fmt::format("  {:<40} {:<14} {}\n", m.name, m.family,
                       e ? fmt::format("{:+.1f}%", 100 * *e) : (m.error.empty() ? std::string("not scored") : m.error));
  }
  return out + line() + "\n";
}

}  // namespace nnmeter
