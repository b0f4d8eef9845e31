// globalavgpool ([C, H, W] → [C], GlobalAveragePool + Flatten like the global-avgpool kernel), maxpool and
// avgpool (window KERNEL_SIZE, stride POOL_STRIDES, SAME padding, as nn-Meter's pooling operators).
#include "fusion/operators.h"

namespace nnmeter::fusion {

namespace {

using onnx_io::attr_int;
using onnx_io::attr_ints;

OpSpec pool_spec(const std::string& name, const std::string& onnx_op) {
  OpSpec spec;
  spec.name = name;
  spec.shape = [name](const OpParams& p, const Shape& in) {
    require_rank(name, in, 3);
    return Shape{in[0], onnx_io::same_out(in[1], p.pool_stride), onnx_io::same_out(in[2], p.pool_stride)};
  };
  spec.body = [onnx_op](onnx_io::GraphBuilder& g, const std::vector<std::string>& x, const OpParams& p, const Shape& in,
                        int64_t) {
    const auto h = onnx_io::same_pads(in[1], p.kernel, p.pool_stride);
    const auto w = onnx_io::same_pads(in[2], p.kernel, p.pool_stride);
    std::vector<onnx_io::Attr> attrs = {attr_ints("kernel_shape", {p.kernel, p.kernel}),
                                      attr_ints("strides", {p.pool_stride, p.pool_stride}),
                                      attr_ints("pads", {h[0], w[0], h[2], w[2]})};
    // TF's SAME average pooling divides by the number of real pixels in the window.
    if (onnx_op == "AveragePool") attrs.push_back(attr_int("count_include_pad", 0));
    return std::vector<std::string>{g.node1(onnx_op, {x.at(0)}, attrs)};
  };
  return spec;
}

OpSpec global_avgpool_spec() {
  OpSpec spec;
  spec.name = "globalavgpool";
  spec.shape = [](const OpParams&, const Shape& in) {
    require_rank("globalavgpool", in, 3);
    return Shape{in[0]};
  };
  spec.body = [](onnx_io::GraphBuilder& g, const std::vector<std::string>& x, const OpParams&, const Shape&, int64_t) {
    const std::string pooled = g.node1("GlobalAveragePool", {x.at(0)});
    return std::vector<std::string>{g.node1("Flatten", {pooled}, {attr_int("axis", 1)})};
  };
  return spec;
}

}  // namespace

std::vector<OpSpec> pool_operator_specs() {
  return {global_avgpool_spec(), pool_spec("maxpool", "MaxPool"), pool_spec("avgpool", "AveragePool")};
}

}  // namespace nnmeter::fusion
