// Pad (constant mode): the border is written once at load, each run copies only the interior.
#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

void lower_pad(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Attrs a = cx.attrs(n);
  std::vector<int64_t> pads = a.ints("pads");
  if (pads.empty()) pads = g.constant(n.inputs[1]).to_ints();
  float value = a.f("value", 0.f);
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) value = g.constant(n.inputs[2]).to_floats().at(0);
  // A Pad of nothing (DenseNet's transitions as torch.onnx.export writes them, before each AvgPool) is its input:
  // an alias, as detection counts it (a layout op, detection/kernel_configs.cpp), not a copy.
  if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; }))
    return cx.bind_alias(n.outputs[0], cx.mem(n.inputs[0]), n.inputs[0]);
  const Shape begin(pads.begin(), pads.begin() + static_cast<long>(xs.size()));
  const Shape end(pads.begin() + static_cast<long>(xs.size()), pads.end());
  cx.bind(n.outputs[0], padded(cx, cx.mem(n.inputs[0]), xs, begin, end, value));
  cx.pin(n.outputs[0]);
}

const OpRegistration pad_ops({
    {.name = "Pad", .lower = lower_pad},
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
