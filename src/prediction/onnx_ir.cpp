// ONNX → ModelIr with static shapes. ONNX's own shape inference (with data propagation, so that
// Shape → Gather → Concat → Reshape targets resolve) gives every tensor its shape; nodes whose outputs
// depend only on initializers, Constant nodes and static shapes are load-time constants and do not become
// IR nodes — they are what a runtime folds away before inference.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string_view>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "common/graph_order.h"
#include "onnx_io/fold.h"
#include "onnx_io/shape_rules.h"
#include "onnx_io/tensor.h"
#include "prediction/onnx_model.h"
#include "prediction/internal.h"

namespace nnmeter {

namespace {

using prediction::ShapeMap;
using prediction::static_shape;
using prediction::tensor_values;

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string dims_text(const onnx::TensorShapeProto& shape) {
  std::vector<std::string> dims;
  for (const auto& d : shape.dim()) dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?");
  return "[" + fmt::format("{}", fmt::join(dims, ",")) + "]";
}

void set_dims(onnx::ValueInfoProto& vi, const Shape& shape) {
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  auto* s = tt->mutable_shape();
  s->clear_dim();
  for (int64_t d : shape) s->add_dim()->set_dim_value(d);
}

// Applies --input-shape overrides and checks that every runtime input ends up static.
void fix_input_shapes(onnx::GraphProto& g, const std::pmr::unordered_set<std::string_view>& initializers, const InputShapes& shapes,
                      const std::string& origin) {
  std::vector<std::string> runtime;
  for (const auto& vi : g.input())
    if (!initializers.count(vi.name())) runtime.push_back(vi.name());
  for (const auto& [name, shape] : shapes) {
    if (std::find(runtime.begin(), runtime.end(), name) == runtime.end())
      throw Error(fmt::format("--input-shape names '{}', which is not an input of {} (inputs: {})", name, origin,
                              fmt::join(runtime, ", ")));
    if (shape.empty() || std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d <= 0; }))
      throw Error(fmt::format("--input-shape for '{}' must be positive dims like 1x3x224x224", name));
  }
  for (auto& vi : *g.mutable_input()) {
    if (initializers.count(vi.name())) continue;
    auto it = shapes.find(vi.name());
    if (it != shapes.end()) {
      set_dims(vi, it->second);
      continue;
    }
    if (!static_shape(vi.type())) {
      const std::string have = vi.type().tensor_type().has_shape() ? dims_text(vi.type().tensor_type().shape()) : "unknown";
      throw Error(fmt::format("input '{}' of {} has a dynamic shape {}; pass --input-shape {}:1x3x224x224 (its real dims)",
                              vi.name(), origin, have, vi.name()));
    }
  }
}

// ONNX 1.12's Reshape-5/13 inference reads its target only from initializers, while Reshape-14's also
// takes data-propagated targets (Shape → Gather → Concat). The two versions differ only by the
// `allowzero` attribute (default 0 = the old behaviour), so opset-13 Reshapes are inferred with 14's schema.
class ShapeRegistry : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int max_version, const std::string& domain) const override {
    if (key == "Reshape" && (domain.empty() || domain == "ai.onnx") && max_version >= 5 && max_version < 14)
      return onnx::OpSchemaRegistry::Schema(key, 14, domain);
    return onnx::OpSchemaRegistry::Schema(key, max_version, domain);
  }
};

bool fully_known(const onnx::TensorShapeProto& values) {
  return std::all_of(values.dim().begin(), values.dim().end(), [](const auto& d) { return d.has_dim_value(); });
}

// Other ops that read shapes from tensors (Expand, Tile, ConstantOfShape, Resize, ...) may ignore
// propagated values as Reshape-13 does: the values data propagation found become initializers of the
// consuming nodes, and inference runs again. Returns whether anything was added.
bool materialize_propagated(onnx::GraphProto& g, const std::unordered_map<std::string, onnx::TensorShapeProto>& data) {
  std::unordered_set<std::string> initializers;
  for (const auto& t : g.initializer()) initializers.insert(t.name());
  // Data propagation holds a scalar's value as a list of one: its declared rank decides which it is.
  std::unordered_set<std::string> scalars;
  for (const auto& vi : g.value_info())
    if (auto s = static_shape(vi.type()); s && s->empty()) scalars.insert(vi.name());
  bool added = false;
  for (auto& node : *g.mutable_node())
    for (auto& in : *node.mutable_input()) {
      auto it = data.find(in);
      if (in.empty() || initializers.count(in) || it == data.end() || !fully_known(it->second)) continue;
      const bool scalar = scalars.count(in) > 0;
      if (scalar && it->second.dim_size() != 1) continue;
      const std::string folded = in + "__nnmeter_folded";
      if (initializers.insert(folded).second) {
        auto* t = g.add_initializer();
        t->set_name(folded);
        t->set_data_type(onnx::TensorProto::INT64);
        if (!scalar) t->add_dims(it->second.dim_size());
        for (const auto& d : it->second.dim()) t->add_int64_data(d.dim_value());
      }
      in = folded;
      added = true;
    }
  return added;
}

// What data propagation leaves (ONNX 1.12 has none for Div, Range, Where, Expand, ConstantOfShape, ...):
// every node onnx_io::fold_node computes from small initializers and static shapes is evaluated, and the nodes
// that read its outputs get them as initializers, so that the next inference pass sees constants.
bool fold_load_time_constants(onnx::GraphProto& g) {
  std::unordered_map<std::string, Shape> shapes;
  for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto& vi : *list)
      if (auto s = static_shape(vi.type())) shapes[vi.name()] = std::move(*s);
  std::unordered_map<std::string, onnx_io::HostTensor> values;
  std::unordered_set<std::string> initializers;
  for (const auto& t : g.initializer()) {
    initializers.insert(t.name());
    shapes[t.name()] = Shape(t.dims().begin(), t.dims().end());
    if (onnx_io::numel(shapes[t.name()]) > onnx_io::kMaxFoldElements) continue;  // weights are not shape arithmetic
    try {
      values[t.name()] = onnx_io::from_tensor_proto(t, t.name());
    } catch (const Error&) {
      // An initializer the codec cannot read is reported where it is used, not here.
    }
  }
  std::unordered_set<std::string> folded;  // outputs of evaluated nodes
  for (const auto& node : g.node()) {
    std::vector<onnx_io::FoldInput> inputs;
    for (const auto& in : node.input()) {
      const auto v = values.find(in);
      const auto s = shapes.find(in);
      inputs.push_back({in.empty() || v == values.end() ? nullptr : &v->second, in.empty() || s == shapes.end() ? nullptr : &s->second});
    }
    auto outputs = onnx_io::fold_node(node, inputs);
    if (!outputs) continue;
    for (int i = 0; i < node.output_size(); ++i) {
      const std::string& name = node.output(i);
      if (name.empty()) continue;
      shapes[name] = (*outputs)[static_cast<size_t>(i)].dims;
      values[name] = std::move((*outputs)[static_cast<size_t>(i)]);
      folded.insert(name);
    }
  }
  if (folded.empty()) return false;
  // Values the graph returns, or that a subgraph (If, Loop) reads by name from this scope, keep their producer.
  std::unordered_set<std::string> kept;
  for (const auto& o : g.output()) kept.insert(o.name());
  std::function<void(const onnx::GraphProto&)> read_by_subgraphs = [&](const onnx::GraphProto& sub) {
    for (const auto& n : sub.node()) {
      kept.insert(n.input().begin(), n.input().end());
      for (const auto& a : n.attribute()) {
        if (a.has_g()) read_by_subgraphs(a.g());
        for (const auto& gs : a.graphs()) read_by_subgraphs(gs);
      }
    }
  };
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.has_g()) read_by_subgraphs(a.g());
      for (const auto& gs : a.graphs()) read_by_subgraphs(gs);
    }
  // Evaluated nodes leave the graph (ONNX's inference of them is what failed, e.g. 1.12's data propagation
  // through Unsqueeze of a scalar in Swin's window padding), unless their value is read as said above.
  auto* nodes = g.mutable_node();
  bool changed = false;
  for (int i = nodes->size(); i-- > 0;) {
    const auto& node = nodes->Get(i);
    const bool evaluated = node.output_size() > 0 && folded.count(node.output(0));
    if (!evaluated || std::any_of(node.output().begin(), node.output().end(), [&](const auto& o) { return kept.count(o); }))
      continue;
    nodes->DeleteSubrange(i, 1);
    changed = true;
  }
  for (auto& node : *nodes)
    for (auto& in : *node.mutable_input()) {
      if (!folded.count(in) || kept.count(in)) continue;
      const std::string name = in + "__nnmeter_folded";
      if (initializers.insert(name).second) *g.add_initializer() = onnx_io::to_tensor_proto(values.at(in), name);
      in = name;
      changed = true;
    }
  return changed;
}

// Shapes of ops ONNX 1.12 infers nothing for (Einsum), from their inputs' static shapes: declared as value_info
// (kept across passes in `declared`), which inference then builds on. Returns whether any was added.
bool supplement_shapes(const onnx::GraphProto& g, std::map<std::string, onnx::ValueInfoProto>& declared) {
  std::unordered_map<std::string, const onnx::TypeProto*> types;
  for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto& vi : *list) types[vi.name()] = &vi.type();
  std::unordered_map<std::string, Shape> initializers;
  for (const auto& t : g.initializer()) initializers[t.name()] = Shape(t.dims().begin(), t.dims().end());
  auto shape_of = [&](const std::string& name) -> std::optional<Shape> {
    if (auto it = initializers.find(name); it != initializers.end()) return it->second;
    if (auto it = types.find(name); it != types.end()) return static_shape(*it->second);
    return std::nullopt;
  };
  bool added = false;
  for (const auto& node : g.node()) {
    if (node.op_type() != "Einsum" || node.output_size() != 1 || declared.count(node.output(0)) || shape_of(node.output(0)))
      continue;
    const auto* equation = onnx_io::find_attribute(node, "equation");
    std::vector<Shape> inputs;
    for (const auto& in : node.input())
      if (auto s = shape_of(in)) inputs.push_back(std::move(*s));
    if (!equation || static_cast<int>(inputs.size()) != node.input_size()) continue;
    const auto out = onnx_io::einsum_shape(equation->s(), inputs);
    if (!out) continue;
    onnx::ValueInfoProto vi;
    vi.set_name(node.output(0));
    const auto it = types.find(node.input(0));
    vi.mutable_type()->mutable_tensor_type()->set_elem_type(
        it != types.end() ? it->second->tensor_type().elem_type() : static_cast<int>(onnx::TensorProto::FLOAT));
    set_dims(vi, *out);
    declared[node.output(0)] = std::move(vi);
    added = true;
  }
  return added;
}

bool all_outputs_static(const onnx::GraphProto& g) {
  std::unordered_set<std::string_view> shaped;
  for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto& vi : *list)
      if (static_shape(vi.type())) shaped.insert(vi.name());
  for (const auto& t : g.initializer()) shaped.insert(t.name());
  for (const auto& node : g.node())
    for (int i = 0; i < std::min(node.output_size(), 1); ++i)
      if (!node.output(i).empty() && !shaped.count(node.output(i))) return false;
  return true;
}

}  // namespace

namespace prediction {

// The last declaration of a tensor wins, as in ONNX's graph; one without a static shape hides earlier ones.
static ShapeMap declared_shapes(const onnx::GraphProto& g) {
  ShapeMap shapes;
  for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto& vi : *list) {
      if (auto s = static_shape(vi.type())) shapes[vi.name()] = std::move(*s);
      else shapes.erase(vi.name());
    }
  return shapes;
}

ShapeMap infer_shapes_with_onnx(onnx::ModelProto& model, const std::string& origin) {
  // Shapes in the file (value_info, outputs) may be symbolic or stale after an input override; inference
  // recomputes them all from the now static inputs.
  auto& g = *model.mutable_graph();
  g.clear_value_info();
  for (auto& o : *g.mutable_output()) o.mutable_type()->mutable_tensor_type()->clear_shape();
  static const ShapeRegistry registry;
  check_node_schemas(model, origin);
  // Passes that skip a node ONNX cannot infer (its outputs stay unknown) until nothing more folds; then, if
  // a shape is still unknown, one strict pass reports ONNX's own error.
  const onnx::ShapeInferenceOptions lenient{/*check_type=*/false, /*error_mode=*/0, /*enable_data_propagation=*/true};
  const onnx::ShapeInferenceOptions strict{/*check_type=*/false, /*error_mode=*/1, /*enable_data_propagation=*/true};
  std::map<std::string, onnx::ValueInfoProto> supplemented;
  auto restart = [&] {
    g.clear_value_info();
    for (const auto& [name, vi] : supplemented) *g.add_value_info() = vi;
  };
  try {
    for (int pass = 0; pass < 64; ++pass) {
      std::unordered_map<std::string, onnx::TensorShapeProto> data;
      onnx::shape_inference::InferShapes(model, &registry, lenient, &data);
      if (all_outputs_static(g)) break;
      // Folded first: where both apply, ONNX's propagated values are the ones that can be wrong.
      const bool folded = fold_load_time_constants(g);
      const bool propagated = materialize_propagated(g, data);
      if (!supplement_shapes(g, supplemented) && !propagated && !folded) {
        restart();
        data.clear();
        onnx::shape_inference::InferShapes(model, &registry, strict, &data);
        break;
      }
      restart();
    }
  } catch (const std::exception& e) {
    throw Error(fmt::format("shape inference failed for {}: {}", origin, first_line(e.what())));
  }
  return declared_shapes(g);
}

}  // namespace prediction

namespace {

Json attribute_json(const onnx::AttributeProto& a) {
  switch (a.type()) {
    case onnx::AttributeProto::INT: return a.i();
    case onnx::AttributeProto::FLOAT: return a.f();
    case onnx::AttributeProto::STRING: return a.s();
    case onnx::AttributeProto::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto::FLOATS: return std::vector<float>(a.floats().begin(), a.floats().end());
    default: return nullptr;
  }
}

class Converter {
 public:
  Converter(const onnx::ModelProto& model, std::string origin, const ShapeMap& shapes, std::pmr::memory_resource* scratch)
      : g_(model.graph()),
        origin_(std::move(origin)),
        shapes_(shapes),
        const_tensors_(scratch),
        scalar_values_(scratch),
        constants_(scratch),
        consumed_(scratch),
        producer_(scratch),
        names_(scratch),
        next_suffix_(scratch) {}

  ModelIr run(const std::vector<int>& order) {
    ModelIr ir;
    ir.origin = origin_;
    reserve_tables(ir);
    collect_constants();
    collect_consumed();
    add_placeholders(ir);
    for (int i : order) add_node(ir, g_.node(i));
    return ir;
  }

 private:

  // Sized once: rehashing these tables was a visible part of converting a model.
  void reserve_tables(ModelIr& ir) {
    const size_t tensors = static_cast<size_t>(g_.initializer_size() + 2 * g_.node_size() + g_.input_size());
    ir.nodes.reserve(static_cast<size_t>(g_.node_size() + g_.input_size()));
    constants_.reserve(tensors);
    consumed_.reserve(tensors);
    const_tensors_.reserve(static_cast<size_t>(g_.initializer_size()));
    producer_.reserve(tensors);
    names_.reserve(static_cast<size_t>(g_.node_size() + g_.input_size()));
    next_suffix_.reserve(static_cast<size_t>(g_.node_size() + g_.input_size()));
  }

  void collect_consumed() {
    for (const auto& node : g_.node())
      for (const auto& in : node.input()) consumed_.insert(in);
    for (const auto& o : g_.output()) consumed_.insert(o.name());
  }

  void collect_constants() {
    for (const auto& t : g_.initializer()) {
      const_tensors_[t.name()] = &t;
      constants_.insert(t.name());
    }
  }

  // base, base_1, base_2, ...: the first free one. Each base resumes where it stopped, since names are never
  // freed; retrying from 1 made a model of unnamed Relus quadratic (20,000 nodes: 2·10⁸ tries).
  std::string unique_name(std::string base) {
    if (base.empty()) base = "node";
    const auto [taken, fresh] = names_.emplace(base);
    if (fresh) return base;
    int64_t& k = next_suffix_.try_emplace(std::string_view(*taken), 1).first->second;
    std::string name;
    do name = base + "_" + std::to_string(k++);
    while (!names_.emplace(name).second);
    return name;
  }

  Shape shape_of(const std::string& tensor, const std::string& node, const std::string& op) const {
    auto it = shapes_.find(tensor);
    if (it == shapes_.end())
      throw Error(fmt::format("cannot determine a static shape for tensor '{}' of node '{}' ({}) in {}; give every "
                              "dynamic input with --input-shape name:1x3x224x224, or simplify the model",
                              tensor, node, op, origin_));
    return it->second;
  }

  void add_placeholders(ModelIr& ir) {
    for (const auto& vi : g_.input()) {
      if (constants_.count(vi.name())) continue;
      IrNode n;
      n.name = unique_name(vi.name());
      n.type = "Placeholder";
      n.output_shapes.push_back(shape_of(vi.name(), vi.name(), "graph input"));
      prediction::check_tensor_shape(n.output_shapes.back(), [&] { return fmt::format("input '{}' of {}", vi.name(), origin_); });
      producer_[vi.name()] = ir.nodes.size();
      ir.nodes.push_back(std::move(n));
    }
  }

  // Load-time constant: no runtime input, or only Shape/Size of a (statically shaped) tensor.
  bool is_constant_node(const onnx::NodeProto& node) const {
    if (node.op_type() == "Shape" || node.op_type() == "Size") return true;
    static const std::unordered_set<std::string> random = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                                           "RandomUniformLike", "Multinomial", "Bernoulli"};
    if (random.count(node.op_type())) return false;
    return std::all_of(node.input().begin(), node.input().end(),
                       [&](const std::string& in) { return in.empty() || constants_.count(in); });
  }

  void record_constant_node(const onnx::NodeProto& node) {
    for (const auto& o : node.output()) constants_.insert(o);
    if (node.op_type() != "Constant" || node.output_size() != 1) return;
    for (const auto& a : node.attribute()) {
      if (a.name() == "value" && a.has_t()) const_tensors_[node.output(0)] = &a.t();
      if (a.name() == "value_float") scalar_values_[node.output(0)] = {a.f()};
      if (a.name() == "value_int") scalar_values_[node.output(0)] = {static_cast<double>(a.i())};
      if (a.name() == "value_floats") scalar_values_[node.output(0)] = {a.floats().begin(), a.floats().end()};
      if (a.name() == "value_ints")
        for (int64_t v : a.ints()) scalar_values_[node.output(0)].push_back(static_cast<double>(v));
    }
  }

  std::optional<std::vector<double>> constant_values(const std::string& tensor) const {
    if (auto it = scalar_values_.find(tensor); it != scalar_values_.end()) return it->second;
    if (auto it = const_tensors_.find(tensor); it != const_tensors_.end()) return tensor_values(*it->second);
    return std::nullopt;
  }

  std::optional<Shape> constant_shape(const std::string& tensor) const {
    if (auto it = const_tensors_.find(tensor); it != const_tensors_.end())
      return Shape(it->second->dims().begin(), it->second->dims().end());
    if (auto it = shapes_.find(tensor); it != shapes_.end()) return it->second;
    return std::nullopt;
  }

  // A single value, or a tensor of one repeated value (a broadcast scalar).
  std::optional<double> constant_scalar(const std::string& tensor) const {
    auto v = constant_values(tensor);
    if (!v || v->empty()) return std::nullopt;
    for (double x : *v)
      if (x != v->front()) return std::nullopt;
    return v->front();
  }

  void add_constant_attrs(const onnx::NodeProto& node, Json& attr) const {
    const std::string& op = node.op_type();
    auto input = [&](int i) -> std::string { return i < node.input_size() ? node.input(i) : std::string(); };
    if (op == "Conv" || op == "ConvTranspose" || op == "Gemm" || op == "MatMul") {
      if (constants_.count(input(1)))
        if (auto w = constant_shape(input(1))) {
          attr["weight_shape"] = *w;
          if ((op == "Conv" || op == "ConvTranspose") && !attr.contains("kernel_shape") && w->size() > 2)
            attr["kernel_shape"] = Shape(w->begin() + 2, w->end());
        }
    } else if (op == "Clip") {
      if (auto lo = input(1).empty() ? std::nullopt : constant_scalar(input(1))) attr["min"] = *lo;
      if (auto hi = input(2).empty() ? std::nullopt : constant_scalar(input(2))) attr["max"] = *hi;
    } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow") {
      for (int i = 0; i < 2; ++i)
        if (constants_.count(input(i)) && !constants_.count(input(1 - i)))
          if (auto v = constant_scalar(input(i))) {
            attr["constant"] = *v;
            attr["constant_position"] = i;
          }
    } else if (op == "ReduceMean" && !attr.contains("axes") && constants_.count(input(1))) {
      if (auto v = constant_values(input(1))) {
        Shape axes;
        for (double x : *v) axes.push_back(static_cast<int64_t>(x));
        attr["axes"] = axes;
      }
    }
  }

  void add_node(ModelIr& ir, const onnx::NodeProto& node) {
    if (is_constant_node(node)) {
      record_constant_node(node);
      return;
    }
    IrNode n;
    n.type = node.op_type();
    n.name = unique_name(node.name().empty() ? node.op_type() : node.name());
    for (const auto& in : node.input()) {
      if (in.empty() || constants_.count(in)) continue;
      auto it = producer_.find(in);
      if (it == producer_.end())
        throw Error(fmt::format("node '{}' ({}) of {} reads '{}', which no node, input or initializer produces",
                                n.name, n.type, origin_, in));
      IrNode& producer = ir.nodes[it->second];
      n.inbounds.push_back(producer.name);
      n.input_shapes.push_back(shape_of(in, n.name, n.type));
      // Nodes come in topological order, so consumers are appended in that order.
      if (std::find(producer.outbounds.begin(), producer.outbounds.end(), n.name) == producer.outbounds.end())
        producer.outbounds.push_back(n.name);
    }
    for (int i = 0; i < node.output_size(); ++i) {
      const std::string& out = node.output(i);
      if (out.empty()) continue;
      // Optional outputs nobody reads (BatchNormalization's training statistics, Dropout's mask) may
      // legitimately stay unshaped.
      if (i > 0 && !consumed_.count(out)) continue;
      n.output_shapes.push_back(shape_of(out, n.name, n.type));
      prediction::check_tensor_shape(n.output_shapes.back(), [&] {
        return fmt::format("output '{}' of node '{}' ({}) in {}", out, n.name, n.type, origin_);
      });
      producer_[out] = ir.nodes.size();
    }
    for (const auto& a : node.attribute()) {
      Json v = attribute_json(a);
      if (!v.is_null()) n.attr[a.name()] = std::move(v);
    }
    add_constant_attrs(node, n.attr);
    if (node.op_type() == "Conv") check_groups(node, n.name);
    check_operands(node, n.name);
    ir.nodes.push_back(std::move(n));
  }

  // What ONNX 1.12's inference lets through but no runtime runs (the engines refuse it too): a Gemm or MatMul
  // whose inner dims differ, a Reshape to another element count, a normalisation axis outside the rank. Predicting such a model would count kernels
  // of shapes that cannot exist.
  void check_operands(const onnx::NodeProto& node, const std::string& name) const {
    const std::string& op = node.op_type();
    auto fail = [&](const std::string& why) {
      throw Error(fmt::format("node '{}' ({}) of {}: {}", name, op, origin_, why));
    };
    // An axis outside the input's rank (ONNX 1.12 infers LayerNormalization's output without checking it).
    if (op == "LayerNormalization" || op == "Softmax" || op == "LogSoftmax") {
      const auto x = node.input_size() > 0 ? constant_shape(node.input(0)) : std::nullopt;
      if (!x) return;
      int64_t axis = -1;
      for (const auto& at : node.attribute())
        if (at.name() == "axis") axis = at.i();
      const auto rank = static_cast<int64_t>(x->size());
      if (axis < -rank || axis >= rank)
        fail(fmt::format("axis {} is outside the input's rank {} ({})", axis, rank, onnx_io::shape_str(*x)));
      return;
    }
    if (op != "Gemm" && op != "MatMul" && op != "Reshape") return;
    if (node.input_size() < 2 || node.output_size() < 1) return;
    const auto a = constant_shape(node.input(0)), b = constant_shape(node.input(1)), y = constant_shape(node.output(0));
    if (!a || !b) return;
    if (op == "Reshape") {
      if (y && onnx_io::numel(*a) != onnx_io::numel(*y))
        fail(fmt::format("reshapes {} elements {} into {} elements {}", onnx_io::numel(*a), onnx_io::shape_str(*a),
                         onnx_io::numel(*y), onnx_io::shape_str(*y)));
      return;
    }
    int64_t ka = 0, kb = 0;
    if (op == "Gemm") {
      if (a->size() != 2 || b->size() != 2) fail(fmt::format("inputs {} and {} must be matrices", onnx_io::shape_str(*a), onnx_io::shape_str(*b)));
      bool ta = false, tb = false;
      for (const auto& at : node.attribute()) {
        if (at.name() == "transA") ta = at.i() != 0;
        if (at.name() == "transB") tb = at.i() != 0;
      }
      ka = (*a)[ta ? 0 : 1];
      kb = (*b)[tb ? 1 : 0];
    } else {
      if (a->empty() || b->empty()) fail("inputs must have rank 1 or more");
      ka = a->back();
      kb = b->size() == 1 ? (*b)[0] : (*b)[b->size() - 2];
    }
    if (ka != kb)
      fail(fmt::format("the inner dims of {} and {} differ ({} and {})", onnx_io::shape_str(*a), onnx_io::shape_str(*b), ka, kb));
  }

  // ONNX's inference does not relate group to the channel counts, and kernel configs divide by it.
  void check_groups(const onnx::NodeProto& node, const std::string& name) const {
    if (node.input_size() < 2) return;
    int64_t group = 1;
    for (const auto& a : node.attribute())
      if (a.name() == "group") group = a.i();
    const auto x = constant_shape(node.input(0)), w = constant_shape(node.input(1));
    if (!x || !w || x->size() < 2 || w->size() < 2) return;
    if (group < 1 || (*x)[1] % group != 0 || (*x)[1] / group != (*w)[1] || (*w)[0] % group != 0)
      throw Error(fmt::format("node '{}' (Conv) of {} has group {} with {} input channels and weight [{}]: input "
                              "channels must be group x weight dim 1, output channels a multiple of group",
                              name, origin_, group, (*x)[1], fmt::join(*w, ",")));
  }

  const onnx::GraphProto& g_;
  std::string origin_;
  // Keys view strings of the model, which outlives the converter.
  const ShapeMap& shapes_;
  std::pmr::unordered_map<std::string_view, const onnx::TensorProto*> const_tensors_;
  std::pmr::unordered_map<std::string_view, std::vector<double>> scalar_values_;
  std::pmr::unordered_set<std::string_view> constants_, consumed_;
  std::pmr::unordered_map<std::string_view, size_t> producer_;
  std::pmr::unordered_set<std::pmr::string> names_;
  std::pmr::unordered_map<std::string_view, int64_t> next_suffix_;  // keys view names_ (node-based, stable)
};

ModelIr convert_owned(onnx::ModelProto& model, const std::string& origin, const InputShapes& shapes) {
  std::pmr::monotonic_buffer_resource scratch;
  std::pmr::unordered_set<std::string_view> initializers(&scratch);
  initializers.reserve(static_cast<size_t>(model.graph().initializer_size()));
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  fix_input_shapes(*model.mutable_graph(), initializers, shapes, origin);
  prediction::check_onnx_model(model, origin);
  std::vector<int> order = prediction::topological_nodes(model.graph(), origin, &scratch);
  std::optional<ShapeMap> inferred = prediction::infer_shapes_directly(model.graph(), order, &scratch, origin);
  if (!inferred) {
    inferred = prediction::infer_shapes_with_onnx(model, origin);
    // Folding removed the nodes it evaluated: the order of the graph as it is now.
    order = prediction::topological_nodes(model.graph(), origin, &scratch);
  }
  ModelIr ir = Converter(model, origin, *inferred, &scratch).run(order);
  if (std::all_of(ir.nodes.begin(), ir.nodes.end(), [](const IrNode& n) { return n.type == "Placeholder"; }))
    throw Error(origin + " computes nothing at run time (every node is a constant): there is no latency to predict");
  return ir;
}

}  // namespace

// The working copy lives on an arena: a model is thousands of small protobuf objects, and freeing them one
// by one cost more than shape inference.
ModelIr load_onnx_ir(const fs::path& onnx_file, const InputShapes& shapes) {
  google::protobuf::Arena arena;
  auto* model = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  prediction::read_onnx_structure(onnx_file, *model);
  return convert_owned(*model, onnx_file.string(), shapes);
}

ModelIr load_onnx_ir_bytes(std::string_view onnx_bytes, const std::string& origin, const InputShapes& shapes) {
  google::protobuf::Arena arena;
  auto* model = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  prediction::read_onnx_structure(reinterpret_cast<const uint8_t*>(onnx_bytes.data()), onnx_bytes.size(), origin, *model);
  return convert_owned(*model, origin, shapes);
}

ModelIr onnx_to_ir(const onnx::ModelProto& model, const std::string& origin, const InputShapes& shapes) {
  google::protobuf::Arena arena;
  auto* copy = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  prediction::structure_copy(model, *copy);
  return convert_owned(*copy, origin, shapes);
}

namespace prediction {

std::optional<Shape> static_shape(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
  Shape s;
  for (const auto& d : type.tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) return std::nullopt;
    s.push_back(d.dim_value());
  }
  return s;
}

std::vector<int> topological_nodes(const onnx::GraphProto& g, const std::string& origin, std::pmr::memory_resource* scratch) {
  const int n = g.node_size();
  std::pmr::unordered_map<std::string_view, int> producer(scratch);
  producer.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    for (const auto& o : g.node(i).output())
      if (!o.empty()) producer[o] = i;
  // Producer of each edge, in edge order.
  auto each_edge = [&](auto&& f) {
    for (int i = 0; i < n; ++i)
      for (const auto& in : g.node(i).input())
        if (auto it = in.empty() ? producer.end() : producer.find(in); it != producer.end()) f(it->second, i);
  };
  bool sorted = true;
  each_edge([&](int from, int to) { sorted = sorted && from < to; });
  std::vector<int> order;
  order.reserve(static_cast<size_t>(n));
  if (sorted) {
    for (int i = 0; i < n; ++i) order.push_back(i);
    return order;
  }
  // Out of order (ONNX requires the order, some tools break it): the file's order wherever the edges allow.
  std::vector<std::pair<size_t, size_t>> edges;
  each_edge([&](int from, int to) { edges.emplace_back(static_cast<size_t>(from), static_cast<size_t>(to)); });
  const auto sorted_order = topological_order(static_cast<size_t>(n), edges, std::less<size_t>());
  if (!sorted_order) throw Error(origin + " is not a valid ONNX graph: its nodes form a cycle");
  for (size_t i : *sorted_order) order.push_back(static_cast<int>(i));
  return order;
}

}  // namespace prediction

std::pair<std::string, Shape> parse_input_shape(const std::string& text) {
  const auto bad = [&] {
    return Error("bad --input-shape '" + text + "': expected NAME:DIMS like input:1x3x224x224");
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= text.size()) throw bad();
  Shape dims;
  size_t pos = colon + 1;
  while (pos <= text.size()) {
    size_t end = text.find_first_of("x,", pos);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(pos, end - pos);
    if (part.empty() || part.size() > 9 || part.find_first_not_of("0123456789") != std::string::npos) throw bad();
    const int64_t d = std::stoll(part);
    if (d <= 0) throw bad();
    dims.push_back(d);
    pos = end + 1;
  }
  return {text.substr(0, colon), dims};
}

}  // namespace nnmeter
