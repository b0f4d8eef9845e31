// Gemm and MatMul with constant weights as FULLY_CONNECTED (weights [out, in], alpha and beta folded in),
// a following Relu/Clip fused.
#include "backends/tflite/export_ops/op.h"

namespace nnmeter::tflite {

namespace {

using onnx_io::HostTensor;

void fully_connected(ExportContext& cx, const onnx::NodeProto& n) {
  const Ref in = cx.ref(n.input(0));
  const bool gemm = n.op_type() == "Gemm";
  // A MatMul over the last axis of a 3-D or 4-D input is FULLY_CONNECTED with keep_num_dims, in ONNX's
  // element order (a 4-D value goes to NCHW and its result back to NHWC).
  const size_t rank = in.shape.size();
  if (rank != 2 && (gemm || rank > 4)) cx.fail(n, "only 2-D inputs (3-D and 4-D for MatMul) are exported as FULLY_CONNECTED");
  if (!cx.is_const(n.input(1))) cx.fail(n, "the weights must be a constant");
  const HostTensor& b = *cx.value(n.input(1)).constant;
  if (b.dims.size() != 2) cx.fail(n, "the weights must be 2-D");
  if (gemm && cx.attr_i(n, "transA", 0) != 0) cx.fail(n, "transA=1 is not exported");
  const bool trans_b = gemm && cx.attr_i(n, "transB", 0) != 0;
  const float alpha = gemm ? cx.attr_f(n, "alpha", 1.f) : 1.f, beta = gemm ? cx.attr_f(n, "beta", 1.f) : 1.f;
  std::vector<float> w = b.to_floats();
  if (!trans_b) w = permute(b.dims, w, {1, 0});  // TFLite wants [out, in]
  const int64_t outs = trans_b ? b.dims[0] : b.dims[1], ins = trans_b ? b.dims[1] : b.dims[0];
  for (auto& v : w) v *= alpha;
  std::vector<float> bias(static_cast<size_t>(outs), 0.f);
  if (gemm && n.input_size() > 2 && !n.input(2).empty()) {
    const HostTensor& c = *cx.value(n.input(2)).constant;
    if (c.numel() != outs && c.numel() != 1) cx.fail(n, "the bias must have one value per output");
    const auto cv = c.to_floats();
    for (size_t o = 0; o < bias.size(); ++o) bias[o] = beta * cv[cv.size() == 1 ? 0 : o];
  }
  std::string out = n.output(0);
  const auto act = cx.take_activation(out);
  const std::string& name = n.name().empty() ? n.output(0) : n.name();
  const int wt = cx.const_f32(name + "_weights", {outs, ins}, w), bt = cx.const_f32(name + "_bias", {outs}, bias);
  if (rank == 2) {
    const Ref& r = cx.define(out, act != tfl::ActivationFunctionType_NONE);
    cx.add_op(tfl::BuiltinOperator_FULLY_CONNECTED, {in.tensor, wt, bt}, {r.tensor}, tfl::BuiltinOptions_FullyConnectedOptions,
              tfl::CreateFullyConnectedOptions(cx.fbb(), act).Union());
    return;
  }
  const int src = cx.as_nchw(in, false);
  const int target = rank == 4 ? cx.add_tensor(out + "_nchw", cx.value(out).shape, false)
                               : cx.define(out, act != tfl::ActivationFunctionType_NONE).tensor;
  cx.add_op(tfl::BuiltinOperator_FULLY_CONNECTED, {src, wt, bt}, {target}, tfl::BuiltinOptions_FullyConnectedOptions,
            tfl::CreateFullyConnectedOptions(cx.fbb(), act, tfl::FullyConnectedOptionsWeightsFormat_DEFAULT, true).Union());
  if (rank != 4) return;
  const Ref& r = cx.define(out, act != tfl::ActivationFunctionType_NONE);
  cx.add_op(tfl::BuiltinOperator_TRANSPOSE, {target, cx.const_i32("perm", {0, 2, 3, 1})}, {r.tensor},
            tfl::BuiltinOptions_TransposeOptions, tfl::CreateTransposeOptions(cx.fbb()).Union());
}

const ExportRegistration gemm_ops({{"Gemm", fully_connected}, {"MatMul", fully_connected}});

}  // namespace

}  // namespace nnmeter::tflite
