// Convolutions: CONV_2D (grouped when the filter has fewer input channels than the input) and
// DEPTHWISE_CONV_2D, on XNNPACK's one convolution operator, with a zero PAD before them folded in (pad.cpp).
#include <fmt/format.h>

#include "backends/xnnpack/ops/op.h"

namespace nnmeter::xnnpack {

namespace {

void conv(Lowering& cx, const OpNode& n, bool depthwise) {
  const std::string& name = n.name;
  const std::vector<int>& in = n.in;
  const int out = n.out[0];
  cx.need(in.size() >= 2 && in[1] >= 0 && cx.slot(in[1]).constant && cx.slot(in[1]).shape.size() == 4, name, out,
          "needs a constant 4-D filter");
  int x = in[0];
  const Slot& filter = cx.slot(in[1]);
  const float* bias = in.size() > 2 && in[2] >= 0 ? cx.ptr(in[2]) : nullptr;
  if (bias) cx.need(cx.slot(in[2]).constant, name, out, "the bias must be a constant");
  tfl::Padding padding;
  int sh, sw, dh, dw;
  tfl::ActivationFunctionType act;
  if (depthwise) {
    const auto* o = n.op->builtin_options_as_DepthwiseConv2DOptions();
    cx.need(o != nullptr, name, out, "has no DepthwiseConv2DOptions");
    padding = o->padding(), sh = o->stride_h(), sw = o->stride_w(), dh = o->dilation_h_factor(), dw = o->dilation_w_factor();
    act = o->fused_activation_function();
  } else {
    const auto* o = n.op->builtin_options_as_Conv2DOptions();
    cx.need(o != nullptr, name, out, "has no Conv2DOptions");
    padding = o->padding(), sh = o->stride_h(), sw = o->stride_w(), dh = o->dilation_h_factor(), dw = o->dilation_w_factor();
    act = o->fused_activation_function();
  }
  cx.need(sh >= 1 && sw >= 1 && dh >= 1 && dw >= 1, name, out, "strides and dilations must be at least 1");
  std::array<uint32_t, 4> pads{0, 0, 0, 0};
  std::vector<std::string> fused;
  if (const auto it = cx.pending_pads.find(x); it != cx.pending_pads.end()) {
    pads = it->second.second;
    x = it->second.first;
    cx.pending_pads.erase(it);
    fused.push_back("PAD");
  }
  const Shape& xs = cx.slot(x).shape;
  const Shape& ys = cx.slot(out).shape;
  cx.need(xs.size() == 4 && ys.size() == 4, name, out, "input and output must be 4-D (NHWC)");
  const auto kh = static_cast<uint32_t>(filter.shape[1]), kw = static_cast<uint32_t>(filter.shape[2]);
  const int64_t cin = xs[3], cout = ys[3];
  uint32_t groups = 1;
  size_t group_in = 0, group_out = 0;
  uint32_t flags = padding == tfl::Padding_SAME ? XNN_FLAG_TENSORFLOW_SAME_PADDING : 0;
  if (depthwise) {
    cx.need(filter.shape[0] == 1 && filter.shape[3] == cout && cout % cin == 0, name, out, "filter shape does not match");
    groups = static_cast<uint32_t>(cin), group_in = 1, group_out = static_cast<size_t>(cout / cin);
    flags |= XNN_FLAG_DEPTHWISE_CONVOLUTION;
  } else {
    cx.need(filter.shape[0] == cout && filter.shape[3] >= 1 && cin % filter.shape[3] == 0, name, out, "filter shape does not match");
    groups = static_cast<uint32_t>(cin / filter.shape[3]);
    group_in = static_cast<size_t>(filter.shape[3]);
    cx.need(cout % groups == 0, name, out, "output channels do not split into the groups");
    group_out = static_cast<size_t>(cout) / groups;
  }
  if (bias) cx.need(numel_of(cx.slot(in[2]).shape) == cout, name, out, "the bias must have one value per output channel");
  expect_window_output(cx, name, out, xs, ys, {filter.shape[1], filter.shape[2]}, {sh, sw}, {dh, dw}, pads,
                       padding == tfl::Padding_SAME);
  const auto [lo, hi] = clamp_of(act);
  xnn_operator_t handle = nullptr;
  cx.check(xnn_create_convolution2d_nhwc_f32(pads[0], pads[1], pads[2], pads[3], kh, kw, static_cast<uint32_t>(sh),
                                             static_cast<uint32_t>(sw), static_cast<uint32_t>(dh), static_cast<uint32_t>(dw), groups,
                                             group_in, group_out, static_cast<size_t>(cin), static_cast<size_t>(cout),
                                             filter.data.data(), bias, lo, hi, flags, &handle),
           name, out, "xnn_create_convolution2d_nhwc_f32");
  Step& s = cx.add("convolution2d_nhwc_f32", name, out, handle, act);
  s.fused = fused;
  cx.check(xnn_setup_convolution2d_nhwc_f32(handle, static_cast<size_t>(xs[0]), static_cast<size_t>(xs[1]),
                                            static_cast<size_t>(xs[2]), cx.ptr(x), cx.ptr(out), cx.pool),
           name, out, "xnn_setup_convolution2d_nhwc_f32");
}

void lower_conv(Lowering& cx, const OpNode& n) { conv(cx, n, false); }
void lower_depthwise_conv(Lowering& cx, const OpNode& n) { conv(cx, n, true); }

const OpRegistration conv_ops({
    {tfl::BuiltinOperator_CONV_2D, lower_conv},
    {tfl::BuiltinOperator_DEPTHWISE_CONV_2D, lower_depthwise_conv},
});

}  // namespace

void expect_window_output(const Lowering& cx, const std::string& name, int out, const Shape& xs, const Shape& ys,
                          std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride, std::array<int64_t, 2> dilation,
                          const std::array<uint32_t, 4>& pads, bool same) {
  for (size_t i = 0; i < 2; ++i) {
    const int64_t x = xs[i + 1], ext = (kernel[i] - 1) * dilation[i] + 1;
    const int64_t padded = x + pads[i == 0 ? 0 : 3] + pads[i == 0 ? 2 : 1];
    // XNNPACK sizes its indirection buffers by window and output: windows far beyond the padded input
    // (possible under SAME padding) and huge strides only come from damaged files.
    cx.need(ext <= 2 * padded + 1 && stride[i] <= (1 << 16), name, out, "the window is larger than the padded input, or the stride huge");
    const int64_t expect = same ? (x + stride[i] - 1) / stride[i] : padded < ext ? 0 : (padded - ext) / stride[i] + 1;
    cx.need(expect == ys[i + 1] && expect >= 1, name, out,
            fmt::format("output {} is {} where the window gives {}", i == 0 ? "height" : "width", ys[i + 1], expect));
  }
  cx.need(xs[0] == ys[0], name, out, "input and output batch differ");
  // XNNPACK keeps one input pointer per window element and output pixel (its indirection buffer).
  cx.need(numel_of({kernel[0], kernel[1], ys[0], ys[1], ys[2]}) <= (int64_t{1} << 25), name, out,
          "window elements times output pixels exceed 2^25 (the engine's bound for one operator)");
}

}  // namespace nnmeter::xnnpack
