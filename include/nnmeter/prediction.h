// Model-level latency prediction (nn-Meter's predictor side): an ONNX model or an nn-Meter IR json becomes
// a graph with static shapes (ModelIr), the graph is split into kernels by the backend's fusion rules
// (detect_kernels), and every kernel is predicted by the kernel predictor of the predictor folder with
// the feature parser the builder trained it with. The model latency is the sum of its kernels, times the
// folder's calibrated composition factor if it has one (composition.json, `nn-meter calibrate`).
//
// Fixed on purpose against nn-Meter (docs/differences-from-nn-meter.md): grouped convs are predicted by the
// gconv-bn-relu kernel, or as GROUPS convs of one group by a predictor without it, never as one dense conv;
// global pooling uses the real input size; concat features come from the builder's parser; an op without a
// predictor is never silently 0 ms — it is covered by an element-wise predictor, counted as a 0 ms layout op by
// construction, or reported as uncovered.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nnmeter/common.h"
#include "nnmeter/composition.h"
#include "nnmeter/detection.h"
#include "nnmeter/kernel.h"
#include "nnmeter/model_ir.h"
#include "nnmeter/predictor_folder.h"

namespace nnmeter {

class Registry;

// The predictor kernels that stand in for a detected compute kernel when a predictor lacks it, best first (the
// first is `kernel` itself): for convs the same activation with and without BN, then nn-Meter's conv and dwconv
// families; for a grouped conv (gconv-*) its own family, then the dense conv's, which predicts one group of it;
// element-wise kernels with the same features; a channel shuffle the concat of its two halves (the same bytes moved).
std::vector<std::string> stand_in_kernels(const std::string& kernel);
// The predictor kernels that may predict an element-wise op without a kernel of its own, best first: a binary op
// (two runtime operands) reads two tensors as add does, a unary one is a pass as relu is.
std::vector<std::string> elementwise_kernels(bool binary);
// The config `predictor_kernel` reads for a layer of `kernel` it stands in for: a channel shuffle's {HW, CIN} as
// the concat of its two halves; a grouped conv's, predicted by a dense conv kernel, one group's (CIN and COUT
// divided by GROUPS; prediction multiplies by them); any other the same.
KernelConfig stand_in_config(const std::string& kernel, const std::string& predictor_kernel, KernelConfig config);
// A grouped conv kernel (gconv-*): its config has GROUPS, and CIN and COUT of the whole layer.
bool is_grouped_conv(const std::string& kernel);

// ---------------------------------------------------------------------------------------------------------
// Prediction

struct KernelPrediction {
  std::string name, op, predictor_kernel;  // predictor_kernel "" = not predicted (layout op, 0 ms)
  std::string kernel;                      // builder kernel of the config ("" for layout ops)
  KernelConfig config = Json::object();
  std::vector<double> features;  // the row given to predictor_kernel
  double latency_ms = 0;         // total for the kernel (all groups of a grouped conv)
  // A grouped conv predicted by a dense conv's regressor: `config` is one group's, latency_ms `groups` times it.
  int64_t groups = 1;
  // The share of its config's work the kernel does (DetectedKernel::work): latency_ms is the regressor's time for
  // `config` × groups × work.
  double work = 1;
  std::string note;              // how the kernel was covered when not by its own predictor
  std::vector<std::string> nodes;
  // Predicted by another kernel's regressor: the predictor has no `kernel` (an element-wise op has no kernel of
  // its own and is always predicted so).
  bool stand_in = false;
};

// The 90 % interval a prediction comes with: how far the predictor missed on families it never saw
// (Builder::leave_family_out, the predictor folder's generalization.json), as a prediction interval for one more
// network in log space, widened by the level the build's drift probes saw the machine move. latency_ms × [low, high].
inline constexpr const char* kGeneralizationFile = "generalization.json";  // in the predictor folder, optional
struct PredictionInterval {
  static constexpr double kCoverage = 0.9;
  static constexpr size_t kMinNetworks = 5;  // fewer held-out errors say nothing about a 5 % tail
  double low = 1, high = 1;     // factors on latency_ms
  size_t networks = 0;          // held-out networks the spread is estimated from
  double level_spread = 0;      // sd of the log level (from the drift probes), added in quadrature
  // From the held-out relative errors (predicted / measured - 1) and the build's measurement_quality (its "drift"
  // records); nullopt with fewer than kMinNetworks errors.
  static std::optional<PredictionInterval> estimate(const std::vector<double>& held_out_errors, const Json& measurement_quality);
  Json to_json() const;  // {"coverage", "low", "high", "networks", "level_spread"}
  static PredictionInterval from_json(const Json& j, const std::string& origin);
};

struct UncoveredOp {
  std::string node, type, reason;
};

struct ModelPrediction {
  std::string model;
  // (unscaled_ms + (kernels_ms - unscaled_ms - kernel cost × scaled_kernels) × composition_factor) × neighbour_factor
  // × level; the kernel cost takes at most half of the scaled part (CompositionModel).
  double latency_ms = 0;
  double kernels_ms = 0;   // sum of kernels[i].latency_ms
  double unscaled_ms = 0;  // of kernels_ms, what the composition's unscaled kernels take
  double scaled_kernels = 0;  // predicted kernel uses outside the unscaled ones, a grouped conv's groups each counted
  double footprint_mb = 0;  // model_footprint_mb
  double composition_factor = 1;  // 1 without a calibrated composition
  double neighbour_factor = 1;     // the composition's neighbours' correction; 1 without one
  double level = 1;                // the composition's re-levelling (calibrate --refresh); 1 without one
  // The predictor folder's interval (generalization.json); absent when it has no held-out errors.
  std::optional<PredictionInterval> interval;
  std::vector<KernelPrediction> kernels;
  std::vector<UncoveredOp> uncovered;
  size_t node_count = 0;  // IR nodes without graph inputs, for the uncovered share
  // "kernel -> stand-in" (an element-wise op's kernel is its op) → how many of the kernels were predicted so.
  std::map<std::string, size_t> stand_ins() const;
  KernelSums kernel_sums() const;  // Σ latency_ms of the predicted kernels per predictor kernel and per kernel
  Json to_json() const;
};

class LatencyPredictor {
 public:
  // A registered predictor; "" = the latest version. Unknown name/version → Error listing the registered ones.
  static LatencyPredictor load(const Registry& registry, const std::string& name, const std::string& version = "");
  // A predictor folder (predictor.json, <kernel>.json, fusion_rules.json). Registered kernel plugins are
  // looked up in the default registry.
  static LatencyPredictor from_folder(const fs::path& folder);
  static LatencyPredictor from_folder(const fs::path& folder, const Registry& registry);

  ModelPrediction predict_file(const fs::path& onnx_file, const InputShapes& shapes = {}) const;
  ModelPrediction predict_ir(const ModelIr& ir) const;

  const std::string& name() const;
  const FusionRules& fusion_rules() const;
  const LoadedPredictor& kernel_predictors() const;
  // The folder's calibrated composition, if any (composition.json).
  const std::optional<CompositionModel>& composition() const;
  // The interval every prediction comes with, if the folder has held-out errors (generalization.json).
  const std::optional<PredictionInterval>& interval() const;

 private:
  struct State;
  explicit LatencyPredictor(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  std::shared_ptr<const State> state_;
};

}  // namespace nnmeter
