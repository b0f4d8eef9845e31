// Pooling: MAX_POOL_2D and AVERAGE_POOL_2D over a window, and MEAN over height and width (global average
// pooling).
#include <algorithm>

#include "backends/xnnpack/ops/op.h"

namespace nnmeter::xnnpack {

namespace {

void subsample(Lowering& cx, const std::string& name, int x, int out, uint32_t sh, uint32_t sw, tfl::ActivationFunctionType act) {
  // The caller checked the output against the window arithmetic: (oh - 1) * sh < h, (ow - 1) * sw < w.
  const Shape& xs = cx.slot(x).shape;
  const Shape& ys = cx.slot(out).shape;
  const std::pair<float, float> bounds = clamp_of(act);  // named: clang 14 cannot capture structured bindings
  const float lo = bounds.first, hi = bounds.second;
  const float* src = cx.ptr(x);
  float* dst = cx.ptr(out);
  const auto n = static_cast<size_t>(xs[0]), h = static_cast<size_t>(xs[1]), w = static_cast<size_t>(xs[2]), c = static_cast<size_t>(xs[3]);
  const auto oh = static_cast<size_t>(ys[1]), ow = static_cast<size_t>(ys[2]);
  cx.add("subsample", name, out, nullptr, act).run = [=] {
    for (size_t b = 0; b < n; ++b)
      for (size_t y = 0; y < oh; ++y)
        for (size_t z = 0; z < ow; ++z) {
          const float* p = src + ((b * h + y * sh) * w + z * sw) * c;
          float* q = dst + ((b * oh + y) * ow + z) * c;
          for (size_t k = 0; k < c; ++k) q[k] = std::min(std::max(p[k], lo), hi);
        }
  };
}

void lower_pooling(Lowering& cx, const OpNode& n) {
  const std::string& name = n.name;
  const std::vector<int>& in = n.in;
  const int out = n.out[0];
  const bool max = n.code == tfl::BuiltinOperator_MAX_POOL_2D;
  const auto* o = n.op->builtin_options_as_Pool2DOptions();
  cx.need(o != nullptr && !in.empty(), name, out, "has no Pool2DOptions");
  const Shape& xs = cx.slot(in[0]).shape;
  cx.need(xs.size() == 4 && cx.slot(out).shape.size() == 4, name, out, "input and output must be 4-D (NHWC)");
  cx.need(o->filter_height() >= 1 && o->filter_width() >= 1 && o->stride_h() >= 1 && o->stride_w() >= 1, name, out,
          "pool size and strides must be at least 1");
  const auto ph = static_cast<uint32_t>(o->filter_height()), pw = static_cast<uint32_t>(o->filter_width());
  const auto sh = static_cast<uint32_t>(o->stride_h()), sw = static_cast<uint32_t>(o->stride_w());
  const auto act = o->fused_activation_function();
  expect_window_output(cx, name, out, xs, cx.slot(out).shape, {ph, pw}, {sh, sw}, {1, 1}, {0, 0, 0, 0}, o->padding() == tfl::Padding_SAME);
  cx.need(cx.slot(out).shape[3] == xs[3], name, out, "input and output channels differ");
  if (ph == 1 && pw == 1) {
    // XNNPACK refuses a 1x1 window. Without strides it is the identity (the delegate runs it as a clamp);
    // with strides it picks every stride-th pixel, which the delegate leaves to TFLite's own kernel: a
    // hand-written gather here, as plain as that kernel.
    if (sh == 1 && sw == 1) return clamp(cx, name, in[0], out, act);
    return subsample(cx, name, in[0], out, sh, sw, act);
  }
  const auto [lo, hi] = clamp_of(act);
  const uint32_t flags = o->padding() == tfl::Padding_SAME ? XNN_FLAG_TENSORFLOW_SAME_PADDING : 0;
  const auto c = static_cast<size_t>(xs[3]);
  xnn_operator_t handle = nullptr;
  if (max) {
    cx.check(xnn_create_max_pooling2d_nhwc_f32(0, 0, 0, 0, ph, pw, sh, sw, 1, 1, c, c, c, lo, hi, flags, &handle), name, out,
             "xnn_create_max_pooling2d_nhwc_f32");
    cx.add("max_pooling2d_nhwc_f32", name, out, handle, act);
    cx.check(xnn_setup_max_pooling2d_nhwc_f32(handle, static_cast<size_t>(xs[0]), static_cast<size_t>(xs[1]),
                                              static_cast<size_t>(xs[2]), cx.ptr(in[0]), cx.ptr(out), cx.pool),
             name, out, "xnn_setup_max_pooling2d_nhwc_f32");
  } else {
    cx.check(xnn_create_average_pooling2d_nhwc_f32(0, 0, 0, 0, ph, pw, sh, sw, c, c, c, lo, hi, flags, &handle), name, out,
             "xnn_create_average_pooling2d_nhwc_f32");
    cx.add("average_pooling2d_nhwc_f32", name, out, handle, act);
    cx.check(xnn_setup_average_pooling2d_nhwc_f32(handle, static_cast<size_t>(xs[0]), static_cast<size_t>(xs[1]),
                                                  static_cast<size_t>(xs[2]), cx.ptr(in[0]), cx.ptr(out), cx.pool),
             name, out, "xnn_setup_average_pooling2d_nhwc_f32");
  }
}

void lower_mean(Lowering& cx, const OpNode& n) {
  const std::string& name = n.name;
  const std::vector<int> in = {cx.arg(n, 0), cx.arg(n, 1)};
  const int out = n.out[0];
  const Shape& xs = cx.slot(in[0]).shape;
  std::vector<int32_t> axes = cx.ints(in[1], name, out);
  for (auto& a : axes) a = a < 0 ? a + static_cast<int32_t>(xs.size()) : a;
  std::sort(axes.begin(), axes.end());
  cx.need(xs.size() == 4 && axes == std::vector<int32_t>{1, 2}, name, out,
          "only the mean over height and width of a 4-D (NHWC) tensor has an XNNPACK operator");
  cx.need(numel_of(cx.slot(out).shape) == xs[0] * xs[3], name, out, "the output is not one value per image and channel");
  const auto c = static_cast<size_t>(xs[3]);
  xnn_operator_t handle = nullptr;
  cx.check(xnn_create_global_average_pooling_nwc_f32(c, c, c, -kInf, kInf, 0, &handle), name, out,
           "xnn_create_global_average_pooling_nwc_f32");
  cx.add("global_average_pooling_nwc_f32", name, out, handle);
  cx.check(xnn_setup_global_average_pooling_nwc_f32(handle, static_cast<size_t>(xs[0]), static_cast<size_t>(xs[1] * xs[2]),
                                                    cx.ptr(in[0]), cx.ptr(out), cx.pool),
           name, out, "xnn_setup_global_average_pooling_nwc_f32");
}

const OpRegistration pool_ops({
    {tfl::BuiltinOperator_MAX_POOL_2D, lower_pooling},
    {tfl::BuiltinOperator_AVERAGE_POOL_2D, lower_pooling},
    {tfl::BuiltinOperator_MEAN, lower_mean},
});

}  // namespace

}  // namespace nnmeter::xnnpack
