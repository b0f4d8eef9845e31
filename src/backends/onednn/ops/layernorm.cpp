// LayerNormalization, and the opset-13 LayerNorm pattern the passes collapse into one node: oneDNN's layer
// normalization over the last dimension of a row-major [outer, inner] view, the normalized dimensions
// merged into inner.
#include <tuple>

#include "backends/onednn/ops/op.h"
#include "onnx_io/ops/op.h"

namespace nnmeter::onednn {

namespace {

LayerNorm spec_of(const Graph& g, const Node& n) {
  if (g.of(n).layer_norm) return *g.of(n).layer_norm;
  const Attrs a = g.attrs(*n.proto);
  LayerNorm ln;
  ln.axis = normalize_axis(a.i("axis", -1), static_cast<int64_t>(g.value(n.inputs[0]).shape.size()), a, "axis");
  ln.epsilon = a.f("epsilon", 1e-5f);
  ln.scale = g.constant(n.inputs[1]);
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) ln.bias = g.constant(n.inputs[2]);
  return ln;
}

// The value of the node's ONNX output `slot`, -1 when the model leaves it unnamed.
int output_value(const Graph& g, const Node& n, int slot) {
  if (g.of(n).layer_norm || slot >= n.proto->output_size() || n.proto->output(slot).empty()) return -1;
  return g.value_index.at(n.proto->output(slot));
}

// A scale or bias broadcast to the normalized dimensions, as oneDNN's one value per element of inner.
HostTensor per_element(const HostTensor& t, const Shape& normalized) {
  const HostTensor zero{HostTensor::DType::F32, {}, {0.0}};
  HostTensor r = onnx_io::broadcast_binary(t, zero, normalized, [](double v, double) { return v; });
  r.dtype = HostTensor::DType::F32;
  r.dims = {numel(normalized)};
  return r;
}

}  // namespace

void lower_layer_norm(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const LayerNorm ln = spec_of(g, n);
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Shape normalized(xs.begin() + ln.axis, xs.end());
  const Shape view{numel(Shape(xs.begin(), xs.begin() + ln.axis)), numel(normalized)};
  // Mean and InvStdDev (ONNX's optional outputs) are the statistics oneDNN writes when training.
  const int mean_out = output_value(g, n, 1), inv_out = output_value(g, n, 2);
  const bool stats = mean_out >= 0 || inv_out >= 0;
  auto flags = dnnl::normalization_flags::none;
  if (ln.scale) flags = flags | dnnl::normalization_flags::use_scale;
  if (ln.bias) flags = flags | dnnl::normalization_flags::use_shift;
  const memory src = cx.alias(cx.as_plain(n.inputs[0]), view);
  cx.keep(src);
  const auto prop = stats ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  dnnl::layer_normalization_forward::desc d(prop, src.get_desc(), ln.epsilon, flags);
  const dnnl::layer_normalization_forward::primitive_desc pd(d, cx.engine());
  memory dst(pd.dst_desc(), cx.engine());
  cx.keep(dst);
  cx.bind(n.outputs[0], cx.alias(dst, g.value(n.outputs[0]).shape));
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
  if (ln.scale) args[DNNL_ARG_SCALE] = cx.host_memory(per_element(*ln.scale, normalized), plain_md({view[1]}));
  if (ln.bias) args[DNNL_ARG_SHIFT] = cx.host_memory(per_element(*ln.bias, normalized), plain_md({view[1]}));
  memory mean, variance;
  if (stats) {
    mean = memory(pd.mean_desc(), cx.engine());
    variance = memory(pd.variance_desc(), cx.engine());
    args[DNNL_ARG_MEAN] = mean;
    args[DNNL_ARG_VARIANCE] = variance;
  }
  Json step = cx.step_info(pd, n, "layer_normalization");
  if (g.of(n).layer_norm) step["as"] = "LayerNorm";
  cx.add_step(dnnl::layer_normalization_forward(pd), std::move(args), std::move(step));
  if (!stats) return;
  cx.keep(mean);
  if (mean_out >= 0) cx.bind(mean_out, cx.alias(mean, g.value(mean_out).shape));
  if (inv_out < 0) return;
  // InvStdDev = (variance + epsilon)^-0.5: two eltwise steps into its own buffer.
  memory inv(variance.get_desc(), cx.engine());
  cx.keep(variance);
  cx.keep(inv);
  memory from = variance;
  for (const auto& [alg, alpha, beta] : {std::tuple{dnnl::algorithm::eltwise_linear, 1.f, ln.epsilon},
                                         std::tuple{dnnl::algorithm::eltwise_pow, 1.f, -0.5f}}) {
    dnnl::eltwise_forward::desc ed(dnnl::prop_kind::forward_inference, alg, inv.get_desc(), alpha, beta);
    const dnnl::eltwise_forward::primitive_desc epd(ed, cx.engine());
    cx.add_step(dnnl::eltwise_forward(epd), {{DNNL_ARG_SRC, from}, {DNNL_ARG_DST, inv}},
                cx.step_info(epd, n, "eltwise"));
    from = inv;
  }
  cx.bind(inv_out, cx.alias(inv, g.value(inv_out).shape));
}

namespace {

const OpRegistration layer_norm_ops({
    {.name = "LayerNormalization", .lower = lower_layer_norm},
});

}  // namespace

}  // namespace nnmeter::onednn
