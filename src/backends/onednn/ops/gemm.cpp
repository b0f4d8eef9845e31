// Gemm and MatMul: one oneDNN matmul, constant weights in its own layout.
#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

// [batch..., M, K] x [batch..., K, N] with constant weights in oneDNN's own layout.
void matmul_common(Lowering& cx, const Node& n, memory src, const Shape& as, std::optional<HostTensor> wconst,
                   memory wruntime, const Shape& bs, std::optional<HostTensor> bias, const Shape& out_shape) {
  const size_t rank = std::max(as.size(), bs.size());
  Shape pa = pad_rank(as, rank), pb = pad_rank(bs, rank);
  Shape po(rank);
  for (size_t i = 0; i + 2 < rank; ++i) po[i] = std::max(pa[i], pb[i]);
  po[rank - 2] = pa[rank - 2];
  po[rank - 1] = pb[rank - 1];
  // Operands arrive row-major (or as a strided transposed view of full rank); lower ranks gain
  // leading batch dimensions of 1 over the same bytes.
  const memory::desc src_md = src.get_desc().dims().size() == rank ? src.get_desc() : plain_md(pa);
  const memory::desc w_md = wconst                                            ? any_md(to_dims(pb))
                            : wruntime.get_desc().dims().size() == rank ? wruntime.get_desc()
                                                                        : plain_md(pb);
  const memory::desc b_md = bias ? plain_md(pad_rank(bias->dims, rank)) : memory::desc();
  dnnl::matmul::desc d(src_md, w_md, b_md, plain_md(po));
  const dnnl::matmul::primitive_desc pd(d, make_attr(cx.graph().of(n).post_ops), cx.engine());
  std::unordered_map<int, memory> args;
  args[DNNL_ARG_SRC] = memory(src_md, cx.engine(), src.get_data_handle());
  cx.keep(src);
  if (wconst) {
    args[DNNL_ARG_WEIGHTS] = cx.constant_memory(*wconst, to_dims(pb), pd.weights_desc());
  } else {
    args[DNNL_ARG_WEIGHTS] = memory(w_md, cx.engine(), wruntime.get_data_handle());
    cx.keep(wruntime);
  }
  if (bias) args[DNNL_ARG_BIAS] = cx.host_memory(*bias, b_md);
  memory dst(pd.dst_desc(), cx.engine());
  cx.keep(dst);
  cx.bind(n.outputs[0], cx.alias(dst, out_shape));
  args[DNNL_ARG_DST] = dst;
  Json info = cx.step_info(pd, n, "matmul");
  info["src_dims"] = pd.src_desc().dims();  // what oneDNN multiplies: a batch of M x K, or one M x K
  cx.add_step(dnnl::matmul(pd), std::move(args), std::move(info));
}

// A row-major operand viewed with its last two dimensions swapped (Gemm transA/transB).
memory transposed_view(Lowering& cx, int value) {
  const memory plain = cx.as_plain(value);
  const Shape& s = cx.graph().value(value).shape;
  memory::dims dims{s[1], s[0]}, strides{1, s[1]};
  memory view(memory::desc(dims, memory::data_type::f32, strides), cx.engine(), plain.get_data_handle());
  cx.keep(plain);
  return view;
}

void lower_gemm(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const Attrs a = cx.attrs(n);
  const bool ta = a.i("transA", 0), tb = a.i("transB", 0);
  const float alpha = a.f("alpha", 1.f), beta = a.f("beta", 1.f);
  const Shape& as0 = g.value(n.inputs[0]).shape;
  const Shape& bs0 = g.value(n.inputs[1]).shape;
  const Shape as = ta ? Shape{as0[1], as0[0]} : as0;
  const Shape bs = tb ? Shape{bs0[1], bs0[0]} : bs0;
  const memory src = ta ? transposed_view(cx, n.inputs[0]) : cx.as_plain(n.inputs[0]);
  HostTensor w = g.constant(n.inputs[1]);
  if (tb) {
    HostTensor t{w.dtype, bs, std::vector<double>(w.data.size())};
    for (int64_t i = 0; i < bs[0]; ++i)
      for (int64_t j = 0; j < bs[1]; ++j)
        t.data[static_cast<size_t>(i * bs[1] + j)] = w.data[static_cast<size_t>(j * bs[0] + i)];
    w = std::move(t);
  }
  for (auto& v : w.data) v *= alpha;  // alpha folded into the constant weights
  std::optional<HostTensor> bias;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    HostTensor c = g.constant(n.inputs[2]);
    for (auto& v : c.data) v *= beta;
    Shape cs = pad_rank(c.dims, 2);
    if (cs[0] != 1 && cs[0] != as[0]) a.fail("C", "does not broadcast");
    c.dims = cs;
    bias = std::move(c);
  }
  matmul_common(cx, n, src, as, std::move(w), memory(), bs, bias, g.value(n.outputs[0]).shape);
}

void lower_matmul(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  Shape as = g.value(n.inputs[0]).shape, bs = g.value(n.inputs[1]).shape;
  memory src = cx.as_plain(n.inputs[0]);
  if (as.size() == 1) {
    as.insert(as.begin(), 1);
    src = cx.alias(src, as);
  }
  // A constant weight matrix: every leading axis of the input is rows of one product. Left batched, oneDNN runs
  // nn.MultiheadAttention's sequence-first projection, [T, 1, C] x [C, 3C], as T products of one row each.
  if (g.is_const(n.inputs[1]) && bs.size() == 2 && as.size() > 2) {
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < as.size(); ++i) rows *= as[i];
    as = {rows, as.back()};
    src = cx.alias(src, as);
  }
  std::optional<HostTensor> wconst;
  memory wrt;
  if (g.is_const(n.inputs[1])) {
    wconst = g.constant(n.inputs[1]);
    if (bs.size() == 1) bs.push_back(1);
    wconst->dims = bs;
  } else {
    wrt = cx.as_plain(n.inputs[1]);
    if (bs.size() == 1) bs.push_back(1);
    wrt = cx.alias(wrt, bs);
  }
  // A Linear's bias Add folded in at load (passes.cpp).
  matmul_common(cx, n, src, as, wconst, wrt, bs, g.of(n).bias, g.value(n.outputs[0]).shape);
}

const OpRegistration gemm_ops({
    {.name = "Gemm", .lower = lower_gemm, .picks_layout = true},
    {.name = "MatMul", .lower = lower_matmul, .picks_layout = true},
});

}  // namespace

}  // namespace nnmeter::onednn
