// Activations and other elementwise unary ops: oneDNN eltwise steps, run in place after the first, and
// fusable as post-ops of the primitive before them.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

using dnnl::algorithm;

std::pair<float, float> clip_bounds(const Graph& g, const Node& n) {
  const Attrs attrs = g.attrs(*n.proto);
  float lo = -FLT_MAX, hi = FLT_MAX;
  if (g.opset < 11) {
    lo = attrs.f("min", lo);
    hi = attrs.f("max", hi);
  } else {
    if (n.inputs.size() > 1 && n.inputs[1] >= 0) lo = g.constant(n.inputs[1]).to_floats().at(0);
    if (n.inputs.size() > 2 && n.inputs[2] >= 0) hi = g.constant(n.inputs[2]).to_floats().at(0);
  }
  return {lo, hi};
}

// oneDNN raises to one scalar power (eltwise_pow: alpha · x^beta); an exponent tensor of one repeated
// value is that scalar.
std::vector<PostOp> pow_chain(const Graph& g, const Node& n) {
  const HostTensor& e = g.constant(n.inputs[1]);
  const bool scalar =
      !e.data.empty() && std::all_of(e.data.begin(), e.data.end(), [&](double v) { return v == e.data[0]; });
  if (!scalar || g.value(n.outputs[0]).shape != g.value(n.inputs[0]).shape)
    g.attrs(*n.proto).fail("input 1", fmt::format("(the exponent, shape {}) must be one value that leaves the base's "
                                                  "shape {}: oneDNN raises to a scalar power only",
                                                  shape_str(e.dims), shape_str(g.value(n.inputs[0]).shape)));
  return {eltwise_post_op(algorithm::eltwise_pow, 1.f, static_cast<float>(e.data[0]), n)};
}

// oneDNN 2.6 has no erf eltwise: the passes run GELU's exported chain around it as eltwise_gelu_erf
// (passes.cpp), and any other Erf is refused.
void refuse_erf(Lowering& cx, const Node& n) {
  throw Error(fmt::format("onednn_cpu cannot convert Erf node '{}' in {}: oneDNN has no erf, so Erf runs only inside "
                          "GELU's exported x*0.5*(1+Erf(x/sqrt(2)))", n.name, cx.graph().origin));
}

template <algorithm alg>
std::vector<PostOp> plain(const Graph&, const Node& n) {
  return {eltwise_post_op(alg, 0.f, 0.f, n)};
}

// An activation: lowered as its eltwise chain.
OpDef activation(std::string name, EltwiseRule eltwise) {
  return {.name = std::move(name), .lower = lower_eltwise, .eltwise = eltwise};
}

const OpRegistration eltwise_ops({
    activation("Relu", plain<algorithm::eltwise_relu>),
    activation("LeakyRelu",
               [](const Graph& g, const Node& n) -> std::vector<PostOp> {
                 return {eltwise_post_op(algorithm::eltwise_relu, g.attrs(*n.proto).f("alpha", 0.01f), 0.f, n)};
               }),
    activation("Clip",
               [](const Graph& g, const Node& n) -> std::vector<PostOp> {
                 const auto [lo, hi] = clip_bounds(g, n);
                 return {eltwise_post_op(algorithm::eltwise_clip, lo, hi, n)};
               }),
    activation("Sigmoid", plain<algorithm::eltwise_logistic>),
    activation("Tanh", plain<algorithm::eltwise_tanh>),
    activation("Elu",
               [](const Graph& g, const Node& n) -> std::vector<PostOp> {
                 return {eltwise_post_op(algorithm::eltwise_elu, g.attrs(*n.proto).f("alpha", 1.f), 0.f, n)};
               }),
    activation("Exp", plain<algorithm::eltwise_exp>),
    activation("Pow", pow_chain),
    {.name = "Erf", .lower = refuse_erf},
    activation("Abs", plain<algorithm::eltwise_abs>),
    activation("Sqrt", plain<algorithm::eltwise_sqrt>),
    activation("Neg",
               [](const Graph&, const Node& n) -> std::vector<PostOp> {
                 return {eltwise_post_op(algorithm::eltwise_linear, -1.f, 0.f, n)};
               }),
    activation("HardSwish", plain<algorithm::eltwise_hardswish>),
    activation("HardSigmoid",
               [](const Graph& g, const Node& n) -> std::vector<PostOp> {
                 const Attrs attrs = g.attrs(*n.proto);
                 return {eltwise_post_op(algorithm::eltwise_linear, attrs.f("alpha", 0.2f), attrs.f("beta", 0.5f), n),
                         eltwise_post_op(algorithm::eltwise_clip, 0.f, 1.f, n)};
               }),
});

}  // namespace

void lower_eltwise(Lowering& cx, const Node& n) {
  auto chain = eltwise_chain(cx.graph(), n);
  const auto& fused = cx.graph().of(n).post_ops;
  chain.insert(chain.end(), fused.begin(), fused.end());
  memory src = cx.mem(n.inputs[0]);
  const memory dst = cx.new_output(n.outputs[0], src.get_desc());
  for (const auto& p : chain) {
    dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, p.alg, src.get_desc(), p.alpha, p.beta);
    const dnnl::eltwise_forward::primitive_desc pd(d, cx.engine());
    Json step = cx.step_info(pd, n, "eltwise");
    if (!cx.graph().of(n).eltwise.empty()) step["as"] = "GELU";
    cx.add_step(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, step);
    src = dst;  // later steps of the chain run in place
  }
}

PostOp eltwise_post_op(dnnl::algorithm alg, float alpha, float beta, const Node& from) {
  PostOp p;
  p.alg = alg;
  p.alpha = alpha;
  p.beta = beta;
  p.from = from.name;
  return p;
}

}  // namespace nnmeter::onednn
