// Conv.
#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

namespace {

std::vector<Shape> conv_shape(const ShapeContext& cx) {
  const Shape& x = cx.in(0);
  const Shape& w = cx.in(1);
  cx.require_rank(x, 3, 5, "input 0");
  if (w.size() != x.size()) cx.attrs.fail("W", fmt::format("rank {} does not match the input rank {}", w.size(), x.size()));
  const int64_t group = cx.attrs.i("group", 1);
  if (group <= 0 || w[0] % group || x[1] != w[1] * group)
    cx.attrs.fail("group", fmt::format("= {} does not fit input {} and weights {}", group, shape_str(x), shape_str(w)));
  if (cx.has_input(2) && cx.in(2) != Shape{w[0]}) cx.attrs.fail("B", "must have one value per output channel");
  SpatialParams p;
  p.kernel.assign(w.begin() + 2, w.end());
  const auto ks = cx.attrs.ints("kernel_shape");
  if (!ks.empty() && Shape(ks.begin(), ks.end()) != p.kernel) cx.attrs.fail("kernel_shape", "does not match the weights");
  Shape out{x[0], w[0]};
  const Shape sp = conv_like_output(x, p, cx.attrs, false);
  out.insert(out.end(), sp.begin(), sp.end());
  return {out};
}

const OpRegistration conv_ops({
    {.name = "Conv",
     .attributes = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"},
     .shape = conv_shape,
     .parameters_from = 1},
});

}  // namespace

}  // namespace nnmeter::onnx_io
