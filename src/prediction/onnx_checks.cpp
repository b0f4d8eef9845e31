// What an ONNX model must satisfy before any shape inference runs on it. ONNX's inference trusts attribute
// values (a zero stride is an integer division by zero: SIGFPE, the process dies) and sizes (a huge rank or
// dim is allocated or looped over), so everything it divides by, allocates or iterates on is checked here
// first, with one line naming the node.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "onnx_io/graph.h"
#include "prediction/internal.h"

namespace nnmeter {

namespace prediction {

namespace {

std::string node_label(const onnx::NodeProto& n) {
  const std::string& name = !n.name().empty() ? n.name() : n.output_size() > 0 ? n.output(0) : n.op_type();
  return fmt::format("node '{}' ({})", name, n.op_type());
}

// Every node of the model: the graph's, those of subgraphs (If, Loop, Scan bodies) and of local functions,
// which ONNX's inference also visits. Protobuf's parser bounds the nesting depth.
template <class F>
void for_each_node(const onnx::GraphProto& g, const F& f) {
  for (const auto& n : g.node()) {
    f(n);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) for_each_node(a.g(), f);
      for (const auto& sub : a.graphs()) for_each_node(sub, f);
    }
  }
}

template <class F>
void for_each_model_node(const onnx::ModelProto& model, const F& f) {
  for_each_node(model.graph(), f);
  for (const auto& fn : model.functions())
    for (const auto& n : fn.node()) f(n);
}

// Bounds of each integer attribute that ONNX's inference divides by, loops over or sizes with. The upper
// bound keeps products of two of them (kernel extent = (kernel - 1) · dilation + 1) within int64.
struct AttrBound {
  std::string_view name;
  int64_t min;
  int64_t max = INT32_MAX;
};

const std::vector<AttrBound>* attribute_bounds(const std::string& op) {
  static const std::vector<AttrBound> window = {{"strides", 1},       {"dilations", 1}, {"kernel_shape", 1},
                                                {"pads", 0},          {"group", 1},     {"output_padding", 0},
                                                {"output_shape", 1}};
  static const std::vector<AttrBound> block = {{"blocksize", 1}};
  static const std::vector<AttrBound> roi = {{"pooled_shape", 1}, {"output_height", 1}, {"output_width", 1}};
  static const std::unordered_map<std::string_view, const std::vector<AttrBound>*> table = {
      {"Conv", &window},         {"ConvInteger", &window}, {"QLinearConv", &window}, {"ConvTranspose", &window},
      {"MaxPool", &window},      {"AveragePool", &window}, {"LpPool", &window},      {"MaxUnpool", &window},
      {"DeformConv", &window},   {"Col2Im", &window},      {"DepthToSpace", &block}, {"SpaceToDepth", &block},
      {"MaxRoiPool", &roi},      {"RoiAlign", &roi}};
  auto it = table.find(op);
  return it == table.end() ? nullptr : it->second;
}

void check_attributes(const onnx::NodeProto& n, const std::string& origin) {
  const auto* bounds = attribute_bounds(n.op_type());
  if (!bounds) return;
  for (const auto& a : n.attribute())
    for (const auto& b : *bounds) {
      if (a.name() != b.name) continue;
      const bool list = a.type() == onnx::AttributeProto::INTS || a.ints_size() > 0;
      const auto bad = [&](int64_t v) { return v < b.min || v > b.max; };
      if (list ? std::any_of(a.ints().begin(), a.ints().end(), bad) : bad(a.i()))
        throw Error(fmt::format("{} of {} has {} {}; each must be from {} to {}", node_label(n), origin, a.name(),
                                list ? fmt::format("[{}]", fmt::join(a.ints(), ",")) : std::to_string(a.i()), b.min, b.max));
    }
}

std::string shape_text(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

// ONNX's convPoolShapeInference indexes strides, dilations, pads and the input's dims by the window's
// length without checking them against each other: a window longer than the input's spatial rank reads
// past the input shape (a segfault). The window is kernel_shape, or the weight's dims after the first two
// when the weight is an initializer; its length must match every per-axis attribute and, for a graph input
// of known shape, the input's spatial rank. (An intermediate input's rank is checked by our own shape
// inference, which stops with an error instead of handing such a node to ONNX's.)
struct GraphTensors {
  std::unordered_map<std::string_view, int> initializer_rank;
  std::unordered_map<std::string_view, size_t> input_rank;  // graph inputs with a shape (dims may be symbolic)
};

void check_window_ranks(const onnx::NodeProto& n, const GraphTensors& tensors, const std::string& origin) {
  static const std::unordered_set<std::string_view> ops = {"Conv", "ConvInteger", "QLinearConv", "ConvTranspose",
                                                           "MaxPool", "AveragePool", "LpPool"};
  if (!ops.count(n.op_type()) || n.input_size() == 0) return;
  std::optional<size_t> window;
  for (const auto& a : n.attribute())
    if (a.name() == "kernel_shape") window = static_cast<size_t>(a.ints_size());
  const int weight_index = n.op_type() == "QLinearConv" ? 3 : 1;
  if (!window && n.op_type().find("Conv") != std::string::npos && n.input_size() > weight_index)
    if (auto it = tensors.initializer_rank.find(n.input(weight_index)); it != tensors.initializer_rank.end())
      window = it->second >= 2 ? static_cast<size_t>(it->second - 2) : 0;
  if (!window) return;
  for (const auto& a : n.attribute()) {
    const size_t want = a.name() == "pads" ? 2 * *window : *window;
    if ((a.name() == "strides" || a.name() == "dilations" || a.name() == "pads") && static_cast<size_t>(a.ints_size()) != want)
      throw Error(fmt::format("{} of {} has a {}-D window but {} {}: give {} values", node_label(n), origin, *window,
                              a.ints_size(), a.name(), want));
  }
  if (auto it = tensors.input_rank.find(n.input(0)); it != tensors.input_rank.end() && it->second != *window + 2)
    throw Error(fmt::format("{} of {} has a {}-D window but its input '{}' has rank {} (expected {})", node_label(n),
                            origin, *window, n.input(0), it->second, *window + 2));
}

// Initializers and constant tensors may legitimately be empty (Resize's unused roi); they only need sizes
// inference can afford.
void check_constant_dims(const onnx::TensorProto& t, const std::string& what, const std::string& origin) {
  const Shape dims(t.dims().begin(), t.dims().end());
  if (!bounded_elements(dims))
    throw Error(fmt::format("{} '{}' of {} has dims {}; nn-meter reads tensors of rank <= {} and <= {} elements", what,
                            t.name(), origin, shape_text(dims), kMaxTensorRank, kMaxTensorElements));
}

}  // namespace

int64_t onnx_opset(const onnx::ModelProto& model) {
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 0;
}

void check_tensor_shape(const Shape& s, const std::function<std::string()>& what) {
  if (s.size() > kMaxTensorRank)
    throw Error(fmt::format("{} has rank {}; nn-meter reads tensors of rank <= {}", what(), s.size(), kMaxTensorRank));
  if (std::find_if(s.begin(), s.end(), [](int64_t d) { return d <= 0; }) != s.end())
    throw Error(fmt::format("{} has shape {}: every dim must be >= 1", what(), shape_text(s)));
  if (!bounded_elements(s))
    throw Error(fmt::format("{} has shape {}, more than {} elements", what(), shape_text(s), kMaxTensorElements));
}

void check_onnx_model(const onnx::ModelProto& model, const std::string& origin) {
  const onnx::GraphProto& g = model.graph();
  if (g.node_size() == 0) throw Error(origin + " has an empty graph (no nodes): there is no latency to predict");
  const int64_t opset = onnx_opset(model);
  const auto [lowest, highest] = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(onnx::ONNX_DOMAIN);
  if (opset == 0) throw Error(origin + " declares no opset for the ONNX operators (opset_import): re-export the model");
  if (opset < lowest || opset > highest)
    throw Error(fmt::format("{} uses ONNX opset {}; nn-meter reads opsets {} to {}: re-export the model with one of them",
                            origin, opset, lowest, highest));
  onnx_io::check_value_names(g, origin);
  // Graph inputs first: the window checks below compare against their ranks.
  for (const auto& vi : g.input()) {
    if (auto s = static_shape(vi.type()))
      check_tensor_shape(*s, [&] { return fmt::format("input '{}' of {}", vi.name(), origin); });
  }
  GraphTensors tensors;
  for (const auto& t : g.initializer()) tensors.initializer_rank.emplace(t.name(), t.dims_size());
  for (const auto& vi : g.input())
    if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape())
      tensors.input_rank.emplace(vi.name(), static_cast<size_t>(vi.type().tensor_type().shape().dim_size()));
  size_t nodes = 0;
  for_each_model_node(model, [&](const onnx::NodeProto& n) {
    if (++nodes > kMaxModelNodes)
      throw Error(fmt::format("{} has more than {} nodes, more than nn-meter reads", origin, kMaxModelNodes));
    onnx_io::check_node_text(n, origin);
    check_attributes(n, origin);
    check_window_ranks(n, tensors, origin);
    for (const auto& a : n.attribute())
      if (a.has_t()) check_constant_dims(a.t(), node_label(n) + ": tensor", origin);
  });
  for (const auto& t : g.initializer()) check_constant_dims(t, "initializer", origin);
}

void check_node_schemas(const onnx::ModelProto& model, const std::string& origin) {
  std::unordered_map<std::string, int> opsets;
  for (const auto& o : model.opset_import()) opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = static_cast<int>(o.version());
  for_each_model_node(model, [&](const onnx::NodeProto& n) {
    const std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    auto it = opsets.find(domain);
    if (it == opsets.end()) return;
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), it->second, domain);
    if (!schema) return;  // an op ONNX does not know is reported by prediction as uncovered
    try {
      schema->Verify(n);
    } catch (const std::exception& e) {
      const std::string what = e.what();
      throw Error(fmt::format("{} of {} is not valid ONNX: {}", node_label(n), origin, what.substr(0, what.find('\n'))));
    }
  });
}

}  // namespace prediction

}  // namespace nnmeter
