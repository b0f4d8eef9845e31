// The ONNX front end every engine loads models through: an ONNX file read into a Graph where every tensor
// has a static shape, every load-time constant is computed (initializers, Constant nodes, shape subgraphs)
// and only the nodes that must run at inference time are left, each checked against the op rules of
// onnx_io/ops/. onednn_cpu lowers that graph to oneDNN primitives; the TFLite export (and xnnpack_cpu
// through it) writes it as a .tflite model.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "nnmeter/common.h"
#include "onnx_io/tensor.h"

namespace nnmeter::onnx_io {

struct Value {
  std::string name;
  Shape shape;
  std::optional<HostTensor> constant;  // set when known at load time
  int producer = -1;                   // node index, -1 for graph inputs and constants
  std::vector<int> consumers;          // node indices (a node may appear twice)
  bool graph_input = false;
  bool graph_output = false;
};

// A node that runs at inference time.
struct Node {
  int id = -1;  // its index in Graph::nodes
  std::string op;
  std::string name;
  const onnx::NodeProto* proto = nullptr;
  std::vector<int> inputs;  // value indices; -1 for an omitted optional input
  std::vector<int> outputs;
};

class Attrs;

struct Graph {
  onnx::ModelProto model;
  std::string origin;  // the file name for messages
  std::string engine;  // who loads it ("onednn_cpu"), for messages
  int64_t opset = 13;
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;   // runtime graph inputs (no initializer)
  std::vector<int> outputs;
  std::unordered_map<std::string, int> value_index;

  const Value& value(int id) const { return values.at(static_cast<size_t>(id)); }
  bool is_const(int id) const { return id >= 0 && values.at(static_cast<size_t>(id)).constant.has_value(); }
  const HostTensor& constant(int id) const;
  Attrs attrs(const onnx::NodeProto& node) const;
};

// The engine a graph is loaded for: its name (in every message) and the ops it runs at inference time,
// sorted. A node of any other op that cannot be folded at load time is refused with the list.
struct Runtime {
  std::string engine;
  std::vector<std::string> ops;
};

// Reads, checks and simplifies an ONNX file: constant folding, static shapes, validation of every runtime
// op and attribute (throws Error naming engine, op, node and attribute).
Graph load_graph(const fs::path& onnx_path, const Runtime& runtime);
Graph load_graph(onnx::ModelProto model, const std::string& origin, const Runtime& runtime);

// Names, op types and string attributes become JSON (the engines' plans, the nn-Meter IR, --json output),
// which holds UTF-8 only, while protobuf's strings are any bytes: every command that reads a model refuses
// one whose text is not UTF-8 with these one-line messages (throw Error).
// check_value_names: the graph's inputs, outputs, value_info and initializers.
void check_node_text(const onnx::NodeProto& node, const std::string& origin);
void check_value_names(const onnx::GraphProto& graph, const std::string& origin);

// The simplified model as ONNX: the runtime nodes with folded constants as initializers (the file stays
// runnable by any ONNX runtime).
onnx::ModelProto folded_model(const Graph& graph);

// The ops the front end can run at inference time (those with a shape rule), sorted, and the input slots
// that must be load-time constants.
const std::vector<std::string>& runtime_ops();
bool is_parameter_input(const std::string& op, size_t input_index);

// Reads attributes of one node and turns every problem into a one-line Error naming engine, op, node and
// attribute. `only` lists the attributes the rules implement; anything else present is rejected rather
// than silently ignored.
class Attrs {
 public:
  Attrs(const onnx::NodeProto& node, const Graph& graph);

  bool has(const std::string& name) const;
  int64_t i(const std::string& name, int64_t fallback) const;
  float f(const std::string& name, float fallback) const;
  std::string s(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  const onnx::TensorProto* tensor(const std::string& name) const;

  // Throws for any attribute not in `known`.
  void only(const std::vector<std::string>& known) const;
  [[noreturn]] void fail(const std::string& attribute, const std::string& why) const;

  const onnx::NodeProto& node() const { return node_; }
  const std::string& engine() const { return graph_.engine; }
  std::string label() const;  // "Conv node 'conv1'"

 private:
  const onnx::AttributeProto* find(const std::string& name) const;
  const onnx::NodeProto& node_;
  const Graph& graph_;
};

std::string node_label(const onnx::NodeProto& node);

// Normalizes a possibly negative axis against `rank`; throws via attrs when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, const Attrs& attrs, const char* attribute);

// Shape rules the op rules and the engines' lowerings share.
Shape reshape_shape(const Shape& in, const std::vector<int64_t>& spec, bool allowzero, const Attrs& attrs);
Shape unsqueeze_shape(const Shape& in, std::vector<int64_t> axes, const Attrs& attrs);
Shape squeeze_shape(const Shape& in, std::vector<int64_t> axes, const Attrs& attrs);
Shape flatten_shape(const Shape& in, const Attrs& attrs);
std::vector<int64_t> transpose_perm(const Shape& in, const Attrs& attrs);
// A resolved Slice: per-dimension start, step and output size.
struct SliceSpec {
  Shape start, step, dims;
};
SliceSpec slice_spec(const Graph& g, const Shape& in, const std::vector<int>& inputs, const Attrs& attrs);
// Axes given either as attribute (older opsets) or as constant input `index` (newer opsets).
std::optional<std::vector<int64_t>> axes_of(const Graph& g, const std::vector<int>& inputs, size_t index,
                                            const Attrs& attrs, const char* attribute = "axes");
// Split sizes along `axis` for `outputs` outputs.
std::vector<int64_t> split_sizes(const Graph& g, const std::vector<int>& inputs, int64_t dim, int outputs,
                                 const Attrs& attrs);

// Softmax's axis when the attribute is absent: 1 before opset 13, -1 from it on.
int64_t softmax_default_axis(const Graph& g);

// Shape helpers for pads/pooling/conv.
struct SpatialParams {
  Shape kernel, strides, dilations, pad_begin, pad_end;
  Shape explicit_pad_end;  // pad_end before ceil_mode added trailing padding
};
// Resolves auto_pad/pads/strides/dilations (and ceil_mode when `allow_ceil`) for an input of shape `in`
// (N, C, spatial...) and kernel `kernel`; returns the output spatial dims.
Shape conv_like_output(const Shape& in, SpatialParams& p, const Attrs& attrs, bool allow_ceil);

}  // namespace nnmeter::onnx_io
