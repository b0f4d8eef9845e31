// Validation and static shape inference of the nodes that run at inference time. Every attribute the
// engine does not implement is rejected here, at convert time, so an unsupported model never produces
// a wrong answer.
#include <algorithm>

#include "backends/onednn/ops/op.h"
#include "onnx_io/shape_rules.h"

namespace nnmeter::onednn {

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

const Shape& ShapeContext::in(size_t i) const {
  if (i >= n.inputs.size() || n.inputs[i] < 0) attrs.fail(fmt::format("input {}", i), "is missing");
  return g.value(n.inputs[i]).shape;
}

bool ShapeContext::has_input(size_t i) const { return i < n.inputs.size() && n.inputs[i] >= 0; }

void ShapeContext::require_rank(const Shape& s, size_t lo, size_t hi, const char* what) const {
  if (s.size() < lo || s.size() > hi)
    attrs.fail(what, fmt::format("has rank {} ({}); onednn_cpu supports ranks {} to {}", s.size(), shape_str(s), lo, hi));
}

std::vector<Shape> infer_runtime_shapes(const Graph& graph, const Node& node) {
  const ShapeContext cx{graph, node, Attrs(*node.proto, graph.origin)};
  const OpDef* def = find_op(node.op);
  if (!def || !def->shape) cx.attrs.fail("op", "has no shape rule");
  cx.attrs.only(def->attributes);
  return def->shape(cx);
}

}  // namespace nnmeter::onednn
