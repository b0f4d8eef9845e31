// Load-time evaluation of constant subgraphs. PyTorch exports compute reshape targets at run time
// (Shape → Gather → Unsqueeze → Concat → Reshape); with static input shapes all of that is known when the
// model loads, so it is evaluated here once and never reaches the inference pipeline. These loops run
// on small host tensors only; every inference-time op goes through oneDNN.
#include <algorithm>
#include <cmath>
#include <functional>

#include "backends/onednn/graph_internal.h"

namespace nnmeter::onednn {

namespace {

using DType = HostTensor::DType;

Shape strides_of(const Shape& dims) {
  Shape s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// Calls fn(out_index, in_offset) for every element of a strided view (out dims, in strides, in offset).
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
    Shape s = strides_of(padded);
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

class Folder {
 public:
  Folder(Graph& g, const onnx::NodeProto& node, const std::vector<int>& inputs)
      : g_(g), node_(node), in_(inputs), attrs_(node, g.origin) {}

  bool run(std::vector<HostTensor>& out) {
    const auto& op = node_.op_type();
    if (op == "Shape") return shape(out);
    if (op == "Size") return emit(out, scalar_i64({}, {static_cast<double>(numel(shape_of(0)))}));
    // Everything below needs constant inputs.
    for (int id : in_)
      if (id >= 0 && !g_.is_const(id)) return false;
    if (op == "Constant") return constant(out);
    if (op == "Identity" || op == "Dropout") return dropout(out);
    if (op == "Cast") return cast(out);
    if (op == "Reshape") return reshaped(out, reshape_shape(c(0).dims, c(1).to_ints(), attrs_.i("allowzero", 0) != 0, attrs_));
    if (op == "Flatten") return reshaped(out, flatten_shape(c(0).dims, attrs_));
    if (op == "Unsqueeze") return reshaped(out, unsqueeze_shape(c(0).dims, axes_or_fail(), attrs_));
    if (op == "Squeeze") return reshaped(out, squeeze_shape(c(0).dims, axes_of(g_, in_, 1, attrs_).value_or(std::vector<int64_t>{}), attrs_));
    if (op == "Gather") return gather(out);
    if (op == "Concat") return concat(out);
    if (op == "Slice") return slice(out);
    if (op == "Transpose") return transpose(out);
    if (op == "ConstantOfShape") return constant_of_shape(out);
    if (op == "Range") return range(out);
    if (op == "Expand") return expand(out);
    if (op == "Add") return binary(out, std::plus<>());
    if (op == "Sub") return binary(out, std::minus<>());
    if (op == "Mul") return binary(out, std::multiplies<>());
    if (op == "Div") return divide(out);
    if (op == "Equal") return binary(out, [](double a, double b) { return a == b ? 1.0 : 0.0; }, DType::I64);
    if (op == "Where") return where(out);
    if (op == "Neg") return unary(out, [](double x) { return -x; });
    if (op == "Sqrt") return unary(out, [](double x) { return std::sqrt(x); });
    if (op == "Floor") return unary(out, [](double x) { return std::floor(x); });
    if (op == "Ceil") return unary(out, [](double x) { return std::ceil(x); });
    return false;
  }

 private:
  const HostTensor& c(size_t i) const {
    if (i >= in_.size() || in_[i] < 0) attrs_.fail(fmt::format("input {}", i), "is missing");
    return g_.constant(in_[i]);
  }
  const Shape& shape_of(size_t i) const {
    if (i >= in_.size() || in_[i] < 0) attrs_.fail(fmt::format("input {}", i), "is missing");
    return g_.value(in_[i]).shape;
  }

  static bool emit(std::vector<HostTensor>& out, HostTensor t) {
    out.push_back(std::move(t));
    return true;
  }

  bool shape(std::vector<HostTensor>& out) {
    const Shape& s = shape_of(0);
    const auto rank = static_cast<int64_t>(s.size());
    auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
    const int64_t start = clamp(attrs_.i("start", 0)), end = clamp(attrs_.i("end", rank));
    std::vector<double> dims;
    for (int64_t i = start; i < end; ++i) dims.push_back(static_cast<double>(s[static_cast<size_t>(i)]));
    return emit(out, scalar_i64({static_cast<int64_t>(dims.size())}, dims));
  }

  bool constant(std::vector<HostTensor>& out) {
    if (const auto* t = attrs_.tensor("value")) return emit(out, from_tensor_proto(*t, attrs_.label()));
    if (attrs_.has("value_float")) return emit(out, HostTensor{DType::F32, {}, {attrs_.f("value_float", 0)}});
    if (attrs_.has("value_int")) return emit(out, scalar_i64({}, {static_cast<double>(attrs_.i("value_int", 0))}));
    if (attrs_.has("value_ints")) {
      const auto v = attrs_.ints("value_ints");
      return emit(out, scalar_i64({static_cast<int64_t>(v.size())}, {v.begin(), v.end()}));
    }
    if (attrs_.has("value_floats")) {
      const auto& a = node_.attribute(0);
      return emit(out, HostTensor{DType::F32, {a.floats_size()}, {a.floats().begin(), a.floats().end()}});
    }
    attrs_.fail(node_.attribute_size() ? node_.attribute(0).name() : "value", "is not a supported Constant form");
  }

  bool dropout(std::vector<HostTensor>& out) {
    out.push_back(c(0));
    if (node_.output_size() > 1 && !node_.output(1).empty()) {
      HostTensor mask = c(0);
      mask.dtype = DType::I64;
      std::fill(mask.data.begin(), mask.data.end(), 1.0);
      out.push_back(std::move(mask));
    }
    return true;
  }

  bool cast(std::vector<HostTensor>& out) {
    HostTensor t = c(0);
    const auto to = attrs_.i("to", onnx::TensorProto::FLOAT);
    if (to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE) {
      t.dtype = DType::F32;
      for (auto& v : t.data) v = static_cast<float>(v);
    } else if (to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32 || to == onnx::TensorProto::BOOL) {
      t.dtype = DType::I64;
      for (auto& v : t.data) v = to == onnx::TensorProto::BOOL ? (v != 0) : std::trunc(v);
    } else {
      return false;
    }
    return emit(out, std::move(t));
  }

  bool reshaped(std::vector<HostTensor>& out, Shape dims) {
    HostTensor t = c(0);
    t.dims = std::move(dims);
    return emit(out, std::move(t));
  }

  std::vector<int64_t> axes_or_fail() {
    auto axes = axes_of(g_, in_, 1, attrs_);
    if (!axes) attrs_.fail("axes", "is required");
    return *axes;
  }

  bool gather(std::vector<HostTensor>& out) {
    const auto& data = c(0);
    const auto& idx = c(1);
    const auto rank = static_cast<int64_t>(data.dims.size());
    const int64_t axis = normalize_axis(attrs_.i("axis", 0), rank, attrs_, "axis");
    const int64_t n = data.dims[static_cast<size_t>(axis)];
    HostTensor r;
    r.dtype = data.dtype;
    r.dims.assign(data.dims.begin(), data.dims.begin() + axis);
    r.dims.insert(r.dims.end(), idx.dims.begin(), idx.dims.end());
    r.dims.insert(r.dims.end(), data.dims.begin() + axis + 1, data.dims.end());
    const int64_t outer = numel(Shape(data.dims.begin(), data.dims.begin() + axis));
    const int64_t inner = numel(Shape(data.dims.begin() + axis + 1, data.dims.end()));
    for (int64_t o = 0; o < outer; ++o)
      for (double iv : idx.data) {
        auto k = static_cast<int64_t>(iv);
        if (k < 0) k += n;
        if (k < 0 || k >= n) attrs_.fail("indices", fmt::format("value {} is out of range [-{}, {})", iv, n, n));
        for (int64_t j = 0; j < inner; ++j) r.data.push_back(data.data[static_cast<size_t>((o * n + k) * inner + j)]);
      }
    return emit(out, std::move(r));
  }

  bool concat(std::vector<HostTensor>& out) {
    const auto& first = c(0);
    const auto rank = static_cast<int64_t>(first.dims.size());
    const int64_t axis = normalize_axis(attrs_.i("axis", 0), rank, attrs_, "axis");
    HostTensor r;
    r.dtype = first.dtype;
    r.dims = first.dims;
    r.dims[static_cast<size_t>(axis)] = 0;
    const int64_t outer = numel(Shape(first.dims.begin(), first.dims.begin() + axis));
    std::vector<std::vector<double>> parts(static_cast<size_t>(outer));
    for (size_t i = 0; i < in_.size(); ++i) {
      const auto& t = c(i);
      if (t.dims.size() != first.dims.size()) attrs_.fail("axis", "inputs have different ranks");
      r.dims[static_cast<size_t>(axis)] += t.dims[static_cast<size_t>(axis)];
      const int64_t chunk = outer ? t.numel() / std::max<int64_t>(outer, 1) : 0;
      for (int64_t o = 0; o < outer; ++o)
        parts[static_cast<size_t>(o)].insert(parts[static_cast<size_t>(o)].end(), t.data.begin() + o * chunk,
                                             t.data.begin() + (o + 1) * chunk);
      if (t.dtype == DType::F32) r.dtype = DType::F32;
    }
    for (auto& p : parts) r.data.insert(r.data.end(), p.begin(), p.end());
    return emit(out, std::move(r));
  }

  bool slice(std::vector<HostTensor>& out) {
    const auto& data = c(0);
    const SliceSpec spec = slice_spec(g_, data.dims, in_, attrs_);
    const Shape strides = strides_of(data.dims);
    Shape view(strides.size());
    int64_t offset = 0;
    for (size_t d = 0; d < strides.size(); ++d) {
      view[d] = strides[d] * spec.step[d];
      offset += spec.start[d] * strides[d];
    }
    HostTensor r{data.dtype, spec.dims, {}};
    r.data.resize(static_cast<size_t>(numel(spec.dims)));
    for_each_view(spec.dims, view, offset,
                  [&](int64_t o, int64_t off) { r.data[static_cast<size_t>(o)] = data.data[static_cast<size_t>(off)]; });
    return emit(out, std::move(r));
  }

  bool transpose(std::vector<HostTensor>& out) {
    const auto& data = c(0);
    const auto perm = transpose_perm(data.dims, attrs_);
    const Shape strides = strides_of(data.dims);
    Shape dims(perm.size()), view(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) {
      dims[i] = data.dims[static_cast<size_t>(perm[i])];
      view[i] = strides[static_cast<size_t>(perm[i])];
    }
    HostTensor r{data.dtype, dims, std::vector<double>(data.data.size())};
    for_each_view(dims, view, 0, [&](int64_t o, int64_t off) { r.data[static_cast<size_t>(o)] = data.data[static_cast<size_t>(off)]; });
    return emit(out, std::move(r));
  }

  bool constant_of_shape(std::vector<HostTensor>& out) {
    HostTensor r;
    r.dims = c(0).to_ints();
    r.dtype = DType::F32;
    double v = 0;
    if (const auto* t = attrs_.tensor("value")) {
      const auto value = from_tensor_proto(*t, attrs_.label());
      if (value.numel() != 1) attrs_.fail("value", "must hold one element");
      r.dtype = value.dtype;
      v = value.data[0];
    }
    for (auto d : r.dims)
      if (d < 0) attrs_.fail("input", "has a negative dimension");
    r.data.assign(static_cast<size_t>(numel(r.dims)), v);
    return emit(out, std::move(r));
  }

  bool range(std::vector<HostTensor>& out) {
    const double start = c(0).data.at(0), limit = c(1).data.at(0), delta = c(2).data.at(0);
    if (delta == 0) attrs_.fail("delta", "must not be zero");
    const auto n = static_cast<int64_t>(std::max(0.0, std::ceil((limit - start) / delta)));
    HostTensor r{c(0).dtype, {n}, {}};
    for (int64_t i = 0; i < n; ++i) r.data.push_back(start + static_cast<double>(i) * delta);
    return emit(out, std::move(r));
  }

  bool expand(std::vector<HostTensor>& out) {
    const auto target = broadcast_shapes(c(0).dims, c(1).to_ints());
    if (!target) attrs_.fail("shape", "does not broadcast with the input");
    HostTensor zero{c(0).dtype, {}, {0.0}};
    return emit(out, broadcast_binary(c(0), zero, *target, [](double a, double) { return a; }));
  }

  template <typename Fn>
  bool binary(std::vector<HostTensor>& out, Fn fn, std::optional<DType> dtype = std::nullopt) {
    const auto shape = broadcast_shapes(c(0).dims, c(1).dims);
    if (!shape) attrs_.fail("inputs", fmt::format("shapes {} and {} do not broadcast", shape_str(c(0).dims), shape_str(c(1).dims)));
    HostTensor r = broadcast_binary(c(0), c(1), *shape, fn);
    if (dtype) r.dtype = *dtype;
    if (r.dtype == DType::F32)
      for (auto& v : r.data) v = static_cast<float>(v);
    return emit(out, std::move(r));
  }

  bool divide(std::vector<HostTensor>& out) {
    const bool integer = c(0).dtype == DType::I64 && c(1).dtype == DType::I64;
    return binary(out, [integer](double a, double b) {
      if (!integer) return a / b;
      return b == 0 ? 0.0 : std::trunc(a / b);
    });
  }

  bool where(std::vector<HostTensor>& out) {
    auto s = broadcast_shapes(c(0).dims, c(1).dims);
    if (s) s = broadcast_shapes(*s, c(2).dims);
    if (!s) attrs_.fail("inputs", "do not broadcast");
    const HostTensor a = broadcast_binary(c(1), c(0), *s, [](double x, double cond) { return cond != 0 ? x : NAN; });
    HostTensor r = broadcast_binary(a, c(2), *s, [](double x, double y) { return std::isnan(x) ? y : x; });
    r.dtype = c(1).dtype;
    return emit(out, std::move(r));
  }

  template <typename Fn>
  bool unary(std::vector<HostTensor>& out, Fn fn) {
    HostTensor r = c(0);
    for (auto& v : r.data) v = fn(v);
    return emit(out, std::move(r));
  }

  Graph& g_;
  const onnx::NodeProto& node_;
  const std::vector<int>& in_;
  Attrs attrs_;
};

}  // namespace

bool fold_node(Graph& graph, const onnx::NodeProto& node, const std::vector<int>& inputs, std::vector<HostTensor>& outputs) {
  return Folder(graph, node, inputs).run(outputs);
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
