// Stitching single-operator ONNX models into test blocks. Every operator, builtin or plugin, only
// promises a whole one-operator model (Operator::build_onnx), so blocks are built by merging models:
// the second model's first input is bound to a tensor of the first, its other inputs become extra
// inputs of the block, its outputs become the block's outputs.
#pragma once

#include <onnx/onnx_pb.h>

#include "nnmeter/common.h"

namespace nnmeter::fusion {

onnx::ModelProto parse_model(const std::string& bytes, const std::string& origin);

// Graph inputs that are not initializers (exporters may list weights as inputs too).
std::vector<const onnx::ValueInfoProto*> real_inputs(const onnx::GraphProto& graph);

// Appends `part` to `base`: its first real input reads `bind` (a tensor of base), every other name of
// `part` gets `prefix` so nothing collides. Opsets merge to the higher version per domain. Throws Error
// naming `part_origin` when part has no input or its first input's shape differs from `bind`'s.
void append_model(onnx::ModelProto& base, const std::string& bind, const onnx::ModelProto& part, const std::string& prefix,
                  const std::string& part_origin);

// Removes `name` from the graph outputs (it becomes an internal tensor).
void drop_output(onnx::ModelProto& model, const std::string& name);

// first → second: the block of a BasicFusion test case. second's first input is first's first output,
// which is no longer an output of the block (so the backend is free to fuse across it).
onnx::ModelProto chain(const onnx::ModelProto& first, const onnx::ModelProto& second, const std::string& second_origin);

// The shapes of a model's real inputs without the batch axis, as origin_testcases.json records them.
std::vector<Shape> input_shapes(const onnx::ModelProto& model);

std::string serialize(const onnx::ModelProto& model);

}  // namespace nnmeter::fusion
