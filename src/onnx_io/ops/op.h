// The front end's op rules. Each op is one OpDef in one file of this folder: the attributes it accepts at
// inference time, its shape rule and its load-time evaluation. The loader (onnx_io/graph.cpp) dispatches
// through the table; what an engine does with a runtime node is the engine's own table (onednn_cpu's
// lowerings in backends/onednn/ops/, the TFLite export's in backends/tflite/export_ops/).
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

#include "onnx_io/graph.h"
#include "onnx_io/shape_rules.h"

namespace nnmeter::onnx_io {

// A runtime node being checked; attribute errors name engine, op, node and attribute.
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

struct OpDef {
  std::string name = {};
  // Attributes the runtime op implements; any other one present is rejected before the shape rule.
  std::vector<std::string> attributes = {};
  ShapeRule shape = nullptr;  // null for ops that only ever run at load time
  FoldRule fold = nullptr;    // null for ops never evaluated at load time
  // Inputs from this index on are weights and parameters that must be load-time constants; -1: none.
  int parameters_from = -1;
  bool folds_from_shapes = false;  // evaluated from its inputs' static shapes, not their values

  bool runs() const { return shape != nullptr; }
  bool is_parameter_input(size_t i) const { return parameters_from >= 0 && i >= static_cast<size_t>(parameters_from); }
};

// Adds a family's ops to the table; each ops/*.cpp holds one static OpRegistration.
struct OpRegistration {
  explicit OpRegistration(std::vector<OpDef> ops);
};

const std::vector<OpDef>& op_table();
const OpDef* find_op(const std::string& name);

// Evaluates a node whose inputs are all constants (only their shapes for Shape and Size) by its op's
// fold rule; returns false when the op must run at inference time instead.
bool fold_at_load(const Graph& graph, const onnx::NodeProto& node, const std::vector<int>& inputs,
                  std::vector<HostTensor>& outputs);

// Checks a runtime node and computes its output shapes.
std::vector<Shape> infer_runtime_shapes(const Graph& graph, const Node& node);

// -------------------------------------------------------------------------------------------------
// Shared by several op files

bool emit(std::vector<HostTensor>& out, HostTensor t);
HostTensor scalar_i64(const Shape& dims, std::vector<double> data);
// Calls fn(out_index, in_offset) for every element of a strided view (out dims, in strides, in offset).
void for_each_view(const Shape& dims, const Shape& in_strides, int64_t offset,
                   const std::function<void(int64_t, int64_t)>& fn);
HostTensor broadcast_binary(const HostTensor& a, const HostTensor& b, const Shape& out,
                            const std::function<double(double, double)>& fn);

}  // namespace nnmeter::onnx_io
