// Concat as CONCATENATION (a following Relu/Clip fused), Split as SPLIT, or SPLIT_V for unequal parts.
#include <algorithm>

#include "backends/tflite/export_ops/op.h"

namespace nnmeter::tflite {

namespace {

void concat(ExportContext& cx, const onnx::NodeProto& n) {
  std::vector<int> inputs;
  bool nonneg = true;
  for (const auto& name : n.input()) {
    if (cx.is_const(name)) cx.fail(n, "constant inputs to Concat are not exported");
    const Ref& in = cx.ref(name);
    inputs.push_back(in.tensor);
    nonneg &= in.nonnegative;
  }
  std::string out = n.output(0);
  const auto act = cx.take_activation(out);
  const Ref& r = cx.define(out, nonneg || act != tfl::ActivationFunctionType_NONE);
  cx.add_op(tfl::BuiltinOperator_CONCATENATION, inputs, {r.tensor}, tfl::BuiltinOptions_ConcatenationOptions,
            tfl::CreateConcatenationOptions(cx.fbb(), cx.stored_axis(n, r, cx.attr_i(n, "axis", 0)), act).Union());
}

void split(ExportContext& cx, const onnx::NodeProto& n) {
  const Ref in = cx.ref(n.input(0));
  const int axis = cx.stored_axis(n, in, cx.attr_i(n, "axis", 0));
  std::vector<int> outs;
  std::vector<int32_t> sizes;
  for (const auto& name : n.output()) {
    const Ref& r = cx.define(name, in.nonnegative);
    outs.push_back(r.tensor);
    sizes.push_back(cx.stored_shape(r.tensor)[static_cast<size_t>(axis)]);
  }
  const int count = static_cast<int>(outs.size());
  if (std::all_of(sizes.begin(), sizes.end(), [&](int32_t s) { return s == sizes[0]; }))
    cx.add_op(tfl::BuiltinOperator_SPLIT, {cx.const_i32("axis", {axis}, {}), in.tensor}, outs, tfl::BuiltinOptions_SplitOptions,
              tfl::CreateSplitOptions(cx.fbb(), count).Union());
  else
    cx.add_op(tfl::BuiltinOperator_SPLIT_V, {in.tensor, cx.const_i32("sizes", sizes), cx.const_i32("axis", {axis}, {})}, outs,
              tfl::BuiltinOptions_SplitVOptions, tfl::CreateSplitVOptions(cx.fbb(), count).Union());
}

const ExportRegistration concat_ops({{"Concat", concat}, {"Split", split}});

}  // namespace

}  // namespace nnmeter::tflite
