// nn-Meter's IR json: node name →
// {inbounds, outbounds, attr: {name, type, input_shape, output_shape, attr}} with 4-D shapes in NHWC.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "common/graph_order.h"
#include "prediction/internal.h"

namespace nnmeter {

namespace prediction {

Shape nchw_to_nhwc(const Shape& s) {
  if (s.size() != 4) return s;
  return {s[0], s[2], s[3], s[1]};
}

Shape nhwc_to_nchw(const Shape& s) {
  if (s.size() != 4) return s;
  return {s[0], s[3], s[1], s[2]};
}

}  // namespace prediction

namespace {

Json shapes_json(const std::vector<Shape>& shapes) {
  Json out = Json::array();
  for (const auto& s : shapes) out.push_back(prediction::nchw_to_nhwc(s));
  return out;
}

[[noreturn]] void malformed(const std::string& origin, const std::string& node, const std::string& what) {
  throw Error(fmt::format("{} is not an nn-Meter IR: node '{}' {}", origin, node, what));
}

std::vector<std::string> names_of(const Json& j, const std::string& key, const std::string& origin, const std::string& node) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  if (!j[key].is_array()) malformed(origin, node, "has a non-list '" + key + "'");
  for (const auto& v : j[key]) {
    if (!v.is_string()) malformed(origin, node, "has a non-string entry in '" + key + "'");
    out.push_back(v.get<std::string>());
  }
  return out;
}

std::vector<Shape> shapes_of(const Json& attr, const std::string& key, const std::string& origin, const std::string& node) {
  std::vector<Shape> out;
  if (!attr.contains(key)) return out;
  const Json& list = attr[key];
  if (!list.is_array()) malformed(origin, node, "has a non-list '" + key + "'");
  for (const auto& s : list) {
    if (!s.is_array()) malformed(origin, node, "has a shape in '" + key + "' that is not a list");
    Shape shape;
    for (const auto& d : s) {
      if (!d.is_number_integer()) malformed(origin, node, "has a non-integer dim in '" + key + "'");
      shape.push_back(d.get<int64_t>());
    }
    prediction::check_tensor_shape(shape, [&] { return fmt::format("node '{}' of {}: '{}'", node, origin, key); });
    out.push_back(prediction::nhwc_to_nchw(shape));
  }
  return out;
}

IrNode node_from_json(const std::string& name, const Json& j, const std::string& origin) {
  if (!j.is_object() || !j.contains("attr") || !j["attr"].is_object()) malformed(origin, name, "has no 'attr' object");
  const Json& a = j["attr"];
  IrNode n;
  n.name = name;
  if (!a.contains("type") || !a["type"].is_string()) malformed(origin, name, "has no string 'type'");
  n.type = a["type"].get<std::string>();
  n.inbounds = names_of(j, "inbounds", origin, name);
  n.outbounds = names_of(j, "outbounds", origin, name);
  n.input_shapes = shapes_of(a, "input_shape", origin, name);
  n.output_shapes = shapes_of(a, "output_shape", origin, name);
  if (a.contains("attr")) {
    if (!a["attr"].is_object()) malformed(origin, name, "has a non-object 'attr.attr'");
    n.attr = a["attr"];
  }
  return n;
}

// Ties go to the smaller "order" (what get_ir wrote), then to the name.
std::vector<size_t> topological_order(const std::vector<IrNode>& nodes, const std::vector<int64_t>& order_hint,
                                      const std::string& origin) {
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i].name] = i;
  std::vector<std::pair<size_t, size_t>> edges;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const auto& in : nodes[i].inbounds) {
      auto it = index.find(in);
      if (it == index.end()) malformed(origin, nodes[i].name, "reads '" + in + "', which is not a node");
      edges.emplace_back(it->second, i);
    }
  auto order = nnmeter::topological_order(nodes.size(), edges, [&](size_t a, size_t b) {
    if (order_hint[a] != order_hint[b]) return order_hint[a] < order_hint[b];
    return nodes[a].name < nodes[b].name;
  });
  if (!order) throw Error(origin + " is not an nn-Meter IR: its nodes form a cycle");
  return *order;
}

}  // namespace

Json ir_to_nnmeter_json(const ModelIr& ir) {
  Json out = Json::object();
  for (size_t i = 0; i < ir.nodes.size(); ++i) {
    const IrNode& n = ir.nodes[i];
    out[n.name] = Json{{"inbounds", n.inbounds},
                       {"outbounds", n.outbounds},
                       {"order", i},
                       {"attr",
                        {{"name", n.name},
                         {"type", n.type},
                         {"input_shape", shapes_json(n.input_shapes)},
                         {"output_shape", shapes_json(n.output_shapes)},
                         {"attr", n.attr}}}};
  }
  return out;
}

ModelIr ir_from_nnmeter_json(const Json& ir_json, const std::string& origin) {
  if (!ir_json.is_object() || ir_json.empty())
    throw Error(origin + " is not an nn-Meter IR: expected a JSON object of nodes (write one with nn-meter get_ir)");
  if (ir_json.size() > kMaxModelNodes)
    throw Error(fmt::format("{} has more than {} nodes, more than nn-meter reads", origin, kMaxModelNodes));
  std::vector<IrNode> nodes;
  std::vector<int64_t> hint;
  for (const auto& [name, j] : ir_json.items()) {
    nodes.push_back(node_from_json(name, j, origin));
    hint.push_back(j.contains("order") && j["order"].is_number_integer() ? j["order"].get<int64_t>() : 0);
  }
  ModelIr ir;
  ir.origin = origin;
  for (size_t i : topological_order(nodes, hint, origin)) ir.nodes.push_back(std::move(nodes[i]));
  // nn-Meter's own IR files may list outbounds inconsistently; rebuild them from the inbounds
  // (ModelGraph.refresh does the same), consumers in topological order.
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < ir.nodes.size(); ++i) {
    index[ir.nodes[i].name] = i;
    ir.nodes[i].outbounds.clear();
  }
  for (const auto& n : ir.nodes)
    for (const auto& in : n.inbounds) {
      auto& outs = ir.nodes[index.at(in)].outbounds;
      if (std::find(outs.begin(), outs.end(), n.name) == outs.end()) outs.push_back(n.name);
    }
  return ir;
}

}  // namespace nnmeter
