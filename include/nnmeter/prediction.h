// Model-level latency prediction (nn-Meter's predictor side): an ONNX model or an nn-Meter IR json becomes
// a graph with static shapes (ModelIr), the graph is split into kernels by the backend's fusion rules
// (detect_kernels), and every kernel is predicted by the kernel predictor of the predictor folder with
// the feature parser the builder trained it with. The model latency is the sum of its kernels, times the
// folder's calibrated composition factor if it has one (composition.json, `nn-meter calibrate`).
//
// Fixed on purpose against nn-Meter (docs/differences-from-nn-meter.md): grouped convs are predicted as `groups`
// small convs, not as one dense conv; global pooling uses the real input size; concat features come from
// the builder's parser; an op without a predictor is never silently 0 ms — it is covered by an
// element-wise predictor, counted as a 0 ms layout op by construction, or reported as uncovered.
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
#include "nnmeter/kernel.h"
#include "nnmeter/predictor.h"

namespace nnmeter {

class Registry;

// Graph input name -> full NCHW shape including the batch dimension.
using InputShapes = std::map<std::string, Shape>;

// What nn-meter agrees to read as a model (ONNX file or nn-Meter IR); beyond any of these → one-line Error
// before any work. They bound time and memory on hostile files and sit far above real networks (the
// largest CNN exports have a few thousand nodes and tensors of a few million elements).
inline constexpr size_t kMaxModelFileBytes = 2'147'483'647;  // protobuf parses no larger message
inline constexpr size_t kMaxModelNodes = 200'000;             // graph, subgraph and function nodes together
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 32;
inline constexpr size_t kMaxTensorRank = 32;
// Elements of a tensor of this shape, or nullopt when its rank or element count is beyond these limits or
// a dim is negative (checked without overflow).
std::optional<int64_t> bounded_elements(const Shape& shape);

// ---------------------------------------------------------------------------------------------------------
// The graph with static shapes

// One runtime op. Graph inputs are nodes of type "Placeholder". Initializers, Constant nodes and nodes
// computed from constants and static shapes only (Shape → Gather → Concat → Reshape targets) are not nodes.
struct IrNode {
  std::string name, type;  // type: the ONNX op_type ("Conv", "Clip", ...)
  // Producer of each runtime input, in input order (input_shapes[i] is the shape of inbounds[i]).
  std::vector<std::string> inbounds;
  std::vector<std::string> outbounds;  // consumers, each once, in topological order
  std::vector<Shape> input_shapes, output_shapes;  // as in the ONNX model (NCHW)
  // ONNX attributes (int, float, ints, floats, string), plus what detection needs from constant inputs:
  // "weight_shape" (Conv, ConvTranspose, Gemm, MatMul with a constant weight), "kernel_shape" (Conv,
  // from the weight when the attribute is absent), "min"/"max" (Clip), "constant" (the scalar operand of
  // a binary op with one constant input).
  Json attr = Json::object();
};

struct ModelIr {
  std::string origin;          // file or model name, for messages
  std::vector<IrNode> nodes;   // topological order
};

// Parses the file (Error if it is not an ONNX model) and converts it. The weights are never read into
// memory: only the graph structure and shapes are needed.
ModelIr load_onnx_ir(const fs::path& onnx_file, const InputShapes& shapes = {});
// The same from a serialized ModelProto in memory (e.g. handed over by Python); `origin` names it in messages.
ModelIr load_onnx_ir_bytes(std::string_view onnx_bytes, const std::string& origin, const InputShapes& shapes = {});

// nn-Meter's IR json: node name → {inbounds, outbounds, attr: {name, type, input_shape,
// output_shape, attr}}, 4-D shapes in NHWC. Each node also carries "order", its topological index, so
// that reading the file back gives the same graph order (and therefore the same kernels).
Json ir_to_nnmeter_json(const ModelIr& ir);
// Accepts what ir_to_nnmeter_json writes (4-D shapes back to NCHW); files without "order" are sorted
// topologically. Malformed input → Error naming `origin`.
ModelIr ir_from_nnmeter_json(const Json& ir_json, const std::string& origin);

// ---------------------------------------------------------------------------------------------------------
// Fusion rules and kernel detection

// The rules of a predictor folder's fusion_rules.json: {"BF_conv_relu": {"obey": true}, "MON": {...}}.
// Op names are the rule tester's operator names (conv, dwconv, bn, relu, relu6, hswish, add, ...);
// obey null or missing = false. Other rules (RBC, CBC, ...) are ignored, as in nn-Meter.
struct FusionRules {
  // MON obeyed: a node with several consumers still fuses its first fusible consumer.
  bool multiple_outbounds = false;
  std::set<std::pair<std::string, std::string>> fusible;  // obeyed two-op rules
  std::set<std::pair<std::string, std::string>> tested;   // every two-op rule, obeyed or not
  std::vector<std::vector<std::string>> chains;           // obeyed rules of more than two ops

  static FusionRules from_json(const Json& rules, const std::string& origin);
  // Whether `consumer` fuses into a kernel rooted at an op of type `root`. relu6 (and swish) fall back to
  // the relu (hswish) rule when the rules never tested them.
  bool can_fuse(const std::string& root, const std::string& consumer) const;
};

// What a detected kernel is, for prediction.
enum class KernelKind {
  compute,      // a builder kernel (`kernel`) with its config
  elementwise,  // an element-wise op without its own kernel; config {HW, CIN}, predicted by an element-wise predictor
  layout,       // reshape/flatten/squeeze/unsqueeze/identity/dropout: 0 ms by construction
  unsupported,  // no kernel covers it (`reason`)
};
const char* to_string(KernelKind kind);

struct DetectedKernel {
  std::string name;  // "conv-bn-relu#3"
  std::string op;    // root-first type names joined by '-': "conv-bn-relu", "hswish", "add-relu"
  KernelKind kind = KernelKind::compute;
  // Builder kernel whose config keys `config` follows ("conv-bn-relu", "global-avgpool", ...); "" unless
  // kind is compute.
  std::string kernel;
  KernelConfig config = Json::object();  // HW, CIN, COUT, KERNEL_SIZE, STRIDES, ...; GROUPS for grouped convs
  int64_t groups = 1;   // a grouped conv is `groups` convs of CIN/groups → COUT/groups (config holds those)
  bool binary = false;  // elementwise with two runtime operands (Mul, Sub, Div of two tensors)
  std::string reason;   // unsupported: why
  std::vector<std::string> nodes;  // IR node names, topological order
};

std::vector<DetectedKernel> detect_kernels(const ModelIr& ir, const FusionRules& rules);

// The predictor kernels that stand in for a detected compute kernel when a predictor lacks it, best first (the
// first is `kernel` itself): for convs the same activation with and without BN, then nn-Meter's conv and dwconv
// families; element-wise kernels with the same features.
std::vector<std::string> stand_in_kernels(const std::string& kernel);

// ---------------------------------------------------------------------------------------------------------
// Composition: how the device runs a network against the sum of its kernels measured alone

// Bytes a model touches once per inference, in MB (1e6 bytes): every weight and every op output, float32.
// A kernel measured alone starts from caches emptied of its own data; inside a network it meets caches
// full of the layers before it, which costs more the larger the network's footprint against the caches.
double model_footprint_mb(const ModelIr& ir);

inline constexpr const char* kCompositionFile = "composition.json";  // in the predictor folder, optional

// The calibration networks most like a network correct what the term leaves: networks of one architecture
// share how they run against their kernels beyond what their footprint says (fused ops the kernels count
// apart, memory-bound layers slowed by the layers before them), and a network's mix of kernel types says
// which architecture it resembles. A network is a point (the share of each predictor kernel in its Σ predicted
// kernels, footprint_weight · ln footprint_mb); the correction is the median, or the inverse-distance mean,
// of the residuals (measured / the term's prediction) of the k calibration networks nearest to it. Calibrate
// chooses k, the weight and the statistic by predicting each calibration network from the others, and keeps
// none (k = 0) unless that beats the term alone.
struct CompositionNeighbour {
  std::string model;
  double footprint_mb = 0;
  std::map<std::string, double> mix;  // predictor kernel → share of the network's Σ predicted kernels
  double residual = 1;                // measured / predicted by the term
};
struct NeighbourCorrection {
  enum class Statistic { Median, InverseDistance };
  int k = 0;  // 0: no correction
  double footprint_weight = 0;
  Statistic statistic = Statistic::Median;
  std::vector<CompositionNeighbour> networks;
  // kernels_by_type: Σ predicted ms per predictor kernel of the network. 1 with k = 0.
  double factor(const std::map<std::string, double>& kernels_by_type, double footprint_mb) const;
};
std::string to_string(NeighbourCorrection::Statistic s);  // "median" | "inverse_distance"
// Each predictor kernel's share of Σ kernels_by_type (empty when that is 0).
std::map<std::string, double> kernel_mix(const std::map<std::string, double>& kernels_by_type);

// latency = Σ unscaled kernels + Σ other kernels × exp(c0 + c1 · ln(footprint_mb)), the footprint clamped to
// the calibrated range (the term never extrapolates), times the neighbours' correction when calibrate kept one.
// Unscaled kernels are predictor kernels whose time a network does not change (calibrate keeps them only where
// networks of families it was not fitted on say so).
// Fitted by `nn-meter calibrate` on networks measured by the repeat protocol; without composition.json a
// predictor sums its kernels, as nn-Meter does.
struct CompositionModel {
  double c0 = 0, c1 = 0;
  double footprint_min_mb = 0, footprint_max_mb = 0;  // calibrated range
  std::set<std::string> unscaled_kernels;  // predictor kernel names, e.g. "fc"
  NeighbourCorrection neighbours;       // k = 0: none
  Json calibration = Json::object();  // how it was fitted: models, backend, accuracy before/after, ...
  double factor(double footprint_mb) const;
  // The term alone. kernels_ms: Σ of all kernels; unscaled_ms: the part of it from unscaled_kernels.
  double latency(double kernels_ms, double unscaled_ms, double footprint_mb) const {
    return unscaled_ms + (kernels_ms - unscaled_ms) * factor(footprint_mb);
  }
  // "x0.993 at 16.6 MB … x1.090 at 179 MB[, fc unscaled][; the 7 nearest of 72 calibration networks (median)]"
  std::string describe() const;
  // "least squares" | "Huber's weights, 2 of 72 networks down-weighted: a (0.41), b (0.77)" | "" (not recorded)
  std::string describe_fit() const;
  Json to_json() const;
  // Malformed or out-of-range values → Error naming `origin`.
  static CompositionModel from_json(const Json& j, const std::string& origin);
};

// One calibration network: Σ of its predicted kernels, its measured latency, its footprint, and the part
// of the kernels' sum the term leaves unscaled.
struct CompositionPoint {
  double kernels_ms = 0, measured_ms = 0, footprint_mb = 0, unscaled_ms = 0;
  std::string name = {};  // the network's, for calibration["fit"]
};
// Robust (Huber) least squares of ln((measured - unscaled) / (kernels - unscaled)) on ln(footprint), for the
// given unscaled kernels: from 8 networks on, those far off the others' line weigh less. Fewer than 4 points
// or footprints spanning less than 2× fit the constant only (c1 = 0). How it was fitted goes to
// calibration["fit"]: {"method": "huber" | "least_squares", "networks", "threshold" (Huber's, in ln
// units), "down_weighted": [{"model", "weight"}]}. No point, a non-positive value, or unscaled kernels taking all of a
// network's time → Error.
CompositionModel fit_composition(const std::vector<CompositionPoint>& points, std::set<std::string> unscaled_kernels = {});

// ---------------------------------------------------------------------------------------------------------
// Prediction

struct KernelPrediction {
  std::string name, op, predictor_kernel;  // predictor_kernel "" = not predicted (layout op, 0 ms)
  std::string kernel;                      // builder kernel of the config ("" for layout ops)
  KernelConfig config = Json::object();
  std::vector<double> features;  // the row given to predictor_kernel
  double latency_ms = 0;         // total for the kernel (all groups of a grouped conv)
  int64_t groups = 1;
  std::string note;              // how the kernel was covered when not by its own predictor
  std::vector<std::string> nodes;
  // Predicted by another kernel's regressor: the predictor has no `kernel` (an element-wise op has no kernel of
  // its own and is always predicted so).
  bool stand_in = false;
};

struct UncoveredOp {
  std::string node, type, reason;
};

struct ModelPrediction {
  std::string model;
  double latency_ms = 0;   // (unscaled_ms + (kernels_ms - unscaled_ms) × composition_factor) × neighbour_factor
  double kernels_ms = 0;   // sum of kernels[i].latency_ms
  double unscaled_ms = 0;  // of kernels_ms, what the composition's unscaled kernels take
  double footprint_mb = 0;  // model_footprint_mb
  double composition_factor = 1;  // 1 without a calibrated composition
  double neighbour_factor = 1;     // the composition's neighbours' correction; 1 without one
  std::vector<KernelPrediction> kernels;
  std::vector<UncoveredOp> uncovered;
  size_t node_count = 0;  // IR nodes without graph inputs, for the uncovered share
  // "kernel -> stand-in" (an element-wise op's kernel is its op) → how many of the kernels were predicted so.
  std::map<std::string, size_t> stand_ins() const;
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

 private:
  struct State;
  explicit LatencyPredictor(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  std::shared_ptr<const State> state_;
};

// Parses "name:1x3x224x224" (the --input-shape flag). Malformed → Error showing the expected form.
std::pair<std::string, Shape> parse_input_shape(const std::string& text);

}  // namespace nnmeter
