// Static shapes for the ops CNN exporters write, without ONNX's shape inference: that builds a TypeProto
// and an inference context per node and was a large part of a prediction (docs/cli-predict.md). Anything this
// file does not know for certain (an op outside the list, auto_pad, a shape that does not check out, a reshape
// target it cannot evaluate) makes it give up, and the caller runs ONNX's inference instead, so results and errors
// stay ONNX's. tests/prediction/shape_inference_test.cpp holds the two equal over the model zoo.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <span>
#include <unordered_set>

#include "onnx_io/fold.h"
#include "onnx_io/shape_rules.h"
#include "prediction/internal.h"

namespace nnmeter::prediction {

namespace {

struct Unsupported {};
// A node ONNX's own inference must never see: it would read out of bounds rather than fail.
struct Malformed {
  std::string why;
};

void require(bool ok) {
  if (!ok) throw Unsupported{};
}

// The i-th input; a node with fewer makes inference give up (ONNX's schema check then reports it).
const std::string& input(const onnx::NodeProto& n, int i) {
  require(i < n.input_size());
  return n.input(i);
}

int64_t int_attr(const onnx::NodeProto& n, std::string_view name, int64_t fallback) {
  const auto* a = onnx_io::find_attribute(n, name);
  return a ? a->i() : fallback;
}

// A view of the node's own values: every conv and pool reads four of these.
std::optional<std::span<const int64_t>> ints_attr(const onnx::NodeProto& n, std::string_view name) {
  const auto* a = onnx_io::find_attribute(n, name);
  if (!a) return std::nullopt;
  return std::span<const int64_t>(a->ints().data(), static_cast<size_t>(a->ints_size()));
}

// A negative axis counts from the end.
size_t axis_index(int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  require(axis >= -r && axis < r);
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

Shape broadcast(const Shape& a, const Shape& b) {
  auto out = onnx_io::broadcast_shapes(a, b);
  require(out.has_value());
  return *out;
}

// Same-shape ops (activations, normalisation, casts): output 0 has the shape of input 0.
bool is_unary(const std::string& op) {
  static const std::unordered_set<std::string> ops = {
      "Relu",  "Clip",    "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",     "LeakyRelu", "Elu",   "Selu",
      "Softmax", "LogSoftmax", "Identity", "BatchNormalization", "Dropout", "Softplus", "Exp", "Log", "Sqrt",
      "Neg",   "Abs",     "Erf",     "Reciprocal", "Cast", "Gelu", "Mish"};
  return ops.count(op) > 0;
}

bool is_binary(const std::string& op) { return op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow"; }

class Inference {
 public:
  Inference(const onnx::GraphProto& g, std::pmr::memory_resource* scratch) : shapes_(scratch), values_(scratch) {
    shapes_.reserve(static_cast<size_t>(g.input_size() + g.initializer_size() + 2 * g.node_size()));
    for (const auto& vi : g.input())
      if (auto s = static_shape(vi.type())) shapes_[vi.name()] = std::move(*s);
    for (const auto& t : g.initializer()) {
      shapes_[t.name()] = Shape(t.dims().begin(), t.dims().end());
      remember_values(t.name(), t);
    }
  }

  ShapeMap run(const onnx::GraphProto& g, const std::vector<int>& order) {
    for (int i : order) infer(g.node(i));
    return std::move(shapes_);
  }

 private:
  const Shape& shape(const std::string& tensor) const {
    auto it = shapes_.find(tensor);
    require(it != shapes_.end());
    return it->second;
  }

  const std::vector<int64_t>& values(const std::string& tensor) const {
    auto it = values_.find(tensor);
    require(it != values_.end());
    return it->second;
  }

  void remember_values(std::string_view name, const onnx::TensorProto& t) {
    if (t.data_type() != onnx::TensorProto::INT64 && t.data_type() != onnx::TensorProto::INT32) return;
    if (auto v = tensor_values(t)) values_[name] = std::vector<int64_t>(v->begin(), v->end());
  }

  // Shapes beyond the model limits are left to ONNX's inference, whose result the converter then refuses:
  // bounding them here keeps every product below in range.
  void set(const onnx::NodeProto& n, Shape s, int output = 0) {
    require(output < n.output_size() && bounded_elements(s).has_value());
    if (!n.output(output).empty()) shapes_[n.output(output)] = std::move(s);
  }

  void infer(const onnx::NodeProto& n) {
    require((n.domain().empty() || n.domain() == "ai.onnx") && n.output_size() >= 1);
    const std::string& op = n.op_type();
    for (const auto& in : n.input())
      if (!in.empty() && op != "Constant") shape(in);  // every input known, or give up
    if (is_unary(op)) return unary(n);
    if (is_binary(op)) return binary(n);
    if (op == "Conv") return conv(n);
    if (op == "MaxPool" || op == "AveragePool") return pool(n);
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return global_pool(n);
    if (op == "Gemm") return gemm(n);
    if (op == "Flatten") return flatten(n);
    if (op == "Concat") return concat(n);
    if (op == "Split") return split(n);
    if (op == "Reshape") return reshape(n);
    if (op == "Transpose") return transpose(n);
    if (op == "ReduceMean") return reduce_mean(n);
    if (op == "Shape") return shape_op(n);
    if (op == "Gather") return gather(n);
    if (op == "Unsqueeze") return unsqueeze(n);
    if (op == "Constant") return constant(n);
    if (op == "Slice") return slice(n);
    if (op == "Pad") return pad(n);
    throw Unsupported{};
  }

  // Shape arithmetic (ShuffleNetV2's chunk: Shape → Gather → Add → Div → Mul → Slice) keeps the values of
  // small integer tensors where both operands are known and non-negative (integer Div then floors and
  // truncates alike) and nothing overflows.
  void binary(const onnx::NodeProto& n) {
    const Shape& sa = shape(input(n, 0));
    const Shape& sb = shape(input(n, 1));
    set(n, broadcast(sa, sb));
    const auto va = values_.find(input(n, 0)), vb = values_.find(input(n, 1));
    const std::string& op = n.op_type();
    if (va == values_.end() || vb == values_.end() || op == "Pow" || sa.size() > 1 || sb.size() > 1) return;
    const std::vector<int64_t>&x = va->second, &y = vb->second;
    if (x.empty() || y.empty() || (x.size() != y.size() && x.size() != 1 && y.size() != 1)) return;
    std::vector<int64_t> r(std::max(x.size(), y.size()));
    for (size_t i = 0; i < r.size(); ++i) {
      const int64_t p = x[x.size() == 1 ? 0 : i], q = y[y.size() == 1 ? 0 : i];
      if (p < 0 || q < 0) return;
      bool overflow = false;
      if (op == "Add") overflow = __builtin_add_overflow(p, q, &r[i]);
      else if (op == "Sub") overflow = __builtin_sub_overflow(p, q, &r[i]);
      else if (op == "Mul") overflow = __builtin_mul_overflow(p, q, &r[i]);
      else if (q == 0) return;
      else r[i] = p / q;
      if (overflow) return;
    }
    values_[n.output(0)] = std::move(r);
  }

  void slice(const onnx::NodeProto& n) {
    require(n.input_size() >= 3);  // opset 10 on: the arguments are inputs
    const Shape& in = shape(input(n, 0));
    auto optional = [&](int i) { return n.input_size() > i && !input(n, i).empty() ? values(input(n, i)) : std::vector<int64_t>{}; };
    const auto axes = onnx_io::slice_axes(in, values(input(n, 1)), values(input(n, 2)), optional(3), optional(4));
    require(axes.has_value());
    if (auto it = values_.find(input(n, 0)); it != values_.end() && in.size() == 1) {
      std::vector<int64_t> picked;
      for (int64_t k = 0; k < axes->out[0]; ++k) picked.push_back(it->second[static_cast<size_t>(axes->begin[0] + k * axes->step[0])]);
      values_[n.output(0)] = std::move(picked);
    }
    set(n, axes->out);
  }

  // Constant, reflect or edge padding: the shape grows by the pads (DenseNet's AvgPool sits behind a Pad).
  void pad(const onnx::NodeProto& n) {
    const Shape& in = shape(input(n, 0));
    std::vector<int64_t> pads;
    if (auto attr = ints_attr(n, "pads")) pads.assign(attr->begin(), attr->end());  // before opset 11
    else pads = values(input(n, 1));
    require(n.input_size() < 4 || input(n, 3).empty());  // opset 18's axes: left to ONNX
    require(pads.size() == 2 * in.size());
    Shape out = in;
    for (size_t i = 0; i < in.size(); ++i)
      require(!__builtin_add_overflow(out[i], pads[i], &out[i]) &&
              !__builtin_add_overflow(out[i], pads[i + in.size()], &out[i]) && out[i] >= 0);
    set(n, std::move(out));
  }

  void unary(const onnx::NodeProto& n) {
    const Shape& in = shape(input(n, 0));
    if (n.op_type() == "Cast")
      if (auto it = values_.find(input(n, 0)); it != values_.end()) values_[n.output(0)] = it->second;
    // Dropout's mask has the input's shape; BatchNormalization's training outputs are not inferred here.
    require(n.output_size() == 1 || n.op_type() == "Dropout");
    for (int i = 0; i < n.output_size(); ++i) set(n, in, i);
  }

  // Conv and pooling share ONNX's convPoolShapeInference; `kernel` is the window, `channels` the output's.
  void window(const onnx::NodeProto& n, const Shape& in, std::span<const int64_t> kernel, int64_t channels, bool ceil_mode) {
    require(in.size() >= 3 && kernel.size() == in.size() - 2);
    const auto* auto_pad = onnx_io::find_attribute(n, "auto_pad");
    const std::string pad_mode = auto_pad ? auto_pad->s() : "NOTSET";
    const size_t k = kernel.size();
    const auto strides = ints_attr(n, "strides"), dilations = ints_attr(n, "dilations"), pads = ints_attr(n, "pads");
    require((!strides || strides->size() == k) && (!dilations || dilations->size() == k) && (!pads || pads->size() == 2 * k));
    // Absent attributes: stride and dilation 1, no padding.
    auto value = [](const auto& list, size_t i, int64_t absent) { return list ? (*list)[i] : absent; };
    Shape out = {in[0], channels};
    for (size_t i = 0; i < k; ++i) {
      const int64_t stride = value(strides, i, 1), dilation = value(dilations, i, 1);
      require(dilation > 0 && kernel[i] > 0);
      const auto w = onnx_io::window_axis(in[i + 2], (kernel[i] - 1) * dilation + 1, stride, value(pads, i, 0),
                                          value(pads, i + k, 0), pad_mode, ceil_mode);
      require(w.has_value());
      out.push_back(w->out);
    }
    set(n, std::move(out));
  }

  void conv(const onnx::NodeProto& n) {
    require(n.input_size() >= 2 && n.output_size() == 1);
    const Shape& in = shape(input(n, 0));
    const Shape& w = shape(input(n, 1));
    const int64_t group = int_attr(n, "group", 1);
    if (w.size() != in.size())
      throw Malformed{fmt::format("node '{}' (Conv) has a weight of rank {} for an input of rank {}",
                                  n.name().empty() ? n.output(0) : n.name(), w.size(), in.size())};
    require(in.size() >= 3 && group > 0 && in[1] % group == 0 && in[1] / group == w[1] &&
            w[0] % group == 0);
    const std::span<const int64_t> weight_window(w.begin() + 2, w.end());
    const auto kernel = ints_attr(n, "kernel_shape").value_or(weight_window);
    require(std::ranges::equal(kernel, weight_window));
    window(n, in, kernel, w[0], false);
  }

  void pool(const onnx::NodeProto& n) {
    require(n.output_size() == 1);
    const Shape& in = shape(input(n, 0));
    const auto kernel = ints_attr(n, "kernel_shape");
    require(kernel.has_value());
    window(n, in, *kernel, in.size() > 1 ? in[1] : 0, int_attr(n, "ceil_mode", 0) != 0);
  }

  void global_pool(const onnx::NodeProto& n) {
    Shape out = shape(input(n, 0));
    require(out.size() >= 2);
    std::fill(out.begin() + 2, out.end(), 1);
    set(n, std::move(out));
  }

  void gemm(const onnx::NodeProto& n) {
    const Shape& a = shape(input(n, 0));
    const Shape& b = shape(input(n, 1));
    require(a.size() == 2 && b.size() == 2);
    const bool ta = int_attr(n, "transA", 0) != 0, tb = int_attr(n, "transB", 0) != 0;
    require(a[ta ? 0 : 1] == b[tb ? 1 : 0]);
    set(n, {a[ta ? 1 : 0], b[tb ? 0 : 1]});
  }

  void flatten(const onnx::NodeProto& n) {
    const Shape& in = shape(input(n, 0));
    int64_t axis = int_attr(n, "axis", 1);
    const int64_t rank = static_cast<int64_t>(in.size());
    require(axis >= -rank && axis <= rank);
    if (axis < 0) axis += rank;
    const auto mid = in.begin() + axis;
    set(n, {std::accumulate(in.begin(), mid, int64_t{1}, std::multiplies<>()),
            std::accumulate(mid, in.end(), int64_t{1}, std::multiplies<>())});
  }

  void concat(const onnx::NodeProto& n) {
    require(n.input_size() > 0);
    Shape out = shape(input(n, 0));
    const size_t axis = axis_index(int_attr(n, "axis", 0), out.size());
    bool all_values = true;
    std::vector<int64_t> joined;
    for (int i = 0; i < n.input_size(); ++i) {
      const Shape& s = shape(input(n, i));
      require(s.size() == out.size());
      for (size_t d = 0; d < s.size(); ++d) require(d == axis || s[d] == out[d]);
      if (i > 0) out[axis] += s[axis];
      auto it = values_.find(input(n, i));
      all_values = all_values && it != values_.end();
      if (all_values) joined.insert(joined.end(), it->second.begin(), it->second.end());
    }
    if (all_values && out.size() == 1) values_[n.output(0)] = std::move(joined);
    set(n, std::move(out));
  }

  void split(const onnx::NodeProto& n) {
    const Shape& in = shape(input(n, 0));
    const size_t axis = axis_index(int_attr(n, "axis", 0), in.size());
    require(!onnx_io::find_attribute(n, "num_outputs"));
    std::vector<int64_t> sizes;
    if (auto attr = ints_attr(n, "split")) sizes.assign(attr->begin(), attr->end());
    else if (n.input_size() > 1 && !input(n, 1).empty()) sizes = values(input(n, 1));
    else {
      const int64_t parts = n.output_size();
      require(parts > 0 && in[axis] % parts == 0);
      sizes.assign(static_cast<size_t>(parts), in[axis] / parts);
    }
    require(sizes.size() == static_cast<size_t>(n.output_size()));
    require(std::all_of(sizes.begin(), sizes.end(), [&](int64_t size) { return size >= 0 && size <= in[axis]; }));
    require(std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) == in[axis]);
    for (int i = 0; i < n.output_size(); ++i) {
      Shape s = in;
      s[axis] = sizes[static_cast<size_t>(i)];
      set(n, std::move(s), i);
    }
  }

  void reshape(const onnx::NodeProto& n) {
    auto out = onnx_io::reshape_shape(shape(input(n, 0)), values(input(n, 1)), int_attr(n, "allowzero", 0) != 0,
                                      kMaxTensorElements);
    require(out.has_value());
    set(n, std::move(*out));
  }

  void transpose(const onnx::NodeProto& n) {
    const Shape& in = shape(input(n, 0));
    std::vector<int64_t> perm(in.size());
    std::iota(perm.rbegin(), perm.rend(), 0);
    if (auto attr = ints_attr(n, "perm")) perm.assign(attr->begin(), attr->end());
    require(perm.size() == in.size());
    Shape out;
    for (int64_t p : perm) out.push_back(in[axis_index(p, in.size())]);
    set(n, std::move(out));
  }

  void reduce_mean(const onnx::NodeProto& n) {
    const Shape& in = shape(input(n, 0));
    require(int_attr(n, "noop_with_empty_axes", 0) == 0);
    std::vector<int64_t> axes;
    if (auto attr = ints_attr(n, "axes")) axes.assign(attr->begin(), attr->end());
    else if (n.input_size() > 1 && !input(n, 1).empty()) axes = values(input(n, 1));
    std::vector<bool> reduced(in.size(), axes.empty());
    for (int64_t a : axes) reduced[axis_index(a, in.size())] = true;
    const bool keep = int_attr(n, "keepdims", 1) != 0;
    Shape out;
    for (size_t i = 0; i < in.size(); ++i) {
      if (!reduced[i]) out.push_back(in[i]);
      else if (keep) out.push_back(1);
    }
    set(n, std::move(out));
  }

  void shape_op(const onnx::NodeProto& n) {
    require(!onnx_io::find_attribute(n, "start") && !onnx_io::find_attribute(n, "end"));
    const Shape& in = shape(input(n, 0));
    values_[n.output(0)] = in;
    set(n, {static_cast<int64_t>(in.size())});
  }

  void gather(const onnx::NodeProto& n) {
    const Shape& data = shape(input(n, 0));
    const Shape& indices = shape(input(n, 1));
    const size_t axis = axis_index(int_attr(n, "axis", 0), data.size());
    Shape out(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(axis));
    out.insert(out.end(), indices.begin(), indices.end());
    out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.end());
    auto dv = values_.find(input(n, 0));
    auto iv = values_.find(input(n, 1));
    if (data.size() == 1 && dv != values_.end() && iv != values_.end()) {
      std::vector<int64_t> picked;
      for (int64_t i : iv->second) picked.push_back(dv->second[axis_index(i, dv->second.size())]);
      values_[n.output(0)] = std::move(picked);
    }
    set(n, std::move(out));
  }

  void unsqueeze(const onnx::NodeProto& n) {
    const Shape& in = shape(input(n, 0));
    std::vector<int64_t> axes;
    if (auto attr = ints_attr(n, "axes")) axes.assign(attr->begin(), attr->end());
    else axes = values(input(n, 1));
    const size_t rank = in.size() + axes.size();
    std::vector<bool> inserted(rank, false);
    for (int64_t a : axes) {
      const size_t i = axis_index(a, rank);
      require(!inserted[i]);
      inserted[i] = true;
    }
    Shape out;
    for (size_t i = 0, j = 0; i < rank; ++i) out.push_back(inserted[i] ? 1 : in[j++]);
    if (auto it = values_.find(input(n, 0)); it != values_.end()) values_[n.output(0)] = it->second;
    set(n, std::move(out));
  }

  void constant(const onnx::NodeProto& n) {
    require(n.attribute_size() == 1 && n.output_size() == 1);
    const auto& a = n.attribute(0);
    if (a.name() == "value") {
      set(n, Shape(a.t().dims().begin(), a.t().dims().end()));
      remember_values(n.output(0), a.t());
    } else if (a.name() == "value_int" || a.name() == "value_float") {
      set(n, {});
      if (a.name() == "value_int") values_[n.output(0)] = {a.i()};
    } else if (a.name() == "value_ints") {
      set(n, {a.ints_size()});
      values_[n.output(0)] = std::vector<int64_t>(a.ints().begin(), a.ints().end());
    } else if (a.name() == "value_floats") {
      set(n, {a.floats_size()});
    } else {
      throw Unsupported{};
    }
  }

  ShapeMap shapes_;
  std::pmr::unordered_map<std::string_view, std::vector<int64_t>> values_;  // small integer tensors (shape arithmetic)
};

}  // namespace

std::optional<ShapeMap> infer_shapes_directly(const onnx::GraphProto& g, const std::vector<int>& order,
                                              std::pmr::memory_resource* scratch, const std::string& origin) {
  try {
    return Inference(g, scratch).run(g, order);
  } catch (const Unsupported&) {
    return std::nullopt;
  } catch (const Malformed& m) {
    throw Error(m.why + " in " + origin);
  }
}

}  // namespace nnmeter::prediction
