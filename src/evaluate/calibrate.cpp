// `nn-meter calibrate`: the composition term of a predictor, fitted on networks measured by the repeat
// protocol. The measuring is evaluate's (same journal, resume, shuffled order); this adds the fit, an
// estimate of how the term does on families it was not fitted on, and the atomic write of composition.json.
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <ctime>
#include <set>

#include "common/io.h"
#include "nnmeter/evaluate.h"

namespace nnmeter {

namespace {

std::optional<double> with(const CompositionModel& c, const ModelEvaluation& m) {
  if (!m.kernels_ms || !m.footprint_mb) return std::nullopt;
  return *m.kernels_ms * c.factor(*m.footprint_mb);
}

bool usable(const ModelEvaluation& m) {
  return m.measured_ms && m.kernels_ms && m.footprint_mb && *m.measured_ms > 0 && *m.kernels_ms > 0 && *m.footprint_mb > 0;
}

CompositionPoint point(const ModelEvaluation& m) { return {*m.kernels_ms, *m.measured_ms, *m.footprint_mb}; }

}  // namespace

CalibrationReport calibrate(const Registry& registry, const EvaluateSettings& settings, bool write) {
  CalibrationReport r;
  r.evaluation = evaluate(registry, settings);
  const EvaluateReport& e = r.evaluation;
  std::vector<CompositionPoint> points;
  std::set<std::string> families;
  for (const auto& m : e.models)
    if (usable(m)) {
      points.push_back(point(m));
      families.insert(m.family);
    }
  if (points.empty())
    throw Error(fmt::format("none of the {} models could be both predicted and measured, nothing to calibrate on: see {}",
                            e.models.size(), (settings.work_dir / "results.csv").string()));
  r.composition = fit_composition(points);
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

  const RepeatStatistic statistic = e.protocol.statistic;
  r.before = summarize_predictions(e.models, statistic, [](const ModelEvaluation& m) { return m.kernels_ms; });
  r.after = summarize_predictions(e.models, statistic, [&](const ModelEvaluation& m) { return with(r.composition, m); });
  if (families.size() >= 3) {
    std::map<std::string, CompositionModel> without;  // family → term fitted on all other families
    for (const auto& family : families) {
      std::vector<CompositionPoint> others;
      for (const auto& m : e.models)
        if (usable(m) && m.family != family) others.push_back(point(m));
      without.emplace(family, fit_composition(others));
    }
    r.held_out_families = summarize_predictions(e.models, statistic, [&](const ModelEvaluation& m) -> std::optional<double> {
      if (!usable(m)) return std::nullopt;
      return with(without.at(m.family), m);
    });
  }

  r.composition.calibration = {
      {"models", points.size()},
      {"families", families.size()},
      {"backend", e.backend},
      {"backend_config", e.backend_config},
      {"protocol", {{"repeats", e.protocol.repeats}, {"statistic", to_string(e.protocol.statistic)}}},
      {"fitted_at", fmt::format("{:%FT%TZ}", fmt::gmtime(std::time(nullptr)))},
      {"kernel_sum", r.before.to_json()},
      {"in_sample", r.after.to_json()},
  };
  if (r.held_out_families) r.composition.calibration["held_out_families"] = r.held_out_families->to_json();
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
    const double f = composition.factor(*m.footprint_mb);
    out += fmt::format("{:<34} {:>12.4f} {:>10.4f} {:>8.1f}MB {:>9.3f} {:>+11.1f}% {:>+10.1f}%\n", m.name, *m.measured_ms,
                       *m.kernels_ms, *m.footprint_mb, f, 100 * (*m.kernels_ms / *m.measured_ms - 1),
                       100 * (*m.kernels_ms * f / *m.measured_ms - 1));
  }
  const auto line = [](const AccuracySummary& s) {
    return fmt::format("RMSPE {:.1f}%, within ±5% {:.1f}%, within ±10% {:.1f}% (mean error {:+.1f}%)", s.rmspe,
                       100 * s.within5, 100 * s.within10, 100 * s.mean_error);
  };
  out += fmt::format("\ncomposition: {} (c0 {:.4f}, c1 {:.4f}), fitted on {} models\n", composition.describe(),
                     composition.c0, composition.c1, before.models);
  out += "sum of kernels:            " + line(before) + "\n";
  out += "with the term (in sample): " + line(after) + "\n";
  if (held_out_families) out += "each family held out:      " + line(*held_out_families) + "\n";
  out += fmt::format("measurement repeatability (two halves of {} repeats): within ±5% {:.1f}%, within ±10% {:.1f}%\n",
                     evaluation.protocol.repeats, 100 * before.repeatability.within5, 100 * before.repeatability.within10);
  out += file.empty() ? std::string("dry run: composition.json not written\n")
                      : fmt::format("written to {}; judge it with nn-meter evaluate on other networks\n", file.string());
  return out;
}

}  // namespace nnmeter
