// Loading an ONNX model into the front end's Graph: parsing with one-line errors, constants, static shapes
// and the folding of everything computable at load time.
#include <fcntl.h>
#include <google/protobuf/stubs/common.h>
#include <onnx/checker.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <numeric>
#include <set>

#include "onnx_io/graph.h"
#include "common/io.h"
#include "common/text.h"
#include "nnmeter/model_limits.h"
#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

// ---------------------------------------------------------------------------------------------------
// Graph

const HostTensor& Graph::constant(int id) const {
  const auto& v = value(id);
  if (!v.constant) throw Error(fmt::format("tensor '{}' in {} must be a load-time constant", v.name, origin));
  return *v.constant;
}

Attrs Graph::attrs(const onnx::NodeProto& node) const { return Attrs(node, *this); }

// ---------------------------------------------------------------------------------------------------
// Attrs

std::string node_label(const onnx::NodeProto& node) {
  return fmt::format("{} node '{}'", node.op_type(), node.name().empty() ? node.output_size() ? node.output(0) : "?"
                                                                         : node.name());
}

Attrs::Attrs(const onnx::NodeProto& node, const Graph& graph) : node_(node), graph_(graph) {}

std::string Attrs::label() const { return node_label(node_); }

const onnx::AttributeProto* Attrs::find(const std::string& name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool Attrs::has(const std::string& name) const { return find(name) != nullptr; }

void Attrs::fail(const std::string& attribute, const std::string& why) const {
  throw Error(fmt::format("{} cannot convert {} in {}: attribute '{}' {}", graph_.engine, label(), graph_.origin, attribute, why));
}

int64_t Attrs::i(const std::string& name, int64_t fallback) const {
  const auto* a = find(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::INT) fail(name, "must be an integer");
  return a->i();
}

float Attrs::f(const std::string& name, float fallback) const {
  const auto* a = find(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::FLOAT) fail(name, "must be a float");
  return a->f();
}

std::string Attrs::s(const std::string& name, const std::string& fallback) const {
  const auto* a = find(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::STRING) fail(name, "must be a string");
  return a->s();
}

std::vector<int64_t> Attrs::ints(const std::string& name, std::vector<int64_t> fallback) const {
  const auto* a = find(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::INTS) fail(name, "must be a list of integers");
  return {a->ints().begin(), a->ints().end()};
}

const onnx::TensorProto* Attrs::tensor(const std::string& name) const {
  const auto* a = find(name);
  if (!a) return nullptr;
  if (a->type() != onnx::AttributeProto::TENSOR) fail(name, "must be a tensor");
  return &a->t();
}

void Attrs::only(const std::vector<std::string>& known) const {
  for (const auto& a : node_.attribute()) {
    const bool ok = std::find(known.begin(), known.end(), a.name()) != known.end();
    if (!ok) fail(a.name(), "is not supported by " + graph_.engine);
  }
}

int64_t normalize_axis(int64_t axis, int64_t rank, const Attrs& attrs, const char* attribute) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1))
    attrs.fail(attribute, fmt::format("= {} is out of range for a tensor of rank {}", axis, rank));
  return a;
}

// ---------------------------------------------------------------------------------------------------
// Loading

namespace {

Shape input_shape(const onnx::ValueInfoProto& info, const Graph& g) {
  const std::string& origin = g.origin;
  if (!info.type().has_tensor_type())
    throw Error(fmt::format("{}: input '{}' is not a tensor; {} runs tensor models only", origin, info.name(), g.engine));
  const auto& tt = info.type().tensor_type();
  if (tt.elem_type() != onnx::TensorProto::FLOAT)
    throw Error(fmt::format("{}: input '{}' has element type {}; {} runs float32 inputs only", origin, info.name(),
                            onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(tt.elem_type())),
                            g.engine));
  if (!tt.has_shape()) throw Error(fmt::format("{}: input '{}' has no shape; export it with a static shape", origin, info.name()));
  Shape shape;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (d.has_dim_value() && d.dim_value() >= 0) {
      shape.push_back(d.dim_value());
    } else if (i == 0) {
      // Exporters mark the batch as symbolic; nn-Meter profiles batch 1.
      spdlog::debug("{}: input '{}' has a symbolic batch dimension; using 1", origin, info.name());
      shape.push_back(1);
    } else {
      throw Error(fmt::format("{}: input '{}' has a symbolic dimension {} ('{}'); export with static shapes", origin,
                              info.name(), i, d.dim_param()));
    }
  }
  return shape;
}

int64_t default_opset(const onnx::ModelProto& model) {
  for (const auto& op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") return op.version();
  return 13;
}

class Loader {
 public:
  Loader(Graph& g, const Runtime& runtime) : g_(g), runtime_(runtime) {}

  void run() {
    const auto& graph = g_.model.graph();
    for (const auto& init : graph.initializer()) add_constant(init.name(), from_tensor_proto(init, where(init.name())));
    for (const auto& in : graph.input()) {
      if (g_.value_index.count(in.name())) continue;  // an initializer listed as input (IR < 4)
      const int id = add_value(in.name(), input_shape(in, g_));
      g_.values[static_cast<size_t>(id)].graph_input = true;
      g_.inputs.push_back(id);
    }
    if (g_.inputs.empty()) spdlog::debug("{}: the model has no runtime input", g_.origin);
    for (const auto& node : graph.node()) add_node(node);
    for (const auto& out : graph.output()) {
      const auto it = g_.value_index.find(out.name());
      if (it == g_.value_index.end()) throw Error(fmt::format("{}: graph output '{}' is produced by no node", g_.origin, out.name()));
      g_.values[static_cast<size_t>(it->second)].graph_output = true;
      g_.outputs.push_back(it->second);
    }
    if (g_.outputs.empty()) throw Error(fmt::format("{}: the graph has no output", g_.origin));
  }

 private:
  std::string where(const std::string& name) const { return fmt::format("{}: tensor '{}'", g_.origin, name); }

  // Every tensor is allocated by the engine: beyond the model limits it is a clear error, not an
  // allocation failure (or an overflowed size).
  void check_limits(const std::string& name, const Shape& shape) const {
    if (!bounded_elements(shape))
      throw Error(fmt::format("{}: tensor '{}' has shape {}; {} runs tensors of rank <= {} and <= {} elements",
                              g_.origin, name, shape_str(shape), g_.engine, kMaxTensorRank, kMaxTensorElements));
  }

  int add_value(const std::string& name, Shape shape) {
    if (name.empty()) throw Error(fmt::format("{}: a tensor has an empty name", g_.origin));
    if (g_.value_index.count(name))
      throw Error(fmt::format("{}: tensor '{}' is defined twice; the graph is not in SSA form", g_.origin, name));
    check_limits(name, shape);
    Value v;
    v.name = name;
    v.shape = std::move(shape);
    g_.values.push_back(std::move(v));
    const int id = static_cast<int>(g_.values.size() - 1);
    g_.value_index[name] = id;
    return id;
  }

  void add_constant(const std::string& name, HostTensor t) {
    const int id = add_value(name, t.dims);
    g_.values[static_cast<size_t>(id)].constant = std::move(t);
  }

  std::vector<int> resolve_inputs(const onnx::NodeProto& node) {
    std::vector<int> ids;
    for (const auto& name : node.input()) {
      if (name.empty()) {
        ids.push_back(-1);
        continue;
      }
      const auto it = g_.value_index.find(name);
      if (it == g_.value_index.end())
        throw Error(fmt::format("{}: {} reads '{}', which no earlier node produces (the graph must be topologically "
                                "sorted)", g_.origin, node_label(node), name));
      ids.push_back(it->second);
    }
    return ids;
  }

  void add_node(const onnx::NodeProto& node) {
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      throw Error(fmt::format("{} cannot convert {} in {}: custom domain '{}' is not supported", g_.engine,
                              node_label(node), g_.origin, node.domain()));
    const auto inputs = resolve_inputs(node);
    const bool all_const = std::all_of(inputs.begin(), inputs.end(), [&](int id) { return id < 0 || g_.is_const(id); });
    const OpDef* def = find_op(node.op_type());
    const bool shape_only = def && def->folds_from_shapes;
    if (all_const || shape_only) {
      std::vector<HostTensor> outs;
      if (fold_at_load(g_, node, inputs, outs)) {
        for (int i = 0; i < node.output_size() && i < static_cast<int>(outs.size()); ++i)
          if (!node.output(i).empty()) add_constant(node.output(i), std::move(outs[static_cast<size_t>(i)]));
        return;
      }
    }
    add_runtime_node(node, inputs);
  }

  void add_runtime_node(const onnx::NodeProto& node, const std::vector<int>& inputs) {
    const OpDef* def = find_op(node.op_type());
    if (!def || !def->runs() || !std::binary_search(runtime_.ops.begin(), runtime_.ops.end(), node.op_type()))
      throw Error(fmt::format("{} cannot convert {} in {}: op '{}' is not supported (supported: {})", g_.engine,
                              node_label(node), g_.origin, node.op_type(), fmt::join(runtime_.ops, ", ")));
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i] >= 0 && def->is_parameter_input(i) && !g_.is_const(inputs[i]))
        throw Error(fmt::format("{} cannot convert {} in {}: input {} ('{}') must be a load-time constant "
                                "(initializer or foldable subgraph)", g_.engine, node_label(node), g_.origin, i,
                                node.input(static_cast<int>(i))));
    Node n;
    n.id = static_cast<int>(g_.nodes.size());
    n.op = node.op_type();
    n.name = node.name().empty() ? node.output(0) : node.name();
    n.proto = &node;
    n.inputs = inputs;
    const int index = static_cast<int>(g_.nodes.size());
    const auto shapes = infer_runtime_shapes(g_, n);
    for (int i = 0; i < node.output_size(); ++i) {
      if (node.output(i).empty()) continue;
      if (static_cast<size_t>(i) >= shapes.size())
        throw Error(fmt::format("{} cannot convert {} in {}: output {} ('{}') is not supported", g_.engine,
                                node_label(node), g_.origin, i, node.output(i)));
      const int id = add_value(node.output(i), shapes[static_cast<size_t>(i)]);
      g_.values[static_cast<size_t>(id)].producer = index;
      n.outputs.push_back(id);
    }
    for (int id : inputs)
      if (id >= 0) g_.values[static_cast<size_t>(id)].consumers.push_back(index);
    g_.nodes.push_back(std::move(n));
  }

  Graph& g_;
  const Runtime& runtime_;
};

// protobuf's own check: predict runs it on every string of a model, and it allocates nothing.
bool utf8(const std::string& s) {
  return google::protobuf::internal::IsStructurallyValidUTF8(s.data(), static_cast<int>(s.size()));
}

void check_model(const onnx::ModelProto& model, const std::string& origin) {
  if (!model.has_graph()) throw Error(fmt::format("{} is not an ONNX model (no graph)", origin));
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    msg = msg.substr(0, msg.find('\n'));
    throw Error(fmt::format("{} fails the ONNX checker: {}", origin, msg));
  }
  check_value_names(model.graph(), origin);
  for (const auto& n : model.graph().node()) check_node_text(n, origin);
}

}  // namespace

void check_node_text(const onnx::NodeProto& n, const std::string& origin) {
  const auto check = [&](const std::string& text, std::string_view what) {
    if (!utf8(text)) throw Error(fmt::format("{}: {} {} is not UTF-8 text", origin, what, quoted(text)));
  };
  check(n.name(), "node name");
  check(n.op_type(), "op type");
  check(n.domain(), "op domain");
  for (const auto& t : n.input()) check(t, "tensor name");
  for (const auto& t : n.output()) check(t, "tensor name");
  for (const auto& a : n.attribute()) {
    check(a.name(), "attribute name");
    check(a.s(), "string attribute");
  }
}

void check_value_names(const onnx::GraphProto& g, const std::string& origin) {
  for (const auto* values : {&g.input(), &g.output(), &g.value_info()})
    for (const auto& v : *values)
      if (!utf8(v.name())) throw Error(fmt::format("{}: tensor name {} is not UTF-8 text", origin, quoted(v.name())));
  for (const auto& t : g.initializer())
    if (!utf8(t.name())) throw Error(fmt::format("{}: tensor name {} is not UTF-8 text", origin, quoted(t.name())));
}

Graph load_graph(onnx::ModelProto model, const std::string& origin, const Runtime& runtime) {
  Graph g;
  g.model = std::move(model);
  g.origin = origin;
  g.engine = runtime.engine;
  check_model(g.model, origin);
  g.opset = default_opset(g.model);
  if (g.opset > 17)
    throw Error(fmt::format("{} uses opset {}; {} supports opsets up to 17 (exports at 11 to 13 and 17 are tested)", origin,
                            g.opset, g.engine));
  Loader(g, runtime).run();
  // Every initializer is a constant of the graph now; the protobuf copies of the weights would only double
  // the memory a large model holds (and be copied again by folded_model).
  g.model.mutable_graph()->clear_initializer();
  return g;
}

Graph load_graph(const fs::path& onnx_path, const Runtime& runtime) {
  // Sized before it is read: a device or a FIFO would be read without end.
  std::error_code ec;
  const fs::file_status status = fs::status(onnx_path, ec);
  if (!fs::exists(status)) throw Error("file not found: " + onnx_path.string());
  if (fs::is_directory(status)) throw Error("expected a file but found a folder: " + onnx_path.string());
  if (!fs::is_regular_file(status))
    throw Error(fmt::format("{} is not a regular file, so not an ONNX model", onnx_path.string()));
  if (fs::file_size(onnx_path, ec) > kMaxModelFileBytes)
    throw Error(fmt::format("{} is larger than the {} bytes an ONNX model can be", onnx_path.string(), kMaxModelFileBytes));
  // Parsed straight from the file: reading it into memory first was one more copy of every weight, and
  // loading models is most of what profiling a small kernel costs.
  const int fd = ::open(onnx_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("cannot read {}: {}", onnx_path.string(), std::strerror(errno)));
  onnx::ModelProto model;
  const bool parsed = model.ParseFromFileDescriptor(fd);
  ::close(fd);
  if (!parsed) throw Error(fmt::format("{} is not a valid ONNX model (protobuf parsing failed)", onnx_path.string()));
  return load_graph(std::move(model), onnx_path.filename().string(), runtime);
}

onnx::ModelProto folded_model(const Graph& g) {
  onnx::ModelProto out = g.model;
  auto* graph = out.mutable_graph();
  graph->clear_node();
  graph->clear_initializer();
  graph->clear_value_info();
  std::set<int> needed;
  for (const auto& n : g.nodes)
    for (int id : n.inputs)
      if (g.is_const(id)) needed.insert(id);
  for (int id : g.outputs)
    if (g.is_const(id)) needed.insert(id);
  for (int id : needed) *graph->add_initializer() = to_tensor_proto(*g.value(id).constant, g.value(id).name);
  for (const auto& n : g.nodes) *graph->add_node() = *n.proto;
  // Inputs that became constants are dropped so that the file only asks for what it really reads.
  auto* inputs = graph->mutable_input();
  inputs->erase(std::remove_if(inputs->begin(), inputs->end(),
                               [&](const onnx::ValueInfoProto& v) {
                                 const auto it = g.value_index.find(v.name());
                                 return it != g.value_index.end() && !g.value(it->second).graph_input;
                               }),
                inputs->end());
  return out;
}

}  // namespace nnmeter::onnx_io
