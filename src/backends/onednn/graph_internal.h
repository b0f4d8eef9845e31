// Helpers shared by the loading stages of the onednn_cpu engine (folding, shapes, fusion).
#pragma once

#include <fmt/format.h>

#include "backends/onednn/graph.h"
#include "onnx_io/shape_rules.h"

namespace nnmeter::onednn {

// Reads attributes of one node and turns every problem into a one-line Error naming op, node and
// attribute. `known` lists the attributes the engine implements; anything else present is rejected
// rather than silently ignored.
class Attrs {
 public:
  Attrs(const onnx::NodeProto& node, const std::string& origin);

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
  std::string label() const;  // "Conv node 'conv1'"

 private:
  const onnx::AttributeProto* find(const std::string& name) const;
  const onnx::NodeProto& node_;
  const std::string& origin_;
};

std::string node_label(const onnx::NodeProto& node);

// Normalizes a possibly negative axis against `rank`; throws via attrs when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, const Attrs& attrs, const char* attribute);

using onnx_io::broadcast_shapes;

// Evaluates a node whose inputs are all constants (only their shapes for Shape and Size) by its op's
// fold rule; returns false when the op must run at inference time instead.
bool fold_node(const Graph& graph, const onnx::NodeProto& node, const std::vector<int>& inputs,
               std::vector<HostTensor>& outputs);

// Checks a runtime node and computes its output shapes.
std::vector<Shape> infer_runtime_shapes(const Graph& graph, const Node& node);

// The oneDNN eltwise steps computing an ONNX activation node (HardSigmoid needs two); empty when the
// node is not an activation.
std::vector<PostOp> eltwise_chain(const Graph& graph, const Node& node);

// BatchNormalization folding and post-op fusion over the runtime nodes.
void fuse_graph(Graph& graph);

// Shape rules shared by folding and runtime shape inference.
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

// Shape helpers for pads/pooling/conv.
struct SpatialParams {
  Shape kernel, strides, dilations, pad_begin, pad_end;
  Shape explicit_pad_end;  // pad_end before ceil_mode added trailing padding
};
// Resolves auto_pad/pads/strides/dilations (and ceil_mode when `allow_ceil`) for an input of shape `in`
// (N, C, spatial...) and kernel `kernel`; returns the output spatial dims.
Shape conv_like_output(const Shape& in, SpatialParams& p, const Attrs& attrs, bool allow_ceil);

}  // namespace nnmeter::onednn
