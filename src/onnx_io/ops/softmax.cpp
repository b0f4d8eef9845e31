// Softmax.
#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

namespace {

std::vector<Shape> softmax_shape(const ShapeContext& cx) {
  const Shape& x = cx.in(0);
  cx.require_rank(x, 1, 12, "input 0");
  normalize_axis(cx.attrs.i("axis", softmax_default_axis(cx.g)), static_cast<int64_t>(x.size()), cx.attrs, "axis");
  return {x};
}

const OpRegistration softmax_ops({
    {.name = "Softmax", .attributes = {"axis"}, .shape = softmax_shape},
});

}  // namespace

}  // namespace nnmeter::onnx_io
