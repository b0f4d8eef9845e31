#include "nnmeter/evaluate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "common/accuracy.h"
#include "common/hash.h"
#include "common/io.h"
#include "common/text.h"
#include "nnmeter/backend.h"
#include "nnmeter/kernel.h"
#include "nnmeter/networks.h"
#include "nnmeter/prediction.h"
#include "nnmeter/profiling.h"
#include "nnmeter/registry.h"

namespace nnmeter {

namespace {

std::vector<fs::path> expand_models(const std::vector<fs::path>& given, const std::string& flag) {
  std::vector<fs::path> out;
  for (const auto& p : given) {
    if (fs::is_directory(p)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file() && e.path().extension() == ".onnx") found.push_back(e.path());
      if (found.empty()) throw Error(flag + " " + p.string() + " holds no .onnx files");
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(p)) {
      out.push_back(p);
    } else {
      throw Error(flag + " " + p.string() + " does not exist (give ONNX files or folders of them)");
    }
  }
  return out;
}

LatencyPredictor load_predictor(const Registry& registry, const EvaluateSettings& s) {
  if (fs::is_directory(s.predictor)) return LatencyPredictor::from_folder(s.predictor, registry);
  return LatencyPredictor::load(registry, s.predictor, s.predictor_version);
}

// The builder's model of one kernel config, written once per config into the work dir.
fs::path kernel_model(const Registry& registry, const fs::path& dir, const KernelEvaluation& k,
                      std::map<std::string, KernelSuite>& suites) {
  const fs::path file = dir / (k.id + ".onnx");
  if (fs::exists(file)) return file;
  auto it = suites.find(k.kernel);
  if (it == suites.end()) it = suites.emplace(k.kernel, find_kernel(registry, k.kernel).create(Json::object())).first;
  fs::create_directories(dir);
  io::write_file_atomic(file, it->second.kernel->build_onnx(k.config, 1));
  return file;
}

double rel(double predicted, double measured) { return predicted / measured - 1; }

}  // namespace

std::optional<double> KernelEvaluation::relative_error() const {
  if (!measured_ms || !(*measured_ms > 0)) return std::nullopt;
  return rel(predicted_ms, *measured_ms);
}

std::optional<double> ModelEvaluation::composition_error() const {
  if (!split || !measured_ms || !(*measured_ms > 0) || !(split->measured_ms > 0)) return std::nullopt;
  return rel(split->measured_ms, *measured_ms);
}

Json KernelTypeSummary::to_json() const {
  return {{"configs", configs},   {"measured", measured},         {"within10", within10},
          {"rmspe", rmspe},       {"predicted_ms", predicted_ms}, {"measured_ms", measured_ms}};
}

void ModelEvaluation::take_prediction(const ModelPrediction& p) {
  predicted_ms = p.latency_ms;
  kernels_ms = p.kernels_ms;
  footprint_mb = p.footprint_mb;
  stand_ins = p.stand_ins();
  uncovered_ops = p.uncovered.size();
  interval = p.interval;
  KernelSums sums = p.kernel_sums();
  kernels_ms_by_type = std::move(sums.by_predictor_kernel);
  kernels_ms_by_kernel = std::move(sums.by_kernel);
  kernel_count_by_type.clear();
  for (const KernelPrediction& k : p.kernels)
    if (!k.predictor_kernel.empty()) kernel_count_by_type[k.predictor_kernel] += static_cast<double>(k.groups);
}

double ModelEvaluation::kernels_ms_of(const std::set<std::string>& predictor_kernels) const {
  double ms = 0;
  for (const auto& k : predictor_kernels)
    if (const auto it = kernels_ms_by_type.find(k); it != kernels_ms_by_type.end()) ms += it->second;
  return ms;
}

double ModelEvaluation::kernel_count_without(const std::set<std::string>& predictor_kernels) const {
  double n = 0;
  for (const auto& [kernel, count] : kernel_count_by_type)
    if (!predictor_kernels.count(kernel)) n += count;
  return n;
}

std::optional<double> ModelEvaluation::predicted_with(const CompositionModel& composition) const {
  if (!kernels_ms || !footprint_mb) return std::nullopt;
  return composition.predict(*kernels_ms, kernels_ms_of(composition.unscaled_kernels), *footprint_mb,
                             kernel_count_without(composition.unscaled_kernels), kernel_sums());
}

std::optional<double> ModelEvaluation::relative_error() const {
  if (!predicted_ms || !measured_ms || !(*measured_ms > 0)) return std::nullopt;
  return *predicted_ms / *measured_ms - 1;
}

Json AccuracySummary::to_json() const {
  const auto optional = [](const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); };
  return {{"models", models},
          {"rmspe", rmspe},
          {"within5", within5},
          {"within10", within10},
          {"mean_error", mean_error},
          {"kendall_tau", optional(kendall_tau)},
          {"spearman", optional(spearman)},
          {"interval_coverage", optional(interval_coverage)},
          {"interval_models", interval_models},
          {"repeatability", repeatability.to_json()}};
}

AccuracySummary summarize(const std::vector<const ModelEvaluation*>& models, RepeatStatistic statistic) {
  AccuracySummary s;
  double sq = 0, sum = 0;
  size_t inside = 0;
  std::vector<double> errors, predicted, measured;
  std::vector<std::vector<double>> repeats;
  for (const ModelEvaluation* m : models) {
    const auto e = m->relative_error();
    if (!e) continue;
    ++s.models;
    sq += *e * *e;
    sum += *e;
    errors.push_back(*e);
    predicted.push_back(*m->predicted_ms);
    measured.push_back(*m->measured_ms);
    repeats.push_back(m->repeats_ms);
    if (m->interval) {
      ++s.interval_models;
      inside += *m->predicted_ms * m->interval->low <= *m->measured_ms && *m->measured_ms <= *m->predicted_ms * m->interval->high;
    }
  }
  if (s.models == 0) return s;
  if (s.interval_models > 0) s.interval_coverage = static_cast<double>(inside) / static_cast<double>(s.interval_models);
  const auto n = static_cast<double>(s.models);
  s.rmspe = 100 * std::sqrt(sq / n);
  s.mean_error = sum / n;
  s.within5 = accuracy::share_within(errors, accuracy::kWithin5);
  s.within10 = accuracy::share_within(errors, accuracy::kWithin10);
  s.kendall_tau = accuracy::kendall_tau(predicted, measured);
  s.spearman = accuracy::spearman(predicted, measured);
  s.repeatability = split_half_agreement(repeats, statistic);
  return s;
}

AccuracySummary summarize_predictions(const std::vector<ModelEvaluation>& models, RepeatStatistic statistic,
                                      const std::function<std::optional<double>(const ModelEvaluation&)>& predict) {
  std::vector<ModelEvaluation> scored;
  for (const ModelEvaluation& m : models) {
    if (!m.measured_ms) continue;
    ModelEvaluation c;
    c.measured_ms = m.measured_ms;
    c.repeats_ms = m.repeats_ms;
    c.predicted_ms = predict(m);
    if (c.predicted_ms) scored.push_back(std::move(c));
  }
  std::vector<const ModelEvaluation*> pointers;
  for (const auto& c : scored) pointers.push_back(&c);
  return summarize(pointers, statistic);
}

namespace {

void split_by_kernels(EvaluateReport& report) {
  for (ModelEvaluation& m : report.models) {
    if (m.kernel_uses.empty()) continue;
    KernelSplit split;
    bool complete = true;
    for (const KernelUse& use : m.kernel_uses) {
      const KernelEvaluation& k = report.kernels.at(use.id);
      if (!k.measured_ms) {
        complete = false;
        continue;
      }
      // The config measured alone is the square a non-square conv was predicted as: scaled as its prediction was.
      const double measured = *k.measured_ms * static_cast<double>(use.groups) * use.work;
      KernelTypeSummary& t = report.by_kernel_type[k.kernel];
      t.predicted_ms += use.predicted_ms;
      t.measured_ms += measured;
      split.predicted_ms += use.predicted_ms;
      split.measured_ms += measured;
    }
    if (complete && split.measured_ms > 0) m.split = split;
  }
  std::map<std::string, std::vector<double>> errors_by_type;
  for (const auto& [kid, k] : report.kernels) {
    KernelTypeSummary& t = report.by_kernel_type[k.kernel];
    ++t.configs;
    const auto e = k.relative_error();
    if (!e) continue;
    ++t.measured;
    errors_by_type[k.kernel].push_back(*e);
  }
  for (auto& [name, t] : report.by_kernel_type) {
    if (t.measured == 0) continue;
    const std::vector<double>& errors = errors_by_type[name];
    double sq = 0;
    for (double e : errors) sq += e * e;
    t.rmspe = 100 * std::sqrt(sq / static_cast<double>(t.measured));
    t.within10 = accuracy::share_within(errors, accuracy::kWithin10);
  }
}

// A kernel is measured as the predictor's samples were, unless told otherwise: the sum over a model's kernels
// averages their independent errors, so they need fewer repeats than the model they are compared with.
int kernel_repeats(const EvaluateSettings& settings, const PredictorInfo& built_for, const BackendInfo& backend,
                   const MeasurementProtocol& models) {
  if (const auto given = settings.kernel_repeats) {
    if (!settings.kernels)
      throw Error("--kernel-repeats is for the kernels measured alone: give --kernels too, or drop it");
    if (*given < 1 || *given > MeasurementProtocol::kMaxRepeats)
      throw Error(fmt::format("--kernel-repeats must be 1 to {}, got {}", MeasurementProtocol::kMaxRepeats, *given));
    return *given;
  }
  // A predictor that records no REPEATS (built before the protocol, or written by hand) says nothing about it.
  const Json& built = built_for.backend_config;
  if (built_for.backend != backend.name || !built.is_object() || !built.contains("REPEATS")) return models.repeats;
  return MeasurementProtocol::from_config(built, "the predictor's backend config").repeats;
}

}  // namespace

EvaluateReport evaluate(const Registry& registry, const EvaluateSettings& settings) {
  std::vector<fs::path> files = expand_models(settings.onnx, "--onnx");
  if (files.empty()) throw Error("no models to evaluate: give --onnx FILE_OR_DIR");
  // The calibration networks join the same list (one shuffled order); they are split off after measuring.
  const size_t evaluated = files.size();
  {
    const auto calibration = expand_models(settings.calibrate_on, "--calibrate-on");
    std::set<std::string> stems;
    for (const auto& f : files) stems.insert(f.stem().string());
    for (const auto& f : calibration)
      if (stems.count(f.stem().string()))
        throw Error(fmt::format("{} is both evaluated (--onnx) and calibrated on (--calibrate-on): a term is judged on "
                                "networks it was not fitted on", f.stem().string()));
    files.insert(files.end(), calibration.begin(), calibration.end());
  }
  const LatencyPredictor predictor = load_predictor(registry, settings);
  const PredictorInfo& built_for = predictor.kernel_predictors().meta().info;

  EvaluateReport report;
  report.predictor = predictor.name();
  report.measurement_quality = predictor.kernel_predictors().meta().measurement_quality;
  report.backend = settings.backend.empty() ? built_for.backend : settings.backend;
  if (report.backend.empty()) throw Error("the predictor names no backend: give --backend");
  const BackendInfo backend = find_backend(registry, report.backend);
  // Measured as the predictor's training data was (backend settings and protocol), unless told otherwise.
  Json config = report.backend == built_for.backend && built_for.backend_config.is_object() ? built_for.backend_config
                                                                                          : Json::object();
  for (const auto& [key, value] : settings.backend_config.items()) config[key] = value;
  report.backend_config = resolve_backend_config(backend.params, config, "evaluate's backend config");
  report.protocol = MeasurementProtocol::from_config(report.backend_config);
  report.kernel_repeats = kernel_repeats(settings, built_for, backend, report.protocol);

  // Predict first: it takes milliseconds, and a model that cannot be predicted is not worth measuring.
  std::vector<ProfileJob> jobs;
  const uint64_t config_hash = fnv1a(backend_only(report.backend_config).dump(), fnv1a(report.backend));
  std::vector<std::string> job_ids;
  for (size_t i = 0; i < files.size(); ++i) {
    const fs::path& file = files[i];
    ModelEvaluation m;
    m.onnx = file;
    m.name = utf8_replaced(file.stem().string());  // a file name is any bytes; the journal and results are JSON
    m.family = network_family(m.name);
    try {
      // The worker's requests are JSON too: such a path cannot be sent to it.
      if (!valid_utf8(file.string()))
        throw Error(fmt::format("its path {} is not UTF-8 text: rename it", quoted(file.string())));
      const ModelPrediction p = predictor.predict_file(file);
      m.take_prediction(p);
      if (settings.kernels && i < evaluated)
        for (const KernelPrediction& k : p.kernels) {
          if (k.predictor_kernel.empty()) continue;
          const std::string kid = fmt::format("{}@{:016x}", k.predictor_kernel, fnv1a(k.config.dump(), config_hash));
          KernelEvaluation& ke = report.kernels[kid];
          if (ke.id.empty()) {
            ke.id = kid;
            ke.kernel = k.predictor_kernel;
            ke.config = k.config;
            ke.predicted_ms = k.latency_ms / (static_cast<double>(std::max<int64_t>(1, k.groups)) * k.work);
          }
          ++ke.uses;
          m.kernel_uses.push_back({kid, k.groups, k.work, k.latency_ms});
        }
    } catch (const std::exception& e) {
      m.error = utf8_replaced(fmt::format("prediction failed: {}", e.what()));
      spdlog::warn("{}: {}", m.name, m.error);
    }
    // The measurement is reused only for the very same model bytes on the same backend configuration.
    const std::string id = fmt::format("{}@{:016x}", m.name, fnv1a(io::read_file(file), config_hash));
    job_ids.push_back(id);
    if (m.predicted_ms) jobs.push_back(ProfileJob{id, file, {}});
    report.models.push_back(std::move(m));
  }

  // Kernels go into the same shuffled order as the models: drift must not line up with what is measured.
  std::map<std::string, KernelSuite> suites;
  for (auto& [kid, k] : report.kernels) {
    try {
      jobs.push_back(ProfileJob{kid, kernel_model(registry, settings.work_dir / "kernels", k, suites), {},
                                report.kernel_repeats});
    } catch (const std::exception& e) {
      k.error = fmt::format("no model for this kernel: {}", e.what());
      spdlog::warn("{} {}: {}", k.kernel, k.config.dump(), k.error);
    }
  }

  ProfilerOptions options =
      ProfilerOptions::of(report.backend, report.backend_config, registry, settings.work_dir / "converted", "evaluate")
          .run_as(settings);
  options.seed = settings.seed;
  const auto outcomes = jobs.empty() ? std::map<std::string, ProfileOutcome>{}
                                     : profile_models(jobs, options, settings.work_dir / "journal.jsonl",
                                                      settings.work_dir / "profile_error.log");
  for (size_t i = 0; i < report.models.size(); ++i) {
    ModelEvaluation& m = report.models[i];
    const auto it = outcomes.find(job_ids[i]);
    if (it == outcomes.end()) continue;
    const ProfileOutcome& o = it->second;
    if (!o.ok) {
      m.error = fmt::format("measurement failed: {}", o.error);
      continue;
    }
    m.measured_ms = o.latency.value_ms;
    m.repeats_ms = o.repeats_ms;
    m.repeat_times = o.repeat_times;
    const RepeatAgreement one = split_half_agreement({o.repeats_ms}, report.protocol.statistic);
    if (one.samples > 0) m.split_half_deviation = one.median_deviation;
  }

  for (auto& [kid, k] : report.kernels) {
    const auto it = outcomes.find(kid);
    if (it == outcomes.end()) continue;
    if (!it->second.ok) {
      k.error = fmt::format("measurement failed: {}", it->second.error);
      continue;
    }
    k.measured_ms = it->second.latency.value_ms;
    k.repeats_ms = it->second.repeats_ms;
  }
  report.calibration_models.assign(std::make_move_iterator(report.models.begin() + static_cast<std::ptrdiff_t>(evaluated)),
                                   std::make_move_iterator(report.models.end()));
  report.models.resize(evaluated);
  split_by_kernels(report);

  report.composition = predictor.composition();
  if (!report.calibration_models.empty()) {
    const fs::path errors = settings.work_dir / "profile_error.log";
    try {
      report.calibration = fit_composition_forms(report.calibration_models, report, "the warnings above and " + errors.string());
    } catch (const Error& e) {
      throw Error(fmt::format("--calibrate-on: {}", e.what()));
    }
    if (report.composition)
      report.own_composition_summary = summarize_predictions(report.models, report.protocol.statistic,
                                                             [](const ModelEvaluation& m) { return m.predicted_ms; });
    report.composition = report.calibration->composition;
    for (auto& m : report.models)
      if (m.predicted_ms) m.predicted_ms = m.predicted_with(*report.composition);
    report.composition_file = settings.work_dir / kCompositionFile;
    io::save_json_file(report.composition_file, report.composition->to_json());
  }

  std::vector<const ModelEvaluation*> all;
  std::map<std::string, std::vector<const ModelEvaluation*>> families;
  for (const auto& m : report.models) {
    all.push_back(&m);
    families[m.family].push_back(&m);
  }
  report.summary = summarize(all, report.protocol.statistic);
  for (const auto& [family, members] : families) report.by_family[family] = summarize(members, report.protocol.statistic);
  if (report.composition)
    report.kernel_sum_summary = summarize_predictions(report.models, report.protocol.statistic,
                                                      [](const ModelEvaluation& m) { return m.kernels_ms; });

  io::save_json_file(settings.work_dir / "results.json", report.to_json());
  io::write_file_atomic(settings.work_dir / "results.csv", report.to_csv());
  if (settings.kernels) io::write_file_atomic(settings.work_dir / "kernels.csv", report.kernels_csv());
  return report;
}

Json EvaluateReport::to_json() const {
  const auto list = [](const std::vector<ModelEvaluation>& ms) {
    Json models_json = Json::array();
    for (const auto& m : ms) {
      Json j = {{"model", m.name}, {"family", m.family}, {"onnx", utf8_replaced(m.onnx.string())}};
      j["predicted_ms"] = m.predicted_ms ? Json(*m.predicted_ms) : Json(nullptr);
      j["measured_ms"] = m.measured_ms ? Json(*m.measured_ms) : Json(nullptr);
      const auto e = m.relative_error();
      j["error"] = e ? Json(*e) : Json(nullptr);
      if (m.interval && m.predicted_ms)
        j["interval_ms"] = {*m.predicted_ms * m.interval->low, *m.predicted_ms * m.interval->high};
      j["repeats_ms"] = m.repeats_ms;
      j["repeat_times"] = m.repeat_times;
      j["split_half_deviation"] = m.split_half_deviation ? Json(*m.split_half_deviation) : Json(nullptr);
      if (m.kernels_ms) j["kernels_ms"] = *m.kernels_ms;
      if (m.footprint_mb) j["footprint_mb"] = *m.footprint_mb;
      if (!m.kernels_ms_by_type.empty()) j["kernels_ms_by_type"] = m.kernels_ms_by_type;
      if (!m.kernels_ms_by_kernel.empty()) j["kernels_ms_by_kernel"] = m.kernels_ms_by_kernel;
      if (!m.kernel_count_by_type.empty()) j["kernel_count_by_type"] = m.kernel_count_by_type;
      if (!m.stand_ins.empty()) j["stand_ins"] = m.stand_ins;
      if (m.uncovered_ops > 0) j["uncovered_ops"] = m.uncovered_ops;
      if (!m.error.empty()) j["failure"] = m.error;
      if (m.split) {
        j["kernels_predicted_ms"] = m.split->predicted_ms;
        j["kernels_measured_ms"] = m.split->measured_ms;
        j["predictor_error"] = m.split->predictor_error();
        const auto c = m.composition_error();
        j["composition_error"] = c ? Json(*c) : Json(nullptr);
      }
      if (!m.kernel_uses.empty()) {
        Json uses = Json::array();
        for (const KernelUse& use : m.kernel_uses) {
          Json u = {{"id", use.id}, {"groups", use.groups}, {"predicted_ms", use.predicted_ms}};
          if (use.work != 1) u["work"] = use.work;
          uses.push_back(std::move(u));
        }
        j["kernel_uses"] = std::move(uses);
      }
      models_json.push_back(std::move(j));
    }
    return models_json;
  };
  Json families = Json::object();
  for (const auto& [family, s] : by_family) families[family] = s.to_json();
  Json out = {{"predictor", predictor},
              {"backend", backend},
              {"backend_config", backend_config},
              {"protocol", {{"repeats", protocol.repeats}, {"statistic", to_string(protocol.statistic)}}},
              {"summary", summary.to_json()},
              {"by_family", families},
              {"models", list(models)}};
  if (!measurement_quality.is_null()) out["measurement_quality"] = measurement_quality;
  if (composition) out["composition"] = composition->to_json();
  if (calibration) {
    out["calibration_models"] = list(calibration_models);
    out["composition_file"] = composition_file.string();
  }
  if (kernel_sum_summary) out["kernel_sum_summary"] = kernel_sum_summary->to_json();
  if (own_composition_summary) out["own_composition_summary"] = own_composition_summary->to_json();
  if (!kernels.empty()) {
    Json list = Json::array(), types = Json::object();
    for (const auto& [kid, k] : kernels) {
      Json j = {{"id", kid}, {"kernel", k.kernel}, {"config", k.config}, {"uses", k.uses}, {"predicted_ms", k.predicted_ms}};
      j["measured_ms"] = k.measured_ms ? Json(*k.measured_ms) : Json(nullptr);
      const auto e = k.relative_error();
      j["error"] = e ? Json(*e) : Json(nullptr);
      j["repeats_ms"] = k.repeats_ms;
      if (!k.error.empty()) j["failure"] = k.error;
      list.push_back(std::move(j));
    }
    for (const auto& [name, t] : by_kernel_type) types[name] = t.to_json();
    out["kernels"] = std::move(list);
    out["kernel_repeats"] = kernel_repeats;
    out["by_kernel_type"] = std::move(types);
  }
  return out;
}

std::string EvaluateReport::kernels_csv() const {
  std::string out = "kernel,config,uses,predicted_ms,measured_ms,error_pct,repeats_ms,failure\n";
  for (const auto& [kid, k] : kernels) {
    std::string repeats, config = k.config.dump(), failure = k.error;
    for (double r : k.repeats_ms) repeats += (repeats.empty() ? "" : ";") + fmt::format("{:.6g}", r);
    std::replace(config.begin(), config.end(), '"', '\'');
    std::replace(failure.begin(), failure.end(), '"', '\'');
    const auto e = k.relative_error();
    out += fmt::format("{},\"{}\",{},{:.6g},{},{},{},\"{}\"\n", k.kernel, config, k.uses, k.predicted_ms,
                       k.measured_ms ? fmt::format("{:.6g}", *k.measured_ms) : "", e ? fmt::format("{:.2f}", 100 * *e) : "",
                       repeats, failure);
  }
  return out;
}

std::string EvaluateReport::to_csv() const {
  std::string out =
      "model,family,predicted_ms,measured_ms,error_pct,split_half_deviation_pct,kernels_ms,footprint_mb,repeats_ms,"
      "failure\n";
  const auto num = [](const std::optional<double>& v, double scale = 1) {
    return v ? fmt::format("{:.6g}", *v * scale) : std::string();
  };
  for (const auto& m : models) {
    std::string repeats;
    for (double r : m.repeats_ms) repeats += (repeats.empty() ? "" : ";") + fmt::format("{:.6g}", r);
    std::string failure = m.error;
    std::replace(failure.begin(), failure.end(), '"', '\'');
    out += fmt::format("{},{},{},{},{},{},{},{},{},\"{}\"\n", m.name, m.family, num(m.predicted_ms), num(m.measured_ms),
                       num(m.relative_error(), 100), num(m.split_half_deviation, 100), num(m.kernels_ms),
                       num(m.footprint_mb), repeats, failure);
  }
  return out;
}

namespace {

// How many models had kernels predicted by a stand-in regressor or ops left uncounted: a prediction error that
// no calibration fixes, said next to the score.
std::string coverage_line(const std::vector<ModelEvaluation>& models) {
  std::map<std::string, size_t> stand_ins;
  size_t with_stand_ins = 0, with_uncovered = 0, uncovered = 0;
  for (const auto& m : models) {
    with_stand_ins += !m.stand_ins.empty();
    with_uncovered += m.uncovered_ops > 0;
    uncovered += m.uncovered_ops;
    for (const auto& [what, n] : m.stand_ins) stand_ins[what] += n;
  }
  std::string out;
  if (with_stand_ins > 0) {
    std::vector<std::string> parts;
    for (const auto& [what, n] : stand_ins) parts.push_back(fmt::format("{} x{}", what, n));
    out += fmt::format("{} of {} models have kernels predicted by another kernel's regressor: {}\n", with_stand_ins,
                       models.size(), fmt::join(parts, ", "));
  }
  if (with_uncovered > 0)
    out += fmt::format("{} of {} models have ops no predictor counts ({} ops; nn-meter predict names them)\n", with_uncovered,
                       models.size(), uncovered);
  return out;
}

}  // namespace

std::string EvaluateReport::to_table() const {
  std::string out = fmt::format("{:<34} {:>12} {:>12} {:>8} {:>10}\n", "model", "measured(ms)", "predicted", "error",
                                "repeat dev");
  const auto pct = [](const std::optional<double>& v) { return v ? fmt::format("{:+.1f}%", 100 * *v) : std::string("-"); };
  for (const auto& m : models) {
    if (!m.error.empty()) {
      out += fmt::format("{:<34} {}\n", m.name, m.error);
      continue;
    }
    out += fmt::format("{:<34} {:>12.4f} {:>12.4f} {:>8} {:>10}\n", m.name, m.measured_ms.value_or(0),
                       m.predicted_ms.value_or(0), pct(m.relative_error()),
                       m.split_half_deviation ? fmt::format("{:.1f}%", 100 * *m.split_half_deviation) : "-");
  }
  const AccuracySummary& s = summary;
  out += fmt::format("\n{} of {} models scored: RMSPE {:.1f}%, within ±5% {:.1f}%, within ±10% {:.1f}% (mean error {:+.1f}%)\n",
                     s.models, models.size(), s.rmspe, 100 * s.within5, 100 * s.within10, 100 * s.mean_error);
  out += fmt::format("measurement repeatability (two halves of {} repeats, {} each): within ±5% {:.1f}%, within ±10% "
                     "{:.1f}% — the ceiling for the accuracy above\n",
                     protocol.repeats, to_string(protocol.statistic), 100 * s.repeatability.within5,
                     100 * s.repeatability.within10);
  if (s.kendall_tau)
    out += fmt::format("ranking: Kendall tau {:.3f}, Spearman {:.3f}; the two halves of the repeats rank them with tau {}\n",
                       *s.kendall_tau, s.spearman.value_or(0),
                       s.repeatability.kendall_tau ? fmt::format("{:.3f}", *s.repeatability.kendall_tau) : "-");
  // Per family: a NAS search ranks the candidates of one space, so each family's ranking is its own figure.
  if (by_family.size() >= 2) {
    out += "per family: models, within ±10%, within ±5%, Kendall tau (the two halves' tau)\n";
    const auto tau = [](const std::optional<double>& t) { return t ? fmt::format("{:.3f}", *t) : std::string("-"); };
    for (const auto& [family, f] : by_family)
      out += fmt::format("  {:<20} {:>3} {:>7.1f}% {:>7.1f}% {:>7} ({})\n", family, f.models, 100 * f.within10,
                         100 * f.within5, tau(f.kendall_tau), tau(f.repeatability.kendall_tau));
  }
  if (s.interval_coverage)
    out += fmt::format("the predictions' 90% interval holds the measured latency for {:.1f}% of the {} models that have one\n",
                       100 * *s.interval_coverage, s.interval_models);
  else
    out += "no 90% interval on the predictions: the predictor has no held-out errors (generalization.json; nn-meter "
           "evaluate --leave-family-out --workspace WS writes them)\n";
  out += coverage_line(models);
  if (measurement_quality.is_object() && measurement_quality.value("verdict", "") == "noisy")
    out += "the predictor was built on noisy measurements (measurement_quality in its predictor.json): its kernel "
           "predictors learned that noise, whatever the score above\n";
  if (calibration) {
    out += fmt::format("with the composition fitted on the {} networks of --calibrate-on, measured in the same order ({}; {})",
                       calibration->before.models, composition->describe(), composition->describe_fit());
    if (const auto& h = calibration->held_out_families)
      out += fmt::format("; on each of their families held out it scores RMSPE {:.1f}%, within ±5% {:.1f}%, within ±10% {:.1f}%",
                         h->rmspe, 100 * h->within5, 100 * h->within10);
    if (const auto& n = calibration->network_out)
      out += fmt::format("; its neighbours' correction on each network held out: within ±5% {:.1f}% against {:.1f}% for the "
                         "term alone", 100 * n->within5, 100 * calibration->network_out_term->within5);
    out += fmt::format("\nthe term is in {} (copy it into the predictor folder to keep it)\n", composition_file.string());
    if (const auto& o = own_composition_summary)
      out += fmt::format("with the predictor's own composition, fitted when it was built, as predict gives them: RMSPE {:.1f}%, "
                         "within ±5% {:.1f}%, within ±10% {:.1f}% (mean error {:+.1f}%); the difference is how the machine "
                         "moved since the build: nn-meter calibrate on networks measured now (e.g. the set calibration) fits the "
                         "term again; calibrate --refresh re-levels it from a few\n",
                         o->rmspe, 100 * o->within5, 100 * o->within10, 100 * o->mean_error);
  }
  if (composition && kernel_sum_summary)
    out += fmt::format("{} the plain sum of kernels scores RMSPE {:.1f}%, within ±5% {:.1f}%, within ±10% {:.1f}% (mean error {:+.1f}%)\n",
                       calibration ? std::string("without it,")
                                   : fmt::format("with the predictor's calibrated composition ({});", composition->describe()),
                       kernel_sum_summary->rmspe, 100 * kernel_sum_summary->within5, 100 * kernel_sum_summary->within10,
                       100 * kernel_sum_summary->mean_error);
  if (kernels.empty()) return out;

  out += fmt::format("\nWhere the error comes from (every kernel also measured alone, {} distinct, {} repeats each):\n",
                     kernels.size(), kernel_repeats);
  out += fmt::format("{:<34} {:>10} {:>10} {:>12}\n", "model", "prediction", "predictors", "composition");
  double predictor_sum = 0, composition_sum = 0;
  size_t split_models = 0;
  for (const auto& m : models) {
    const auto c = m.composition_error();
    if (!m.split || !c || !m.relative_error()) continue;
    ++split_models;
    predictor_sum += m.split->predictor_error();
    composition_sum += *c;
    out += fmt::format("{:<34} {:>10} {:>10} {:>12}\n", m.name, pct(m.relative_error()), pct(m.split->predictor_error()),
                       pct(c));
  }
  if (split_models > 0)
    // Both parts are of the plain sum of kernels; a composition term then multiplies it, so with one the
    // identity holds for the sum, not for the prediction.
    out += fmt::format("mean over {} models: kernel predictors {:+.1f}%, composition {:+.1f}% ({} = measured × (1 + "
                       "predictors) × (1 + composition){})\n",
                       split_models, 100 * predictor_sum / static_cast<double>(split_models),
                       100 * composition_sum / static_cast<double>(split_models),
                       composition ? "the plain sum of kernels" : "prediction",
                       composition ? "; the composition term multiplies it into the prediction" : "");
  out += fmt::format("\n{:<18} {:>8} {:>9} {:>9} {:>13} {:>12} {:>8}\n", "kernel", "configs", "acc10", "rmspe(%)",
                     "Σpredicted ms", "Σmeasured ms", "error");
  for (const auto& [name, t] : by_kernel_type)
    out += fmt::format("{:<18} {:>8} {:>9} {:>9.1f} {:>13.3f} {:>12.3f} {:>8}\n", name, t.configs,
                       t.measured ? fmt::format("{:.1f}%", 100 * t.within10) : "-", t.rmspe, t.predicted_ms, t.measured_ms,
                       t.measured_ms > 0 ? pct(t.predicted_ms / t.measured_ms - 1) : "-");
  return out;
}

}  // namespace nnmeter
