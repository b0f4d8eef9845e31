// Load-time evaluation of constant subgraphs. PyTorch exports compute reshape targets at run time
// (Shape → Gather → Unsqueeze → Concat → Reshape); with static input shapes all of that is known when the
// model loads, so it is evaluated here once and never reaches the inference pipeline. These loops run
// on small host tensors only; every inference-time op goes through oneDNN.
#include <algorithm>
#include <cmath>
#include <functional>

#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

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

bool fold_node(const Graph& graph, const onnx::NodeProto& node, const std::vector<int>& inputs,
               std::vector<HostTensor>& outputs) {
  const OpDef* def = find_op(node.op_type());
  if (!def || !def->fold) return false;
  if (!def->folds_from_shapes)
    for (int id : inputs)
      if (id >= 0 && !graph.is_const(id)) return false;
  return def->fold(FoldContext{graph, node, inputs, Attrs(node, graph.origin)}, outputs);
}

// ---------------------------------------------------------------------------------------------------
// Shape rules

Shape reshape_shape(const Shape& in, const std::vector<int64_t>& spec, bool allowzero, const Attrs& attrs) {
  Shape out(spec.begin(), spec.end());
  int infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0 && !allowzero) {
      if (i >= in.size()) attrs.fail("shape", "copies a dimension (0) beyond the input rank");
      out[i] = in[i];
    } else if (out[i] == -1) {
      if (infer >= 0) attrs.fail("shape", "has more than one -1");
      infer = static_cast<int>(i);
    } else if (out[i] < 0) {
      attrs.fail("shape", fmt::format("has an invalid dimension {}", out[i]));
    }
  }
  const int64_t total = numel(in);
  if (infer >= 0) {
    out[static_cast<size_t>(infer)] = 1;
    const int64_t known = numel(out);
    if (known == 0 || total % known) attrs.fail("shape", fmt::format("{} cannot hold {} elements", shape_str(spec), total));
    out[static_cast<size_t>(infer)] = total / known;
  }
  if (numel(out) != total)
    attrs.fail("shape", fmt::format("{} does not match the input {}", shape_str(spec), shape_str(in)));
  return out;
}

Shape unsqueeze_shape(const Shape& in, std::vector<int64_t> axes, const Attrs& attrs) {
  const auto rank = static_cast<int64_t>(in.size() + axes.size());
  for (auto& a : axes) a = normalize_axis(a, rank, attrs, "axes");
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) attrs.fail("axes", "has duplicates");
  Shape out;
  size_t src = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::binary_search(axes.begin(), axes.end(), i)) out.push_back(1);
    else out.push_back(in[src++]);
  }
  return out;
}

Shape squeeze_shape(const Shape& in, std::vector<int64_t> axes, const Attrs& attrs) {
  const auto rank = static_cast<int64_t>(in.size());
  for (auto& a : axes) {
    a = normalize_axis(a, rank, attrs, "axes");
    if (in[static_cast<size_t>(a)] != 1) attrs.fail("axes", fmt::format("selects dimension {} of size {}, not 1", a, in[static_cast<size_t>(a)]));
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    const bool drop = axes.empty() ? in[static_cast<size_t>(i)] == 1 : std::count(axes.begin(), axes.end(), i) > 0;
    if (!drop) out.push_back(in[static_cast<size_t>(i)]);
  }
  return out;
}

Shape flatten_shape(const Shape& in, const Attrs& attrs) {
  const auto rank = static_cast<int64_t>(in.size());
  int64_t axis = attrs.i("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) attrs.fail("axis", fmt::format("= {} is out of range for rank {}", attrs.i("axis", 1), rank));
  return {numel(Shape(in.begin(), in.begin() + axis)), numel(Shape(in.begin() + axis, in.end()))};
}

std::vector<int64_t> transpose_perm(const Shape& in, const Attrs& attrs) {
  std::vector<int64_t> perm = attrs.ints("perm");
  if (perm.empty())
    for (size_t i = in.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  if (perm.size() != in.size()) attrs.fail("perm", "does not match the input rank");
  auto sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int64_t>(i)) attrs.fail("perm", "is not a permutation");
  return perm;
}

std::optional<std::vector<int64_t>> axes_of(const Graph& g, const std::vector<int>& inputs, size_t index,
                                            const Attrs& attrs, const char* attribute) {
  if (attrs.has(attribute)) return attrs.ints(attribute);
  if (index < inputs.size() && inputs[index] >= 0) return g.constant(inputs[index]).to_ints();
  return std::nullopt;
}

SliceSpec slice_spec(const Graph& g, const Shape& in, const std::vector<int>& inputs, const Attrs& attrs) {
  const auto rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (g.opset < 10) {
    starts = attrs.ints("starts");
    ends = attrs.ints("ends");
    axes = attrs.ints("axes");
  } else {
    if (inputs.size() < 3) attrs.fail("starts", "and ends inputs are required");
    starts = g.constant(inputs[1]).to_ints();
    ends = g.constant(inputs[2]).to_ints();
    if (inputs.size() > 3 && inputs[3] >= 0) axes = g.constant(inputs[3]).to_ints();
    if (inputs.size() > 4 && inputs[4] >= 0) steps = g.constant(inputs[4]).to_ints();
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size())
    attrs.fail("starts", "ends, axes and steps have different lengths");
  SliceSpec spec{Shape(in.size(), 0), Shape(in.size(), 1), in};
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto a = static_cast<size_t>(normalize_axis(axes[i], rank, attrs, "axes"));
    const int64_t dim = in[a], step = steps[i];
    if (step == 0) attrs.fail("steps", "must not be zero");
    if (step < 0) attrs.fail("steps", "< 0 (reversing slices) is not supported");
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    s = std::clamp<int64_t>(s, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    spec.start[a] = s;
    spec.step[a] = step;
    spec.dims[a] = e > s ? (e - s + step - 1) / step : 0;
  }
  return spec;
}

std::vector<int64_t> split_sizes(const Graph& g, const std::vector<int>& inputs, int64_t dim, int outputs,
                                 const Attrs& attrs) {
  std::vector<int64_t> sizes = attrs.ints("split");
  if (sizes.empty() && inputs.size() > 1 && inputs[1] >= 0) sizes = g.constant(inputs[1]).to_ints();
  if (sizes.empty()) {
    if (outputs <= 0 || dim % outputs) attrs.fail("split", fmt::format("is absent and {} does not divide into {} parts", dim, outputs));
    sizes.assign(static_cast<size_t>(outputs), dim / outputs);
  }
  if (static_cast<int>(sizes.size()) != outputs) attrs.fail("split", "does not list one size per output");
  int64_t total = 0;
  for (auto s : sizes) {
    if (s < 0) attrs.fail("split", "has a negative size");
    total += s;
  }
  if (total != dim) attrs.fail("split", fmt::format("sizes sum to {}, not the axis length {}", total, dim));
  return sizes;
}

}  // namespace nnmeter::onednn
