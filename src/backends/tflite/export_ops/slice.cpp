// A Slice of a computed tensor with constant bounds and step 1 (ShuffleNetV2's chunk as exported): SLICE.
#include <algorithm>

#include "backends/tflite/export_ops/op.h"
#include "onnx_io/shape_rules.h"

namespace nnmeter::tflite {

namespace {

void slice(ExportContext& cx, const onnx::NodeProto& n) {
  const Ref in = cx.ref(n.input(0));
  auto ints = [&](int i) {
    if (n.input_size() <= i || n.input(i).empty()) return std::vector<int64_t>{};
    if (!cx.is_const(n.input(i))) cx.fail(n, "only constant bounds are exported");
    return cx.value(n.input(i)).constant->to_ints();
  };
  if (n.input_size() < 3) cx.fail(n, "a Slice before opset 10 is not exported");
  const auto axes = onnx_io::slice_axes(in.shape, ints(1), ints(2), ints(3), ints(4));
  if (!axes) cx.fail(n, "its starts, ends, axes and steps do not check out");
  if (std::any_of(axes->step.begin(), axes->step.end(), [](int64_t s) { return s != 1; }))
    cx.fail(n, "only step 1 is exported (SLICE)");
  std::vector<int32_t> begin(in.shape.size()), size(in.shape.size());
  for (size_t a = 0; a < in.shape.size(); ++a) {
    const auto s = static_cast<size_t>(cx.stored_axis(n, in, static_cast<int64_t>(a)));
    begin[s] = static_cast<int32_t>(axes->begin[a]);
    size[s] = static_cast<int32_t>(axes->out[a]);
  }
  const Ref& r = cx.define(n.output(0), in.nonnegative);
  cx.add_op(tfl::BuiltinOperator_SLICE, {in.tensor, cx.const_i32("begin", begin), cx.const_i32("size", size)}, {r.tensor},
            tfl::BuiltinOptions_SliceOptions, tfl::CreateSliceOptions(cx.fbb()).Union());
}

const ExportRegistration slice_ops({{"Slice", slice}});

}  // namespace

}  // namespace nnmeter::tflite
