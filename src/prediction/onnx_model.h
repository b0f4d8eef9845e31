// ONNX in memory → IR: kept out of the public headers so that they do not expose ONNX's types.
#pragma once

#include <string>

#include "nnmeter/prediction.h"

namespace onnx {
class ModelProto;
}

namespace nnmeter {

// ONNX shape inference with data propagation, `shapes` overriding graph-input dims. A graph input with a
// symbolic dim and no override, an override naming no input, or a runtime tensor without a static shape
// after inference → one-line Error.
ModelIr onnx_to_ir(const onnx::ModelProto& model, const std::string& origin, const InputShapes& shapes = {});

}  // namespace nnmeter
