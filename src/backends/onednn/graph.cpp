// Loading a model for onednn_cpu: the front end with the engine's runtime ops, then the fusion passes.
#include "backends/onednn/graph.h"

#include "backends/onednn/graph_internal.h"

namespace nnmeter::onednn {

namespace {

const onnx_io::Runtime& runtime() {
  static const onnx_io::Runtime r{"onednn_cpu", supported_runtime_ops()};
  return r;
}

Graph fused(onnx_io::Graph&& loaded) {
  Graph g;
  static_cast<onnx_io::Graph&>(g) = std::move(loaded);
  g.fusions.resize(g.nodes.size());
  fuse_graph(g);
  return g;
}

}  // namespace

Graph load_graph(onnx::ModelProto model, const std::string& origin) {
  return fused(onnx_io::load_graph(std::move(model), origin, runtime()));
}

Graph load_graph(const fs::path& onnx_path) { return fused(onnx_io::load_graph(onnx_path, runtime())); }

}  // namespace nnmeter::onednn
