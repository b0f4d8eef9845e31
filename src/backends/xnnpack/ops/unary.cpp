// Ops applied to every element (LOGISTIC, HARD_SWISH, RELU, RELU6), or to every row of the innermost
// dimension (SOFTMAX); and the clamp that computes TFLite's fused activations.
#include "backends/xnnpack/ops/op.h"

namespace nnmeter::xnnpack {

namespace {

void lower_unary(Lowering& cx, const OpNode& n) {
  const std::string& name = n.name;
  const std::vector<int>& in = n.in;
  const int out = n.out[0];
  cx.need(!in.empty() && cx.slot(in[0]).shape == cx.slot(out).shape && !cx.slot(out).shape.empty(), name, out,
          "input and output shapes differ");
  const Shape& shape = cx.slot(out).shape;
  const auto channels = static_cast<size_t>(shape.back());
  const auto batch = static_cast<size_t>(numel_of(shape)) / channels;
  xnn_operator_t handle = nullptr;
  switch (n.code) {
    case tfl::BuiltinOperator_LOGISTIC:
      cx.check(xnn_create_sigmoid_nc_f32(channels, channels, channels, 0, &handle), name, out, "xnn_create_sigmoid_nc_f32");
      cx.add("sigmoid_nc_f32", name, out, handle);
      cx.check(xnn_setup_sigmoid_nc_f32(handle, batch, cx.ptr(in[0]), cx.ptr(out), cx.pool), name, out, "xnn_setup_sigmoid_nc_f32");
      return;
    case tfl::BuiltinOperator_HARD_SWISH:
      cx.check(xnn_create_hardswish_nc_f32(channels, channels, channels, 0, &handle), name, out, "xnn_create_hardswish_nc_f32");
      cx.add("hardswish_nc_f32", name, out, handle);
      cx.check(xnn_setup_hardswish_nc_f32(handle, batch, cx.ptr(in[0]), cx.ptr(out), cx.pool), name, out, "xnn_setup_hardswish_nc_f32");
      return;
    case tfl::BuiltinOperator_SOFTMAX: {
      const auto* o = n.op->builtin_options_as_SoftmaxOptions();
      cx.need(!o || o->beta() == 1.f, name, out, "only beta = 1 has an XNNPACK softmax");
      cx.check(xnn_create_softmax_nc_f32(channels, channels, channels, 0, &handle), name, out, "xnn_create_softmax_nc_f32");
      cx.add("softmax_nc_f32", name, out, handle);
      cx.check(xnn_setup_softmax_nc_f32(handle, batch, cx.ptr(in[0]), cx.ptr(out), cx.pool), name, out, "xnn_setup_softmax_nc_f32");
      return;
    }
    default: {
      const auto act = n.code == tfl::BuiltinOperator_RELU ? tfl::ActivationFunctionType_RELU : tfl::ActivationFunctionType_RELU6;
      clamp(cx, name, in[0], out, act);
    }
  }
}

const OpRegistration unary_ops({
    {tfl::BuiltinOperator_LOGISTIC, lower_unary},
    {tfl::BuiltinOperator_HARD_SWISH, lower_unary},
    {tfl::BuiltinOperator_RELU, lower_unary},
    {tfl::BuiltinOperator_RELU6, lower_unary},
    {tfl::BuiltinOperator_SOFTMAX, lower_unary},
});

}  // namespace

std::pair<float, float> clamp_of(tfl::ActivationFunctionType a) {
  switch (a) {
    case tfl::ActivationFunctionType_RELU: return {0.f, kInf};
    case tfl::ActivationFunctionType_RELU6: return {0.f, 6.f};
    case tfl::ActivationFunctionType_RELU_N1_TO_1: return {-1.f, 1.f};
    default: return {-kInf, kInf};
  }
}

void clamp(Lowering& cx, const std::string& name, int x, int out, tfl::ActivationFunctionType act) {
  cx.need(cx.slot(x).shape == cx.slot(out).shape, name, out, "input and output shapes differ");
  const auto [lo, hi] = clamp_of(act);
  const auto n = static_cast<size_t>(numel_of(cx.slot(out).shape));
  xnn_operator_t handle = nullptr;
  cx.check(xnn_create_clamp_nc_f32(1, 1, 1, lo, hi, 0, &handle), name, out, "xnn_create_clamp_nc_f32");
  cx.add("clamp_nc_f32", name, out, handle, act);
  cx.check(xnn_setup_clamp_nc_f32(handle, n, cx.ptr(x), cx.ptr(out), cx.pool), name, out, "xnn_setup_clamp_nc_f32");
}

}  // namespace nnmeter::xnnpack
