// Max and average pooling, windowed and global.
#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

template <bool max, bool global>
void lower_pool(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Attrs a = cx.attrs(n);
  SpatialParams p;
  if (global) {
    p = global_params(xs);
  } else {
    const auto ks = a.ints("kernel_shape");
    p.kernel.assign(ks.begin(), ks.end());
    conv_like_output(xs, p, a, true);
  }
  memory src = cx.mem(n.inputs[0]);
  auto alg = max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
  if (!max && a.i("count_include_pad", 0)) {
    const bool explicit_only = p.pad_end == p.explicit_pad_end;
    alg = dnnl::algorithm::pooling_avg_include_padding;
    if (!explicit_only) {
      // ONNX counts explicit padding but not the trailing windows ceil_mode adds: pad for real, then
      // average excluding only the ceil_mode part.
      Shape begin(xs.size(), 0), end(xs.size(), 0);
      std::copy(p.pad_begin.begin(), p.pad_begin.end(), begin.begin() + 2);
      std::copy(p.explicit_pad_end.begin(), p.explicit_pad_end.end(), end.begin() + 2);
      src = padded(cx, src, xs, begin, end, 0.f);
      cx.keep(src);
      for (size_t i = 0; i < p.pad_end.size(); ++i) {
        p.pad_end[i] -= p.explicit_pad_end[i];
        p.pad_begin[i] = 0;
      }
      alg = dnnl::algorithm::pooling_avg_exclude_padding;
    }
  }
  cx.bind(n.outputs[0], pooling(cx, src, alg, p, g.value(n.outputs[0]).shape, n));
}

const OpRegistration pool_ops({
    {.name = "MaxPool", .lower = lower_pool<true, false>},
    {.name = "AveragePool", .lower = lower_pool<false, false>},
    {.name = "GlobalMaxPool", .lower = lower_pool<true, true>},
    {.name = "GlobalAveragePool", .lower = lower_pool<false, true>},
});

}  // namespace

memory pooling(Lowering& cx, const memory& src, dnnl::algorithm alg, const SpatialParams& p, const Shape& out,
               const Node& n) {
  dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, src.get_desc(), any_md(to_dims(out)),
                                   to_dims(p.strides), to_dims(p.kernel), minus_one(p.dilations),
                                   to_dims(p.pad_begin), to_dims(p.pad_end));
  const dnnl::pooling_v2_forward::primitive_desc pd(d, cx.engine());
  memory dst(pd.dst_desc(), cx.engine());
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
  if (pd.workspace_desc().get_size()) args[DNNL_ARG_WORKSPACE] = memory(pd.workspace_desc(), cx.engine());
  cx.add_step(dnnl::pooling_v2_forward(pd), std::move(args), cx.step_info(pd, n, "pooling"));
  return dst;
}

SpatialParams global_params(const Shape& xs) {
  SpatialParams p;
  p.kernel.assign(xs.begin() + 2, xs.end());
  p.strides.assign(p.kernel.size(), 1);
  p.dilations.assign(p.kernel.size(), 1);
  p.pad_begin.assign(p.kernel.size(), 0);
  p.pad_end = p.pad_begin;
  p.explicit_pad_end = p.pad_end;
  return p;
}

}  // namespace nnmeter::onednn
