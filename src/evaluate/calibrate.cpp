// `nn-meter calibrate`: the composition term of a predictor, fitted on networks measured by the repeat
// protocol. The measuring is evaluate's (same journal, resume, shuffled order); this adds the fit, an
// estimate of how the term does on families it was not fitted on, and the atomic write of composition.json.
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <set>

#include "common/io.h"
#include "nnmeter/evaluate.h"

namespace nnmeter {

namespace {

// Kernel sets the term may leave unscaled, each tried against scaling every kernel. A batch-1 fully connected
// layer streams weights larger than the caches alone as in a network (prediction/composition.cpp).
const std::vector<std::set<std::string>> kUnscaledForms = {{}, {"fc"}};

bool usable(const ModelEvaluation& m) {
  return m.measured_ms && m.kernels_ms && m.footprint_mb && *m.measured_ms > 0 && *m.kernels_ms > 0 && *m.footprint_mb > 0;
}

// The term for one set of unscaled kernels, and how it does on each family when fitted on the others.
struct FormFit {
  CompositionModel model;
  std::optional<AccuracySummary> held_out_families;
};

FormFit fit_form(const std::vector<ModelEvaluation>& models, const std::set<std::string>& families,
                 const std::set<std::string>& unscaled, RepeatStatistic statistic) {
  const auto points = [&](const std::string& without_family) {
    std::vector<CompositionPoint> out;
    for (const auto& m : models)
      if (usable(m) && m.family != without_family)
        out.push_back({*m.kernels_ms, *m.measured_ms, *m.footprint_mb, m.kernels_ms_of(unscaled), m.name});
    return out;
  };
  FormFit f{fit_composition(points(""), unscaled), std::nullopt};
  if (families.size() >= 3) {
    std::map<std::string, CompositionModel> without;  // family → term fitted on all other families
    for (const auto& family : families) without.emplace(family, fit_composition(points(family), unscaled));
    f.held_out_families = summarize_predictions(models, statistic, [&](const ModelEvaluation& m) -> std::optional<double> {
      if (!usable(m)) return std::nullopt;
      return m.predicted_with(without.at(m.family));
    });
  }
  return f;
}

}  // namespace

CompositionFit fit_composition_forms(const std::vector<ModelEvaluation>& models, const EvaluateReport& measured,
                                     const std::string& see) {
  std::set<std::string> families;
  size_t usable_models = 0;
  for (const auto& m : models)
    if (usable(m)) {
      ++usable_models;
      families.insert(m.family);
    }
  if (usable_models == 0)
    throw Error(fmt::format("none of the {} models could be both predicted and measured, nothing to calibrate on: see {}",
                            models.size(), see));
  // Every form is fitted; the one that predicts families it was not fitted on best is kept. Without three
  // families there is no such evidence, and every kernel is scaled.
  const RepeatStatistic statistic = measured.protocol.statistic;
  std::vector<FormFit> fits;
  Json forms = Json::array();
  for (const auto& unscaled : kUnscaledForms) {
    const bool present = std::any_of(models.begin(), models.end(),
                                     [&](const ModelEvaluation& m) { return usable(m) && m.kernels_ms_of(unscaled) > 0; });
    if (!unscaled.empty() && !present) continue;  // the networks have none of these kernels: nothing to tell apart
    Json form = {{"unscaled_kernels", unscaled}};
    try {
      fits.push_back(fit_form(models, families, unscaled, statistic));
    } catch (const Error& error) {
      if (unscaled.empty()) throw;
      form["not_fitted"] = error.what();
      forms.push_back(std::move(form));
      continue;
    }
    const FormFit& f = fits.back();
    form["c0"] = f.model.c0;
    form["c1"] = f.model.c1;
    form["held_out_families"] = f.held_out_families ? f.held_out_families->to_json() : Json(nullptr);
    forms.push_back(std::move(form));
  }
  const FormFit* best = &fits.front();
  for (const auto& f : fits)
    if (f.held_out_families && best->held_out_families && f.held_out_families->rmspe < best->held_out_families->rmspe) best = &f;
  CompositionFit r;
  r.composition = best->model;
  r.held_out_families = best->held_out_families;
  // Caches move a network by percents, not by half: a larger factor says the kernel predictors are off.
  for (double f : {r.composition.footprint_min_mb, r.composition.footprint_max_mb})
    if (std::abs(std::log(r.composition.factor(f))) > std::log(1.5)) {
      spdlog::warn("the composition scales predictions by {:.2f} at {:.3g} MB: far from a cache effect, the kernel "
                   "predictors do not describe this backend as measured now (another device or backend config?); "
                   "consider rebuilding the predictor",
                   r.composition.factor(f), f);
      break;
    }
  // A term outside what composition.json accepts is an error here, before anything is written.
  CompositionModel::from_json(r.composition.to_json(), "the fitted composition");

  r.before = summarize_predictions(models, statistic, [](const ModelEvaluation& m) { return m.kernels_ms; });
  r.after = summarize_predictions(models, statistic, [&](const ModelEvaluation& m) { return m.predicted_with(r.composition); });

  r.composition.calibration = {
      {"fit", best->model.calibration.at("fit")},
      {"models", usable_models},
      {"families", families.size()},
      {"backend", measured.backend},
      {"backend_config", measured.backend_config},
      {"protocol", {{"repeats", measured.protocol.repeats}, {"statistic", to_string(statistic)}}},
      {"fitted_at", fmt::format("{:%FT%TZ}", fmt::gmtime(std::time(nullptr)))},
      {"kernel_sum", r.before.to_json()},
      {"in_sample", r.after.to_json()},
  };
  if (r.held_out_families) r.composition.calibration["held_out_families"] = r.held_out_families->to_json();
  r.composition.calibration["forms"] = std::move(forms);
  return r;
}

CalibrationReport calibrate(const Registry& registry, const EvaluateSettings& settings, bool write) {
  CalibrationReport r;
  r.evaluation = evaluate(registry, settings);
  static_cast<CompositionFit&>(r) =
      fit_composition_forms(r.evaluation.models, r.evaluation, (settings.work_dir / "results.csv").string());
  if (write) {
    const fs::path folder = fs::is_directory(settings.predictor)
                                ? fs::path(settings.predictor)
                                : LatencyPredictor::load(registry, settings.predictor, settings.predictor_version)
                                      .kernel_predictors()
                                      .folder();
    r.file = folder / kCompositionFile;
    io::save_json_file(r.file, r.composition.to_json());
  }
  return r;
}

Json CalibrationReport::to_json() const {
  Json out = {{"composition", composition.to_json()},
              {"kernel_sum", before.to_json()},
              {"in_sample", after.to_json()},
              {"evaluation", evaluation.to_json()}};
  if (held_out_families) out["held_out_families"] = held_out_families->to_json();
  out["file"] = file.empty() ? Json(nullptr) : Json(file.string());
  return out;
}

std::string CalibrationReport::to_table() const {
  std::string out = fmt::format("{:<34} {:>12} {:>10} {:>10} {:>9} {:>12} {:>11}\n", "model", "measured(ms)", "Σkernels",
                                "footprint", "factor", "error before", "error after");
  for (const auto& m : evaluation.models) {
    if (!usable(m)) {
      out += fmt::format("{:<34} {}\n", m.name, m.error.empty() ? "not scored" : m.error);
      continue;
    }
    out += fmt::format("{:<34} {:>12.4f} {:>10.4f} {:>8.1f}MB {:>9.3f} {:>+11.1f}% {:>+10.1f}%\n", m.name, *m.measured_ms,
                       *m.kernels_ms, *m.footprint_mb, composition.factor(*m.footprint_mb),
                       100 * (*m.kernels_ms / *m.measured_ms - 1), 100 * (*m.predicted_with(composition) / *m.measured_ms - 1));
  }
  const auto line = [](const AccuracySummary& s) {
    return fmt::format("RMSPE {:.1f}%, within ±5% {:.1f}%, within ±10% {:.1f}% (mean error {:+.1f}%)", s.rmspe,
                       100 * s.within5, 100 * s.within10, 100 * s.mean_error);
  };
  out += fmt::format("\ncomposition: {} (c0 {:.4f}, c1 {:.4f}), fitted on {} models by {}\n", composition.describe(),
                     composition.c0, composition.c1, before.models, composition.describe_fit());
  out += "sum of kernels:            " + line(before) + "\n";
  out += "with the term (in sample): " + line(after) + "\n";
  if (held_out_families) out += "each family held out:      " + line(*held_out_families) + "\n";
  for (const auto& form : composition.calibration.value("forms", Json::array())) {
    const auto unscaled = form.value("unscaled_kernels", std::set<std::string>{});
    if (unscaled == composition.unscaled_kernels) continue;
    const std::string name = unscaled.empty() ? "every kernel scaled" : fmt::format("{} unscaled", fmt::join(unscaled, ", "));
    const Json held = form.value("held_out_families", Json());
    if (held.is_object())
      out += fmt::format("not kept, {}: each family held out RMSPE {:.1f}%, within ±5% {:.1f}%, within ±10% {:.1f}%\n", name,
                         held.value("rmspe", 0.0), 100 * held.value("within5", 0.0), 100 * held.value("within10", 0.0));
    else
      out += fmt::format("not kept, {}: {}\n", name, form.value("not_fitted", std::string("no families held out")));
  }
  out += fmt::format("measurement repeatability (two halves of {} repeats): within ±5% {:.1f}%, within ±10% {:.1f}%\n",
                     evaluation.protocol.repeats, 100 * before.repeatability.within5, 100 * before.repeatability.within10);
  out += file.empty() ? std::string("dry run: composition.json not written\n")
                      : fmt::format("written to {}; judge it with nn-meter evaluate on other networks\n", file.string());
  return out;
}

}  // namespace nnmeter
