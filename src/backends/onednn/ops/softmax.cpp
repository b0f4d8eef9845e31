// Softmax, on the row-major order its axis is defined on.
#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

void lower_softmax(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Attrs a = cx.attrs(n);
  const int64_t axis = normalize_axis(a.i("axis", softmax_default_axis(g)), static_cast<int64_t>(xs.size()), a, "axis");
  Shape view = xs;
  int64_t vaxis = axis;
  if (g.opset < 13) {
    // Before opset 13 Softmax normalizes over all dimensions from `axis` on, as one flattened row.
    view = {numel(Shape(xs.begin(), xs.begin() + axis)), numel(Shape(xs.begin() + axis, xs.end()))};
    vaxis = 1;
  }
  const memory src = cx.alias(cx.as_plain(n.inputs[0]), view);
  cx.keep(src);
  dnnl::softmax_forward::desc d(dnnl::prop_kind::forward_inference, src.get_desc(), static_cast<int>(vaxis));
  const dnnl::softmax_forward::primitive_desc pd(d, cx.engine());
  memory dst(pd.dst_desc(), cx.engine());
  cx.keep(dst);
  cx.bind(n.outputs[0], cx.alias(dst, xs));
  cx.add_step(dnnl::softmax_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, cx.step_info(pd, n, "softmax"));
}

const OpRegistration softmax_ops({
    {.name = "Softmax", .lower = lower_softmax},
});

}  // namespace

}  // namespace nnmeter::onednn
