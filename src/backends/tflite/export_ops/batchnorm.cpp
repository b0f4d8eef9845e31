// BatchNormalization not folded into a Conv: MUL by the per-channel scale, then ADD of the shift (with a
// following Relu/Clip fused into the ADD).
#include <cmath>

#include "backends/tflite/export_ops/op.h"

namespace nnmeter::tflite {

std::pair<std::vector<float>, std::vector<float>> bn_affine(const ExportContext& cx, const onnx::NodeProto& bn) {
  const auto gamma = cx.floats(bn.input(1)), beta = cx.floats(bn.input(2)), mean = cx.floats(bn.input(3)),
             var = cx.floats(bn.input(4));
  const float eps = cx.attr_f(bn, "epsilon", 1e-5f);
  std::vector<float> scale(gamma.size()), shift(gamma.size());
  for (size_t c = 0; c < gamma.size(); ++c) {
    scale[c] = gamma[c] / std::sqrt(var[c] + eps);
    shift[c] = beta[c] - mean[c] * scale[c];
  }
  return {scale, shift};
}

namespace {

// Per-channel constant of a 4-D NHWC (or 2-D) value, shaped to broadcast along its last axis.
int channel_constant(ExportContext& cx, const std::string& name, const Ref& like, const std::vector<float>& data) {
  Shape shape(like.shape.size(), 1);
  shape.back() = static_cast<int64_t>(data.size());
  return cx.const_f32(name, shape, data);
}

void batchnorm(ExportContext& cx, const onnx::NodeProto& n) {
  const Ref in = cx.ref(n.input(0));
  if (in.shape.size() != 4 && in.shape.size() != 2) cx.fail(n, "only 4-D and 2-D inputs are exported");
  const auto [scale, shift] = bn_affine(cx, n);
  std::string out = n.output(0);
  const auto act = cx.take_activation(out);
  const int scaled = cx.add_tensor(out + "_scaled", in.shape, in.nhwc);
  cx.add_op(tfl::BuiltinOperator_MUL, {in.tensor, channel_constant(cx, out + "_scale", in, scale)}, {scaled},
            tfl::BuiltinOptions_MulOptions, tfl::CreateMulOptions(cx.fbb()).Union());
  const Ref& r = cx.define(out, act != tfl::ActivationFunctionType_NONE);
  cx.add_op(tfl::BuiltinOperator_ADD, {scaled, channel_constant(cx, out + "_shift", in, shift)}, {r.tensor},
            tfl::BuiltinOptions_AddOptions, tfl::CreateAddOptions(cx.fbb(), act).Union());
}

const ExportRegistration batchnorm_ops({{"BatchNormalization", batchnorm}});

}  // namespace

}  // namespace nnmeter::tflite
