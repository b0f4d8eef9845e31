// Gemm and MatMul.
#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

namespace {

std::vector<Shape> gemm_shape(const ShapeContext& cx) {
  const Shape& a = cx.in(0);
  const Shape& b = cx.in(1);
  if (a.size() != 2 || b.size() != 2) cx.attrs.fail("inputs", "A and B must be matrices");
  const bool ta = cx.attrs.i("transA", 0), tb = cx.attrs.i("transB", 0);
  const int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
  const int64_t kb = tb ? b[1] : b[0], nn = tb ? b[0] : b[1];
  if (k != kb) cx.attrs.fail("inputs", fmt::format("A {} and B {} have different inner dimensions", shape_str(a), shape_str(b)));
  if (cx.has_input(2)) {
    const auto s = broadcast_shapes({m, nn}, cx.in(2));
    if (!s || *s != Shape{m, nn}) cx.attrs.fail("C", fmt::format("{} does not broadcast to [{},{}]", shape_str(cx.in(2)), m, nn));
  }
  return {{m, nn}};
}

std::vector<Shape> matmul_shape(const ShapeContext& cx) {
  Shape a = cx.in(0), b = cx.in(1);
  if (a.empty() || b.empty()) cx.attrs.fail("inputs", "must not be scalars");
  const bool va = a.size() == 1, vb = b.size() == 1;
  if (va) a.insert(a.begin(), 1);
  if (vb) b.push_back(1);
  if (a.back() != b[b.size() - 2])
    cx.attrs.fail("inputs", fmt::format("{} and {} have different inner dimensions", shape_str(cx.in(0)), shape_str(cx.in(1))));
  const auto batch = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!batch) cx.attrs.fail("inputs", "batch dimensions do not broadcast");
  Shape out = *batch;
  if (!va) out.push_back(a[a.size() - 2]);
  if (!vb) out.push_back(b.back());
  cx.require_rank(out, 0, 12, "output");
  return {out};
}

const OpRegistration gemm_ops({
    // Fully connected layers: weights and bias are initializers.
    {.name = "Gemm",
     .attributes = {"alpha", "beta", "transA", "transB", "broadcast"},
     .shape = gemm_shape,
     .parameters_from = 1},
    {.name = "MatMul", .shape = matmul_shape},
});

}  // namespace

}  // namespace nnmeter::onnx_io
