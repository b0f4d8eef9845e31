// Composition: how the device runs a network against the sum of its kernels measured alone, the term
// `nn-meter calibrate` fits into a predictor folder (composition.json).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "nnmeter/common.h"
#include "nnmeter/model_ir.h"

namespace nnmeter {

// Bytes a model touches once per inference, in MB (1e6 bytes): every weight and every op output, float32.
// A kernel measured alone starts from caches emptied of its own data; inside a network it meets caches
// full of the layers before it, which costs more the larger the network's footprint against the caches.
double model_footprint_mb(const ModelIr& ir);

inline constexpr const char* kCompositionFile = "composition.json";  // in the predictor folder, optional

// The calibration networks most like a network correct what the term leaves: networks of one architecture
// share how they run against their kernels beyond what their footprint says (fused ops the kernels count
// apart, memory-bound layers slowed by the layers before them), and a network's mix of kernel types says
// which architecture it resembles. A network is a point (the share of each kernel as detected in its Σ predicted
// kernels, footprint_weight · ln footprint_mb); the correction is the median, or the inverse-distance mean,
// of the residuals (measured / the term's prediction) of the k calibration networks nearest to it. Calibrate
// chooses k, the weight and the statistic by predicting each calibration network from the others, and keeps
// none (k = 0) unless that beats the term alone.
//
// The mix is by kernel as detected, not by the regressor that predicts it: a predictor without swish kernels
// predicts EfficientNet's conv-swish with conv-bn-relu, and by regressor its mix (SE, dwconv, an activation
// conv-bn-relu stands in for) looked like MobileNetV3's, whose prediction then took EfficientNet's residual
// (docs/cli-predict.md). Files of format_version 2-5 were calibrated with the
// mix by predictor kernel and are read so (mix_of).
struct CompositionNeighbour {
  std::string model;
  double footprint_mb = 0;
  std::map<std::string, double> mix;  // kernel (mix_of) → share of the network's Σ predicted kernels
  double residual = 1;                // measured / predicted by the term
};
// A network's Σ predicted ms per predictor kernel (what kernel scales apply to) and per kernel as detected (an
// element-wise op without a kernel of its own by its op), the neighbours' mix.
struct KernelSums {
  std::map<std::string, double> by_predictor_kernel, by_kernel;
};
struct NeighbourCorrection {
  enum class Statistic { Median, InverseDistance };
  enum class MixOf { Kernel, PredictorKernel };  // PredictorKernel: files of format_version 2-5
  int k = 0;  // 0: no correction
  double footprint_weight = 0;
  Statistic statistic = Statistic::Median;
  MixOf mix_of = MixOf::Kernel;
  std::vector<CompositionNeighbour> networks;
  // 1 with k = 0.
  double factor(const KernelSums& sums, double footprint_mb) const;
};
std::string to_string(NeighbourCorrection::Statistic s);  // "median" | "inverse_distance"
// Each key's share of Σ ms_by_key (empty when that is 0).
std::map<std::string, double> kernel_mix(const std::map<std::string, double>& ms_by_key);

// latency = Σ unscaled kernels + (Σ other kernels, each type × its kernel scale, − kernel_cost_ms · their count)
//           × exp(c0 + c1 · ln(footprint_mb)),
// the footprint clamped to the calibrated range (the term never extrapolates), times the neighbours' correction
// when calibrate kept one. Unscaled kernels are predictor kernels whose time a network does not change; the
// kernel cost is what each kernel measured alone pays that a network pays once (the run's fixed cost, a cold
// start), never more than half of the scaled kernels' time. A kernel scale is how much slower (or faster) one
// kernel type runs inside networks than alone, beyond the term's common factor (memory-bound layers meet caches
// full of the layers before them, compute-bound ones hardly notice). Calibrate keeps each of these only where
// networks of families it was not fitted on say so.
// Fitted by `nn-meter calibrate` on networks measured by the repeat protocol; without composition.json a
// predictor sums its kernels, as nn-Meter does.
struct CompositionModel {
  double c0 = 0, c1 = 0;
  double footprint_min_mb = 0, footprint_max_mb = 0;  // calibrated range
  std::set<std::string> unscaled_kernels;  // predictor kernel names, e.g. "fc"
  double kernel_cost_ms = 0;               // per scaled kernel use (a grouped conv's groups each count)
  std::map<std::string, double> kernel_scales;  // predictor kernel → multiplier of its Σ ms; absent: 1
  NeighbourCorrection neighbours;       // k = 0: none
  Json calibration = Json::object();  // how it was fitted: models, backend, accuracy before/after, ...
  // `nn-meter calibrate --refresh`: the machine's level on a later day against the one the predictor was built
  // and calibrated at, from a few networks measured then; every prediction is multiplied by it (1: never
  // re-levelled). `relevel` says when and from what.
  double level = 1;
  Json relevel = nullptr;
  double factor(double footprint_mb) const;
  // The term alone. kernels_ms: Σ of all kernels; unscaled_ms: the part of it from unscaled_kernels;
  // scaled_kernels: how many kernel uses the rest is the sum of; kernels_by_type: Σ predicted ms per predictor
  // kernel (what the kernel scales apply to).
  double latency(double kernels_ms, double unscaled_ms, double footprint_mb, double scaled_kernels,
                 const std::map<std::string, double>& kernels_by_type) const;
  // A network's prediction: the term, the neighbours' correction and the level.
  double predict(double kernels_ms, double unscaled_ms, double footprint_mb, double scaled_kernels,
                 const KernelSums& sums) const {
    return latency(kernels_ms, unscaled_ms, footprint_mb, scaled_kernels, sums.by_predictor_kernel) *
           neighbours.factor(sums, footprint_mb) * level;
  }
  // "x0.993 at 16.6 MB … x1.090 at 179 MB[, fc unscaled][, 4.5 µs less a kernel][, 13 kernel scales x0.78
  // (conv-bn-swish) … x1.32 (dwconv-bn-relu)][; the 7 nearest of 72
  // calibration networks (median)][; re-levelled x1.042]"
  std::string describe() const;
  // "least squares" | "Huber's weights, 2 of 72 networks down-weighted: a (0.41), b (0.77)" | "" (not recorded)
  std::string describe_fit() const;
  Json to_json() const;
  // Malformed or out-of-range values → Error naming `origin`.
  static CompositionModel from_json(const Json& j, const std::string& origin);
};

// One calibration network: Σ of its predicted kernels, its measured latency, its footprint, the part of the
// kernels' sum the term leaves unscaled, how many kernel uses the rest is the sum of, and Σ per predictor kernel
// (for kernel scales).
struct CompositionPoint {
  double kernels_ms = 0, measured_ms = 0, footprint_mb = 0, unscaled_ms = 0;
  std::string name = {};  // the network's, for calibration["fit"]
  double scaled_kernels = 0;
  std::map<std::string, double> kernels_by_type = {};
};
// Robust (Huber) least squares of ln((measured - unscaled) / (kernels - unscaled)) on ln(footprint), for the
// given unscaled kernels: from 8 networks on, those far off the others' line weigh less. Fewer than 4 points
// or footprints spanning less than 2× fit the constant only (c1 = 0). How it was fitted goes to
// calibration["fit"]: {"method": "huber" | "least_squares", "networks", "threshold" (Huber's, in ln
// units), "down_weighted": [{"model", "weight"}]}. With fit_kernel_cost the kernel cost is fitted too: the one
// whose term leaves the least (Huber's loss), between minus and plus half the smallest mean scaled kernel of the
// networks. With scale_ridge > 0 each scaled kernel type gets its own scale too, fitted in turn with the term:
// the least squares of the relative errors (Huber's weights of the term's fit) with a ridge of scale_ridge ·
// networks pulling every scale towards 1, so a type that few networks spend time in stays near the common
// factor. No point, a non-positive value, or unscaled kernels taking all of a network's time → Error.
CompositionModel fit_composition(const std::vector<CompositionPoint>& points, std::set<std::string> unscaled_kernels = {},
                                 bool fit_kernel_cost = false, double scale_ridge = 0);

}  // namespace nnmeter
