// Tensors an ONNX model holds (initializers, Constant values, what load-time folding computes) and the one
// TensorProto codec every part of nn-meter reads them with. Not called onnx/: a folder of that name under
// src/ would shadow the ONNX library's own headers.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "nnmeter/common.h"

namespace nnmeter::onnx_io {

// Values are held as doubles: every int64 shape value and every float32 is exact in a double, so one
// evaluator serves shape arithmetic and weight folding alike.
struct HostTensor {
  enum class DType { F32, I64 };
  DType dtype = DType::F32;
  Shape dims;
  std::vector<double> data;

  int64_t numel() const;
  std::vector<float> to_floats() const;
  std::vector<int64_t> to_ints() const;
};

int64_t numel(const Shape& shape);
std::string shape_str(const Shape& shape);
// The strides of a dense row-major tensor of these dims, in elements.
Shape row_major_strides(const Shape& dims);

// Float, double, integer and bool TensorProtos, raw or typed fields; throws Error naming `where` on external
// data, an unsupported type, a negative dimension or a value count that does not match the dims.
HostTensor from_tensor_proto(const onnx::TensorProto& proto, const std::string& where);
// F32 as FLOAT, I64 as INT64, in raw_data.
onnx::TensorProto to_tensor_proto(const HostTensor& tensor, const std::string& name);

}  // namespace nnmeter::onnx_io
