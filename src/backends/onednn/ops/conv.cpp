// Conv: one oneDNN convolution with format_tag::any, weights reordered once at load.
#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

memory weights_memory(Lowering& cx, const Node& n, const memory::dims& wdims, const memory::desc& want) {
  const Graph& g = cx.graph();
  const int w = n.inputs[1];
  const auto& folded = g.of(n).weight;
  if (folded || g.is_const(w)) return cx.constant_memory(folded ? *folded : g.constant(w), wdims, want);
  const memory view(memory::desc(wdims, memory::data_type::f32, row_major_strides(wdims)), cx.engine(),
                    cx.as_plain(w).get_data_handle());
  cx.keep(view);
  if (view.get_desc() == want) return view;
  memory dst(want, cx.engine());
  cx.reorder_step(view, dst, "runtime weights of " + n.name);
  return dst;
}

void lower_conv(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Shape& ws = g.value(n.inputs[1]).shape;
  const Shape& ys = g.value(n.outputs[0]).shape;
  const Attrs a = cx.attrs(n);
  const int64_t group = a.i("group", 1);
  SpatialParams p;
  p.kernel.assign(ws.begin() + 2, ws.end());
  conv_like_output(xs, p, a, false);
  memory::dims wdims(ws.begin(), ws.end());
  if (group > 1) {
    wdims = {group, ws[0] / group};
    wdims.insert(wdims.end(), ws.begin() + 1, ws.end());
  }
  const Fusion& f = g.of(n);
  const bool has_bias = f.bias || (n.inputs.size() > 2 && n.inputs[2] >= 0);
  const auto bias_md = has_bias ? any_md({ws[0]}) : memory::desc();
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                    any_md(to_dims(xs)), any_md(wdims), bias_md, any_md(to_dims(ys)),
                                    to_dims(p.strides), minus_one(p.dilations), to_dims(p.pad_begin),
                                    to_dims(p.pad_end));
  const dnnl::convolution_forward::primitive_desc pd(d, make_attr(f.post_ops), cx.engine());
  std::unordered_map<int, memory> args;
  args[DNNL_ARG_SRC] = cx.as_desc(n.inputs[0], pd.src_desc());
  args[DNNL_ARG_WEIGHTS] = weights_memory(cx, n, wdims, pd.weights_desc());
  if (has_bias) {
    if (f.bias) args[DNNL_ARG_BIAS] = cx.host_memory(*f.bias, pd.bias_desc());
    else args[DNNL_ARG_BIAS] = cx.as_desc(n.inputs[2], pd.bias_desc());
  }
  args[DNNL_ARG_DST] = conv_dst(cx, n, pd.dst_desc());
  cx.add_step(dnnl::convolution_forward(pd), std::move(args), cx.step_info(pd, n, "convolution"));
}

const OpRegistration conv_ops({
    {.name = "Conv", .lower = lower_conv, .picks_layout = true},
});

}  // namespace

memory conv_dst(Lowering& cx, const Node& n, const memory::desc& md) {
  const Graph& g = cx.graph();
  const auto& post_ops = g.of(n).post_ops;
  const auto it = std::find_if(post_ops.begin(), post_ops.end(), [](const PostOp& p) { return p.kind == PostOp::Kind::Sum; });
  if (it == post_ops.end()) return cx.new_output(n.outputs[0], md);
  const int r = it->residual;
  const memory& rm = cx.mem(r);
  int absorbed = -1;  // the Add that became this sum post-op
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.fusions[i].removed && g.nodes[i].name == it->from) absorbed = static_cast<int>(i);
  if (rm.get_desc() == md && cx.overwritable(r, absorbed)) {
    cx.bind_alias(n.outputs[0], rm, r);
    return rm;
  }
  memory dst = cx.new_output(n.outputs[0], md);
  cx.reorder_step(rm, dst, "residual copy for " + n.name);
  return dst;
}

}  // namespace nnmeter::onednn
