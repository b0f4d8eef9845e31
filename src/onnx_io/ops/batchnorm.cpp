// BatchNormalization (inference).
#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

namespace {

std::vector<Shape> batchnorm_shape(const ShapeContext& cx) {
  if (cx.attrs.i("training_mode", 0) != 0)
    cx.attrs.fail("training_mode", "= 1; " + cx.attrs.engine() + " runs inference only");
  if (cx.attrs.i("spatial", 1) != 1) cx.attrs.fail("spatial", "= 0 is not supported");
  const Shape& x = cx.in(0);
  cx.require_rank(x, 2, 5, "input 0");
  for (size_t i = 1; i <= 4; ++i)
    if (numel(cx.in(i)) != x[1]) cx.attrs.fail(fmt::format("input {}", i), "must have one value per channel");
  return {x};
}

const OpRegistration batchnorm_ops({
    {.name = "BatchNormalization",
     .attributes = {"epsilon", "momentum", "training_mode", "spatial", "is_test", "consumed_inputs"},
     .shape = batchnorm_shape,
     .parameters_from = 1},
});

}  // namespace

}  // namespace nnmeter::onnx_io
