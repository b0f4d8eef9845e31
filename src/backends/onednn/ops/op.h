// The onednn_cpu op table. Each op the engine runs is one OpDef in one file of this folder: its lowering
// to oneDNN primitives and, for activations, the eltwise steps other primitives can fuse. What the op
// accepts, its shape and its load-time evaluation are the front end's rules (onnx_io/ops/). The engine
// and the fusion passes dispatch through this table, so adding an op touches only the file of its family
// here and there (a new family is a new file; the build picks it up).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "backends/onednn/lowering.h"

namespace nnmeter::onednn {

using LowerRule = void (*)(Lowering&, const Node&);
using EltwiseRule = std::vector<PostOp> (*)(const Graph&, const Node&);

struct OpDef {
  std::string name = {};
  LowerRule lower = nullptr;
  // Activations: the oneDNN eltwise steps computing the op, which other primitives can also fuse.
  EltwiseRule eltwise = nullptr;
  bool picks_layout = false;  // its primitive chooses its input layout (format_tag::any)
};

// Adds a family's ops to the table; each ops/*.cpp holds one static OpRegistration.
struct OpRegistration {
  explicit OpRegistration(std::vector<OpDef> ops);
};

const std::vector<OpDef>& op_table();
const OpDef* find_op(const std::string& name);

// How a runtime node is lowered: as the pattern the passes collapsed into it (Fusion::eltwise,
// Fusion::layer_norm), else by its op's rule; null when the op has none.
LowerRule lowering_of(const Graph& graph, const Node& node);

// -------------------------------------------------------------------------------------------------
// Shared by several op files

PostOp eltwise_post_op(dnnl::algorithm alg, float alpha, float beta, const Node& from);
// The node's eltwise chain, then its fused post-ops, on input 0.
void lower_eltwise(Lowering& cx, const Node& n);
// LayerNormalization, or the LayerNorm pattern collapsed into the node (Fusion::layer_norm).
void lower_layer_norm(Lowering& cx, const Node& n);

// The destination of a conv; with a sum post-op it must already hold the residual.
memory conv_dst(Lowering& cx, const Node& n, const memory::desc& md);
// Zero-or-value padding of `src` into a new dense buffer; the border is written once, here.
memory padded(Lowering& cx, const memory& src, const Shape& in, const Shape& begin, const Shape& end, float value);
memory pooling(Lowering& cx, const memory& src, dnnl::algorithm alg, const SpatialParams& p, const Shape& out, const Node& n);
SpatialParams global_params(const Shape& xs);

}  // namespace nnmeter::onednn
