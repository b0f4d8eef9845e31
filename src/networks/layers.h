// Layers the way torch.onnx.export writes them (opset 13, eval mode, constant folding on; fixed-seed random
// weights), with the shape of every tensor and the FLOPs tracked as it goes. It emits through the library's
// one ONNX emitter (onnx_io::GraphBuilder). The reference architectures (architectures.cpp) are written with
// it; tests use it for small graphs of their own.
#pragma once

#include <onnx/onnx_pb.h>

#include <array>
#include <map>
#include <optional>

#include "common/rng.h"
#include "nnmeter/common.h"
#include "onnx_io/builder.h"

namespace nnmeter::networks {

class LayerBuilder {
 public:
  explicit LayerBuilder(std::string name, int64_t opset = 13, uint32_t seed = 0);

  std::string input(const std::string& name, const Shape& shape);
  void output(const std::string& value);

  // Layers. Every call returns the output tensor name.
  std::string conv(const std::string& x, int64_t cout, int64_t k, int64_t stride = 1, int64_t pad = -1,
                   int64_t group = 1, bool bias = false, int64_t dilation = 1);
  // A conv of a kh × kw kernel with its bias (BN folded), padded to keep the size: Inception's 1×7 and 7×1.
  std::string conv_rect(const std::string& x, int64_t cout, int64_t kh, int64_t kw);
  std::string batchnorm(const std::string& x);
  // Conv → BatchNormalization as the exporter writes it: the BN folded into the conv's weights and bias.
  std::string conv_bn(const std::string& x, int64_t cout, int64_t k, int64_t stride = 1, int64_t group = 1) {
    return conv(x, cout, k, stride, -1, group, true);
  }
  // Conv → BatchNormalization kept apart, as an export without constant folding (or in training mode) writes it.
  std::string conv_batchnorm(const std::string& x, int64_t cout, int64_t k, int64_t stride = 1, int64_t group = 1) {
    return batchnorm(conv(x, cout, k, stride, -1, group));
  }
  std::string relu(const std::string& x);
  std::string relu6(const std::string& x);  // Clip(0, 6) with min/max inputs (opset >= 11)
  std::string sigmoid(const std::string& x);
  std::string hardsigmoid(const std::string& x, float alpha = 1.f / 6, float beta = 0.5f);
  std::string hardswish(const std::string& x);  // x * HardSigmoid(x), as exported before opset 14
  std::string swish(const std::string& x);      // x * Sigmoid(x), PyTorch's SiLU export
  std::string add(const std::string& a, const std::string& b);
  std::string mul(const std::string& a, const std::string& b);
  std::string maxpool(const std::string& x, int64_t k, int64_t stride, int64_t pad = 0, bool ceil_mode = false);
  std::string avgpool(const std::string& x, int64_t k, int64_t stride, int64_t pad = 0, bool ceil_mode = false,
                      bool count_include_pad = false);
  std::string global_avgpool(const std::string& x);
  std::string reduce_mean_hw(const std::string& x, bool keepdims);
  std::string flatten(const std::string& x);
  std::string gemm(const std::string& x, int64_t out_features);  // Linear: Gemm(transB=1)
  std::string concat(const std::vector<std::string>& xs, int64_t axis = 1);
  std::vector<std::string> split(const std::string& x, const std::vector<int64_t>& sizes, int64_t axis = 1);
  // x.chunk(2, dim=1) as exported: the halves' bounds come from Shape → Gather → Add → Div → Mul at run time
  // and feed two Slices, so loading it needs shape folding.
  std::pair<std::string, std::string> chunk2(const std::string& x);
  // ShuffleNet's channel shuffle as exported with a static batch: Reshape to 5-D (constant shape), Transpose,
  // Reshape back.
  std::string channel_shuffle(const std::string& x, int64_t groups);
  // AvgPool2d(k, stride, pad) as exported at opset 13 (count_include_pad, torch's default): a Pad of `pad` zeros
  // each side, then the pool with none; DenseNet's AvgPool2d(2, 2) is behind a Pad of nothing.
  std::string padded_avgpool(const std::string& x, int64_t k, int64_t stride, int64_t pad = 0);
  std::string softmax(const std::string& x, int64_t axis = -1);
  std::string node(const std::string& op, const std::vector<std::string>& inputs, const Shape& out_shape,
                   const std::vector<onnx::AttributeProto>& attrs = {});

  std::string constant_ints(const std::vector<int64_t>& values);
  std::string constant_floats(const Shape& shape, const std::vector<float>& values);
  std::string random_weights(const Shape& shape, float scale);

  const Shape& shape(const std::string& value) const;
  // Width multiplier of the architecture being built (MobileNet's alpha): scaled(c) is the channel count
  // a layer declared with `c` channels gets, rounded to a multiple of 8 as torchvision does.
  void set_width(double width) { width_ = width; }
  void set_weights(bool on) { g_.set_weights(on); }  // GraphBuilder::set_weights
  double width() const { return width_; }
  int64_t scaled(int64_t channels);

  // A per-layer random variant (nn-meter networks sample) drawn from `seed`. From then on factor(c) is a width
  // factor in [0.5, 1.5] drawn once per declared channel count, so the blocks of a stage keep one width and
  // their residual adds; pick() and depth() draw kernels, expansions and depths, coin() SE on or off. Without a
  // variant every draw is the published value.
  void set_variant(uint64_t seed) { rng_.emplace(seed); }
  bool variant() const { return rng_.has_value(); }
  double factor(int64_t channels);
  int64_t pick(int64_t published, const std::vector<int64_t>& options);
  int64_t depth(int64_t published);  // within a third of `published` either way, at least one
  bool coin(bool published);
  double flops() const { return flops_; }  // multiply-adds count 2
  onnx::ModelProto model() const;
  void save(const fs::path& path) const;

 private:
  std::string conv_shaped(const std::string& x, int64_t cout, std::array<int64_t, 2> k, int64_t stride,
                          std::array<int64_t, 2> pad, int64_t group, bool bias, int64_t dilation);

  onnx_io::GraphBuilder g_;
  std::map<std::string, Shape> shapes_;
  double flops_ = 0;
  double width_ = 1.0;
  std::optional<Rng> rng_;
  std::map<int64_t, double> factors_;
};

// Overloaded short forms of onnx_io's attr_int/attr_float/attr_ints/attr_string for hand-built graphs.
inline onnx::AttributeProto attr(const std::string& name, int64_t value) { return onnx_io::attr_int(name, value); }
inline onnx::AttributeProto attr(const std::string& name, float value) { return onnx_io::attr_float(name, value); }
inline onnx::AttributeProto attr(const std::string& name, const std::vector<int64_t>& values) {
  return onnx_io::attr_ints(name, values);
}
inline onnx::AttributeProto attr(const std::string& name, const std::string& value) {
  return onnx_io::attr_string(name, value);
}

}  // namespace nnmeter::networks
