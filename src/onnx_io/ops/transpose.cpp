// Transpose.
#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

namespace {

std::vector<Shape> transpose_shape(const ShapeContext& cx) {
  const auto perm = transpose_perm(cx.in(0), cx.attrs);
  Shape out;
  for (auto p : perm) out.push_back(cx.in(0)[static_cast<size_t>(p)]);
  return {out};
}

bool fold_transpose(const FoldContext& cx, std::vector<HostTensor>& out) {
  const auto& data = cx.c(0);
  const auto perm = transpose_perm(data.dims, cx.attrs);
  const Shape strides = row_major_strides(data.dims);
  Shape dims(perm.size()), view(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    dims[i] = data.dims[static_cast<size_t>(perm[i])];
    view[i] = strides[static_cast<size_t>(perm[i])];
  }
  HostTensor r{data.dtype, dims, std::vector<double>(data.data.size())};
  for_each_view(dims, view, 0, [&](int64_t o, int64_t off) { r.data[static_cast<size_t>(o)] = data.data[static_cast<size_t>(off)]; });
  return emit(out, std::move(r));
}

const OpRegistration transpose_ops({
    {.name = "Transpose", .attributes = {"perm"}, .shape = transpose_shape, .fold = fold_transpose},
});

}  // namespace

}  // namespace nnmeter::onnx_io
