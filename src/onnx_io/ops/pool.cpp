// Max and average pooling, windowed and global.
#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

namespace {

std::vector<Shape> pool_shape(const ShapeContext& cx) {
  if (cx.attrs.i("storage_order", 0) != 0) cx.attrs.fail("storage_order", "= 1 is not supported");
  const Shape& x = cx.in(0);
  cx.require_rank(x, 3, 5, "input 0");
  SpatialParams p;
  const auto ks = cx.attrs.ints("kernel_shape");
  if (ks.size() != x.size() - 2) cx.attrs.fail("kernel_shape", "must list one size per spatial dimension");
  p.kernel.assign(ks.begin(), ks.end());
  Shape out{x[0], x[1]};
  const Shape sp = conv_like_output(x, p, cx.attrs, true);
  out.insert(out.end(), sp.begin(), sp.end());
  return {out};
}

std::vector<Shape> global_pool_shape(const ShapeContext& cx) {
  Shape x = cx.in(0);
  cx.require_rank(x, 3, 5, "input 0");
  std::fill(x.begin() + 2, x.end(), 1);
  return {x};
}

const OpRegistration pool_ops({
    {.name = "MaxPool",
     .attributes = {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"},
     .shape = pool_shape},
    {.name = "AveragePool",
     .attributes = {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"},
     .shape = pool_shape},
    {.name = "GlobalMaxPool", .shape = global_pool_shape},
    {.name = "GlobalAveragePool", .shape = global_pool_shape},
});

}  // namespace

}  // namespace nnmeter::onnx_io
