// LayerNormalization (opset 17): normalization over the trailing dimensions from `axis` on, with the
// per-element scale and bias as load-time constants.
#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

namespace {

std::vector<Shape> layer_norm_shape(const ShapeContext& cx) {
  if (cx.attrs.i("stash_type", 1) != 1)
    cx.attrs.fail("stash_type", "must be 1 (float32): " + cx.attrs.engine() + " computes in float32");
  const Shape& x = cx.in(0);
  cx.require_rank(x, 1, 12, "input 0");
  const int64_t axis = normalize_axis(cx.attrs.i("axis", -1), static_cast<int64_t>(x.size()), cx.attrs, "axis");
  const Shape normalized(x.begin() + axis, x.end());
  for (size_t i = 1; i <= 2; ++i) {
    if (!cx.has_input(i)) {
      if (i == 1) cx.attrs.fail("input 1", "(Scale) is missing");
      continue;
    }
    const auto s = broadcast_shapes(normalized, cx.in(i));
    if (!s || *s != normalized)
      cx.attrs.fail(fmt::format("input {}", i), fmt::format("{} does not broadcast to the normalized shape {}",
                                                            shape_str(cx.in(i)), shape_str(normalized)));
  }
  // Mean and InvStdDev keep the reduced dimensions as 1.
  Shape stats(x.begin(), x.begin() + axis);
  stats.resize(x.size(), 1);
  return {x, stats, stats};
}

const OpRegistration layer_norm_ops({
    {.name = "LayerNormalization",
     .attributes = {"axis", "epsilon", "stash_type"},
     .shape = layer_norm_shape,
     .parameters_from = 1},
});

}  // namespace

}  // namespace nnmeter::onnx_io
