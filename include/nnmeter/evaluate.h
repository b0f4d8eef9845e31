// `nn-meter evaluate`: how accurate a latency predictor is on real models, judged against measurements
// taken by the repeat protocol and shown next to those measurements' own repeatability (the ceiling no
// predictor can beat). Every model is predicted, then measured in REPEATS fresh processes (journaled:
// an interrupted evaluation resumes and never measures a repeat twice), then scored.
#pragma once

#include <map>
#include <optional>

#include "nnmeter/common.h"
#include "nnmeter/protocol.h"
#include "nnmeter/registry.h"

namespace nnmeter {

struct EvaluateSettings {
  std::string predictor;          // a registered predictor name, or a predictor folder
  std::string predictor_version;  // "" = latest (registered predictors only)
  std::string backend;            // "" = the backend the predictor was built for
  Json backend_config = Json::object();  // overrides of the predictor's recorded backend config
  std::vector<fs::path> onnx;     // files, or folders whose *.onnx files are all evaluated
  fs::path work_dir;              // journal, converted models, results.{json,csv}, report.html
  double timeout_s = 300;
  fs::path worker_executable;     // empty: find_worker_executable()
  bool progress = true;
  uint64_t seed = 1;
};

struct ModelEvaluation {
  std::string name, family;  // file stem; the stem without its resolution/width suffix (_r224_w1.0)
  fs::path onnx;
  std::optional<double> predicted_ms, measured_ms;  // measured: the protocol's statistic of the repeats
  std::vector<double> repeats_ms, repeat_times;     // each repeat's value and end time (epoch seconds)
  std::optional<double> split_half_deviation;       // |a - b| / min(a, b) of the two halves' labels
  std::string error;                                // why it was not scored
  std::optional<double> relative_error() const;     // predicted / measured - 1
};

// Prediction accuracy over a set of scored models, next to their measurement repeatability.
struct AccuracySummary {
  size_t models = 0;  // scored
  double rmspe = 0, within5 = 0, within10 = 0, mean_error = 0;
  RepeatAgreement repeatability;
  Json to_json() const;
};
AccuracySummary summarize(const std::vector<const ModelEvaluation*>& models, RepeatStatistic statistic);

struct EvaluateReport {
  std::string predictor, backend;
  Json backend_config;  // resolved, protocol keys included
  MeasurementProtocol protocol;
  std::vector<ModelEvaluation> models;
  AccuracySummary summary;
  std::map<std::string, AccuracySummary> by_family;
  Json to_json() const;
  std::string to_csv() const;
  std::string to_table() const;  // the terminal table with the summary lines
  std::string to_html() const;   // self-contained: inline SVG and CSS, no script
};

EvaluateReport evaluate(const Registry& registry, const EvaluateSettings& settings);

// The family of a model file stem: "mobilenet_v2_r224_w1.0" → "mobilenet_v2".
std::string model_family(const std::string& stem);

}  // namespace nnmeter
