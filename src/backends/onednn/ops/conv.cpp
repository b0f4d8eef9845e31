// Conv: one oneDNN convolution with format_tag::any, weights reordered once at load.
#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

std::vector<Shape> conv_shape(const ShapeContext& cx) {
  const Shape& x = cx.in(0);
  const Shape& w = cx.in(1);
  cx.require_rank(x, 3, 5, "input 0");
  if (w.size() != x.size()) cx.attrs.fail("W", fmt::format("rank {} does not match the input rank {}", w.size(), x.size()));
  const int64_t group = cx.attrs.i("group", 1);
  if (group <= 0 || w[0] % group || x[1] != w[1] * group)
    cx.attrs.fail("group", fmt::format("= {} does not fit input {} and weights {}", group, shape_str(x), shape_str(w)));
  if (cx.has_input(2) && cx.in(2) != Shape{w[0]}) cx.attrs.fail("B", "must have one value per output channel");
  SpatialParams p;
  p.kernel.assign(w.begin() + 2, w.end());
  const auto ks = cx.attrs.ints("kernel_shape");
  if (!ks.empty() && Shape(ks.begin(), ks.end()) != p.kernel) cx.attrs.fail("kernel_shape", "does not match the weights");
  Shape out{x[0], w[0]};
  const Shape sp = conv_like_output(x, p, cx.attrs, false);
  out.insert(out.end(), sp.begin(), sp.end());
  return {out};
}

memory weights_memory(Lowering& cx, const Node& n, const memory::dims& wdims, const memory::desc& want) {
  const Graph& g = cx.graph();
  const int w = n.inputs[1];
  if (n.weight || g.is_const(w)) return cx.constant_memory(n.weight ? *n.weight : g.constant(w), wdims, want);
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
  const bool has_bias = n.bias || (n.inputs.size() > 2 && n.inputs[2] >= 0);
  const auto bias_md = has_bias ? any_md({ws[0]}) : memory::desc();
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                    any_md(to_dims(xs)), any_md(wdims), bias_md, any_md(to_dims(ys)),
                                    to_dims(p.strides), minus_one(p.dilations), to_dims(p.pad_begin),
                                    to_dims(p.pad_end));
  const dnnl::convolution_forward::primitive_desc pd(d, make_attr(n.post_ops), cx.engine());
  std::unordered_map<int, memory> args;
  args[DNNL_ARG_SRC] = cx.as_desc(n.inputs[0], pd.src_desc());
  args[DNNL_ARG_WEIGHTS] = weights_memory(cx, n, wdims, pd.weights_desc());
  if (has_bias) {
    if (n.bias) args[DNNL_ARG_BIAS] = cx.host_memory(*n.bias, pd.bias_desc());
    else args[DNNL_ARG_BIAS] = cx.as_desc(n.inputs[2], pd.bias_desc());
  }
  args[DNNL_ARG_DST] = conv_dst(cx, n, pd.dst_desc());
  cx.add_step(dnnl::convolution_forward(pd), std::move(args), step_info(pd, n, "convolution"));
}

const OpRegistration conv_ops({
    {.name = "Conv",
     .attributes = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"},
     .shape = conv_shape,
     .lower = lower_conv,
     .parameters_from = 1,
     .picks_layout = true},
});

}  // namespace

memory conv_dst(Lowering& cx, const Node& n, const memory::desc& md) {
  const auto it = std::find_if(n.post_ops.begin(), n.post_ops.end(), [](const PostOp& p) { return p.kind == PostOp::Kind::Sum; });
  if (it == n.post_ops.end()) return cx.new_output(n.outputs[0], md);
  const Graph& g = cx.graph();
  const int r = it->residual;
  const memory& rm = cx.mem(r);
  int absorbed = -1;  // the Add that became this sum post-op
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].removed && g.nodes[i].name == it->from) absorbed = static_cast<int>(i);
  if (rm.get_desc() == md && cx.overwritable(r, absorbed)) {
    cx.bind_alias(n.outputs[0], rm, r);
    return rm;
  }
  memory dst = cx.new_output(n.outputs[0], md);
  cx.reorder_step(rm, dst, "residual copy for " + n.name);
  return dst;
}

}  // namespace nnmeter::onednn
