#include "nnmeter/evaluate.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "common/hash.h"
#include "common/io.h"
#include "nnmeter/backend.h"
#include "nnmeter/prediction.h"
#include "nnmeter/profiling.h"

namespace nnmeter {

namespace {

std::vector<fs::path> expand_models(const std::vector<fs::path>& given) {
  std::vector<fs::path> out;
  for (const auto& p : given) {
    if (fs::is_directory(p)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file() && e.path().extension() == ".onnx") found.push_back(e.path());
      if (found.empty()) throw Error("--onnx " + p.string() + " holds no .onnx files");
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(p)) {
      out.push_back(p);
    } else {
      throw Error("--onnx " + p.string() + " does not exist (give ONNX files or folders of them)");
    }
  }
  if (out.empty()) throw Error("no models to evaluate: give --onnx FILE_OR_DIR");
  return out;
}

LatencyPredictor load_predictor(const Registry& registry, const EvaluateSettings& s) {
  if (fs::is_directory(s.predictor)) return LatencyPredictor::from_folder(s.predictor, registry);
  return LatencyPredictor::load(registry, s.predictor, s.predictor_version);
}

}  // namespace

std::string model_family(const std::string& stem) {
  static const std::regex suffix(R"(^(.+?)(_r\d+)?(_w[0-9.]+)?$)");
  std::smatch m;
  if (std::regex_match(stem, m, suffix) && m[1].length() > 0) return m[1].str();
  return stem;
}

std::optional<double> ModelEvaluation::relative_error() const {
  if (!predicted_ms || !measured_ms || !(*measured_ms > 0)) return std::nullopt;
  return *predicted_ms / *measured_ms - 1;
}

Json AccuracySummary::to_json() const {
  return {{"models", models},         {"rmspe", rmspe}, {"within5", within5}, {"within10", within10},
          {"mean_error", mean_error}, {"repeatability", repeatability.to_json()}};
}

AccuracySummary summarize(const std::vector<const ModelEvaluation*>& models, RepeatStatistic statistic) {
  AccuracySummary s;
  double sq = 0, sum = 0;
  size_t in5 = 0, in10 = 0;
  std::vector<std::vector<double>> repeats;
  for (const ModelEvaluation* m : models) {
    const auto e = m->relative_error();
    if (!e) continue;
    ++s.models;
    sq += *e * *e;
    sum += *e;
    in5 += std::abs(*e) <= 0.05;
    in10 += std::abs(*e) <= 0.10;
    repeats.push_back(m->repeats_ms);
  }
  if (s.models == 0) return s;
  const auto n = static_cast<double>(s.models);
  s.rmspe = 100 * std::sqrt(sq / n);
  s.mean_error = sum / n;
  s.within5 = static_cast<double>(in5) / n;
  s.within10 = static_cast<double>(in10) / n;
  s.repeatability = split_half_agreement(repeats, statistic);
  return s;
}

EvaluateReport evaluate(const Registry& registry, const EvaluateSettings& settings) {
  const std::vector<fs::path> files = expand_models(settings.onnx);
  const LatencyPredictor predictor = load_predictor(registry, settings);
  const PredictorInfo& built_for = predictor.kernel_predictors().meta().info;

  EvaluateReport report;
  report.predictor = predictor.name();
  report.backend = settings.backend.empty() ? built_for.backend : settings.backend;
  if (report.backend.empty()) throw Error("the predictor names no backend: give --backend");
  const BackendInfo backend = find_backend(registry, report.backend);
  // Measured as the predictor's training data was (backend settings and protocol), unless told otherwise.
  Json config = report.backend == built_for.backend && built_for.backend_config.is_object() ? built_for.backend_config
                                                                                          : Json::object();
  for (const auto& [key, value] : settings.backend_config.items()) config[key] = value;
  report.backend_config = resolve_backend_config(backend.params, config, "evaluate's backend config");
  report.protocol = MeasurementProtocol::from_config(report.backend_config);

  // Predict first: it takes milliseconds, and a model that cannot be predicted is not worth measuring.
  std::vector<ProfileJob> jobs;
  const uint64_t config_hash = fnv1a(backend_only(report.backend_config).dump(), fnv1a(report.backend));
  std::vector<std::string> job_ids;
  for (const auto& file : files) {
    ModelEvaluation m;
    m.onnx = file;
    m.name = file.stem().string();
    m.family = model_family(m.name);
    try {
      m.predicted_ms = predictor.predict_file(file).latency_ms;
    } catch (const std::exception& e) {
      m.error = fmt::format("prediction failed: {}", e.what());
      spdlog::warn("{}: {}", m.name, m.error);
    }
    // The measurement is reused only for the very same model bytes on the same backend configuration.
    const std::string id = fmt::format("{}@{:016x}", m.name, fnv1a(io::read_file(file), config_hash));
    job_ids.push_back(id);
    if (m.predicted_ms) jobs.push_back(ProfileJob{id, file, {}});
    report.models.push_back(std::move(m));
  }

  ProfilerOptions options;
  options.backend = report.backend;
  options.backend_config = report.backend_config;
  options.registry_home = registry.home();
  options.work_dir = settings.work_dir / "converted";
  options.timeout_s = settings.timeout_s;
  options.worker_executable = settings.worker_executable;
  options.label = "evaluate";
  options.progress = settings.progress;
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
    m.measured_ms = o.latency.avg;
    m.repeats_ms = o.repeats_ms;
    m.repeat_times = o.repeat_times;
    const RepeatAgreement one = split_half_agreement({o.repeats_ms}, report.protocol.statistic);
    if (one.samples > 0) m.split_half_deviation = one.median_deviation;
  }

  std::vector<const ModelEvaluation*> all;
  std::map<std::string, std::vector<const ModelEvaluation*>> families;
  for (const auto& m : report.models) {
    all.push_back(&m);
    families[m.family].push_back(&m);
  }
  report.summary = summarize(all, report.protocol.statistic);
  for (const auto& [family, members] : families) report.by_family[family] = summarize(members, report.protocol.statistic);

  io::save_json_file(settings.work_dir / "results.json", report.to_json());
  io::write_file_atomic(settings.work_dir / "results.csv", report.to_csv());
  return report;
}

Json EvaluateReport::to_json() const {
  Json models_json = Json::array();
  for (const auto& m : models) {
    Json j = {{"model", m.name}, {"family", m.family}, {"onnx", m.onnx.string()}};
    j["predicted_ms"] = m.predicted_ms ? Json(*m.predicted_ms) : Json(nullptr);
    j["measured_ms"] = m.measured_ms ? Json(*m.measured_ms) : Json(nullptr);
    const auto e = m.relative_error();
    j["error"] = e ? Json(*e) : Json(nullptr);
    j["repeats_ms"] = m.repeats_ms;
    j["repeat_times"] = m.repeat_times;
    j["split_half_deviation"] = m.split_half_deviation ? Json(*m.split_half_deviation) : Json(nullptr);
    if (!m.error.empty()) j["failure"] = m.error;
    models_json.push_back(std::move(j));
  }
  Json families = Json::object();
  for (const auto& [family, s] : by_family) families[family] = s.to_json();
  return {{"predictor", predictor},
          {"backend", backend},
          {"backend_config", backend_config},
          {"protocol", {{"repeats", protocol.repeats}, {"statistic", to_string(protocol.statistic)}}},
          {"summary", summary.to_json()},
          {"by_family", families},
          {"models", models_json}};
}

std::string EvaluateReport::to_csv() const {
  std::string out = "model,family,predicted_ms,measured_ms,error_pct,split_half_deviation_pct,repeats_ms,failure\n";
  const auto num = [](const std::optional<double>& v, double scale = 1) {
    return v ? fmt::format("{:.6g}", *v * scale) : std::string();
  };
  for (const auto& m : models) {
    std::string repeats;
    for (double r : m.repeats_ms) repeats += (repeats.empty() ? "" : ";") + fmt::format("{:.6g}", r);
    std::string failure = m.error;
    std::replace(failure.begin(), failure.end(), '"', '\'');
    out += fmt::format("{},{},{},{},{},{},{},\"{}\"\n", m.name, m.family, num(m.predicted_ms), num(m.measured_ms),
                       num(m.relative_error(), 100), num(m.split_half_deviation, 100), repeats, failure);
  }
  return out;
}

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
  return out;
}

}  // namespace nnmeter
