// Softmax over the innermost stored axis as SOFTMAX.
#include "backends/tflite/export_ops/op.h"

namespace nnmeter::tflite {

namespace {

void softmax(ExportContext& cx, const onnx::NodeProto& n) {
  const Ref in = cx.ref(n.input(0));
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  const int64_t axis = cx.attr_i(n, "axis", cx.graph().opset >= 13 ? -1 : 1);
  // Before opset 13 a softmax flattens from `axis` on: the same only for 2-D inputs or the last axis.
  if (cx.stored_axis(n, in, axis) != rank - 1 || (cx.graph().opset < 13 && rank != 2 && axis != -1 && axis != rank - 1))
    cx.fail(n, "only a softmax over the innermost (channel) axis has a TFLite op");
  const Ref& r = cx.define(n.output(0), true);
  cx.add_op(tfl::BuiltinOperator_SOFTMAX, {in.tensor}, {r.tensor}, tfl::BuiltinOptions_SoftmaxOptions,
            tfl::CreateSoftmaxOptions(cx.fbb(), 1.f).Union());
}

const ExportRegistration softmax_ops({{"Softmax", softmax}});

}  // namespace

}  // namespace nnmeter::tflite
