// MaxPool and AveragePool as MAX_POOL_2D and AVERAGE_POOL_2D, a following Relu/Clip fused.
#include "backends/tflite/export_ops/op.h"

namespace nnmeter::tflite {

namespace {

void pool(ExportContext& cx, const onnx::NodeProto& n) {
  const Ref in = cx.ref(n.input(0));
  if (in.shape.size() != 4) cx.fail(n, "only 2-D pooling is exported");
  const bool max = n.op_type() == "MaxPool";
  if (cx.attr_ints(n, "dilations", {1, 1}) != Shape{1, 1}) cx.fail(n, "dilated pooling has no TFLite op");
  const Shape kernel = cx.attr_ints(n, "kernel_shape", {}), strides = cx.attr_ints(n, "strides", {1, 1});
  const Shape& out_shape = cx.value(n.output(0)).shape;
  // Zero padding in front is exact for an average that counts the padding, and for a max over values that
  // cannot be negative; TFLite's SAME already leaves padding out of both.
  const bool zero_ok = max ? in.nonnegative : cx.attr_i(n, "count_include_pad", 0) != 0;
  int input = in.tensor;
  const auto padding = padding_for(cx, n, input, in, kernel, strides, {1, 1}, {out_shape[2], out_shape[3]}, zero_ok,
                                   max ? "the input may be negative (zero padding would change the maximum)"
                                       : "the average leaves the padding out (count_include_pad=0)");
  std::string out = n.output(0);
  const auto act = cx.take_activation(out);
  const Ref& r = cx.define(out, max ? in.nonnegative : act != tfl::ActivationFunctionType_NONE);
  cx.add_op(max ? tfl::BuiltinOperator_MAX_POOL_2D : tfl::BuiltinOperator_AVERAGE_POOL_2D, {input}, {r.tensor},
            tfl::BuiltinOptions_Pool2DOptions,
            tfl::CreatePool2DOptions(cx.fbb(), padding, static_cast<int>(strides[1]), static_cast<int>(strides[0]),
                                     static_cast<int>(kernel[1]), static_cast<int>(kernel[0]), act)
                .Union());
}

const ExportRegistration pool_ops({{"MaxPool", pool}, {"AveragePool", pool}});

}  // namespace

}  // namespace nnmeter::tflite
