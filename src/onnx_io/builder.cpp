#include "onnx_io/builder.h"

#include "onnx_io/shape_rules.h"

#include <onnx/common/constants.h>

#include <cmath>
#include <algorithm>
#include <cstring>

namespace nnmeter::onnx_io {

Attr attr_int(std::string name, int64_t v) {
  Attr a;
  a.set_name(std::move(name));
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

Attr attr_float(std::string name, float v) {
  Attr a;
  a.set_name(std::move(name));
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

Attr attr_ints(std::string name, std::vector<int64_t> v) {
  Attr a;
  a.set_name(std::move(name));
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

Attr attr_string(std::string name, std::string v) {
  Attr a;
  a.set_name(std::move(name));
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(std::move(v));
  return a;
}

namespace {

void set_shape(onnx::ValueInfoProto* vi, const Shape& shape) {
  auto* tensor = vi->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  auto* dims = tensor->mutable_shape();
  for (int64_t d : shape) dims->add_dim()->set_dim_value(d);
}

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

namespace {

// Weight values do not change a kernel's latency, but drawing 10^8 of them one by one would make model
// generation compute-bound. Large tensors therefore copy 4 Ki-value runs from a fixed table of uniform
// draws, each run starting at a seeded random offset; small tensors are drawn value by value.
constexpr size_t kTableSize = size_t{1} << 16;
constexpr size_t kRun = 4096;

const std::vector<float>& uniform_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(kTableSize + kRun);
    SplitMix64 rng(0x6E6E4D6574657221ULL);
    for (float& v : t) v = rng.uniform(0.0f, 1.0f);
    return t;
  }();
  return table;
}

void fill_uniform(float* out, size_t n, float lo, float hi, SplitMix64& rng) {
  const float span = hi - lo;
  if (n < 4 * kRun) {
    for (size_t i = 0; i < n; ++i) out[i] = rng.uniform(lo, hi);
    return;
  }
  const float* table = uniform_table().data();
  for (size_t i = 0; i < n; i += kRun) {
    const float* src = table + rng.next() % kTableSize;
    const size_t len = std::min(kRun, n - i);
    for (size_t j = 0; j < len; ++j) out[i + j] = lo + span * src[j];
  }
}

}  // namespace

GraphBuilder::GraphBuilder(std::string graph_name, uint64_t weight_seed, int64_t opset_version) : rng_(weight_seed) {
  model_.set_ir_version(onnx::IR_VERSION);
  model_.set_producer_name("nn-meter");
  auto* opset = model_.add_opset_import();
  opset->set_domain("");
  opset->set_version(opset_version);
  graph_ = model_.mutable_graph();
  graph_->set_name(std::move(graph_name));
}

std::string GraphBuilder::fresh(const std::string& hint) { return hint + "_" + std::to_string(counter_++); }

std::string GraphBuilder::input(const Shape& shape) {
  // nn-Meter's torch export names a single input "input"; further inputs get a suffix.
  return input(inputs_ == 0 ? "input" : "input_" + std::to_string(inputs_), shape);
}

std::string GraphBuilder::input(const std::string& name, const Shape& shape) {
  ++inputs_;
  auto* vi = graph_->add_input();
  set_shape(vi, shape);
  vi->set_name(name);
  return name;
}

std::string GraphBuilder::random_weight(const std::string& hint, const Shape& shape, float lo, float hi) {
  std::string name = fresh(hint);
  auto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape) t->add_dims(d);
  if (!weights_) return name;
  // Filling raw_data in place avoids a second copy of multi-hundred-megabyte weights.
  const int64_t n = numel(shape);
  std::string* raw = t->mutable_raw_data();
  raw->resize(static_cast<size_t>(n) * sizeof(float));
  fill_uniform(reinterpret_cast<float*>(raw->data()), static_cast<size_t>(n), lo, hi, rng_);
  return name;
}

std::string GraphBuilder::he_weight(const std::string& hint, const Shape& shape, int64_t fan_in) {
  const float a = std::sqrt(6.0f / static_cast<float>(fan_in > 0 ? fan_in : 1));
  return random_weight(hint, shape, -a, a);
}

std::string GraphBuilder::float_const(const std::string& hint, const Shape& shape, const std::vector<float>& values) {
  std::string name = fresh(hint);
  auto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
  return name;
}

std::string GraphBuilder::int64_const(const std::string& hint, const std::vector<int64_t>& values) {
  std::string name = fresh(hint);
  auto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
  return name;
}

std::vector<std::string> GraphBuilder::node(const std::string& op, const std::vector<std::string>& inputs,
                                            const std::vector<Attr>& attrs, int num_outputs) {
  auto* n = graph_->add_node();
  n->set_op_type(op);
  n->set_name(fresh(op));
  for (const auto& in : inputs) n->add_input(in);
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) {
    outs.push_back(fresh(op + "_out"));
    n->add_output(outs.back());
  }
  for (const auto& a : attrs) *n->add_attribute() = a;
  return outs;
}

void GraphBuilder::output(const std::string& name, const Shape& shape) {
  auto* vi = graph_->add_output();
  vi->set_name(name);
  set_shape(vi, shape);
}

onnx::ModelProto GraphBuilder::finish() { return std::move(model_); }

std::string GraphBuilder::finish_serialized() {
  std::string bytes;
  if (!model_.SerializeToString(&bytes)) throw Error("could not serialize the ONNX model '" + graph_->name() + "'");
  return bytes;
}

std::vector<int64_t> same_pads(int64_t hw, int64_t kernel, int64_t stride) {
  const auto w = window_axis(hw, kernel, stride, 0, 0, "SAME_UPPER");
  if (!w) throw Error("same_pads: hw, kernel and stride must be positive");
  return {w->pad_begin, w->pad_begin, w->pad_end, w->pad_end};
}

int64_t same_out(int64_t hw, int64_t stride) { return (hw + stride - 1) / stride; }

std::string conv2d(GraphBuilder& g, const std::string& x, const Conv2dSpec& s) {
  const int64_t cout = s.depthwise ? s.cin : s.cout;
  const int64_t groups = s.depthwise ? s.cin : s.groups;
  const int64_t per_group_in = s.cin / groups;
  std::string w = g.he_weight("conv_weight", {cout, per_group_in, s.kernel, s.kernel}, per_group_in * s.kernel * s.kernel);
  std::string b = g.random_weight("conv_bias", {cout}, -0.1f, 0.1f);
  std::vector<Attr> attrs = {attr_ints("kernel_shape", {s.kernel, s.kernel}), attr_ints("strides", {s.stride, s.stride}),
                             attr_ints("pads", same_pads(s.hw, s.kernel, s.stride)), attr_ints("dilations", {1, 1}),
                             attr_int("group", groups)};
  return g.node1("Conv", {x, w, b}, attrs);
}

std::string batch_norm(GraphBuilder& g, const std::string& x, int64_t channels) {
  std::string scale = g.random_weight("bn_scale", {channels}, 0.5f, 1.5f);
  std::string bias = g.random_weight("bn_bias", {channels}, -0.1f, 0.1f);
  std::string mean = g.random_weight("bn_mean", {channels}, -0.1f, 0.1f);
  std::string var = g.random_weight("bn_var", {channels}, 0.5f, 1.5f);
  // Keras' BatchNormalization epsilon, which nn-Meter's TF kernels use.
  return g.node1("BatchNormalization", {x, scale, bias, mean, var}, {attr_float("epsilon", 1e-3f)});
}

std::string relu(GraphBuilder& g, const std::string& x) { return g.node1("Relu", {x}); }

std::string relu6(GraphBuilder& g, const std::string& x) {
  std::string lo = g.float_const("clip_min", {}, {0.0f});
  std::string hi = g.float_const("clip_max", {}, {6.0f});
  return g.node1("Clip", {x, lo, hi});
}

std::string hswish(GraphBuilder& g, const std::string& x) {
  std::string gate = g.node1("HardSigmoid", {x}, {attr_float("alpha", 1.0f / 6.0f), attr_float("beta", 0.5f)});
  return g.node1("Mul", {x, gate});
}

std::string swish(GraphBuilder& g, const std::string& x) {
  std::string gate = g.node1("Sigmoid", {x});
  return g.node1("Mul", {x, gate});
}

std::string layer_norm(GraphBuilder& g, const std::string& x, int64_t channels) {
  const auto last = attr_ints("axes", {-1});
  std::string mean = g.node1("ReduceMean", {x}, {last});
  std::string centred = g.node1("Sub", {x, mean});
  std::string squared = g.node1("Pow", {centred, g.float_const("ln_two", {}, {2.0f})});
  std::string var = g.node1("ReduceMean", {squared}, {last});
  // PyTorch's nn.LayerNorm default epsilon.
  std::string std_dev = g.node1("Sqrt", {g.node1("Add", {var, g.float_const("ln_eps", {}, {1e-5f})})});
  std::string y = g.node1("Div", {centred, std_dev});
  y = g.node1("Mul", {y, g.random_weight("ln_gamma", {channels}, 0.5f, 1.5f)});
  return g.node1("Add", {y, g.random_weight("ln_beta", {channels}, -0.1f, 0.1f)});
}

std::string gelu(GraphBuilder& g, const std::string& x) {
  std::string e = g.node1("Erf", {g.node1("Div", {x, g.float_const("gelu_sqrt2", {}, {1.4142135f})})});
  std::string y = g.node1("Mul", {x, g.node1("Add", {e, g.float_const("gelu_one", {}, {1.0f})})});
  return g.node1("Mul", {y, g.float_const("gelu_half", {}, {0.5f})});
}

std::string linear(GraphBuilder& g, const std::string& x, int64_t cin, int64_t cout) {
  std::string y = g.node1("MatMul", {x, g.he_weight("linear_weight", {cin, cout}, cin)});
  return g.node1("Add", {y, g.random_weight("linear_bias", {cout}, -0.1f, 0.1f)});
}

}  // namespace nnmeter::onnx_io
