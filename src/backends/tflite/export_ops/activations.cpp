// Activations: Relu and Clip(0, 6) / Clip(0, inf) as RELU / RELU6 (when not fused into the op before),
// Sigmoid as LOGISTIC, HardSwish as HARD_SWISH, and HardSigmoid either written out or, under a Mul with
// its own input, left to that Mul to write as HARD_SWISH (binary.cpp).
#include <cmath>

#include "backends/tflite/export_ops/op.h"

namespace nnmeter::tflite {

int hardswish_partner(const ExportContext& cx, const onnx::NodeProto& mul, int side) {
  const std::string& other = mul.input(1 - side);
  const int node = cx.producer(mul.input(side));
  if (node < 0) return -1;
  const auto& hs = cx.proto(node);
  if (hs.op_type() != "HardSigmoid" || hs.input(0) != other || cx.sole_consumer(hs.output(0)) < 0) return -1;
  if (std::fabs(cx.attr_f(hs, "alpha", 0.2f) - 1.f / 6) > 1e-6f || std::fabs(cx.attr_f(hs, "beta", 0.5f) - 0.5f) > 1e-6f)
    return -1;
  return node;
}

namespace {

void unary(ExportContext& cx, const onnx::NodeProto& n, tfl::BuiltinOperator op, bool nonnegative = false) {
  const Ref in = cx.ref(n.input(0));
  const Ref& r = cx.define(n.output(0), nonnegative);
  cx.add_op(op, {in.tensor}, {r.tensor});
}

void relu_or_clip(ExportContext& cx, const onnx::NodeProto& n) {
  const auto act = cx.activation_of(n);
  if (!act) cx.fail(n, "only Clip(0, 6) (RELU6) and Clip(0, inf) (RELU) have a TFLite op");
  unary(cx, n, *act == tfl::ActivationFunctionType_RELU6 ? tfl::BuiltinOperator_RELU6 : tfl::BuiltinOperator_RELU, true);
}

void sigmoid(ExportContext& cx, const onnx::NodeProto& n) { unary(cx, n, tfl::BuiltinOperator_LOGISTIC); }

void hardswish(ExportContext& cx, const onnx::NodeProto& n) { unary(cx, n, tfl::BuiltinOperator_HARD_SWISH); }

// HardSigmoid(x) = clip(alpha x + beta, 0, 1) = RELU6(6 alpha x + 6 beta) / 6.
void hardsigmoid(ExportContext& cx, const onnx::NodeProto& n) {
  if (const int mul = cx.sole_consumer(n.output(0)); mul >= 0 && cx.proto(mul).op_type() == "Mul")
    for (int side = 0; side < 2; ++side)
      if (hardswish_partner(cx, cx.proto(mul), side) >= 0) return;  // the Mul writes HARD_SWISH
  const Ref in = cx.ref(n.input(0));
  const float alpha = cx.attr_f(n, "alpha", 0.2f), beta = cx.attr_f(n, "beta", 0.5f);
  const Shape one(in.shape.size(), 1);
  const int a = cx.add_tensor(n.output(0) + "_scaled", in.shape, in.nhwc);
  cx.add_op(tfl::BuiltinOperator_MUL, {in.tensor, cx.const_f32("hs_alpha", one, {6 * alpha})}, {a},
            tfl::BuiltinOptions_MulOptions, tfl::CreateMulOptions(cx.fbb()).Union());
  const int b = cx.add_tensor(n.output(0) + "_relu6", in.shape, in.nhwc);
  cx.add_op(tfl::BuiltinOperator_ADD, {a, cx.const_f32("hs_beta", one, {6 * beta})}, {b}, tfl::BuiltinOptions_AddOptions,
            tfl::CreateAddOptions(cx.fbb(), tfl::ActivationFunctionType_RELU6).Union());
  const Ref& r = cx.define(n.output(0), true);
  cx.add_op(tfl::BuiltinOperator_MUL, {b, cx.const_f32("hs_sixth", one, {1.f / 6})}, {r.tensor},
            tfl::BuiltinOptions_MulOptions, tfl::CreateMulOptions(cx.fbb()).Union());
}

const ExportRegistration activation_ops({{"Relu", relu_or_clip},
                                          {"Clip", relu_or_clip},
                                          {"Sigmoid", sigmoid},
                                          {"HardSwish", hardswish},
                                          {"HardSigmoid", hardsigmoid}});

}  // namespace

}  // namespace nnmeter::tflite
