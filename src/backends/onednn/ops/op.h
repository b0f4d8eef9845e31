// The onednn_cpu op table. Each op is one OpDef in one file of this folder: the attributes it accepts,
// its shape rule, its load-time evaluation and its lowering to oneDNN primitives. The loader, the
// folder, shape inference and the engine all dispatch through the table, so adding an op touches only
// the file of its family (a new family is a new file; the build picks it up).
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "backends/onednn/lowering.h"

namespace nnmeter::onednn {

// A runtime node being checked; attribute errors name op, node and attribute.
struct ShapeContext {
  const Graph& g;
  const Node& n;
  Attrs attrs;

  const Shape& in(size_t i) const;
  bool has_input(size_t i) const;
  void require_rank(const Shape& s, size_t lo, size_t hi, const char* what) const;
};

// A node evaluated at load time: its inputs are constants (only their shapes for Shape and Size).
struct FoldContext {
  const Graph& g;
  const onnx::NodeProto& node;
  const std::vector<int>& in;
  Attrs attrs;

  const HostTensor& c(size_t i) const;
  const Shape& shape_of(size_t i) const;
};

using ShapeRule = std::vector<Shape> (*)(const ShapeContext&);
// Appends the outputs and returns true, or returns false when the node must run at inference time.
using FoldRule = bool (*)(const FoldContext&, std::vector<HostTensor>&);
using LowerRule = void (*)(Lowering&, const Node&);
using EltwiseRule = std::vector<PostOp> (*)(const Graph&, const Node&);

struct OpDef {
  std::string name = {};
  // Attributes the runtime op implements; any other one present is rejected before the shape rule.
  std::vector<std::string> attributes = {};
  ShapeRule shape = nullptr;  // null for ops that only ever run at load time
  FoldRule fold = nullptr;    // null for ops never evaluated at load time
  LowerRule lower = nullptr;  // null for ops that only ever run at load time
  // Activations: the oneDNN eltwise steps computing the op, which other primitives can also fuse.
  EltwiseRule eltwise = nullptr;
  // Inputs from this index on are weights and parameters that must be load-time constants; -1: none.
  int parameters_from = -1;
  bool folds_from_shapes = false;  // evaluated from its inputs' static shapes, not their values
  bool picks_layout = false;       // its primitive chooses its input layout (format_tag::any)

  bool runs() const { return lower != nullptr; }
  bool is_parameter_input(size_t i) const { return parameters_from >= 0 && i >= static_cast<size_t>(parameters_from); }
};

// Adds a family's ops to the table; each ops/*.cpp holds one static OpRegistration.
struct OpRegistration {
  explicit OpRegistration(std::vector<OpDef> ops);
};

const std::vector<OpDef>& op_table();
const OpDef* find_op(const std::string& name);

// -------------------------------------------------------------------------------------------------
// Shared by several op files

PostOp eltwise_post_op(dnnl::algorithm alg, float alpha, float beta, const Node& from);

bool emit(std::vector<HostTensor>& out, HostTensor t);
HostTensor scalar_i64(const Shape& dims, std::vector<double> data);
// Calls fn(out_index, in_offset) for every element of a strided view (out dims, in strides, in offset).
void for_each_view(const Shape& dims, const Shape& in_strides, int64_t offset,
                   const std::function<void(int64_t, int64_t)>& fn);
HostTensor broadcast_binary(const HostTensor& a, const HostTensor& b, const Shape& out,
                            const std::function<double(double, double)>& fn);

// The destination of a conv; with a sum post-op it must already hold the residual.
memory conv_dst(Lowering& cx, const Node& n, const memory::desc& md);
// Zero-or-value padding of `src` into a new dense buffer; the border is written once, here.
memory padded(Lowering& cx, const memory& src, const Shape& in, const Shape& begin, const Shape& end, float value);
memory pooling(Lowering& cx, const memory& src, dnnl::algorithm alg, const SpatialParams& p, const Shape& out, const Node& n);
SpatialParams global_params(const Shape& xs);

}  // namespace nnmeter::onednn
