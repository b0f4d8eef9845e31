// Elementwise binary and n-ary ops with numpy broadcasting (one oneDNN binary per pair of inputs), and
// the broadcasting ops folded at load time only.
#include <cmath>

#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

using DType = HostTensor::DType;

std::vector<Shape> nary_shape(const ShapeContext& cx) {
  if (cx.n.inputs.empty()) cx.attrs.fail("inputs", "are missing");
  Shape out = cx.in(0);
  for (size_t i = 1; i < cx.n.inputs.size(); ++i) {
    const auto s = broadcast_shapes(out, cx.in(i));
    if (!s) cx.attrs.fail("inputs", fmt::format("shapes {} and {} do not broadcast", shape_str(out), shape_str(cx.in(i))));
    out = *s;
  }
  cx.require_rank(out, 0, 12, "output");
  return {out};
}

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
  const memory src0 = full_rank(cx, a, pa);
  memory src1;
  if (pb == pa && b.value >= 0 && a.shape.size() == b.shape.size()) src1 = cx.as_desc(b.value, src0.get_desc());
  else if (pb == pa && b.value < 0 && b.mem.get_desc() == src0.get_desc()) src1 = b.mem;
  else src1 = full_rank(cx, b, pb);
  if (src1.get_desc().dims() == src0.get_desc().dims() && src1.get_desc() != src0.get_desc()) {
    memory re(src0.get_desc(), cx.engine());
    cx.reorder_step(src1, re, "layout of binary operand");
    src1 = re;
  }
  dnnl::binary::desc d(alg, src0.get_desc(), src1.get_desc(), src0.get_desc());
  const dnnl::binary::primitive_desc pd(d, make_attr(post), cx.engine());
  memory dst(pd.dst_desc(), cx.engine());
  if (out_value >= 0) cx.bind(out_value, out.size() == pa.size() ? dst : cx.alias(dst, out));
  if (out_value >= 0 && out.size() != pa.size()) cx.keep(dst);
  cx.add_step(dnnl::binary(pd), {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}},
              step_info(pd, n, "binary"));
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
    const memory r = binary(cx, alg, acc, b, shape, last ? n.post_ops : std::vector<PostOp>{}, n, last ? n.outputs[0] : -1);
    if (!last) cx.keep(r);
    acc = Operand{r, shape, -1};
  }
}

template <typename Fn>
bool fold_binary(const FoldContext& cx, std::vector<HostTensor>& out, Fn fn, std::optional<DType> dtype = std::nullopt) {
  const auto shape = broadcast_shapes(cx.c(0).dims, cx.c(1).dims);
  if (!shape)
    cx.attrs.fail("inputs", fmt::format("shapes {} and {} do not broadcast", shape_str(cx.c(0).dims), shape_str(cx.c(1).dims)));
  HostTensor r = broadcast_binary(cx.c(0), cx.c(1), *shape, fn);
  if (dtype) r.dtype = *dtype;
  if (r.dtype == DType::F32)
    for (auto& v : r.data) v = static_cast<float>(v);
  return emit(out, std::move(r));
}

bool fold_div(const FoldContext& cx, std::vector<HostTensor>& out) {
  const bool integer = cx.c(0).dtype == DType::I64 && cx.c(1).dtype == DType::I64;
  return fold_binary(cx, out, [integer](double a, double b) {
    if (!integer) return a / b;
    return b == 0 ? 0.0 : std::trunc(a / b);
  });
}

bool fold_where(const FoldContext& cx, std::vector<HostTensor>& out) {
  auto s = broadcast_shapes(cx.c(0).dims, cx.c(1).dims);
  if (s) s = broadcast_shapes(*s, cx.c(2).dims);
  if (!s) cx.attrs.fail("inputs", "do not broadcast");
  const HostTensor a = broadcast_binary(cx.c(1), cx.c(0), *s, [](double x, double cond) { return cond != 0 ? x : NAN; });
  HostTensor r = broadcast_binary(a, cx.c(2), *s, [](double x, double y) { return std::isnan(x) ? y : x; });
  r.dtype = cx.c(1).dtype;
  return emit(out, std::move(r));
}

bool fold_expand(const FoldContext& cx, std::vector<HostTensor>& out) {
  const auto target = broadcast_shapes(cx.c(0).dims, cx.c(1).to_ints());
  if (!target) cx.attrs.fail("shape", "does not broadcast with the input");
  HostTensor zero{cx.c(0).dtype, {}, {0.0}};
  return emit(out, broadcast_binary(cx.c(0), zero, *target, [](double a, double) { return a; }));
}

template <dnnl::algorithm alg>
OpDef nary(std::string name, FoldRule fold = nullptr) {
  return {.name = std::move(name), .shape = nary_shape, .fold = fold, .lower = lower_nary<alg>};
}

const OpRegistration binary_ops({
    nary<dnnl::algorithm::binary_add>(
        "Add", [](const FoldContext& cx, std::vector<HostTensor>& out) { return fold_binary(cx, out, std::plus<>()); }),
    nary<dnnl::algorithm::binary_sub>(
        "Sub", [](const FoldContext& cx, std::vector<HostTensor>& out) { return fold_binary(cx, out, std::minus<>()); }),
    nary<dnnl::algorithm::binary_mul>(
        "Mul", [](const FoldContext& cx, std::vector<HostTensor>& out) { return fold_binary(cx, out, std::multiplies<>()); }),
    nary<dnnl::algorithm::binary_div>("Div", fold_div),
    nary<dnnl::algorithm::binary_add>("Sum"),
    nary<dnnl::algorithm::binary_max>("Max"),
    nary<dnnl::algorithm::binary_min>("Min"),
    {.name = "Equal",
     .fold = [](const FoldContext& cx, std::vector<HostTensor>& out) {
       return fold_binary(cx, out, [](double a, double b) { return a == b ? 1.0 : 0.0; }, DType::I64);
     }},
    {.name = "Where", .fold = fold_where},
    {.name = "Expand", .fold = fold_expand},
});

}  // namespace

}  // namespace nnmeter::onednn
