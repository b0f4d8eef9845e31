// ReduceMean.
#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

// A mean over all spatial dimensions is a global average pooling: oneDNN's reduction has only
// reference code for the NHWC and blocked layouts convs write, its pooling has jitted kernels.
bool spatial_mean(Lowering& cx, const Node& n, const Shape& kept) {
  const Graph& g = cx.graph();
  const Shape& xs = g.value(n.inputs[0]).shape;
  const memory& src = cx.mem(n.inputs[0]);
  if (xs.size() < 3 || kept == xs) return false;
  Shape nc(xs.begin(), xs.begin() + 2);
  nc.resize(xs.size(), 1);
  if (kept != nc) return false;
  memory pooled = pooling(cx, src, dnnl::algorithm::pooling_avg_exclude_padding, global_params(xs), kept, n);
  cx.keep(pooled);
  if (!viewable(pooled.get_desc())) {
    memory plain(plain_md(kept), cx.engine());
    cx.reorder_step(pooled, plain, "layout of " + n.name);
    pooled = plain;
  }
  const auto to = to_dims(g.value(n.outputs[0]).shape);
  const auto strides = *reshape_strides(pooled.get_desc().dims(), strides_of(pooled.get_desc()), to);
  cx.bind(n.outputs[0], memory(memory::desc(to, memory::data_type::f32, strides), cx.engine(), pooled.get_data_handle()));
  return true;
}

void lower_reduce_mean(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Attrs a = cx.attrs(n);
  auto axes = axes_of(g, n.inputs, 1, a).value_or(std::vector<int64_t>{});
  Shape kept = xs;
  for (auto ax : axes) kept[static_cast<size_t>(normalize_axis(ax, static_cast<int64_t>(xs.size()), a, "axes"))] = 1;
  if (axes.empty()) std::fill(kept.begin(), kept.end(), 1);
  if (spatial_mean(cx, n, kept)) return;
  const memory& src = cx.mem(n.inputs[0]);
  if (kept == xs) {
    cx.bind_alias(n.outputs[0], cx.alias(cx.as_plain(n.inputs[0]), g.value(n.outputs[0]).shape), n.inputs[0]);
    return;
  }
  dnnl::reduction::desc d(dnnl::algorithm::reduction_mean, src.get_desc(), plain_md(kept), 0.f, 0.f);
  const dnnl::reduction::primitive_desc pd(d, cx.engine());
  memory dst(pd.dst_desc(), cx.engine());
  cx.keep(dst);
  cx.bind(n.outputs[0], cx.alias(dst, g.value(n.outputs[0]).shape));
  cx.add_step(dnnl::reduction(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, cx.step_info(pd, n, "reduction"));
}

const OpRegistration reduce_ops({
    {.name = "ReduceMean", .lower = lower_reduce_mean},
});

}  // namespace

}  // namespace nnmeter::onednn
