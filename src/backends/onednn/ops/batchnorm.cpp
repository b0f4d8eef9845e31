// BatchNormalization (inference): folded into a preceding Conv by the passes, else run here.
#include <cmath>

#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

void lower_batchnorm_primitive(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const memory& x = cx.mem(n.inputs[0]);
  const int64_t c = g.value(n.inputs[0]).shape[1];
  auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale_shift;
  if (!g.of(n).post_ops.empty()) flags = flags | dnnl::normalization_flags::fuse_norm_relu;
  const float eps = cx.attrs(n).f("epsilon", 1e-5f);
  dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, x.get_desc(), eps, flags);
  const dnnl::batch_normalization_forward::primitive_desc pd(d, cx.engine());
  HostTensor ss{HostTensor::DType::F32, {2, c}, g.constant(n.inputs[1]).data};
  const auto& shift = g.constant(n.inputs[2]).data;
  ss.data.insert(ss.data.end(), shift.begin(), shift.end());
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, x},
                                       {DNNL_ARG_SCALE_SHIFT, cx.host_memory(ss, pd.weights_desc())},
                                       {DNNL_ARG_MEAN, cx.host_memory(g.constant(n.inputs[3]), pd.mean_desc())},
                                       {DNNL_ARG_VARIANCE, cx.host_memory(g.constant(n.inputs[4]), pd.variance_desc())},
                                       {DNNL_ARG_DST, cx.new_output(n.outputs[0], pd.dst_desc())}};
  if (pd.workspace_desc().get_size()) args[DNNL_ARG_WORKSPACE] = memory(pd.workspace_desc(), cx.engine());
  cx.add_step(dnnl::batch_normalization_forward(pd), std::move(args), cx.step_info(pd, n, "batch_normalization"));
}

// Inference BatchNormalization is a per-channel affine map x·a + b. oneDNN's batch-norm primitive has a
// fast kernel only for blocked layouts (on NHWC or plain data it is far slower than a ReLU; docs/cli-backends.md),
// while a depthwise 1x1 conv is JIT-compiled for each of them: 4-D inputs run as one, in the layout they arrive in.
void lower_batchnorm(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const Shape& xs = g.value(n.inputs[0]).shape;
  if (xs.size() != 4) return lower_batchnorm_primitive(cx, n);
  const int64_t c = xs[1];
  const double eps = cx.attrs(n).f("epsilon", 1e-5f);
  const auto &scale = g.constant(n.inputs[1]).data, &shift = g.constant(n.inputs[2]).data;
  const auto &mean = g.constant(n.inputs[3]).data, &var = g.constant(n.inputs[4]).data;
  HostTensor w{HostTensor::DType::F32, {c, 1, 1, 1, 1}, {}}, b{HostTensor::DType::F32, {c}, {}};
  for (size_t i = 0; i < static_cast<size_t>(c); ++i) {
    const double a = scale[i] / std::sqrt(var[i] + eps);
    w.data.push_back(a);
    b.data.push_back(shift[i] - mean[i] * a);
  }
  const memory::dims wdims{c, 1, 1, 1, 1};
  const memory::desc& arrived = cx.mem(n.inputs[0]).get_desc();
  const memory::desc src_md = arrived == plain_md(xs) ? any_md(to_dims(xs)) : arrived;
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md,
                                    any_md(wdims), any_md({c}), any_md(to_dims(xs)), {1, 1}, {0, 0}, {0, 0});
  const dnnl::convolution_forward::primitive_desc pd(d, make_attr(g.of(n).post_ops), cx.engine());
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, cx.as_desc(n.inputs[0], pd.src_desc())},
                                       {DNNL_ARG_WEIGHTS, cx.constant_memory(w, wdims, pd.weights_desc())},
                                       {DNNL_ARG_BIAS, cx.constant_memory(b, {c}, pd.bias_desc())}};
  args[DNNL_ARG_DST] = conv_dst(cx, n, pd.dst_desc());
  Json step = cx.step_info(pd, n, "convolution");
  step["as"] = "depthwise 1x1 convolution";
  cx.add_step(dnnl::convolution_forward(pd), std::move(args), std::move(step));
}

const OpRegistration batchnorm_ops({
    {.name = "BatchNormalization", .lower = lower_batchnorm},
});

}  // namespace

}  // namespace nnmeter::onednn
