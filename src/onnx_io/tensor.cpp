#include "onnx_io/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <numeric>

namespace nnmeter::onnx_io {

int64_t numel(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

std::string shape_str(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

Shape row_major_strides(const Shape& dims) {
  Shape s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

int64_t HostTensor::numel() const { return onnx_io::numel(dims); }

std::vector<float> HostTensor::to_floats() const {
  std::vector<float> out(data.size());
  std::transform(data.begin(), data.end(), out.begin(), [](double v) { return static_cast<float>(v); });
  return out;
}

namespace {

// Exporters write "to the end" as INT64_MAX (a Slice's ends, torch.roll's), which a double rounds up to 2^63:
// the conversion back saturates instead of overflowing.
int64_t saturated_int64(double v) {
  constexpr double kLimit = 9223372036854775808.0;  // 2^63
  if (std::isnan(v)) return 0;
  if (v >= kLimit) return std::numeric_limits<int64_t>::max();
  if (v < -kLimit) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

}  // namespace

std::vector<int64_t> HostTensor::to_ints() const {
  std::vector<int64_t> out(data.size());
  std::transform(data.begin(), data.end(), out.begin(), saturated_int64);
  return out;
}

namespace {

template <typename T>
void append_raw(const std::string& raw, std::vector<double>& out, int64_t count, const std::string& where) {
  if (raw.size() != static_cast<size_t>(count) * sizeof(T))
    throw Error(fmt::format("{}: raw_data holds {} bytes, expected {}", where, raw.size(), count * sizeof(T)));
  out.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[static_cast<size_t>(i)] = static_cast<double>(v);
  }
}

template <typename Field>
void append_field(const Field& field, std::vector<double>& out, int64_t count, const std::string& where) {
  if (field.size() != count)
    throw Error(fmt::format("{}: holds {} values, expected {} from its dims", where, field.size(), count));
  out.assign(field.begin(), field.end());
}

}  // namespace

HostTensor from_tensor_proto(const onnx::TensorProto& proto, const std::string& where) {
  using TP = onnx::TensorProto;
  HostTensor t;
  for (auto d : proto.dims()) {
    if (d < 0) throw Error(fmt::format("{}: negative dimension {}", where, d));
    t.dims.push_back(d);
  }
  if (proto.data_location() == TP::EXTERNAL)
    throw Error(fmt::format("{}: external tensor data is not supported; save the model with weights inside", where));
  const int64_t count = t.numel();
  const auto& raw = proto.raw_data();
  const bool has_raw = proto.has_raw_data();
  switch (proto.data_type()) {
    case TP::FLOAT:
      t.dtype = HostTensor::DType::F32;
      has_raw ? append_raw<float>(raw, t.data, count, where) : append_field(proto.float_data(), t.data, count, where);
      break;
    case TP::DOUBLE:
      t.dtype = HostTensor::DType::F32;
      has_raw ? append_raw<double>(raw, t.data, count, where) : append_field(proto.double_data(), t.data, count, where);
      break;
    case TP::INT64:
      t.dtype = HostTensor::DType::I64;
      has_raw ? append_raw<int64_t>(raw, t.data, count, where) : append_field(proto.int64_data(), t.data, count, where);
      break;
    case TP::INT32:
      t.dtype = HostTensor::DType::I64;
      has_raw ? append_raw<int32_t>(raw, t.data, count, where) : append_field(proto.int32_data(), t.data, count, where);
      break;
    case TP::INT8:
      t.dtype = HostTensor::DType::I64;
      has_raw ? append_raw<int8_t>(raw, t.data, count, where) : append_field(proto.int32_data(), t.data, count, where);
      break;
    case TP::UINT8:
    case TP::BOOL:
      t.dtype = HostTensor::DType::I64;
      has_raw ? append_raw<uint8_t>(raw, t.data, count, where) : append_field(proto.int32_data(), t.data, count, where);
      break;
    default:
      throw Error(fmt::format("{}: tensor data type {} is not supported (float, double, int8/32/64, uint8, bool)",
                              where, TP::DataType_Name(static_cast<TP::DataType>(proto.data_type()))));
  }
  return t;
}

namespace {

// The values converted straight into the proto's raw bytes: no intermediate vector, as a model's weights
// pass through here when a converted model is written.
template <typename T>
void set_raw(const std::vector<double>& values, onnx::TensorProto& proto) {
  std::string* raw = proto.mutable_raw_data();
  raw->resize(values.size() * sizeof(T));
  char* out = raw->data();
  for (const double v : values) {
    T x;
    if constexpr (std::is_same_v<T, int64_t>) x = saturated_int64(v);
    else x = static_cast<T>(v);
    std::memcpy(out, &x, sizeof(T));
    out += sizeof(T);
  }
}

}  // namespace

onnx::TensorProto to_tensor_proto(const HostTensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  for (auto d : tensor.dims) proto.add_dims(d);
  if (tensor.dtype == HostTensor::DType::F32) {
    proto.set_data_type(onnx::TensorProto::FLOAT);
    set_raw<float>(tensor.data, proto);
  } else {
    proto.set_data_type(onnx::TensorProto::INT64);
    set_raw<int64_t>(tensor.data, proto);
  }
  return proto;
}

}  // namespace nnmeter::onnx_io
