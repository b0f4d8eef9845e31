// Pad with zeros as PAD.
#include "backends/tflite/export_ops/op.h"

namespace nnmeter::tflite {

namespace {

void pad(ExportContext& cx, const onnx::NodeProto& n) {
  const Ref in = cx.ref(n.input(0));
  if (cx.attr_s(n, "mode", "constant") != "constant") cx.fail(n, "only constant padding has a TFLite op (PAD)");
  std::vector<int64_t> pads = cx.attr_ints(n, "pads", {});
  if (n.input_size() > 1 && !n.input(1).empty()) pads = cx.value(n.input(1)).constant->to_ints();
  if (n.input_size() > 2 && !n.input(2).empty() && cx.floats(n.input(2)).at(0) != 0.f) cx.fail(n, "only zero padding is exported");
  const size_t rank = in.shape.size();
  std::vector<int32_t> paddings(2 * rank);
  for (size_t j = 0; j < rank; ++j) {
    const size_t d = in.nhwc ? static_cast<size_t>(kToNhwc[j]) : j;
    paddings[2 * j] = static_cast<int32_t>(pads[d]);
    paddings[2 * j + 1] = static_cast<int32_t>(pads[d + rank]);
  }
  const Ref& r = cx.define(n.output(0), in.nonnegative);
  cx.add_op(tfl::BuiltinOperator_PAD, {in.tensor, cx.const_i32("paddings", paddings, {static_cast<int64_t>(rank), 2})}, {r.tensor},
            tfl::BuiltinOptions_PadOptions, tfl::CreatePadOptions(cx.fbb()).Union());
}

const ExportRegistration pad_ops({{"Pad", pad}});

}  // namespace

}  // namespace nnmeter::tflite
