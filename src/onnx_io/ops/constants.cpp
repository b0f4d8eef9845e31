// Ops that produce constants and never run at inference time.
#include <cmath>

#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

namespace {

using DType = HostTensor::DType;

bool fold_constant(const FoldContext& cx, std::vector<HostTensor>& out) {
  const auto& attrs = cx.attrs;
  if (const auto* t = attrs.tensor("value")) return emit(out, from_tensor_proto(*t, attrs.label()));
  if (attrs.has("value_float")) return emit(out, HostTensor{DType::F32, {}, {attrs.f("value_float", 0)}});
  if (attrs.has("value_int")) return emit(out, scalar_i64({}, {static_cast<double>(attrs.i("value_int", 0))}));
  if (attrs.has("value_ints")) {
    const auto v = attrs.ints("value_ints");
    return emit(out, scalar_i64({static_cast<int64_t>(v.size())}, {v.begin(), v.end()}));
  }
  if (attrs.has("value_floats")) {
    const auto& a = cx.node.attribute(0);
    return emit(out, HostTensor{DType::F32, {a.floats_size()}, {a.floats().begin(), a.floats().end()}});
  }
  attrs.fail(cx.node.attribute_size() ? cx.node.attribute(0).name() : "value", "is not a supported Constant form");
}

bool fold_constant_of_shape(const FoldContext& cx, std::vector<HostTensor>& out) {
  HostTensor r;
  r.dims = cx.c(0).to_ints();
  r.dtype = DType::F32;
  double v = 0;
  if (const auto* t = cx.attrs.tensor("value")) {
    const auto value = from_tensor_proto(*t, cx.attrs.label());
    if (value.numel() != 1) cx.attrs.fail("value", "must hold one element");
    r.dtype = value.dtype;
    v = value.data[0];
  }
  for (auto d : r.dims)
    if (d < 0) cx.attrs.fail("input", "has a negative dimension");
  r.data.assign(static_cast<size_t>(numel(r.dims)), v);
  return emit(out, std::move(r));
}

bool fold_range(const FoldContext& cx, std::vector<HostTensor>& out) {
  const double start = cx.c(0).data.at(0), limit = cx.c(1).data.at(0), delta = cx.c(2).data.at(0);
  if (delta == 0) cx.attrs.fail("delta", "must not be zero");
  const auto n = static_cast<int64_t>(std::max(0.0, std::ceil((limit - start) / delta)));
  HostTensor r{cx.c(0).dtype, {n}, {}};
  for (int64_t i = 0; i < n; ++i) r.data.push_back(start + static_cast<double>(i) * delta);
  return emit(out, std::move(r));
}

const OpRegistration constant_ops({
    {.name = "Constant", .fold = fold_constant},
    {.name = "ConstantOfShape", .fold = fold_constant_of_shape},
    {.name = "Range", .fold = fold_range},
});

}  // namespace

}  // namespace nnmeter::onnx_io
