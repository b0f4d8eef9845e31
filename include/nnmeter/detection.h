// Kernel detection: a model's graph split into the kernels the backend runs, by the backend's fusion rules
// (fusion_rules.json of a predictor folder).
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "nnmeter/common.h"
#include "nnmeter/kernel.h"
#include "nnmeter/model_ir.h"

namespace nnmeter {

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
  // HW, CIN, COUT, KERNEL_SIZE, STRIDES, ...; a grouped conv (kernel gconv-*) has GROUPS, CIN and COUT whole.
  KernelConfig config = Json::object();
  bool binary = false;  // elementwise with two runtime operands (Mul, Sub, Div of two tensors)
  std::string reason;   // unsupported: why
  std::vector<std::string> nodes;  // IR node names, topological order
  // The share of its config's work the kernel does: a conv of a non-square kernel (1×7) has the square of the same
  // area's rounded side as KERNEL_SIZE (3), the only shape kernels are built and sampled in, and does 7/9 of its work.
  double work = 1;
};

std::vector<DetectedKernel> detect_kernels(const ModelIr& ir, const FusionRules& rules);

}  // namespace nnmeter
