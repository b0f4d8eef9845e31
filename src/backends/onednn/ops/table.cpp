// The registry the op files fill at load time of the library, and the lists derived from it.
#include "backends/onednn/ops/op.h"
#include "common/op_table.h"

namespace nnmeter::onednn {

namespace {

using Table = OpTable<OpDef, &OpDef::name>;

}  // namespace

OpRegistration::OpRegistration(std::vector<OpDef> ops) { Table::add(std::move(ops)); }

const std::vector<OpDef>& op_table() { return Table::entries(); }

const OpDef* find_op(const std::string& name) { return Table::find(name); }

const std::vector<std::string>& supported_runtime_ops() {
  static const std::vector<std::string> ops = Table::sorted_keys([](const OpDef& op) { return op.lower != nullptr; });
  return ops;
}

LowerRule lowering_of(const Graph& graph, const Node& node) {
  const Fusion& f = graph.of(node);
  if (!f.eltwise.empty()) return lower_eltwise;
  if (f.layer_norm) return lower_layer_norm;
  const OpDef* def = find_op(node.op);
  return def ? def->lower : nullptr;
}

std::vector<PostOp> eltwise_chain(const Graph& graph, const Node& node) {
  if (!graph.of(node).eltwise.empty()) return graph.of(node).eltwise;
  const OpDef* def = find_op(node.op);
  return def && def->eltwise ? def->eltwise(graph, node) : std::vector<PostOp>{};
}

}  // namespace nnmeter::onednn
