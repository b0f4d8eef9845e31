// Ops that only change how a tensor is seen (reshapes), pass it through (Identity, Dropout, Cast to
// float), or read static shapes and never run (Shape, Size).
#include <cmath>

#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

namespace {

using DType = HostTensor::DType;

std::vector<int64_t> required_axes(const Graph& g, const std::vector<int>& inputs, const Attrs& attrs) {
  const auto axes = axes_of(g, inputs, 1, attrs);
  if (!axes) attrs.fail("axes", "is required");
  return *axes;
}

bool reshaped(const FoldContext& cx, std::vector<HostTensor>& out, Shape dims) {
  HostTensor t = cx.c(0);
  t.dims = std::move(dims);
  return emit(out, std::move(t));
}

std::vector<Shape> dropout_shape(const ShapeContext& cx) {
  if (cx.has_input(2)) {
    const auto& t = cx.g.constant(cx.n.inputs[2]);
    if (t.numel() != 1 || t.data[0] != 0)
      cx.attrs.fail("training_mode", "is true; " + cx.attrs.engine() + " runs inference only");
  }
  if (cx.attrs.has("is_test") && cx.attrs.i("is_test", 1) == 0) cx.attrs.fail("is_test", "is 0 (training); inference only");
  return {cx.in(0)};
}

bool fold_dropout(const FoldContext& cx, std::vector<HostTensor>& out) {
  out.push_back(cx.c(0));
  if (cx.node.output_size() > 1 && !cx.node.output(1).empty()) {
    HostTensor mask = cx.c(0);
    mask.dtype = DType::I64;
    std::fill(mask.data.begin(), mask.data.end(), 1.0);
    out.push_back(std::move(mask));
  }
  return true;
}

std::vector<Shape> cast_shape(const ShapeContext& cx) {
  const auto to = cx.attrs.i("to", 0);
  if (to != onnx::TensorProto::FLOAT) cx.attrs.fail("to", "casts a runtime tensor to a type other than float32");
  return {cx.in(0)};
}

bool fold_cast(const FoldContext& cx, std::vector<HostTensor>& out) {
  HostTensor t = cx.c(0);
  const auto to = cx.attrs.i("to", onnx::TensorProto::FLOAT);
  if (to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE) {
    t.dtype = DType::F32;
    for (auto& v : t.data) v = static_cast<float>(v);
  } else if (to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32 || to == onnx::TensorProto::BOOL) {
    t.dtype = DType::I64;
    for (auto& v : t.data) v = to == onnx::TensorProto::BOOL ? (v != 0) : std::trunc(v);
  } else {
    return false;
  }
  return emit(out, std::move(t));
}

bool fold_shape(const FoldContext& cx, std::vector<HostTensor>& out) {
  const Shape& s = cx.shape_of(0);
  const auto rank = static_cast<int64_t>(s.size());
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clamp(cx.attrs.i("start", 0)), end = clamp(cx.attrs.i("end", rank));
  std::vector<double> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(static_cast<double>(s[static_cast<size_t>(i)]));
  return emit(out, scalar_i64({static_cast<int64_t>(dims.size())}, dims));
}

const OpRegistration shape_ops({
    {.name = "Flatten",
     .attributes = {"axis"},
     .shape = [](const ShapeContext& cx) { return std::vector<Shape>{flatten_shape(cx.in(0), cx.attrs)}; },
     .fold = [](const FoldContext& cx, std::vector<HostTensor>& out) {
       return reshaped(cx, out, flatten_shape(cx.c(0).dims, cx.attrs));
     }},
    {.name = "Reshape",
     .attributes = {"allowzero"},
     .shape = [](const ShapeContext& cx) {
       return std::vector<Shape>{reshape_shape(cx.in(0), cx.g.constant(cx.n.inputs.at(1)).to_ints(),
                                               cx.attrs.i("allowzero", 0) != 0, cx.attrs)};
     },
     .fold = [](const FoldContext& cx, std::vector<HostTensor>& out) {
       return reshaped(cx, out, reshape_shape(cx.c(0).dims, cx.c(1).to_ints(), cx.attrs.i("allowzero", 0) != 0, cx.attrs));
     },
     .parameters_from = 1},
    {.name = "Squeeze",
     .attributes = {"axes"},
     .shape = [](const ShapeContext& cx) {
       return std::vector<Shape>{
           squeeze_shape(cx.in(0), axes_of(cx.g, cx.n.inputs, 1, cx.attrs).value_or(std::vector<int64_t>{}), cx.attrs)};
     },
     .fold = [](const FoldContext& cx, std::vector<HostTensor>& out) {
       return reshaped(cx, out,
                       squeeze_shape(cx.c(0).dims, axes_of(cx.g, cx.in, 1, cx.attrs).value_or(std::vector<int64_t>{}), cx.attrs));
     },
     .parameters_from = 1},
    {.name = "Unsqueeze",
     .attributes = {"axes"},
     .shape = [](const ShapeContext& cx) {
       const auto axes = required_axes(cx.g, cx.n.inputs, cx.attrs);
       return std::vector<Shape>{unsqueeze_shape(cx.in(0), axes, cx.attrs)};
     },
     .fold = [](const FoldContext& cx, std::vector<HostTensor>& out) {
       return reshaped(cx, out, unsqueeze_shape(cx.c(0).dims, required_axes(cx.g, cx.in, cx.attrs), cx.attrs));
     },
     .parameters_from = 1},
    {.name = "Identity", .shape = [](const ShapeContext& cx) { return std::vector<Shape>{cx.in(0)}; }, .fold = fold_dropout},
    {.name = "Dropout", .attributes = {"ratio", "seed", "is_test"}, .shape = dropout_shape, .fold = fold_dropout},
    {.name = "Cast", .attributes = {"to"}, .shape = cast_shape, .fold = fold_cast},
    {.name = "Shape", .fold = fold_shape, .folds_from_shapes = true},
    {.name = "Size",
     .fold = [](const FoldContext& cx, std::vector<HostTensor>& out) {
       return emit(out, scalar_i64({}, {static_cast<double>(numel(cx.shape_of(0)))}));
     },
     .folds_from_shapes = true},
});

}  // namespace

}  // namespace nnmeter::onnx_io
