// The onednn_cpu engine's view of an ONNX model: the front end's graph (onnx_io/graph.h: static shapes,
// load-time constants folded, runtime nodes checked) plus what the engine decided at load time for each
// node: BatchNormalization folded into a conv, activations and residual additions fused as oneDNN
// post-ops, a channel shuffle merged into its Concat, GELU and LayerNorm patterns run as one primitive.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <vector>

#include "onnx_io/graph.h"

namespace nnmeter::onednn {

using onnx_io::from_tensor_proto;
using onnx_io::HostTensor;
using onnx_io::Node;
using onnx_io::numel;
using onnx_io::shape_str;
using onnx_io::to_tensor_proto;
using onnx_io::Value;

// An activation or accumulation the engine runs inside the producing primitive (oneDNN post-ops).
struct PostOp {
  enum class Kind { Eltwise, Sum };
  Kind kind = Kind::Eltwise;
  dnnl::algorithm alg = dnnl::algorithm::eltwise_relu;
  float alpha = 0.f;
  float beta = 0.f;
  int residual = -1;  // Sum: the value added into the output
  std::string from;   // the ONNX node fused in, for the plan file
};

// A layer normalization over the dimensions from `axis` on; scale and bias broadcast to those dimensions.
struct LayerNorm {
  int64_t axis = -1;
  float epsilon = 1e-5f;
  std::optional<HostTensor> scale, bias;
};

// The engine's load-time decisions about one node.
struct Fusion {
  bool removed = false;  // folded into another node
  std::vector<PostOp> post_ops;
  std::optional<HostTensor> weight, bias;  // Conv after BatchNormalization folding; MatMul's folded bias Add
  std::vector<std::string> fused;          // names of ONNX nodes merged into this one
  int64_t shuffle_groups = 0;              // Concat: a channel shuffle (and a Split) of its output merged in
  // The first node of an exported pattern that oneDNN runs as one primitive, computed from the node's
  // input 0 instead of its own op: GELU's erf chain as eltwise steps, LayerNorm before opset 17.
  std::vector<PostOp> eltwise;
  std::optional<LayerNorm> layer_norm;
};

struct Graph : onnx_io::Graph {
  std::vector<Fusion> fusions;  // one per node, by Node::id

  const Fusion& of(const Node& n) const { return fusions.at(static_cast<size_t>(n.id)); }
  Fusion& of(const Node& n) { return fusions.at(static_cast<size_t>(n.id)); }
};

// Loads an ONNX file through the front end for the ops onednn_cpu runs, then folds BatchNormalization and
// fuses post-ops.
Graph load_graph(const fs::path& onnx_path);
Graph load_graph(onnx::ModelProto model, const std::string& origin);

using onnx_io::folded_model;
using onnx_io::is_parameter_input;

// Op types the engine runs at inference time (the ops with a lowering), sorted.
const std::vector<std::string>& supported_runtime_ops();

}  // namespace nnmeter::onednn
