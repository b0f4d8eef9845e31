// Transpose: one reorder in the producer's own dimension order.
#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

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
    {.name = "Transpose", .lower = lower_transpose},
});

}  // namespace

}  // namespace nnmeter::onednn
