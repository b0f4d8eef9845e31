// Load-time graph rewrites that oneDNN can execute as one primitive: BatchNormalization folded into the
// preceding convolution's weights, a Linear's bias Add into its matmul, activations / residual additions fused
// as post-ops, and the GELU (erf and tanh forms) and LayerNorm patterns of transformer exports collapsed into
// one eltwise or layer normalization. Fusions only change how the graph runs, never what it computes; the
// reference tests check both paths.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

using dnnl::algorithm;

// The node consuming `value` when it is the only reader (and the value is not a graph output).
int sole_consumer(const Graph& g, int value) {
  const auto& v = g.value(value);
  if (v.graph_output || v.consumers.empty()) return -1;
  const int c = v.consumers.front();
  for (int other : v.consumers)
    if (other != c) return -1;
  const auto& n = g.nodes[static_cast<size_t>(c)];
  int reads = 0;
  for (int in : n.inputs) reads += in == value;
  return reads == 1 ? c : -1;
}

// `host` takes over the output of `absorbed`, which disappears from the pipeline.
void absorb(Graph& g, int host, int absorbed) {
  auto& h = g.nodes[static_cast<size_t>(host)];
  auto& a = g.nodes[static_cast<size_t>(absorbed)];
  h.outputs = a.outputs;
  for (int out : h.outputs) g.values[static_cast<size_t>(out)].producer = host;
  g.of(h).fused.push_back(a.name);
  g.of(a).removed = true;
}

void fold_batchnorm(Graph& g) {
  for (size_t bi = 0; bi < g.nodes.size(); ++bi) {
    auto& bn = g.nodes[bi];
    if (g.of(bn).removed || bn.op != "BatchNormalization") continue;
    const int x = bn.inputs[0];
    const int ci = g.value(x).producer;
    if (ci < 0 || sole_consumer(g, x) != static_cast<int>(bi)) continue;
    auto& conv = g.nodes[static_cast<size_t>(ci)];
    Fusion& cf = g.of(conv);
    if (cf.removed || conv.op != "Conv" || !cf.post_ops.empty() || !g.is_const(conv.inputs[1])) continue;
    HostTensor w = cf.weight ? *cf.weight : g.constant(conv.inputs[1]);
    const int64_t m = w.dims[0], per = w.numel() / m;
    HostTensor b{HostTensor::DType::F32, {m}, std::vector<double>(static_cast<size_t>(m), 0.0)};
    if (cf.bias) b = *cf.bias;
    else if (conv.inputs.size() > 2 && conv.inputs[2] >= 0) b = g.constant(conv.inputs[2]);
    const float eps = g.attrs(*bn.proto).f("epsilon", 1e-5f);
    const auto& gamma = g.constant(bn.inputs[1]).data;
    const auto& beta = g.constant(bn.inputs[2]).data;
    const auto& mean = g.constant(bn.inputs[3]).data;
    const auto& var = g.constant(bn.inputs[4]).data;
    for (int64_t o = 0; o < m; ++o) {
      const auto i = static_cast<size_t>(o);
      const double s = gamma[i] / std::sqrt(var[i] + static_cast<double>(eps));
      for (int64_t j = 0; j < per; ++j) w.data[static_cast<size_t>(o * per + j)] *= s;
      b.data[i] = (b.data[i] - mean[i]) * s + beta[i];
    }
    cf.weight = std::move(w);
    cf.bias = std::move(b);
    absorb(g, ci, static_cast<int>(bi));
  }
}

// nn.Linear as exported: MatMul by a constant weight, then Add of a constant [N] bias. oneDNN's matmul takes the
// bias itself, so the Linear is one primitive (and a GELU after it that primitive's post-op) instead of a matmul
// and a binary add.
void fold_matmul_bias(Graph& g) {
  for (size_t mi = 0; mi < g.nodes.size(); ++mi) {
    const Node& mm = g.nodes[mi];
    // A weight matrix: a vector weight drops the output's last axis, which a bias of the output's shape
    // would then not follow.
    if (g.of(mm).removed || mm.op != "MatMul" || !g.is_const(mm.inputs[1]) || g.of(mm).bias ||
        g.value(mm.inputs[1]).shape.size() != 2)
      continue;
    const Shape& ys = g.value(mm.outputs[0]).shape;
    const int add = sole_consumer(g, mm.outputs[0]);
    if (add < 0 || ys.size() < 2 || g.nodes[static_cast<size_t>(add)].op != "Add") continue;
    const Node& a = g.nodes[static_cast<size_t>(add)];
    const int b = a.inputs.size() == 2 ? (a.inputs[0] == mm.outputs[0] ? a.inputs[1] : a.inputs[0]) : -1;
    if (!g.is_const(b) || g.value(a.outputs[0]).shape != ys) continue;
    // One value per output column: [N], or [1, ..., 1, N].
    const HostTensor& bias = g.constant(b);
    const bool per_column = !bias.dims.empty() && bias.dims.back() == ys.back() && bias.numel() == ys.back();
    if (!per_column) continue;
    g.of(mm).bias = bias;
    absorb(g, static_cast<int>(mi), add);
  }
}

bool accepts_post_ops(const Node& n) {
  return n.op == "Conv" || n.op == "Gemm" || n.op == "MatMul" ||
         ((n.op == "Add" || n.op == "Sub" || n.op == "Mul" || n.op == "Div" || n.op == "Max" || n.op == "Min") &&
          n.inputs.size() == 2);
}

bool has_sum(const Fusion& f) {
  for (const auto& p : f.post_ops)
    if (p.kind == PostOp::Kind::Sum) return true;
  return false;
}

// Conv → Add(conv, r) where r is ready before the conv runs: the addition becomes a sum post-op.
bool try_residual(Graph& g, int host, int add) {
  auto& h = g.nodes[static_cast<size_t>(host)];
  const auto& a = g.nodes[static_cast<size_t>(add)];
  if (h.op != "Conv" || a.op != "Add" || a.inputs.size() != 2 || has_sum(g.of(h))) return false;
  const int out = h.outputs[0];
  const int r = a.inputs[0] == out ? a.inputs[1] : a.inputs[0];
  if (r < 0 || r == out || g.is_const(r) || g.value(r).shape != g.value(out).shape) return false;
  if (g.value(r).producer >= host) return false;
  PostOp p;
  p.kind = PostOp::Kind::Sum;
  p.residual = r;
  p.from = a.name;
  g.of(h).post_ops.push_back(p);
  absorb(g, host, add);
  return true;
}

// y * Sigmoid(y) (PyTorch's SiLU export) or y * HardSigmoid(y; 1/6, 1/2) (HardSwish before opset 14).
bool try_gated(Graph& g, int host) {
  auto& h = g.nodes[static_cast<size_t>(host)];
  const int out = h.outputs[0];
  const auto& cons = g.value(out).consumers;
  if (g.value(out).graph_output || cons.size() != 2) return false;
  for (int gate_index : cons) {
    const auto& gate = g.nodes[static_cast<size_t>(gate_index)];
    const int mul = gate.op == "Sigmoid" || gate.op == "HardSigmoid" ? sole_consumer(g, gate.outputs[0]) : -1;
    const int other = cons[0] == gate_index ? cons[1] : cons[0];
    if (mul < 0 || mul != other || g.nodes[static_cast<size_t>(mul)].op != "Mul") continue;
    const auto& m = g.nodes[static_cast<size_t>(mul)];
    if (m.inputs.size() != 2 || g.value(m.outputs[0]).shape != g.value(out).shape) continue;
    if (gate.op == "Sigmoid") {
      g.of(h).post_ops.push_back(eltwise_post_op(algorithm::eltwise_swish, 1.f, 0.f, gate));
    } else {
      const Attrs attrs = g.attrs(*gate.proto);
      if (std::fabs(attrs.f("alpha", 0.2f) - 1.f / 6) > 1e-6f || std::fabs(attrs.f("beta", 0.5f) - 0.5f) > 1e-6f) continue;
      g.of(h).post_ops.push_back(eltwise_post_op(algorithm::eltwise_hardswish, 0.f, 0.f, gate));
    }
    g.of(gate).removed = true;
    g.of(h).fused.push_back(gate.name);
    absorb(g, host, mul);
    return true;
  }
  return false;
}

void fuse_post_ops(Graph& g) {
  for (size_t hi = 0; hi < g.nodes.size(); ++hi) {
    const int host = static_cast<int>(hi);
    if (g.fusions[hi].removed) continue;
    if (g.nodes[hi].op == "BatchNormalization") {
      // oneDNN's batch normalization fuses ReLU only (fuse_norm_relu).
      const int c = sole_consumer(g, g.nodes[hi].outputs[0]);
      if (c >= 0 && g.nodes[static_cast<size_t>(c)].op == "Relu" && g.fusions[hi].post_ops.empty()) {
        g.fusions[hi].post_ops = eltwise_chain(g, g.nodes[static_cast<size_t>(c)]);
        absorb(g, host, c);
      }
      continue;
    }
    if (!accepts_post_ops(g.nodes[hi])) continue;
    for (;;) {
      auto& h = g.nodes[hi];
      if (h.outputs.size() != 1) break;
      if (try_gated(g, host)) continue;
      const int c = sole_consumer(g, h.outputs[0]);
      if (c < 0) break;
      auto chain = eltwise_chain(g, g.nodes[static_cast<size_t>(c)]);
      if (!chain.empty()) {
        auto& post_ops = g.of(h).post_ops;
        post_ops.insert(post_ops.end(), chain.begin(), chain.end());
        absorb(g, host, c);
        continue;
      }
      if (!try_residual(g, host, c)) break;
    }
  }
}

// The sole consumer of `n`'s only output when it has op `op`, else -1.
int next_node(const Graph& g, const Node& n, const char* op) {
  if (n.outputs.size() != 1) return -1;
  const int c = sole_consumer(g, n.outputs[0]);
  return c >= 0 && g.nodes[static_cast<size_t>(c)].op == op ? c : -1;
}

// ShuffleNet's Concat of g equal parts followed by the channel shuffle (Reshape to [N, g, C/g, ...],
// Transpose of the two group axes, Reshape back): each part lands on every g-th channel, so the engine
// writes the parts straight to their shuffled places instead of concatenating and then transposing.
void fuse_concat_shuffle(Graph& g) {
  for (size_t ci = 0; ci < g.nodes.size(); ++ci) {
    auto& concat = g.nodes[ci];
    if (g.of(concat).removed || concat.op != "Concat" || concat.outputs.size() != 1) continue;
    const Shape& ys = g.value(concat.outputs[0]).shape;
    const int r1 = next_node(g, concat, "Reshape");
    const int t = r1 < 0 ? -1 : next_node(g, g.nodes[static_cast<size_t>(r1)], "Transpose");
    const int r2 = t < 0 ? -1 : next_node(g, g.nodes[static_cast<size_t>(t)], "Reshape");
    if (ys.size() < 3 || r2 < 0 || g.value(g.nodes[static_cast<size_t>(r2)].outputs[0]).shape != ys) continue;
    const Attrs a = g.attrs(*concat.proto);
    if (normalize_axis(a.i("axis", 1), static_cast<int64_t>(ys.size()), a, "axis") != 1) continue;
    const auto groups = static_cast<int64_t>(concat.inputs.size());
    Shape split = ys;
    split[1] = ys[1] / groups;
    split.insert(split.begin() + 1, groups);
    const Node& tr = g.nodes[static_cast<size_t>(t)];
    std::vector<int64_t> swap(split.size());
    for (size_t i = 0; i < swap.size(); ++i) swap[i] = static_cast<int64_t>(i);
    std::swap(swap[1], swap[2]);
    bool parts = groups > 1;
    for (int in : concat.inputs) parts = parts && in >= 0 && g.value(in).shape[1] * groups == ys[1];
    if (!parts || g.value(g.nodes[static_cast<size_t>(r1)].outputs[0]).shape != split ||
        transpose_perm(split, g.attrs(*tr.proto)) != swap)
      continue;
    g.of(concat).shuffle_groups = groups;
    for (int absorbed : {r1, t, r2}) absorb(g, static_cast<int>(ci), absorbed);
    // The next ShuffleNet unit splits the shuffled channels again: each part then goes straight to the
    // outputs of that Split (parts of whole groups of g channels).
    const int sp = next_node(g, concat, "Split");
    if (sp < 0) continue;
    const Attrs sa = g.attrs(*g.nodes[static_cast<size_t>(sp)].proto);
    bool whole = normalize_axis(sa.i("axis", 0), static_cast<int64_t>(ys.size()), sa, "axis") == 1;
    for (int out : g.nodes[static_cast<size_t>(sp)].outputs) whole = whole && g.value(out).shape[1] % groups == 0;
    if (whole) absorb(g, static_cast<int>(ci), sp);
  }
}

// `reader` was merged into another node and no longer reads `value`.
void drop_consumer(Graph& g, int value, int reader) {
  auto& c = g.values[static_cast<size_t>(value)].consumers;
  c.erase(std::remove(c.begin(), c.end(), reader), c.end());
}

bool near(std::optional<double> v, double want) { return v && std::fabs(*v - want) <= 1e-6 * std::fabs(want); }

// The other operand of the two-input node `n` that reads `value`; -1 when `n` is no such node.
int operand_beside(const Node& n, int value) {
  if (n.inputs.size() != 2 || (n.inputs[0] != value && n.inputs[1] != value)) return -1;
  return n.inputs[0] == value ? n.inputs[1] : n.inputs[0];
}

// The one value of a constant operand beside `value`.
std::optional<double> scalar_beside(const Graph& g, const Node& n, int value) {
  const int other = operand_beside(n, value);
  if (!g.is_const(other) || g.constant(other).data.size() != 1) return std::nullopt;
  return g.constant(other).data[0];
}

// The output of node `i` (one output).
int out_of(const Graph& g, int i) { return g.nodes[static_cast<size_t>(i)].outputs.at(0); }

// PyTorch's GELU export, x·0.5·(1 + Erf(x/√2)): Div(x, √2) (or Mul by 1/√2), Erf, Add 1, Mul by x, Mul by
// 0.5. oneDNN has no erf but computes the whole as eltwise_gelu_erf, which the first node runs from x.
void fuse_gelu(Graph& g) {
  for (size_t ei = 0; ei < g.nodes.size(); ++ei) {
    const Node& erf = g.nodes[ei];
    if (g.of(erf).removed || erf.op != "Erf") continue;
    const int di = g.value(erf.inputs[0]).producer;
    if (di < 0 || sole_consumer(g, erf.inputs[0]) != static_cast<int>(ei)) continue;
    const Node& scale = g.nodes[static_cast<size_t>(di)];
    if (g.of(scale).removed || scale.inputs.size() != 2 || g.is_const(scale.inputs[0])) continue;
    const int x = scale.inputs[0];
    const bool scaled = scale.op == "Div" ? near(scalar_beside(g, scale, x), std::sqrt(2.0))
                                          : scale.op == "Mul" && near(scalar_beside(g, scale, x), std::sqrt(0.5));
    const int add = next_node(g, erf, "Add");
    const int mul = add < 0 ? -1 : next_node(g, g.nodes[static_cast<size_t>(add)], "Mul");
    const int half = mul < 0 ? -1 : next_node(g, g.nodes[static_cast<size_t>(mul)], "Mul");
    if (!scaled || half < 0 || !near(scalar_beside(g, g.nodes[static_cast<size_t>(add)], erf.outputs[0]), 1.0) ||
        !near(scalar_beside(g, g.nodes[static_cast<size_t>(half)], out_of(g, mul)), 0.5) ||
        operand_beside(g.nodes[static_cast<size_t>(mul)], out_of(g, add)) != x ||
        g.value(out_of(g, half)).shape != g.value(x).shape)
      continue;
    g.of(scale).eltwise = {eltwise_post_op(algorithm::eltwise_gelu_erf, 0.f, 0.f, scale)};
    for (const int absorbed : {static_cast<int>(ei), add, mul, half}) absorb(g, di, absorbed);
    drop_consumer(g, x, mul);
  }
}

// The producer of `value` when it is a live node of op `op` whose only reader is `reader`, else -1.
int producer_for(const Graph& g, int value, const char* op, int reader) {
  const int p = value < 0 ? -1 : g.value(value).producer;
  if (p < 0 || g.of(g.nodes[static_cast<size_t>(p)]).removed || g.nodes[static_cast<size_t>(p)].op != op) return -1;
  return sole_consumer(g, value) == reader ? p : -1;
}

// GELU's tanh form as PyTorch exports GELU(approximate='tanh'): x·x → ·x → ·0.044715 → + x → ·√(2/π) → Tanh →
// + 1 → ·x → ·0.5. oneDNN computes the whole as eltwise_gelu_tanh, which the first Mul runs from x.
void fuse_gelu_tanh(Graph& g) {
  for (size_t ti = 0; ti < g.nodes.size(); ++ti) {
    const Node& tanh = g.nodes[ti];
    if (g.of(tanh).removed || tanh.op != "Tanh") continue;
    const int t = static_cast<int>(ti);
    const int si = producer_for(g, tanh.inputs[0], "Mul", t);
    const Node* s = si < 0 ? nullptr : &g.nodes[static_cast<size_t>(si)];
    if (!s || s->inputs.size() != 2) continue;
    const int inner = g.is_const(s->inputs[0]) ? s->inputs[1] : s->inputs[0];
    const int ai = near(scalar_beside(g, *s, inner), std::sqrt(2.0 / std::numbers::pi)) ? producer_for(g, inner, "Add", si) : -1;
    if (ai < 0 || g.nodes[static_cast<size_t>(ai)].inputs.size() != 2) continue;
    const Node& a = g.nodes[static_cast<size_t>(ai)];
    // Add(x, 0.044715·x³), either order.
    int x = -1, ki = -1;
    for (int side = 0; side < 2 && ki < 0; ++side) {
      ki = producer_for(g, a.inputs[static_cast<size_t>(side)], "Mul", ai);
      x = a.inputs[static_cast<size_t>(1 - side)];
    }
    if (ki < 0) continue;
    const Node& k = g.nodes[static_cast<size_t>(ki)];
    if (k.inputs.size() != 2) continue;
    const int cube = g.is_const(k.inputs[0]) ? k.inputs[1] : k.inputs[0];
    const int ci = near(scalar_beside(g, k, cube), 0.044715) ? producer_for(g, cube, "Mul", ki) : -1;
    const int square = ci < 0 ? -1 : operand_beside(g.nodes[static_cast<size_t>(ci)], x);
    const int qi = producer_for(g, square, "Mul", ci);
    if (qi < 0 || g.nodes[static_cast<size_t>(qi)].inputs != std::vector<int>{x, x}) continue;
    const int one = next_node(g, tanh, "Add");
    const int mul = one < 0 ? -1 : next_node(g, g.nodes[static_cast<size_t>(one)], "Mul");
    const int half = mul < 0 ? -1 : next_node(g, g.nodes[static_cast<size_t>(mul)], "Mul");
    if (half < 0 || !near(scalar_beside(g, g.nodes[static_cast<size_t>(one)], tanh.outputs[0]), 1.0) ||
        operand_beside(g.nodes[static_cast<size_t>(mul)], out_of(g, one)) != x ||
        !near(scalar_beside(g, g.nodes[static_cast<size_t>(half)], out_of(g, mul)), 0.5) ||
        g.value(out_of(g, half)).shape != g.value(x).shape)
      continue;
    Node& first = g.nodes[static_cast<size_t>(qi)];
    g.of(first).eltwise = {eltwise_post_op(algorithm::eltwise_gelu_tanh, 0.f, 0.f, first)};
    for (const int absorbed : {ci, ki, ai, si, t, one, mul, half}) absorb(g, qi, absorbed);
    // The first Mul reads x twice; the step reads it once, so that a Linear before it can take it as a post-op.
    first.inputs.resize(1);
    for (const int reader : {ci, ai, mul}) drop_consumer(g, x, reader);
  }
}

// The first of the trailing axes a ReduceMean averages over (keeping them as 1), if it does exactly that.
std::optional<int64_t> trailing_axes(const Graph& g, const Node& n) {
  const Attrs a = g.attrs(*n.proto);
  const auto rank = static_cast<int64_t>(g.value(n.inputs[0]).shape.size());
  auto axes = axes_of(g, n.inputs, 1, a).value_or(std::vector<int64_t>{});
  if (axes.empty() || !a.i("keepdims", 1)) return std::nullopt;
  for (auto& ax : axes) ax = normalize_axis(ax, rank, a, "axes");
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - static_cast<int64_t>(axes.size() - i)) return std::nullopt;
  return axes.front();
}

// The constant operand of the two-input node `n` beside `value`, when it broadcasts to `normalized`
// without changing the node's output shape (a LayerNorm's γ or β).
std::optional<HostTensor> affine_beside(const Graph& g, const Node& n, int value, const Shape& normalized) {
  const int other = operand_beside(n, value);
  if (!g.is_const(other) || g.value(n.outputs[0]).shape != g.value(value).shape) return std::nullopt;
  const auto s = broadcast_shapes(normalized, g.value(other).shape);
  if (!s || *s != normalized) return std::nullopt;
  return g.constant(other);
}

// LayerNorm as exported before opset 17: ReduceMean(x) → Sub(x, mean) → Pow(·, 2) → ReduceMean → Add(ε) →
// Sqrt → Div(x − mean, ·), then Mul(γ) and Add(β) when affine, all over the same trailing axes: one layer
// normalization, which the first ReduceMean runs from x.
void fuse_layer_norm(Graph& g) {
  for (size_t mi = 0; mi < g.nodes.size(); ++mi) {
    const Node& mean = g.nodes[mi];
    if (g.of(mean).removed || mean.op != "ReduceMean") continue;
    const int x = mean.inputs[0];
    const auto axis = trailing_axes(g, mean);
    const int sub = next_node(g, mean, "Sub");
    if (!axis || sub < 0 || g.nodes[static_cast<size_t>(sub)].inputs != std::vector<int>{x, mean.outputs[0]}) continue;
    const int centred = out_of(g, sub);
    const auto& readers = g.value(centred).consumers;
    if (g.value(centred).graph_output || readers.size() != 2) continue;
    const int pow = g.nodes[static_cast<size_t>(readers[0])].op == "Pow" ? readers[0] : readers[1];
    const int div = pow == readers[0] ? readers[1] : readers[0];
    const Node& p = g.nodes[static_cast<size_t>(pow)];
    if (p.op != "Pow" || p.inputs[0] != centred || !near(scalar_beside(g, p, centred), 2.0)) continue;
    const int var = next_node(g, p, "ReduceMean");
    if (var < 0 || trailing_axes(g, g.nodes[static_cast<size_t>(var)]) != axis) continue;
    const int add = next_node(g, g.nodes[static_cast<size_t>(var)], "Add");
    const auto eps = add < 0 ? std::nullopt : scalar_beside(g, g.nodes[static_cast<size_t>(add)], out_of(g, var));
    const int sqrt = add < 0 ? -1 : next_node(g, g.nodes[static_cast<size_t>(add)], "Sqrt");
    if (!eps || sqrt < 0 || sole_consumer(g, out_of(g, sqrt)) != div ||
        g.nodes[static_cast<size_t>(div)].op != "Div" ||
        g.nodes[static_cast<size_t>(div)].inputs != std::vector<int>{centred, out_of(g, sqrt)})
      continue;
    const Shape& xs = g.value(x).shape;
    const Shape normalized(xs.begin() + *axis, xs.end());
    LayerNorm ln;
    ln.axis = *axis;
    ln.epsilon = static_cast<float>(*eps);
    std::vector<int> chain{sub, pow, var, add, sqrt, div};
    const int mul = next_node(g, g.nodes[static_cast<size_t>(div)], "Mul");
    if (mul >= 0 && (ln.scale = affine_beside(g, g.nodes[static_cast<size_t>(mul)], out_of(g, div), normalized)))
      chain.push_back(mul);
    const int last = out_of(g, chain.back());
    const int shift = next_node(g, g.nodes[static_cast<size_t>(chain.back())], "Add");
    if (shift >= 0 && (ln.bias = affine_beside(g, g.nodes[static_cast<size_t>(shift)], last, normalized)))
      chain.push_back(shift);
    g.of(mean).layer_norm = std::move(ln);
    for (const int absorbed : chain) absorb(g, static_cast<int>(mi), absorbed);
    drop_consumer(g, x, sub);
  }
}

}  // namespace

void fuse_graph(Graph& g) {
  fold_batchnorm(g);
  fold_matmul_bias(g);
  fuse_gelu(g);
  fuse_gelu_tanh(g);
  fuse_layer_norm(g);
  fuse_post_ops(g);
  fuse_concat_shuffle(g);
}

}  // namespace nnmeter::onednn
