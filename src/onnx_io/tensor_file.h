// ONNX TensorProto files (.pb), the input/output convention of the ONNX backend node tests, so that any
// runtime can check nn-meter's outputs and the other way round.
#pragma once

#include "nnmeter/backend.h"

namespace nnmeter::onnx_io {

// Reads a serialized TensorProto as float32 (float and double data; integer tensors are converted).
// `fallback_name` names the tensor when the file leaves the name empty. Throws Error on a malformed file.
Tensor read_tensor_pb(const fs::path& path, const std::string& fallback_name = "");
// Writes a float32 TensorProto (raw_data, little-endian) atomically.
void write_tensor_pb(const fs::path& path, const Tensor& tensor);

// Names of the inputs an ONNX model reads at run time (graph inputs without an initializer), in order.
std::vector<std::string> onnx_runtime_input_names(const fs::path& onnx_path);

}  // namespace nnmeter::onnx_io
