// FULLY_CONNECTED: TFLite's [outputs, inputs] weights are XNNPACK's layout, so they are packed as they are.
#include "backends/xnnpack/ops/op.h"

namespace nnmeter::xnnpack {

namespace {

void lower_fully_connected(Lowering& cx, const OpNode& n) {
  const std::string& name = n.name;
  const std::vector<int>& in = n.in;
  const int out = n.out[0];
  cx.need(in.size() >= 2 && in[1] >= 0 && cx.slot(in[1]).constant && cx.slot(in[1]).shape.size() == 2, name, out,
          "needs constant 2-D weights");
  const auto* o = n.op->builtin_options_as_FullyConnectedOptions();
  const auto act = o ? o->fused_activation_function() : tfl::ActivationFunctionType_NONE;
  const Slot& w = cx.slot(in[1]);
  const int64_t outs = w.shape[0], ins = w.shape[1];
  const int64_t total = numel_of(cx.slot(in[0]).shape);
  cx.need(ins > 0 && total % ins == 0 && numel_of(cx.slot(out).shape) == total / ins * outs, name, out, "shapes do not match the weights");
  const float* bias = in.size() > 2 && in[2] >= 0 ? cx.ptr(in[2]) : nullptr;
  if (bias) cx.need(cx.slot(in[2]).constant && numel_of(cx.slot(in[2]).shape) == outs, name, out, "the bias must be a constant per output");
  const auto [lo, hi] = clamp_of(act);
  xnn_operator_t handle = nullptr;
  cx.check(xnn_create_fully_connected_nc_f32(static_cast<size_t>(ins), static_cast<size_t>(outs), static_cast<size_t>(ins),
                                             static_cast<size_t>(outs), w.data.data(), bias, lo, hi, 0, &handle),
           name, out, "xnn_create_fully_connected_nc_f32");
  cx.add("fully_connected_nc_f32", name, out, handle, act);
  cx.check(xnn_setup_fully_connected_nc_f32(handle, static_cast<size_t>(total / ins), cx.ptr(in[0]), cx.ptr(out), cx.pool), name, out,
           "xnn_setup_fully_connected_nc_f32");
}

const OpRegistration fully_connected_ops({
    {tfl::BuiltinOperator_FULLY_CONNECTED, lower_fully_connected},
});

}  // namespace

}  // namespace nnmeter::xnnpack
