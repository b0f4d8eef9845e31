#include "onnx_io/tensor_file.h"

#include <onnx/onnx_pb.h>

#include <algorithm>

#include "common/io.h"
#include "onnx_io/tensor.h"

namespace nnmeter::onnx_io {

Tensor read_tensor_pb(const fs::path& path, const std::string& fallback_name) {
  const std::string bytes = io::read_file(path);
  onnx::TensorProto proto;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) || !proto.ParseFromString(bytes))
    throw Error(path.string() + " is not a serialized ONNX TensorProto");
  const auto host = onnx_io::from_tensor_proto(proto, path.string());
  Tensor t;
  t.name = proto.name().empty() ? fallback_name : proto.name();
  t.shape = host.dims;
  t.data = host.to_floats();
  return t;
}

void write_tensor_pb(const fs::path& path, const Tensor& tensor) {
  onnx::TensorProto proto;
  proto.set_name(tensor.name);
  proto.set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : tensor.shape) proto.add_dims(d);
  proto.set_raw_data(std::string(reinterpret_cast<const char*>(tensor.data.data()), tensor.data.size() * sizeof(float)));
  io::write_file_atomic(path, proto.SerializeAsString());
}

std::vector<std::string> onnx_runtime_input_names(const fs::path& onnx_path) {
  onnx::ModelProto model;
  const std::string bytes = io::read_file(onnx_path);
  if (bytes.size() > static_cast<size_t>(INT32_MAX) || !model.ParseFromString(bytes))
    throw Error(onnx_path.string() + " is not a valid ONNX model (protobuf parsing failed)");
  std::vector<std::string> inits;
  for (const auto& t : model.graph().initializer()) inits.push_back(t.name());
  std::vector<std::string> names;
  for (const auto& in : model.graph().input())
    if (std::find(inits.begin(), inits.end(), in.name()) == inits.end()) names.push_back(in.name());
  return names;
}

}  // namespace nnmeter::onnx_io
