// The op table the op files fill at load time of the library, its dispatch, and the helpers the op files
// share. The fold helpers run on small host tensors only (shape arithmetic and constants).
#include <algorithm>

#include "common/op_table.h"
#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

namespace {

using Table = OpTable<OpDef, &OpDef::name>;

}  // namespace

OpRegistration::OpRegistration(std::vector<OpDef> ops) { Table::add(std::move(ops)); }

const std::vector<OpDef>& op_table() { return Table::entries(); }

const OpDef* find_op(const std::string& name) { return Table::find(name); }

const std::vector<std::string>& runtime_ops() {
  static const std::vector<std::string> ops = Table::sorted_keys([](const OpDef& op) { return op.runs(); });
  return ops;
}

bool is_parameter_input(const std::string& op, size_t input_index) {
  const OpDef* def = find_op(op);
  return def && def->is_parameter_input(input_index);
}

bool fold_at_load(const Graph& graph, const onnx::NodeProto& node, const std::vector<int>& inputs,
                  std::vector<HostTensor>& outputs) {
  const OpDef* def = find_op(node.op_type());
  if (!def || !def->fold) return false;
  if (!def->folds_from_shapes)
    for (int id : inputs)
      if (id >= 0 && !graph.is_const(id)) return false;
  return def->fold(FoldContext{graph, node, inputs, graph.attrs(node)}, outputs);
}

const Shape& ShapeContext::in(size_t i) const {
  if (i >= n.inputs.size() || n.inputs[i] < 0) attrs.fail(fmt::format("input {}", i), "is missing");
  return g.value(n.inputs[i]).shape;
}

bool ShapeContext::has_input(size_t i) const { return i < n.inputs.size() && n.inputs[i] >= 0; }

void ShapeContext::require_rank(const Shape& s, size_t lo, size_t hi, const char* what) const {
  if (s.size() < lo || s.size() > hi)
    attrs.fail(what, fmt::format("has rank {} ({}); {} supports ranks {} to {}", s.size(), shape_str(s), attrs.engine(), lo, hi));
}

std::vector<Shape> infer_runtime_shapes(const Graph& graph, const Node& node) {
  const ShapeContext cx{graph, node, graph.attrs(*node.proto)};
  const OpDef* def = find_op(node.op);
  if (!def || !def->shape) cx.attrs.fail("op", "has no shape rule");
  cx.attrs.only(def->attributes);
  return def->shape(cx);
}

// ---------------------------------------------------------------------------------------------------
// Fold helpers

using DType = HostTensor::DType;

bool emit(std::vector<HostTensor>& out, HostTensor t) {
  out.push_back(std::move(t));
  return true;
}

void for_each_view(const Shape& dims, const Shape& in_strides, int64_t offset,
                   const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t total = numel(dims);
  Shape idx(dims.size(), 0);
  for (int64_t o = 0; o < total; ++o) {
    int64_t off = offset;
    for (size_t d = 0; d < dims.size(); ++d) off += idx[d] * in_strides[d];
    fn(o, off);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
}

HostTensor broadcast_binary(const HostTensor& a, const HostTensor& b, const Shape& out,
                            const std::function<double(double, double)>& fn) {
  auto view_strides = [&](const HostTensor& t) {
    Shape padded(out.size() - t.dims.size(), 1);
    padded.insert(padded.end(), t.dims.begin(), t.dims.end());
    Shape s = row_major_strides(padded);
    for (size_t i = 0; i < out.size(); ++i)
      if (padded[i] == 1) s[i] = 0;
    return s;
  };
  const Shape sa = view_strides(a), sb = view_strides(b);
  HostTensor r;
  r.dtype = a.dtype == DType::F32 || b.dtype == DType::F32 ? DType::F32 : DType::I64;
  r.dims = out;
  r.data.resize(static_cast<size_t>(numel(out)));
  std::vector<int64_t> offb(r.data.size());
  for_each_view(out, sb, 0, [&](int64_t o, int64_t off) { offb[static_cast<size_t>(o)] = off; });
  for_each_view(out, sa, 0, [&](int64_t o, int64_t off) {
    r.data[static_cast<size_t>(o)] = fn(a.data[static_cast<size_t>(off)], b.data[static_cast<size_t>(offb[static_cast<size_t>(o)])]);
  });
  return r;
}

HostTensor scalar_i64(const Shape& dims, std::vector<double> data) {
  HostTensor t;
  t.dtype = DType::I64;
  t.dims = dims;
  t.data = std::move(data);
  return t;
}

const HostTensor& FoldContext::c(size_t i) const {
  if (i >= in.size() || in[i] < 0) attrs.fail(fmt::format("input {}", i), "is missing");
  return g.constant(in[i]);
}

const Shape& FoldContext::shape_of(size_t i) const {
  if (i >= in.size() || in[i] < 0) attrs.fail(fmt::format("input {}", i), "is missing");
  return g.value(in[i]).shape;
}

}  // namespace nnmeter::onnx_io
