// A detected kernel → the builder kernel it is an instance of, with that kernel's config keys (the ones
// src/kernels/ builds models from and the feature parsers read): conv family HW, CIN, COUT, KERNEL_SIZE,
// STRIDES; pooling HW, CIN, KERNEL_SIZE, POOL_STRIDES; fc CIN, COUT; concat HW, CIN1..CIN4; channelshuffle HW,
// CIN (and GROUPS when not 2); the transformer kernels T, CIN (and COUT for linear), matmul B, M, K, N;
// everything else HW, CIN. The config is read from the kernel's first compute node (nn-Meter's first-node
// rule); leading layout ops of a fused kernel cost nothing and carry no config.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "detection/internal.h"
#include "nnmeter/registry.h"

namespace nnmeter::detection {

int64_t spatial_size(const Shape& s) {
  if (s.size() <= 2) return 1;
  if (s.size() == 4) {
    if (s[2] == s[3]) return s[2];
    return std::max<int64_t>(1, std::llround(std::sqrt(static_cast<double>(s[2]) * static_cast<double>(s[3]))));
  }
  int64_t n = 1;
  for (size_t i = 2; i < s.size(); ++i) n *= s[i];
  return std::max<int64_t>(1, std::llround(std::sqrt(static_cast<double>(n))));
}

int64_t channels(const Shape& s) {
  if (s.empty()) return 1;
  return s.size() == 1 ? s[0] : s[1];
}

namespace {

const std::set<std::string>& builtin_kernel_names() {
  static const std::set<std::string> names = [] {
    std::set<std::string> s;
    for (const auto& k : builtin_kernels()) s.insert(k.name);
    return s;
  }();
  return names;
}

// Ops whose cost is a pass over their output, like the relu kernel's.
const std::set<std::string>& elementwise_types() {
  static const std::set<std::string> types = {
      "mul",  "sub",  "div",  "sigmoid", "hardsigmoid", "clip", "leakyrelu", "prelu", "elu",     "selu",
      "celu", "tanh", "softplus", "softsign", "exp", "log", "sqrt", "pow", "neg", "abs", "erf", "reciprocal",
      "max",  "min",  "sum",  "mean", "cast", "logsoftmax", "thresholdedrelu", "mish",
      // A transpose copies its input into the new order, a gather or a slice the elements it picks (a ViT's
      // class token, Swin's roll): one pass over the output, as attention's head split and merge cost on an
      // engine that does not fold them into the matmul.
      "transpose", "gather", "slice"};
  return types;
}

int64_t attr_int(const Json& attr, const char* key, int64_t fallback) {
  auto it = attr.find(key);
  return it != attr.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

// A square stand-in for a (possibly non-square) window attribute: k for k×k, round(sqrt(kh·kw)) otherwise,
// which keeps the window area and so the FLOPs.
int64_t square_of(const IrNode& n, const char* key, int64_t fallback) {
  auto it = n.attr.find(key);
  if (it == n.attr.end() || !it->is_array() || it->empty()) return fallback;
  double area = 1;
  for (const auto& v : *it) {
    if (!v.is_number() || !(v.get<double>() > 0))
      throw Error(fmt::format("node '{}' ({}): attribute '{}' must be a list of positive numbers, got {}", n.name, n.type,
                              key, it->dump()));
    area *= v.get<double>();
  }
  return std::max<int64_t>(1, std::llround(std::pow(area, 1.0 / static_cast<double>(it->size()))));
}

std::string join_types(const std::vector<const Unit*>& units) {
  std::string s;
  for (const auto* u : units) s += (s.empty() ? "" : "-") + u->type;
  return s;
}

void unsupported(DetectedKernel& k, std::string reason) {
  k.kind = KernelKind::unsupported;
  k.kernel.clear();
  k.config = Json::object();
  k.reason = std::move(reason);
}

void hw_cin(KernelConfig& c, const Shape& s) {
  c["HW"] = spatial_size(s);
  c["CIN"] = channels(s);
}

// The builder kernel of a fused conv: the one of its ops when the builder has it. Exporters fold
// BatchNormalization into the conv's weights (torch.onnx.export does), and a BN the backend folds costs
// nothing either, so conv-swish is an instance of conv-bn-swish and the other way round. Otherwise the
// kernel is named by its ops, and prediction picks a stand-in and says which (stand_in_kernels).
std::string conv_kernel(const std::string& type, const std::string& key) {
  if (key == type) return type + "-block";
  const auto& names = builtin_kernel_names();
  if (names.count(key)) return key;
  const std::string rest = key.substr(type.size());  // "-swish", "-bn-swish", ...
  const bool has_bn = rest == "-bn" || rest.rfind("-bn-", 0) == 0;
  const std::string toggled = has_bn ? type + rest.substr(3) : type + "-bn" + rest;
  if (names.count(toggled)) return toggled;
  if (toggled == type && names.count(type + "-block")) return type + "-block";
  return key;
}

void conv_config(const IrNode& n, const std::string& type, const std::string& key, DetectedKernel& k) {
  const Shape& in = n.input_shapes[0];
  const Shape& out = n.output_shapes[0];
  if (in.size() != 4 || out.size() != 4) return unsupported(k, "only 2-D convolutions have a kernel, got input " + fmt::format("{}", fmt::join(in, "x")));
  const int64_t group = std::max<int64_t>(1, attr_int(n.attr, "group", 1));
  k.kernel = conv_kernel(type, key);
  KernelConfig& c = k.config;
  c["HW"] = spatial_size(in);
  const int64_t side = square_of(n, "kernel_shape", 1);
  c["KERNEL_SIZE"] = side;
  c["STRIDES"] = square_of(n, "strides", 1);
  // Inception's 1×7 and 7×1 convs are a large share of its predicted time; predicted as the 3×3 they round to, they
  // took 9/7 of their work and over-predicted Inception v3 (docs/cli-predict.md).
  if (const auto shape = n.attr.find("kernel_shape"); shape != n.attr.end() && shape->is_array()) {
    double area = 1;
    for (const auto& v : *shape) area *= v.get<double>();  // positive numbers: square_of checked them
    k.work = area / static_cast<double>(side * side);
  }
  if (type == "dwconv") {
    c["CIN"] = in[1];
    c["COUT"] = in[1];
    return;
  }
  c["CIN"] = in[1];
  c["COUT"] = out[1];
  // A grouped conv is a gconv-* kernel (nn-Meter predicted it as one dense conv, e.g. ResNeXt = ResNet); a
  // predictor without one predicts it as GROUPS convs of one group (prediction/predictor.cpp).
  if (group > 1) {
    k.kernel = "g" + k.kernel;
    c["GROUPS"] = group;
  }
}

void concat_config(const IrNode& n, DetectedKernel& k) {
  const auto& ins = n.input_shapes;
  if (ins.size() < 2) {
    k.kind = KernelKind::layout;  // a concat of one tensor is a copy the runtime elides
    return;
  }
  k.kernel = "concat";
  k.config["HW"] = spatial_size(n.output_shapes[0]);
  // Every input, also past the builder's four: detection (detection/detection.cpp) splits a wider one.
  for (size_t i = 0; i < ins.size(); ++i) k.config["CIN" + std::to_string(i + 1)] = channels(ins[i]);
}

// Element-wise kernels with a builder kernel of their own.
std::string elementwise_kernel(const std::string& type, const std::string& key) {
  if (type == "bn") return key.rfind("bn-relu", 0) == 0 ? "bnrelu" : "bn";
  if (type == "relu" || type == "relu6") return "relu";
  if (type == "add") return key.rfind("add-relu", 0) == 0 ? "addrelu" : "add";
  return type;  // hswish, swish
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= std::max<int64_t>(d, 1);
  return n;
}

// The token kernels (src/kernels/transformer_kernels.cpp): CIN the last axis, T every other one but the batch.
void tokens_config(KernelConfig& c, const Shape& s, int64_t batch) {
  c["CIN"] = s.empty() ? 1 : s.back();
  c["T"] = std::max<int64_t>(1, numel(s) / c["CIN"].get<int64_t>() / batch);
}

void transformer_config(const std::string& type, const IrNode& n, const std::string& key, int64_t batch,
                        DetectedKernel& k) {
  const Shape& in = n.input_shapes[0];
  const Shape& out = n.output_shapes[0];
  if (type == "matmul") {
    if (n.input_shapes.size() < 2 || in.empty() || out.size() < 2)
      return unsupported(k, fmt::format("a matmul of {} needs matrices on both sides", fmt::join(in, "x")));
    const int64_t m = out[out.size() - 2], nn = out.back();
    k.kernel = "matmul";
    // An empty M or N is refused below, with the other keys' checks.
    const int64_t b = numel(out) / std::max<int64_t>(m, 1) / std::max<int64_t>(nn, 1) / batch;
    k.config = {{"B", std::max<int64_t>(1, b)}, {"M", m}, {"K", in.back()}, {"N", nn}};
    return;
  }
  tokens_config(k.config, in, batch);
  if (type == "linear") {
    // The MLP's first Linear with its GELU, where the backend runs them as one kernel (BF_linear_gelu).
    k.kernel = key.rfind("linear-gelu", 0) == 0 ? "linear-gelu" : "linear";
    k.config["COUT"] = out.empty() ? 1 : out.back();
  } else {
    k.kernel = type;  // layernorm, gelu, softmax
  }
}

// `type` is the unit's type (hswish, se, ...); `d` its anchor node, whose shapes give the config.
void describe_compute(const std::string& type, const DetNode& d, const std::string& key, int64_t batch,
                      DetectedKernel& k) {
  const IrNode& n = *d.ir;
  if (n.output_shapes.empty() || (n.input_shapes.empty() && type != "placeholder"))
    return unsupported(k, "node has no input or output shape");
  const Shape& in = n.input_shapes[0];
  const Shape& out = n.output_shapes[0];
  if (type == "conv" || type == "dwconv") return conv_config(n, type, key, k);
  if (type == "linear" || type == "matmul" || type == "layernorm" || type == "gelu" || type == "softmax")
    return transformer_config(type, n, key, batch, k);
  // A Gemm over rows that are not the batch is a Linear on tokens: nn.MultiheadAttention's output projection
  // runs on [T·N, C].
  if (type == "fc" && in.size() == 2 && in[0] != batch) return transformer_config("linear", n, key, batch, k);
  // nn.MultiheadAttention's packed Q, K, V projection sliced three ways: a copy of the slices, no channel split
  // of an image (the split kernel's [N, C, H, W]).
  if (type == "split" && in.size() != 4) {
    k.kind = KernelKind::elementwise;
    hw_cin(k.config, in);
    return;
  }
  if (type == "fc") {
    k.kernel = "fc";
    k.config = {{"CIN", in.back()}, {"COUT", out.back()}};
  } else if (type == "maxpool" || type == "avgpool") {
    k.kernel = type;
    hw_cin(k.config, in);
    k.config["KERNEL_SIZE"] = square_of(n, "kernel_shape", 1);
    k.config["POOL_STRIDES"] = square_of(n, "strides", 1);
  } else if (type == "globalavgpool") {
    k.kernel = "global-avgpool";
    hw_cin(k.config, in);  // the real input size (nn-Meter always used 1)
  } else if (type == "concat") {
    concat_config(n, k);
  } else if (type == "split" || type == "channelshuffle" || type == "se") {
    k.kernel = type;
    hw_cin(k.config, in);
    // The anchor is the shuffle's Reshape to [N, G, C/G, H, W]; two groups stay implicit, nn-Meter's config.
    if (type == "channelshuffle" && out.size() == 5 && out[1] != 2 && out[1] > 1 && out[1] * out[2] == channels(in))
      k.config["GROUPS"] = out[1];
  } else if (type == "bn" || type == "relu" || type == "relu6" || type == "hswish" || type == "swish" ||
             (type == "add" && d.in.size() >= 2)) {
    k.kernel = elementwise_kernel(type, key);
    hw_cin(k.config, type == "add" ? out : in);
  } else if (type == "pad" && in == out) {
    k.kind = KernelKind::layout;  // a Pad of zeros (DenseNet's AvgPool as exported) copies nothing
  } else if (type == "add" || type == "pad" || elementwise_types().count(type)) {
    // An element-wise op without a kernel of its own (a bias add, Mul, Sigmoid, a Pad, ...): one pass over
    // its output, predicted by an element-wise predictor.
    k.kind = KernelKind::elementwise;
    k.binary = d.in.size() >= 2;
    hw_cin(k.config, out);
  } else {
    unsupported(k, "no kernel covers " + n.type + " ops");
  }
}

}  // namespace

bool is_layout_type(const std::string& type) {
  return type == "reshape" || type == "flatten" || type == "identity" || type == "dropout";
}

int64_t model_batch(const std::vector<DetNode>& graph) {
  for (const auto& d : graph)
    if (d.type == "placeholder" && !d.ir->output_shapes.empty() && !d.ir->output_shapes[0].empty())
      return std::max<int64_t>(1, d.ir->output_shapes[0][0]);
  return 1;
}

void describe_kernel(const std::vector<DetNode>& graph, const std::vector<const Unit*>& units, int64_t batch,
                     DetectedKernel& k) {
  std::vector<const Unit*> compute;
  for (const auto* u : units)
    if (!is_layout_type(u->type)) compute.push_back(u);
  k.kind = KernelKind::compute;
  if (compute.empty()) {
    k.kind = KernelKind::layout;
    return;
  }
  describe_compute(compute.front()->type, graph[static_cast<size_t>(compute.front()->anchor)], join_types(compute), batch,
                   k);
  if (k.kind == KernelKind::unsupported || k.kind == KernelKind::layout) return;
  for (const auto& [key, value] : k.config.items())
    if (value.get<int64_t>() < 1) return unsupported(k, fmt::format("empty tensor ({} = {})", key, value.get<int64_t>()));
}

}  // namespace nnmeter::detection

namespace nnmeter {

const char* to_string(KernelKind kind) {
  switch (kind) {
    case KernelKind::compute: return "compute";
    case KernelKind::elementwise: return "elementwise";
    case KernelKind::layout: return "layout";
    case KernelKind::unsupported: return "unsupported";
  }
  return "?";
}

}  // namespace nnmeter
