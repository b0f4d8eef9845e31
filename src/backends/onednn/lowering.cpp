// Layout helpers shared by the engine and the op lowerings, and the non-virtual part of Lowering.
#include "backends/onednn/lowering.h"

#include <algorithm>

namespace nnmeter::onednn {

namespace {

using dt = memory::data_type;

std::string post_op_name(const PostOp& p) {
  if (p.kind == PostOp::Kind::Sum) return "sum";
  switch (p.alg) {
    case dnnl::algorithm::eltwise_relu: return p.alpha == 0 ? "relu" : "leaky_relu";
    case dnnl::algorithm::eltwise_clip: return "clip";
    case dnnl::algorithm::eltwise_logistic: return "sigmoid";
    case dnnl::algorithm::eltwise_swish: return "swish";
    case dnnl::algorithm::eltwise_hardswish: return "hardswish";
    case dnnl::algorithm::eltwise_linear: return "linear";
    case dnnl::algorithm::eltwise_tanh: return "tanh";
    case dnnl::algorithm::eltwise_elu: return "elu";
    case dnnl::algorithm::eltwise_pow: return "pow";
    case dnnl::algorithm::eltwise_gelu_erf: return "gelu_erf";
    case dnnl::algorithm::eltwise_gelu_tanh: return "gelu_tanh";
    default: return "eltwise";
  }
}

}  // namespace

memory::dims to_dims(const Shape& s) { return s.empty() ? memory::dims{1} : memory::dims(s.begin(), s.end()); }

memory::desc plain_md(const Shape& s) {
  const auto d = to_dims(s);
  return memory::desc(d, dt::f32, row_major_strides(d));
}

memory::desc any_md(const memory::dims& d) { return memory::desc(d, dt::f32, memory::format_tag::any); }

std::optional<std::vector<int>> dense_order(const memory::desc& md) {
  const auto& d = md.data;
  if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks != 0) return std::nullopt;
  std::vector<int> order(static_cast<size_t>(d.ndims));
  for (int i = 0; i < d.ndims; ++i) order[static_cast<size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return d.format_desc.blocking.strides[a] > d.format_desc.blocking.strides[b]; });
  return order;
}

memory::desc dense_md(const memory::dims& d, const std::vector<int>& order) {
  // An order that moves only dimensions of size 1 is row-major in memory: say so. oneDNN's optimized binary
  // takes no other dense order, and ran a ViT's residual Add on [1, T, C] "bac" in its slow reference code (a
  // [1, T, C] → [T, 1, C] transpose and back, nn.MultiheadAttention's; bench/RESULTS-transformers.md).
  std::vector<int> sized;  // the order of the dimensions that are not 1
  for (int i : order)
    if (d[static_cast<size_t>(i)] != 1) sized.push_back(i);
  if (std::is_sorted(sized.begin(), sized.end())) return plain_md(Shape(d.begin(), d.end()));
  memory::dims strides(d.size());
  memory::dim s = 1;
  for (size_t i = order.size(); i-- > 0;) {
    strides[static_cast<size_t>(order[i])] = s;
    s *= d[static_cast<size_t>(order[i])];
  }
  return memory::desc(d, dt::f32, strides);
}

memory::desc canonical_md(const memory::desc& md) {
  const auto order = dense_order(md);
  if (!order || md.data.offset0 != 0) return md;
  const memory::desc dense = dense_md(md.dims(), *order);
  const auto have = strides_of(md), want = strides_of(dense);
  for (size_t i = 0; i < have.size(); ++i)
    if (md.dims()[i] != 1 && have[i] != want[i]) return md;  // a strided view, not dense
  return dense;
}

memory::desc dense_like(const memory::desc& like, const Shape& dims) {
  const auto order = dense_order(like);
  if (!order || order->size() != to_dims(dims).size()) return plain_md(dims);
  return dense_md(to_dims(dims), *order);
}

memory::dims strides_of(const memory::desc& md) {
  const auto& b = md.data.format_desc.blocking;
  return memory::dims(b.strides, b.strides + md.data.ndims);
}

bool viewable(const memory::desc& md) { return dense_order(md) && md.data.offset0 == 0; }

// Each group of dimensions merged or split must be contiguous.
// Keeps NHWC data in NHWC through Reshape instead of reordering it to plain first.
std::optional<memory::dims> reshape_strides(const memory::dims& dims, const memory::dims& strides, const memory::dims& to) {
  memory::dims od, os;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1) od.push_back(dims[i]), os.push_back(strides[i]);
  memory::dims ns(to.size(), 1);
  size_t oi = 0, ni = 0;
  while (ni < to.size() && oi < od.size()) {
    if (to[ni] == 1) {
      ++ni;
      continue;
    }
    size_t oj = oi + 1, nj = ni + 1;
    memory::dim np = to[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        if (nj == to.size()) return std::nullopt;
        np *= to[nj++];
      } else {
        if (oj == od.size()) return std::nullopt;
        op *= od[oj++];
      }
    }
    for (size_t k = oi; k + 1 < oj; ++k)
      if (os[k] != od[k + 1] * os[k + 1]) return std::nullopt;
    ns[nj - 1] = os[oj - 1];
    for (size_t k = nj - 1; k > ni; --k) ns[k - 1] = ns[k] * to[k];
    ni = nj;
    oi = oj;
  }
  // Any stride addresses the one index of a size-1 dimension; the largest keeps it outermost, where
  // dense_order() and the format tags put it.
  memory::dim outer = 1;
  for (size_t k = to.size(); k-- > 0;) {
    if (to[k] == 1) ns[k] = outer;
    else outer = std::max(outer, ns[k] * to[k]);
  }
  return ns;
}

Shape pad_rank(const Shape& s, size_t rank) {
  Shape out(rank - std::min(rank, s.size()), 1);
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

memory::dims minus_one(const Shape& s) {
  memory::dims out;
  for (auto v : s) out.push_back(v - 1);
  return out;
}

dnnl::primitive_attr make_attr(const std::vector<PostOp>& ops) {
  dnnl::post_ops po;
  for (const auto& p : ops) {
    if (p.kind == PostOp::Kind::Sum) po.append_sum(1.f);
    else po.append_eltwise(1.f, p.alg, p.alpha, p.beta);
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  return attr;
}

Json Lowering::step_info(const dnnl::primitive_desc_base& pd, const Node& n, const char* primitive) const {
  Json j{{"node", n.name}, {"op", n.op}, {"primitive", primitive}, {"impl", pd.impl_info_str()}};
  const Fusion& f = graph().of(n);
  if (!f.fused.empty()) j["fused"] = f.fused;
  if (!f.post_ops.empty()) {
    Json ops = Json::array();
    for (const auto& p : f.post_ops) ops.push_back(post_op_name(p));
    j["post_ops"] = ops;
  }
  return j;
}

memory Lowering::new_output(int value, const memory::desc& md) {
  memory m(md, engine());
  bind(value, m);
  return m;
}

memory Lowering::host_memory(const HostTensor& t, const memory::desc& md) const {
  memory m(md, engine());
  if (md.get_size() != t.data.size() * sizeof(float)) throw Error("internal: constant size does not match its layout");
  std::transform(t.data.begin(), t.data.end(), static_cast<float*>(m.get_data_handle()),
                 [](double v) { return static_cast<float>(v); });
  return m;
}

memory Lowering::alias(const memory& plain, const Shape& shape) const {
  return memory(plain_md(shape), engine(), plain.get_data_handle());
}

}  // namespace nnmeter::onednn
