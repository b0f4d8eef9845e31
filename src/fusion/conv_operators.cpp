// conv, dwconv and convtrans: SAME padding computed per spatial axis (a reshape upstream can make H != W),
// bias on, He-uniform weights. conv/dwconv output ceil(H/S) x ceil(W/S); convtrans outputs H*S x W*S.
#include <fmt/format.h>

#include "fusion/operators.h"

namespace nnmeter::fusion {

namespace {

using onnx_io::attr_int;
using onnx_io::attr_ints;

// SAME pads as ONNX wants them: {h_begin, w_begin, h_end, w_end}.
std::vector<int64_t> same_pads_hw(const Shape& chw, int64_t kernel, int64_t stride) {
  const auto h = onnx_io::same_pads(chw[1], kernel, stride);
  const auto w = onnx_io::same_pads(chw[2], kernel, stride);
  return {h[0], w[0], h[2], w[2]};
}

OpSpec conv_spec(const std::string& name, bool depthwise) {
  OpSpec spec;
  spec.name = name;
  spec.shape = [name, depthwise](const OpParams& p, const Shape& in) {
    require_rank(name, in, 3);
    return Shape{depthwise ? in[0] : p.cout, onnx_io::same_out(in[1], p.stride), onnx_io::same_out(in[2], p.stride)};
  };
  spec.body = [depthwise](onnx_io::GraphBuilder& g, const std::vector<std::string>& x, const OpParams& p, const Shape& in,
                          int64_t) {
    const int64_t cin = in[0], cout = depthwise ? cin : p.cout, per_group = depthwise ? 1 : cin;
    const std::string w = g.he_weight("conv_weight", {cout, per_group, p.kernel, p.kernel}, per_group * p.kernel * p.kernel);
    const std::string b = g.random_weight("conv_bias", {cout}, -0.1f, 0.1f);
    return std::vector<std::string>{g.node1(
        "Conv", {x.at(0), w, b},
        {attr_ints("kernel_shape", {p.kernel, p.kernel}), attr_ints("strides", {p.stride, p.stride}),
         attr_ints("pads", same_pads_hw(in, p.kernel, p.stride)), attr_ints("dilations", {1, 1}),
         attr_int("group", depthwise ? cin : 1)})};
  };
  return spec;
}

// Transposed conv with output exactly S times the input: total padding K - S when K >= S, otherwise
// output_padding S - K fills the rest (ONNX: out = S(in - 1) + op + K - pads).
OpSpec convtrans_spec() {
  OpSpec spec;
  spec.name = "convtrans";
  spec.shape = [](const OpParams& p, const Shape& in) {
    require_rank("convtrans", in, 3);
    return Shape{p.cout, in[1] * p.stride, in[2] * p.stride};
  };
  spec.body = [](onnx_io::GraphBuilder& g, const std::vector<std::string>& x, const OpParams& p, const Shape& in, int64_t) {
    const int64_t total = std::max<int64_t>(p.kernel - p.stride, 0), extra = std::max<int64_t>(p.stride - p.kernel, 0);
    const int64_t begin = total / 2, end = total - begin;
    // ConvTranspose weights are [CIN, COUT, K, K].
    const std::string w = g.he_weight("convtrans_weight", {in[0], p.cout, p.kernel, p.kernel}, in[0] * p.kernel * p.kernel);
    const std::string b = g.random_weight("convtrans_bias", {p.cout}, -0.1f, 0.1f);
    return std::vector<std::string>{g.node1(
        "ConvTranspose", {x.at(0), w, b},
        {attr_ints("kernel_shape", {p.kernel, p.kernel}), attr_ints("strides", {p.stride, p.stride}),
         attr_ints("pads", {begin, begin, end, end}), attr_ints("output_padding", {extra, extra}),
         attr_ints("dilations", {1, 1}), attr_int("group", 1)})};
  };
  return spec;
}

}  // namespace

std::vector<OpSpec> conv_operator_specs() { return {conv_spec("conv", false), conv_spec("dwconv", true), convtrans_spec()}; }

}  // namespace nnmeter::fusion
