// Concat.
#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

namespace {

using DType = HostTensor::DType;

std::vector<Shape> concat_shape(const ShapeContext& cx) {
  Shape out = cx.in(0);
  const int64_t axis = normalize_axis(cx.attrs.i("axis", 1), static_cast<int64_t>(out.size()), cx.attrs, "axis");
  out[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < cx.n.inputs.size(); ++i) {
    const Shape& s = cx.in(i);
    if (s.size() != out.size()) cx.attrs.fail("axis", "inputs have different ranks");
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) != axis && s[d] != out[d])
        cx.attrs.fail("axis", fmt::format("inputs {} and {} differ outside the concat axis", shape_str(cx.in(0)), shape_str(s)));
    out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  return {out};
}

bool fold_concat(const FoldContext& cx, std::vector<HostTensor>& out) {
  const auto& first = cx.c(0);
  const auto rank = static_cast<int64_t>(first.dims.size());
  const int64_t axis = normalize_axis(cx.attrs.i("axis", 0), rank, cx.attrs, "axis");
  HostTensor r;
  r.dtype = first.dtype;
  r.dims = first.dims;
  r.dims[static_cast<size_t>(axis)] = 0;
  const int64_t outer = numel(Shape(first.dims.begin(), first.dims.begin() + axis));
  std::vector<std::vector<double>> parts(static_cast<size_t>(outer));
  for (size_t i = 0; i < cx.in.size(); ++i) {
    const auto& t = cx.c(i);
    if (t.dims.size() != first.dims.size()) cx.attrs.fail("axis", "inputs have different ranks");
    r.dims[static_cast<size_t>(axis)] += t.dims[static_cast<size_t>(axis)];
    const int64_t chunk = outer ? t.numel() / std::max<int64_t>(outer, 1) : 0;
    for (int64_t o = 0; o < outer; ++o)
      parts[static_cast<size_t>(o)].insert(parts[static_cast<size_t>(o)].end(), t.data.begin() + o * chunk,
                                           t.data.begin() + (o + 1) * chunk);
    if (t.dtype == DType::F32) r.dtype = DType::F32;
  }
  for (auto& p : parts) r.data.insert(r.data.end(), p.begin(), p.end());
  return emit(out, std::move(r));
}

const OpRegistration concat_ops({
    {.name = "Concat", .attributes = {"axis"}, .shape = concat_shape, .fold = fold_concat},
});

}  // namespace

}  // namespace nnmeter::onnx_io
