#include "fusion/compose.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace nnmeter::fusion {

namespace {

Shape shape_of(const onnx::ValueInfoProto& info) {
  Shape s;
  if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return s;
  for (const auto& d : info.type().tensor_type().shape().dim()) s.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return s;
}

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

const onnx::ValueInfoProto* find_value(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& v : g.output())
    if (v.name() == name) return &v;
  for (const auto& v : g.value_info())
    if (v.name() == name) return &v;
  for (const auto& v : g.input())
    if (v.name() == name) return &v;
  return nullptr;
}

void merge_opsets(onnx::ModelProto& base, const onnx::ModelProto& part) {
  for (const auto& op : part.opset_import()) {
    bool found = false;
    for (auto& mine : *base.mutable_opset_import()) {
      const bool same = mine.domain() == op.domain() || (mine.domain().empty() && op.domain() == "ai.onnx") ||
                        (mine.domain() == "ai.onnx" && op.domain().empty());
      if (same) {
        mine.set_version(std::max(mine.version(), op.version()));
        found = true;
      }
    }
    if (!found) *base.add_opset_import() = op;
  }
  base.set_ir_version(std::max(base.ir_version(), part.ir_version()));
}

}  // namespace

onnx::ModelProto parse_model(const std::string& bytes, const std::string& origin) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) throw Error(origin + " did not produce a parsable ONNX model");
  return model;
}

std::vector<const onnx::ValueInfoProto*> real_inputs(const onnx::GraphProto& graph) {
  std::set<std::string> weights;
  for (const auto& t : graph.initializer()) weights.insert(t.name());
  std::vector<const onnx::ValueInfoProto*> out;
  for (const auto& in : graph.input())
    if (!weights.count(in.name())) out.push_back(&in);
  return out;
}

void append_model(onnx::ModelProto& base, const std::string& bind, const onnx::ModelProto& part, const std::string& prefix,
                  const std::string& part_origin) {
  const onnx::GraphProto& pg = part.graph();
  const auto inputs = real_inputs(pg);
  if (inputs.empty()) throw Error(part_origin + " has no model input to connect");
  const onnx::ValueInfoProto* bound = find_value(base.graph(), bind);
  if (bound != nullptr && shape_of(*bound) != shape_of(*inputs.front()))
    throw Error(fmt::format("{} expects an input of shape {}, but the operator before it produces {}", part_origin,
                            shape_str(shape_of(*inputs.front())), shape_str(shape_of(*bound))));

  const std::string first = inputs.front()->name();
  auto rename = [&](const std::string& n) { return n.empty() ? n : n == first ? bind : prefix + n; };
  onnx::GraphProto* g = base.mutable_graph();
  for (const auto* in : inputs) {
    if (in->name() == first) continue;
    auto* added = g->add_input();
    *added = *in;
    added->set_name(rename(in->name()));
  }
  for (const auto& t : pg.initializer()) {
    auto* added = g->add_initializer();
    *added = t;
    added->set_name(rename(t.name()));
  }
  for (const auto& n : pg.node()) {
    auto* added = g->add_node();
    *added = n;
    added->set_name(n.name().empty() ? n.name() : prefix + n.name());
    for (auto& in : *added->mutable_input()) in = rename(in);
    for (auto& out : *added->mutable_output()) out = rename(out);
  }
  for (const auto& v : pg.value_info()) {
    auto* added = g->add_value_info();
    *added = v;
    added->set_name(rename(v.name()));
  }
  for (const auto& o : pg.output()) {
    auto* added = g->add_output();
    *added = o;
    added->set_name(rename(o.name()));
  }
  merge_opsets(base, part);
}

void drop_output(onnx::ModelProto& model, const std::string& name) {
  auto* outputs = model.mutable_graph()->mutable_output();
  for (int i = 0; i < outputs->size(); ++i) {
    if (outputs->Get(i).name() != name) continue;
    // Keep the shape as value_info so the model stays self-describing.
    *model.mutable_graph()->add_value_info() = outputs->Get(i);
    outputs->DeleteSubrange(i, 1);
    return;
  }
}

onnx::ModelProto chain(const onnx::ModelProto& first, const onnx::ModelProto& second, const std::string& second_origin) {
  if (first.graph().output_size() == 0) throw Error("the first operator's model has no output to chain from");
  onnx::ModelProto block = first;
  const std::string joint = first.graph().output(0).name();
  append_model(block, joint, second, "op2_", second_origin);
  drop_output(block, joint);
  block.mutable_graph()->set_name(first.graph().name() + "_" + second.graph().name());
  return block;
}

std::vector<Shape> input_shapes(const onnx::ModelProto& model) {
  std::vector<Shape> out;
  for (const auto* in : real_inputs(model.graph())) {
    Shape s = shape_of(*in);
    if (!s.empty()) s.erase(s.begin());
    out.push_back(s);
  }
  return out;
}

std::string serialize(const onnx::ModelProto& model) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw Error("could not serialize the ONNX model '" + model.graph().name() + "'");
  return bytes;
}

}  // namespace nnmeter::fusion
