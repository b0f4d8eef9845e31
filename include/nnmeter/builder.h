// The kernel predictor builder (nn-Meter's builder steps 2-5 and its end-to-end demo), bound to a
// workspace: sample configs, generate kernel models, profile them on a backend in isolated workers,
// extract features, train, and refine with adaptive (fine-grained) sampling around large errors.
//
// Files (under <ws>/predictor_build/):
//   kernels/<kernel>_<mark>_<ID>.onnx, results/<kernel>_<mark>.json         (sampling; mark "models": the
//                                                                           layers of SAMPLE_MODELS)
//   results/profiled_<kernel>.json, results/profile_journal_<kernel>.jsonl  (profiling; the journal is
//   results/profile_error.log, converted/                                   the durable record, the json is
//                                                                           rebuilt from it atomically)
//   results/predictors/<kernel>_<mark>.json                                 (each trained regressor)
//   results/collection/TestResult_<kernel>_<mark>.csv
//   predictor/                       the finished predictor folder (build_latency_predictor)
//   results/accuracy.json            the per-kernel accuracy table of build_latency_predictor
//   networks/<set>/                  builtin network sets named by SAMPLE_MODELS or CALIBRATION_NETWORKS
//   calibration/                     CALIBRATION_NETWORKS measured (evaluate's journal and results)
#pragma once

#include <optional>

#include "nnmeter/evaluate.h"
#include "nnmeter/kernel.h"
#include "nnmeter/predictor_folder.h"
#include "nnmeter/profiling.h"
#include "nnmeter/registry.h"
#include "nnmeter/sampling.h"
#include "nnmeter/workspace.h"

namespace nnmeter {

struct FusionRules;
struct ModelIr;

struct BuilderSettings {
  std::string backend;          // builtin or registered backend name
  uint64_t seed = 1;            // sampling seed; every kernel and mark derives its own from it
  double timeout_s = 300;       // per profiled model
  fs::path worker_executable;   // nn-meter-worker; empty: find_worker_executable()
  bool progress = true;         // progress lines on a terminal
  // Absent: REGRESSOR of predictorbuild_config.yaml (random forest where that is absent too).
  std::optional<RegressorMode> regressor;
  // build_latency_predictor also runs the fusion-rule test (resumable) and writes fusion_rules.json into
  // the predictor folder.
  bool ruletest = true;
  // Samples whose repeats did not settle are repeated again (ProfilerOptions::remeasure_unsettled); on a
  // workspace built before, every measurement is reused and the predictor is trained again.
  bool remeasure_noisy = false;
  // Measured in shards (Sharding): its root is the workspace's shards_dir(), its probes the build's drift probes.
  Sharding sharding;
};

// Kernel data of one kernel type: {ID: {model, shapes, config, latency, ...}}.
using KernelData = Json;

// Reads the seed's (config json files, latency json files) pair into kernel data of `kernel_type`; IDs in
// one list and not the other are reported (a latency without a config is an Error naming the file).
KernelData load_kernel_data(const std::string& kernel_type, const std::vector<fs::path>& config_files,
                            const std::vector<fs::path>& latency_files);

struct PredictorBuildResult {
  TrainResult train;                     // model, metrics, error points
  double acc10 = 0;                      // ±10 % accuracy on the held-out 20 %
  std::vector<KernelConfig> error_configs;
  fs::path model_file;                   // results/predictors/<kernel>_<mark>.json
};

struct KernelBuildSummary {
  std::string kernel;
  size_t samples = 0;     // profiled samples used for training
  size_t failed = 0;      // samples whose profiling failed
  LatencyMetrics metrics; // of the last iteration's held-out split
  std::vector<double> acc10_per_iteration;
  RepeatAgreement repeatability;  // the measurement's own: the ceiling no predictor can beat
};

// The build's verdict on its own measurements: a kernel whose repeats agree (split-half) within ±10 % for fewer
// than kQuietRepeatWithin10 of its samples, or a drift probe whose level moved by more than kQuietDrift over the
// build, makes it "noisy" (the thresholds sit between a quiet machine's figures and a noisy day's;
// docs/measurement.md). With
// `levels_normalized` (PROBE_LEVELS normalize) the labels no longer carry the drift: it is recorded, and the
// repeat ceilings, taken on the normalized repeats, judge what is left.
// {"verdict": "ok"|"noisy", "reasons": [...], "kernels": {kernel: repeatability}, "drift": [...], "thresholds",
//  "levels_normalized"}.
inline constexpr double kQuietRepeatWithin10 = 0.90;
inline constexpr double kQuietDrift = 0.10;
Json assess_measurement_quality(const std::vector<KernelBuildSummary>& summaries, const std::vector<DriftSeries>& drift,
                                bool levels_normalized = false);

// Leave-family-out with the layers held out: how the predictor does on architecture families it never saw. For
// each family (network_family) of the calibration networks, every kernel regressor is trained again without any
// sample whose features are a layer of that family (of its calibration networks and its SAMPLE_MODELS networks,
// as the predictor detects them: prior rows, sampled configs and network layers alike), the composition term is
// fitted again on the other families' networks (its form and corrections chosen among them, as calibrate
// chooses), and the family's networks are predicted. Measurements are reused: the kernel samples' and the
// calibration journal's; nothing is measured twice.
struct FamilyHeldOut {
  std::string family;
  std::vector<std::string> networks;              // calibration networks of the family, scored
  std::map<std::string, size_t> samples_removed;  // per kernel: training samples that are a layer of the family
  std::map<std::string, size_t> samples_kept;     // per kernel retrained: samples it was trained on
};
struct GeneralizationReport {
  std::vector<ModelEvaluation> models;  // the calibration networks, each predicted with its family held out
  std::vector<FamilyHeldOut> families;
  AccuracySummary summary;                        // every network, its family held out
  std::map<std::string, AccuracySummary> by_family;
  AccuracySummary in_sample;  // the same networks as the predictor folder predicts them (nothing held out)
  std::optional<PredictionInterval> interval;  // from these errors: what predict then gives with every prediction
  Json to_json() const;
  std::string to_table() const;
  std::string line() const;  // the one line a build prints
};

class Builder {
 public:
  Builder(Workspace workspace, Registry registry, BuilderSettings settings);

  const Workspace& workspace() const { return workspace_; }

  // Profiles the models of `entries` ({ID: {model, ...}}) and returns them with "latency" added (failed
  // ones without). Writes results/profiled_<kernel>.json, merged with what is already there.
  KernelData profile_kernel_data(const std::string& kernel_type, const Json& entries);

  // Steps 2-3: generate_config_sample + profile.
  KernelData sample_and_profile_kernel_data(const std::string& kernel_type, int sample_num, SamplingMode mode,
                                            const std::vector<KernelConfig>& configs, const std::string& mark);

  // Step 4: features → 80/20 split → regressor → metrics → error configs; saves the regressor.
  PredictorBuildResult build_predictor_by_data(const std::string& kernel_type, const KernelData& kernel_data,
                                               double error_threshold, const std::string& mark);

  std::pair<PredictorBuildResult, KernelData> build_initial_predictor_by_data(const std::string& kernel_type,
                                                                              int init_sample_num,
                                                                              double error_threshold,
                                                                              const std::string& mark = "");
  // Step 5: one round of fine-grained sampling around the current error configs, merged, retrained.
  std::pair<PredictorBuildResult, KernelData> build_adaptive_predictor_by_data(const std::string& kernel_type,
                                                                               const KernelData& kernel_data,
                                                                               int finegrained_sample_num,
                                                                               double error_threshold,
                                                                               const std::string& mark = "");
  // The end-to-end demo: initial prior sampling, then `iteration - 1` adaptive rounds.
  std::pair<PredictorBuildResult, KernelData> build_predictor_for_kernel(const std::string& kernel_type, int init_sample_num,
                                                                         int finegrained_sample_num, int iteration,
                                                                         double error_threshold, const std::string& mark = "",
                                                                         KernelBuildSummary* summary = nullptr);

  // Every kernel of predictorbuild_config (or `kernels` if given) with its own settings, then a predictor
  // folder (a final fit on all samples per kernel) at `folder` (default <ws>/predictor_build/predictor)
  // named `name`, with the backend's fusion rules (settings.ruletest). Returns the per-kernel summaries
  // (also saved as results/accuracy.json).
  std::vector<KernelBuildSummary> build_latency_predictor(const std::vector<std::string>& kernels = {},
                                                          const std::string& name = "",
                                                          const fs::path& folder = {});

  // Leave-family-out (GeneralizationReport) of the predictor folder (default <ws>/predictor_build/predictor) built
  // in this workspace; written to results/generalization.json and the folder's generalization.json. Calibration
  // networks not yet measured are measured (journal <ws>/predictor_build/calibration). No CALIBRATION_NETWORKS, no
  // fusion rules, fewer than two families or a kernel without samples here → Error saying why.
  GeneralizationReport leave_family_out(const fs::path& folder = {});

  // The measured samples of a kernel: every config it sampled (results/<kernel>_<mark>.json) that has a latency
  // (results/profiled_<kernel>.json); {} when there are none.
  KernelData measured_kernel_data(const std::string& kernel_type) const;

 private:
  // Sampled configs of one step ({ID: entry}); a rerun continues the configs the step sampled before.
  Json sample_entries(const std::string& kernel_type, int sample_num, SamplingMode mode,
                      const std::vector<KernelConfig>& configs, const std::string& mark);
  // The configs a step sampled before (a rerun continues them), if any.
  std::optional<Json> earlier_entries(const std::string& kernel_type, const std::string& mark) const;
  // The ONNX files of SAMPLE_MODELS or CALIBRATION_NETWORKS (`key`): builtin sets written into
  // <ws>/predictor_build/networks/<set>/, folders expanded. And the layers of `models` written as samples of
  // `kernels` (mark "models", {kernel: {ID: entry}}), detected with `rules`.
  std::vector<fs::path> network_files(const std::string& key, const std::vector<fs::path>& entries) const;
  std::map<std::string, Json> model_sample_entries(const std::vector<std::string>& kernels,
                                                   const std::vector<ModelIr>& models, const FusionRules& rules);
  // The sealed test split's layers (kSealedTestSet), detected with `rules`, as configs of every kernel of `kernels`
  // that could be trained on them: build_latency_predictor samples none of them.
  void seal_test_split(const std::vector<std::string>& kernels, const FusionRules& rules);
  // CALIBRATION_NETWORKS: measured by the protocol (journal <ws>/predictor_build/calibration), the composition
  // term fitted on them written into the predictor folder.
  void calibrate_predictor(const fs::path& folder, const std::vector<fs::path>& networks) const;
  // How the build measures its calibration networks for the predictor folder (evaluate's settings).
  EvaluateSettings calibration_settings(const fs::path& folder, const std::vector<fs::path>& networks) const;
  ProfileBatch profile_batch(const std::string& kernel_type, const Json& entries) const;
  ProfilerOptions profiler_options(const std::string& label) const;
  std::vector<ProfileJob> drift_probe_jobs() const;  // writes the probe models once
  // Several kernels' entries profiled in one shuffled order; kernel data per kernel.
  std::map<std::string, KernelData> profile_kernels(const std::map<std::string, Json>& entries_by_kernel,
                                                    const std::string& label);
  KernelData record_profiled(const std::string& kernel_type, const Json& entries,
                             const std::map<std::string, ProfileOutcome>& outcomes);
  KernelSuite& suite(const std::string& kernel_type);
  uint64_t seed_for(const std::string& kernel_type, const std::string& mark) const;
  RegressorParams regressor_params(const std::string& kernel_type) const;
  fs::path results_dir() const { return workspace_.predictor_build_dir() / "results"; }

  Workspace workspace_;
  Registry registry_;
  BuilderSettings settings_;
  std::map<std::string, KernelSuite> suites_;
  std::map<std::string, size_t> failed_profiles_;  // per kernel, across this builder's runs
  std::map<std::string, std::set<std::string>> sealed_;  // kernel → config dumps never sampled (seal_test_split)
};

// `nn-meter evaluate --leave-family-out` and nn_meter.leave_family_out: Builder::leave_family_out of the predictor
// folder (empty: <workspace>/predictor_build/predictor) on the backend it was built for (settings.backend is set
// from it). A folder that is not there → Error saying to build first.
GeneralizationReport leave_family_out(const Registry& registry, const fs::path& workspace, const fs::path& folder,
                                      BuilderSettings settings);

// The accuracy table as text, one row per kernel (samples, RMSE, RMSPE, ±5/10/15 %).
std::string format_accuracy_table(const std::vector<KernelBuildSummary>& summaries);

}  // namespace nnmeter
