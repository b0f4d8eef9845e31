// Validation and static shape inference of the nodes that run at inference time. Every attribute the
// engine does not implement is rejected here, at convert time, so an unsupported model never produces
// a wrong answer.
#include <algorithm>

#include "backends/onednn/graph_internal.h"

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
    const int64_t x = in[i + 2], s = p.strides[i], d = p.dilations[i];
    const int64_t ext = (p.kernel[i] - 1) * d + 1;
    if (s <= 0 || d <= 0 || p.kernel[i] <= 0) attrs.fail("strides", "kernel, strides and dilations must be positive");
    if (p.pad_begin[i] < 0 || p.pad_end[i] < 0) attrs.fail("pads", "must not be negative");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out[i] = (x + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (out[i] - 1) * s + ext - x);
      p.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      p.pad_end[i] = total - p.pad_begin[i];
    } else if (auto_pad == "VALID") {
      p.pad_begin[i] = p.pad_end[i] = 0;
      out[i] = (x - ext) / s + 1;
    } else if (auto_pad == "NOTSET") {
      const int64_t span = x + p.pad_begin[i] + p.pad_end[i] - ext;
      out[i] = (ceil ? (span + s - 1) / s : span / s) + 1;
      // A window must start inside the input or its leading padding (ONNX/PyTorch ceil_mode rule).
      if (ceil && (out[i] - 1) * s >= x + p.pad_begin[i]) --out[i];
    } else {
      attrs.fail("auto_pad", "= '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
    }
    if (out[i] <= 0 || x + p.pad_begin[i] + p.pad_end[i] < ext)
      attrs.fail("kernel_shape", fmt::format("is larger than the padded input {}", shape_str(in)));
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

namespace {

class ShapeInference {
 public:
  ShapeInference(const Graph& g, const Node& n) : g_(g), n_(n), attrs_(*n.proto, g.origin) {}

  std::vector<Shape> run() {
    const auto& op = n_.op;
    if (op == "Conv") return {conv()};
    if (op == "BatchNormalization") return {batchnorm()};
    if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "Exp" || op == "Abs" || op == "Sqrt" ||
        op == "Neg" || op == "HardSwish" || op == "Identity")
      return unary({});
    if (op == "LeakyRelu" || op == "Elu") return unary({"alpha"});
    if (op == "HardSigmoid") return unary({"alpha", "beta"});
    if (op == "Clip") return clip();
    if (op == "Cast") return cast();
    if (op == "Dropout") return dropout();
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Sum" || op == "Max" || op == "Min")
      return {nary()};
    if (op == "MaxPool" || op == "AveragePool") return {pool()};
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return {global_pool()};
    if (op == "ReduceMean") return {reduce_mean()};
    if (op == "Gemm") return {gemm()};
    if (op == "MatMul") return {matmul()};
    if (op == "Flatten") return only({"axis"}, flatten_shape(in(0), attrs_));
    if (op == "Reshape")
      return only({"allowzero"}, reshape_shape(in(0), g_.constant(n_.inputs.at(1)).to_ints(), attrs_.i("allowzero", 0) != 0, attrs_));
    if (op == "Squeeze")
      return only({"axes"}, squeeze_shape(in(0), axes_of(g_, n_.inputs, 1, attrs_).value_or(std::vector<int64_t>{}), attrs_));
    if (op == "Unsqueeze") return {unsqueeze()};
    if (op == "Transpose") return {transpose()};
    if (op == "Concat") return {concat()};
    if (op == "Split") return split();
    if (op == "Slice") return {slice()};
    if (op == "Pad") return {pad()};
    if (op == "Softmax") return {softmax()};
    if (op == "Gather") return {gather()};
    attrs_.fail("op", "has no shape rule");
  }

 private:
  const Shape& in(size_t i) const {
    if (i >= n_.inputs.size() || n_.inputs[i] < 0) attrs_.fail(fmt::format("input {}", i), "is missing");
    return g_.value(n_.inputs[i]).shape;
  }
  bool has_input(size_t i) const { return i < n_.inputs.size() && n_.inputs[i] >= 0; }

  std::vector<Shape> only(std::initializer_list<const char*> known, Shape s) {
    attrs_.only(known);
    return {std::move(s)};
  }

  void require_rank(const Shape& s, size_t lo, size_t hi, const char* what) const {
    if (s.size() < lo || s.size() > hi)
      attrs_.fail(what, fmt::format("has rank {} ({}); onednn_cpu supports ranks {} to {}", s.size(), shape_str(s), lo, hi));
  }

  std::vector<Shape> unary(std::initializer_list<const char*> known) { return only(known, in(0)); }

  std::vector<Shape> clip() {
    attrs_.only({"min", "max"});
    return {in(0)};
  }

  std::vector<Shape> cast() {
    attrs_.only({"to"});
    const auto to = attrs_.i("to", 0);
    if (to != onnx::TensorProto::FLOAT) attrs_.fail("to", "casts a runtime tensor to a type other than float32");
    return {in(0)};
  }

  std::vector<Shape> dropout() {
    attrs_.only({"ratio", "seed", "is_test"});
    if (has_input(2)) {
      const auto& t = g_.constant(n_.inputs[2]);
      if (t.numel() != 1 || t.data[0] != 0) attrs_.fail("training_mode", "is true; onednn_cpu runs inference only");
    }
    if (attrs_.has("is_test") && attrs_.i("is_test", 1) == 0) attrs_.fail("is_test", "is 0 (training); inference only");
    return {in(0)};
  }

  Shape conv() {
    attrs_.only({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
    const Shape& x = in(0);
    const Shape& w = in(1);
    require_rank(x, 3, 5, "input 0");
    if (w.size() != x.size()) attrs_.fail("W", fmt::format("rank {} does not match the input rank {}", w.size(), x.size()));
    const int64_t group = attrs_.i("group", 1);
    if (group <= 0 || w[0] % group || x[1] != w[1] * group)
      attrs_.fail("group", fmt::format("= {} does not fit input {} and weights {}", group, shape_str(x), shape_str(w)));
    if (has_input(2) && in(2) != Shape{w[0]}) attrs_.fail("B", "must have one value per output channel");
    SpatialParams p;
    p.kernel.assign(w.begin() + 2, w.end());
    const auto ks = attrs_.ints("kernel_shape");
    if (!ks.empty() && Shape(ks.begin(), ks.end()) != p.kernel) attrs_.fail("kernel_shape", "does not match the weights");
    Shape out{x[0], w[0]};
    const Shape sp = conv_like_output(x, p, attrs_, false);
    out.insert(out.end(), sp.begin(), sp.end());
    return out;
  }

  Shape batchnorm() {
    attrs_.only({"epsilon", "momentum", "training_mode", "spatial", "is_test", "consumed_inputs"});
    if (attrs_.i("training_mode", 0) != 0) attrs_.fail("training_mode", "= 1; onednn_cpu runs inference only");
    if (attrs_.i("spatial", 1) != 1) attrs_.fail("spatial", "= 0 is not supported");
    const Shape& x = in(0);
    require_rank(x, 2, 5, "input 0");
    for (size_t i = 1; i <= 4; ++i)
      if (numel(in(i)) != x[1]) attrs_.fail(fmt::format("input {}", i), "must have one value per channel");
    return x;
  }

  Shape nary() {
    attrs_.only({});
    if (n_.inputs.empty()) attrs_.fail("inputs", "are missing");
    Shape out = in(0);
    for (size_t i = 1; i < n_.inputs.size(); ++i) {
      const auto s = broadcast_shapes(out, in(i));
      if (!s) attrs_.fail("inputs", fmt::format("shapes {} and {} do not broadcast", shape_str(out), shape_str(in(i))));
      out = *s;
    }
    require_rank(out, 0, 12, "output");
    return out;
  }

  Shape pool() {
    const bool max = n_.op == "MaxPool";
    if (max) attrs_.only({"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
    else attrs_.only({"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"});
    if (attrs_.i("storage_order", 0) != 0) attrs_.fail("storage_order", "= 1 is not supported");
    const Shape& x = in(0);
    require_rank(x, 3, 5, "input 0");
    SpatialParams p;
    const auto ks = attrs_.ints("kernel_shape");
    if (ks.size() != x.size() - 2) attrs_.fail("kernel_shape", "must list one size per spatial dimension");
    p.kernel.assign(ks.begin(), ks.end());
    Shape out{x[0], x[1]};
    const Shape sp = conv_like_output(x, p, attrs_, true);
    out.insert(out.end(), sp.begin(), sp.end());
    return out;
  }

  Shape global_pool() {
    attrs_.only({});
    Shape x = in(0);
    require_rank(x, 3, 5, "input 0");
    std::fill(x.begin() + 2, x.end(), 1);
    return x;
  }

  Shape reduce_mean() {
    attrs_.only({"axes", "keepdims", "noop_with_empty_axes"});
    const Shape& x = in(0);
    require_rank(x, 1, 12, "input 0");
    auto axes = axes_of(g_, n_.inputs, 1, attrs_).value_or(std::vector<int64_t>{});
    if (axes.empty() && attrs_.i("noop_with_empty_axes", 0)) attrs_.fail("noop_with_empty_axes", "= 1 is not supported");
    if (axes.empty())
      for (size_t i = 0; i < x.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    Shape out;
    for (size_t i = 0; i < x.size(); ++i) {
      bool reduced = false;
      for (auto a : axes) reduced |= normalize_axis(a, static_cast<int64_t>(x.size()), attrs_, "axes") == static_cast<int64_t>(i);
      if (!reduced) out.push_back(x[i]);
      else if (attrs_.i("keepdims", 1)) out.push_back(1);
    }
    return out;
  }

  Shape gemm() {
    attrs_.only({"alpha", "beta", "transA", "transB", "broadcast"});
    const Shape& a = in(0);
    const Shape& b = in(1);
    if (a.size() != 2 || b.size() != 2) attrs_.fail("inputs", "A and B must be matrices");
    const bool ta = attrs_.i("transA", 0), tb = attrs_.i("transB", 0);
    const int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
    const int64_t kb = tb ? b[1] : b[0], nn = tb ? b[0] : b[1];
    if (k != kb) attrs_.fail("inputs", fmt::format("A {} and B {} have different inner dimensions", shape_str(a), shape_str(b)));
    if (has_input(2)) {
      const auto s = broadcast_shapes({m, nn}, in(2));
      if (!s || *s != Shape{m, nn}) attrs_.fail("C", fmt::format("{} does not broadcast to [{},{}]", shape_str(in(2)), m, nn));
    }
    return {m, nn};
  }

  Shape matmul() {
    attrs_.only({});
    Shape a = in(0), b = in(1);
    if (a.empty() || b.empty()) attrs_.fail("inputs", "must not be scalars");
    const bool va = a.size() == 1, vb = b.size() == 1;
    if (va) a.insert(a.begin(), 1);
    if (vb) b.push_back(1);
    if (a.back() != b[b.size() - 2]) attrs_.fail("inputs", fmt::format("{} and {} have different inner dimensions", shape_str(in(0)), shape_str(in(1))));
    const auto batch = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
    if (!batch) attrs_.fail("inputs", "batch dimensions do not broadcast");
    Shape out = *batch;
    if (!va) out.push_back(a[a.size() - 2]);
    if (!vb) out.push_back(b.back());
    require_rank(out, 0, 12, "output");
    return out;
  }

  Shape unsqueeze() {
    attrs_.only({"axes"});
    const auto axes = axes_of(g_, n_.inputs, 1, attrs_);
    if (!axes) attrs_.fail("axes", "is required");
    return unsqueeze_shape(in(0), *axes, attrs_);
  }

  Shape transpose() {
    attrs_.only({"perm"});
    const auto perm = transpose_perm(in(0), attrs_);
    Shape out;
    for (auto p : perm) out.push_back(in(0)[static_cast<size_t>(p)]);
    return out;
  }

  Shape concat() {
    attrs_.only({"axis"});
    Shape out = in(0);
    const int64_t axis = normalize_axis(attrs_.i("axis", 1), static_cast<int64_t>(out.size()), attrs_, "axis");
    out[static_cast<size_t>(axis)] = 0;
    for (size_t i = 0; i < n_.inputs.size(); ++i) {
      const Shape& s = in(i);
      if (s.size() != out.size()) attrs_.fail("axis", "inputs have different ranks");
      for (size_t d = 0; d < s.size(); ++d)
        if (static_cast<int64_t>(d) != axis && s[d] != out[d])
          attrs_.fail("axis", fmt::format("inputs {} and {} differ outside the concat axis", shape_str(in(0)), shape_str(s)));
      out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
    }
    return out;
  }

  std::vector<Shape> split() {
    attrs_.only({"axis", "split"});
    const Shape& x = in(0);
    const int64_t axis = normalize_axis(attrs_.i("axis", 0), static_cast<int64_t>(x.size()), attrs_, "axis");
    const auto sizes = split_sizes(g_, n_.inputs, x[static_cast<size_t>(axis)], n_.proto->output_size(), attrs_);
    std::vector<Shape> out;
    for (auto s : sizes) {
      Shape o = x;
      o[static_cast<size_t>(axis)] = s;
      out.push_back(o);
    }
    return out;
  }

  Shape slice() {
    attrs_.only({"starts", "ends", "axes"});
    return slice_spec(g_, in(0), n_.inputs, attrs_).dims;
  }

  Shape pad() {
    attrs_.only({"mode", "pads", "value"});
    if (attrs_.s("mode", "constant") != "constant") attrs_.fail("mode", "= '" + attrs_.s("mode", "") + "' is not supported (constant only)");
    const Shape& x = in(0);
    std::vector<int64_t> pads = attrs_.ints("pads");
    if (pads.empty() && has_input(1)) pads = g_.constant(n_.inputs[1]).to_ints();
    if (has_input(3)) attrs_.fail("axes", "input is not supported");
    if (pads.size() != 2 * x.size()) attrs_.fail("pads", fmt::format("must list 2 x rank = {} values", 2 * x.size()));
    Shape out = x;
    for (size_t i = 0; i < x.size(); ++i) {
      if (pads[i] < 0 || pads[i + x.size()] < 0) attrs_.fail("pads", "< 0 (cropping) is not supported");
      out[i] += pads[i] + pads[i + x.size()];
    }
    return out;
  }

  Shape softmax() {
    attrs_.only({"axis"});
    const Shape& x = in(0);
    require_rank(x, 1, 12, "input 0");
    normalize_axis(attrs_.i("axis", g_.opset < 13 ? 1 : -1), static_cast<int64_t>(x.size()), attrs_, "axis");
    return x;
  }

  Shape gather() {
    attrs_.only({"axis"});
    const Shape& x = in(0);
    const auto& idx = g_.constant(n_.inputs.at(1));
    if (idx.dims.size() > 1) attrs_.fail("indices", "of rank > 1 are not supported at inference time");
    const int64_t axis = normalize_axis(attrs_.i("axis", 0), static_cast<int64_t>(x.size()), attrs_, "axis");
    for (double v : idx.data)
      if (v < -static_cast<double>(x[static_cast<size_t>(axis)]) || v >= static_cast<double>(x[static_cast<size_t>(axis)]))
        attrs_.fail("indices", fmt::format("value {} is out of range", v));
    Shape out(x.begin(), x.begin() + axis);
    out.insert(out.end(), idx.dims.begin(), idx.dims.end());
    out.insert(out.end(), x.begin() + axis + 1, x.end());
    return out;
  }

  const Graph& g_;
  const Node& n_;
  Attrs attrs_;
};

}  // namespace

std::vector<Shape> infer_runtime_shapes(const Graph& graph, const Node& node) { return ShapeInference(graph, node).run(); }

}  // namespace nnmeter::onednn
