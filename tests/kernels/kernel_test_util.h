// Helpers for the kernel tests: parse a generated model, run the ONNX checker and strict shape inference,
// and read back the inferred output shapes.
#pragma once

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <string>
#include <vector>

#include "nnmeter/common.h"

namespace nnmeter::test {

inline onnx::ModelProto parse_model(const std::string& bytes) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) throw std::runtime_error("model bytes do not parse as ONNX");
  return model;
}

// Checks the model, forgets the output shapes the builder declared, re-infers them with strict shape
// inference and returns them (so a wrong declared shape cannot hide a wrong graph).
inline std::vector<Shape> checked_output_shapes(onnx::ModelProto model) {
  onnx::checker::check_model(model);
  for (auto& out : *model.mutable_graph()->mutable_output()) out.mutable_type()->mutable_tensor_type()->clear_shape();
  onnx::ShapeInferenceOptions options(true, 1, false);
  onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  std::vector<Shape> shapes;
  for (const auto& out : model.graph().output()) {
    const onnx::ValueInfoProto* info = &out;
    if (!out.type().tensor_type().has_shape())
      for (const auto& vi : model.graph().value_info())
        if (vi.name() == out.name()) info = &vi;
    Shape s;
    for (const auto& d : info->type().tensor_type().shape().dim()) s.push_back(d.has_dim_value() ? d.dim_value() : -1);
    shapes.push_back(s);
  }
  return shapes;
}

}  // namespace nnmeter::test
