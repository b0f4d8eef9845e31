// Pad (constant mode): the border is written once at load, each run copies only the interior.
#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

std::vector<Shape> pad_shape(const ShapeContext& cx) {
  if (cx.attrs.s("mode", "constant") != "constant")
    cx.attrs.fail("mode", "= '" + cx.attrs.s("mode", "") + "' is not supported (constant only)");
  const Shape& x = cx.in(0);
  std::vector<int64_t> pads = cx.attrs.ints("pads");
  if (pads.empty() && cx.has_input(1)) pads = cx.g.constant(cx.n.inputs[1]).to_ints();
  if (cx.has_input(3)) cx.attrs.fail("axes", "input is not supported");
  if (pads.size() != 2 * x.size()) cx.attrs.fail("pads", fmt::format("must list 2 x rank = {} values", 2 * x.size()));
  Shape out = x;
  for (size_t i = 0; i < x.size(); ++i) {
    if (pads[i] < 0 || pads[i + x.size()] < 0) cx.attrs.fail("pads", "< 0 (cropping) is not supported");
    out[i] += pads[i] + pads[i + x.size()];
  }
  return {out};
}

void lower_pad(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Attrs a = cx.attrs(n);
  std::vector<int64_t> pads = a.ints("pads");
  if (pads.empty()) pads = g.constant(n.inputs[1]).to_ints();
  float value = a.f("value", 0.f);
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) value = g.constant(n.inputs[2]).to_floats().at(0);
  const Shape begin(pads.begin(), pads.begin() + static_cast<long>(xs.size()));
  const Shape end(pads.begin() + static_cast<long>(xs.size()), pads.end());
  cx.bind(n.outputs[0], padded(cx, cx.mem(n.inputs[0]), xs, begin, end, value));
  cx.pin(n.outputs[0]);
}

const OpRegistration pad_ops({
    {.name = "Pad", .attributes = {"mode", "pads", "value"}, .shape = pad_shape, .lower = lower_pad, .parameters_from = 1},
});

}  // namespace

memory padded(Lowering& cx, const memory& src, const Shape& in, const Shape& begin, const Shape& end, float value) {
  Shape out = in;
  for (size_t i = 0; i < in.size(); ++i) out[i] += begin[i] + end[i];
  const memory::desc md = dense_like(src.get_desc(), out);
  memory dst(md, cx.engine());
  std::fill_n(static_cast<float*>(dst.get_data_handle()), md.get_size() / sizeof(float), value);
  const memory inner(md.submemory_desc(to_dims(in), to_dims(begin)), cx.engine(), dst.get_data_handle());
  cx.keep(inner);
  cx.reorder_step(src, inner, "pad");
  return dst;
}

}  // namespace nnmeter::onednn
