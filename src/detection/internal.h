// Internals of kernel detection shared by the files of src/detection/: the detection graph, nn-Meter's
// multi-op units and the kernel configs read from them. The entry points are public (nnmeter/prediction.h:
// detect_kernels, FusionRules).
#pragma once

#include "nnmeter/prediction.h"

namespace nnmeter::detection {

// Spatial size of an NCHW activation: H for square maps, else round(sqrt(H·W)) so HW² keeps the element
// count; 1 for [N, C] tensors; for other ranks the product of the dims after the channel.
int64_t spatial_size(const Shape& s);
// Channels (dim 1), or the last dim of a rank-1 tensor.
int64_t channels(const Shape& s);

// ---- units.cpp: the detection graph and nn-Meter's multi-op units

// One IR node with its normalised type (the rule tester's operator names: conv, dwconv, bn, relu,
// relu6, fc, globalavgpool, ...; other ops lower-cased: mul, sigmoid, transpose, ...).
struct DetNode {
  std::string type;
  std::vector<int> in;   // producer of each runtime input (repeats kept)
  std::vector<int> out;  // consumers, each once, ascending
  const IrNode* ir = nullptr;
};

std::string canonical_type(const IrNode& node);
// Nodes indexed like ir.nodes. Unknown inbound names → Error.
std::vector<DetNode> build_detection_graph(const ModelIr& ir);

// A node, or a multi-op block detected as one (hswish, swish, se, channelshuffle, globalavgpool with its
// flatten, split from sibling slices). `nodes` ascending; `anchor` is the node a kernel config is read from.
struct Unit {
  std::string type;
  std::vector<int> nodes;
  int anchor = -1;
};
// Every node except placeholders ends up in exactly one unit. Units come in order of their first node.
std::vector<Unit> form_units(const std::vector<DetNode>& graph);

// ---- kernel_configs.cpp

// Layout/metadata op types: 0 ms by construction.
bool is_layout_type(const std::string& type);
// The model's batch: dim 0 of its first input (1 without one). Token kernels count every other axis.
int64_t model_batch(const std::vector<DetNode>& graph);
// Fills kind, kernel, config, binary and reason of a kernel made of `units` (root first).
void describe_kernel(const std::vector<DetNode>& graph, const std::vector<const Unit*>& units, int64_t batch,
                     DetectedKernel& k);

}  // namespace nnmeter::detection
