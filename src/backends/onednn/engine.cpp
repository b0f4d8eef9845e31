// Compiling a Graph into oneDNN primitives. Layout rules (after oneDNN's memory_format_propagation
// example): compute-heavy primitives (conv, matmul) get format_tag::any and their inputs are reordered
// only when the producer's layout differs; layout-agnostic primitives (eltwise, binary, pooling,
// batch norm, concat) run in whatever layout their input arrived in; ops defined on the logical
// row-major order (Reshape, Transpose, Softmax, ...) get a plain copy. Every reorder that exists is
// a step of the plan, so plan() shows exactly where layouts change.
#include "backends/onednn/engine.h"

#include <omp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "backends/onednn/graph_internal.h"
#include "backends/measure.h"

namespace nnmeter::onednn {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

memory::dims to_dims(const Shape& s) { return s.empty() ? memory::dims{1} : memory::dims(s.begin(), s.end()); }

memory::dims row_major_strides(const memory::dims& d) {
  memory::dims s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}

memory::desc plain_md(const Shape& s) {
  const auto d = to_dims(s);
  return memory::desc(d, dt::f32, row_major_strides(d));
}

memory::desc any_md(const memory::dims& d) { return memory::desc(d, dt::f32, tag::any); }

// A strided layout without blocking (abcd, acdb, ...): its dimension order by decreasing stride.
std::optional<std::vector<int>> dense_order(const memory::desc& md) {
  const auto& d = md.data;
  if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks != 0) return std::nullopt;
  std::vector<int> order(static_cast<size_t>(d.ndims));
  for (int i = 0; i < d.ndims; ++i) order[static_cast<size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return d.format_desc.blocking.strides[a] > d.format_desc.blocking.strides[b]; });
  return order;
}

// The dense layout of `d` whose dimensions, outermost first, are `order`.
memory::desc dense_md(const memory::dims& d, const std::vector<int>& order) {
  memory::dims strides(d.size());
  memory::dim s = 1;
  for (size_t i = order.size(); i-- > 0;) {
    strides[static_cast<size_t>(order[i])] = s;
    s *= d[static_cast<size_t>(order[i])];
  }
  return memory::desc(d, dt::f32, strides);
}

// A dense layout for `dims` with the same dimension order as `like` (keeps NHWC as NHWC), else plain.
memory::desc dense_like(const memory::desc& like, const Shape& dims) {
  const auto order = dense_order(like);
  if (!order || order->size() != to_dims(dims).size()) return plain_md(dims);
  return dense_md(to_dims(dims), *order);
}

memory::dims strides_of(const memory::desc& md) {
  const auto& b = md.data.format_desc.blocking;
  return memory::dims(b.strides, b.strides + md.data.ndims);
}

// Strided without blocking and starting at the buffer's start: Reshape and Transpose can view it.
bool viewable(const memory::desc& md) { return dense_order(md) && md.data.offset0 == 0; }

// The strides that show a dense strided tensor with another shape over the same bytes, when such a view
// exists (numpy's no-copy reshape rule): each group of dimensions merged or split must be contiguous.
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
    default: return "eltwise";
  }
}

// A reorder at the model's boundary: a graph input into its consumer's layout, or a graph output back
// to plain. Pipeline::Profiling leaves them out of the timed run.
enum class Edge { None, Input, Output };

struct Step {
  dnnl::primitive prim;
  std::unordered_map<int, memory> args;
  Json info;
  Edge edge = Edge::None;
};

void mark_edge(Step& s, Edge edge, const std::string& tensor) {
  s.edge = edge;
  s.info["edge"] = edge == Edge::Input ? "input" : "output";
  s.info["tensor"] = tensor;
}

// Where a value lives: its memory (any layout) and the buffer it shares with its aliases.
struct Slot {
  memory mem;
  int buffer = -1;
  bool ready = false;
  bool pinned = false;  // must not be overwritten in place (graph input, padded border, constant)
  std::vector<memory> copies;  // reordered copies, reused by every consumer that wants that layout
};

// An operand of a binary primitive that need not be a graph value (n-ary chains make temporaries).
struct Operand {
  memory mem;
  Shape shape;
  int value = -1;
};

}  // namespace

struct Engine::Impl {
  Graph g;
  EngineOptions opt;
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  std::vector<Slot> slots;
  std::vector<std::vector<int>> buffer_values;
  std::vector<Step> steps;
  std::vector<memory> inputs;          // per graph input, plain
  std::vector<memory> outputs;         // per graph output, plain
  std::vector<memory> keep;            // memories referenced only through aliases
  int current = -1;                    // node being compiled
  bool inputs_staged = false;          // the input edge reorders ran since the last set_inputs()
  std::vector<backends::ByteRange> footprint;    // every buffer a run touches, found once after compile()

  void run_steps(Pipeline p) {
    for (auto& s : steps)
      if (p == Pipeline::Inference || s.edge == Edge::None) s.prim.execute(strm, s.args);
    strm.wait();
  }

  // The buffers a pipeline's first steps read from outside: for Profiling the staged copies the input
  // edges write (or the plain input where no edge stages it), for Inference the plain inputs.
  std::vector<backends::ByteRange> arrivals(Pipeline p) const {
    std::vector<backends::ByteRange> out;
    for (const auto& in : inputs) {
      bool read_directly = p == Pipeline::Inference;
      for (const auto& s : steps) {
        if (s.edge == Edge::Output || (p == Pipeline::Inference && s.edge == Edge::Input)) continue;
        for (const auto& [arg, m] : s.args) {
          if (arg == DNNL_ARG_DST || m.get_data_handle() != in.get_data_handle()) continue;
          if (s.edge == Edge::Input) out.push_back(byte_range(s.args.at(DNNL_ARG_DST)));
          else read_directly = true;
        }
      }
      if (read_directly) out.push_back(byte_range(in));
    }
    return out;
  }

  static backends::ByteRange byte_range(const memory& m) {
    return {static_cast<const uint8_t*>(m.get_data_handle()), m.get_desc().get_size()};
  }

  void collect_footprint() {
    std::map<const uint8_t*, size_t> ranges;
    auto add = [&](const memory& m) {
      if (!m) return;
      const backends::ByteRange r = byte_range(m);
      if (r.data != nullptr && r.size > 0) ranges[r.data] = std::max(ranges[r.data], r.size);
    };
    for (const auto& s : steps)
      for (const auto& [arg, m] : s.args) add(m);
    for (const auto* group : {&inputs, &outputs, &keep})
      for (const auto& m : *group) add(m);
    for (const auto& [data, size] : ranges) footprint.push_back({data, size});
  }

  void stage_inputs() {
    for (auto& s : steps)
      if (s.edge == Edge::Input) s.prim.execute(strm, s.args);
    strm.wait();
    inputs_staged = true;
  }

  // -------------------------------------------------------------------------------------------------
  // Buffers and layouts

  int new_buffer(int value) {
    buffer_values.push_back({value});
    return static_cast<int>(buffer_values.size() - 1);
  }

  void bind(int value, memory mem, int buffer = -1) {
    auto& s = slots[static_cast<size_t>(value)];
    s.mem = std::move(mem);
    s.ready = true;
    if (buffer < 0) {
      s.buffer = new_buffer(value);
    } else {
      s.buffer = buffer;
      buffer_values[static_cast<size_t>(buffer)].push_back(value);
    }
  }

  memory host_memory(const HostTensor& t, const memory::desc& md) {
    memory m(md, eng);
    const auto f = t.to_floats();
    if (md.get_size() != f.size() * sizeof(float)) throw Error("internal: constant size does not match its layout");
    std::memcpy(m.get_data_handle(), f.data(), md.get_size());
    return m;
  }

  // The memory of a value; constants materialize lazily in plain layout.
  const memory& mem(int value) {
    auto& s = slots[static_cast<size_t>(value)];
    if (!s.ready) {
      const auto& v = g.value(value);
      if (!v.constant) throw Error(fmt::format("internal: tensor '{}' used before it is computed", v.name));
      bind(value, host_memory(*v.constant, plain_md(v.shape)));
      slots[static_cast<size_t>(value)].pinned = true;
    }
    return slots[static_cast<size_t>(value)].mem;
  }

  void add_step(dnnl::primitive prim, std::unordered_map<int, memory> args, Json info) {
    steps.push_back({std::move(prim), std::move(args), std::move(info)});
  }

  void reorder_step(const memory& from, const memory& to, const std::string& why) {
    dnnl::reorder r(from, to);
    add_step(r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}},
             {{"primitive", "reorder"}, {"why", why},
              {"impl", dnnl::reorder::primitive_desc(from, to).impl_info_str()}});
  }

  // The value in layout `want`: the value itself when it already has it, else a reordered copy (made
  // once at load for constants, a pipeline step for runtime values) shared by all consumers.
  memory as_desc(int value, const memory::desc& want) {
    const memory& m = mem(value);
    if (m.get_desc() == want) return m;
    auto& s = slots[static_cast<size_t>(value)];
    for (const auto& c : s.copies)
      if (c.get_desc() == want) return c;
    memory copy(want, eng);
    if (g.is_const(value)) {
      dnnl::reorder(m, copy).execute(strm, const_cast<memory&>(m), copy);
      strm.wait();
    } else {
      reorder_step(m, copy, "layout of '" + g.value(value).name + "'");
      // A graph input read in another layout: inside a network its producer would have written that
      // layout. The copy is only ever read, so staging it once serves every later run.
      if (g.value(value).graph_input && m.get_data_handle() == inputs_handle(value))
        mark_edge(steps.back(), Edge::Input, g.value(value).name);
    }
    s.copies.push_back(copy);
    return copy;
  }

  memory as_plain(int value) { return as_desc(value, plain_md(g.value(value).shape)); }

  // The buffer set_inputs() writes for graph input `value`, or null.
  void* inputs_handle(int value) const {
    for (size_t i = 0; i < g.inputs.size() && i < inputs.size(); ++i)
      if (g.inputs[i] == value) return inputs[i].get_data_handle();
    return nullptr;
  }

  // The same bytes seen with another shape (row-major data only).
  memory alias(const memory& plain, const Shape& shape) {
    return memory(plain_md(shape), eng, plain.get_data_handle());
  }

  int buffer_of(const memory& m) const {
    for (size_t v = 0; v < slots.size(); ++v)
      if (slots[v].ready && slots[v].mem.get_data_handle() == m.get_data_handle()) return slots[v].buffer;
    return -1;
  }

  void bind_alias(int value, const memory& view, int source) {
    bind(value, view, slots[static_cast<size_t>(source)].mem.get_data_handle() == view.get_data_handle()
                          ? slots[static_cast<size_t>(source)].buffer
                          : buffer_of(view));
  }

  // No later step reads the buffer of `value`, so a primitive may accumulate into it.
  bool overwritable(int value, int absorbed_consumer) const {
    const auto& s = slots[static_cast<size_t>(value)];
    if (s.pinned) return false;
    for (int v : buffer_values[static_cast<size_t>(s.buffer)]) {
      const auto& val = g.value(v);
      if (val.graph_output || val.graph_input || slots[static_cast<size_t>(v)].pinned) return false;
      // The node being compiled counts too: a conv must not accumulate into its own input.
      for (int c : val.consumers)
        if (c >= current && c != absorbed_consumer) return false;
    }
    return true;
  }

  memory new_output(int value, const memory::desc& md) {
    memory m(md, eng);
    bind(value, m);
    return m;
  }

  // -------------------------------------------------------------------------------------------------
  // Ops

  Attrs attrs(const Node& n) const { return Attrs(*n.proto, g.origin); }

  template <typename PD>
  Json info(const PD& pd, const Node& n, const char* primitive) const {
    Json j{{"node", n.name}, {"op", n.op}, {"primitive", primitive}, {"impl", pd.impl_info_str()}};
    if (!n.fused.empty()) j["fused"] = n.fused;
    if (!n.post_ops.empty()) {
      Json ops = Json::array();
      for (const auto& p : n.post_ops) ops.push_back(post_op_name(p));
      j["post_ops"] = ops;
    }
    return j;
  }

  // A load-time constant (row-major `dims`) in layout `want`, reordered once.
  memory constant_memory(const HostTensor& t, const memory::dims& dims, const memory::desc& want) {
    const memory src = host_memory(t, memory::desc(dims, dt::f32, row_major_strides(dims)));
    memory dst(want, eng);
    dnnl::reorder(src, dst).execute(strm, const_cast<memory&>(src), dst);
    strm.wait();
    return dst;
  }

  memory weights_memory(const Node& n, const memory::dims& wdims, const memory::desc& want) {
    const int w = n.inputs[1];
    if (n.weight || g.is_const(w)) return constant_memory(n.weight ? *n.weight : g.constant(w), wdims, want);
    const memory view(memory::desc(wdims, dt::f32, row_major_strides(wdims)), eng, as_plain(w).get_data_handle());
    keep.push_back(view);
    if (view.get_desc() == want) return view;
    memory dst(want, eng);
    reorder_step(view, dst, "runtime weights of " + n.name);
    return dst;
  }

  void conv(const Node& n) {
    const Shape& xs = g.value(n.inputs[0]).shape;
    const Shape& ws = g.value(n.inputs[1]).shape;
    const Shape& ys = g.value(n.outputs[0]).shape;
    const Attrs a = attrs(n);
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
    const dnnl::convolution_forward::primitive_desc pd(d, make_attr(n.post_ops), eng);
    std::unordered_map<int, memory> args;
    args[DNNL_ARG_SRC] = as_desc(n.inputs[0], pd.src_desc());
    args[DNNL_ARG_WEIGHTS] = weights_memory(n, wdims, pd.weights_desc());
    if (has_bias) {
      if (n.bias) args[DNNL_ARG_BIAS] = host_memory(*n.bias, pd.bias_desc());
      else args[DNNL_ARG_BIAS] = as_desc(n.inputs[2], pd.bias_desc());
    }
    args[DNNL_ARG_DST] = conv_dst(n, pd.dst_desc());
    add_step(dnnl::convolution_forward(pd), std::move(args), info(pd, n, "convolution"));
  }

  // The destination of a conv; with a sum post-op it must already hold the residual.
  memory conv_dst(const Node& n, const memory::desc& md) {
    const auto it = std::find_if(n.post_ops.begin(), n.post_ops.end(), [](const PostOp& p) { return p.kind == PostOp::Kind::Sum; });
    if (it == n.post_ops.end()) return new_output(n.outputs[0], md);
    const int r = it->residual;
    const memory& rm = mem(r);
    int absorbed = -1;  // the Add that became this sum post-op
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (g.nodes[i].removed && g.nodes[i].name == it->from) absorbed = static_cast<int>(i);
    if (rm.get_desc() == md && overwritable(r, absorbed)) {
      bind(n.outputs[0], rm, slots[static_cast<size_t>(r)].buffer);
      return rm;
    }
    memory dst = new_output(n.outputs[0], md);
    reorder_step(rm, dst, "residual copy for " + n.name);
    return dst;
  }

  // Inference BatchNormalization is a per-channel affine map x·a + b. oneDNN's batch-norm primitive has a
  // fast kernel only for blocked layouts (on NHWC or plain data ~12 ns per element, 60x a ReLU), while a
  // depthwise 1x1 conv is JIT-compiled for each of them: 4-D inputs run as one, in the layout they arrive in.
  void batchnorm(const Node& n) {
    const Shape& xs = g.value(n.inputs[0]).shape;
    if (xs.size() != 4) return batchnorm_primitive(n);
    const int64_t c = xs[1];
    const double eps = attrs(n).f("epsilon", 1e-5f);
    const auto &scale = g.constant(n.inputs[1]).data, &shift = g.constant(n.inputs[2]).data;
    const auto &mean = g.constant(n.inputs[3]).data, &var = g.constant(n.inputs[4]).data;
    HostTensor w{HostTensor::DType::F32, {c, 1, 1, 1, 1}, {}}, b{HostTensor::DType::F32, {c}, {}};
    for (size_t i = 0; i < static_cast<size_t>(c); ++i) {
      const double a = scale[i] / std::sqrt(var[i] + eps);
      w.data.push_back(a);
      b.data.push_back(shift[i] - mean[i] * a);
    }
    const memory::dims wdims{c, 1, 1, 1, 1};
    const memory::desc& arrived = mem(n.inputs[0]).get_desc();
    const memory::desc src_md = arrived == plain_md(xs) ? any_md(to_dims(xs)) : arrived;
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md,
                                      any_md(wdims), any_md({c}), any_md(to_dims(xs)), {1, 1}, {0, 0}, {0, 0});
    const dnnl::convolution_forward::primitive_desc pd(d, make_attr(n.post_ops), eng);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, as_desc(n.inputs[0], pd.src_desc())},
                                         {DNNL_ARG_WEIGHTS, constant_memory(w, wdims, pd.weights_desc())},
                                         {DNNL_ARG_BIAS, constant_memory(b, {c}, pd.bias_desc())}};
    args[DNNL_ARG_DST] = conv_dst(n, pd.dst_desc());
    Json step = info(pd, n, "convolution");
    step["as"] = "depthwise 1x1 convolution";
    add_step(dnnl::convolution_forward(pd), std::move(args), std::move(step));
  }

  void batchnorm_primitive(const Node& n) {
    const memory& x = mem(n.inputs[0]);
    const int64_t c = g.value(n.inputs[0]).shape[1];
    auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale_shift;
    if (!n.post_ops.empty()) flags = flags | dnnl::normalization_flags::fuse_norm_relu;
    const float eps = attrs(n).f("epsilon", 1e-5f);
    dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, x.get_desc(), eps, flags);
    const dnnl::batch_normalization_forward::primitive_desc pd(d, eng);
    HostTensor ss{HostTensor::DType::F32, {2, c}, g.constant(n.inputs[1]).data};
    const auto& shift = g.constant(n.inputs[2]).data;
    ss.data.insert(ss.data.end(), shift.begin(), shift.end());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, x},
                                         {DNNL_ARG_SCALE_SHIFT, host_memory(ss, pd.weights_desc())},
                                         {DNNL_ARG_MEAN, host_memory(g.constant(n.inputs[3]), pd.mean_desc())},
                                         {DNNL_ARG_VARIANCE, host_memory(g.constant(n.inputs[4]), pd.variance_desc())},
                                         {DNNL_ARG_DST, new_output(n.outputs[0], pd.dst_desc())}};
    if (pd.workspace_desc().get_size()) args[DNNL_ARG_WORKSPACE] = memory(pd.workspace_desc(), eng);
    add_step(dnnl::batch_normalization_forward(pd), std::move(args), info(pd, n, "batch_normalization"));
  }

  void eltwise(const Node& n) {
    auto chain = eltwise_chain(g, n);
    chain.insert(chain.end(), n.post_ops.begin(), n.post_ops.end());
    memory src = mem(n.inputs[0]);
    const memory dst = new_output(n.outputs[0], src.get_desc());
    for (const auto& p : chain) {
      dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, p.alg, src.get_desc(), p.alpha, p.beta);
      const dnnl::eltwise_forward::primitive_desc pd(d, eng);
      add_step(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, info(pd, n, "eltwise"));
      src = dst;  // later steps of the chain run in place
    }
  }

  // A full-rank view of an operand: same memory when ranks match, a row-major alias otherwise.
  memory full_rank(const Operand& o, const Shape& padded) {
    if (o.shape.size() == padded.size() && !o.shape.empty()) return o.mem;
    memory plain = o.value >= 0 ? as_plain(o.value) : o.mem;
    return alias(plain, padded);
  }

  memory binary(dnnl::algorithm alg, Operand a, Operand b, const Shape& out, std::vector<PostOp> post, const Node& n,
                int out_value) {
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
      HostTensor zeros{HostTensor::DType::F32, out, std::vector<double>(static_cast<size_t>(numel(out)), 0.0)};
      Operand z{host_memory(zeros, plain_md(out)), out, -1};
      keep.push_back(z.mem);
      memory full = binary(dnnl::algorithm::binary_add, z, a, out, {}, n, -1);
      a = Operand{full, out, -1};
      pa = po;
    }
    const memory src0 = full_rank(a, pa);
    memory src1;
    if (pb == pa && b.value >= 0 && a.shape.size() == b.shape.size()) src1 = as_desc(b.value, src0.get_desc());
    else if (pb == pa && b.value < 0 && b.mem.get_desc() == src0.get_desc()) src1 = b.mem;
    else src1 = full_rank(b, pb);
    if (src1.get_desc().dims() == src0.get_desc().dims() && src1.get_desc() != src0.get_desc()) {
      memory re(src0.get_desc(), eng);
      reorder_step(src1, re, "layout of binary operand");
      src1 = re;
    }
    dnnl::binary::desc d(alg, src0.get_desc(), src1.get_desc(), src0.get_desc());
    const dnnl::binary::primitive_desc pd(d, make_attr(post), eng);
    memory dst(pd.dst_desc(), eng);
    if (out_value >= 0) bind(out_value, out.size() == pa.size() ? dst : alias(dst, out));
    if (out_value >= 0 && out.size() != pa.size()) keep.push_back(dst);
    add_step(dnnl::binary(pd), {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}},
             info(pd, n, "binary"));
    return dst;
  }

  static dnnl::algorithm binary_alg(const std::string& op) {
    if (op == "Add" || op == "Sum") return dnnl::algorithm::binary_add;
    if (op == "Sub") return dnnl::algorithm::binary_sub;
    if (op == "Mul") return dnnl::algorithm::binary_mul;
    if (op == "Div") return dnnl::algorithm::binary_div;
    if (op == "Max") return dnnl::algorithm::binary_max;
    return dnnl::algorithm::binary_min;
  }

  void nary(const Node& n) {
    const auto alg = binary_alg(n.op);
    if (n.inputs.size() == 1) {
      bind_alias(n.outputs[0], mem(n.inputs[0]), n.inputs[0]);
      return;
    }
    Operand acc{mem(n.inputs[0]), g.value(n.inputs[0]).shape, n.inputs[0]};
    for (size_t i = 1; i < n.inputs.size(); ++i) {
      const bool last = i + 1 == n.inputs.size();
      Operand b{mem(n.inputs[i]), g.value(n.inputs[i]).shape, n.inputs[i]};
      const auto shape = *broadcast_shapes(acc.shape, b.shape);
      const memory r = binary(alg, acc, b, shape, last ? n.post_ops : std::vector<PostOp>{}, n, last ? n.outputs[0] : -1);
      if (!last) keep.push_back(r);
      acc = Operand{r, shape, -1};
    }
  }

  // Zero-or-value padding of `src` into a new dense buffer; the border is written once, here.
  memory padded(const memory& src, const Shape& in, const Shape& begin, const Shape& end, float value) {
    Shape out = in;
    for (size_t i = 0; i < in.size(); ++i) out[i] += begin[i] + end[i];
    const memory::desc md = dense_like(src.get_desc(), out);
    memory dst(md, eng);
    std::fill_n(static_cast<float*>(dst.get_data_handle()), md.get_size() / sizeof(float), value);
    const memory inner(md.submemory_desc(to_dims(in), to_dims(begin)), eng, dst.get_data_handle());
    keep.push_back(inner);
    reorder_step(src, inner, "pad");
    return dst;
  }

  void pool(const Node& n, bool global) {
    const Shape& xs = g.value(n.inputs[0]).shape;
    const Attrs a = attrs(n);
    SpatialParams p;
    if (global) {
      p = global_params(xs);
    } else {
      const auto ks = a.ints("kernel_shape");
      p.kernel.assign(ks.begin(), ks.end());
      conv_like_output(xs, p, a, true);
    }
    const bool max = n.op == "MaxPool" || n.op == "GlobalMaxPool";
    memory src = mem(n.inputs[0]);
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
        src = padded(src, xs, begin, end, 0.f);
        keep.push_back(src);
        for (size_t i = 0; i < p.pad_end.size(); ++i) {
          p.pad_end[i] -= p.explicit_pad_end[i];
          p.pad_begin[i] = 0;
        }
        alg = dnnl::algorithm::pooling_avg_exclude_padding;
      }
    }
    bind(n.outputs[0], pooling(src, alg, p, g.value(n.outputs[0]).shape, n));
  }

  memory pooling(const memory& src, dnnl::algorithm alg, const SpatialParams& p, const Shape& out, const Node& n) {
    dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, src.get_desc(), any_md(to_dims(out)),
                                     to_dims(p.strides), to_dims(p.kernel), minus_one(p.dilations),
                                     to_dims(p.pad_begin), to_dims(p.pad_end));
    const dnnl::pooling_v2_forward::primitive_desc pd(d, eng);
    memory dst(pd.dst_desc(), eng);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
    if (pd.workspace_desc().get_size()) args[DNNL_ARG_WORKSPACE] = memory(pd.workspace_desc(), eng);
    add_step(dnnl::pooling_v2_forward(pd), std::move(args), info(pd, n, "pooling"));
    return dst;
  }

  // A mean over all spatial dimensions is a global average pooling: oneDNN's reduction has only
  // reference code for the NHWC and blocked layouts convs write, its pooling has jitted kernels.
  bool spatial_mean(const Node& n, const Shape& kept) {
    const Shape& xs = g.value(n.inputs[0]).shape;
    const memory& src = mem(n.inputs[0]);
    if (xs.size() < 3 || kept == xs) return false;
    Shape nc(xs.begin(), xs.begin() + 2);
    nc.resize(xs.size(), 1);
    if (kept != nc) return false;
    memory pooled = pooling(src, dnnl::algorithm::pooling_avg_exclude_padding, global_params(xs), kept, n);
    keep.push_back(pooled);
    if (!viewable(pooled.get_desc())) {
      memory plain(plain_md(kept), eng);
      reorder_step(pooled, plain, "layout of " + n.name);
      pooled = plain;
    }
    const auto to = to_dims(g.value(n.outputs[0]).shape);
    const auto strides = *reshape_strides(pooled.get_desc().dims(), strides_of(pooled.get_desc()), to);
    bind(n.outputs[0], memory(memory::desc(to, dt::f32, strides), eng, pooled.get_data_handle()));
    return true;
  }

  static SpatialParams global_params(const Shape& xs) {
    SpatialParams p;
    p.kernel.assign(xs.begin() + 2, xs.end());
    p.strides.assign(p.kernel.size(), 1);
    p.dilations.assign(p.kernel.size(), 1);
    p.pad_begin.assign(p.kernel.size(), 0);
    p.pad_end = p.pad_begin;
    p.explicit_pad_end = p.pad_end;
    return p;
  }

  void reduce_mean(const Node& n) {
    const Shape& xs = g.value(n.inputs[0]).shape;
    const Attrs a = attrs(n);
    auto axes = axes_of(g, n.inputs, 1, a).value_or(std::vector<int64_t>{});
    Shape kept = xs;
    for (auto ax : axes) kept[static_cast<size_t>(normalize_axis(ax, static_cast<int64_t>(xs.size()), a, "axes"))] = 1;
    if (axes.empty()) std::fill(kept.begin(), kept.end(), 1);
    if (spatial_mean(n, kept)) return;
    const memory& src = mem(n.inputs[0]);
    if (kept == xs) {
      bind_alias(n.outputs[0], alias(as_plain(n.inputs[0]), g.value(n.outputs[0]).shape), n.inputs[0]);
      return;
    }
    dnnl::reduction::desc d(dnnl::algorithm::reduction_mean, src.get_desc(), plain_md(kept), 0.f, 0.f);
    const dnnl::reduction::primitive_desc pd(d, eng);
    memory dst(pd.dst_desc(), eng);
    keep.push_back(dst);
    bind(n.outputs[0], alias(dst, g.value(n.outputs[0]).shape));
    add_step(dnnl::reduction(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, info(pd, n, "reduction"));
  }

  // MatMul and Gemm: [batch..., M, K] x [batch..., K, N] with constant weights in oneDNN's own layout.
  void matmul_common(const Node& n, memory src, const Shape& as, std::optional<HostTensor> wconst, memory wruntime,
                     const Shape& bs, std::optional<HostTensor> bias, const Shape& out_shape) {
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
    const dnnl::matmul::primitive_desc pd(d, make_attr(n.post_ops), eng);
    std::unordered_map<int, memory> args;
    args[DNNL_ARG_SRC] = memory(src_md, eng, src.get_data_handle());
    keep.push_back(src);
    if (wconst) {
      const memory w = host_memory(*wconst, plain_md(pb));
      memory wd(pd.weights_desc(), eng);
      dnnl::reorder(w, wd).execute(strm, const_cast<memory&>(w), wd);
      strm.wait();
      args[DNNL_ARG_WEIGHTS] = wd;
    } else {
      args[DNNL_ARG_WEIGHTS] = memory(w_md, eng, wruntime.get_data_handle());
      keep.push_back(wruntime);
    }
    if (bias) args[DNNL_ARG_BIAS] = host_memory(*bias, b_md);
    memory dst(pd.dst_desc(), eng);
    keep.push_back(dst);
    bind(n.outputs[0], alias(dst, out_shape));
    args[DNNL_ARG_DST] = dst;
    add_step(dnnl::matmul(pd), std::move(args), info(pd, n, "matmul"));
  }

  // A row-major operand viewed with its last two dimensions swapped (Gemm transA/transB).
  memory transposed_view(int value) {
    const memory plain = as_plain(value);
    const Shape& s = g.value(value).shape;
    memory::dims dims{s[1], s[0]}, strides{1, s[1]};
    memory view(memory::desc(dims, dt::f32, strides), eng, plain.get_data_handle());
    keep.push_back(plain);
    return view;
  }

  void gemm(const Node& n) {
    const Attrs a = attrs(n);
    const bool ta = a.i("transA", 0), tb = a.i("transB", 0);
    const float alpha = a.f("alpha", 1.f), beta = a.f("beta", 1.f);
    const Shape& as0 = g.value(n.inputs[0]).shape;
    const Shape& bs0 = g.value(n.inputs[1]).shape;
    const Shape as = ta ? Shape{as0[1], as0[0]} : as0;
    const Shape bs = tb ? Shape{bs0[1], bs0[0]} : bs0;
    const memory src = ta ? transposed_view(n.inputs[0]) : as_plain(n.inputs[0]);
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
    matmul_common(n, src, as, std::move(w), memory(), bs, bias, g.value(n.outputs[0]).shape);
  }

  void matmul(const Node& n) {
    Shape as = g.value(n.inputs[0]).shape, bs = g.value(n.inputs[1]).shape;
    memory src = as_plain(n.inputs[0]);
    if (as.size() == 1) {
      as.insert(as.begin(), 1);
      src = alias(src, as);
    }
    std::optional<HostTensor> wconst;
    memory wrt;
    if (g.is_const(n.inputs[1])) {
      wconst = g.constant(n.inputs[1]);
      if (bs.size() == 1) bs.push_back(1);
      wconst->dims = bs;
    } else {
      wrt = as_plain(n.inputs[1]);
      if (bs.size() == 1) bs.push_back(1);
      wrt = alias(wrt, bs);
    }
    matmul_common(n, src, as, wconst, wrt, bs, std::nullopt, g.value(n.outputs[0]).shape);
  }

  void reshape_like(const Node& n) {
    const memory& src = mem(n.inputs[0]);
    const auto to = to_dims(g.value(n.outputs[0]).shape);
    const auto strides = viewable(src.get_desc()) ? reshape_strides(src.get_desc().dims(), strides_of(src.get_desc()), to)
                                                  : std::nullopt;
    if (!strides) {
      bind_alias(n.outputs[0], alias(as_plain(n.inputs[0]), g.value(n.outputs[0]).shape), n.inputs[0]);
      return;
    }
    bind_alias(n.outputs[0], memory(memory::desc(to, dt::f32, *strides), eng, src.get_data_handle()), n.inputs[0]);
  }

  void passthrough(const Node& n) { bind_alias(n.outputs[0], mem(n.inputs[0]), n.inputs[0]); }

  // One reorder in the producer's own dimension order: the dimensions the permutation moves keep their
  // physical slots and are filled in logical output order there. Plain stays plain, and a channel
  // shuffle of NHWC data (Reshape, Transpose, Reshape) stays NHWC, so the closing Reshape is a view.
  void transpose(const Node& n) {
    const Shape& xs = g.value(n.inputs[0]).shape;
    const auto perm = transpose_perm(xs, attrs(n));
    memory src = mem(n.inputs[0]);
    if (!viewable(src.get_desc()) || src.get_desc().dims().size() != xs.size()) src = as_plain(n.inputs[0]);
    const auto in_strides = strides_of(src.get_desc());
    memory::dims dims, strides;
    for (auto p : perm) {
      dims.push_back(xs[static_cast<size_t>(p)]);
      strides.push_back(in_strides[static_cast<size_t>(p)]);
    }
    const memory view(memory::desc(dims, dt::f32, strides), eng, src.get_data_handle());
    keep.push_back(view);
    std::vector<int> order = *dense_order(src.get_desc());
    std::vector<int> moved;
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) moved.push_back(static_cast<int>(i));
    auto next = moved.begin();
    for (auto& d : order)
      if (std::find(moved.begin(), moved.end(), d) != moved.end()) d = *next++;
    const memory dst = new_output(n.outputs[0], dense_md(dims, order));
    reorder_step(view, dst, "transpose " + n.name);
  }

  // Concat, channel shuffle and Split in one pass: part j of g fills channels j, j + g, j + 2g, ... of
  // the shuffled tensor, whose channel ranges are the outputs; they keep the first part's dimension order.
  void concat_shuffled(const Node& n) {
    const auto groups = n.shuffle_groups;
    std::vector<memory> parts;
    for (int in : n.inputs) parts.push_back(viewable(mem(in).get_desc()) ? mem(in) : as_plain(in));
    int64_t first = 0;  // the first channel of the current output, per part
    for (int out : n.outputs) {
      const Shape& os = g.value(out).shape;
      const memory dst = new_output(out, dense_like(parts[0].get_desc(), os));
      auto strides = strides_of(dst.get_desc());
      const auto channel = strides[1];
      strides[1] *= groups;
      Shape dims = os, offsets(os.size(), 0);
      dims[1] /= groups;
      offsets[1] = first;
      for (int64_t j = 0; j < groups; ++j) {
        const memory& part = parts[static_cast<size_t>(j)];
        const memory src(part.get_desc().submemory_desc(to_dims(dims), to_dims(offsets)), eng, part.get_data_handle());
        const memory place(memory::desc(to_dims(dims), dt::f32, strides), eng,
                           static_cast<float*>(dst.get_data_handle()) + j * channel);
        keep.push_back(src);
        keep.push_back(place);
        reorder_step(src, place, "shuffle " + n.name);
      }
      first += dims[1];
    }
  }

  void concat(const Node& n) {
    if (n.shuffle_groups) return concat_shuffled(n);
    const int64_t axis = normalize_axis(attrs(n).i("axis", 1), static_cast<int64_t>(g.value(n.outputs[0]).shape.size()),
                                        attrs(n), "axis");
    std::vector<memory::desc> mds;
    std::vector<memory> srcs;
    for (int in : n.inputs) {
      if (numel(g.value(in).shape) == 0) continue;
      srcs.push_back(mem(in));
      mds.push_back(srcs.back().get_desc());
    }
    const dnnl::concat::primitive_desc pd(static_cast<int>(axis), mds, eng);
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return concat_by_reorders(n, static_cast<size_t>(axis), srcs, pd.dst_desc());
    std::unordered_map<int, memory> args;
    for (size_t i = 0; i < srcs.size(); ++i) args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = srcs[i];
    args[DNNL_ARG_DST] = new_output(n.outputs[0], pd.dst_desc());
    add_step(dnnl::concat(pd), std::move(args), info(pd, n, "concat"));
  }

  // oneDNN concatenates inputs of mixed layouts with reference code; one reorder per input into its
  // slice of the output converts the layout and places the data in the same pass.
  void concat_by_reorders(const Node& n, size_t axis, const std::vector<memory>& srcs, const memory::desc& picked) {
    const memory dst = new_output(n.outputs[0], concat_layout(picked, srcs, axis));
    memory::dims offsets(picked.dims().size(), 0);
    for (const auto& src : srcs) {
      const memory slice(dst.get_desc().submemory_desc(src.get_desc().dims(), offsets), eng, dst.get_data_handle());
      keep.push_back(slice);
      reorder_step(src, slice, "concat " + n.name);
      offsets[axis] += src.get_desc().dims()[axis];
    }
  }

  // oneDNN's choice when every input's slice of it is addressable (blocks not cut), else the dense
  // order of the first unblocked input, else plain.
  static memory::desc concat_layout(const memory::desc& picked, const std::vector<memory>& srcs, size_t axis) {
    std::vector<memory::desc> candidates{picked};
    for (const auto& src : srcs)
      if (viewable(src.get_desc())) candidates.push_back(dense_like(src.get_desc(), Shape(picked.dims())));
    candidates.push_back(plain_md(Shape(picked.dims())));
    for (const auto& c : candidates) {
      memory::dims offsets(c.dims().size(), 0);
      bool fits = true;
      for (const auto& src : srcs) {
        fits = fits && c.submemory_desc(src.get_desc().dims(), offsets, true).data.ndims != 0;
        offsets[axis] += src.get_desc().dims()[axis];
      }
      if (fits) return c;
    }
    return candidates.back();
  }

  // A region of `value` (offsets, dims, steps) copied into a new dense tensor bound to `out`.
  void copy_region(int value, const Shape& offsets, const Shape& dims, const Shape& steps, int out, const std::string& why) {
    const bool unit = std::all_of(steps.begin(), steps.end(), [](int64_t s) { return s == 1; });
    memory src = mem(value);
    memory::desc sub;
    if (unit) sub = src.get_desc().submemory_desc(to_dims(dims), to_dims(offsets), true);
    if (!unit || sub.data.ndims == 0) {
      // Strided slices and blocked sources go through the row-major copy.
      src = as_plain(value);
      const auto strides = row_major_strides(to_dims(g.value(value).shape));
      memory::dims view_strides;
      int64_t offset = 0;
      for (size_t i = 0; i < strides.size(); ++i) {
        view_strides.push_back(strides[i] * steps[i]);
        offset += offsets[i] * strides[i];
      }
      sub = memory::desc(to_dims(dims), dt::f32, view_strides);
      src = memory(sub, eng, static_cast<float*>(src.get_data_handle()) + offset);
    } else {
      src = memory(sub, eng, src.get_data_handle());
    }
    keep.push_back(src);
    const memory dst = new_output(out, dense_like(mem(value).get_desc(), dims));
    reorder_step(src, dst, why);
  }

  void split(const Node& n) {
    const Shape& xs = g.value(n.inputs[0]).shape;
    const Attrs a = attrs(n);
    const int64_t axis = normalize_axis(a.i("axis", 0), static_cast<int64_t>(xs.size()), a, "axis");
    Shape offsets(xs.size(), 0);
    for (int out : n.outputs) {
      const Shape& os = g.value(out).shape;
      copy_region(n.inputs[0], offsets, os, Shape(xs.size(), 1), out, "split " + n.name);
      offsets[static_cast<size_t>(axis)] += os[static_cast<size_t>(axis)];
    }
  }

  void slice(const Node& n) {
    const SliceSpec spec = slice_spec(g, g.value(n.inputs[0]).shape, n.inputs, attrs(n));
    copy_region(n.inputs[0], spec.start, spec.dims, spec.step, n.outputs[0], "slice " + n.name);
  }

  void gather(const Node& n) {
    const Shape& xs = g.value(n.inputs[0]).shape;
    const Attrs a = attrs(n);
    const int64_t axis = normalize_axis(a.i("axis", 0), static_cast<int64_t>(xs.size()), a, "axis");
    const auto idx = g.constant(n.inputs[1]).to_ints();
    Shape kept = xs;
    kept[static_cast<size_t>(axis)] = static_cast<int64_t>(idx.size());
    const memory src = as_plain(n.inputs[0]);
    memory dst(plain_md(kept), eng);
    keep.push_back(dst);
    Shape one = xs;
    one[static_cast<size_t>(axis)] = 1;
    for (size_t j = 0; j < idx.size(); ++j) {
      Shape from(xs.size(), 0), to(xs.size(), 0);
      from[static_cast<size_t>(axis)] = idx[j] < 0 ? idx[j] + xs[static_cast<size_t>(axis)] : idx[j];
      to[static_cast<size_t>(axis)] = static_cast<int64_t>(j);
      const memory s(src.get_desc().submemory_desc(to_dims(one), to_dims(from)), eng, src.get_data_handle());
      const memory d(dst.get_desc().submemory_desc(to_dims(one), to_dims(to)), eng, dst.get_data_handle());
      keep.push_back(s);
      keep.push_back(d);
      reorder_step(s, d, "gather " + n.name);
    }
    bind(n.outputs[0], alias(dst, g.value(n.outputs[0]).shape));
  }

  void pad(const Node& n) {
    const Shape& xs = g.value(n.inputs[0]).shape;
    const Attrs a = attrs(n);
    std::vector<int64_t> pads = a.ints("pads");
    if (pads.empty()) pads = g.constant(n.inputs[1]).to_ints();
    float value = a.f("value", 0.f);
    if (n.inputs.size() > 2 && n.inputs[2] >= 0) value = g.constant(n.inputs[2]).to_floats().at(0);
    const Shape begin(pads.begin(), pads.begin() + static_cast<long>(xs.size()));
    const Shape end(pads.begin() + static_cast<long>(xs.size()), pads.end());
    bind(n.outputs[0], padded(mem(n.inputs[0]), xs, begin, end, value));
    slots[static_cast<size_t>(n.outputs[0])].pinned = true;
  }

  void softmax(const Node& n) {
    const Shape& xs = g.value(n.inputs[0]).shape;
    const Attrs a = attrs(n);
    const int64_t axis = normalize_axis(a.i("axis", g.opset < 13 ? 1 : -1), static_cast<int64_t>(xs.size()), a, "axis");
    Shape view = xs;
    int64_t vaxis = axis;
    if (g.opset < 13) {
      // Before opset 13 Softmax normalizes over all dimensions from `axis` on, as one flattened row.
      view = {numel(Shape(xs.begin(), xs.begin() + axis)), numel(Shape(xs.begin() + axis, xs.end()))};
      vaxis = 1;
    }
    const memory src = alias(as_plain(n.inputs[0]), view);
    keep.push_back(src);
    dnnl::softmax_forward::desc d(dnnl::prop_kind::forward_inference, src.get_desc(), static_cast<int>(vaxis));
    const dnnl::softmax_forward::primitive_desc pd(d, eng);
    memory dst(pd.dst_desc(), eng);
    keep.push_back(dst);
    bind(n.outputs[0], alias(dst, xs));
    add_step(dnnl::softmax_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, info(pd, n, "softmax"));
  }

  void compile_node(const Node& n) {
    const auto& op = n.op;
    if (op == "Conv") return conv(n);
    if (op == "BatchNormalization") return batchnorm(n);
    if (!eltwise_chain(g, n).empty()) return eltwise(n);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Sum" || op == "Max" || op == "Min") return nary(n);
    if (op == "MaxPool" || op == "AveragePool") return pool(n, false);
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return pool(n, true);
    if (op == "ReduceMean") return reduce_mean(n);
    if (op == "Gemm") return gemm(n);
    if (op == "MatMul") return matmul(n);
    if (op == "Flatten" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze") return reshape_like(n);
    if (op == "Identity" || op == "Dropout" || op == "Cast") return passthrough(n);
    if (op == "Transpose") return transpose(n);
    if (op == "Concat") return concat(n);
    if (op == "Split") return split(n);
    if (op == "Slice") return slice(n);
    if (op == "Gather") return gather(n);
    if (op == "Pad") return pad(n);
    if (op == "Softmax") return softmax(n);
    throw Error(fmt::format("onednn_cpu cannot compile {} node '{}' in {}", op, n.name, g.origin));
  }

  void check_sizes() {
    for (const auto& n : g.nodes) {
      if (n.removed) continue;
      for (int v : n.outputs)
        if (numel(g.value(v).shape) == 0)
          throw Error(fmt::format("onednn_cpu cannot convert {} node '{}' in {}: output '{}' has zero elements {}", n.op,
                                  n.name, g.origin, g.value(v).name, shape_str(g.value(v).shape)));
    }
  }

  // The layouts oneDNN gives a 1x1 conv's source and destination for an activation of this NCHW shape:
  // what a layer inside a CNN reads and writes. None for other ranks.
  std::optional<std::pair<memory::desc, memory::desc>> conv_layouts(const Shape& s) {
    if (s.size() != 4) return std::nullopt;
    const memory::dims d = to_dims(s);
    const memory::desc any(d, dt::f32, tag::any);
    const memory::desc w({d[1], d[1], 1, 1}, dt::f32, tag::any);
    try {
      dnnl::convolution_forward::desc cd(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any,
                                         w, any, {1, 1}, {0, 0}, {0, 0});
      const dnnl::convolution_forward::primitive_desc pd(cd, eng);
      return std::pair{pd.src_desc(), pd.dst_desc()};
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
  }

  // A graph input stands for an activation inside a network. Read only by primitives that pick their own
  // layout, it stays plain and as_desc stages it into theirs (an input edge, untimed). Read by anything
  // else, it arrives in the layout a conv writes (staged once, untimed), so the reorders those ops need
  // from there are timed, as a network pays them.
  memory arrival_memory(int id, const memory& plain) {
    const Value& v = g.value(id);
    bool only_layout_pickers = true;
    for (int c : v.consumers) {
      const Node& n = g.nodes[static_cast<size_t>(c)];
      if (!n.removed && n.op != "Conv" && n.op != "ConvTranspose" && n.op != "Gemm" && n.op != "MatMul")
        only_layout_pickers = false;
    }
    const auto layouts = conv_layouts(v.shape);
    if (only_layout_pickers || !layouts || layouts->second == plain.get_desc()) return plain;
    memory staged(layouts->second, eng);
    reorder_step(plain, staged, "layout a conv writes for '" + v.name + "'");
    mark_edge(steps.back(), Edge::Input, v.name);
    return staged;
  }

  void compile() {
    check_sizes();
    slots.resize(g.values.size());
    for (int id : g.inputs) {
      memory m(plain_md(g.value(id).shape), eng);
      inputs.push_back(m);
      bind(id, arrival_memory(id, m));
      slots[static_cast<size_t>(id)].pinned = true;
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const auto& n = g.nodes[i];
      if (n.removed) continue;
      current = static_cast<int>(i);
      try {
        compile_node(n);
      } catch (const dnnl::error& e) {
        throw Error(fmt::format("onednn_cpu cannot build {} node '{}' in {}: oneDNN says {} (status {})", n.op, n.name,
                                g.origin, e.what(), static_cast<int>(e.status)));
      }
    }
    current = static_cast<int>(g.nodes.size());
    for (int id : g.outputs) {
      // Inside a network a conv reads this activation. An op that wrote it in plain layout leaves the
      // reorder into the conv's layout to be paid there: it is part of this model's cost (timed).
      if (const auto layouts = conv_layouts(g.value(id).shape); layouts && mem(id).get_desc() == plain_md(g.value(id).shape))
        as_desc(id, layouts->first);
      const size_t before = steps.size();
      outputs.push_back(as_plain(id));
      for (size_t i = before; i < steps.size(); ++i) mark_edge(steps[i], Edge::Output, g.value(id).name);
    }
  }
};

Engine::Engine(Graph graph, EngineOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->g = std::move(graph);
  impl_->opt = options;
  omp_set_num_threads(std::max(1, options.threads));
  impl_->compile();
  impl_->collect_footprint();
  spdlog::debug("onednn_cpu: {} compiled into {} primitives", impl_->g.origin, impl_->steps.size());
}

Engine::~Engine() = default;

void Engine::set_inputs(const std::vector<Tensor>& inputs) {
  const auto& g = impl_->g;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const auto& v = g.value(g.inputs[i]);
    const auto it = std::find_if(inputs.begin(), inputs.end(), [&](const Tensor& t) { return t.name == v.name; });
    if (it == inputs.end()) throw Error(fmt::format("{}: input '{}' {} was not given", g.origin, v.name, shape_str(v.shape)));
    if (it->shape != v.shape || it->data.size() != static_cast<size_t>(numel(v.shape)))
      throw Error(fmt::format("{}: input '{}' has shape {}, the model expects {}", g.origin, v.name, shape_str(it->shape),
                              shape_str(v.shape)));
    std::memcpy(impl_->inputs[i].get_data_handle(), it->data.data(), it->data.size() * sizeof(float));
  }
  impl_->inputs_staged = false;
  for (const auto& t : inputs) {
    const auto it = g.value_index.find(t.name);
    if (it == g.value_index.end() || !g.value(it->second).graph_input)
      throw Error(fmt::format("{}: the model has no runtime input named '{}'", g.origin, t.name));
  }
}

void Engine::execute(Pipeline pipeline) {
  omp_set_num_threads(std::max(1, impl_->opt.threads));
  if (pipeline == Pipeline::Profiling && !impl_->inputs_staged) impl_->stage_inputs();
  impl_->run_steps(pipeline);
}

void Engine::start_cold(Pipeline pipeline) {
  if (pipeline == Pipeline::Profiling && !impl_->inputs_staged) impl_->stage_inputs();
  backends::evict_from_caches(impl_->footprint);
  backends::write_back_into_cache(impl_->arrivals(pipeline), impl_->opt.threads);
}

void Engine::prepare_profiling() {
  omp_set_num_threads(std::max(1, impl_->opt.threads));
  impl_->stage_inputs();
}

std::vector<Tensor> Engine::outputs() const {
  std::vector<Tensor> out;
  const auto& g = impl_->g;
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const auto& v = g.value(g.outputs[i]);
    Tensor t{v.name, v.shape, std::vector<float>(static_cast<size_t>(numel(v.shape)))};
    std::memcpy(t.data.data(), impl_->outputs[i].get_data_handle(), t.data.size() * sizeof(float));
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<Tensor> Engine::forward(const std::vector<Tensor>& inputs) {
  set_inputs(inputs);
  execute();
  return outputs();
}

std::vector<std::pair<std::string, Shape>> Engine::input_specs() const {
  std::vector<std::pair<std::string, Shape>> out;
  for (int id : impl_->g.inputs) out.emplace_back(impl_->g.value(id).name, impl_->g.value(id).shape);
  return out;
}

Json Engine::plan(Pipeline pipeline) const {
  Json steps = Json::array(), excluded = Json::array();
  int reorders = 0, edges = 0;
  for (const auto& s : impl_->steps) {
    edges += s.edge != Edge::None;
    if (pipeline == Pipeline::Profiling && s.edge != Edge::None) {
      excluded.push_back(s.info);
      continue;
    }
    steps.push_back(s.info);
    reorders += s.info.value("primitive", "") == "reorder";
  }
  auto total = [](const std::vector<backends::ByteRange>& ranges) {
    size_t bytes = 0;
    for (const auto& r : ranges) bytes += r.size;
    return bytes;
  };
  Json j{{"threads", impl_->opt.threads}, {"isa", effective_isa()}, {"onednn", dnnl_version()},
         {"pipeline", pipeline == Pipeline::Profiling ? "profiling" : "inference"},
         {"primitives", steps.size()}, {"reorders", reorders}, {"edge_reorders", edges},
         {"footprint_bytes", total(impl_->footprint)}, {"cold_start_input_bytes", total(impl_->arrivals(pipeline))},
         {"steps", steps}};
  if (pipeline == Pipeline::Profiling) j["excluded_edge_reorders"] = excluded;
  return j;
}

const Graph& Engine::graph() const { return impl_->g; }
int Engine::threads() const { return impl_->opt.threads; }

std::string dnnl_version() {
  const auto* v = dnnl::version();
  return fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
}

std::string effective_isa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

void set_isa_cap(const std::string& name) {
  if (name.empty() || name == "ALL" || name == "all") return;
  static const std::vector<std::pair<std::string, dnnl::cpu_isa>> kIsas = {
      {"SSE41", dnnl::cpu_isa::sse41},
      {"AVX", dnnl::cpu_isa::avx},
      {"AVX2", dnnl::cpu_isa::avx2},
      {"AVX2_VNNI", dnnl::cpu_isa::avx2_vnni},
      {"AVX512_CORE", dnnl::cpu_isa::avx512_core},
      {"AVX512_CORE_VNNI", dnnl::cpu_isa::avx512_core_vnni},
      {"AVX512_CORE_BF16", dnnl::cpu_isa::avx512_core_bf16},
      {"AVX512_CORE_AMX", dnnl::cpu_isa::avx512_core_amx}};
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  const auto it = std::find_if(kIsas.begin(), kIsas.end(), [&](const auto& p) { return p.first == upper; });
  if (it == kIsas.end())
    throw Error(fmt::format("unknown ISA '{}' for onednn_cpu (use one of SSE41, AVX, AVX2, AVX2_VNNI, AVX512_CORE, "
                            "AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX512_CORE_AMX, or ALL)", name));
  // oneDNN accepts one cap per process, before any kernel is generated; asking again for the same cap
  // is fine.
  static std::optional<dnnl::cpu_isa> applied;
  if (applied == it->second) return;
  if (!applied && dnnl::set_max_cpu_isa(it->second) == dnnl::status::success) {
    applied = it->second;
    return;
  }
  throw Error(fmt::format("cannot cap the oneDNN ISA at {} any more: another cap or a primitive came first in this "
                            "process (run one ISA per process)", upper));
}

}  // namespace nnmeter::onednn
