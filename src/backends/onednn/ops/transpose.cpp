// Transpose: one reorder in the producer's own dimension order.
#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

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

// The dimensions the permutation moves keep their physical slots and are filled in logical output order
// there. Plain stays plain, and a channel shuffle of NHWC data (Reshape, Transpose, Reshape) stays NHWC,
// so the closing Reshape is a view.
void lower_transpose(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const Shape& xs = g.value(n.inputs[0]).shape;
  const auto perm = transpose_perm(xs, cx.attrs(n));
  memory src = cx.mem(n.inputs[0]);
  if (!viewable(src.get_desc()) || src.get_desc().dims().size() != xs.size()) src = cx.as_plain(n.inputs[0]);
  const auto in_strides = strides_of(src.get_desc());
  memory::dims dims, strides;
  for (auto p : perm) {
    dims.push_back(xs[static_cast<size_t>(p)]);
    strides.push_back(in_strides[static_cast<size_t>(p)]);
  }
  const memory view(memory::desc(dims, memory::data_type::f32, strides), cx.engine(), src.get_data_handle());
  cx.keep(view);
  std::vector<int> order = *dense_order(src.get_desc());
  std::vector<int> moved;
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) moved.push_back(static_cast<int>(i));
  auto next = moved.begin();
  for (auto& d : order)
    if (std::find(moved.begin(), moved.end(), d) != moved.end()) d = *next++;
  const memory dst = cx.new_output(n.outputs[0], dense_md(dims, order));
  cx.reorder_step(view, dst, "transpose " + n.name);
}

const OpRegistration transpose_ops({
    {.name = "Transpose", .attributes = {"perm"}, .shape = transpose_shape, .fold = fold_transpose, .lower = lower_transpose},
});

}  // namespace

}  // namespace nnmeter::onednn
