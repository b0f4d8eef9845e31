// Kernel detection, nn-Meter's steps after the rules are read: units → BF chains → nn-Meter's pairwise fusion →
// kernel records. Pairwise fusion follows nn-Meter: topological order, union-find, the pair check uses
// the ROOT's type (conv→bn→relu needs BF_conv_bn and BF_conv_relu). MON false: a node with several
// consumers fuses nothing; MON true: it fuses its first fusible consumer (in topological order) and the
// kernel continues along that consumer only.
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "common/graph_order.h"
#include "detection/internal.h"

namespace nnmeter {

namespace {

using detection::DetNode;
using detection::Unit;

// The graph of units: edges between units, a topological order, per unit its consumers in that order.
struct UnitGraph {
  std::vector<Unit> units;
  std::vector<int> order;                // unit ids in topological order
  std::vector<int> pos;                  // unit id → position in `order`
  std::vector<std::vector<int>> consumers;  // sorted by position
};

UnitGraph build_unit_graph(const std::vector<DetNode>& g, std::vector<Unit> units) {
  UnitGraph ug;
  const size_t n = units.size();
  std::vector<int> unit_of(g.size(), -1);
  for (size_t u = 0; u < n; ++u)
    for (int node : units[u].nodes) unit_of[static_cast<size_t>(node)] = static_cast<int>(u);
  ug.consumers.assign(n, {});
  std::vector<std::pair<size_t, size_t>> edges;
  for (size_t u = 0; u < n; ++u)
    for (int node : units[u].nodes)
      for (int c : g[static_cast<size_t>(node)].out) {
        const int cu = unit_of[static_cast<size_t>(c)];
        if (cu < 0 || cu == static_cast<int>(u)) continue;
        auto& cs = ug.consumers[u];
        if (std::find(cs.begin(), cs.end(), cu) == cs.end()) {
          cs.push_back(cu);
          edges.emplace_back(u, static_cast<size_t>(cu));
        }
      }
  // Ties to the unit whose first node comes first (units are sorted that way).
  const auto order = topological_order(n, edges, std::less<size_t>());
  if (!order) throw Error("kernel detection: the detected blocks form a cycle (please report this model)");
  for (size_t u : *order) ug.order.push_back(static_cast<int>(u));
  ug.pos.assign(n, 0);
  for (size_t i = 0; i < n; ++i) ug.pos[static_cast<size_t>(ug.order[i])] = static_cast<int>(i);
  for (auto& cs : ug.consumers)
    std::sort(cs.begin(), cs.end(), [&](int a, int b) { return ug.pos[static_cast<size_t>(a)] < ug.pos[static_cast<size_t>(b)]; });
  ug.units = std::move(units);
  return ug;
}

// Rule types of units: the rule tester's operator names. A fused kernel is checked by its root's type.
class Fuser {
 public:
  Fuser(const UnitGraph& ug, const FusionRules& rules)
      : ug_(ug), rules_(rules), root_(ug.units.size()), outs_(ug.consumers) {
    for (size_t u = 0; u < root_.size(); ++u) root_[u] = static_cast<int>(u);
  }

  std::vector<int> run() {
    for (const auto& chain : rules_.chains)
      for (int u : ug_.order) fuse_chain(u, chain);
    for (int u : ug_.order) fuse_pairs(u);
    return root_;
  }

 private:
  const std::string& type(int u) const { return ug_.units[static_cast<size_t>(u)].type; }
  bool is_root(int u) const { return root_[static_cast<size_t>(u)] == u; }
  bool alone(int u) const { return is_root(u) && outs_[static_cast<size_t>(u)] == ug_.consumers[static_cast<size_t>(u)]; }
  bool may_branch(int u) const { return rules_.multiple_outbounds || outs_[static_cast<size_t>(u)].size() <= 1; }

  void absorb(int root, int u) {
    root_[static_cast<size_t>(u)] = root;
    outs_[static_cast<size_t>(root)] = outs_[static_cast<size_t>(u)];
  }

  // A BF rule of more than two ops: a path of single-consumer units (any consumer under MON) with exactly
  // these types becomes one kernel before pairwise fusion.
  void fuse_chain(int start, const std::vector<std::string>& chain) {
    if (!alone(start) || type(start) != chain.front()) return;
    std::vector<int> path = {start};
    for (size_t i = 1; i < chain.size(); ++i) {
      const int last = path.back();
      if (!may_branch(last)) return;
      int next = -1;
      for (int c : outs_[static_cast<size_t>(last)])
        if (alone(c) && type(c) == chain[i]) {
          next = c;
          break;
        }
      if (next < 0) return;
      path.push_back(next);
    }
    for (size_t i = 1; i < path.size(); ++i) absorb(start, path[i]);
  }

  void fuse_pairs(int u) {
    if (!is_root(u)) return;
    for (;;) {
      const auto& outs = outs_[static_cast<size_t>(u)];
      if (outs.empty() || !may_branch(u)) return;
      int next = -1;
      for (int c : outs)
        if (is_root(c) && c != u && rules_.can_fuse(type(u), type(c))) {
          next = c;
          break;
        }
      if (next < 0) return;
      absorb(u, next);
    }
  }

  const UnitGraph& ug_;
  const FusionRules& rules_;
  std::vector<int> root_;
  std::vector<std::vector<int>> outs_;
};

// A fused unit takes the root's id; absorbed units point at it directly (absorb always names a root).
int find_root(const std::vector<int>& root, int u) {
  while (root[static_cast<size_t>(u)] != u) u = root[static_cast<size_t>(u)];
  return u;
}

}  // namespace

namespace {

// The builder's concat takes at most four inputs (kernels/structural_kernels.cpp). A wider one (DenseNet's
// concatenate every earlier layer's output, up to 33) becomes the concats of its inputs taken at most four at a
// time, as evenly as they go, each a kernel on the same node: a concat copies each input's channels pixel by
// pixel, so it costs per input, not only per byte. On onednn_cpu DenseNet's wide concats ran well above a
// four-input concat of the same bytes (the leading inputs merged, as detection wrote them before), about the
// sum of their groups (docs/accuracy.md).
std::vector<DetectedKernel> concat_groups(const DetectedKernel& k) {
  const size_t n = k.config.size() - 1;  // CIN1..CINn and HW
  if (n <= 4) return {k};
  const size_t groups = (n + 3) / 4;
  std::vector<DetectedKernel> out;
  for (size_t g = 0, first = 0; g < groups; ++g) {
    const size_t size = n / groups + (g < n % groups ? 1 : 0);
    DetectedKernel part = k;
    part.config = {{"HW", k.config["HW"]}};
    for (size_t i = 0; i < size; ++i)
      part.config["CIN" + std::to_string(i + 1)] = k.config["CIN" + std::to_string(first + i + 1)];
    first += size;
    out.push_back(std::move(part));
  }
  return out;
}

std::vector<DetectedKernel> detect(const ModelIr& ir, const FusionRules& rules) {
  const std::vector<DetNode> g = detection::build_detection_graph(ir);
  const UnitGraph ug = build_unit_graph(g, detection::form_units(g));
  const std::vector<int> root = Fuser(ug, rules).run();

  // Members of each root in topological order.
  std::vector<std::vector<const Unit*>> members(ug.units.size());
  for (int u : ug.order) members[static_cast<size_t>(find_root(root, u))].push_back(&ug.units[static_cast<size_t>(u)]);

  const int64_t batch = detection::model_batch(g);
  std::vector<DetectedKernel> kernels;
  auto add = [&](const std::vector<const Unit*>& m) {
    DetectedKernel k;
    std::vector<int> nodes;
    for (const auto* unit : m) {
      k.op += (k.op.empty() ? "" : "-") + unit->type;
      nodes.insert(nodes.end(), unit->nodes.begin(), unit->nodes.end());
    }
    std::sort(nodes.begin(), nodes.end());
    for (int node : nodes) k.nodes.push_back(ir.nodes[static_cast<size_t>(node)].name);
    detection::describe_kernel(g, m, batch, k);
    const bool concat = k.kind == KernelKind::compute && k.kernel == "concat";
    for (auto& part : concat ? concat_groups(k) : std::vector<DetectedKernel>{std::move(k)}) {
      part.name = part.op + "#" + std::to_string(kernels.size());
      kernels.push_back(std::move(part));
    }
  };
  for (int u : ug.order) {
    const auto& m = members[static_cast<size_t>(u)];
    if (m.empty()) continue;
    // A channel shuffle fused after a concat (BF_concat_channelshuffle_split) still moves every element once
    // more: on onednn_cpu the fused block ran about the concat plus the shuffle alone at ShuffleNetV2's sizes
    // (docs/cli-fusion-rules.md), and no builder kernel measures the block. The concat
    // keeps the split the backend writes in place; the shuffle is a kernel of its own.
    std::vector<const Unit*> kernel, shuffles;
    for (const Unit* x : m) (m.front()->type == "concat" && x->type == "channelshuffle" ? shuffles : kernel).push_back(x);
    add(kernel);
    for (const Unit* s : shuffles) add({s});
  }
  return kernels;
}

}  // namespace

std::vector<DetectedKernel> detect_kernels(const ModelIr& ir, const FusionRules& rules) {
  // An IR read from json can hold attributes of any type; the checks of the attributes detection reads
  // name the node, and this is the net for the rest: one line naming the model, never an escaped exception.
  try {
    return detect(ir, rules);
  } catch (const Json::exception& e) {
    throw Error(fmt::format("{}: a node attribute has an unexpected type or value ({})", ir.origin, e.what()));
  }
}

}  // namespace nnmeter
