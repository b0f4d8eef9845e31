// Split, Slice and Gather.
#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

namespace {

std::vector<Shape> split_shape(const ShapeContext& cx) {
  const Shape& x = cx.in(0);
  const int64_t axis = normalize_axis(cx.attrs.i("axis", 0), static_cast<int64_t>(x.size()), cx.attrs, "axis");
  const auto sizes = split_sizes(cx.g, cx.n.inputs, x[static_cast<size_t>(axis)], cx.n.proto->output_size(), cx.attrs);
  std::vector<Shape> out;
  for (auto s : sizes) {
    Shape o = x;
    o[static_cast<size_t>(axis)] = s;
    out.push_back(o);
  }
  return out;
}

bool fold_slice(const FoldContext& cx, std::vector<HostTensor>& out) {
  const auto& data = cx.c(0);
  const SliceSpec spec = slice_spec(cx.g, data.dims, cx.in, cx.attrs);
  const Shape strides = row_major_strides(data.dims);
  Shape view(strides.size());
  int64_t offset = 0;
  for (size_t d = 0; d < strides.size(); ++d) {
    view[d] = strides[d] * spec.step[d];
    offset += spec.start[d] * strides[d];
  }
  HostTensor r{data.dtype, spec.dims, {}};
  r.data.resize(static_cast<size_t>(numel(spec.dims)));
  for_each_view(spec.dims, view, offset,
                [&](int64_t o, int64_t off) { r.data[static_cast<size_t>(o)] = data.data[static_cast<size_t>(off)]; });
  return emit(out, std::move(r));
}

std::vector<Shape> gather_shape(const ShapeContext& cx) {
  const Shape& x = cx.in(0);
  const auto& idx = cx.g.constant(cx.n.inputs.at(1));
  if (idx.dims.size() > 1) cx.attrs.fail("indices", "of rank > 1 are not supported at inference time");
  const int64_t axis = normalize_axis(cx.attrs.i("axis", 0), static_cast<int64_t>(x.size()), cx.attrs, "axis");
  for (double v : idx.data)
    if (v < -static_cast<double>(x[static_cast<size_t>(axis)]) || v >= static_cast<double>(x[static_cast<size_t>(axis)]))
      cx.attrs.fail("indices", fmt::format("value {} is out of range", v));
  Shape out(x.begin(), x.begin() + axis);
  out.insert(out.end(), idx.dims.begin(), idx.dims.end());
  out.insert(out.end(), x.begin() + axis + 1, x.end());
  return {out};
}

bool fold_gather(const FoldContext& cx, std::vector<HostTensor>& out) {
  const auto& data = cx.c(0);
  const auto& idx = cx.c(1);
  const auto rank = static_cast<int64_t>(data.dims.size());
  const int64_t axis = normalize_axis(cx.attrs.i("axis", 0), rank, cx.attrs, "axis");
  const int64_t n = data.dims[static_cast<size_t>(axis)];
  HostTensor r;
  r.dtype = data.dtype;
  r.dims.assign(data.dims.begin(), data.dims.begin() + axis);
  r.dims.insert(r.dims.end(), idx.dims.begin(), idx.dims.end());
  r.dims.insert(r.dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  const int64_t outer = numel(Shape(data.dims.begin(), data.dims.begin() + axis));
  const int64_t inner = numel(Shape(data.dims.begin() + axis + 1, data.dims.end()));
  for (int64_t o = 0; o < outer; ++o)
    for (double iv : idx.data) {
      auto k = static_cast<int64_t>(iv);
      if (k < 0) k += n;
      if (k < 0 || k >= n) cx.attrs.fail("indices", fmt::format("value {} is out of range [-{}, {})", iv, n, n));
      for (int64_t j = 0; j < inner; ++j) r.data.push_back(data.data[static_cast<size_t>((o * n + k) * inner + j)]);
    }
  return emit(out, std::move(r));
}

const OpRegistration slice_ops({
    {.name = "Split", .attributes = {"axis", "split"}, .shape = split_shape, .parameters_from = 1},
    {.name = "Slice",
     .attributes = {"starts", "ends", "axes"},
     .shape = [](const ShapeContext& cx) {
       return std::vector<Shape>{slice_spec(cx.g, cx.in(0), cx.n.inputs, cx.attrs).dims};
     },
     .fold = fold_slice,
     .parameters_from = 1},
    {.name = "Gather", .attributes = {"axis"}, .shape = gather_shape, .fold = fold_gather, .parameters_from = 1},
});

}  // namespace

}  // namespace nnmeter::onnx_io
