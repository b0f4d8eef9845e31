// Pad (constant mode).
#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

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

const OpRegistration pad_ops({
    {.name = "Pad", .attributes = {"mode", "pads", "value"}, .shape = pad_shape, .parameters_from = 1},
});

}  // namespace

}  // namespace nnmeter::onnx_io
