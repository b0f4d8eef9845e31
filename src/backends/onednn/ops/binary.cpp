// Elementwise binary and n-ary ops with numpy broadcasting: one oneDNN binary per pair of inputs.
#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

using DType = HostTensor::DType;

// An operand of a binary primitive that need not be a graph value (n-ary chains make temporaries).
struct Operand {
  memory mem;
  Shape shape;
  int value = -1;
};

// A full-rank view of an operand: same memory when ranks match, a row-major alias otherwise.
memory full_rank(Lowering& cx, const Operand& o, const Shape& padded) {
  if (o.shape.size() == padded.size() && !o.shape.empty()) return o.mem;
  memory plain = o.value >= 0 ? cx.as_plain(o.value) : o.mem;
  return cx.alias(plain, padded);
}

// A layout of `dims` oneDNN's optimized binary takes: channels-last for 4-D, row-major otherwise.
memory::desc unblocked_md(const memory::dims& dims) {
  if (dims.size() == 4) return memory::desc(dims, memory::data_type::f32, memory::format_tag::acdb);
  return plain_md(Shape(dims.begin(), dims.end()));
}

bool reference_impl(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

bool channel_blocked(const memory::desc& md) {
  return md.data.format_kind == dnnl_blocked && md.data.format_desc.blocking.inner_nblks > 0;
}

memory binary(Lowering& cx, dnnl::algorithm alg, Operand a, Operand b, const Shape& out, std::vector<PostOp> post,
              const Node& n, int out_value) {
  const size_t rank = std::max<size_t>(out.size(), 1);
  const Shape po = pad_rank(out, rank);
  Shape pa = pad_rank(a.shape, rank), pb = pad_rank(b.shape, rank);
  if (pa != po && pb == po) {
    std::swap(a, b);
    std::swap(pa, pb);
    // a - b = -(b - a) and a / b = 1 / (b / a): the swap is undone by a leading post-op.
    PostOp fix;
    if (alg == dnnl::algorithm::binary_sub) fix.alg = dnnl::algorithm::eltwise_linear, fix.alpha = -1.f;
    if (alg == dnnl::algorithm::binary_div) fix.alg = dnnl::algorithm::eltwise_pow, fix.alpha = 1.f, fix.beta = -1.f;
    if (alg == dnnl::algorithm::binary_sub || alg == dnnl::algorithm::binary_div) post.insert(post.begin(), fix);
  }
  if (pa != po) {
    // Neither operand has the output shape: broadcast `a` first (0 + a).
    HostTensor zeros{DType::F32, out, std::vector<double>(static_cast<size_t>(numel(out)), 0.0)};
    Operand z{cx.host_memory(zeros, plain_md(out)), out, -1};
    cx.keep(z.mem);
    memory full = binary(cx, dnnl::algorithm::binary_add, z, a, out, {}, n, -1);
    a = Operand{full, out, -1};
    pa = po;
  }
  memory src0 = full_rank(cx, a, pa);
  if (const memory::desc plain = canonical_md(src0.get_desc()); plain != src0.get_desc()) {
    src0 = memory(plain, cx.engine(), src0.get_data_handle());
    cx.keep(src0);
  }
  memory src1;
  if (pb == pa && b.value >= 0 && a.shape.size() == b.shape.size()) src1 = cx.as_desc(b.value, src0.get_desc());
  else if (pb == pa && b.value < 0 && b.mem.get_desc() == src0.get_desc()) src1 = b.mem;
  else src1 = full_rank(cx, b, pb);
  if (src1.get_desc().dims() == src0.get_desc().dims() && src1.get_desc() != src0.get_desc()) {
    memory re(src0.get_desc(), cx.engine());
    cx.reorder_step(src1, re, "layout of binary operand");
    src1 = re;
  }
  const auto make_pd = [&] {
    return dnnl::binary::primitive_desc(dnnl::binary::desc(alg, src0.get_desc(), src1.get_desc(), src0.get_desc()),
                                        make_attr(post), cx.engine());
  };
  dnnl::binary::primitive_desc pd = make_pd();
  if (reference_impl(pd) && channel_blocked(src0.get_desc())) {
    // Behind a grouped conv's output blocked by 8 channels (aBcd8b), oneDNN's optimized binary on AVX-512 takes no
    // broadcast operand: RegNetY's SE multiply (48 x 56 x 56) ran in the reference code at many times its cost,
    // and slowed the whole network with it (docs/cli-backends.md). One reorder to channels-last costs about what
    // the multiply does.
    const auto unblock = [&](const memory& m) {
      if (m.get_desc() == unblocked_md(m.get_desc().dims())) return m;
      memory re(unblocked_md(m.get_desc().dims()), cx.engine());
      cx.reorder_step(m, re, "a blocked operand that oneDNN's binary runs only in its reference code");
      return re;
    };
    src0 = unblock(src0);
    src1 = unblock(src1);
    pd = make_pd();
  }
  memory dst(pd.dst_desc(), cx.engine());
  if (out_value >= 0) cx.bind(out_value, out.size() == pa.size() ? dst : cx.alias(dst, out));
  if (out_value >= 0 && out.size() != pa.size()) cx.keep(dst);
  cx.add_step(dnnl::binary(pd), {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}},
              cx.step_info(pd, n, "binary"));
  return dst;
}

template <dnnl::algorithm alg>
void lower_nary(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  if (n.inputs.size() == 1) {
    cx.bind_alias(n.outputs[0], cx.mem(n.inputs[0]), n.inputs[0]);
    return;
  }
  Operand acc{cx.mem(n.inputs[0]), g.value(n.inputs[0]).shape, n.inputs[0]};
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const bool last = i + 1 == n.inputs.size();
    Operand b{cx.mem(n.inputs[i]), g.value(n.inputs[i]).shape, n.inputs[i]};
    const auto shape = *broadcast_shapes(acc.shape, b.shape);
    const memory r = binary(cx, alg, acc, b, shape, last ? g.of(n).post_ops : std::vector<PostOp>{}, n, last ? n.outputs[0] : -1);
    if (!last) cx.keep(r);
    acc = Operand{r, shape, -1};
  }
}

const OpRegistration binary_ops({
    {.name = "Add", .lower = lower_nary<dnnl::algorithm::binary_add>},
    {.name = "Sub", .lower = lower_nary<dnnl::algorithm::binary_sub>},
    {.name = "Mul", .lower = lower_nary<dnnl::algorithm::binary_mul>},
    {.name = "Div", .lower = lower_nary<dnnl::algorithm::binary_div>},
    {.name = "Sum", .lower = lower_nary<dnnl::algorithm::binary_add>},
    {.name = "Max", .lower = lower_nary<dnnl::algorithm::binary_max>},
    {.name = "Min", .lower = lower_nary<dnnl::algorithm::binary_min>},
});

}  // namespace

}  // namespace nnmeter::onednn
