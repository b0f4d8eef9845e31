// Shape rules the op rules and the engines' lowerings share: reshapes, slices, splits, axes, and the
// window arithmetic of convolution and pooling.
#include <fmt/format.h>

#include <algorithm>

#include "onnx_io/graph.h"
#include "onnx_io/shape_rules.h"

namespace nnmeter::onnx_io {

Shape conv_like_output(const Shape& in, SpatialParams& p, const Attrs& attrs, bool allow_ceil) {
  const size_t n = in.size() - 2;
  auto per_dim = [&](const char* name, int64_t fallback, size_t count) {
    auto v = attrs.ints(name, std::vector<int64_t>(count, fallback));
    if (v.size() != count) attrs.fail(name, fmt::format("has {} values, expected {}", v.size(), count));
    return v;
  };
  p.strides = per_dim("strides", 1, n);
  if (p.dilations.empty()) p.dilations = per_dim("dilations", 1, n);
  const auto pads = per_dim("pads", 0, 2 * n);
  p.pad_begin.assign(pads.begin(), pads.begin() + static_cast<long>(n));
  p.pad_end.assign(pads.begin() + static_cast<long>(n), pads.end());
  const auto auto_pad = attrs.s("auto_pad", "NOTSET");
  const bool ceil = allow_ceil && attrs.i("ceil_mode", 0) != 0;
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t s = p.strides[i], d = p.dilations[i];
    if (s <= 0 || d <= 0 || p.kernel[i] <= 0) attrs.fail("strides", "kernel, strides and dilations must be positive");
    if (p.pad_begin[i] < 0 || p.pad_end[i] < 0) attrs.fail("pads", "must not be negative");
    if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
      attrs.fail("auto_pad", "= '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
    const auto w = onnx_io::window_axis(in[i + 2], (p.kernel[i] - 1) * d + 1, s, p.pad_begin[i], p.pad_end[i], auto_pad, ceil);
    if (!w || w->out <= 0) attrs.fail("kernel_shape", fmt::format("is larger than the padded input {}", shape_str(in)));
    out[i] = w->out;
    p.pad_begin[i] = w->pad_begin;
    p.pad_end[i] = w->pad_end;
  }
  p.explicit_pad_end = p.pad_end;
  // oneDNN derives the output size with floor division; ceil_mode is expressed as extra trailing padding.
  for (size_t i = 0; i < n; ++i) {
    const int64_t ext = (p.kernel[i] - 1) * p.dilations[i] + 1;
    const int64_t needed = (out[i] - 1) * p.strides[i] + ext - in[i + 2] - p.pad_begin[i];
    p.pad_end[i] = std::max(p.pad_end[i], needed);
  }
  return out;
}

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

int64_t softmax_default_axis(const Graph& g) { return g.opset < 13 ? 1 : -1; }

}  // namespace nnmeter::onnx_io
