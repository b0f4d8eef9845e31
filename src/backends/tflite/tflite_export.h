// ONNX -> .tflite (float32), written with flatbuffers against TFLite's schema (tflite_schema.fbs). The ONNX
// model is loaded through the front end (onnx_io/graph.h: static shapes, shape subgraphs and constants
// folded), then each runtime node becomes TFLite builtin ops the way TFLite's converter writes them: 4-D
// activations NHWC (the model's 4-D inputs and outputs too), Conv/DepthwiseConv weights in TFLite's layouts
// with BatchNormalization folded in, ReLU/ReLU6 fused into the producing op, x*HardSigmoid(x) as HARD_SWISH.
#pragma once

#include <onnx/onnx_pb.h>

#include "nnmeter/common.h"

namespace nnmeter::tflite {

// The .tflite bytes for an ONNX model. An op (or attribute) the export does not support throws Error
// naming the op, the node and `backend`, before the caller writes anything.
std::string export_tflite(const fs::path& onnx_path, const std::string& backend);
std::string export_tflite(onnx::ModelProto model, const std::string& origin, const std::string& backend);

// The ONNX op types exported at inference time (load-time constant subgraphs are folded away first).
const std::vector<std::string>& exportable_ops();

}  // namespace nnmeter::tflite
