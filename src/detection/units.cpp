// Normalised op types and nn-Meter's multi-op units, matched by direct
// patterns on the DAG instead of nn-Meter's subgraph isomorphism over the whole graph: each matcher
// anchors on the block's last op and walks back through single-consumer producers, so matching is
// linear in the graph size. Intermediate nodes must have exactly one consumer: a value read elsewhere
// has to be materialised, so the block is not one kernel.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <memory_resource>
#include <numbers>
#include <string_view>
#include <unordered_map>

#include "detection/internal.h"

namespace nnmeter::detection {

namespace {

double attr_number(const Json& attr, const char* key, double fallback) {
  auto it = attr.find(key);
  return it != attr.end() && it->is_number() ? it->get<double>() : fallback;
}

int64_t attr_int(const Json& attr, const char* key, int64_t fallback) {
  auto it = attr.find(key);
  return it != attr.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

std::string conv_type(const IrNode& n) {
  const int64_t group = attr_int(n.attr, "group", 1);
  if (group > 1 && !n.input_shapes.empty() && !n.output_shapes.empty() && n.input_shapes[0].size() >= 2 &&
      n.output_shapes[0].size() >= 2 && group == n.input_shapes[0][1] && group == n.output_shapes[0][1])
    return "dwconv";
  return "conv";  // dense, or grouped (group attr kept; predicted as `group` convs)
}

std::string clip_type(const IrNode& n) {
  const double lo = attr_number(n.attr, "min", -std::numeric_limits<double>::infinity());
  const double hi = attr_number(n.attr, "max", std::numeric_limits<double>::infinity());
  if (lo == 0 && hi == 6) return "relu6";
  if (lo == 0 && std::isinf(hi)) return "relu";
  return "clip";
}

// ReduceMean over exactly the two spatial axes of a 4-D tensor is global average pooling.
bool reduces_hw(const IrNode& n) {
  if (n.input_shapes.empty() || n.input_shapes[0].size() != 4) return false;
  auto it = n.attr.find("axes");
  if (it == n.attr.end() || !it->is_array() || it->size() != 2) return false;
  std::vector<int64_t> axes;
  for (const auto& a : *it) {
    if (!a.is_number_integer()) return false;
    axes.push_back((a.get<int64_t>() % 4 + 4) % 4);
  }
  std::sort(axes.begin(), axes.end());
  return axes == std::vector<int64_t>{2, 3};
}

// A product with a constant weight is a layer: fc on [N, C], linear on token tensors [N, ..., C] (ours); a
// product of two activations is a matmul (attention's Q·Kᵀ and A·V).
std::string fc_type(const IrNode& n) {
  if (!n.attr.contains("weight_shape")) return "matmul";
  const bool matrix = !n.input_shapes.empty() && n.input_shapes[0].size() == 2;
  return matrix ? "fc" : "linear";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

std::string canonical_type(const IrNode& n) {
  static const std::unordered_map<std::string, std::string> alias = {
      {"Placeholder", "placeholder"}, {"ConvTranspose", "convtrans"}, {"Relu", "relu"},
      {"BatchNormalization", "bn"},   {"GlobalAveragePool", "globalavgpool"},
      {"MaxPool", "maxpool"},         {"AveragePool", "avgpool"},     {"Concat", "concat"},
      {"Split", "split"},             {"Reshape", "reshape"},         {"Squeeze", "reshape"},
      {"Unsqueeze", "reshape"},       {"Flatten", "flatten"},         {"Add", "add"},
      {"HardSwish", "hswish"},        {"HardSigmoid", "hardsigmoid"}, {"Sigmoid", "sigmoid"},
      {"LayerNormalization", "layernorm"}};
  const std::string& op = n.type;
  if (op == "Conv") return conv_type(n);
  if (op == "Clip") return clip_type(n);
  if (op == "Gemm" || op == "MatMul") return fc_type(n);
  if (op == "ReduceMean") return reduces_hw(n) ? "globalavgpool" : "reducemean";
  auto it = alias.find(op);
  return it != alias.end() ? it->second : lower(op);
}

std::vector<DetNode> build_detection_graph(const ModelIr& ir) {
  std::pmr::monotonic_buffer_resource scratch;
  std::pmr::unordered_map<std::string_view, int> index(&scratch);  // views of ir's names
  index.reserve(ir.nodes.size());
  for (size_t i = 0; i < ir.nodes.size(); ++i) index.emplace(ir.nodes[i].name, static_cast<int>(i));
  std::vector<DetNode> g(ir.nodes.size());
  for (size_t i = 0; i < ir.nodes.size(); ++i) {
    const IrNode& n = ir.nodes[i];
    g[i].type = canonical_type(n);
    g[i].ir = &n;
    g[i].in.reserve(n.inbounds.size());
    for (const auto& in : n.inbounds) {
      auto it = index.find(in);
      if (it == index.end()) throw Error(ir.origin + ": node '" + n.name + "' reads unknown node '" + in + "'");
      g[i].in.push_back(it->second);
      auto& outs = g[static_cast<size_t>(it->second)].out;
      if (std::find(outs.begin(), outs.end(), static_cast<int>(i)) == outs.end()) outs.push_back(static_cast<int>(i));
    }
  }
  for (auto& d : g) std::sort(d.out.begin(), d.out.end());
  return g;
}

namespace {

class UnitFinder {
 public:
  explicit UnitFinder(const std::vector<DetNode>& g) : g_(g), unit_of_(g.size(), -1) {}

  std::vector<Unit> run() {
    for (int i = 0; i < size(); ++i) {
      match_layer_norm(i);
      match_gelu(i);
      match_gelu_tanh(i);
      match_linear_bias(i);
    }
    for (int i = 0; i < size(); ++i) {
      match_hswish(i);
      match_swish(i);
    }
    for (int i = 0; i < size(); ++i) match_se(i);
    for (int i = 0; i < size(); ++i) {
      match_channel_shuffle(i);
      match_global_pool_flatten(i);
      match_sibling_slices(i);
    }
    return collect();
  }

 private:
  int size() const { return static_cast<int>(g_.size()); }
  const DetNode& at(int i) const { return g_[static_cast<size_t>(i)]; }
  const std::string& type(int i) const { return at(i).type; }
  bool free(int i) const { return unit_of_[static_cast<size_t>(i)] < 0; }
  bool single_consumer(int i) const { return at(i).out.size() == 1; }
  // Producer of the only runtime input, or -1.
  int sole_input(int i) const { return at(i).in.size() == 1 ? at(i).in[0] : -1; }
  std::optional<double> constant(int i) const {
    auto it = at(i).ir->attr.find("constant");
    if (it == at(i).ir->attr.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  }
  bool constant_is(int i, double v) const {
    auto c = constant(i);
    return c && std::fabs(*c - v) < 1e-4 * std::max(1.0, std::fabs(v));
  }
  int constant_position(int i) const {
    auto it = at(i).ir->attr.find("constant_position");
    return it != at(i).ir->attr.end() && it->is_number_integer() ? it->get<int>() : -1;
  }

  int add_unit(std::string unit_type, std::vector<int> nodes, int anchor) {
    const int id = static_cast<int>(units_.size());
    std::sort(nodes.begin(), nodes.end());
    for (int n : nodes) {
      const int old = unit_of_[static_cast<size_t>(n)];
      if (old >= 0) units_[static_cast<size_t>(old)].nodes.clear();  // absorbed (an activation inside an SE block)
      unit_of_[static_cast<size_t>(n)] = id;
    }
    units_.push_back({std::move(unit_type), std::move(nodes), anchor});
    return id;
  }

  // x / 6 or x * (1/6) of a one-input node: the last step of relu6(x + 3) / 6.
  bool is_div6(int i) const {
    if (at(i).in.size() != 1) return false;
    if (type(i) == "div") return constant_is(i, 6.0) && constant_position(i) == 1;
    if (type(i) == "mul") return constant_is(i, 1.0 / 6.0);
    return false;
  }
  bool is_add3(int i) const { return type(i) == "add" && at(i).in.size() == 1 && constant_is(i, 3.0); }

  struct Chain {
    std::vector<int> nodes;
    int source = -1;  // producer of the chain's input
  };

  // A hard sigmoid ending at `end`: HardSigmoid(x), or relu6(x + 3) / 6 (Clip or Relu6, Div or Mul).
  std::optional<Chain> hard_sigmoid(int end) const {
    if (type(end) == "hardsigmoid" && sole_input(end) >= 0) return Chain{{end}, sole_input(end)};
    if (!is_div6(end)) return std::nullopt;
    const int clip = sole_input(end);
    if (clip < 0 || type(clip) != "relu6" || !single_consumer(clip)) return std::nullopt;
    const int add = sole_input(clip);
    if (add < 0 || !is_add3(add) || !single_consumer(add)) return std::nullopt;
    return Chain{{add, clip, end}, sole_input(add)};
  }

  // x · HardSigmoid(x), x · (relu6(x + 3) / 6), and (x · relu6(x + 3)) / 6.
  void match_hswish(int m) {
    if (!free(m)) return;
    if (type(m) == "mul" && at(m).in.size() == 2) {
      for (int k = 0; k < 2; ++k) {
        const int gate = at(m).in[static_cast<size_t>(k)], x = at(m).in[static_cast<size_t>(1 - k)];
        if (!single_consumer(gate) || !free(gate)) continue;
        auto chain = hard_sigmoid(gate);
        if (!chain || chain->source != x || !all_free(chain->nodes)) continue;
        chain->nodes.push_back(m);
        add_unit("hswish", chain->nodes, chain->nodes.front());
        return;
      }
    }
    if (!is_div6(m)) return;
    const int mul = sole_input(m);
    if (mul < 0 || type(mul) != "mul" || at(mul).in.size() != 2 || !single_consumer(mul) || !free(mul)) return;
    for (int k = 0; k < 2; ++k) {
      const int clip = at(mul).in[static_cast<size_t>(k)], x = at(mul).in[static_cast<size_t>(1 - k)];
      if (type(clip) != "relu6" || !single_consumer(clip)) continue;
      const int add = sole_input(clip);
      if (add < 0 || !is_add3(add) || !single_consumer(add) || sole_input(add) != x) continue;
      add_unit("hswish", {add, clip, mul, m}, add);
      return;
    }
  }

  // x · Sigmoid(x): SiLU / swish as PyTorch exports it.
  void match_swish(int m) {
    if (!free(m) || type(m) != "mul" || at(m).in.size() != 2) return;
    for (int k = 0; k < 2; ++k) {
      const int s = at(m).in[static_cast<size_t>(k)], x = at(m).in[static_cast<size_t>(1 - k)];
      if (type(s) != "sigmoid" || !single_consumer(s) || !free(s) || sole_input(s) != x) continue;
      add_unit("swish", {s, m}, s);
      return;
    }
  }

  // The only consumer of `i` when it has type `t` and is free, else -1.
  int next_of_type(int i, const char* t) const {
    if (!single_consumer(i)) return -1;
    const int c = at(i).out[0];
    return type(c) == t && free(c) ? c : -1;
  }
  // A one-input node (its other operand a constant) of type `t` holding the scalar `v`.
  bool scalar_op(int i, const char* t, double v) const {
    return i >= 0 && type(i) == t && at(i).in.size() == 1 && constant_is(i, v) &&
           (type(i) != "div" || constant_position(i) == 1);
  }

  // LayerNorm as torch.onnx.export writes it before opset 17: ReduceMean(x) → Sub(x, mean) → Pow 2 →
  // ReduceMean → Add ε → Sqrt → Div(x − mean, ·), then Mul γ and Add β when affine.
  void match_layer_norm(int mean) {
    if (!free(mean) || type(mean) != "reducemean") return;
    const int x = sole_input(mean), sub = next_of_type(mean, "sub");
    if (x < 0 || sub < 0 || at(sub).in != std::vector<int>{x, mean} || at(sub).out.size() != 2) return;
    const int pow = type(at(sub).out[0]) == "pow" ? at(sub).out[0] : at(sub).out[1];
    const int div = pow == at(sub).out[0] ? at(sub).out[1] : at(sub).out[0];
    if (!scalar_op(pow, "pow", 2.0) || !single_consumer(pow) || !free(pow) || type(div) != "div" || !free(div)) return;
    const int var = next_of_type(pow, "reducemean");
    const int eps = var < 0 ? -1 : next_of_type(var, "add");
    const int sqrt = eps < 0 || at(eps).in.size() != 1 ? -1 : next_of_type(eps, "sqrt");
    if (sqrt < 0 || at(div).in != std::vector<int>{sub, sqrt} || !single_consumer(sqrt)) return;
    std::vector<int> nodes = {mean, sub, pow, var, eps, sqrt, div};
    for (const char* affine : {"mul", "add"}) {
      const int a = next_of_type(nodes.back(), affine);
      if (a < 0 || at(a).in.size() != 1) break;
      nodes.push_back(a);
    }
    add_unit("layernorm", nodes, mean);
  }

  // GELU as PyTorch exports nn.GELU: Div(x, √2) (or Mul by 1/√2) → Erf → Add 1 → Mul by x → Mul by 0.5; or
  // with x · 0.5 first, as BERT's code writes it: Mul(x, 0.5) · (1 + Erf(x / √2)).
  void match_gelu(int erf) {
    if (!free(erf) || type(erf) != "erf") return;
    const int scale = sole_input(erf);
    if (scale < 0 || !single_consumer(scale) || !free(scale) ||
        !(scalar_op(scale, "div", std::sqrt(2.0)) || scalar_op(scale, "mul", std::sqrt(0.5))))
      return;
    const int x = sole_input(scale), one = next_of_type(erf, "add");
    if (!scalar_op(one, "add", 1.0)) return;
    const int mul = next_of_type(one, "mul");
    if (mul < 0 || at(mul).in.size() != 2) return;
    const int other = at(mul).in[0] == one ? at(mul).in[1] : at(mul).in[0];
    if (other == x) {
      const int half = next_of_type(mul, "mul");
      if (scalar_op(half, "mul", 0.5)) add_unit("gelu", {scale, erf, one, mul, half}, scale);
    } else if (scalar_op(other, "mul", 0.5) && sole_input(other) == x && single_consumer(other) && free(other)) {
      add_unit("gelu", {scale, erf, one, other, mul}, scale);
    }
  }

  // GELU's tanh form as PyTorch exports GELU(approximate='tanh'): x·x → ·x → ·0.044715 → + x → ·√(2/π) → Tanh →
  // + 1 → ·x → ·0.5.
  void match_gelu_tanh(int tanh) {
    if (!free(tanh) || type(tanh) != "tanh") return;
    const int s = sole_input(tanh);
    if (!scalar_op(s, "mul", std::sqrt(2.0 / std::numbers::pi)) || !single_consumer(s) || !free(s)) return;
    const int a = sole_input(s);
    if (a < 0 || type(a) != "add" || at(a).in.size() != 2 || !single_consumer(a) || !free(a)) return;
    for (int side = 0; side < 2; ++side) {
      const int k = at(a).in[static_cast<size_t>(side)], x = at(a).in[static_cast<size_t>(1 - side)];
      if (!scalar_op(k, "mul", 0.044715) || !single_consumer(k) || !free(k)) continue;
      const int cube = sole_input(k);
      if (cube < 0 || type(cube) != "mul" || at(cube).in.size() != 2 || !single_consumer(cube) || !free(cube) ||
          (at(cube).in[0] != x && at(cube).in[1] != x))
        continue;
      const int square = at(cube).in[0] == x ? at(cube).in[1] : at(cube).in[0];
      if (type(square) != "mul" || at(square).in != std::vector<int>{x, x} || !single_consumer(square) || !free(square))
        continue;
      const int one = next_of_type(tanh, "add");
      const int mul = scalar_op(one, "add", 1.0) ? next_of_type(one, "mul") : -1;
      if (mul < 0 || at(mul).in.size() != 2 || (at(mul).in[0] != x && at(mul).in[1] != x)) return;
      const int half = next_of_type(mul, "mul");
      if (scalar_op(half, "mul", 0.5)) add_unit("gelu", {square, cube, k, a, s, tanh, one, mul, half}, square);
      return;
    }
  }

  // nn.Linear on tokens as exported: MatMul by a constant weight, then Add of a constant bias. (Gemm holds its
  // bias itself.)
  void match_linear_bias(int add) {
    if (!free(add) || type(add) != "add" || at(add).in.size() != 1) return;
    const int mm = sole_input(add);
    if (mm < 0 || !free(mm) || !single_consumer(mm) || at(mm).ir->type != "MatMul" ||
        (type(mm) != "linear" && type(mm) != "fc"))
      return;
    add_unit(type(mm), {mm, add}, mm);
  }

  bool all_free(const std::vector<int>& nodes) const {
    return std::all_of(nodes.begin(), nodes.end(), [&](int n) { return free(n); });
  }
  // Every consumer of `i` is one of `nodes` (the producer of x in x·gate(x) has two consumers, both inside).
  bool consumed_only_by(int i, const std::vector<int>& nodes) const {
    return std::all_of(at(i).out.begin(), at(i).out.end(),
                       [&](int c) { return std::find(nodes.begin(), nodes.end(), c) != nodes.end(); });
  }

  // Nodes of the activation whose output is `end`: a relu/relu6 node, or an hswish/swish unit.
  std::optional<Chain> activation(int end) const {
    if ((type(end) == "relu" || type(end) == "relu6") && free(end)) return Chain{{end}, sole_input(end)};
    const int u = unit_of_[static_cast<size_t>(end)];
    if (u < 0) return std::nullopt;
    const Unit& unit = units_[static_cast<size_t>(u)];
    if ((unit.type != "hswish" && unit.type != "swish") || unit.nodes.back() != end) return std::nullopt;
    return Chain{unit.nodes, sole_input(unit.anchor)};
  }

  // The gate of an SE block ending at `end`: Sigmoid or a hard sigmoid.
  std::optional<Chain> gate(int end) const {
    if (type(end) == "sigmoid" && free(end)) return Chain{{end}, sole_input(end)};
    auto chain = hard_sigmoid(end);
    if (!chain || !all_free(chain->nodes)) return std::nullopt;
    return chain;
  }

  // GlobalAveragePool|ReduceMean → Conv → act → Conv → gate → Mul with the block input (MobileNetV3's and
  // EfficientNet's squeeze-and-excitation).
  void match_se(int m) {
    if (!free(m) || type(m) != "mul" || at(m).in.size() != 2) return;
    for (int k = 0; k < 2; ++k) {
      const int gate_end = at(m).in[static_cast<size_t>(k)], x = at(m).in[static_cast<size_t>(1 - k)];
      if (!single_consumer(gate_end)) continue;
      auto g = gate(gate_end);
      if (!g || g->source < 0) continue;
      const int conv2 = g->source;
      if (type(conv2) != "conv" || !single_consumer(conv2) || !free(conv2)) continue;
      const int act_end = sole_input(conv2);
      if (act_end < 0 || !single_consumer(act_end)) continue;
      auto act = activation(act_end);
      if (!act || act->source < 0) continue;
      const int conv1 = act->source;
      if (type(conv1) != "conv" || !consumed_only_by(conv1, act->nodes) || !free(conv1)) continue;
      const int pool = sole_input(conv1);
      if (pool < 0 || type(pool) != "globalavgpool" || !single_consumer(pool) || !free(pool) || sole_input(pool) != x)
        continue;
      std::vector<int> nodes = {pool, conv1, conv2, m};
      nodes.insert(nodes.end(), act->nodes.begin(), act->nodes.end());
      nodes.insert(nodes.end(), g->nodes.begin(), g->nodes.end());
      add_unit("se", nodes, pool);
      return;
    }
  }

  // Reshape to 5-D → Transpose swapping the group axes → Reshape back to 4-D.
  void match_channel_shuffle(int r2) {
    if (!free(r2) || type(r2) != "reshape" || at(r2).ir->output_shapes.empty() || at(r2).ir->output_shapes[0].size() != 4)
      return;
    const int t = sole_input(r2);
    if (t < 0 || type(t) != "transpose" || !single_consumer(t) || !free(t)) return;
    const int r1 = sole_input(t);
    if (r1 < 0 || type(r1) != "reshape" || !single_consumer(r1) || !free(r1)) return;
    if (at(r1).ir->output_shapes.empty() || at(r1).ir->output_shapes[0].size() != 5) return;
    add_unit("channelshuffle", {r1, t, r2}, r1);
  }

  // Global pooling followed by Flatten/Reshape/Squeeze to [N, C]: Keras' GlobalAveragePooling2D, the
  // builder's global-avgpool kernel.
  void match_global_pool_flatten(int f) {
    if (!free(f) || (type(f) != "flatten" && type(f) != "reshape")) return;
    if (at(f).ir->output_shapes.empty() || at(f).ir->output_shapes[0].size() != 2) return;
    const int p = sole_input(f);
    if (p < 0 || type(p) != "globalavgpool" || !single_consumer(p) || !free(p)) return;
    add_unit("globalavgpool", {p, f}, p);
  }

  // Several Slice nodes reading one tensor are one split (nn-Meter's ONNX converter merges them too).
  void match_sibling_slices(int x) {
    std::vector<int> slices;
    for (int c : at(x).out)
      if (type(c) == "slice" && free(c) && at(c).in.size() == 1) slices.push_back(c);
    if (slices.size() >= 2) add_unit("split", slices, slices.front());
  }

  std::vector<Unit> collect() {
    for (int i = 0; i < size(); ++i)
      if (free(i) && type(i) != "placeholder") add_unit(type(i), {i}, i);
    std::vector<Unit> out;
    for (auto& u : units_)
      if (!u.nodes.empty()) out.push_back(std::move(u));
    std::sort(out.begin(), out.end(), [](const Unit& a, const Unit& b) { return a.nodes.front() < b.nodes.front(); });
    return out;
  }

  const std::vector<DetNode>& g_;
  std::vector<int> unit_of_;
  std::vector<Unit> units_;
};

}  // namespace

std::vector<Unit> form_units(const std::vector<DetNode>& graph) { return UnitFinder(graph).run(); }

}  // namespace nnmeter::detection
