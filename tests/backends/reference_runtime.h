// A deliberately plain ONNX interpreter (nested loops, doubles, no fusion, no layouts) used as the
// reference the onednn_cpu engine is checked against. It reads the original model, so BatchNorm folding,
// post-op fusion and constant folding in the engine are all under test.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>

#include "nnmeter/backend.h"

namespace nnmeter::test {

struct RefTensor {
  Shape shape;
  std::vector<double> data;
};

// Runs the model on named float inputs; returns every graph output by name.
std::map<std::string, RefTensor> run_reference(const onnx::ModelProto& model, const std::vector<Tensor>& inputs);

}  // namespace nnmeter::test
