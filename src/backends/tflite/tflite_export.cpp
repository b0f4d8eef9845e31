#include "backends/tflite/tflite_export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "backends/tflite/export_ops/op.h"
#include "common/io.h"

namespace nnmeter::tflite {

namespace {

using onnx_io::Graph;

// Ops that only ever appear in load-time subgraphs (shape arithmetic, constants): folded before export.
const std::set<std::string> kFoldOnly = {"Constant", "Shape", "Size", "Gather", "Slice", "Cast", "Range",
                                         "ConstantOfShape", "Expand", "Equal", "Where", "ReduceProd", "Floor",
                                         "Ceil", "Sqrt", "Neg", "Abs", "Max", "Min", "Exp", "Tanh"};

std::string unsupported(const std::string& op) {
  return fmt::format("op '{}' has no TFLite export (supported: {})", op, fmt::join(exportable_ops(), ", "));
}

// Each runtime node through the op table (export_ops/), in graph order; a node an earlier op's export
// already wrote (a fused BatchNormalization or activation) is skipped.
std::string export_graph(const Graph& g, const std::string& backend) {
  ExportContext cx(g, backend);
  std::vector<int> inputs, outputs;
  for (int id : g.inputs) {
    const auto& v = g.value(id);
    if (v.shape.empty() || v.shape.size() > 6)
      cx.fail_value(v.name, fmt::format("graph input of rank {} (TFLite tensors have 1 to 6 dimensions)", v.shape.size()));
    const bool nhwc = v.shape.size() == 4;
    inputs.push_back(cx.bind(v.name, Ref{cx.add_tensor(v.name, v.shape, nhwc), nhwc, v.shape}).tensor);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (cx.absorbed(static_cast<int>(i))) continue;
    const onnx::NodeProto& n = *g.nodes[i].proto;
    const ExportOp* op = find_export_op(n.op_type());
    if (!op) cx.fail(n, unsupported(n.op_type()));
    op->rule(cx, n);
  }
  for (int id : g.outputs) outputs.push_back(cx.ref(g.value(id).name).tensor);
  return cx.finish(inputs, outputs);
}

}  // namespace

std::string export_tflite(onnx::ModelProto model, const std::string& origin, const std::string& backend) {
  // Ops neither exported nor foldable are named here with the export's list, before the front end's.
  for (const auto& node : model.graph().node())
    if (!find_export_op(node.op_type()) && !kFoldOnly.count(node.op_type()))
      throw Error(fmt::format("{} cannot convert {} node '{}' in {}: {}", backend, node.op_type(),
                              node.name().empty() ? node.output(0) : node.name(), origin, unsupported(node.op_type())));
  // Every op the front end runs may reach export_graph, which names what TFLite cannot express.
  const Graph graph = onnx_io::load_graph(std::move(model), origin, onnx_io::Runtime{backend, onnx_io::runtime_ops()});
  return export_graph(graph, backend);
}

std::string export_tflite(const fs::path& onnx_path, const std::string& backend) {
  onnx::ModelProto model;
  if (!model.ParseFromString(io::read_file(onnx_path)))
    throw Error(fmt::format("{}: {} is not an ONNX model (it does not parse as one)", backend, onnx_path.string()));
  return export_tflite(std::move(model), onnx_path.filename().string(), backend);
}

}  // namespace nnmeter::tflite
