#include "kit/onnx_builder.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "common/io.h"
#include "onnx_io/shape_rules.h"

namespace nnmeter::onnxgen {

namespace {

int64_t count(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  const auto w = onnx_io::window_axis(in, (k - 1) * d + 1, s, p, p, "NOTSET", ceil);
  if (!w) throw Error(fmt::format("onnx builder: a window of {} (stride {}, pad {}) does not fit an input of {}", k, s, p, in));
  return w->out;
}

}  // namespace

int64_t Builder::scaled(int64_t channels) const {
  if (width_ == 1.0) return channels;
  const double v = static_cast<double>(channels) * width_;
  int64_t n = std::max<int64_t>(8, static_cast<int64_t>(v + 4.0) / 8 * 8);
  if (static_cast<double>(n) < 0.9 * v) n += 8;
  return n;
}

Builder::Builder(std::string name, int64_t opset, uint32_t seed) : g_(std::move(name), seed, opset) {}

const Shape& Builder::shape(const std::string& value) const {
  const auto it = shapes_.find(value);
  if (it == shapes_.end()) throw Error("onnx builder: unknown tensor '" + value + "'");
  return it->second;
}

std::string Builder::input(const std::string& name, const Shape& shape) {
  shapes_[name] = shape;
  return g_.input(name, shape);
}

void Builder::output(const std::string& value) { g_.output(value, shape(value)); }

std::string Builder::node(const std::string& op, const std::vector<std::string>& inputs, const Shape& out_shape,
                          const std::vector<onnx::AttributeProto>& attrs) {
  const std::string out = g_.node1(op, inputs, attrs);
  shapes_[out] = out_shape;
  return out;
}

std::string Builder::constant_ints(const std::vector<int64_t>& values) {
  const std::string name = g_.int64_const("const", values);
  shapes_[name] = {static_cast<int64_t>(values.size())};
  return name;
}

std::string Builder::constant_floats(const Shape& shape, const std::vector<float>& values) {
  const std::string name = g_.float_const("const", shape, values);
  shapes_[name] = shape;
  return name;
}

// Uniform with standard deviation `scale` (the weights only need a sane range, not a distribution).
std::string Builder::random_weights(const Shape& shape, float scale) {
  const float a = scale * std::sqrt(3.f);
  const std::string name = g_.random_weight("weight", shape, -a, a);
  shapes_[name] = shape;
  return name;
}

std::string Builder::conv(const std::string& x, int64_t cout, int64_t k, int64_t stride, int64_t pad, int64_t group,
                          bool bias, int64_t dilation) {
  const Shape& s = shape(x);
  if (pad < 0) pad = (k - 1) / 2 * dilation;
  const int64_t cin = s[1];
  const std::string w = random_weights({cout, cin / group, k, k}, std::sqrt(2.f / static_cast<float>(cin / group * k * k)));
  std::vector<std::string> inputs{x, w};
  if (bias) inputs.push_back(random_weights({cout}, 0.1f));
  const int64_t oh = out_dim(s[2], k, stride, pad, dilation, false), ow = out_dim(s[3], k, stride, pad, dilation, false);
  flops_ += 2.0 * static_cast<double>(s[0] * cout * oh * ow * (cin / group) * k * k);
  return node("Conv", inputs, {s[0], cout, oh, ow},
              {attr("dilations", std::vector<int64_t>{dilation, dilation}), attr("group", group),
               attr("kernel_shape", std::vector<int64_t>{k, k}), attr("pads", std::vector<int64_t>{pad, pad, pad, pad}),
               attr("strides", std::vector<int64_t>{stride, stride})});
}

std::string Builder::batchnorm(const std::string& x) {
  const int64_t c = shape(x)[1];
  auto param = [&](const char* name, float lo, float hi) {
    const std::string p = g_.random_weight(name, {c}, lo, hi);
    shapes_[p] = {c};
    return p;
  };
  const std::string gamma = param("bn_scale", 0.5f, 1.5f), beta = param("bn_bias", -0.1f, 0.1f);
  const std::string mean = param("bn_mean", -0.1f, 0.1f), var = param("bn_var", 0.5f, 1.5f);
  return node("BatchNormalization", {x, gamma, beta, mean, var}, shape(x), {attr("epsilon", 1e-5f), attr("momentum", 0.9f)});
}

std::string Builder::relu(const std::string& x) { return node("Relu", {x}, shape(x)); }

std::string Builder::relu6(const std::string& x) {
  return node("Clip", {x, constant_floats({}, {0.f}), constant_floats({}, {6.f})}, shape(x));
}

std::string Builder::sigmoid(const std::string& x) { return node("Sigmoid", {x}, shape(x)); }

std::string Builder::hardsigmoid(const std::string& x, float alpha, float beta) {
  return node("HardSigmoid", {x}, shape(x), {attr("alpha", alpha), attr("beta", beta)});
}

std::string Builder::hardswish(const std::string& x) { return mul(x, hardsigmoid(x)); }

std::string Builder::swish(const std::string& x) { return mul(x, sigmoid(x)); }

std::string Builder::add(const std::string& a, const std::string& b) { return node("Add", {a, b}, shape(a)); }

std::string Builder::mul(const std::string& a, const std::string& b) {
  const Shape& sa = shape(a);
  const Shape& sb = shape(b);
  return node("Mul", {a, b}, count(sa) >= count(sb) ? sa : sb);
}

std::string Builder::maxpool(const std::string& x, int64_t k, int64_t stride, int64_t pad, bool ceil_mode) {
  const Shape& s = shape(x);
  return node("MaxPool", {x}, {s[0], s[1], out_dim(s[2], k, stride, pad, 1, ceil_mode), out_dim(s[3], k, stride, pad, 1, ceil_mode)},
              {attr("ceil_mode", int64_t{ceil_mode}), attr("kernel_shape", std::vector<int64_t>{k, k}),
               attr("pads", std::vector<int64_t>{pad, pad, pad, pad}), attr("strides", std::vector<int64_t>{stride, stride})});
}

std::string Builder::avgpool(const std::string& x, int64_t k, int64_t stride, int64_t pad, bool ceil_mode,
                             bool count_include_pad) {
  const Shape& s = shape(x);
  return node("AveragePool", {x},
              {s[0], s[1], out_dim(s[2], k, stride, pad, 1, ceil_mode), out_dim(s[3], k, stride, pad, 1, ceil_mode)},
              {attr("ceil_mode", int64_t{ceil_mode}), attr("count_include_pad", int64_t{count_include_pad}),
               attr("kernel_shape", std::vector<int64_t>{k, k}), attr("pads", std::vector<int64_t>{pad, pad, pad, pad}),
               attr("strides", std::vector<int64_t>{stride, stride})});
}

std::string Builder::global_avgpool(const std::string& x) {
  const Shape& s = shape(x);
  return node("GlobalAveragePool", {x}, {s[0], s[1], 1, 1});
}

std::string Builder::reduce_mean_hw(const std::string& x, bool keepdims) {
  const Shape& s = shape(x);
  return node("ReduceMean", {x}, keepdims ? Shape{s[0], s[1], 1, 1} : Shape{s[0], s[1]},
              {attr("axes", std::vector<int64_t>{2, 3}), attr("keepdims", int64_t{keepdims})});
}

std::string Builder::flatten(const std::string& x) {
  const Shape& s = shape(x);
  return node("Flatten", {x}, {s[0], count(s) / s[0]}, {attr("axis", int64_t{1})});
}

std::string Builder::gemm(const std::string& x, int64_t out_features) {
  const Shape& s = shape(x);
  const std::string w = random_weights({out_features, s[1]}, std::sqrt(1.f / static_cast<float>(s[1])));
  const std::string b = random_weights({out_features}, 0.1f);
  flops_ += 2.0 * static_cast<double>(s[0] * s[1] * out_features);
  return node("Gemm", {x, w, b}, {s[0], out_features},
              {attr("alpha", 1.f), attr("beta", 1.f), attr("transB", int64_t{1})});
}

std::string Builder::concat(const std::vector<std::string>& xs, int64_t axis) {
  Shape s = shape(xs[0]);
  s[static_cast<size_t>(axis)] = 0;
  for (const auto& x : xs) s[static_cast<size_t>(axis)] += shape(x)[static_cast<size_t>(axis)];
  return node("Concat", xs, s, {attr("axis", axis)});
}

std::vector<std::string> Builder::split(const std::string& x, const std::vector<int64_t>& sizes, int64_t axis) {
  const auto outs = g_.node("Split", {x, constant_ints(sizes)}, {attr("axis", axis)}, static_cast<int>(sizes.size()));
  for (size_t i = 0; i < outs.size(); ++i) {
    Shape s = shape(x);
    s[static_cast<size_t>(axis)] = sizes[i];
    shapes_[outs[i]] = s;
  }
  return outs;
}

std::string Builder::channel_shuffle(const std::string& x, int64_t groups) {
  const Shape s = shape(x);
  // b, c, h, w = x.size(); x.view(b, groups, c // groups, h, w) as the exporter writes it.
  const std::string shp = node("Shape", {x}, {4});
  auto dim = [&](int64_t i) {
    const std::string g = node("Gather", {shp, constant_ints({i})}, {1}, {attr("axis", int64_t{0})});
    return g;
  };
  const std::string b = dim(0), h = dim(2), w = dim(3);
  const std::string target5 = node("Concat", {b, constant_ints({groups}), constant_ints({s[1] / groups}), h, w}, {5},
                                   {attr("axis", int64_t{0})});
  const std::string v = node("Reshape", {x, target5}, {s[0], groups, s[1] / groups, s[2], s[3]});
  const std::string t = node("Transpose", {v}, {s[0], s[1] / groups, groups, s[2], s[3]},
                             {attr("perm", std::vector<int64_t>{0, 2, 1, 3, 4})});
  const std::string target4 = node("Concat", {b, constant_ints({-1}), h, w}, {4}, {attr("axis", int64_t{0})});
  return node("Reshape", {t, target4}, s);
}

std::string Builder::softmax(const std::string& x, int64_t axis) {
  return node("Softmax", {x}, shape(x), {attr("axis", axis)});
}

onnx::ModelProto Builder::model() const { return g_.model(); }

void Builder::save(const fs::path& path) const { io::write_file_atomic(path, g_.model().SerializeAsString()); }

}  // namespace nnmeter::onnxgen
