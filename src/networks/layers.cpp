#include "networks/layers.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "common/io.h"
#include "onnx_io/shape_rules.h"

namespace nnmeter::networks {

namespace {

int64_t count(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  const auto w = onnx_io::window_axis(in, (k - 1) * d + 1, s, p, p, "NOTSET", ceil);
  if (!w) throw Error(fmt::format("onnx builder: a window of {} (stride {}, pad {}) does not fit an input of {}", k, s, p, in));
  return w->out;
}

}  // namespace

int64_t LayerBuilder::scaled(int64_t channels) {
  const double scale = width_ * factor(channels);
  if (scale == 1.0) return channels;
  const double v = static_cast<double>(channels) * scale;
  int64_t n = std::max<int64_t>(8, static_cast<int64_t>(v + 4.0) / 8 * 8);
  if (static_cast<double>(n) < 0.9 * v) n += 8;
  return n;
}

double LayerBuilder::factor(int64_t channels) {
  if (!rng_) return 1.0;
  const auto [it, drawn] = factors_.try_emplace(channels, 0.0);
  if (drawn) it->second = 0.5 + rng_->uniform();
  return it->second;
}

int64_t LayerBuilder::pick(int64_t published, const std::vector<int64_t>& options) {
  return rng_ && !options.empty() ? options[rng_->below(options.size())] : published;
}

int64_t LayerBuilder::depth(int64_t published) {
  const int64_t spread = std::max<int64_t>(1, published / 3), lo = std::max<int64_t>(1, published - spread);
  return rng_ ? lo + static_cast<int64_t>(rng_->below(static_cast<uint64_t>(published + spread - lo + 1))) : published;
}

bool LayerBuilder::coin(bool published) { return rng_ ? rng_->below(2) == 1 : published; }

LayerBuilder::LayerBuilder(std::string name, int64_t opset, uint32_t seed) : g_(std::move(name), seed, opset) {}

const Shape& LayerBuilder::shape(const std::string& value) const {
  const auto it = shapes_.find(value);
  if (it == shapes_.end()) throw Error("onnx builder: unknown tensor '" + value + "'");
  return it->second;
}

std::string LayerBuilder::input(const std::string& name, const Shape& shape) {
  shapes_[name] = shape;
  return g_.input(name, shape);
}

void LayerBuilder::output(const std::string& value) { g_.output(value, shape(value)); }

std::string LayerBuilder::node(const std::string& op, const std::vector<std::string>& inputs, const Shape& out_shape,
                          const std::vector<onnx::AttributeProto>& attrs) {
  const std::string out = g_.node1(op, inputs, attrs);
  shapes_[out] = out_shape;
  return out;
}

std::string LayerBuilder::constant_ints(const std::vector<int64_t>& values) {
  const std::string name = g_.int64_const("const", values);
  shapes_[name] = {static_cast<int64_t>(values.size())};
  return name;
}

std::string LayerBuilder::constant_floats(const Shape& shape, const std::vector<float>& values) {
  const std::string name = g_.float_const("const", shape, values);
  shapes_[name] = shape;
  return name;
}

// Uniform with standard deviation `scale` (the weights only need a sane range, not a distribution).
std::string LayerBuilder::random_weights(const Shape& shape, float scale) {
  const float a = scale * std::sqrt(3.f);
  const std::string name = g_.random_weight("weight", shape, -a, a);
  shapes_[name] = shape;
  return name;
}

std::string LayerBuilder::conv(const std::string& x, int64_t cout, int64_t k, int64_t stride, int64_t pad, int64_t group,
                          bool bias, int64_t dilation) {
  if (pad < 0) pad = (k - 1) / 2 * dilation;
  return conv_shaped(x, cout, {k, k}, stride, {pad, pad}, group, bias, dilation);
}

std::string LayerBuilder::conv_rect(const std::string& x, int64_t cout, int64_t kh, int64_t kw) {
  return conv_shaped(x, cout, {kh, kw}, 1, {(kh - 1) / 2, (kw - 1) / 2}, 1, true, 1);
}

std::string LayerBuilder::conv_shaped(const std::string& x, int64_t cout, std::array<int64_t, 2> k, int64_t stride,
                                      std::array<int64_t, 2> pad, int64_t group, bool bias, int64_t dilation) {
  const Shape& s = shape(x);
  const int64_t cin = s[1];
  const std::string w =
      random_weights({cout, cin / group, k[0], k[1]}, std::sqrt(2.f / static_cast<float>(cin / group * k[0] * k[1])));
  std::vector<std::string> inputs{x, w};
  if (bias) inputs.push_back(random_weights({cout}, 0.1f));
  const int64_t oh = out_dim(s[2], k[0], stride, pad[0], dilation, false);
  const int64_t ow = out_dim(s[3], k[1], stride, pad[1], dilation, false);
  flops_ += 2.0 * static_cast<double>(s[0] * cout * oh * ow * (cin / group) * k[0] * k[1]);
  return node("Conv", inputs, {s[0], cout, oh, ow},
              {attr("dilations", std::vector<int64_t>{dilation, dilation}), attr("group", group),
               attr("kernel_shape", std::vector<int64_t>{k[0], k[1]}),
               attr("pads", std::vector<int64_t>{pad[0], pad[1], pad[0], pad[1]}),
               attr("strides", std::vector<int64_t>{stride, stride})});
}

std::string LayerBuilder::batchnorm(const std::string& x) {
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

std::string LayerBuilder::relu(const std::string& x) { return node("Relu", {x}, shape(x)); }

std::string LayerBuilder::relu6(const std::string& x) {
  return node("Clip", {x, constant_floats({}, {0.f}), constant_floats({}, {6.f})}, shape(x));
}

std::string LayerBuilder::sigmoid(const std::string& x) { return node("Sigmoid", {x}, shape(x)); }

std::string LayerBuilder::hardsigmoid(const std::string& x, float alpha, float beta) {
  return node("HardSigmoid", {x}, shape(x), {attr("alpha", alpha), attr("beta", beta)});
}

std::string LayerBuilder::hardswish(const std::string& x) { return mul(x, hardsigmoid(x)); }

std::string LayerBuilder::swish(const std::string& x) { return mul(x, sigmoid(x)); }

std::string LayerBuilder::add(const std::string& a, const std::string& b) { return node("Add", {a, b}, shape(a)); }

std::string LayerBuilder::mul(const std::string& a, const std::string& b) {
  const Shape& sa = shape(a);
  const Shape& sb = shape(b);
  return node("Mul", {a, b}, count(sa) >= count(sb) ? sa : sb);
}

std::string LayerBuilder::maxpool(const std::string& x, int64_t k, int64_t stride, int64_t pad, bool ceil_mode) {
  const Shape& s = shape(x);
  return node("MaxPool", {x}, {s[0], s[1], out_dim(s[2], k, stride, pad, 1, ceil_mode), out_dim(s[3], k, stride, pad, 1, ceil_mode)},
              {attr("ceil_mode", int64_t{ceil_mode}), attr("kernel_shape", std::vector<int64_t>{k, k}),
               attr("pads", std::vector<int64_t>{pad, pad, pad, pad}), attr("strides", std::vector<int64_t>{stride, stride})});
}

std::string LayerBuilder::avgpool(const std::string& x, int64_t k, int64_t stride, int64_t pad, bool ceil_mode,
                             bool count_include_pad) {
  const Shape& s = shape(x);
  return node("AveragePool", {x},
              {s[0], s[1], out_dim(s[2], k, stride, pad, 1, ceil_mode), out_dim(s[3], k, stride, pad, 1, ceil_mode)},
              {attr("ceil_mode", int64_t{ceil_mode}), attr("count_include_pad", int64_t{count_include_pad}),
               attr("kernel_shape", std::vector<int64_t>{k, k}), attr("pads", std::vector<int64_t>{pad, pad, pad, pad}),
               attr("strides", std::vector<int64_t>{stride, stride})});
}

std::string LayerBuilder::global_avgpool(const std::string& x) {
  const Shape& s = shape(x);
  return node("GlobalAveragePool", {x}, {s[0], s[1], 1, 1});
}

std::string LayerBuilder::reduce_mean_hw(const std::string& x, bool keepdims) {
  const Shape& s = shape(x);
  return node("ReduceMean", {x}, keepdims ? Shape{s[0], s[1], 1, 1} : Shape{s[0], s[1]},
              {attr("axes", std::vector<int64_t>{2, 3}), attr("keepdims", int64_t{keepdims})});
}

std::string LayerBuilder::flatten(const std::string& x) {
  const Shape& s = shape(x);
  return node("Flatten", {x}, {s[0], count(s) / s[0]}, {attr("axis", int64_t{1})});
}

std::string LayerBuilder::gemm(const std::string& x, int64_t out_features) {
  const Shape& s = shape(x);
  const std::string w = random_weights({out_features, s[1]}, std::sqrt(1.f / static_cast<float>(s[1])));
  const std::string b = random_weights({out_features}, 0.1f);
  flops_ += 2.0 * static_cast<double>(s[0] * s[1] * out_features);
  return node("Gemm", {x, w, b}, {s[0], out_features},
              {attr("alpha", 1.f), attr("beta", 1.f), attr("transB", int64_t{1})});
}

std::string LayerBuilder::concat(const std::vector<std::string>& xs, int64_t axis) {
  Shape s = shape(xs[0]);
  s[static_cast<size_t>(axis)] = 0;
  for (const auto& x : xs) s[static_cast<size_t>(axis)] += shape(x)[static_cast<size_t>(axis)];
  return node("Concat", xs, s, {attr("axis", axis)});
}

std::vector<std::string> LayerBuilder::split(const std::string& x, const std::vector<int64_t>& sizes, int64_t axis) {
  const auto outs = g_.node("Split", {x, constant_ints(sizes)}, {attr("axis", axis)}, static_cast<int>(sizes.size()));
  for (size_t i = 0; i < outs.size(); ++i) {
    Shape s = shape(x);
    s[static_cast<size_t>(axis)] = sizes[i];
    shapes_[outs[i]] = s;
  }
  return outs;
}

std::pair<std::string, std::string> LayerBuilder::chunk2(const std::string& x) {
  Shape half = shape(x);
  half[1] /= 2;
  const std::string channels = node("Gather", {node("Shape", {x}, {4}), constant_ints({1})}, {1}, {attr("axis", int64_t{0})});
  const std::string size = node("Div", {node("Add", {channels, constant_ints({1})}, {1}), constant_ints({2})}, {1});
  const std::string end0 = node("Mul", {size, constant_ints({1})}, {1});
  const std::string end1 = node("Mul", {size, constant_ints({2})}, {1});
  const std::string axes = constant_ints({1});
  return {node("Slice", {x, constant_ints({0}), end0, axes}, half), node("Slice", {x, end0, end1, axes}, half)};
}

std::string LayerBuilder::channel_shuffle(const std::string& x, int64_t groups) {
  const Shape s = shape(x);
  const std::string v = node("Reshape", {x, constant_ints({s[0], groups, s[1] / groups, s[2], s[3]})},
                             {s[0], groups, s[1] / groups, s[2], s[3]});
  const std::string t = node("Transpose", {v}, {s[0], s[1] / groups, groups, s[2], s[3]},
                             {attr("perm", std::vector<int64_t>{0, 2, 1, 3, 4})});
  return node("Reshape", {t, constant_ints({s[0], -1, s[2], s[3]})}, s);
}

std::string LayerBuilder::padded_avgpool(const std::string& x, int64_t k, int64_t stride, int64_t pad) {
  const Shape& s = shape(x);
  const std::string padded = node("Pad", {x, constant_ints({0, 0, pad, pad, 0, 0, pad, pad})},
                                  {s[0], s[1], s[2] + 2 * pad, s[3] + 2 * pad}, {attr("mode", std::string("constant"))});
  return avgpool(padded, k, stride);
}

std::string LayerBuilder::softmax(const std::string& x, int64_t axis) {
  return node("Softmax", {x}, shape(x), {attr("axis", axis)});
}

onnx::ModelProto LayerBuilder::model() const { return g_.model(); }

void LayerBuilder::save(const fs::path& path) const { io::write_file_atomic(path, g_.model().SerializeAsString()); }

}  // namespace nnmeter::networks
