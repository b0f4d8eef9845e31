// Split, Slice and Gather: regions of the input copied by reorders (views where the layout allows).
#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

// A region of `value` (offsets, dims, steps) copied into a new dense tensor bound to `out`.
void copy_region(Lowering& cx, int value, const Shape& offsets, const Shape& dims, const Shape& steps, int out,
                 const std::string& why) {
  const bool unit = std::all_of(steps.begin(), steps.end(), [](int64_t s) { return s == 1; });
  memory src = cx.mem(value);
  memory::desc sub;
  if (unit) sub = src.get_desc().submemory_desc(to_dims(dims), to_dims(offsets), true);
  if (!unit || sub.data.ndims == 0) {
    // Strided slices and blocked sources go through the row-major copy.
    src = cx.as_plain(value);
    const auto strides = row_major_strides(to_dims(cx.graph().value(value).shape));
    memory::dims view_strides;
    int64_t offset = 0;
    for (size_t i = 0; i < strides.size(); ++i) {
      view_strides.push_back(strides[i] * steps[i]);
      offset += offsets[i] * strides[i];
    }
    sub = memory::desc(to_dims(dims), memory::data_type::f32, view_strides);
    src = memory(sub, cx.engine(), static_cast<float*>(src.get_data_handle()) + offset);
  } else {
    src = memory(sub, cx.engine(), src.get_data_handle());
  }
  cx.keep(src);
  const memory dst = cx.new_output(out, dense_like(cx.mem(value).get_desc(), dims));
  cx.reorder_step(src, dst, why);
}

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

void lower_split(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Attrs a = cx.attrs(n);
  const int64_t axis = normalize_axis(a.i("axis", 0), static_cast<int64_t>(xs.size()), a, "axis");
  Shape offsets(xs.size(), 0);
  for (int out : n.outputs) {
    const Shape& os = g.value(out).shape;
    copy_region(cx, n.inputs[0], offsets, os, Shape(xs.size(), 1), out, "split " + n.name);
    offsets[static_cast<size_t>(axis)] += os[static_cast<size_t>(axis)];
  }
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

void lower_slice(Lowering& cx, const Node& n) {
  const SliceSpec spec = slice_spec(cx.graph(), cx.graph().value(n.inputs[0]).shape, n.inputs, cx.attrs(n));
  copy_region(cx, n.inputs[0], spec.start, spec.dims, spec.step, n.outputs[0], "slice " + n.name);
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

void lower_gather(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Attrs a = cx.attrs(n);
  const int64_t axis = normalize_axis(a.i("axis", 0), static_cast<int64_t>(xs.size()), a, "axis");
  const auto idx = g.constant(n.inputs[1]).to_ints();
  Shape kept = xs;
  kept[static_cast<size_t>(axis)] = static_cast<int64_t>(idx.size());
  const memory src = cx.as_plain(n.inputs[0]);
  memory dst(plain_md(kept), cx.engine());
  cx.keep(dst);
  Shape one = xs;
  one[static_cast<size_t>(axis)] = 1;
  for (size_t j = 0; j < idx.size(); ++j) {
    Shape from(xs.size(), 0), to(xs.size(), 0);
    from[static_cast<size_t>(axis)] = idx[j] < 0 ? idx[j] + xs[static_cast<size_t>(axis)] : idx[j];
    to[static_cast<size_t>(axis)] = static_cast<int64_t>(j);
    const memory s(src.get_desc().submemory_desc(to_dims(one), to_dims(from)), cx.engine(), src.get_data_handle());
    const memory d(dst.get_desc().submemory_desc(to_dims(one), to_dims(to)), cx.engine(), dst.get_data_handle());
    cx.keep(s);
    cx.keep(d);
    cx.reorder_step(s, d, "gather " + n.name);
  }
  cx.bind(n.outputs[0], cx.alias(dst, g.value(n.outputs[0]).shape));
}

const OpRegistration slice_ops({
    {.name = "Split",
     .attributes = {"axis", "split"},
     .shape = split_shape,
     .lower = lower_split,
     .parameters_from = 1},
    {.name = "Slice",
     .attributes = {"starts", "ends", "axes"},
     .shape = [](const ShapeContext& cx) {
       return std::vector<Shape>{slice_spec(cx.g, cx.in(0), cx.n.inputs, cx.attrs).dims};
     },
     .fold = fold_slice,
     .lower = lower_slice,
     .parameters_from = 1},
    {.name = "Gather",
     .attributes = {"axis"},
     .shape = gather_shape,
     .fold = fold_gather,
     .lower = lower_gather,
     .parameters_from = 1},
});

}  // namespace

}  // namespace nnmeter::onednn
