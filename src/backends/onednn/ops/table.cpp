// The registry the op files fill at load time of the library, and the lists derived from it.
#include <algorithm>

#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

std::vector<OpDef>& registry() {
  static std::vector<OpDef> ops;
  return ops;
}

}  // namespace

OpRegistration::OpRegistration(std::vector<OpDef> ops) {
  for (auto& op : ops) registry().push_back(std::move(op));
}

const std::vector<OpDef>& op_table() { return registry(); }

const OpDef* find_op(const std::string& name) {
  for (const auto& op : registry())
    if (op.name == name) return &op;
  return nullptr;
}

const std::vector<std::string>& supported_runtime_ops() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> names;
    for (const auto& op : registry())
      if (op.runs()) names.push_back(op.name);
    std::sort(names.begin(), names.end());
    return names;
  }();
  return ops;
}

bool is_parameter_input(const std::string& op, size_t input_index) {
  const OpDef* def = find_op(op);
  return def && def->is_parameter_input(input_index);
}

std::vector<PostOp> eltwise_chain(const Graph& graph, const Node& node) {
  const OpDef* def = find_op(node.op);
  return def && def->eltwise ? def->eltwise(graph, node) : std::vector<PostOp>{};
}

}  // namespace nnmeter::onednn
