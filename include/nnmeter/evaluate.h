// `nn-meter evaluate`: how accurate a latency predictor is on real models, judged against measurements
// taken by the repeat protocol and shown next to those measurements' own repeatability (the ceiling no
// predictor can beat). Every model is predicted, then measured in REPEATS fresh processes (journaled:
// an interrupted evaluation resumes and never measures a repeat twice), then scored.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "nnmeter/common.h"
#include "nnmeter/prediction.h"
#include "nnmeter/profiling.h"
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
  // Also measure every kernel the predictor detects in the models, alone, as the builder measures its
  // samples (the predictor kernel's model for that config), to split each model's error into what the
  // kernel predictors miss and what summing kernels measured alone misses (composition).
  bool kernels = false;
  // Independent repeats of each kernel measured alone; none: the REPEATS the predictor's samples were measured
  // with (a kernel is then measured as its training samples were; models take REPEATS of backend_config).
  std::optional<int> kernel_repeats;
  // Networks measured in the same shuffled order as `onnx` (one journal, one level of the machine), on which the
  // composition term is fitted as calibrate fits it; the models of `onnx` are then predicted with that term
  // instead of the predictor folder's, and it is written to work_dir/composition.json. They are not scored.
  std::vector<fs::path> calibrate_on;
  Sharding sharding;  // measured in a sharded build's shards (the build's calibration networks)
};

// One distinct (predictor kernel, config) of the evaluated models, measured alone by the protocol.
struct KernelEvaluation {
  std::string id, kernel;  // kernel: the predictor kernel whose model and regressor were used
  Json config = Json::object();
  double predicted_ms = 0;  // one group
  std::optional<double> measured_ms;
  std::vector<double> repeats_ms;
  size_t uses = 0;  // kernels of the evaluated models with this config (groups counted once)
  std::string error;
  std::optional<double> relative_error() const;
};

// A model's kernels measured alone: Σ predicted kernels = measured model × (1 + predictor) × (1 + composition).
struct KernelSplit {
  double predicted_ms = 0, measured_ms = 0;  // Σ over the model's predicted kernels
  double predictor_error() const { return predicted_ms / measured_ms - 1; }
};

// One kernel of a model as `evaluate --kernels` measures it alone: its config's id (KernelEvaluation), and the
// prediction of all its groups (KernelPrediction::groups, ::work).
struct KernelUse {
  std::string id;
  int64_t groups = 1;
  double work = 1;
  double predicted_ms = 0;
};

struct ModelEvaluation {
  std::string name, family;  // file stem; its network_family (nnmeter/networks.h)
  fs::path onnx;
  std::optional<double> predicted_ms, measured_ms;  // measured: the protocol's statistic of the repeats
  // The prediction's parts: Σ predicted kernels and the model's footprint (predicted = kernels × composition).
  std::optional<double> kernels_ms, footprint_mb;
  std::map<std::string, double> kernels_ms_by_type;  // Σ predicted ms per predictor kernel (calibrate's forms)
  std::map<std::string, double> kernels_ms_by_kernel;  // Σ predicted ms per kernel as detected (the neighbours' mix)
  std::map<std::string, double> kernel_count_by_type;  // kernel uses per predictor kernel, a grouped conv's groups each
  // Kernels predicted by another kernel's regressor ("kernel -> stand-in" → count), and ops no predictor counts.
  std::map<std::string, size_t> stand_ins;
  size_t uncovered_ops = 0;
  // The prediction's latency and parts (predicted_ms … kernel_count_by_type, stand_ins, uncovered_ops).
  void take_prediction(const ModelPrediction& p);
  double kernels_ms_of(const std::set<std::string>& predictor_kernels) const;  // Σ of these in kernels_ms_by_type
  KernelSums kernel_sums() const { return {kernels_ms_by_type, kernels_ms_by_kernel}; }
  double kernel_count_without(const std::set<std::string>& predictor_kernels) const;  // kernel uses of all others
  // The prediction with a composition term: its unscaled kernels as predicted, the rest scaled by its factor
  // (nullopt without kernels and footprint).
  std::optional<double> predicted_with(const CompositionModel& composition) const;
  std::optional<PredictionInterval> interval;       // the prediction's, as factors on predicted_ms
  std::vector<double> repeats_ms, repeat_times;     // each repeat's value and end time (epoch seconds)
  std::optional<double> split_half_deviation;       // |a - b| / min(a, b) of the two halves' labels
  std::string error;                                // why it was not scored
  std::optional<double> relative_error() const;     // predicted / measured - 1
  // With EvaluateSettings::kernels: each predicted kernel, and the split once every one of them was measured.
  std::vector<KernelUse> kernel_uses;
  std::optional<KernelSplit> split;
  std::optional<double> composition_error() const;  // Σ kernels measured alone / model measured - 1
};

// The kernels of one predictor kernel over all evaluated models.
struct KernelTypeSummary {
  size_t configs = 0, measured = 0;   // distinct configs, of which measured
  double within10 = 0, rmspe = 0;     // over the measured distinct configs
  double predicted_ms = 0, measured_ms = 0;  // Σ over every use in the models, groups included
  Json to_json() const;
};

// Prediction accuracy over a set of scored models, next to their measurement repeatability.
struct AccuracySummary {
  size_t models = 0;  // scored
  double rmspe = 0, within5 = 0, within10 = 0, mean_error = 0;
  // How the predictions rank the models against how the measurements do (what a NAS run relies on); nullopt with
  // fewer than 2 models. repeatability.kendall_tau is the ceiling.
  std::optional<double> kendall_tau, spearman;
  // The share of the scored models with an interval (PredictionInterval) whose measured latency lies in it.
  std::optional<double> interval_coverage;
  size_t interval_models = 0;
  RepeatAgreement repeatability;
  Json to_json() const;
};
AccuracySummary summarize(const std::vector<const ModelEvaluation*>& models, RepeatStatistic statistic);
// The measured models scored with other predictions (nullopt: not scored), e.g. without the composition term.
AccuracySummary summarize_predictions(const std::vector<ModelEvaluation>& models, RepeatStatistic statistic,
                                      const std::function<std::optional<double>(const ModelEvaluation&)>& predict);

// The composition term fitted on measured models: every form (every kernel scaled; fc unscaled; each with a
// kernel cost from 8 networks on) fitted, the one whose term predicts each family held out better kept (with 3
// or more families; otherwise every kernel scaled); then the neighbours' correction on top of it, kept only if it
// predicts each network held out better than the term alone on both counts (as many within ±5 % or more, and a
// lower RMSPE). `composition.calibration` records the fit: models, backend, protocol, the scores, the forms (the
// kept one as `form`) and the neighbours tried.
struct CompositionFit {
  CompositionModel composition;
  AccuracySummary before, after;  // the same networks: Σ kernels, and with the fitted term (in sample)
  // Each family predicted by a term fitted on the other families only: what the term does for networks it was
  // not fitted on.
  std::optional<AccuracySummary> held_out_families;
  // Each network predicted by a term fitted on the others, alone and with the neighbours' correction chosen
  // (composition.neighbours; from 10 networks on), and each network's prediction with it: how the correction
  // was chosen, and what it does for a network of a family it has seen at other sizes.
  std::optional<AccuracySummary> network_out_term, network_out;
  std::map<std::string, double> network_out_ms;
};

struct EvaluateReport {
  std::string predictor, backend;
  Json measurement_quality;  // the predictor build's verdict on its own measurements (null: not assessed)
  Json backend_config;  // resolved, protocol keys included
  MeasurementProtocol protocol;
  int kernel_repeats = 0;  // how often each kernel measured alone (EvaluateSettings::kernels) is repeated
  std::vector<ModelEvaluation> models;
  AccuracySummary summary;
  std::map<std::string, AccuracySummary> by_family;
  // With a calibrated composition: the term, and the same models scored by the plain sum of their kernels.
  std::optional<CompositionModel> composition;
  std::optional<AccuracySummary> kernel_sum_summary;
  // With EvaluateSettings::calibrate_on: its networks (measured, predicted by the plain sum) and the term fitted
  // on them, which is `composition` above, written to composition_file.
  std::vector<ModelEvaluation> calibration_models;
  std::optional<CompositionFit> calibration;
  fs::path composition_file;
  // With calibrate_on and a predictor calibrated by its build: the same models scored with the predictor's own
  // term, as predict gives them. The gap to `summary` is the machine's level moving since the build.
  std::optional<AccuracySummary> own_composition_summary;
  std::map<std::string, KernelEvaluation> kernels;            // with EvaluateSettings::kernels, by id
  std::map<std::string, KernelTypeSummary> by_kernel_type;  // idem, by predictor kernel
  std::string kernels_csv() const;
  Json to_json() const;
  std::string to_csv() const;
  std::string to_table() const;  // the terminal table with the summary lines
  std::string to_html() const;   // self-contained: inline SVG and CSS, no script
};

EvaluateReport evaluate(const Registry& registry, const EvaluateSettings& settings);

// The fit of calibrate and evaluate --calibrate-on on `models` measured as `measured` says (backend, config,
// protocol). No model both predicted and measured → Error ending "see <see>".
CompositionFit fit_composition_forms(const std::vector<ModelEvaluation>& models, const EvaluateReport& measured,
                                     const std::string& see);

// `nn-meter calibrate`: measures networks by the protocol (as evaluate does, same journal and resume) and fits
// the predictor's composition term on them (fit_composition_forms), written atomically to the predictor folder's
// composition.json. The networks used here say nothing about accuracy afterwards: evaluate on others.
struct CalibrationReport : CompositionFit {
  EvaluateReport evaluation;  // the calibration networks, measured and predicted
  fs::path file;  // composition.json written; empty when not written (dry run)
  Json to_json() const;
  std::string to_table() const;
};
CalibrationReport calibrate(const Registry& registry, const EvaluateSettings& settings, bool write = true);

// `nn-meter calibrate --refresh`: on a later day the machine's level has moved, and every prediction with it.
// A few networks are measured by the protocol (as evaluate does) and predicted as the calibrated predictor
// predicts them; the level moves by the median of measured / predicted, and composition.json is rewritten
// atomically with it (CompositionModel::level). The term itself is not refitted. A predictor without
// composition.json, or no network both predicted and measured → Error saying what to run.
struct RelevelReport {
  EvaluateReport evaluation;  // the networks, predicted with the composition as it was
  double previous_level = 1, level = 1;
  AccuracySummary before, after;  // the predictions as they were, and with the new level
  fs::path file;  // composition.json written; empty when not written (dry run)
  Json to_json() const;
  std::string to_table() const;
};
RelevelReport relevel(const Registry& registry, const EvaluateSettings& settings, bool write = true);

}  // namespace nnmeter
