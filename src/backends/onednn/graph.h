// The onednn_cpu engine's view of an ONNX model: every tensor with a static shape, every load-time
// constant already computed (initializers, Constant nodes, shape subgraphs), and only the nodes that
// must run at inference time left, each checked against what the engine supports.
#pragma once

#include <onnx/onnx_pb.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "nnmeter/common.h"
#include "onnx_io/tensor.h"

namespace nnmeter::onednn {

using onnx_io::from_tensor_proto;
using onnx_io::HostTensor;
using onnx_io::numel;
using onnx_io::shape_str;
using onnx_io::to_tensor_proto;

struct Value {
  std::string name;
  Shape shape;
  std::optional<HostTensor> constant;  // set when known at load time
  int producer = -1;                   // node index, -1 for graph inputs and constants
  std::vector<int> consumers;          // node indices (a node may appear twice)
  bool graph_input = false;
  bool graph_output = false;
};

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

struct Node {
  std::string op;
  std::string name;
  const onnx::NodeProto* proto = nullptr;
  std::vector<int> inputs;  // value indices; -1 for an omitted optional input
  std::vector<int> outputs;
  bool removed = false;     // folded into another node
  std::vector<PostOp> post_ops;
  std::optional<HostTensor> weight, bias;  // Conv after BatchNormalization folding
  std::vector<std::string> fused;          // names of ONNX nodes merged into this one
  int64_t shuffle_groups = 0;              // Concat: a channel shuffle (and a Split) of its output merged in
};

struct Graph {
  onnx::ModelProto model;
  std::string origin;  // the file name for messages
  int64_t opset = 13;
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;   // runtime graph inputs (no initializer)
  std::vector<int> outputs;
  std::unordered_map<std::string, int> value_index;

  const Value& value(int id) const { return values.at(static_cast<size_t>(id)); }
  bool is_const(int id) const { return id >= 0 && values.at(static_cast<size_t>(id)).constant.has_value(); }
  const HostTensor& constant(int id) const;
};

// Reads, checks and simplifies an ONNX file: constant folding, static shapes, validation of every op and
// attribute (throws Error naming op, node and attribute), BatchNormalization folding and post-op fusion.
Graph load_graph(const fs::path& onnx_path);
Graph load_graph(onnx::ModelProto model, const std::string& origin);

// The simplified model as ONNX: the runtime nodes with folded constants as initializers. Fusion is an
// engine decision and is not written back (the file stays runnable by any ONNX runtime).
onnx::ModelProto folded_model(const Graph& graph);

// Op types the engine runs at inference time, and the input slots that must be load-time constants.
const std::vector<std::string>& supported_runtime_ops();
bool is_parameter_input(const std::string& op, size_t input_index);

}  // namespace nnmeter::onednn
