// Conv: CONV_2D, or DEPTHWISE_CONV_2D when each group is one input channel; weights in TFLite's layouts,
// a following BatchNormalization folded into them and a following Relu/Clip fused.
#include <fmt/format.h>

#include "backends/tflite/export_ops/op.h"

namespace nnmeter::tflite {

namespace {

using onnx_io::HostTensor;

void conv(ExportContext& cx, const onnx::NodeProto& n) {
  const Ref in = cx.ref(n.input(0));
  const HostTensor& w = *cx.value(n.input(1)).constant;
  if (in.shape.size() != 4 || w.dims.size() != 4) cx.fail(n, "only 2-D convolutions are exported");
  const int64_t cout = w.dims[0], cin_g = w.dims[1], kh = w.dims[2], kw = w.dims[3], cin = in.shape[1];
  const int64_t group = cx.attr_i(n, "group", 1);
  const bool depthwise = group == cin && cin_g == 1 && group > 1;
  if (group != 1 && !depthwise) cx.fail(n, fmt::format("grouped convolution (group={} of {} channels) has no TFLite op", group, cin));
  std::vector<float> weight = w.to_floats();
  std::vector<float> bias(static_cast<size_t>(cout), 0.f);
  if (n.input_size() > 2 && !n.input(2).empty()) bias = cx.floats(n.input(2));
  std::string out = n.output(0);
  // BatchNormalization right after the conv is folded into its weights and bias.
  if (const int next = cx.sole_consumer(out); next >= 0 && cx.proto(next).op_type() == "BatchNormalization") {
    const auto& bn = cx.proto(next);
    const auto [scale, shift] = bn_affine(cx, bn);
    const size_t per_out = weight.size() / static_cast<size_t>(cout);
    for (size_t o = 0; o < static_cast<size_t>(cout); ++o) {
      for (size_t k = 0; k < per_out; ++k) weight[o * per_out + k] *= scale[o];
      bias[o] = bias[o] * scale[o] + shift[o];
    }
    cx.absorb(next);
    out = bn.output(0);
  }
  const auto act = cx.take_activation(out);
  const Shape strides = cx.attr_ints(n, "strides", {1, 1}), dilations = cx.attr_ints(n, "dilations", {1, 1});
  const Shape& out_shape = cx.value(n.output(0)).shape;
  int input = in.tensor;
  const auto padding = padding_for(cx, n, input, in, {kh, kw}, strides, dilations, {out_shape[2], out_shape[3]}, true, "");
  const std::string& name = n.name().empty() ? n.output(0) : n.name();
  int filter;
  if (depthwise)  // [C*M, 1, kh, kw] -> [1, kh, kw, C*M]
    filter = cx.const_f32(name + "_filter", {1, kh, kw, cout}, permute({cout, 1, kh, kw}, weight, {1, 2, 3, 0}));
  else  // [O, I, kh, kw] -> [O, kh, kw, I]
    filter = cx.const_f32(name + "_filter", {cout, kh, kw, cin_g}, permute(w.dims, weight, {0, 2, 3, 1}));
  const int b = cx.const_f32(name + "_bias", {cout}, bias);
  const Ref& r = cx.define(out, act != tfl::ActivationFunctionType_NONE);
  const int sh = static_cast<int>(strides[0]), sw = static_cast<int>(strides[1]);
  const int dh = static_cast<int>(dilations[0]), dw = static_cast<int>(dilations[1]);
  if (depthwise)
    cx.add_op(tfl::BuiltinOperator_DEPTHWISE_CONV_2D, {input, filter, b}, {r.tensor}, tfl::BuiltinOptions_DepthwiseConv2DOptions,
              tfl::CreateDepthwiseConv2DOptions(cx.fbb(), padding, sw, sh, static_cast<int>(cout / cin), act, dw, dh).Union());
  else
    cx.add_op(tfl::BuiltinOperator_CONV_2D, {input, filter, b}, {r.tensor}, tfl::BuiltinOptions_Conv2DOptions,
              tfl::CreateConv2DOptions(cx.fbb(), padding, sw, sh, act, dw, dh).Union());
}

const ExportRegistration conv_ops({{"Conv", conv}});

}  // namespace

}  // namespace nnmeter::tflite
