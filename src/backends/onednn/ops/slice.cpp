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

void lower_slice(Lowering& cx, const Node& n) {
  const SliceSpec spec = slice_spec(cx.graph(), cx.graph().value(n.inputs[0]).shape, n.inputs, cx.attrs(n));
  copy_region(cx, n.inputs[0], spec.start, spec.dims, spec.step, n.outputs[0], "slice " + n.name);
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
    {.name = "Split", .lower = lower_split},
    {.name = "Slice", .lower = lower_slice},
    {.name = "Gather", .lower = lower_gather},
});

}  // namespace

}  // namespace nnmeter::onednn
