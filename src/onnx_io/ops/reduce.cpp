// ReduceMean.
#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

namespace {

std::vector<Shape> reduce_mean_shape(const ShapeContext& cx) {
  const Shape& x = cx.in(0);
  cx.require_rank(x, 1, 12, "input 0");
  auto axes = axes_of(cx.g, cx.n.inputs, 1, cx.attrs).value_or(std::vector<int64_t>{});
  if (axes.empty() && cx.attrs.i("noop_with_empty_axes", 0)) cx.attrs.fail("noop_with_empty_axes", "= 1 is not supported");
  if (axes.empty())
    for (size_t i = 0; i < x.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  Shape out;
  for (size_t i = 0; i < x.size(); ++i) {
    bool reduced = false;
    for (auto a : axes) reduced |= normalize_axis(a, static_cast<int64_t>(x.size()), cx.attrs, "axes") == static_cast<int64_t>(i);
    if (!reduced) out.push_back(x[i]);
    else if (cx.attrs.i("keepdims", 1)) out.push_back(1);
  }
  return {out};
}

const OpRegistration reduce_ops({
    {.name = "ReduceMean",
     .attributes = {"axes", "keepdims", "noop_with_empty_axes"},
     .shape = reduce_mean_shape,
     .parameters_from = 1},
});

}  // namespace

}  // namespace nnmeter::onnx_io
