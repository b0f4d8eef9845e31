// What the engine's loading passes and lowerings share: the front end's attribute reader and shape rules,
// seen from the engine's namespace, and the fusion passes.
#pragma once

#include <fmt/format.h>

#include "backends/onednn/graph.h"
#include "onnx_io/shape_rules.h"

namespace nnmeter::onednn {

using onnx_io::Attrs;
using onnx_io::axes_of;
using onnx_io::broadcast_shapes;
using onnx_io::conv_like_output;
using onnx_io::node_label;
using onnx_io::normalize_axis;
using onnx_io::row_major_strides;
using onnx_io::slice_spec;
using onnx_io::SliceSpec;
using onnx_io::softmax_default_axis;
using onnx_io::SpatialParams;
using onnx_io::split_sizes;
using onnx_io::transpose_perm;

// The oneDNN eltwise steps computing an ONNX activation node (HardSigmoid needs two); empty when the
// node is not an activation.
std::vector<PostOp> eltwise_chain(const Graph& graph, const Node& node);

// BatchNormalization folding and post-op fusion over the runtime nodes.
void fuse_graph(Graph& graph);

}  // namespace nnmeter::onednn
