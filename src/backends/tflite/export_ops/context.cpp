// The ExportContext's graph bookkeeping and the flatbuffer it writes, and the helpers several op files share.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>

#include "backends/tflite/export_ops/op.h"
#include "onnx_io/shape_rules.h"

namespace nnmeter::tflite {

ExportContext::ExportContext(const onnx_io::Graph& g, std::string backend) : g_(g), backend_(std::move(backend)) {
  buffers_.push_back(tfl::CreateBuffer(fbb_));  // buffer 0: the empty sentinel of tensors without data
  // From the ONNX nodes themselves: the loader's own fusion rewires its node outputs.
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    for (const auto& out : g_.nodes[i].proto->output()) producer_[out] = static_cast<int>(i);
    for (const auto& in : g_.nodes[i].proto->input()) consumers_[in].push_back(static_cast<int>(i));
  }
}

void ExportContext::fail(const onnx::NodeProto& node, const std::string& why) const {
  throw Error(fmt::format("{} cannot convert {} node '{}' in {}: {}", backend_, node.op_type(),
                          node.name().empty() ? node.output(0) : node.name(), g_.origin, why));
}

void ExportContext::fail_value(const std::string& value, const std::string& why) const {
  throw Error(fmt::format("{} cannot convert '{}' in {}: {}", backend_, value, g_.origin, why));
}

const onnx::AttributeProto* ExportContext::attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t ExportContext::attr_i(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  const auto* a = attr(n, name);
  return a ? a->i() : fallback;
}

float ExportContext::attr_f(const onnx::NodeProto& n, const std::string& name, float fallback) {
  const auto* a = attr(n, name);
  return a ? a->f() : fallback;
}

std::vector<int64_t> ExportContext::attr_ints(const onnx::NodeProto& n, const std::string& name,
                                              std::vector<int64_t> fallback) {
  const auto* a = attr(n, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
}

std::string ExportContext::attr_s(const onnx::NodeProto& n, const std::string& name, const std::string& fallback) {
  const auto* a = attr(n, name);
  return a ? a->s() : fallback;
}

int ExportContext::sole_consumer(const std::string& name) const {
  const auto it = consumers_.find(name);
  if (value(name).graph_output || it == consumers_.end() || it->second.size() != 1) return -1;
  return it->second[0];
}

int ExportContext::producer(const std::string& name) const {
  const auto it = producer_.find(name);
  return it == producer_.end() ? -1 : it->second;
}

std::optional<tfl::ActivationFunctionType> ExportContext::activation_of(const onnx::NodeProto& n) const {
  if (n.op_type() == "Relu") return tfl::ActivationFunctionType_RELU;
  if (n.op_type() != "Clip") return std::nullopt;
  float lo = attr_f(n, "min", -INFINITY), hi = attr_f(n, "max", INFINITY);
  if (n.input_size() > 1 && !n.input(1).empty()) lo = floats(n.input(1)).at(0);
  if (n.input_size() > 2 && !n.input(2).empty()) hi = floats(n.input(2)).at(0);
  if (lo == 0.f && hi == 6.f) return tfl::ActivationFunctionType_RELU6;
  if (lo == 0.f && std::isinf(hi) && hi > 0) return tfl::ActivationFunctionType_RELU;
  return std::nullopt;
}

tfl::ActivationFunctionType ExportContext::take_activation(std::string& out) {
  const int next = sole_consumer(out);
  if (next < 0) return tfl::ActivationFunctionType_NONE;
  const auto act = activation_of(proto(next));
  if (!act) return tfl::ActivationFunctionType_NONE;
  absorbed_.insert(next);
  out = proto(next).output(0);
  return *act;
}

int ExportContext::add_tensor(const std::string& name, const Shape& onnx_shape, bool nhwc, tfl::TensorType type,
                              uint32_t buffer) {
  TensorDef t{{}, type, buffer, name};
  for (size_t j = 0; j < onnx_shape.size(); ++j)
    t.shape.push_back(static_cast<int32_t>(onnx_shape[nhwc ? static_cast<size_t>(kToNhwc[j]) : j]));
  tensors_.push_back(std::move(t));
  return static_cast<int>(tensors_.size()) - 1;
}

template <typename T>
int ExportContext::add_constant(const std::string& name, const Shape& shape, const std::vector<T>& data,
                                tfl::TensorType type) {
  std::vector<uint8_t> bytes(data.size() * sizeof(T));
  if (!data.empty()) std::memcpy(bytes.data(), data.data(), bytes.size());
  buffers_.push_back(tfl::CreateBufferDirect(fbb_, &bytes));
  return add_tensor(fmt::format("{}_{}", name, tensors_.size()), shape, false, type, static_cast<uint32_t>(buffers_.size() - 1));
}

int ExportContext::const_f32(const std::string& name, const Shape& shape, const std::vector<float>& data) {
  return add_constant(name, shape, data, tfl::TensorType_FLOAT32);
}

int ExportContext::const_i32(const std::string& name, const std::vector<int32_t>& data, Shape shape) {
  if (shape.empty()) shape = {static_cast<int64_t>(data.size())};
  return add_constant(name, shape, data, tfl::TensorType_INT32);
}

Ref& ExportContext::define(const std::string& name, bool nonnegative) {
  const Shape& shape = value(name).shape;
  const bool nhwc = shape.size() == 4;
  refs_[name] = Ref{add_tensor(name, shape, nhwc), nhwc, shape, nonnegative};
  return refs_[name];
}

const Ref& ExportContext::ref(const std::string& name) {
  const auto it = refs_.find(name);
  if (it != refs_.end()) return it->second;
  fail_value(name, "is a load-time constant where the export needs a computed tensor");
}

void ExportContext::add_op(tfl::BuiltinOperator op, std::vector<int> inputs, std::vector<int> outputs,
                           tfl::BuiltinOptions type, flatbuffers::Offset<void> options) {
  ops_.push_back(Operator{op, std::move(inputs), std::move(outputs), type, options});
}

int ExportContext::as_nchw(const Ref& r, bool bytes_only) {
  if (!r.nhwc || (bytes_only && r.shape[2] * r.shape[3] == 1)) return r.tensor;
  const int out = add_tensor(fmt::format("{}_nchw", tensors_[static_cast<size_t>(r.tensor)].name), r.shape, false);
  add_op(tfl::BuiltinOperator_TRANSPOSE, {r.tensor, const_i32("perm", {0, 3, 1, 2})}, {out},
         tfl::BuiltinOptions_TransposeOptions, tfl::CreateTransposeOptions(fbb_).Union());
  return out;
}

int ExportContext::stored_axis(const onnx::NodeProto& n, const Ref& r, int64_t axis) const {
  const int64_t rank = static_cast<int64_t>(r.shape.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) fail(n, "axis out of range");
  return static_cast<int>(r.nhwc ? kFromNhwc[static_cast<size_t>(axis)] : axis);
}

std::string ExportContext::finish(const std::vector<int>& inputs, const std::vector<int>& outputs) {
  std::vector<flatbuffers::Offset<tfl::OperatorCode>> codes;
  std::map<tfl::BuiltinOperator, uint32_t> code_index;
  std::vector<flatbuffers::Offset<tfl::Operator>> operators;
  for (const auto& op : ops_) {
    if (!code_index.count(op.op)) {
      code_index[op.op] = static_cast<uint32_t>(codes.size());
      // Readers before TF 2.4 only know the byte field; every op written here has a code below 127.
      codes.push_back(tfl::CreateOperatorCode(fbb_, static_cast<int8_t>(op.op), 0, 1, op.op));
    }
    operators.push_back(tfl::CreateOperatorDirect(fbb_, code_index[op.op], &op.inputs, &op.outputs, op.options_type, op.options));
  }
  std::vector<flatbuffers::Offset<tfl::Tensor>> tensors;
  for (const auto& t : tensors_) tensors.push_back(tfl::CreateTensorDirect(fbb_, &t.shape, t.type, t.buffer, t.name.c_str()));
  const auto subgraph = tfl::CreateSubGraphDirect(fbb_, &tensors, &inputs, &outputs, &operators, "main");
  std::vector<flatbuffers::Offset<tfl::SubGraph>> subgraphs = {subgraph};
  const auto model = tfl::CreateModelDirect(fbb_, 3, &codes, &subgraphs, "nn-meter ONNX export", &buffers_);
  tfl::FinishModelBuffer(fbb_, model);
  return std::string(reinterpret_cast<const char*>(fbb_.GetBufferPointer()), fbb_.GetSize());
}

// -------------------------------------------------------------------------------------------------

std::vector<float> permute(const Shape& shape, const std::vector<float>& data, const std::vector<int64_t>& perm) {
  const size_t rank = shape.size();
  Shape out_shape(rank), in_strides(rank, 1);
  for (size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * shape[i];
  for (size_t j = 0; j < rank; ++j) out_shape[j] = shape[static_cast<size_t>(perm[j])];
  std::vector<float> out(data.size());
  Shape idx(rank, 0);
  for (size_t o = 0; o < out.size(); ++o) {
    int64_t src = 0;
    for (size_t j = 0; j < rank; ++j) src += idx[j] * in_strides[static_cast<size_t>(perm[j])];
    out[o] = data[static_cast<size_t>(src)];
    for (size_t j = rank; j-- > 0;) {
      if (++idx[j] < out_shape[j]) break;
      idx[j] = 0;
    }
  }
  return out;
}

tfl::Padding padding_for(ExportContext& cx, const onnx::NodeProto& n, int& input, const Ref& in, const Shape& kernel,
                         const Shape& strides, const Shape& dilations, const Shape& out_hw, bool zero_pad_ok,
                         const char* why_not) {
  Shape pads = cx.attr_ints(n, "pads", {0, 0, 0, 0});
  const std::string auto_pad = cx.attr_s(n, "auto_pad", "NOTSET");
  bool same = true, valid = true;
  for (size_t i = 0; i < 2; ++i) {
    const int64_t x = in.shape[i + 2], s = strides[i], ext = (kernel[i] - 1) * dilations[i] + 1;
    // TFLite's SAME is ONNX's SAME_UPPER; the output size was checked before, so the windows exist.
    const auto tf_same = onnx_io::window_axis(x, ext, s, 0, 0, "SAME_UPPER");
    const auto tf_valid = onnx_io::window_axis(x, ext, s, 0, 0, "VALID");
    if (auto_pad != "NOTSET")
      if (const auto w = onnx_io::window_axis(x, ext, s, pads[i], pads[i + 2], auto_pad)) pads[i] = w->pad_begin, pads[i + 2] = w->pad_end;
    same &= tf_same && out_hw[i] == tf_same->out && pads[i] == tf_same->pad_begin && pads[i + 2] == tf_same->pad_end;
    valid &= tf_valid && out_hw[i] == tf_valid->out && pads[i] == 0 && pads[i + 2] == 0;
    // The padding VALID needs for ONNX's output size (ceil_mode adds trailing rows).
    pads[i + 2] = (out_hw[i] - 1) * s + ext - x - pads[i];
  }
  if (same) return tfl::Padding_SAME;
  if (valid) return tfl::Padding_VALID;
  if (!zero_pad_ok)
    cx.fail(n, fmt::format("pads {} are neither TFLite's SAME nor VALID, and {}", fmt::join(cx.attr_ints(n, "pads", {}), ","), why_not));
  const Shape padded = {in.shape[0], in.shape[1], in.shape[2] + pads[0] + pads[2], in.shape[3] + pads[1] + pads[3]};
  const int out = cx.add_tensor(cx.tensor_name(input) + "_padded", padded, true);
  const std::vector<int32_t> paddings = {0, 0, static_cast<int32_t>(pads[0]), static_cast<int32_t>(pads[2]),
                                         static_cast<int32_t>(pads[1]), static_cast<int32_t>(pads[3]), 0, 0};
  cx.add_op(tfl::BuiltinOperator_PAD, {input, cx.const_i32("paddings", paddings, {4, 2})}, {out}, tfl::BuiltinOptions_PadOptions,
            tfl::CreatePadOptions(cx.fbb()).Union());
  input = out;
  return tfl::Padding_VALID;
}

}  // namespace nnmeter::tflite
